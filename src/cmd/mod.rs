//! Subcommands for people, each over the same dispatch as the MCP tools.

pub mod history;
pub mod validate;
