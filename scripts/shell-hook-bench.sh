#!/usr/bin/env bash
# Time the hooks around an agent's shell command (issue 42): Claude Code's PreToolUse and
# PostToolUse on `Bash`, process start to answer, summed per command, on git repositories
# of 10,000 and 100 files (and a 100-file directory outside git).
#
#   scripts/shell-hook-bench.sh [RUNS]                      # RUNS default 40
#   RW_BIN=path/to/resilient-write scripts/shell-hook-bench.sh
#
# Builds the release binary (unless RW_BIN is given), makes the repositories (files of about
# 200 bytes in 100 directories, committed), and for each one times, RUNS times and in turn:
#   - `true`, the harness's own cost of starting a process and piping stdin;
#   - `git status --porcelain`, git's own look at the same work tree (the baseline: what
#     the snapshot is made of, measured in the same run);
#   - the two hooks around a command that changes nothing (`ls`), and around one that
#     edits one file (the command itself is run between them and not counted);
#   - the two hooks around a command that rewrites 100 files (the cost per changed file:
#     pre-images copied from git into the object store, post-images kept, rows);
#   - in a git repository, the same hooks with the watcher off (`hooks.shell_watcher: false`
#     in a second copy of the repository): each snapshot walks the whole tree.
# The timed runs start once the watcher listens and has given its first token (the first
# command of a workspace starts it and walks the tree: printed on its own).
# Prints median and p90 (ms) and the ratio of the hooks to `git status`. Not a test: the
# figures depend on the machine; docs/performance-log.md keeps them with the machine's notes.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-40}
TARGET=${CARGO_TARGET_DIR:-target}
TARGET=$(mkdir -p "$TARGET" && cd "$TARGET" && pwd)
RW=${RW_BIN:-$TARGET/release/resilient-write}
command -v python3 >/dev/null || { echo "shell-hook-bench: needs python3" >&2; exit 2; }
command -v git >/dev/null || { echo "shell-hook-bench: needs git" >&2; exit 2; }
[ -n "${RW_BIN:-}" ] || cargo build --release --bin resilient-write >&2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RW="$RW" WORK="$WORK" RUNS="$RUNS" python3 - <<'PY'
import json, os, subprocess, time
rw, work, runs = os.environ["RW"], os.path.realpath(os.environ["WORK"]), int(os.environ["RUNS"])
env = {k: v for k, v in os.environ.items() if not k.startswith(("RW_", "GIT_"))}
gitc = ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench"]

def make(name, files, git):
    root = os.path.join(work, name)
    dirs = max(1, files // 100)
    for i in range(files):
        d = os.path.join(root, "src", f"d{i % dirs}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}.py"), "w") as f:
            f.write(f"# module {i}\n" + "value = 1\n" * 18)
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write(".resilient_write/\ntarget/\n")
    if git:
        subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
        subprocess.run(gitc + ["commit", "-qm", "init"], cwd=root, check=True, env=env)
    return root

def payload(root, event, command, n):
    return json.dumps({"session_id": "bench", "transcript_path": "/dev/null", "cwd": root,
                       "permission_mode": "default", "hook_event_name": event,
                       "tool_name": "Bash", "tool_input": {"command": command},
                       "tool_use_id": f"toolu_{n}"}).encode()

def timed(argv, data=b"", cwd=None):
    t = time.perf_counter()
    p = subprocess.run(argv, input=data, capture_output=True, cwd=cwd, env=env)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        raise SystemExit(f"{argv[:3]}: exit {p.returncode}: {p.stderr.decode()[:300]}")
    return ms, p

def hooks(root, command, run, n):
    """Both hooks around `run()` (not timed); their summed time and the after-hook's stderr."""
    a, _ = timed([rw, "hook", "claude-code", "PreToolUse"], payload(root, "PreToolUse", command, n))
    run()
    b, p = timed([rw, "hook", "claude-code", "PostToolUse"], payload(root, "PostToolUse", command, n))
    if p.stdout or p.stderr:
        raise SystemExit(f"unexpected hook output: {p.stdout[:200]!r} {p.stderr[:200]!r}")
    return a + b

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]

def bench(name, files, git):
    root = make(name, files, git)
    first = os.path.join(root, "src", "d0", "f0.py")
    hundred = [os.path.join(root, "src", f"d{i % max(1, files // 100)}", f"f{i}.py")
               for i in range(min(100, files))]
    # The first command of a workspace: our index seeded from the user's, the state
    # directory made, the watcher started (git); its snapshot walks the whole tree.
    start = hooks(root, "ls", lambda: None, 0)
    if git:
        sock = os.path.join(root, ".resilient_write/hooks/shell/watch/sock")
        for _ in range(500):
            if os.path.exists(sock):
                break
            time.sleep(0.01)
        # The second gets the watcher's first token (and walks the tree once more).
        hooks(root, "ls", lambda: None, -1)
        # The baseline in the same run: the same repository, the watcher off by policy.
        off = make(name + "-no-watcher", files, git)
        os.makedirs(os.path.join(off, ".resilient_write"), exist_ok=True)
        with open(os.path.join(off, ".resilient_write/policy.yaml"), "w") as f:
            f.write("version: 1\nhooks:\n  shell_watcher: false\n")
        hooks(off, "ls", lambda: None, 0)
        off_first = os.path.join(off, "src", "d0", "f0.py")
    t = {k: [] for k in ["true", "git status", "hooks, no change", "hooks, 1 file edited",
                         "hooks, 100 files rewritten", "no watcher: hooks, no change",
                         "no watcher: hooks, 1 file edited"]}
    for i in range(runs):
        t["true"].append(timed(["true"])[0])
        if git:
            t["git status"].append(timed(["git", "status", "--porcelain"], cwd=root)[0])
        t["hooks, no change"].append(hooks(root, "ls", lambda: None, 3 * i + 1))
        def edit_one(path=first):
            with open(path, "a") as f:
                f.write(f"# run {i}\n")
        t["hooks, 1 file edited"].append(hooks(root, "sed", edit_one, 3 * i + 2))
        if git:
            t["no watcher: hooks, no change"].append(hooks(off, "ls", lambda: None, 3 * i + 1))
            t["no watcher: hooks, 1 file edited"].append(
                hooks(off, "sed", lambda: edit_one(off_first), 3 * i + 2))
        if i % 4 == 0:
            def rewrite():
                for p in hundred:
                    with open(p, "a") as f:
                        f.write(f"# formatted {i}\n")
            t["hooks, 100 files rewritten"].append(hooks(root, "fmt", rewrite, 3 * i + 3))
    rows = sum(1 for _ in open(os.path.join(root, ".resilient_write/journal.jsonl")))
    print(f"\n{name}: {files} files, {'git' if git else 'no git'}, {runs} runs, {rows} journal rows")
    print(f"{'what':<34} {'p50 ms':>8} {'p90 ms':>8} {'p50 / git status':>17}")
    base = pct(t["git status"], 0.5) if git else None
    for k, v in t.items():
        if not v:
            continue
        ratio = f"{pct(v, 0.5) / base:.2f}" if base else "-"
        print(f"{k:<34} {pct(v, 0.5):>8.1f} {pct(v, 0.9):>8.1f} {ratio:>17}")
    print(f"{'first command of the workspace':<34} {start:>8.1f}")

bench("git-10000", 10000, True)
bench("git-100", 100, True)
bench("plain-100", 100, False)
PY
