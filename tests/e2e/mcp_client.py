#!/usr/bin/env python3
"""End-to-end check of resilient-write with the official MCP Python SDK client.

Usage: mcp_client.py stdio|http --bin PATH --workspace DIR --extra-root DIR
                     [--mode legacy|auto] [--expect-version V]

Connects to the real server (spawned over stdio, or started with `serve --transport http` and
reached at its printed URL), then: initializes, lists tools, writes a file, writes into a
client root (legacy handshake only: roots/list is a request of the server), reads the journal
tail resource, lists and reads resources, checks the typed envelope of a refused write and the
JSON-RPC error of an unknown resource. Prints one line per check; exits 1 on the first failure.
"""

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok - {what}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(args):
    """Start `serve --transport http` and return (process, url) once it says where it listens."""
    port = free_port()
    proc = subprocess.Popen(
        [args.bin, "serve", "--transport", "http", "--host", "127.0.0.1", "--port", str(port),
         "-w", args.workspace],
        cwd=args.workspace, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"listening on (http://\S+/mcp)", line)
        if m:
            return proc, m.group(1)
    proc.wait()
    raise AssertionError(f"server exited ({proc.returncode}) before it printed `listening on`")


async def run(args, target):
    extra = Path(args.extra_root).resolve()
    logs = []

    async def list_roots(_context):
        return types.ListRootsResult(roots=[types.Root(uri=extra.as_uri(), name="extra")])

    async def on_log(params):
        logs.append(params)

    async with Client(target, mode=args.mode, list_roots_callback=list_roots,
                      logging_callback=on_log, client_info=types.Implementation(
                          name="python-e2e", version="1")) as client:
        info = client.server_info
        check(info is not None and info.name == "resilient-write", "serverInfo names resilient-write")
        if args.expect_version:
            check(info.version == args.expect_version, f"serverInfo.version is {args.expect_version}")
        check(bool(client.instructions) and "rw_safe_write" in client.instructions,
              "instructions mention rw_safe_write")

        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        check({"rw_safe_write", "rw_journal_tail", "rw_safe_replace"} <= names,
              f"tools/list has the write tools ({len(names)} tools)")

        r = await client.call_tool("rw_safe_write", {"path": "hello.txt", "content": "hello e2e\n"})
        sc = r.structured_content or {}
        check(not r.is_error and sc.get("ok") is True and sc.get("bytes") == 10,
              "rw_safe_write created hello.txt (10 bytes)")
        check((Path(args.workspace) / "hello.txt").read_text() == "hello e2e\n",
              "hello.txt holds exactly what was sent")

        if args.mode == "legacy":
            target_in_root = extra / "via-root.txt"
            r = await client.call_tool("rw_safe_write",
                                       {"path": str(target_in_root), "content": "root"})
            check(not r.is_error and target_in_root.read_text() == "root",
                  "a write inside the client's root landed (roots/list answered)")

        res = await client.list_resources()
        uris = {str(x.uri) for x in res.resources}
        check({"resilient-write://handoff", "resilient-write://journal/tail"} <= uris,
              "resources/list has the handoff and the journal tail")

        tail = await client.read_resource("resilient-write://journal/tail?n=5")
        body = json.loads(tail.contents[0].text)
        paths = [e.get("path", "") for e in body.get("entries", [])]
        check(any(p.endswith("hello.txt") for p in paths), "journal tail resource shows hello.txt")

        r = await client.call_tool("rw_safe_write", {"path": "hello.txt", "content": "again"})
        env = r.structured_content or {}
        check(r.is_error, "a second create of hello.txt is refused")
        for field in ("error", "reason_hint", "suggested_action", "retry_budget", "schema_version"):
            check(field in env, f"the refusal's envelope has {field}")
        check(env.get("ok") is False, "the envelope says ok: false")
        text_env = json.loads(r.content[0].text)
        check(text_env == env, "text content and structuredContent carry the same envelope")
        check((Path(args.workspace) / "hello.txt").read_text() == "hello e2e\n",
              "the refused write changed nothing")

        try:
            await client.read_resource("resilient-write://nope")
            check(False, "an unknown resource is an error")
        except MCPError as e:
            # -32002 (resource not found) before 2026-07-28; that version uses -32602.
            check(e.code in (-32002, -32602), f"an unknown resource is JSON-RPC error {e.code}")

        pong = await client.send_ping() if args.mode == "legacy" else None
        if args.mode == "legacy":
            check(pong is not None, "ping answers")
    print(f"e2e passed ({args.transport}, {args.mode})", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("--bin", required=True)
    p.add_argument("--workspace", required=True)
    p.add_argument("--extra-root", required=True)
    p.add_argument("--mode", default="legacy", choices=["legacy", "auto"])
    p.add_argument("--expect-version")
    args = p.parse_args()
    proc = None
    try:
        if args.transport == "stdio":
            target = StdioServerParameters(command=args.bin, args=["-w", args.workspace],
                                           cwd=args.workspace, env={"HOME": os.environ.get("HOME", "")})
        else:
            proc, target = start_http(args)
        asyncio.run(run(args, target))
    except AssertionError as e:
        print(f"FAILED - {e}", flush=True)
        sys.exit(1)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
