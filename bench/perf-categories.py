#!/usr/bin/env python3
"""Self time of a `perf record` profile, summed by what the code does (extraction, SQLite,
allocator, kernel by thread...), from the symbol names. BENCHMARKS.md §13.

Usage: python3 bench/perf-categories.py perf.data
"""
import subprocess, sys, re, collections
data=sys.argv[1]
out=subprocess.run(["perf","report","-i",data,"--no-children","--sort","comm,dso,sym","--stdio","-g","none"],capture_output=True,text=True).stdout
cats=collections.Counter()
rules=[("extract",r"dom_query|html5ever|dom_smoothie|tendril|markup5ever|selectors::|extract::|string_cache|cssparser|encoding_rs|chardetng|phf|precomputed_hash|gleaner::engine::library|sha2|unicode_normalization|regex|aho_corasick|memchr"),
       ("sqlite",r"sqlite3|fts5|btree|pcache|wal[A-Z]|vdbe|Fts5|rusqlite|pager"),
       ("http",r"hyper|reqwest|h2::|rustls|http::|httparse|tower|want::|bytes::"),
       ("tokio",r"tokio::|mio::|parking_lot|crossbeam|futures"),
       ("tracing/log",r"tracing|fmt::|core::fmt|std::io::Write|Stderr|write_fmt|nu_ansi"),
       ("alloc/libc",r"malloc|free|memmove|memcpy|memcmp|memset|realloc|strlen|_int_|unlink_chunk|cfree|calloc"),
]
for line in out.splitlines():
    m=re.match(r"\s+([\d.]+)%\s+(\S+(?: \S+)*?)\s{2,}(\S+)\s+\[(.)\]\s+(.*)",line)
    if not m: continue
    pct=float(m.group(1)); comm=m.group(2); dso=m.group(3); kind=m.group(4); sym=m.group(5)
    if kind=='k':
        c="kernel("+("inotify-thread" if comm.startswith("notify") else "checkpointer" if "checkpo" in comm else "worker")+")"
    else:
        c="other user"
        for name,pat in rules:
            if re.search(pat,sym): c=name; break
        if comm.startswith("notify"): c="inotify thread (user)"
    cats[c]+=pct
for c,p in cats.most_common(): print(f"{p:6.1f}%  {c}")
