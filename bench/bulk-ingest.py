#!/usr/bin/env python3
"""Bulk ingest: Gleaner against wget and aria2c on the same pages, in the same run.

20,000 small article pages (a few KB of HTML each: header, navigation, sidebar, article with
byline, sections, lists, quotes and figures, related links, footer; words drawn with their
frequencies from this repository's own prose, so no two pages are alike) are served by nginx
on 16 loopback hosts (127.0.0.2-17, one port). Then, in rounds whose order rotates, each
contender fetches all of them:

  wget          wget -q -i LIST -P OUT                  (one process, one connection)
  wget-P16      16 x wget -q -i HOST_LIST -P OUT        (xargs -P 16: a process per host)
  aria2c-j16    aria2c -i LIST -d OUT -j 16 --file-allocation=none (16 downloads at once)
  gleaner NAME  gleaner --data-dir D add --file LIST, then
                gleaner --data-dir D run --until-idle [flags]   (timed apart)

`sync` runs before every timed command (outside its time), so the dirty pages one contender
leaves are not written during the next one's run; after each peer, the time of a `sync` is
recorded too: wget and aria2c leave their files in the page cache, where Gleaner has every
document on disk (fsynced) before it calls the job done.

Usage (see BENCHMARKS.md §13):
  python3 bench/bulk-ingest.py --gleaner after=target/release/gleaner \
      [--gleaner before=/tmp/gleaner-b814c60] [--pages 20000] [--rounds 3] \
      [--gleaner-flags default=] [--gleaner-flags c16="--concurrency 16 --per-host 2"] \
      [--work /tmp/gleaner-bulk] [--port 18480] [--out bench/results-bulk-ingest.jsonl]

It installs nginx-light, wget and aria2 with apt-get when they are missing and it runs as root.
nginx gets a config of its own under the work folder; it is started and stopped here.
"""

import argparse
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HOSTS = [f"127.0.0.{i}" for i in range(2, 18)]
REPO = Path(__file__).resolve().parent.parent


def need_tools():
    missing = [pkg for tool, pkg in (("nginx", "nginx-light"), ("wget", "wget"), ("aria2c", "aria2"))
               if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists()]
    if not missing:
        return
    if os.geteuid() != 0:
        sys.exit(f"missing {' '.join(missing)}: apt-get install {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-q", *missing], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def nginx_bin():
    return shutil.which("nginx") or "/usr/sbin/nginx"


# ---------------------------------------------------------------------------------------------
# Pages

_VOCABULARY = None


def vocabulary():
    """Words and their counts from the repository's prose: real English with a real spread of
    frequencies, and the same on every machine."""
    global _VOCABULARY
    if _VOCABULARY is not None:
        return _VOCABULARY
    counts = {}
    for doc in ("README.md", "docs/ARCHITECTURE.md", "BENCHMARKS.md", "tests/data/README.md"):
        path = REPO / doc
        if not path.exists():
            continue
        for w in re.findall(r"[A-Za-z][a-z]{1,14}", path.read_text(encoding="utf-8")):
            w = w.lower()
            counts[w] = counts.get(w, 0) + 1
    words = sorted(counts)
    _VOCABULARY = (words, [counts[w] for w in words])
    return _VOCABULARY


_CUM = {}


def cumulative(weights):
    key = id(weights)
    if key not in _CUM:
        total, out = 0, []
        for w in weights:
            total += w
            out.append(total)
        _CUM[key] = out
    return _CUM[key]


class Writer:
    def __init__(self, seed):
        self.words, self.weights = vocabulary()
        self.rng = random.Random(seed)
        self.cum = cumulative(self.weights)

    def some(self, n):
        return self.rng.choices(self.words, cum_weights=self.cum, k=n)

    def sentence(self, lo=8, hi=24):
        ws = self.some(self.rng.randint(lo, hi))
        return " ".join(ws).capitalize() + self.rng.choice([".", ".", ".", "?", "!"])

    def title(self):
        return " ".join(w.capitalize() for w in self.some(self.rng.randint(4, 9)))

    def name(self):
        a, b = self.some(2)
        return f"{a.capitalize()} {b.capitalize()}"

    def paragraph(self):
        r = self.rng
        parts = []
        for _ in range(r.randint(2, 6)):
            s = self.sentence()
            roll = r.random()
            if roll < 0.15:
                w = self.some(r.randint(1, 3))
                s += f' See <a href="/topic/{"-".join(w)}">{" ".join(w)}</a>.'
            elif roll < 0.25:
                s = s.replace(" ", " <em>", 1).replace(" ", "</em> ", 1) if " " in s else s
            elif roll < 0.30:
                s = f"<strong>{s}</strong>"
            parts.append(s)
        return "<p>" + " ".join(parts) + "</p>"


