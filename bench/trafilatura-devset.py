#!/usr/bin/env python3
"""Python trafilatura over the extraction dev set, one OUT/<dataset>/<id>.txt per page (issue 22).

usage: VENV/bin/python bench/trafilatura-devset.py DEVSET_DIR OUT_DIR

Defaults of trafilatura.extract (no comments, no tables off), the page's URL given, as the
issue's table measured it. Prints the throughput on the last line.
"""
import json
import sys
import time
from pathlib import Path

import trafilatura

devset, out = Path(sys.argv[1]), Path(sys.argv[2])
spent, size, failed, count = 0.0, 0, 0, 0
for line in (devset / "index.jsonl").read_text().splitlines():
    if not line.strip():
        continue
    page = json.loads(line)
    html = (devset / "pages" / page["dataset"] / f"{page['id']}.html").read_bytes()
    started = time.perf_counter()
    text = trafilatura.extract(html, url=page.get("url"), include_comments=False)
    spent += time.perf_counter() - started
    size += len(html)
    count += 1
    if not text:
        failed += 1
        continue
    target = out / page["dataset"]
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{page['id']}.txt").write_text(text)
print(f"trafilatura {trafilatura.__version__}: {count} pages, {failed} gave nothing, "
      f"{size / 1e6:.1f} MB of HTML in {spent:.2f} s: {size / 1e6 / spent:.1f} MB/s")
