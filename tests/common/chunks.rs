//! The chunk tools' tests (`tests/chunks.rs`, `tests/chunk_integrity.rs`): a session's folder and
//! one chunk written over MCP.

use super::{Server, Workspace};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The folder of chunk session `s` in `ws`.
pub fn session_dir(ws: &Workspace, s: &str) -> PathBuf {
    ws.path(&format!(".resilient_write/chunks/{s}"))
}

/// `rw_chunk_write` of `content` at `index` of `session`, which must succeed.
pub fn write(s: &mut Server, session: &str, index: u64, content: &str) -> Value {
    s.ok(
        "rw_chunk_write",
        json!({"session": session, "index": index, "content": content}),
    )
}
