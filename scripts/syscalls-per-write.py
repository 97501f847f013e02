#!/usr/bin/env python3
"""System calls and server CPU per `safe_write`, for one or more builds side by side.

Usage (strace installed):

    scripts/syscalls-per-write.py target/release/resilient-write [OTHER_BINARY ...] [-n N] [--dir DIR]

For a 1 KB create and a 1 KB overwrite (history on) it starts each binary's server over stdio
on a fresh workspace in DIR (default /dev/shm, where no device sync hides the server's own
work) and counts:

- system calls per write, all threads: the server runs under `strace -f -c` for N writes and
  for 2N writes (after 20 untimed ones), and the difference is divided by N, so start-up and
  shutdown cancel out. The count does not move with the machine's speed. The syscall floor
  (temp file, write, fsync, close, rename, directory fsync) makes six;
- the server's CPU per write (user and system, all threads, from wait4's rusage) over a run
  of 10N writes without strace, its start-up included (a few milliseconds, about 1% of the
  run). This one moves with the machine: the builds are run alternately, twice, and both
  figures are printed.
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile


def body(i):
    head = "%12d\n" % i
    return (head + "x" * 1024)[:1024]


class Server:
    def __init__(self, argv, workspace):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  cwd=workspace)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "syscalls-per-write", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            answer = json.loads(self.p.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def write(self, path, content, mode):
        answer = self.request("tools/call", {"name": "rw_safe_write", "arguments": {
            "path": path, "content": content, "mode": mode}})
        if "error" in answer or answer["result"].get("isError"):
            raise SystemExit(f"safe_write failed: {str(answer)[:300]}")

    def close(self):
        """The server's user and system CPU seconds, all threads, once it has exited."""
        self.p.stdin.close()
        _, _, usage = os.wait4(self.p.pid, 0)
        self.p.returncode = 0
        return usage.ru_utime + usage.ru_stime


def writes(server, mode, start, count):
    for i in range(start, start + count):
        path = f"f{i}.txt" if mode == "create" else "same.txt"
        server.write(path, body(i), mode)


def run(binary, base, mode, n, traced):
    """The strace call count (traced) or the server's CPU seconds, for 20 + n writes."""
    ws = tempfile.mkdtemp(prefix="spw-", dir=base)
    try:
        out = os.path.join(ws, ".strace")
        argv = [binary, "serve", "--workspace", ws]
        if traced:
            argv = ["strace", "-f", "-c", "-o", out] + argv
        s = Server(argv, ws)
        if mode == "overwrite":
            s.write("same.txt", "x", "create")
        writes(s, mode, 0, 20 + n)
        spent = s.close()
        if not traced:
            return spent
        total = open(out).read().strip().splitlines()[-1].split()
        return int(total[3])
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--dir", default="/dev/shm")
    a = ap.parse_args()
    if shutil.which("strace") is None:
        raise SystemExit("strace is not installed")
    print(f"per 1 KB safe_write, {a.n} and {2 * a.n} writes a count, dir {a.dir}")
    print("  binary                                  case        syscalls   CPU us (2 runs)")
    for mode in ("create", "overwrite"):
        cpu = {}
        for binary in a.binaries:
            binary = os.path.abspath(binary)
            calls = (run(binary, a.dir, mode, 2 * a.n, True)
                     - run(binary, a.dir, mode, a.n, True)) / a.n
            cpu[binary] = calls, []
        for _ in range(2):
            for binary in cpu:
                spent = run(binary, a.dir, mode, 10 * a.n, False)
                cpu[binary][1].append(spent / (10 * a.n + 20) * 1e6)
        for binary, (calls, us) in cpu.items():
            shown = " ".join(f"{u:>5.0f}" for u in us)
            print(f"  {binary[-38:]:<38}  {mode:<10} {calls:>9.1f}   {shown}")


if __name__ == "__main__":
    main()
