# Prefix each line of standard input with the time it arrived (epoch seconds).
import sys, time
for l in sys.stdin:
    sys.stdout.write(f"{time.time():.3f} {l}"); sys.stdout.flush()
