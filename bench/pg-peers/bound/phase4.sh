#!/usr/bin/env bash
# Whole drains (100,000 of 100,000 jobs): A and F alternating, 2 rounds.
cd /tmp/pgbound
while kill -0 $(cat log/phase3.pid) 2>/dev/null; do sleep 2; done
for r in 1 2; do for c in 1 4; do for v in A F; do echo "p4 round $r $(date +%T) $(JOBS=100000 ./run.sh $v $c)"; done; done; done
