//! The direct append (module doc of [`super`]: "Two append protocols"): rows written with one
//! `write(2)` under the journal's `flock`, made durable, the lock kept through the caller's
//! renames ([`Appended`]); the torn-tail repair before an append and at start.

use super::{Journal, JournalRow, group};
use rustix::fs::FlockOperation;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// An appended, durable row whose journal lock is still held: the pipeline renames while
/// holding it, then [`Appended::commit`]s, or [`Appended::rollback`]s if the rename failed.
pub struct Appended {
    file: File,
    offset: u64,
}

impl Appended {
    /// Release the lock, keeping the row.
    pub fn commit(self) {
        let _ = rustix::fs::flock(&self.file, FlockOperation::Unlock);
    }

    /// Remove the row (the write it describes did not happen) and release the lock.
    pub fn rollback(self) -> io::Result<()> {
        self.file.set_len(self.offset)?;
        self.file.sync_data()?;
        let _ = rustix::fs::flock(&self.file, FlockOperation::Unlock);
        Ok(())
    }
}

impl Journal {
    pub(super) fn open_for_append(&self) -> io::Result<File> {
        // Never blocks and never follows a planted symlink or pipe (util::statefile).
        let open = || {
            crate::util::statefile::open_with(
                &self.path,
                rustix::fs::OFlags::RDWR | rustix::fs::OFlags::APPEND | rustix::fs::OFlags::CREATE,
                0o644,
            )
        };
        match open() {
            Ok(f) => Ok(f),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let dir = self.path.parent().unwrap_or(Path::new("."));
                fs::create_dir_all(dir)?;
                let f = open()?;
                // Make the new directory entry durable.
                File::open(dir)?.sync_all()?;
                Ok(f)
            }
            Err(e) => Err(e),
        }
    }

    /// Cut a torn last line (no trailing newline) off an exclusively locked journal.
    pub(super) fn cut_torn_tail(file: &File) -> io::Result<u64> {
        let len = file.metadata()?.len();
        if len == 0 {
            return Ok(0);
        }
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, len - 1)?;
        if last[0] == b'\n' {
            return Ok(len);
        }
        // Search backwards for the previous newline.
        let mut end = len;
        let mut buf = vec![0u8; 64 * 1024];
        let keep = loop {
            let start = end.saturating_sub(buf.len() as u64);
            let chunk = &mut buf[..(end - start) as usize];
            file.read_exact_at(chunk, start)?;
            if let Some(pos) = chunk.iter().rposition(|&b| b == b'\n') {
                break start + pos as u64 + 1;
            }
            if start == 0 {
                break 0;
            }
            end = start;
        };
        file.set_len(keep)?;
        file.sync_data()?;
        tracing::warn!(
            cut_bytes = len - keep,
            "journal: cut a torn last line left by an interrupted append"
        );
        Ok(keep)
    }

    /// Append `row` durably and keep the journal locked (see [`Appended`]).
    pub fn append(&self, row: &JournalRow) -> io::Result<Appended> {
        self.append_many(std::slice::from_ref(row))
    }

    /// Append `rows` durably with one `write(2)` (a transaction's rows land together or, after
    /// a crash and the torn-tail repair, not at all) and keep the journal locked.
    pub fn append_many(&self, rows: &[JournalRow]) -> io::Result<Appended> {
        let line: String = rows.iter().map(JournalRow::to_line).collect();
        let mut file = self.open_for_append()?;
        rustix::fs::flock(&file, FlockOperation::LockExclusive)?;
        let offset = Self::cut_torn_tail(&file)?;
        let result = (|| {
            group::write_whole(&mut file, line.as_bytes())?;
            file.sync_data()
        })();
        match result {
            Ok(()) => Ok(Appended { file, offset }),
            Err(e) => {
                // Never leave a partial row behind: the write it describes will not happen.
                let _ = file.set_len(offset);
                let _ = rustix::fs::flock(&file, FlockOperation::Unlock);
                Err(e)
            }
        }
    }

    /// Repair at start: cut a torn last line. A missing journal is fine.
    pub fn repair(&self) -> io::Result<()> {
        let file = match crate::util::statefile::open_read_write(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        rustix::fs::flock(&file, FlockOperation::LockExclusive)?;
        Self::cut_torn_tail(&file)?;
        let _ = rustix::fs::flock(&file, FlockOperation::Unlock);
        Ok(())
    }
}
