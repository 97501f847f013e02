#!/usr/bin/env python3
"""Journal commits per write: the syscall floor against `safe_write` over stdio.

Usage (as root, `perf` installed, DIR on a journaled ext4):

    scripts/commits-per-write.py target/release/resilient-write /mnt/rwbench [N]

For create and overwrite at 1 KB, 64 KB and 1 MB it runs N floor writes (temp file, write,
fsync, rename, directory fsync) and then N `safe_write` calls to a server on a fresh
workspace in DIR, each under `perf stat -a -e jbd2:jbd2_end_commit`, and prints the journal
commits per write and the median time of each. A commit is the expensive step of a sync on a
journaling filesystem: the floor needs two per write (the file's, the directory's); every
commit more is a device round trip more. Other writers on the same filesystem add commits, so
run it on a quiet one.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import time

CASES = [
    (mode, label, size)
    for mode in ("create", "overwrite")
    for label, size in (("1 KB", 1024), ("64 KB", 64 * 1024), ("1 MB", 1024 * 1024))
]


def body(size, i):
    head = b"%12d\n" % i
    return (head + b"x" * size)[:size]


def run_floor(directory, n, size, mode):
    times = []
    dfd = os.open(directory, os.O_RDONLY)
    for i in range(n):
        name = f"f{i}.txt" if mode == "create" else "f.txt"
        t = time.perf_counter()
        fd = os.open(f"{directory}/.tmp{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, body(size, i))
        os.fsync(fd)
        os.close(fd)
        os.rename(f"{directory}/.tmp{i}", f"{directory}/{name}")
        os.fsync(dfd)
        times.append(time.perf_counter() - t)
    os.close(dfd)
    return times


def run_server(binary, directory, n, size, mode):
    p = subprocess.Popen(
        [binary, "serve", "--workspace", directory],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=directory,
    )

    def send(msg):
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "commits-per-write", "version": "1"}}})
    p.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    lines = []
    for i in range(n):
        name = f"f{i}.txt" if mode == "create" else "f.txt"
        args = {"path": name, "content": body(size, i).decode(), "mode": mode}
        lines.append((json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                                  "params": {"name": "rw_safe_write", "arguments": args}})
                      + "\n").encode())
    times = []
    for line in lines:
        t = time.perf_counter()
        p.stdin.write(line)
        p.stdin.flush()
        answer = p.stdout.readline()
        times.append(time.perf_counter() - t)
        if b'"isError":true' in answer:
            sys.exit(f"safe_write failed: {answer[:300]!r}")
    p.stdin.close()
    p.wait()
    return times


def measured(argv):
    """Runs one side under perf; returns (commits, median seconds)."""
    out = subprocess.run(
        ["perf", "stat", "-a", "-x,", "-e", "jbd2:jbd2_end_commit", "--",
         sys.executable, __file__, "--side"] + argv,
        capture_output=True, text=True, check=True)
    commits = next(int(line.split(",")[0]) for line in out.stderr.splitlines()
                   if "jbd2_end_commit" in line)
    return commits, float(out.stdout.strip())


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--side":
        side, binary, directory, n, size, mode = sys.argv[2:8]
        n, size = int(n), int(size)
        if side == "floor":
            times = run_floor(directory, n, size, mode)
        else:
            times = run_server(binary, directory, n, size, mode)
        print(statistics.median(times))
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary, base = os.path.abspath(sys.argv[1]), sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    print(f"journal commits per write, {n} writes per case, {base}")
    print("  case                floor commits/write    ms   safe_write commits/write    ms")
    for mode, label, size in CASES:
        row = []
        for side in ("floor", "server"):
            d = os.path.join(base, f"cpw-{side}")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            commits, median = measured([side, binary, d, str(n), str(size), mode])
            shutil.rmtree(d, ignore_errors=True)
            row.append((commits / n, median * 1e3))
        (fc, fm), (sc, sm) = row
        print(f"  {mode:<9} {label:<6} {fc:>18.2f} {fm:>7.3f} {sc:>22.2f} {sm:>7.3f}")


if __name__ == "__main__":
    main()
