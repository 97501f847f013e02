//! L2: resumable chunked composition. A session lives in
//! `.resilient_write/chunks/<session>/` as `part-NNN.txt` files (NNN zero-padded to at least
//! three digits, so the Python original reads sessions of up to 999 chunks; longer indices
//! sort numerically) plus `manifest.json` {session, created_at, updated_at, total_expected,
//! chunks: {index: {sha256, bytes}}}.
//!
//! Guarantees:
//! - Every chunk, manifest and composed file is written through the write pipeline
//!   ([`crate::write::pipeline::Pipeline`]): atomic, verified, journaled (chunk rows carry `session`).
//! - Chunk files are the source of truth; the manifest is a cache. A missing or corrupt
//!   manifest is rebuilt from the files at the next write, and never blocks a read.
//! - Every operation on a session holds an inter-process `flock` on `<session>/.lock`
//!   (exclusive for writes, compose and reset; shared for status and preview), so two
//!   processes appending at once never get the same index and never lose a chunk. A lock
//!   file removed by a concurrent reset is detected and the session reopened.
//! - Compose and preview refuse a session with a gap (naming the missing indices), a count
//!   that disagrees with `total_expected`, foreign `part-*` files (a mixed session), or a chunk
//!   whose hash differs from the one recorded when it was written (edited by hand). A
//!   difference that the journal shows to be the chunk's latest journaled write, whose record
//!   was lost to a crash, is not an edit.
//! - Compose streams: each chunk is copied into the pipeline's temp file and hashed on the
//!   way, in constant memory whatever the session's size.
//!
//! The module is split by job; every public item is re-exported here, so it is
//! `crate::chunks::X` whatever file holds it:
//! - `session`: session and part file names, the session directory and its lock, the
//!   listing of chunk files, and the snapshot compose and preview check.
//! - `records`: what vouches for a chunk: the manifest, the records log, stamps, and the
//!   journal rows that vouch for a chunk whose record a crash lost.
//! - `integrity`: manifest drift (for `doctor`), its rebuild, and the fold of the records
//!   log into the manifest.
//! - `write`: `chunk_write` and `chunk_append`.
//! - `compose`: compose (streaming, through the pipeline) and preview (in memory).
//! - `admin`: reset and status.
//!
//! This file holds the on-disk names and limits, and the error helpers the others share.

mod admin;
mod compose;
mod integrity;
mod records;
mod session;
#[cfg(test)]
mod testing;
mod write;

pub use admin::{Status, reset, status};
pub use compose::{Compose, ComposeOptions, Composed, Preview, compose, compose_with, preview};
pub use integrity::{ManifestDrift, manifest_drift, rebuild_manifest};
pub use records::{ChunkRecord, Manifest, ManifestState, ModifiedChunk};
pub use session::{
    ChunkSession, Listing, Snapshot, open_session, parse_part_name, part_name, session_display,
    snapshot, validate_session,
};
pub use write::{ChunkPut, ChunkWriteOptions, ChunkWritten, put, write_chunk};

use crate::envelope::Failure;
use serde_json::{Map, Value};
use std::io;

/// Directory of the sessions inside the state directory.
pub const CHUNKS_DIR: &str = "chunks";
/// The session's manifest file.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The session's lock file (ignored by the original, which lists `part-NNN.txt` only).
pub const LOCK_FILE: &str = ".lock";
/// Chunk records not yet folded into the manifest, one JSON line per chunk write (ignored by
/// the original, like the lock file).
pub const RECORDS_FILE: &str = ".records.jsonl";

/// Highest chunk index (and `total_expected`) accepted.
pub const MAX_INDEX: u64 = 100_000;

/// How many indices an error message lists before eliding the rest.
const LISTED: usize = 20;

fn errno(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
}

fn list_of(v: &[u64]) -> String {
    let mut s: Vec<String> = v.iter().take(LISTED).map(u64::to_string).collect();
    if v.len() > LISTED {
        s.push(format!("... ({} in all)", v.len()));
    }
    s.join(", ")
}

fn session_failure(
    session: &str,
    reason: &'static str,
    message: String,
    details: Value,
) -> Failure {
    let details = match details {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    Failure::ChunkSession {
        session: session.into(),
        reason,
        message,
        details,
    }
}
