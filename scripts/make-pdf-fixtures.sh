#!/usr/bin/env bash
# Regenerates the PDF fixtures of the PDF text extraction (tests/data/pdf/*.pdf) from their LaTeX
# sources beside them. Only needed when a .tex changes: the PDFs are committed, so CI needs no TeX.
# Needs pdflatex: apt-get install texlive-latex-base texlive-latex-recommended
# The dates and the document ID are fixed, so the same TeX Live makes the same bytes.
set -euo pipefail
cd "$(dirname "$0")/../tests/data/pdf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH=1704067200 FORCE_SOURCE_DATE=1
for tex in *.tex; do
    name=${tex%.tex}
    # Twice, so the page references settle.
    for _ in 1 2; do
        pdflatex -interaction=nonstopmode -halt-on-error -output-directory "$work" \
            "\\pdftrailerid{}\\input{$tex}" >"$work/$name.out" ||
            { cat "$work/$name.out"; exit 1; }
    done
    cp "$work/$name.pdf" "$name.pdf"
    echo "$name.pdf: $(wc -c <"$name.pdf") bytes"
done
