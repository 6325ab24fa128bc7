#!/usr/bin/env bash
# F against A, alternating, 3 rounds each client count.
cd /tmp/pgbound
while kill -0 $(cat log/phase2.pid) 2>/dev/null; do sleep 2; done
for r in 1 2 3; do for c in 1 4; do for v in F A; do echo "p3 round $r $(date +%T) $(./run.sh $v $c)"; done; done; done
