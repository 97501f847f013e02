#!/usr/bin/env bash
# Benchmark `resilient-write scan` against ripsecrets on the same tree in the same run, and
# time the pre-commit path.
#
#   scripts/scan-bench.sh [TREE] [RUNS]      # TREE default ~/.cargo/registry/src, RUNS default 3
#   RW_BIN=path/to/resilient-write scripts/scan-bench.sh   # use that binary, build nothing
#
# Builds the release binary, installs ripsecrets (cargo install, under the target directory) if
# it is not there, runs each scanner once to warm the page cache, then RUNS times alternately,
# and prints for each the best wall time, files/s, MB/s and findings. Both walk with the
# `ignore` crate's default rules (.gitignore in repositories, .ignore, hidden files skipped),
# so files and bytes are those `scan` reports having scanned. Findings are compared by
# (file, line): found by both, by one only. Then the pre-commit path: `scan --staged` and
# `scan FILE...` over 5 files in a scratch repository, median of 30 runs.
#
# Never prints a secret: ripsecrets prints whole matches, so its output is only counted, and
# the comparison keeps file and line.
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=${1:-$HOME/.cargo/registry/src}
RUNS=${2:-3}
TARGET=${CARGO_TARGET_DIR:-target}
TARGET=$(mkdir -p "$TARGET" && cd "$TARGET" && pwd)
RW=${RW_BIN:-$TARGET/release/resilient-write}
TOOLS="$TARGET/bench-tools"
RS="$TOOLS/bin/ripsecrets"
command -v python3 >/dev/null || { echo "scan-bench: needs python3" >&2; exit 2; }

[ -n "${RW_BIN:-}" ] || cargo build --release --bin resilient-write >&2
RW=$(cd "$(dirname "$RW")" && pwd)/$(basename "$RW")
if [ ! -x "$RS" ]; then
    # cargo install builds in a temporary directory of its own unless CARGO_TARGET_DIR is set
    env -u CARGO_TARGET_DIR cargo install ripsecrets --locked --root "$TOOLS" >&2
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# the scan runs from an empty directory: no policy file, no ignore file of ours applies
cd "$WORK"

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }

run_rw() { "$RW" scan --format json "$TREE" >"$WORK/rw.json" 2>/dev/null || true; }
run_rs() { "$RS" "$TREE" 2>/dev/null | cut -d: -f1,2 >"$WORK/rs.txt" || true; }

echo "tree: $TREE" >&2
echo "warming the page cache..." >&2
run_rw
run_rs
best_rw=999999
best_rs=999999
for i in $(seq "$RUNS"); do
    t0=$(now); run_rw; t1=$(now)
    t=$(elapsed "$t0" "$t1"); echo "run $i: resilient-write ${t}s" >&2
    best_rw=$(python3 -c "print(min($best_rw, $t))")
    t0=$(now); run_rs; t1=$(now)
    t=$(elapsed "$t0" "$t1"); echo "run $i: ripsecrets      ${t}s" >&2
    best_rs=$(python3 -c "print(min($best_rs, $t))")
done

python3 - "$WORK/rw.json" "$WORK/rs.txt" "$best_rw" "$best_rs" "$TREE" <<'EOF'
import json, os, sys
rw_path, rs_path, t_rw, t_rs, tree = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
doc = json.load(open(rw_path))
files, size = doc["scanned"], doc["bytes"]
by_sev = {}
ours = set()
for f in doc["files"]:
    for h in f["detected_patterns"]:
        by_sev[h["severity"]] = by_sev.get(h["severity"], 0) + 1
        if h["severity"] in ("medium", "high"):
            ours.add((os.path.normpath(f["path"]), h["line"]))
theirs = set()
rs_lines = 0
for line in open(rs_path, errors="replace"):
    rs_lines += 1
    path, _, num = line.rstrip("\n").rpartition(":")
    if num.isdigit():
        theirs.add((os.path.normpath(path), int(num)))
mb = size / 1e6
print(f"{'scanner':<16} {'seconds':>8} {'files/s':>10} {'MB/s':>8}  findings")
sev = ", ".join(f"{k} {v}" for k, v in sorted(by_sev.items()))
print(f"{'resilient-write':<16} {t_rw:>8.3f} {files / t_rw:>10.0f} {mb / t_rw:>8.1f}  {sum(by_sev.values())} ({sev})")
print(f"{'ripsecrets':<16} {t_rs:>8.3f} {files / t_rs:>10.0f} {mb / t_rs:>8.1f}  {rs_lines} matches on {len(theirs)} lines")
print(f"{files} text files, {mb:.1f} MB (as scan counts them; {doc['skipped_binary']} binary skipped)")
print(f"lines with a medium-or-high finding of ours: {len(ours)}; with a ripsecrets match: {len(theirs)}; both: {len(ours & theirs)}; ours only: {len(ours - theirs)}; ripsecrets only: {len(theirs - ours)}")
EOF

# ---- the pre-commit path ------------------------------------------------------------------
REPO="$WORK/repo"
mkdir -p "$REPO" && cd "$REPO"
git init -q && git config user.email bench@example.com && git config user.name bench
for i in 1 2 3 4 5; do
    python3 -c "
import random, sys
random.seed($i)
print('\n'.join('x_%d = %d  # line of code' % (n, random.randrange(10**9)) for n in range(300)))
" >"f$i.py"
done
git add . >/dev/null
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_ms() {
    for _ in $(seq 30); do
        t0=$(now); "$@" >/dev/null 2>&1 || true; t1=$(now)
        python3 -c "print(round((float('$t1') - float('$t0')) * 1000, 2))"
    done | median
}
echo "pre-commit path, 5 files of 300 lines, median of 30 runs:"
echo "  scan --staged        $(time_ms "$RW" scan --staged) ms"
echo "  scan f1.py ... f5.py $(time_ms "$RW" scan f1.py f2.py f3.py f4.py f5.py) ms"
