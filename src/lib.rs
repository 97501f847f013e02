//! resilient-write: a durable, fault-tolerant write surface for LLM coding agents.
//!
//! The core library knows nothing of MCP or of the command line: one module per layer of the
//! paper, and thin front ends ([`mcp`], [`cli`]) on top. See `docs/ARCHITECTURE.md`.

pub mod classify;
pub mod edit;
pub mod envelope;
pub mod hash;
pub mod journal;
pub mod pipeline;
pub mod policy;
pub mod preflight;
pub mod retry;
pub mod service;
pub mod stdio;
pub mod tools;
pub mod validate;
pub mod workspace;

pub mod cli;
pub mod mcp;
pub mod scan;
