#!/usr/bin/env python3
"""Reference files for the intake figures (BENCHMARKS.md §8): a BibTeX library of N entries as
Zotero writes them, a Firefox bookmark export of M bookmarks with 2 KB inline icons in nested
folders, and the same links as a plain list.

    python3 bench/reference-files.py OUT_DIR [ENTRIES] [BOOKMARKS]
"""
import base64, os, random, sys

out = sys.argv[1]
entries = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
bookmarks = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
os.makedirs(out, exist_ok=True)
rng = random.Random(7)
words = "quantum thermometry cell living nanoscale attention transformer protein structure " \
        "prediction learning deep graph neural network sensing diamond vacancy spin".split()

with open(os.path.join(out, "library.bib"), "w") as f:
    f.write("% Exported by Better BibTeX for Zotero\n\n@string{nat = {Nature}}\n\n")
    for i in range(entries):
        title = " ".join(rng.choice(words).capitalize() for _ in range(8))
        authors = " and ".join(f"Au{rng.randrange(999)}, {chr(65 + rng.randrange(26))}." for _ in range(rng.randrange(1, 9)))
        kind = i % 4
        target = {
            0: f"  doi = {{10.{1000 + i % 9000}/bench.{i}}},\n",
            1: f"  eprint = {{{2101 + i % 12:04d}.{i % 100000:05d}}},\n  eprinttype = {{arXiv}},\n",
            2: f"  url = {{https://journal{i % 500}.example/articles/{i}}},\n",
            3: f"  doi = {{https://doi.org/10.{1000 + i % 9000}/bench.{i}}},\n  url = {{https://x.example/{i}}},\n",
        }[kind]
        f.write(f"@article{{key{i},\n  title = {{{{{title}}}}},\n  author = {{{authors}}},\n"
                f"  date = {{{2000 + i % 25}-{1 + i % 12:02d}-{1 + i % 28:02d}}},\n  journaltitle = nat,\n"
                f"  volume = {{{i % 700}}},\n  pages = {{{i % 90}--{i % 90 + 10}}},\n{target}"
                f"  keywords = {{{rng.choice(words)}, {rng.choice(words)}; {rng.choice(words)}}},\n"
                f"  abstract = {{{' '.join(rng.choice(words) for _ in range(120))}}},\n}}\n\n")

icon = "data:image/png;base64," + base64.b64encode(bytes(rng.randrange(256) for _ in range(1536))).decode()
with open(os.path.join(out, "bookmarks.html"), "w") as f, open(os.path.join(out, "links.txt"), "w") as plain:
    f.write("<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<!-- This is an automatically generated file. -->\n"
            '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">\n'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'self'; script-src 'none'; img-src data: *; object-src 'none'\"></meta>\n"
            "<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks Menu</H1>\n\n<DL><p>\n")
    per_folder = 200
    for i in range(bookmarks):
        if i % per_folder == 0:
            if i:
                f.write("        </DL><p>\n    </DL><p>\n")
            f.write(f'    <DT><H3 ADD_DATE="1690000000" LAST_MODIFIED="1690000000">Topic {i // per_folder}</H3>\n    <DL><p>\n'
                    f'        <DT><H3>Sub {i // per_folder}</H3>\n        <DL><p>\n')
        url = f"https://site{i % 1000}.example/posts/{i}?a=1&amp;b={i}"
        f.write(f'            <DT><A HREF="{url}" ADD_DATE="1690000{i % 1000:03d}" LAST_MODIFIED="1690000000" '
                f'ICON_URI="https://site{i % 1000}.example/favicon.ico" ICON="{icon}">Post {i} on site {i % 1000}</A>\n')
        plain.write(url.replace("&amp;", "&") + "\n")
    f.write("        </DL><p>\n    </DL><p>\n</DL>\n")
for name in ("library.bib", "bookmarks.html", "links.txt"):
    print(name, os.path.getsize(os.path.join(out, name)), "bytes")
