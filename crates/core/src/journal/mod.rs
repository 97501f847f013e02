//! The audit journal: `.resilient_write/journal.jsonl`, one JSON object per line, sorted keys.
//!
//! Guarantees:
//! - Rows are appended with one `write(2)` on an `O_APPEND` descriptor while holding an
//!   exclusive `flock` on the journal, so rows of concurrent processes never interleave.
//! - A row is `fdatasync`ed before the write it describes is acknowledged, and never by a sync
//!   that began before the row was written.
//! - A torn last line (a process killed mid-append) is cut off, under the lock, before the next
//!   append and at start; readers skip it (and count corrupt lines) instead of failing.
//! - Content is never copied into the journal: rows carry hashes, sizes and names only.
//! - [`Journal::tail`] reads backwards from the end in blocks, so it costs what it returns, not
//!   the size of the journal. A filtered read ([`Journal::tail_containing`],
//!   [`Journal::scan_back`]) first looks for the value it wants (a JSON-encoded string) in the
//!   raw bytes and parses only the lines that contain it: finding the rare rows of one path in
//!   a million-row journal costs a substring search over the file, not a million parses.
//!
//! ## Two append protocols
//!
//! A row is written before the rename it describes
//! (docs/decisions/0003-journal-row-before-the-rename.md), in one of two ways:
//!
//! **The commit queue** ([`Journal::commit_row`], [`group::CommitQueue`]), which
//! [`Pipeline::commit`](crate::write::pipeline::Pipeline::commit) uses for every single-file
//! write. Writers of one process queue a row and the step that applies it (the rename); one
//! of them leads a batch:
//! 1. `flock`, cut a torn tail, one `write(2)` of every queued row, unlock. A crash here
//!    leaves rows of writes not yet applied nor acknowledged: orphan rows (below).
//! 2. Each writer's `on_written` hook (the pipeline starts its temp file's and pre-image
//!    link's syncs), then one `fdatasync` of the journal. A crash leaves the same.
//! 3. The renames, in queue order, without the journal lock (the pipeline's directory lock
//!    still excludes other writers of each target). A crash between a row's sync and its
//!    rename leaves an orphan row: a durable row for a file still old. The file, not the row,
//!    is the truth; readers of history check the object store, and the crash tests count
//!    such rows. A rename that fails takes its row back *in place*: its bytes become spaces
//!    (one blank line every reader skips, the original's too), never cut, since rows of other
//!    processes may follow; the rows queued after it in the batch are written again in the
//!    next batch.
//! 4. Each writer checks its [`group::Receipt`] (its sync began after its row was written)
//!    before it acknowledges; the directory fsync follows in the pipeline.
//!
//! **The direct append** ([`Journal::append`], [`Journal::append_many`]), which
//! [`Pipeline::commit_many`](crate::write::pipeline::Pipeline::commit_many) (transactions)
//! and the agents' hooks (`native`) use: `flock`, cut a torn tail, one `write(2)` of all the
//! rows, `fdatasync`, and the lock is *kept* ([`Appended`]) while the caller renames. The
//! caller then [`Appended::commit`]s (unlock) or [`Appended::rollback`]s: the rows are cut
//! off (`ftruncate` to where they began, then `fdatasync`), which is safe because the lock
//! held since the append means nothing follows them. A crash after the sync and before the
//! renames leaves orphan rows (a transaction's recovery rolls forward from its commit record,
//! so its rows name what recovery applies); a crash during the `write(2)` leaves a torn tail,
//! cut at the next append or start.
//!
//! [`tail`] is the filtered tail that `journal_tail` and the journal-tail resource serve;
//! [`recorded`] a row read back, for the calls that answer from it.

mod append;
pub mod group;
pub mod paths;
mod read;
pub mod recorded;
mod row;
pub mod tail;

pub use append::Appended;
pub use read::{LineCheck, ReadStats};
pub use row::{JournalRow, Row, json_string_forms, new_journal_id, now_rfc3339};

use std::path::{Path, PathBuf};

/// File name of the journal inside the state directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// The journal of one state directory. Clones share one [`group::CommitQueue`], so the
/// writers of one process that go through [`Journal::commit_row`] share syncs.
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
    queue: std::sync::Arc<group::CommitQueue>,
}

impl Journal {
    pub fn new(state_dir: &Path) -> Journal {
        Journal::at(state_dir.join(JOURNAL_FILE))
    }

    /// A log in the journal's line format at `path`, read with [`Journal::read_from`] (the
    /// idempotency result log, [`crate::write::idempotency::ResultLog`]).
    pub fn at(path: PathBuf) -> Journal {
        Journal {
            path,
            queue: Default::default(),
        }
    }

    #[cfg(test)]
    pub(crate) fn with_queue(
        state_dir: &Path,
        queue: std::sync::Arc<group::CommitQueue>,
    ) -> Journal {
        Journal {
            path: state_dir.join(JOURNAL_FILE),
            queue,
        }
    }

    /// The commit queue this journal's clones share.
    pub fn queue(&self) -> &std::sync::Arc<group::CommitQueue> {
        &self.queue
    }

    /// The commit queue (module doc): append `row`, make it durable, then run `apply` (the
    /// rename) once the journal is unlocked again; a failed `apply` takes the row back by
    /// blanking it in place. Concurrent callers in this process share one `fdatasync` per
    /// batch; none is acknowledged by a sync that began before its row was written (see
    /// [`group`]).
    pub fn commit_row(
        &self,
        row: &JournalRow,
        apply: group::Apply,
    ) -> std::result::Result<group::Receipt, group::CommitError> {
        self.commit_line(row.to_line(), None, apply)
    }

    /// [`Journal::commit_row`], running `on_written` once the row is in the file and before
    /// the `fdatasync` that covers it starts (see [`group::OnWritten`]).
    pub fn commit_row_then(
        &self,
        row: &JournalRow,
        on_written: group::OnWritten,
        apply: group::Apply,
    ) -> std::result::Result<group::Receipt, group::CommitError> {
        self.commit_line(row.to_line(), Some(on_written), apply)
    }

    pub(crate) fn commit_line(
        &self,
        line: String,
        on_written: Option<group::OnWritten>,
        apply: group::Apply,
    ) -> std::result::Result<group::Receipt, group::CommitError> {
        self.queue.submit(self, line, on_written, apply)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests;
