//! resilient-write: the MCP server and command line over [`resilient_write_core`].
//!
//! Everything a write means lives in the core crate; this crate holds dispatch (tool name and
//! JSON arguments to a result or an envelope), the tools as thin adapters, the MCP handler,
//! the transports and the subcommands for people. See `docs/ARCHITECTURE.md`.

// The core's modules under their old paths, for the adapters and the integration tests.
pub use resilient_write_core::{
    analytics, checkpoint, chunks, classify, edit, envelope, handoff, hash, history, journal,
    layout, maint, native, notices, objects, pipeline, policy, preflight, progress, retry, scratch,
    session, startup, state, store, tx, validate, workspace, write,
};

pub mod client;
pub mod cmd;
pub mod dispatch;
pub mod mcp;
pub mod tools;
pub mod transport;
pub mod wire;
