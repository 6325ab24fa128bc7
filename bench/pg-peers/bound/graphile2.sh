#!/usr/bin/env bash
# graphile.sh WORKERS -- one graphile-worker drain of 100,000 no-op jobs (bench/pg-peers/${DRAIN:-drain.js}, a copy),
# server CPU over the drain window from server-cpu.py's sampler.
set -euo pipefail
W=$1; cd /tmp/pgbound
python3 peers/server-cpu.py sample /tmp/pgbound/data log/samples.$W.${DRAIN:-drain.js}.txt & SP=$!
sleep 0.5
nice -n 5 node peers/${DRAIN:-drain.js} graphile postgres://postgres@127.0.0.1:55499/postgres 100000 $W 2>&1 | while IFS= read -r l; do echo "$(date +%s.%N) $l"; done > log/graphile.$W.${DRAIN:-drain.js}.out
sleep 1; kill $SP
line=$(grep '"op":"drain"' log/graphile.$W.${DRAIN:-drain.js}.out)
END=$(echo "$line" | cut -d' ' -f1); SECS=$(echo "$line" | grep -oP '"secs":\K[0-9.]+')
echo "graphile W=$W $(echo "$line" | cut -d' ' -f2-) :: $(python3 peers/server-cpu.py window log/samples.$W.${DRAIN:-drain.js}.txt $END $SECS 100000)"
