#!/usr/bin/env bash
# A fully static Linux binary (musl), then proof that it is one and that it works: no
# dynamic section (`file`, `ldd`), `--version`, and an MCP initialize over stdio.
#
#   scripts/build-static.sh            # build (release) and check
#   scripts/build-static.sh --check    # check an existing build only
#
# Needs the Rust target (`rustup target add x86_64-unknown-linux-musl`) and a musl C compiler
# for the crates that build C (`musl-gcc`, Debian/Ubuntu package musl-tools). The binary is
# at ${CARGO_TARGET_DIR:-target}/<arch>-unknown-linux-musl/release/resilient-write.
set -euo pipefail
cd "$(dirname "$0")/.."
arch="$(uname -m)"
target="${arch}-unknown-linux-musl"
bin="${CARGO_TARGET_DIR:-target}/${target}/release/resilient-write"

if [ "${1:-}" != "--check" ]; then
    if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$target"; then
        rustup target add "$target"
    fi
    # cc-rs looks for <arch>-linux-musl-gcc; Debian's musl-tools installs it as musl-gcc.
    cc_var="CC_${target//-/_}"
    if [ -z "${!cc_var:-}" ] && ! command -v "${arch}-linux-musl-gcc" >/dev/null; then
        if command -v musl-gcc >/dev/null; then
            export "$cc_var=musl-gcc"
        else
            echo "build-static: no musl C compiler: install musl-tools (musl-gcc)" >&2
            exit 1
        fi
    fi
    cargo build --release --locked --target "$target" --bin resilient-write
fi

fail() {
    echo "build-static: $*" >&2
    exit 1
}
[ -x "$bin" ] || fail "no binary at $bin"
# Absolute: the initialize below runs from a throwaway directory.
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
desc="$(file -b "$bin")"
echo "file: $desc"
case "$desc" in
*"statically linked"* | *"static-pie linked"*) ;;
*) fail "not static: $desc" ;;
esac
# ldd exits non-zero on a static binary; what it prints is what counts.
ldd_out="$(ldd "$bin" 2>&1 || true)"
echo "ldd: $ldd_out"
case "$ldd_out" in
*"not a dynamic executable"* | *"statically linked"*) ;;
*) fail "ldd found dynamic dependencies: $ldd_out" ;;
esac

version="$("$bin" --version)"
echo "version: $version"
[[ "$version" == resilient-write\ * ]] || fail "unexpected --version: $version"

# One initialize over stdio, in a throwaway workspace; the answer names the server.
ws="$(mktemp -d)"
trap 'rm -rf "$ws"' EXIT
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"build-static","version":"0"}}}'
answer="$(printf '%s\n' "$init" | (cd "$ws" && timeout 30 "$bin" serve -w "$ws" --state-dir "$ws") | head -n 1)"
case "$answer" in
*'"id":1'*'"serverInfo"'*'"resilient-write"'*) echo "initialize: ok" ;;
*) fail "no initialize answer: $answer" ;;
esac
echo "build-static: $bin is static and answers over stdio"
