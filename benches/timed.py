#!/usr/bin/env python3
"""Times one command as `/usr/bin/time -f '%e %U %S %M'` would (GNU time is not on every
host): wall time, user and system CPU, and peak RSS of the command and its children.

    timed.py [--out FILE] [--quiet] LABEL CMD...

Prints `LABEL: 2.12 s wall, 1.70 s user, 0.10 s sys, 137216 KiB peak` and exits with the
command's status. The command's stdout goes to FILE (default: discarded); `--quiet`
discards its stderr too. The peak has a floor of this interpreter's own RSS (~14 MB): the
kernel counts the forked copy's pages before the exec. The benches' scripts all time through this one file so their
lines read alike and parse alike (`parse` below)."""
import argparse
import re
import resource
import subprocess
import sys
import time

LINE = re.compile(
    r"^(?P<label>.*): (?P<wall>[\d.]+) s wall, (?P<user>[\d.]+) s user, "
    r"(?P<sys>[\d.]+) s sys, (?P<rss>\d+) KiB peak$"
)


def parse(line):
    """A printed line back as (label, wall, user, sys, rss_kib), or None."""
    m = LINE.match(line.strip())
    if not m:
        return None
    return (m["label"], float(m["wall"]), float(m["user"]), float(m["sys"]), int(m["rss"]))


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--out", help="where the command's stdout goes (default: discarded)")
    args.add_argument("--quiet", action="store_true", help="discard the command's stderr")
    args.add_argument("label")
    args.add_argument("command", nargs=argparse.REMAINDER)
    a = args.parse_args()
    if not a.command:
        args.error("give the command to time after its label")
    stdout = open(a.out, "wb") if a.out else subprocess.DEVNULL
    stderr = subprocess.DEVNULL if a.quiet else None
    start = time.monotonic()
    code = subprocess.run(a.command, stdout=stdout, stderr=stderr).returncode
    wall = time.monotonic() - start
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"{a.label}: {wall:.2f} s wall, {r.ru_utime:.2f} s user, {r.ru_stime:.2f} s sys, "
        f"{r.ru_maxrss} KiB peak",
        flush=True,
    )
    sys.exit(code)


if __name__ == "__main__":
    main()
