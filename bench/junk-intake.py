#!/usr/bin/env python3
"""Write a file of junk for the intake benchmark (BENCHMARKS.md, "Intake of a large file").

Random lines that are not links (lone words, prose, binary-looking but valid UTF-8 noise),
with one link in every 1,000 lines, to the size asked for. Deterministic: the same seed and
size give the same file.

    bench/junk-intake.py OUT [MEGABYTES]     # default 100
"""
import random
import sys

def main():
    out = sys.argv[1]
    size = int(float(sys.argv[2] if len(sys.argv) > 2 else 100) * 1024 * 1024)
    rnd = random.Random(18)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_éü"
    written = 0
    n = 0
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        while written < size:
            n += 1
            kind = rnd.random()
            if n % 1000 == 0:
                line = f"https://site{n % 97}.example/paper/{n}"
            elif kind < 0.6:
                # One lone word: rejected ("no web address found").
                line = "".join(rnd.choice(letters) for _ in range(rnd.randint(4, 60)))
            elif kind < 0.9:
                # Prose: passed over.
                line = " ".join(
                    "".join(rnd.choice(letters) for _ in range(rnd.randint(2, 10)))
                    for _ in range(rnd.randint(2, 12))
                )
            else:
                # Something that tries to be an address and fails: rejected with a reason.
                line = f"ftp://{rnd.randint(0, 10**9)}.example/x"
            f.write(line + "\n")
            written += len(line.encode("utf-8")) + 1
    print(f"{out}: {written:,} bytes, {n:,} lines", file=sys.stderr)

if __name__ == "__main__":
    main()
