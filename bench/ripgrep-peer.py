#!/usr/bin/env python3
"""ripgrep over the same 100,000 documents as `cargo bench --bench search` wrote with
GLEANER_BENCH_FILES=DIR: the first 20 one-word queries, each `rg -l -i -w -F WORD DIR`
(the files a user would open), page cache warm. Usage: ripgrep-peer.py DIR"""
import statistics as st
import subprocess
import sys
import time

root = sys.argv[1]
queries = [l.strip() for l in open(f"{root}/queries.txt") if l.strip()][:20]
subprocess.run(["rg", "-l", "-i", "-w", "-F", "zzzz", root], capture_output=True)
ms, hits = [], []
for q in queries:
    t = time.perf_counter()
    r = subprocess.run(["rg", "-l", "-i", "-w", "-F", q, root], capture_output=True, text=True)
    ms.append((time.perf_counter() - t) * 1000)
    hits.append(len(r.stdout.splitlines()))
ms.sort()
p95 = ms[int(round((len(ms) - 1) * 0.95))]
print(f"rg one_word queries={len(queries)} median_ms={st.median(ms):.0f} p95_ms={p95:.0f} "
      f"max_ms={ms[-1]:.0f} mean_files_matched={st.mean(hits):.0f}")
