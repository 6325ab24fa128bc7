#!/usr/bin/env bash
# run.sh VARIANT CLIENTS  (VARIANT: A B C D) -- reload 100,000 jobs, run one pgbench, print one line.
# JOBS (default 40,000) jobs claimed per run: -t JOBS/4 with 1 client, JOBS/16 each with 4.
set -euo pipefail
V=$1; C=$2; T=$((${JOBS:-40000} / 4 / C))
cd /tmp/pgbound
case $V in A) DB=ga; L=sql/load_g.sql; S=sql/step_g.sql; CNT="SELECT count(*) FROM jobs WHERE status <> 'pending'";;
           B) DB=gb; L=sql/load_g.sql; S=sql/step_g.sql; CNT="SELECT count(*) FROM jobs WHERE status <> 'pending'";;
           C) DB=gc; L=sql/load_c.sql; S=sql/step_c.sql; CNT="SELECT count(*) FROM q WHERE status <> 0";;
           E) DB=gd; L=sql/load_d.sql; S=sql/step_e.sql; CNT="SELECT count(*) FROM q WHERE status <> 0";;
           S) DB=ga; L=sql/load_g.sql; S=sql/step_s.sql; CNT="SELECT count(*) FROM jobs WHERE status <> 'pending'"; T=$((20000 / C));;
           F) DB=gf; L=sql/load_f.sql; S=sql/step_f.sql; CNT="SELECT count(*) FROM jobs WHERE status <> 'pending'";;
           D) DB=gd; L=sql/load_d.sql; S=sql/step_d.sql; CNT="SELECT count(*) FROM q WHERE status <> 0";; esac
P="psql -h 127.0.0.1 -p 55499 -U postgres -d $DB -v ON_ERROR_STOP=1 -qAt"
$P -f $L >/dev/null
sleep 2
read s0 b0 < <(python3 ticks.py)
t0=$(date +%s.%N)
nice -n 5 /usr/bin/time -f "%U %S" -o log/time.$V.$C pgbench -h 127.0.0.1 -p 55499 -U postgres -n -M prepared -D ids='{}' -f $S -c $C -j $C -t $T $DB > log/pgb.$V.$C 2>&1
t1=$(date +%s.%N)
sleep 1
read s1 b1 < <(python3 ticks.py)
N=$($P -c "$CNT")
TPS=$(grep -oP 'tps = \K[0-9.]+' log/pgb.$V.$C | head -1)
FAIL=$(grep -ciE 'error|abort' log/pgb.$V.$C || true)
python3 - "$V" "$C" "$N" "$s0" "$s1" "$b0" "$b1" "$t0" "$t1" "$TPS" "$(cat log/time.$V.$C)" "$FAIL" <<'PY'
import sys, os, json
v, c, n, s0, s1, b0, b1, t0, t1, tps, tm, fail = sys.argv[1:]
tick = 1 / os.sysconf("SC_CLK_TCK"); n = int(n); secs = float(t1) - float(t0)
u, s = map(float, tm.split())
print(json.dumps({"variant": v, "clients": int(c), "jobs": n, "secs": round(secs, 2), "jobs_per_s": round(n / secs),
  "tps": float(tps), "server_us_per_job": round((int(s1) - int(s0)) * tick / n * 1e6),
  "busy_us_per_job": round((int(b1) - int(b0)) * tick / n * 1e6), "pgbench_us_per_job": round((u + s) / n * 1e6),
  "errors_in_log": int(fail)}))
PY