SITES = ["The Daily Ledger", "Riverbank Review", "Field Notes", "Northern Courier",
         "Open Science Weekly", "Harbour Times", "The Long Read", "Civic Observer"]


def page(i, host):
    w = Writer(i)
    r = w.rng
    title = w.title()
    site = SITES[i % len(SITES)]
    author = w.name()
    day = f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}"
    slug = "-".join(title.lower().split()[:5])
    name = f"p{i:05d}-{slug}.html"
    nav = "".join(f'<li><a href="/{s}">{s.capitalize()}</a></li>'
                  for s in ("news", "world", "science", "culture", "opinion", "sport", "about"))
    trending = "".join(f'<li><a href="/t/{k}">{w.title()}</a></li>' for k in range(5))
    body = []
    for section in range(r.randint(2, 4)):
        if section:
            body.append(f"<h2>{w.title()}</h2>")
        for _ in range(r.randint(2, 4)):
            body.append(w.paragraph())
        roll = r.random()
        if roll < 0.3:
            body.append("<ul>" + "".join(f"<li>{w.sentence(4, 10)}</li>" for _ in range(r.randint(3, 6))) + "</ul>")
        elif roll < 0.5:
            body.append(f"<blockquote><p>{w.sentence()}</p><cite>{w.name()}</cite></blockquote>")
        elif roll < 0.65:
            body.append(f'<figure><img src="/img/{i}-{section}.jpg" alt="{w.sentence(3, 7)}">'
                        f"<figcaption>{w.sentence(5, 12)}</figcaption></figure>")
    related = "".join(f'<li><a href="/p/{r.randint(0, 99999)}">{w.title()}</a></li>' for _ in range(4))
    html = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} | {site}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="{w.sentence(10, 18)}">
