#!/usr/bin/env bash
# BENCHMARKS.md §14, run 6: each drain line of rounds.sh's OUT with its server CPU a job.
#   OUT=runs.txt bench/pg-peers/windows.sh SAMPLES   (SAMPLES from server-cpu.py sample)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${OUT:-runs.txt}"
grep '"op":"drain"' "$OUT" | while read -r R L END JSON; do
  SECS=$(echo "$JSON" | python3 -c 'import sys,json; print(json.load(sys.stdin)["secs"])')
  P=$(echo "$JSON" | python3 -c 'import sys,json; d=json.load(sys.stdin); print(d["workers"], d["jobs_per_sec"])')
  echo "$R $L $P :: $(python3 "$here/server-cpu.py" window "$1" "$END" "$SECS" 100000)"
done
