//! L4: the content-addressed scratchpad. Raw material that must exist but does not belong in
//! the workspace (captured credentials, PII fixtures, binary blobs, the originals of redacted
//! secrets) is kept as `.resilient_write/scratch/<sha256>.bin`, with one row per deposit in
//! `scratch/index.jsonl` {sha256, label, content_type, bytes, encoding, notes, created_at}
//! (the original's format), so several labels alias one blob.
//!
//! Guarantees:
//! - Blobs are written through the write pipeline (atomic, verified, journaled); the journal
//!   records hashes and sizes, never content or labels.
//! - The index is append-only, like the original's: a deposit appends its row with one
//!   `write(2)` under the scratch directory's lock (the lock the pipeline takes there), then
//!   `fdatasync`s and reads it back, then journals it (the row's `sha256` and `bytes` are the
//!   appended row's; `index_offset` says where it starts). Earlier bytes are never rewritten,
//!   so a deposit costs the same at 10 rows as at 10,000. A row that cannot be written whole
//!   or journaled is cut off again before the failure is reported. The whole file is
//!   rewritten only by [`compact_index`] (`doctor --fix`), through the pipeline. See
//!   docs/scratch-index.md.
//! - The same bytes are stored once (deduplicated); a blob found tampered with is repaired by
//!   the next deposit of its true content.
//! - New files are created 0600 and the directory 0700 (a more open existing directory or
//!   index is tightened): the scratchpad holds secrets.
//! - Reads re-hash the blob: content that no longer matches its address is `write_corruption`.
//! - A torn or corrupt line of `index.jsonl` is skipped and reported, never fatal; a deposit
//!   after a torn last line starts on a new line, so the fragment never spoils it.
//! - What reads answer is the *live view* ([`live_index`]): per (sha256, label), the latest
//!   row, counted with the deposits it supersedes. Compaction writes exactly the live view.
//! - A front end may make the scratchpad write-only (`Config::scratch_get_disabled`).
//!
//! What the tools ask for: [`put`] (`scratch_put`: a deposit of content as the request
//! carries it, a keyed retry answered from its journal row) and [`find`] (`scratch_ref`,
//! `scratch_get`: the latest deposit matching a query, in the live view).
//!
//! By job: `deposit` the blob and its row, `index` the index protocol (append, read, live
//! view, compaction; docs/scratch-index.md), `put` and `lookup` the tools' requests; this
//! module the blob's address and the verified read.

mod deposit;
mod index;
mod lookup;
mod put;

pub use deposit::{Deposit, Meta, deposit, deposit_as, deposit_keyed, deposit_redacted};
pub use index::{
    COMPACT_MIN_SUPERSEDED, Compacted, DEPOSITS_FIELD, IndexRow, SkippedLine, compact_index,
    compaction_worthwhile, live_index, read_index, row_deposits,
};
pub use lookup::{Described, Found, describe, find};
pub use put::{Blob, Put, put};

use crate::envelope::{Failure, Result};
use crate::hash::is_sha256_hex;
use crate::state::{StateDir, open_subdir};
use crate::store::Store;
use crate::write::pipeline::read_existing;

pub const SCRATCH_DIR: &str = "scratch";
pub const INDEX_FILE: &str = "index.jsonl";

/// Display path of a blob.
pub fn blob_path(sha256: &str) -> String {
    format!(
        "{}/{SCRATCH_DIR}/{sha256}.bin",
        crate::layout::STATE_DIR_NAME
    )
}

fn open_scratch(store: &Store, create: bool) -> Result<Option<StateDir>> {
    open_subdir(store.state_dir(), &[SCRATCH_DIR], 0o700, create)
}

/// Parse a hash argument: 64 hex digits, compared in lowercase.
pub fn parse_sha256(v: &str) -> Result<String> {
    if is_sha256_hex(v) {
        Ok(v.to_ascii_lowercase())
    } else {
        Err(Failure::Encoding {
            field: "sha256".into(),
            reason: format!(
                "must be 64 hex digits (a SHA-256), got {} characters",
                v.chars().count()
            ),
        })
    }
}

/// Whether the blob for `sha256` exists.
pub fn blob_exists(store: &Store, sha256: &str) -> bool {
    open_scratch(store, false).ok().flatten().is_some_and(|d| {
        rustix::fs::statat(
            &d.dir,
            format!("{sha256}.bin").as_str(),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .is_ok()
    })
}

/// Read and verify a blob; refused when the scratchpad is write-only.
pub fn get(store: &Store, sha256: &str) -> Result<Vec<u8>> {
    if let Some(by) = &store.config().scratch_get_disabled {
        return Err(Failure::ScratchGetDisabled { by: by.clone() });
    }
    let not_found = || Failure::ScratchNotFound {
        sha256: Some(sha256.into()),
        label: None,
    };
    let dir = open_scratch(store, false)?.ok_or_else(not_found)?;
    let name = format!("{sha256}.bin");
    let found = read_existing(&dir.dir, std::ffi::OsStr::new(&name))
        .map_err(|e| Failure::io("read scratch blob", dir.path.join(&name), e))?
        .ok_or_else(not_found)?;
    if found.sha256 != sha256 {
        return Err(Failure::Corruption {
            path: blob_path(sha256),
            expected: sha256.into(),
            actual: found.sha256,
        });
    }
    Ok(found.bytes)
}
