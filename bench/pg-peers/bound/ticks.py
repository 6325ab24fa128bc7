#!/usr/bin/env python3
# Prints "server_ticks busy_ticks" using bench/pg-peers/server-cpu.py's own functions
# (postmaster + live children user+sys, exited children via the postmaster's cutime+cstime).
import importlib.util, sys
spec = importlib.util.spec_from_file_location("sc", "/tmp/pgbound/peers/server-cpu.py")
sc = importlib.util.module_from_spec(spec); spec.loader.exec_module(sc)
pm = int(open("/tmp/pgbound/data/postmaster.pid").readline())
print(sc.server(pm), sc.busy())
