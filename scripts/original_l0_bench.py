"""Time the Python original's L0 (resilient-write 0.3.0, `risk_score.score_content` with its
default policy) on one input file, for `examples/l0_bench.rs`, which compares it with ours on
the same bytes in the same run.

    python3 scripts/original_l0_bench.py <wheel> <input file> <iterations>

The wheel is extracted to a temporary directory and imported from there (it declares Python
>= 3.12; the modules used here run on 3.11). One warm-up call (the original compiles its
patterns on first use, as ours does), then the best of five batches of <iterations> calls.
Prints one JSON object: ms per call, the score, the verdict and the number of findings.
"""

import json
import shutil
import sys
import tempfile
import time
import zipfile


def main() -> None:
    wheel, path, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
    target = tempfile.mkdtemp(prefix="rw-original-bench-")
    try:
        with zipfile.ZipFile(wheel) as z:
            z.extractall(target)
        sys.path.insert(0, target)
        from resilient_write.policy import default_policy
        from resilient_write.risk_score import score_content

        with open(path, encoding="utf-8") as f:
            content = f.read()
        policy = default_policy()
        report = score_content(content, policy=policy)
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(iters):
                score_content(content, policy=policy)
            best = min(best, (time.perf_counter() - t) / iters)
        print(json.dumps({
            "ms": best * 1e3,
            "score": report["score"],
            "verdict": report["verdict"],
            "findings": len(report["detected_patterns"]),
        }))
    finally:
        shutil.rmtree(target, ignore_errors=True)


if __name__ == "__main__":
    main()
