#!/usr/bin/env python3
"""Compare what two builds of resilient-write show a client, byte for byte.

Usage: scripts/compare-surface.py OLD_BINARY NEW_BINARY

Runs the same scripted MCP session over stdio against each binary, each in a fresh workspace:
the initialize answer, tools/list (names, schemas, annotations), resources, prompts, and about
sixty tool calls that succeed and fail in every tool family (results and error envelopes). Values
that differ between any two runs (journal ids, timestamps, transaction ids, the workspace path)
are replaced by placeholders, and values that differ between two runs of the new binary (the
hash of a handoff that holds its own timestamp) are left out; everything else must be
identical. Prints the first differences
and exits 1 when there are any, 0 when the two surfaces are the same.

A refactor that promises clients no change runs this against the binary of the commit before
it (build it in a worktree with its own target directory).
"""

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Secret-shaped strings are built here, never typed whole into the repository.
FAKE_TOKEN = "ghp" + "_" + "".join("aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"[i % 34] for i in range(36))


def calls():
    """The scripted session: (method, params) pairs."""
    yield "tools/list", {}
    yield "resources/list", {}
    yield "resources/templates/list", {}
    yield "prompts/list", {}
    c = lambda name, args: ("tools/call", {"name": name, "arguments": args})  # noqa: E731
    yield c("rw_safe_write", {"path": "a.txt", "content": "one\n"})
    yield c("rw_safe_write", {"path": "a.txt", "content": "two\n"})
    yield c("rw_safe_write", {"path": "a.txt", "content": "two\n", "mode": "create",
                              "expected_prev_sha256": "0" * 64})
    yield c("rw_safe_write", {"path": "a.txt", "content": "two\n", "mode": "overwrite",
                              "expected_prev_sha256": "0" * 64})
    yield c("rw_safe_write", {"path": "a.txt", "content": "two\n", "mode": "overwrite"})
    yield c("rw_safe_write", {"path": "a.txt", "content": "three\n", "mode": "append",
                              "idempotency_key": "k1"})
    yield c("rw_safe_write", {"path": "a.txt", "content": "three\n", "mode": "append",
                              "idempotency_key": "k1"})
    yield c("rw_safe_write", {"path": "a.txt", "content": "other\n", "mode": "append",
                              "idempotency_key": "k1"})
    yield c("rw_safe_write", {"path": "../escape.txt", "content": "x"})
    yield c("rw_safe_write", {"path": "b.bin", "content": "AAEC", "encoding": "base64"})
    yield c("rw_safe_write", {"path": "c.txt", "content": "x", "unknown": 1})
    yield c("rw_safe_write", {"path": "d.txt", "content": "token = " + FAKE_TOKEN + "\n",
                              "classify": True, "classify_reject_at": "medium"})
    yield c("rw_safe_replace", {"path": "a.txt", "old_string": "two", "new_string": "TWO"})
    yield c("rw_safe_replace", {"path": "a.txt", "old_string": "missing", "new_string": "x"})
    yield c("rw_safe_replace", {"path": "a.txt", "old_string": "TWO", "new_string": "2",
                                "dry_run": True})
    yield c("rw_safe_replace", {"path": "nope.txt", "old_string": "a", "new_string": "b"})
    yield c("rw_safe_replace", {"path": "a.txt", "edits": [
        {"old_string": "TWO", "new_string": "2"}, {"old_string": "three", "new_string": "3"}]})
    yield c("rw_risk_score", {"content": "key: " + FAKE_TOKEN})
    yield c("rw_risk_score", {"content": "fn main() {}\n", "target_path": "src/main.rs"})
    yield c("rw_redact", {"content": "key: " + FAKE_TOKEN + "\n"})
    yield c("rw_validate", {"content": "{\"a\": 1,}", "format_hint": "json"})
    yield c("rw_validate", {"content": "a: 1\na: 2\n", "target_path": "x.yaml"})
    yield c("rw_chunk_write", {"session": "s1", "index": 1, "content": "part one\n",
                               "total_expected": 3})
    yield c("rw_chunk_append", {"session": "s1", "content": "part two\n"})
    yield c("rw_chunk_status", {"session": "s1"})
    yield c("rw_chunk_preview", {"session": "s1"})
    yield c("rw_chunk_compose", {"session": "s1", "output_path": "doc.md"})
    yield c("rw_chunk_append", {"session": "s1", "content": "part three\n"})
    yield c("rw_chunk_compose", {"session": "s1", "output_path": "doc.md", "mode": "create"})
    yield c("rw_chunk_compose", {"session": "s1", "output_path": "doc.md", "mode": "append"})
    yield c("rw_chunk_compose", {"session": "s1", "output_path": "doc2.md", "cleanup": True})
    yield c("rw_chunk_status", {"session": "s1"})
    yield c("rw_chunk_reset", {"session": "s1"})
    yield c("rw_chunk_status", {"session": "../x"})
    yield c("rw_scratch_put", {"content": "scratch one", "label": "L1"})
    yield c("rw_scratch_put", {"content": "scratch one", "label": "L1"})
    yield c("rw_scratch_ref", {"label": "L1"})
    yield c("rw_scratch_get", {"sha256": "4c3a8a3b6b4e5f6a" * 4})
    yield c("rw_handoff_write", {"envelope": {
        "task_id": "t1", "status": "partial", "agent": "a", "summary": "s",
        "next_steps": ["n"], "last_good_state": []}, "body": "Body.\n"})
    yield c("rw_handoff_read", {"path": "HANDOFF.md"})
    yield c("rw_handoff_read", {"path": "NOPE.md"})
    yield c("rw_checkpoint", {"name": "cp1", "data": {"a": 1}})
    yield c("rw_checkpoint", {"name": "cp2", "data": "text", "format": "markdown"})
    yield c("rw_checkpoint_read", {"name": "cp1"})
    yield c("rw_checkpoint_read", {"name": "nope"})
    yield c("rw_checkpoint_list", {})
    yield c("rw_checkpoint_cleanup", {})
    yield c("rw_tx_begin", {})
    yield "TX", None
    yield c("rw_journal_tail", {"n": 50})
    yield c("rw_journal_tail", {"n": 5, "filter_path": "a.txt"})
    yield c("rw_analytics", {})
    yield c("rw_history", {"path": "a.txt"})
    yield c("rw_restore", {"path": "a.txt", "to_sha256": "0" * 64})
    yield c("rw_no_such_tool", {})
    yield "resources/read", {"uri": "resilient-write://handoff"}
    yield "prompts/get", {"name": "resume", "arguments": {}}


