#!/usr/bin/env bash
# What our hooks add to each native edit inside a real Claude Code session.
#
#   ROUNDS=5 scripts/agent-hook-bench.sh    (default 3 sessions of 20 Edits per arm)
#
# Builds the release binary, installs the pinned clients (tests/agents, npm ci) when missing,
# and runs the ignored test `bench_hook_cost_per_edit_in_claude_code` of tests/real_agents.rs:
# scripted sessions of one Write and 20 Edits, in turn without hooks, with a no-op command hook
# (Claude Code's own cost of running a hook) and with `init --hooks`, timed at the scripted
# model from sending each Edit to receiving its result. Prints median and p90 per arm and the
# differences (every arm in the same run).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
if [ ! -x tests/agents/node_modules/.bin/claude ]; then
    npm ci --prefix tests/agents --no-audit --no-fund --loglevel=error
fi
cargo build --release --quiet
RW_BENCH_BIN="$repo/target/release/resilient-write" RW_BENCH_ROUNDS="${ROUNDS:-3}" \
    cargo test --quiet --test real_agents -- --ignored --exact \
    bench_hook_cost_per_edit_in_claude_code --nocapture
