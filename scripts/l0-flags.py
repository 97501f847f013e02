#!/usr/bin/env python3
"""L0 flags on real files, through `resilient-write scan --format json`: for each directory, the
files scanned, the files at verdict medium or higher, and the files with any finding but
personal data (families `pii`, `pii_*`), with the rules behind each count. Compares two builds
when given two binaries (the same walk, the same files).

Run: scripts/l0-flags.py BINARY [BASELINE_BINARY] -- DIR [DIR ...] [--show N]
"""

import collections
import json
import subprocess
import sys


def personal(kind):
    return kind == "pii" or kind.startswith("pii_")


def measure(binary, directory):
    out = subprocess.run(
        [binary, "scan", "--format", "json", "--fail-at", "high", directory],
        capture_output=True,
        check=False,
    )
    report = json.loads(out.stdout)
    medium, flagged = [], []
    medium_rules, flag_rules = collections.Counter(), collections.Counter()
    for f in report["files"]:
        pats = f["detected_patterns"]
        if f["verdict"] in ("medium", "high"):
            medium.append(f["rel_path"])
            medium_rules.update(p["pattern"] for p in pats)
        flags = [p for p in pats if not personal(p["kind"])]
        if flags:
            flagged.append((f["rel_path"], flags))
            flag_rules.update(p["pattern"] for p in flags)
    return report["scanned"], medium, flagged, medium_rules, flag_rules


def main():
    args = sys.argv[1:]
    show = 0
    if "--show" in args:
        i = args.index("--show")
        show = int(args[i + 1])
        del args[i : i + 2]
    sep = args.index("--")
    binaries, dirs = args[:sep], args[sep + 1 :]
    for d in dirs:
        for b in binaries:
            n, medium, flagged, mr, fr = measure(b, d)
            print(
                f"{d} [{b}]: {n} files; >= medium {len(medium)} ({100 * len(medium) / max(n, 1):.3f}%);"
                f" any finding but personal data {len(flagged)} ({100 * len(flagged) / max(n, 1):.3f}%)"
            )
            print(f"    at >= medium: {dict(mr.most_common(12))}")
            print(f"    flags: {dict(fr.most_common(15))}")
            for path, flags in flagged[:show]:
                print(f"      {path}: {[(p['pattern'], p['line'], p['match']) for p in flags][:4]}")


if __name__ == "__main__":
    main()
