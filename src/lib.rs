//! resilient-write: the MCP server and command line over [`resilient_write_core`].
//!
//! Everything a write means lives in the core crate; this crate holds dispatch (tool name and
//! JSON arguments to a result or an envelope), the tools as thin adapters, the MCP handler,
//! the transports and the subcommands for people. See `docs/ARCHITECTURE.md`.

// Durability rests on POSIX semantics (rename over a file, fsync of a directory, O_NOFOLLOW,
// file modes): Linux and macOS only. Elsewhere the build stops here with the reason.
#[cfg(not(unix))]
compile_error!("resilient-write supports Linux and macOS only; on Windows run it under WSL2");

pub mod client;
pub mod cmd;
pub mod dispatch;
pub mod mcp;
pub mod reference;
pub mod tools;
pub mod transport;
pub mod wire;
