#!/usr/bin/env python3
"""`risk_score` of 100 KB over stdio, ours against the Python original, in the same run.

Both servers are spoken to the same way: raw JSON-RPC lines on their stdin, one request at a
time, the round trip timed from the request's write to its answer's read (the client's own
cost is the same for both). Each server is started, initialized and warmed with one call; then
the calls alternate between them (ours, the original's, ours, ...) so that a change in load
hits both. Also timed: spawn to the first `risk_score` answer (a cold start, as a hook or a
one-shot client pays it). Prints medians and the ratios.

    python3 scripts/risk-score-bench.py [--iters 40] [--bin target/release/resilient-write]

The original is resilient-write 0.3.0 from the pinned wheel in target/original-py/ (fetched by
.ci/run's pip command; `RW_ORIGINAL_WHEEL` names another). Its server needs the MCP Python SDK
1.x (the 2.x line dropped the decorators it uses): a virtual environment with `mcp<2`, PyYAML
and jsonschema is made under target/original-venv/ when missing (network needed once).

The input: the first 100 KB of argparse.py, subprocess.py and typing.py of this Python, as the
scan benchmark uses (mixed source with a few secret-shaped strings, none real).
"""

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def wheel() -> Path:
    named = os.environ.get("RW_ORIGINAL_WHEEL")
    if named:
        return Path(named)
    found = sorted((TARGET / "original-py").glob("resilient_write-0.3.0-*.whl"))
    if not found:
        sys.exit("the original's wheel is missing: run .ci/run's pip download, or set RW_ORIGINAL_WHEEL")
    return found[0]


def original_python() -> Path:
    venv = TARGET / "original-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "mcp>=1,<2", "PyYAML>=6", "jsonschema>=4"],
            check=True,
        )
    return py


def sample() -> str:
    import argparse as a
    import subprocess as s
    import typing as t

    text = ""
    for mod in (a, s, t):
        text += Path(mod.__file__).read_text(encoding="utf-8")
    return text[:100_000]


class Server:
    def __init__(self, name: str, argv: list, cwd: str, env: dict):
        self.name = name
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            out = self.proc.stdout.readline()
            if not out:
                raise RuntimeError(f"{self.name}: the server closed stdout")
            msg = json.loads(out)
            if msg.get("id") == self.next_id:
                return msg

    def notify(self, method: str):
        line = json.dumps({"jsonrpc": "2.0", "method": method})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def initialize(self):
        r = self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "risk-score-bench", "version": "1"},
        })
        if "result" not in r:
            raise RuntimeError(f"{self.name}: initialize failed: {r}")
        self.notify("notifications/initialized")

    def risk_score(self, content: str) -> float:
        t = time.perf_counter()
        r = self.request("tools/call", {"name": "rw.risk_score", "arguments": {"content": content}})
        elapsed = time.perf_counter() - t
        result = r.get("result", {})
        text = result.get("content", [{}])[0].get("text", "")
        body = json.loads(text) if text else {}
        if result.get("isError") or "verdict" not in body:
            raise RuntimeError(f"{self.name}: risk_score failed: {json.dumps(r)[:300]}")
        return elapsed

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--cold", type=int, default=5, help="cold starts timed per server")
    ap.add_argument("--bin", default=str(TARGET / "release" / "resilient-write"))
    args = ap.parse_args()

    content = sample()
    py = original_python()
    unpacked = tempfile.mkdtemp(prefix="rw-original-")
    atexit.register(shutil.rmtree, unpacked, ignore_errors=True)
    with zipfile.ZipFile(wheel()) as z:
        z.extractall(unpacked)
    work = tempfile.mkdtemp(prefix="rw-riskbench-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=unpacked, RW_WORKSPACE=work)
    ours_argv = [args.bin]
    theirs_argv = [str(py), "-c", "from resilient_write.server import main; main()"]

    def start(name, argv):
        s = Server(name, argv, work, env)
        s.initialize()
        return s

    cold = {"ours": [], "original": []}
    for _ in range(args.cold):
        for name, argv in (("ours", ours_argv), ("original", theirs_argv)):
            t = time.perf_counter()
            s = start(name, argv)
            s.risk_score(content)
            cold[name].append(time.perf_counter() - t)
            s.close()

    ours, theirs = start("ours", ours_argv), start("original", theirs_argv)
    ours.risk_score(content)
    theirs.risk_score(content)
    warm = {"ours": [], "original": []}
    for _ in range(args.iters):
        warm["ours"].append(ours.risk_score(content))
        warm["original"].append(theirs.risk_score(content))
    ours.close()
    theirs.close()

    def ms(v):
        return statistics.median(v) * 1e3

    print(f"risk_score of {len(content):,} bytes over stdio, median (load average "
          f"{os.getloadavg()[0]:.1f})")
    print(f"  per call, warm server ({args.iters} calls each, alternating): ours "
          f"{ms(warm['ours']):.2f} ms, original {ms(warm['original']):.2f} ms: "
          f"{ms(warm['original']) / ms(warm['ours']):.1f}x")
    print(f"  spawn to first answer ({args.cold} each): ours {ms(cold['ours']):.1f} ms, "
          f"original {ms(cold['original']):.1f} ms: "
          f"{ms(cold['original']) / ms(cold['ours']):.1f}x")


if __name__ == "__main__":
    main()
