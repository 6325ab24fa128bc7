#!/usr/bin/env python3
"""Writes the binary fixtures for engine/extract.rs by hand (no PDF/PNG library).

Run inside this folder:  python3 make_fixtures.py
The PDFs get a correct xref table, so poppler and qpdf open article.pdf cleanly.
The encrypted copies were then made with qpdf:
    qpdf --encrypt secret owner 256 -- article.pdf encrypted.pdf
    qpdf --encrypt "" owner 128 --use-aes=y -- article.pdf owner-locked.pdf
"""
import os
import struct
import zlib

OUT = "."


def pdf(objects):
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n".encode()
    out += b"0000000000 65535 f \n"
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\n"
        f"startxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


def text_pdf(lines, title, font=b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"):
    ops = ["BT", "/F1 14 Tf", "72 720 Td", "18 TL"]
    for line in lines:
        esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        ops.append(f"({esc}) Tj T*")
    ops.append("ET")
    stream = "\n".join(ops).encode()
    info = b"<< /Producer (gleaner fixture) >>" if title is None else (
        b"<< /Title (" + title + b") /Producer (gleaner fixture) >>")
    return pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream",
        font,
        info,
    ])


def main():
    os.makedirs(OUT, exist_ok=True)
    lines = [
        "Field Notes on Moss",
        "Moss grows slowly on the north side of old stone walls.",
        "This sentence proves the PDF text layer was extracted.",
    ]
    good = text_pdf(lines, b"Field Notes on Moss \\(fixture\\)")
    open(f"{OUT}/article.pdf", "wb").write(good)
    open(f"{OUT}/untitled.pdf", "wb").write(text_pdf(lines, None))
    # Structurally valid, but a Type0 font without /DescendantFonts: pdf-extract
    # 0.12 panics on it ("Descendant fonts required").
    open(f"{OUT}/panicky.pdf", "wb").write(text_pdf(lines, b"Panicky", b"<< /Type /Font /Subtype /Type0 /BaseFont /Foo >>"))
    # Cut inside the content stream: no xref, no trailer, no %%EOF.
    open(f"{OUT}/truncated.pdf", "wb").write(good[: len(good) * 45 // 100])
    open(f"{OUT}/garbage.pdf", "wb").write(b"%PDF-1.4 garbage\n")
    open(f"{OUT}/pixel.png", "wb").write(png_1x1())
    # The ISO-8859-1 pages: same text, one with <meta charset>, one without.
    body = open(f"{OUT}/latin1.txt", encoding="utf-8").read()
    meta = '<meta charset="iso-8859-1">'
    open(f"{OUT}/latin1-meta.html", "wb").write(body.replace("<!--META-->", meta).encode("iso-8859-1"))
    open(f"{OUT}/latin1-nometa.html", "wb").write(body.replace("<!--META-->", "").encode("iso-8859-1"))
    open(f"{OUT}/empty.bin", "wb").write(b"")


def png_1x1():
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x80\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


main()
