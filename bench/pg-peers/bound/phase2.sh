#!/usr/bin/env bash
# After matrix.sh: E and S (two rounds, alternating), and graphile-worker with its drain's poll at 1 s instead of 50 ms.
cd /tmp/pgbound
while kill -0 $(cat log/matrix.pid) 2>/dev/null; do sleep 2; done
for r in 1 2; do
  for c in 1 4; do for v in E S; do echo "p2 round $r $(date +%T) $(./run.sh $v $c)"; done; done
  for w in 1 4; do echo "p2 round $r $(date +%T) slowpoll $(DRAIN=drain-slowpoll.js ./graphile2.sh $w)"; done
done
