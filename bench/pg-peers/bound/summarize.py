#!/usr/bin/env python3
# Medians per variant and client count over log/*.out (JSON lines from run.sh; graphile lines parsed).
import json, re, statistics as st, glob, collections
rows = collections.defaultdict(list)
for f in sorted(glob.glob('/tmp/pgbound/log/*.out')):
    if 'graphile.' in f: continue
    for line in open(f):
        m = re.search(r'(\{"variant".*\})', line)
        if m:
            d = json.loads(m.group(1)); tag = 'p4' if line.startswith('p4') else ''
            rows[(d['variant'] + ('-full' if tag else ''), d['clients'])].append((d['server_us_per_job'], d['tps'], d['jobs_per_s'], d['pgbench_us_per_job']))
        m = re.search(r'(slowpoll )?graphile W=(\d) .*"jobs_per_sec":(\d+).*server (\d+) µs', line)
        if m:
            rows[('graphile' + ('-poll1s' if m.group(1) else '-poll50ms'), int(m.group(2)))].append((int(m.group(4)), None, int(m.group(3)), None))
for k in sorted(rows):
    v = rows[k]
    s = [x[0] for x in v]; t = [x[1] for x in v if x[1]]; j = [x[2] for x in v]
    print(f"{k[0]:16} c={k[1]} n={len(v)} server µs/job {s} median {st.median(s):.0f} | tps median {st.median(t) if t else '-'} | jobs/s median {st.median(j):.0f}")
