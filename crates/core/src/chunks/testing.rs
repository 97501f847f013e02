//! Helpers shared by the unit tests of the chunk modules: a [`Store`] on a temporary
//! workspace, chunk writes that must succeed, the session directory on disk, and the reason
//! and details of a refused operation.

use super::{CHUNKS_DIR, ChunkWriteOptions, ChunkWritten, write_chunk};
use crate::envelope::Failure;
use crate::store::Store;
use crate::write::pipeline::Caller;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// A store whose only workspace is a fresh temporary directory (kept alive by the guard).
pub(super) fn service() -> (tempfile::TempDir, Arc<Store>) {
    crate::testing::temp_store()
}

pub(super) fn who() -> Caller {
    Caller {
        caller: "test".into(),
        tool: "chunk_write".into(),
    }
}

/// Write chunk `index` (`None`: append) of `session`, which must succeed.
pub(super) fn put(
    store: &Store,
    session: &str,
    index: Option<u64>,
    content: &[u8],
) -> ChunkWritten {
    put_total(store, session, index, content, None)
}

/// [`put`] with a `total_expected`.
pub(super) fn put_total(
    store: &Store,
    session: &str,
    index: Option<u64>,
    content: &[u8],
    total_expected: Option<u64>,
) -> ChunkWritten {
    write_chunk(
        store,
        &who(),
        session,
        index,
        content.to_vec(),
        total_expected,
        ChunkWriteOptions::default(),
    )
    .unwrap()
    .into_inner()
}

/// The session's directory on disk.
pub(super) fn session_dir(store: &Store, session: &str) -> PathBuf {
    store.state_dir().join(CHUNKS_DIR).join(session)
}

/// Replace a file the way an editor saving atomically does: a new file renamed over it (new
/// inode, so a new stamp).
pub(super) fn replace_by_hand(path: &std::path::Path, content: &[u8]) {
    let tmp = path.with_extension("by-hand");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The reason and details of a refusal about a session's state.
pub(super) fn refusal(e: Failure) -> (&'static str, Map<String, Value>) {
    match e {
        Failure::ChunkSession {
            reason, details, ..
        } => (reason, details),
        other => panic!("expected a chunk session refusal, got {other:?}"),
    }
}

/// The reason of a refused argument.
pub(super) fn argument_refusal(e: Failure) -> &'static str {
    match e {
        Failure::ChunkArgument { reason, .. } => reason,
        other => panic!("expected a chunk argument refusal, got {other:?}"),
    }
}
