#!/usr/bin/env bash
# Three rounds; each round: A B C D with 1 client, then A B C D with 4; graphile-worker 1 and 4 after rounds 1 and 2.
cd /tmp/pgbound
for r in 1 2 3; do
  for c in 1 4; do for v in A B C D; do echo "round $r $(date +%T) $(./run.sh $v $c)"; done; done
  if [ $r -lt 3 ]; then for w in 1 4; do echo "round $r $(date +%T) $(./graphile.sh $w)"; done; fi
done
