#!/usr/bin/env bash
# The core crate knows nothing of MCP, async runtimes or the command line: fail if any of
# those crates reaches resilient-write-core's normal dependencies, even transitively. (An argument
# names another package: `scripts/check-deps.sh resilient-write` fails, as it should.)
set -euo pipefail
cd "$(dirname "$0")/.."
forbidden='^(rmcp|tokio|tokio-util|tokio-stream|axum|hyper|tower|clap|tracing-subscriber) '
pkg=${1:-resilient-write-core}
tree=$(cargo tree -p "$pkg" -e normal --prefix none --locked)
if found=$(grep -E "$forbidden" <<<"$tree" | sort -u) && [ -n "$found" ]; then
    echo "check-deps: $pkg depends on crates it must not:" >&2
    echo "$found" >&2
    for name in $(awk '{print $1}' <<<"$found"); do
        cargo tree -p "$pkg" -e normal --locked -i "$name" >&2 || true
    done
    exit 1
fi
echo "check-deps: $pkg has no MCP, async runtime or CLI crate ($(wc -l <<<"$tree") dependency lines)"
