#!/usr/bin/env python3
"""Medians per (peer, sync, op, workers, n) of a run-peers.sh results file, as
a markdown table (n is a column because a peer may drain fewer jobs than it
enqueues: apalis's drain uses APALIS_DRAIN_N). Medians use clean runs only (ok != false); runs in which the
peer failed jobs or lost a worker are counted in the "not ok" column.

    python3 bench/summarize-peers.py [bench/results/peers.jsonl]
"""
import json
import os
import statistics
import sys

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), 'results', 'peers.jsonl')
groups = {}
for line in open(path):
    line = line.strip()
    if line:
        r = json.loads(line)
        groups.setdefault((r['peer'], r['sync'], r['op'], r['workers'], r['n']),
                          []).append(r)

OPS = ['enqueue_one', 'enqueue_batch', 'enqueue_batch_1tx', 'drain']
rank = lambda op: OPS.index(op) if op in OPS else len(OPS)
med = lambda xs: statistics.median(xs) if xs else float('nan')
print('| peer | sync | op | workers | n | clean runs | median s | median jobs/s '
      '| min-max jobs/s | median peak RSS MB | not ok (failed jobs, crashed workers) |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for key in sorted(groups, key=lambda k: (k[0], k[1] != 'NORMAL', rank(k[2]), k[3], k[4])):
    rs = groups[key]
    good = [r for r in rs if r.get('ok', True)]
    bad = [r for r in rs if not r.get('ok', True)]
    ps = [r['per_sec'] for r in good]
    notes = '; '.join('%d, %d' % (r.get('failed', 0), r.get('crashed_workers', 0))
                      for r in bad) or '-'
    print('| %s | %s | %s | %d | %d | %d/%d | %.2f | %.0f | %s | %.0f | %s |' % (
        key[0], key[1], key[2], key[3], key[4], len(good), len(rs),
        med([r['seconds'] for r in good]), med(ps),
        '%.0f-%.0f' % (min(ps), max(ps)) if ps else '-',
        med([r['peak_rss_mb'] for r in good]), notes))
