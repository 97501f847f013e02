//! resilient-write-core: durable, verified, journaled writes for LLM coding agents, with no
//! MCP, async runtime or command line. One module per layer of the paper; the MCP server and
//! the CLI (the `resilient-write` crate) are thin front ends over [`store::Store`]. See
//! `docs/ARCHITECTURE.md` for the code map and the rules of which module may import which.

// Durability rests on POSIX semantics (rename over a file, fsync of a directory, O_NOFOLLOW,
// file modes): Linux and macOS only. Elsewhere the build stops here with the reason.
#[cfg(not(unix))]
compile_error!("resilient-write supports Linux and macOS only; on Windows run it under WSL2");

pub mod agent_session;
pub mod analytics;
pub mod checkpoint;
pub mod chunks;
pub mod classify;
pub mod client_session;
pub mod edit;
pub mod envelope;
pub mod files;
pub mod handoff;
pub mod hash;
pub mod history;
pub mod journal;
pub mod layout;
pub mod maint;
pub mod native;
pub mod notices;
pub mod objects;
pub mod policy;
pub mod progress;
pub mod read;
pub mod retry;
pub mod scratch;
pub mod startup;
pub mod state;
pub mod store;
pub mod tx;
pub mod util;
pub mod validate;
pub mod workspace;
pub mod write;

#[cfg(test)]
mod testing;