<meta name="author" content="{author}">
<meta property="og:site_name" content="{site}">
<meta property="og:title" content="{title}">
<meta property="article:published_time" content="{day}T08:{i % 60:02d}:00Z">
<link rel="canonical" href="http://{host}/{name}">
<link rel="stylesheet" href="/static/site.css">
<script>window.dataLayer = window.dataLayer || []; dataLayer.push({{"page": {i}}});</script>
</head>
<body>
<header class="site-header"><a class="logo" href="/">{site}</a>
<nav aria-label="Sections"><ul>{nav}</ul></nav>
<form class="search" action="/search"><input name="q" placeholder="Search"></form></header>
<div class="layout">
<aside class="sidebar"><h3>Trending</h3><ul>{trending}</ul>
<div class="ad">Advertisement</div></aside>
<main>
<article>
<h1>{title}</h1>
<p class="byline">By <a rel="author" href="/authors/{author.lower().replace(' ', '-')}">{author}</a>
 &middot; <time datetime="{day}">{day}</time></p>
{chr(10).join(body)}
</article>
<section class="related"><h2>Related</h2><ul>{related}</ul></section>
<div class="share">Share: <a href="/share/mail">Mail</a> <a href="/share/print">Print</a></div>
<section class="comments"><h2>Comments</h2><p>Comments are closed.</p></section>
</main>
</div>
<footer class="site-footer"><p>&copy; 2024 {site}. All rights reserved.</p>
<ul><li><a href="/privacy">Privacy</a></li><li><a href="/terms">Terms</a></li><li><a href="/contact">Contact</a></li></ul></footer>
</body>
</html>
"""
    return name, html


def make_pages(work, n, port):
    """The pages and the URL lists (cached in the work folder between runs)."""
    pages = work / "pages"
    stamp = work / f"pages-{n}.done"
    lists = work / "lists"
    if not stamp.exists():
        shutil.rmtree(pages, ignore_errors=True)
        pages.mkdir(parents=True)
        names = []
        total = 0
        for i in range(n):
            host = HOSTS[i % len(HOSTS)]
            name, html = page(i, host)
            (pages / name).write_text(html, encoding="utf-8")
            names.append(name)
            total += len(html.encode())
        (work / "names.txt").write_text("\n".join(names) + "\n")
        stamp.write_text(json.dumps({"pages": n, "bytes": total}))
    names = (work / "names.txt").read_text().split()
    shutil.rmtree(lists, ignore_errors=True)
    lists.mkdir()
    # Page i lives on host i % 16; the lists give each host's pages together (wget keeps its one
    # connection per host that way), and Gleaner's lanes interleave hosts whatever the order.
    per_host = {h: [] for h in HOSTS}
    for i, name in enumerate(names):
        host = HOSTS[i % len(HOSTS)]
        per_host[host].append(f"http://{host}:{port}/{name}")
    every = []
    for k, h in enumerate(HOSTS):
        (lists / f"host{k:02d}.txt").write_text("\n".join(per_host[h]) + "\n")
        every += per_host[h]
    (lists / "all.txt").write_text("\n".join(every) + "\n")
    meta = json.loads(stamp.read_text())
    return lists, meta


# ---------------------------------------------------------------------------------------------
# nginx

def start_nginx(work, port):
    prefix = work / "nginx"
    shutil.rmtree(prefix, ignore_errors=True)
    (prefix / "tmp").mkdir(parents=True)
    listens = "\n".join(f"    listen {h}:{port};" for h in HOSTS)
    conf = prefix / "nginx.conf"
    conf.write_text(f"""worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  types {{ text/html html; }}
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65;
  keepalive_requests 100000;
  client_body_temp_path {prefix}/tmp/body;
  proxy_temp_path {prefix}/tmp/proxy;
  fastcgi_temp_path {prefix}/tmp/fastcgi;
  server {{
{listens}
    root {work / "pages"};
  }}
}}
""")
    proc = subprocess.Popen([nginx_bin(), "-p", str(prefix), "-e", str(prefix / "error.log"),
                             "-c", str(conf), "-g", "daemon off;"])
    deadline = time.time() + 10
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"nginx did not start (port {port} taken?): {(prefix / 'error.log').read_text()}")
        try:
            socket.create_connection((HOSTS[-1], port), timeout=0.2).close()
            time.sleep(0.2)
            if proc.poll() is None:
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("nginx did not answer within 10 s")


def stop_nginx(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------------------------
# Contenders

def timed(cmd, **kw):
    """Wall seconds and CPU seconds (user + system, the command and every process it waited
    for): on a shared machine the wall time swings with other tenants' load, the CPU much less."""
    subprocess.run(["sync"], check=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, **kw)
    secs = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return secs, cpu


def count_files(d, suffix):
    return sum(1 for _ in d.rglob(f"*{suffix}"))


def run_peer(name, work, lists, n):
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    if name == "wget":
        secs, cpu = timed(["wget", "-q", "-i", str(lists / "all.txt"), "-P", str(out)])
    elif name == "wget-P16":
        hosts = sorted(str(p) for p in lists.glob("host*.txt"))
        secs, cpu = timed(["xargs", "-P", "16", "-n", "1", "wget", "-q", "-P", str(out), "-i"],
                          input="\n".join(hosts).encode())
    elif name == "aria2c-j16":
        secs, cpu = timed(["aria2c", "-q", "-i", str(lists / "all.txt"), "-d", str(out), "-j", "16",
                           "--file-allocation=none", "--auto-file-renaming=false",
                           "--allow-overwrite=true", "--console-log-level=error"])
    else:
        raise ValueError(name)
    t = time.perf_counter()
    subprocess.run(["sync"], check=True)
    sync_secs = time.perf_counter() - t
    got = count_files(out, ".html")
    if got != n:
        sys.exit(f"{name} saved {got} pages of {n}")
    shutil.rmtree(out)
    return {"seconds": secs, "sync_seconds": sync_secs, "cpu_seconds": cpu}


