#!/usr/bin/env python3
"""The search bench's four query lists (one_word, two_words, phrase, no_hit), rebuilt from the
Markdown files it wrote with GLEANER_BENCH_FILES=DIR, for a peer to run the same query strings.

tests/benches/search.rs writes only the one-word queries (DIR/queries.txt). The rest follow
from its generator: each document takes one draw of its xorshift per body sentence (the
sentence's length), one per word (body, 6 title words, 2 authors), and one more while fewer
than 200 documents are sampled (sampled when it is 0). The word counts are in the files, so
the draws can be replayed without the vocabulary. Checked against DIR/queries.txt: it exits
non-zero if the one-word queries differ. Usage: tantivy-peer-queries.py DIR > queries.tsv
(lines KIND<TAB>QUERY)."""
import os
import re
import sys

QUERIES = 200
MASK = (1 << 64) - 1

root = sys.argv[1]
paths = []
for d in os.listdir(root):
    if os.path.isdir(os.path.join(root, d)):
        for f in os.listdir(os.path.join(root, d)):
            if f.endswith(".md"):
                paths.append((int(f[:-3]), os.path.join(root, d, f)))
paths.sort()  # the bench's claims come in job-id order
n = len(paths)

state = 0x9E3779B97F4A7C15


def draw():
    global state
    state ^= (state << 13) & MASK
    state ^= state >> 7
    state ^= (state << 17) & MASK
    return state


def skip(k):
    for _ in range(k):
        draw()


samples = []
for _, path in paths:
    text = open(path, encoding="utf-8").read()
    body = text.split("\n---\n", 1)[1]
    for s in body.split(".\n\n")[:-1]:
        skip(1 + len(s.split(" ")))
    skip(6 + 2)  # title, authors
    if len(samples) < QUERIES and draw() % (n // QUERIES + 1) == 0:
        samples.append(body)

kinds = {"one_word": [], "two_words": [], "phrase": [], "no_hit": []}
for i, body in enumerate(samples):
    # The bench splits on what is not a letter; the vocabulary's words are letters only, so
    # splitting on the separators it writes (space, ".", newline) gives the same words.
    words = [w for w in re.split(r"[ .\n]+", body) if len(w.encode()) > 3]
    a, b = words[i % len(words)], words[(i * 7 + 3) % len(words)]
    at = i % (len(words) - 1)
    kinds["one_word"].append(a)
    kinds["two_words"].append(f"{a} {b}")
    kinds["phrase"].append(f'"{words[at]} {words[at + 1]}"')
    kinds["no_hit"].append(f"zq{i}xv")

written = os.path.join(root, "queries.txt")
if os.path.exists(written):
    want = [l for l in open(written, encoding="utf-8").read().split("\n") if l]
    if want != kinds["one_word"]:
        sys.exit(f"rebuilt one-word queries differ from {written}: "
                 f"{len(kinds['one_word'])} vs {len(want)}, first {kinds['one_word'][:3]} vs {want[:3]}")
for kind, qs in kinds.items():
    for q in qs:
        print(f"{kind}\t{q}")
