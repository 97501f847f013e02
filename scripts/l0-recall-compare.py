#!/usr/bin/env python3
"""The l0_recall corpus scored by `resilient-write scan` of one or more builds: per category,
the share of documents that pass (a credential at verdict medium or higher, a binary hint on
the payload's line, a redacted shape within its verdict range, nothing on an image's line),
and the negatives at medium or higher and with any finding but personal data. The documents
come from `cargo run --release --example l0_recall -- --dump DIR`, so builds that predate a
category are scored on it too.

Run: scripts/l0-recall-compare.py DIR BINARY [BINARY ...]
"""

import collections
import json
import os
import subprocess
import sys

ORDER = ["safe", "low", "medium", "high"]


def personal(kind):
    return kind == "pii" or kind.startswith("pii_")


def score(binary, directory):
    out = subprocess.run(
        [binary, "scan", "--format", "json", "--fail-at", "high", "--no-ignore", directory],
        capture_output=True,
        check=False,
    )
    return {os.path.realpath(f["path"]): f for f in json.loads(out.stdout)["files"]}


def main():
    directory, binaries = sys.argv[1], sys.argv[2:]
    index = [line.rstrip("\n").split("\t") for line in open(f"{directory}/index.tsv")]
    results = [score(b, directory) for b in binaries]
    rows = collections.OrderedDict()
    for path, category, expect, line in index:
        line = int(line)
        for k, files in enumerate(results):
            full = os.path.realpath(os.path.join(directory, path))
            f = files.get(full, {"verdict": "safe", "detected_patterns": []})
            pats = f["detected_patterns"]
            on_line = [p for p in pats if p["line"] == line]
            if expect == "credential":
                ok = ORDER.index(f["verdict"]) >= 2
            elif expect == "binary":
                ok = any(p["kind"] == "binary_hint" for p in on_line)
            elif expect == "quiet":
                ok = not any(not personal(p["kind"]) for p in on_line)
            elif expect.startswith("range:"):
                lo, hi = expect[6:].split("-")
                ok = ORDER.index(lo) <= ORDER.index(f["verdict"]) <= ORDER.index(hi)
            else:
                medium = ORDER.index(f["verdict"]) >= 2
                flagged = any(not personal(p["kind"]) for p in pats)
                r = rows.setdefault(("negatives >= medium", k), [0, 0])
                r[0] += medium
                r[1] += 1
                r = rows.setdefault(("negatives with any finding", k), [0, 0])
                r[0] += flagged
                r[1] += 1
                continue
            r = rows.setdefault((category, k), [0, 0])
            r[0] += ok
            r[1] += 1
    names = list(dict.fromkeys(c for c, _ in rows))
    print(f"{'category':<30}" + "".join(f"{b[-28:]:>30}" for b in binaries))
    for name in names:
        cells = []
        for k in range(len(binaries)):
            ok, n = rows[(name, k)]
            cells.append(f"{100 * ok / n:>28.1f}% ")
        print(f"{name:<30}" + "".join(cells))


if __name__ == "__main__":
    main()
