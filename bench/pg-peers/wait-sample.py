#!/usr/bin/env python3
# BENCHMARKS.md §14, "Where the 4-process drain waits": pg_stat_activity every 20 ms into OUT (run beside a drain).
# Edit the psql host and port below for your server.
# Samples pg_stat_activity every ~20 ms through one psql session (a \watch-free loop via a persistent process).
import subprocess, time, sys, collections
p = subprocess.Popen(["psql","-h","127.0.0.1","-p","55499","-U","postgres","-qAtX","-F","|"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
q = "SELECT extract(epoch from clock_timestamp()), state, coalesce(wait_event_type,'-'), coalesce(wait_event,'-'), left(regexp_replace(query, '\\s+', ' ', 'g'), 40) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname IS NOT NULL; SELECT 'END';\n"
out = open(sys.argv[1], "w")
while True:
    p.stdin.write(q); p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line or line.strip() == "END": break
        out.write(line)
    out.flush()
    time.sleep(0.02)
