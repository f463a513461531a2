#!/usr/bin/env python3
"""Runs a command and writes its CPU and memory to FILE as `user sys wall
peak_rss_kb` — the fields of `/usr/bin/time -f "%U %S %e %M"`, but to the
microsecond: GNU time prints CPU seconds to two decimals, and a 1,008-turn
eval costs about 0.1 s, so its figure would be ±10% from rounding alone.

    benches/rusage.py FILE COMMAND [ARG...]

The command's exit status is passed on; its children (none here) count too,
as they do for GNU time."""
import os
import sys
import time

out, argv = sys.argv[1], sys.argv[2:]
start = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.monotonic() - start
with open(out, "w") as f:
    f.write(f"{usage.ru_utime:.6f} {usage.ru_stime:.6f} {wall:.6f} {usage.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status))
