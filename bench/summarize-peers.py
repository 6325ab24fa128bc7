#!/usr/bin/env python3
"""Median per (peer, sync, op, workers) of a run-peers.sh results file, as a
markdown table.   python3 bench/summarize-peers.py [bench/results/peers.jsonl]"""
import json
import os
import statistics
import sys

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), 'results', 'peers.jsonl')
groups = {}
for line in open(path):
    line = line.strip()
    if not line:
        continue
    r = json.loads(line)
    key = (r['peer'], r['sync'], r['op'], r['workers'])
    groups.setdefault(key, []).append(r)

print('| peer | sync | op | workers | runs | median s | median jobs/s | min-max jobs/s | median peak RSS MB | failed jobs per run |')
print('|---|---|---|---|---|---|---|---|---|---|')
OPS = ['enqueue_one', 'enqueue_batch', 'enqueue_batch_1tx', 'drain']
rank = lambda op: OPS.index(op) if op in OPS else len(OPS)
for key in sorted(groups, key=lambda k: (k[0], k[1] != 'NORMAL', rank(k[2]), k[3])):
    rs = groups[key]
    ps = [r['per_sec'] for r in rs]
    fails = ','.join(str(r['failed']) for r in rs) if 'failed' in rs[0] else '-'
    print('| %s | %s | %s | %d | %d | %.2f | %.0f | %.0f-%.0f | %.0f | %s |' % (
        key[0], key[1], key[2], key[3], len(rs),
        statistics.median(r['seconds'] for r in rs), statistics.median(ps),
        min(ps), max(ps), statistics.median(r['peak_rss_mb'] for r in rs), fails))
