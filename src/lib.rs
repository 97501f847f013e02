//! resilient-write: a durable, fault-tolerant write surface for LLM coding agents.
//!
//! The core library knows nothing of MCP or of the command line: one module per layer of the
//! paper, and thin front ends ([`mcp`], [`cli`]) on top. See `docs/ARCHITECTURE.md`.

pub mod analytics;
pub mod checkpoint;
pub mod chunks;
pub mod classify;
pub mod edit;
pub mod envelope;
pub mod handoff;
pub mod hash;
pub mod history;
pub mod http;
pub mod journal;
pub mod notices;
pub mod objects;
pub mod pipeline;
pub mod policy;
pub mod preflight;
pub mod progress;
pub mod retry;
pub mod scratch;
pub mod service;
pub mod session;
pub mod shutdown;
pub mod state;
pub mod stdio;
pub mod tools;
pub mod tx;
pub mod validate;
pub mod workspace;

pub mod cli;
pub mod client;
pub mod demo;
pub mod doctor;
pub mod init;
pub mod mcp;
pub mod scan;