def tx_calls(tx_id):
    c = lambda name, args: ("tools/call", {"name": name, "arguments": args})  # noqa: E731
    yield c("rw_tx_write", {"tx_id": tx_id, "path": "t1.txt", "content": "t1\n"})
    yield c("rw_tx_write", {"tx_id": tx_id, "path": "a.txt", "content": "x", "mode": "create",
                            "expected_prev_sha256": "0" * 64})
    yield c("rw_tx_replace", {"tx_id": tx_id, "path": "a.txt", "old_string": "2",
                              "new_string": "two"})
    yield c("rw_tx_status", {"tx_id": tx_id})
    yield c("rw_tx_commit", {"tx_id": tx_id})
    yield c("rw_tx_commit", {"tx_id": tx_id})
    yield c("rw_tx_rollback", {"tx_id": "tx" + "0" * 32})


VOLATILE = {"ts", "wrote_at", "created_at", "updated_at", "archived_at", "expires_at",
            "timestamp", "first", "last", "since", "until", "started_at", "committed_at",
            "duration_ms", "elapsed_ms", "write_velocity", "timeline", "period"}


def normalise_str(text, root):
    text = text.replace(root, "<ROOT>")
    text = re.sub(r"tx[0-9a-f]{32}", "<TX>", text)
    text = re.sub(r"\b01[0-9a-f]{30}\b", "<JID>", text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<UUID>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", "<TIME>", text)
    text = re.sub(r"\d{8}T\d{6}Z?", "<TIME>", text)
    return text


def normalise(value, root):
    """The answer with run-dependent values replaced; JSON inside text content is parsed."""
    if isinstance(value, dict):
        return {k: "<V>" if k in VOLATILE else normalise(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, root) for v in value]
    if isinstance(value, str):
        if value[:1] in "{[":
            try:
                return {"<json>": normalise(json.loads(value), root)}
            except ValueError:
                pass
        return normalise_str(value, root)
    return value


def session(binary):
    root = os.path.realpath(tempfile.mkdtemp(prefix="rw-surface-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RW_")}
    p = subprocess.Popen([binary, "-w", root, "--state-dir", root], cwd=root, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    ident = [0]

    def ask(method, params):
        ident[0] += 1
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident[0], "method": method,
                                  "params": params}) + "\n")
        p.stdin.flush()
        while True:
            msg = json.loads(p.stdout.readline())
            if msg.get("id") == ident[0]:
                return msg

    out = []
    init = ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "surface", "version": "1"}})
    out.append(("initialize", init))
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    tx_id = None
    for method, params in calls():
        if method == "TX":
            for m, prm in tx_calls(tx_id or "tx" + "f" * 32):
                out.append((m + " " + prm["name"], ask(m, prm)))
            continue
        answer = ask(method, params)
        if params and params.get("name") == "rw_tx_begin":
            tx_id = (answer.get("result", {}).get("structuredContent") or {}).get("tx_id")
        out.append((method + " " + params.get("name", params.get("uri", "")), answer))
    p.stdin.close()
    p.wait(timeout=10)
    return [(label, json.dumps(normalise(a, root), sort_keys=True, indent=1)) for label, a in out]


def flatten(value, path, out):
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{path}.{k}", out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            flatten(v, f"{path}[{i}]", out)
    else:
        out[path] = value
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    old_bin, new_bin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    # Two runs of the new binary tell which values vary from run to run (hashes of files that
    # hold a timestamp, say); those are left out of the comparison.
    old, new, again = session(old_bin), session(new_bin), session(new_bin)
    if len(old) != len(new):
        print(f"{len(old)} answers against {len(new)}")
        return 1
    diffs = masked = 0
    for (label, a), (_, b), (_, c) in zip(old, new, again):
        fa, fb, fc = (flatten(json.loads(x), "", {}) for x in (a, b, c))
        varying = {k for k in fb.keys() | fc.keys() if fb.get(k) != fc.get(k)}
        masked += len(varying)
        changed = [k for k in fa.keys() | fb.keys() if k not in varying and fa.get(k) != fb.get(k)]
        if changed:
            diffs += 1
            if diffs <= 5:
                print(f"--- differs: {label}")
                for k in sorted(changed)[:3]:
                    print(f"  {k}\n    old: {fa.get(k)!r}\n    new: {fb.get(k)!r}")
    print(f"{len(old)} answers compared ({masked} values that vary between runs left out), "
          f"{diffs} differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
