"""Drive the Python original (resilient-write 0.3.0, its library functions) on a state
directory, for tests/original_compat.rs.

    python3 original_compat.py <wheel> <root> read|write|journal_read|journal_write
    python3 original_compat.py <wheel> <root> verdicts '[0.1, 0.35, ...]'
    python3 original_compat.py <wheel> <root> listing

`read` reads what this server wrote (chunk session "ours", the scratchpad, the journal) with
the original's functions; `write` writes state with them for this server to read.
`journal_read` reads this server's journal with the original's `journal_tail` filter and
`analytics`; `journal_write` journals writes of workspace files, chunks and a checkpoint with
the original's functions; `verdicts` loads the root's policy file with the original's loader
and gives each score its verdict; `listing` gives the name, description and input schema of
each tool the original's server lists, read from its source (the server module imports the
`mcp` package, which is not installed). Each prints one JSON object of the results. The wheel is
extracted to a temporary directory and imported
from there: it declares Python >= 3.12, so pip will not install it on older interpreters, but
the modules used here run on 3.11.
"""

import ast
import atexit
import json
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path


def load(wheel: str):
    target = tempfile.mkdtemp(prefix="rw-original-")
    atexit.register(shutil.rmtree, target, ignore_errors=True)
    with zipfile.ZipFile(wheel) as z:
        z.extractall(target)
    sys.path.insert(0, target)
    from resilient_write import chunks, journal, scratchpad

    return chunks, journal, scratchpad


def journal_read(root: Path) -> dict:
    from resilient_write import analytics, journal

    out = {}
    for path in ["src/a.txt", "out.txt", ".resilient_write/checkpoints/cp.json", str(root / "src/a.txt")]:
        out[path] = journal.tail(root, n=100, filter_path=path)
    out["analytics"] = analytics.analyze_journal(root)
    return out


def journal_write(root: Path) -> dict:
    from resilient_write import checkpoint, chunks, safe_replace, safe_write

    ws = [root]
    out = {}
    out["create"] = safe_write.safe_write(ws, path="src/b.txt", content="one\n", caller="original")
    out["overwrite"] = safe_write.safe_write(
        ws, path=str(root / "src/b.txt"), content="two\n", mode="overwrite", caller="original"
    )
    out["replace"] = safe_replace.safe_replace(
        ws, path="src/b.txt", old_string="two", new_string="three", caller="original"
    )
    for i in (1, 2, 3):
        chunks.chunk_write(root, session="orig", index=i, content=f"part {i}\n", caller="original")
    out["compose"] = chunks.chunk_compose(
        root, session="orig", output_path="orig.txt", workspaces=ws, caller="original"
    )
    out["checkpoint"] = checkpoint.checkpoint_save(root, name="cp2", data={"k": 1}, caller="original")
    from resilient_write import analytics

    out["analytics"] = analytics.analyze_journal(root)
    return out


def read(root: Path, chunks, journal, scratchpad) -> dict:
    out = {}
    out["status"] = chunks.chunk_status(root, session="ours")
    out["preview"] = chunks.chunk_preview(root, session="ours", separator="")
    out["compose"] = chunks.chunk_compose(
        root, session="ours", output_path="by-original.txt", workspaces=[root]
    )
    ref = scratchpad.scratch_ref(root, label="ours-label")
    out["scratch_ref"] = ref
    out["scratch_get"] = scratchpad.scratch_get(root, sha256=ref["entry"]["sha256"])
    rows = journal.tail(root, n=100000)
    out["journal_rows"] = len(rows)
    out["journal_paths"] = sorted({r.get("path", "") for r in rows})
    return out


def scratch_read(root: Path, chunks, journal, scratchpad) -> dict:
    out = {label: scratchpad.scratch_ref(root, label=label) for label in ("ours-label", "other")}
    out["get"] = scratchpad.scratch_get(root, sha256=out["ours-label"]["entry"]["sha256"])
    return out


def write(root: Path, chunks, journal, scratchpad) -> dict:
    out = {}
    out["theirs"] = [
        chunks.chunk_write(root, session="theirs", index=1, content="α ", total_expected=3),
        chunks.chunk_append(root, session="theirs", content="β "),
        chunks.chunk_append(root, session="theirs", content="γ"),
    ]
    # Into our session: a rewrite of chunk 2 and an append (the original rewrites the
    # manifest without our chunk records).
    out["ours_rewrite"] = chunks.chunk_write(root, session="ours", index=2, content="TWO ")
    out["ours_append"] = chunks.chunk_append(root, session="ours", content="four")
    out["scratch_put"] = scratchpad.scratch_put(
        root, content="from the original", label="theirs-label"
    )
    return out


def verdicts(root: Path, scores: list) -> dict:
    from resilient_write import policy

    pol = policy.load_policy(root)
    return {
        "thresholds": pol.thresholds,
        "verdicts": [pol.verdict(s) for s in scores],
    }


def listing(wheel: str) -> dict:
    """The original's tool definitions: its server module's `_TOOL_DEFINITIONS`, each a
    `Tool(name=..., description=..., inputSchema=_X_SCHEMA)` of literals."""
    with zipfile.ZipFile(wheel) as z:
        tree = ast.parse(z.read("resilient_write/server.py").decode())
    schemas, tools = {}, []
    for node in tree.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        if node.target.id.endswith("_SCHEMA"):
            schemas[node.target.id] = ast.literal_eval(node.value)
        elif node.target.id == "_TOOL_DEFINITIONS":
            for call in node.value.elts:
                kw = {k.arg: k.value for k in call.keywords}
                tools.append({
                    "name": ast.literal_eval(kw["name"]),
                    "description": ast.literal_eval(kw["description"]),
                    "inputSchema": schemas[kw["inputSchema"].id],
                })
    return {"tools": tools}


def main() -> None:
    wheel, root, phase = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    os.chdir(root)
    if phase == "listing":
        print(json.dumps(listing(wheel)))
        return
    if phase == "verdicts":
        load(wheel)
        print(json.dumps(verdicts(root, json.loads(sys.argv[4]))))
        return
    chunks, journal, scratchpad = load(wheel)
    if phase in ("journal_read", "journal_write"):
        run = {"journal_read": journal_read, "journal_write": journal_write}[phase]
        print(json.dumps(run(root)))
        return
    run = {"read": read, "write": write, "scratch_read": scratch_read}[phase]
    print(json.dumps(run(root, chunks, journal, scratchpad)))


if __name__ == "__main__":
    main()