def run_gleaner(binary, flags, work, lists, n):
    data = work / "gleaner-data"
    shutil.rmtree(data, ignore_errors=True)
    env = dict(os.environ, GLEANER_LOG="info")
    add_secs, add_cpu = timed([binary, "--data-dir", str(data), "add", "--file", str(lists / "all.txt")],
                              stdout=subprocess.DEVNULL, env=env)
    with open(work / "gleaner-run.log", "wb") as log:
        run_secs, run_cpu = timed([binary, "--data-dir", str(data), *flags, "run", "--until-idle"],
                                  stdout=log, stderr=log, env=env)
    stats = json.loads(subprocess.run([binary, "--data-dir", str(data), "stats", "--json"],
                                      check=True, capture_output=True, env=env).stdout)
    done = stats.get("counts", stats).get("done")
    docs = count_files(data / "library", ".md")
    if done != n or docs != n:
        sys.exit(f"gleaner {binary}: {done} done and {docs} documents of {n}; stats: {stats}")
    shutil.rmtree(data)
    return {"seconds": add_secs + run_secs, "add_seconds": add_secs, "run_seconds": run_secs,
            "cpu_seconds": add_cpu + run_cpu}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gleaner", action="append", default=[], metavar="NAME=PATH",
                    help="a Gleaner build to time (repeatable)")
    ap.add_argument("--gleaner-flags", action="append", default=[], metavar="NAME=FLAGS",
                    help='policy flags to time each build with (repeatable; default: '
                         '"default=" and "c16=--concurrency 16 --per-host 2")')
    ap.add_argument("--peers", default="wget,wget-P16,aria2c-j16")
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="/tmp/gleaner-bulk")
    ap.add_argument("--port", type=int, default=18480)
    ap.add_argument("--out", default=str(REPO / "bench" / "results-bulk-ingest.jsonl"))
    args = ap.parse_args()

    need_tools()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    # nginx's workers run as nobody: the pages must be readable on the way down.
    os.chmod(work, 0o755)
    lists, meta = make_pages(work, args.pages, args.port)
    print(f"{meta['pages']} pages, {meta['bytes'] / meta['pages'] / 1024:.1f} KiB each on average",
          file=sys.stderr)

    builds = [g.split("=", 1) for g in args.gleaner]
    flag_sets = [f.split("=", 1) for f in args.gleaner_flags] or [
        ["default", ""], ["c16", "--concurrency 16 --per-host 2"]]
    contenders = [("peer", p, None) for p in args.peers.split(",") if p]
    for bname, path in builds:
        for fname, flags in flag_sets:
            contenders.append(("gleaner", f"gleaner-{bname}-{fname}",
                               (str(Path(path).resolve()), shlex.split(flags))))

    nginx = start_nginx(work, args.port)
    results = {c[1]: [] for c in contenders}
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        with open(args.out, "a") as out:
            for rnd in range(args.rounds):
                k = rnd % len(contenders)
                for kind, name, spec in contenders[k:] + contenders[:k]:
                    if kind == "peer":
                        res = run_peer(name, work, lists, args.pages)
                    else:
                        res = run_gleaner(spec[0], spec[1], work, lists, args.pages)
                    res.update(name=name, round=rnd, pages=args.pages, started=started,
                               per_sec=round(args.pages / res["seconds"], 1))
                    results[name].append(res)
                    out.write(json.dumps(res) + "\n")
                    out.flush()
                    print(json.dumps(res), file=sys.stderr)
    finally:
        stop_nginx(nginx)

    med = {name: statistics.median(r["seconds"] for r in rs) for name, rs in results.items()}
    wget = med.get("wget")
    print(f"\n{args.pages} pages, {args.rounds} rounds, run started {started}\n")
    print("| contender | median s (rounds) | pages/s | × wget | add s | run s | then sync s | CPU s (rounds) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, rs in results.items():
        secs = ", ".join(f"{r['seconds']:.1f}" for r in rs)
        def m(key):
            vals = [r[key] for r in rs if key in r]
            return f"{statistics.median(vals):.1f}" if vals else ""
        ratio = f"{med[name] / wget:.2f}" if wget else ""
        cpus = ", ".join(f"{r['cpu_seconds']:.1f}" for r in rs if "cpu_seconds" in r)
        print(f"| {name} | {med[name]:.1f} ({secs}) | {args.pages / med[name]:,.0f} | {ratio} "
              f"| {m('add_seconds')} | {m('run_seconds')} | {m('sync_seconds')} "
              f"| {m('cpu_seconds')} ({cpus}) |")


if __name__ == "__main__":
    main()
