//! resilient-write: a durable, fault-tolerant write surface for LLM coding agents.
//!
//! The core library knows nothing of MCP or of the command line: one module per layer of the
//! paper, and thin front ends (`mcp`, `cli`) on top. See `docs/ARCHITECTURE.md`.

pub mod validate;
