//! L1: the write pipeline. Every byte that lands in a workspace goes through [`Pipeline::commit`].
//!
//! The protocol, for one target already resolved beneath a root ([`crate::workspace::Target`]):
//!
//! 1. Lock: `flock(LOCK_EX)` on the target's parent directory handle. The lock excludes other
//!    threads and other processes writing into that directory until the rename is done. (It
//!    is per directory, not per file: a rename replaces the file's inode, so a lock on the file
//!    itself would not exclude a writer that opened the new inode.)
//! 2. Precondition: the current content is read (`O_NOFOLLOW` relative to the directory handle)
//!    and handed to the caller's decision function, which checks mode and
//!    `expected_prev_sha256` and computes the new content, all under the lock.
//!    A target that exists must be writable by this process (`faccessat(W_OK)`): the rename
//!    would replace a read-only file, so one is refused with EACCES instead.
//! 3. Temp file: created in the same directory with `O_CREAT|O_EXCL|O_NOFOLLOW`, given the
//!    existing file's permission bits and owner, written, `fsync`ed. (A streamed body starts
//!    the writeback of what it has written every 16 MiB, so the fsync is left the last step;
//!    the fsync is still what makes the file durable.) A body held in memory has its fsync
//!    started on a worker thread (`util::workers`) once its journal row is in the journal
//!    file (step 5), right before the row's `fdatasync`: both syncs start together, so a
//!    journaling filesystem makes the file and the row durable in one commit, and a write
//!    costs the slower of the two syncs, not their sum. The rename (step 6) waits for it,
//!    and a failed fsync takes the row back and renames nothing.
//! 4. Read-back: the temp file is re-read and compared with what was written (byte by byte
//!    with a body held in memory, by SHA-256 with a streamed one); a mismatch deletes it and
//!    fails with `write_corruption`. The target is untouched. (The
//!    read-back reads the page cache before or after the fsync alike; both finish before
//!    step 6.)
//!    History: when the pipeline holds an [`ObjectStore`], the content about to be replaced
//!    is kept there (deduplicated by SHA-256; a hard link of the old inode where it can, see
//!    `keep.rs`), just before step 3. A new link is made durable (the inode's `fdatasync`,
//!    then its directory's fsync) on a worker thread, started with the temp file's fsync
//!    once the row is written; the rename waits for it. So every acknowledged write whose
//!    row names a pre-image keeps it, durably, and a write that fails takes its new object
//!    back (a link that cannot be made durable takes its row back, and the write goes again
//!    without it). Keeping it never fails the write: a pre-image that cannot be kept is named in the
//!    row and the result (`history_not_kept`).
//! 5. Journal: the row is appended (one `write(2)` under the journal's `flock`, released
//!    right after) and `fdatasync`ed. Writers of one process go through the journal's commit
//!    queue (`journal/group.rs`): one leader appends every queued row with one `write(2)`,
//!    starts one `fdatasync` after that write, and runs the queued renames (step 6) in order;
//!    writers of other processes sync at the same time, and no write is acknowledged by a sync
//!    that began before its row was written.
//! 6. Rename: `renameat2(RENAME_NOREPLACE)` for create (a file that appeared meanwhile is never
//!    clobbered; `link`+`unlink` where the filesystem lacks the flag), `renameat` otherwise. If
//!    the rename fails, the row is taken back (blanked in place) and the temp file removed:
//!    the server never reports failure for a write it applied, nor keeps a row for one it did
//!    not.
//! 7. Durability: the directory lock is released, then the parent directory (and every
//!    directory created on the way) is `fsync`ed before the write is acknowledged. Writers of
//!    one directory share that fsync: a writer waits for one that began after its rename.
//!
//! [`Pipeline::commit_many`] runs the same steps for several targets at once (transactions):
//! all directories locked in a stable order, all preconditions checked, all temp files staged,
//! then the caller's commit point, one journal append, the renames, one fsync per directory.
//!
//! A crash at any point leaves the target wholly old or wholly new. A crash after step 3 leaves
//! a temp file named `.<name>.rw-tmp-<pid>-<n>`, which [`sweep_temp_files`] removes at the
//! next start once process `<pid>` is gone. A crash between steps 5 and 6 (the journal's
//! fdatasync and the rename) can leave a row for a rename that never happened ("orphan row"),
//! as can one while the temp file's fsync still runs (its row is durable, the file not yet):
//! the file on disk, not the row, is the truth; the crash test counts such rows, and
//! docs/decisions/0003-journal-row-before-the-rename.md explains why this order is the one that
//! never loses an acknowledged row.

use crate::envelope::{Failure, Result};
use crate::hash::sha256_hex;
use crate::journal::group::{Apply, CommitError, OnWritten};
use crate::journal::recorded::RecordedRow;
use crate::journal::{Journal, JournalRow, new_journal_id, now_rfc3339};
use crate::objects::ObjectStore;
use crate::util::dirlock::DirLock;
use crate::util::sys::errno_io;
use crate::workspace::Target;
use dirsync::DirSyncs;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;

mod dirsync;
mod keep;
mod many;
mod readback;
pub mod retention;
pub mod room;
mod sweep;
mod temp;
#[cfg(test)]
mod tests;

pub(crate) use crate::util::fault::fault;
pub use crate::util::fault::install_faults;
pub use crate::util::sys::{fsync_dir, process_alive};
pub use keep::AutoRetention;
use keep::Kept;
pub use many::{StagedFile, Step};
use readback::PendingSync;
pub use retention::NOT_KEPT_FIELD;
pub use room::{FreeSpace, PRUNED_FIELD, Space, Statvfs};
use room::{Holds, Room, pruned_field, pruned_warning};
pub use sweep::{stale_temp_files, sweep_dir_temp_files, sweep_temp_files, temp_owner_pid};
pub use temp::TEMP_MARKER;
pub(crate) use temp::start_writeback;
use temp::{Staged, stage};

/// The file currently at the target, as read under the lock.
#[derive(Debug)]
pub struct Existing {
    pub bytes: Vec<u8>,
    pub sha256: String,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Hard-link count: more than one means a rename will detach this path from its twins.
    pub nlink: u64,
    /// Size in bytes (also when `bytes` was not kept).
    pub size: u64,
    /// `(st_dev, st_ino)` of the file read from disk (`None` for content staged in memory):
    /// what a pre-image kept by hard link must still be.
    pub inode: Option<(u64, u64)>,
}

/// A producer that streams the new content into the temp file.
pub type Producer = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

/// A producer that hashes what it streams itself (on a thread of its own, say) and returns
/// the SHA-256 (hex) of exactly the bytes it gave the writer. The read-back is compared with
/// that digest, so a wrong one fails the write (`write_corruption`); it never passes one.
pub type HashedProducer = Box<dyn FnOnce(&mut dyn Write) -> io::Result<String> + Send>;

/// The new content: whole bytes, or a producer that streams into the temp file (compose).
pub enum Body {
    Bytes(Vec<u8>),
    Stream(Producer),
    HashedStream(HashedProducer),
}

/// What to write, decided under the lock by the caller.
pub struct Plan {
    pub body: Body,
    /// The journal's `mode` (create, overwrite, append, replace, compose, ...).
    pub mode: String,
    /// Refuse to replace an existing file at rename time (create mode).
    pub create_only: bool,
    /// Extra journal fields (session, tx_id, idempotency_key, ...).
    pub extra: BTreeMap<String, Value>,
    /// Permission bits for a file that does not exist yet (before the umask); `None` means
    /// 0666, and an existing file keeps its own bits. With `Some`, they are also the most an
    /// existing file keeps (its bits are masked with them): the private state files
    /// (scratchpad, checkpoints, handoffs) ask for 0600, so one the original left 0644 is
    /// tightened when rewritten.
    pub new_file_mode: Option<u32>,
}

/// The journal's mode for writing over `existing`: `create` when there is nothing there,
/// else `replacing` (overwrite, append, ...).
pub fn mode_over(existing: Option<&Existing>, replacing: &str) -> String {
    if existing.is_some() {
        replacing
    } else {
        "create"
    }
    .to_string()
}

/// The caller's verdict on the current content.
pub enum Decision<T> {
    /// Write the plan, then return `T` with the outcome.
    Write(Plan, T),
    /// Write nothing (a dry run, an idempotent replay), return `T`.
    Skip(T),
}

/// Who is writing, for the journal.
#[derive(Debug, Clone)]
pub struct Caller {
    pub caller: String,
    pub tool: String,
}

/// A completed write.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub abs_path: PathBuf,
    pub sha256: String,
    pub bytes: u64,
    pub prev_sha256: Option<String>,
    pub journal_id: String,
    pub wrote_at: String,
    pub mode: String,
    /// Hard links of the previous file that no longer share content with this path.
    pub detached_hardlinks: u64,
    /// Non-fatal problems after the write was applied (a directory fsync that failed, an
    /// owner that could not be kept).
    pub warnings: Vec<String>,
}

impl Outcome {
    /// The outcome of an earlier write as its journal row recorded it (what a replay answers
    /// with), written to `abs_path`; the detached links and warnings were the first call's to
    /// report.
    pub fn recorded(row: RecordedRow, abs_path: PathBuf) -> Outcome {
        Outcome {
            abs_path,
            sha256: row.sha256,
            bytes: row.bytes,
            prev_sha256: row.prev_sha256,
            journal_id: row.journal_id,
            wrote_at: row.ts,
            mode: row.mode,
            detached_hardlinks: 0,
            warnings: Vec::new(),
        }
    }
}

/// The write pipeline of one state directory.
#[derive(Debug, Clone)]
pub struct Pipeline {
    journal: Journal,
    /// Where pre-images go before a rename replaces them (history); `None` keeps none.
    objects: Option<ObjectStore>,
    /// The store's budget, enforced as objects are added; `None` enforces none.
    auto: Option<std::sync::Arc<AutoRetention>>,
    /// Coalesced directory fsyncs of this process's writers (step 7).
    dir_syncs: std::sync::Arc<DirSyncs>,
    /// Free space, and history yielding it (`room.rs`).
    room: std::sync::Arc<Room>,
}

/// Read the file at `name` in `dir` without following a symlink.
pub fn read_existing(dir: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<Option<Existing>> {
    read_existing_as(dir, name, true)
}

/// Like [`read_existing`]; with `keep_bytes` false the content is only hashed (streamed), and
/// `Existing::bytes` is left empty, so a huge existing file costs no memory.
fn read_existing_as(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    keep_bytes: bool,
) -> io::Result<Option<Existing>> {
    let fd = match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
        Err(e) => return Err(errno_io(e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(errno_io)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "target is not a regular file",
        ));
    }
    let mut file = File::from(fd);
    let (bytes, sha256) = if keep_bytes {
        let mut bytes = Vec::with_capacity(st.st_size.max(0) as usize);
        // Through `Read::take`: a `File`'s own `read_to_end` asks the kernel for its size and
        // position again (`statx`, `lseek`), known from the `fstat` above.
        Read::take(&mut file, u64::MAX).read_to_end(&mut bytes)?;
        let digest = sha256_hex(&bytes);
        (bytes, digest)
    } else {
        (Vec::new(), crate::hash::sha256_reader(&mut file)?.0)
    };
    Ok(Some(Existing {
        sha256,
        bytes,
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        nlink: st.st_nlink,
        size: st.st_size.max(0) as u64,
        inode: Some((st.st_dev, st.st_ino)),
    }))
}

/// Map an error reading the current target to the failure the agent should see.
fn read_target(target: &Target, keep_bytes: bool) -> Result<Option<Existing>> {
    let shown = target.display.as_str();
    read_existing_as(&target.dir, &target.name, keep_bytes).map_err(|e| {
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            Failure::OutsideWorkspace {
                path: shown.into(),
                reason: "the target became a symlink after it was resolved".into(),
            }
        } else if e.kind() == io::ErrorKind::InvalidInput {
            Failure::IsDirectory { path: shown.into() }
        } else {
            Failure::io("read", shown, e)
        }
    })
}

/// A read-only file is refused, not silently replaced: the rename only needs a writable
/// directory, so ask the kernel whether this process may write the file itself (permission
/// bits, ACLs, EROFS, immutable flag).
fn check_writable(target: &Target, existing: Option<&Existing>) -> Result<()> {
    if existing.is_some() {
        rustix::fs::accessat(
            &target.dir,
            &target.name,
            rustix::fs::Access::WRITE_OK,
            AtFlags::empty(),
        )
        .map_err(|e| Failure::io("check write permission", &target.display, errno_io(e)))?;
    }
    Ok(())
}

/// Step 6: rename the staged temp file over the target (never clobbering in create mode).
fn rename_into_place(target: &Target, tmp: &[u8], create_only: bool) -> io::Result<()> {
    rename_in(&target.dir, tmp, &target.name, create_only)
}

fn rename_in(
    dir: &OwnedFd,
    tmp: &[u8],
    name: &std::ffi::OsStr,
    create_only: bool,
) -> io::Result<()> {
    if create_only {
        rename_noreplace(dir, tmp, name)
    } else {
        rustix::fs::renameat(dir, tmp, dir, name).map_err(errno_io)
    }
}

/// Step 6 as the journal's commit queue runs it (on whichever thread leads the batch): the
/// rename through the target's directory handle, shared (no `dup` and `close` per write).
fn renamer(target: &Target, tmp: &[u8], create_only: bool) -> io::Result<Apply> {
    let dir = std::sync::Arc::clone(&target.dir);
    let (tmp, name) = (tmp.to_vec(), target.name.clone());
    Ok(Box::new(move || rename_in(&dir, &tmp, &name, create_only)))
}

/// The failure for a rename that did not happen.
fn rename_failure(target: &Target, e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::AlreadyExists {
        let now = read_existing(&target.dir, &target.name)
            .ok()
            .flatten()
            .map(|e| e.sha256)
            .unwrap_or_default();
        return Failure::TargetExists {
            path: target.display.clone(),
            existing_sha256: now,
        };
    }
    Failure::io("rename into place", &target.display, e)
}

fn hardlink_warning(
    objects: Option<&ObjectStore>,
    existing: Option<&Existing>,
    warnings: &mut Vec<String>,
) -> u64 {
    let mut detached = existing.map_or(0, |e| e.nlink.saturating_sub(1));
    // A pre-image linked into the object store by a write that then crashed before its
    // rename is no one else's link.
    if detached > 0
        && let (Some(store), Some(e)) = (objects, existing)
        && let Some(inode) = e.inode
        && let Ok(st) = rustix::fs::stat(store.path_of(&e.sha256))
        && (st.st_dev, st.st_ino) == inode
    {
        detached -= 1;
    }
    if detached > 0 {
        warnings.push(format!(
            "the previous file had {detached} other hard link(s); they keep the old content"
        ));
    }
    detached
}

/// The journal row of a write of `target` whose new content has `digest` (sha256, bytes;
/// empty and 0 for a removal).
fn journal_row(
    target: &Target,
    who: &Caller,
    (sha256, bytes): (&str, u64),
    prev: Option<&Existing>,
    plan_mode: &str,
    mut extra: BTreeMap<String, Value>,
) -> JournalRow {
    if let Some(root) = &target.row_path.root {
        extra.insert("root".into(), Value::from(root.clone()));
    }
    JournalRow {
        journal_id: new_journal_id(),
        ts: now_rfc3339(),
        path: target.row_path.path.clone(),
        sha256: sha256.to_string(),
        prev_sha256: prev.map(|e| e.sha256.clone()),
        bytes,
        mode: plan_mode.to_string(),
        caller: who.caller.clone(),
        tool: who.tool.clone(),
        extra,
    }
}

impl Pipeline {
    pub fn new(journal: Journal) -> Pipeline {
        let state_dir = journal
            .path()
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        Pipeline {
            journal,
            objects: None,
            auto: None,
            dir_syncs: Default::default(),
            room: std::sync::Arc::new(Room::new(std::sync::Arc::new(Statvfs), state_dir)),
        }
    }

    /// Read free space with `probe` instead of `fstatvfs` (tests).
    pub fn with_free_space(mut self, probe: std::sync::Arc<dyn FreeSpace>) -> Pipeline {
        let state_dir = self
            .journal
            .path()
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        self.room = std::sync::Arc::new(Room::new(probe, state_dir));
        self
    }

    /// Keep the previous content of every replaced file in `objects` (history and undo).
    pub fn with_objects(mut self, objects: ObjectStore) -> Pipeline {
        self.objects = Some(objects);
        self
    }

    /// Hold the object store to `retention` as objects are added (`paths` ranks rows per
    /// file, as `gc` does).
    pub fn with_retention(
        mut self,
        retention: retention::Retention,
        paths: crate::journal::paths::JournalPaths,
    ) -> Pipeline {
        self.auto = Some(std::sync::Arc::new(AutoRetention::new(retention, paths)));
        self
    }

    /// The retention the pipeline enforces, if any.
    pub fn retention(&self) -> Option<&retention::Retention> {
        self.auto.as_deref().map(AutoRetention::retention)
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    pub fn objects(&self) -> Option<&ObjectStore> {
        self.objects.as_ref()
    }

    /// Run the protocol for `target`. `decide` sees the current content under the lock and
    /// returns what to write (or to write nothing).
    pub fn commit<T>(
        &self,
        target: &Target,
        who: &Caller,
        decide: impl FnOnce(Option<&Existing>) -> Result<Decision<T>>,
    ) -> Result<(Option<Outcome>, T)> {
        self.commit_as(target, who, true, decide)
    }

    /// Like [`Pipeline::commit`], but the decision function sees the existing file's hash,
    /// mode and owner only (`Existing::bytes` is empty): for streamed writes (compose) whose
    /// target may be gigabytes, so the precondition check costs no memory. The pre-image is
    /// still kept for history, copied file to file.
    pub fn commit_streaming<T>(
        &self,
        target: &Target,
        who: &Caller,
        decide: impl FnOnce(Option<&Existing>) -> Result<Decision<T>>,
    ) -> Result<(Option<Outcome>, T)> {
        self.commit_as(target, who, false, decide)
    }

    fn commit_as<T>(
        &self,
        target: &Target,
        who: &Caller,
        keep_bytes: bool,
        decide: impl FnOnce(Option<&Existing>) -> Result<Decision<T>>,
    ) -> Result<(Option<Outcome>, T)> {
        let shown = target.display.as_str();
        // 1. Lock the parent directory.
        let lock = DirLock::take(target.dir.as_fd()).map_err(|e| Failure::io("lock", shown, e))?;

        // 2. Precondition, decided by the caller on the current content.
        let existing = read_target(target, keep_bytes)?;
        let (plan, value) = match decide(existing.as_ref())? {
            Decision::Skip(v) => return Ok((None, v)),
            Decision::Write(plan, v) => (plan, v),
        };
        check_writable(target, existing.as_ref())?;

        // 3-4. The pre-image first (its link is made durable beside the temp file and the
        // row, see `journal_and_rename`), without taking the state's filesystem below its
        // floor (`room.rs`); then the temp file, its fsync and read-back.
        let mut kept = self.preserve(target, existing.as_ref());
        let body_len = match &plan.body {
            Body::Bytes(b) => b.len() as u64,
            _ => 0,
        };
        let (more, reading) = self.hold_floor(target.dir.as_fd(), body_len, kept.added);
        let mut pruned = std::mem::take(&mut kept.pruned);
        pruned.extend(more);
        // A body in memory has its fsync started once its journal row is written, beside the
        // row's own sync (the rename waits for both); a streamed one overlaps its own.
        let staging = match plan.body {
            body @ Body::Bytes(_) => self
                .write_temp_making_room(
                    target,
                    existing.as_ref(),
                    body,
                    plan.new_file_mode,
                    &mut pruned,
                )
                .and_then(|w| w.verify_then_sync())
                .map(|(staged, pending)| (staged, Some(pending))),
            body => stage(target, existing.as_ref(), body, plan.new_file_mode)
                .map(|staged| (staged, None))
                .map_err(|f| self.disk_full(f, self.holds(target), 0, &pruned)),
        };
        let (mut staged, pending) = match staging {
            Ok(s) => s,
            Err(e) => {
                self.settle(&kept, false);
                return Err(e);
            }
        };

        // 5-6. Journal row, the syncs, the rename (see `journal_and_rename`). A pre-image whose
        // link cannot be made durable takes its row back and renames nothing; the write then
        // goes again, its row saying the pre-image was not kept. A row or a rename that meets
        // a full disk holding the history goes again once history has made room.
        let mut made_room = false;
        let committed = loop {
            let tried = self.journal_and_rename(
                target,
                who,
                &staged,
                existing.as_ref(),
                (&plan.mode, plan.create_only, &plan.extra),
                (&kept, &pruned),
                pending.as_ref(),
            );
            match tried {
                // Only a new link fails this way, and the next try has none.
                Err(Attempt::LinkNotDurable(e)) if kept.linked.is_some() => {
                    tracing::warn!("pre-image of {} not kept: {e}", target.display);
                    self.settle(&kept, false);
                    kept = Kept::not_kept(e.to_string());
                }
                Err(Attempt::LinkNotDurable(e)) => {
                    break Err(Failure::io("keep the previous version", shown, e));
                }
                Err(Attempt::NoRoom(f, on_state)) => {
                    let holds = if on_state {
                        Holds::State
                    } else {
                        self.holds(target)
                    };
                    let need = if on_state { ROW_ROOM } else { staged.bytes };
                    let helps = on_state || matches!(holds, Holds::Workspace(_, true));
                    if helps && !made_room {
                        made_room = true;
                        let more = self.yield_room(need);
                        if !more.is_empty() {
                            pruned.extend(more);
                            continue;
                        }
                    }
                    // The write's own pre-image is history too: a copy taking the room the
                    // write needs goes, and the write goes again without it.
                    if helps && kept.new_object && kept.linked.is_none() {
                        self.settle(&kept, false);
                        kept = Kept::not_kept(
                            "the disk holding the history was full and there was no older \
                             version left to drop"
                                .into(),
                        );
                        continue;
                    }
                    break Err(self.disk_full(f, holds, need, &pruned));
                }
                Err(Attempt::Failed(f)) => break Err(f),
                Ok(ids) => break Ok(ids),
            }
        };
        // The temp file's own fsync, if it failed, is the reason (its row was taken back and
        // nothing renamed).
        let committed = match pending.map(|p| p.finish()) {
            Some(Err(e)) => Err(Failure::io("fsync temp file", shown, e)),
            _ => committed,
        };
        let (journal_id, wrote_at) = match committed {
            Ok(ids) => ids,
            Err(f) => {
                self.settle(&kept, false);
                return Err(f);
            }
        };
        staged.guard.armed = false;
        self.settle(&kept, true);
        if let Some(r) = reading
            && !made_room
        {
            self.room.disbelieve(r);
        }

        // 7. Make the rename (and any new directories) durable: after the directory lock is
        // released, so writers of one directory share the fsync (see journal/group.rs). The
        // write is applied now: a failure here is reported as a warning, never as a failed
        // write.
        let mut warnings = std::mem::take(&mut staged.warnings);
        warnings.extend(pruned_warning(&pruned));
        let detached_hardlinks =
            hardlink_warning(self.objects.as_ref(), existing.as_ref(), &mut warnings);
        warnings.extend(kept.warning());
        drop(lock);
        if let Err(e) = self.dir_syncs.sync(&target.dir) {
            warnings.push(format!("fsync of the parent directory failed: {e}"));
        }
        for d in &target.created_dirs {
            if let Err(e) = rustix::fs::fsync(d) {
                warnings.push(format!("fsync of a created directory failed: {e}"));
            }
        }
        self.enforce_retention(kept.added);
        Ok((
            Some(Outcome {
                abs_path: target.abs_path.clone(),
                sha256: staged.sha256,
                bytes: staged.bytes,
                prev_sha256: existing.map(|e| e.sha256),
                journal_id,
                wrote_at,
                mode: plan.mode,
                detached_hardlinks,
                warnings,
            }),
            value,
        ))
    }
}

impl Pipeline {
    /// The target's filesystem, and whether it holds the state (and the history) too.
    pub(super) fn holds<'t>(&self, target: &'t Target) -> Holds<'t> {
        let dir = target
            .abs_path
            .parent()
            .unwrap_or(std::path::Path::new("/"));
        Holds::Workspace(dir, self.room.shares_state(&target.dir))
    }
}

/// Why one try at steps 5-6 did not apply the write.
enum Attempt {
    /// The row could not be made durable or the rename failed: the write fails with this.
    Failed(Failure),
    /// The pre-image's new link could not be made durable: the row was taken back and
    /// nothing renamed; the write goes again without it.
    LinkNotDurable(io::Error),
    /// The row (`true`: the state's filesystem) or the rename (`false`: the target's) met a
    /// full disk; nothing was applied.
    NoRoom(Failure, bool),
}

/// What a journal row needs on disk, at most: one block.
const ROW_ROOM: u64 = 4096;

impl Pipeline {
    /// Steps 5-6 once: the journal row (naming the pre-image `kept`, or why it was not kept)
    /// goes through the journal's commit queue; once it is in the journal file, the temp
    /// file's fsync (`pending`) and the pre-image link's sync start beside the row's own
    /// `fdatasync`, so a journaling filesystem makes the file, the link and the row durable in
    /// one commit; the rename waits for all three. A row is durable no sooner than the link
    /// it names: made after the link, it is in the same journal commit or a later one (on a
    /// filesystem without a journal, a power loss before the rename can leave a row naming a
    /// link that was lost, for a write that never happened: the file then still holds that
    /// content; docs/decisions/0020-pre-images-kept-by-hard-link.md). Returns the row's id and
    /// time.
    #[allow(clippy::too_many_arguments)]
    fn journal_and_rename(
        &self,
        target: &Target,
        who: &Caller,
        staged: &Staged,
        existing: Option<&Existing>,
        (mode, create_only, extra): (&str, bool, &BTreeMap<String, Value>),
        (kept, pruned): (&Kept, &crate::objects::Dropped),
        pending: Option<&PendingSync>,
    ) -> std::result::Result<(String, String), Attempt> {
        let shown = target.display.as_str();
        let mut extra = extra.clone();
        if let Some(reason) = &kept.not_kept {
            extra.insert(NOT_KEPT_FIELD.into(), Value::from(reason.clone()));
        }
        if let Some(p) = pruned_field(pruned) {
            extra.insert(PRUNED_FIELD.into(), p);
        }
        let digest = (staged.sha256.as_str(), staged.bytes);
        let row = journal_row(target, who, digest, existing, mode, extra);
        let ids = (row.journal_id.clone(), row.ts.clone());
        let rename = renamer(target, &staged.guard.name, create_only)
            .map_err(|e| Attempt::Failed(Failure::io("rename into place", shown, e)))?;
        if fault("enospc_journal") {
            return Err(Attempt::NoRoom(
                Failure::io(
                    "append journal row",
                    self.journal.path(),
                    errno_io(rustix::io::Errno::NOSPC),
                ),
                true,
            ));
        }
        let link = kept.linked.as_ref().map(|l| l.syncing());
        let temp = pending.cloned();
        let on_written: OnWritten = {
            let (link, temp) = (link.clone(), temp.clone());
            Box::new(move || {
                if let Some(t) = &temp {
                    t.start();
                }
                if let Some(l) = &link {
                    l.start();
                }
            })
        };
        let link_failed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let apply: Apply = {
            let link_failed = std::sync::Arc::clone(&link_failed);
            let synced = temp.map(PendingSync::waiter);
            Box::new(move || {
                if let Some(l) = &link
                    && let Err(e) = l.wait()
                {
                    link_failed.store(true, std::sync::atomic::Ordering::SeqCst);
                    return Err(e);
                }
                if let Some(synced) = synced {
                    synced()?;
                }
                rename()
            })
        };
        match self.journal.commit_row_then(&row, on_written, apply) {
            Ok(_) => Ok(ids),
            Err(CommitError::Apply(e)) if link_failed.load(std::sync::atomic::Ordering::SeqCst) => {
                Err(Attempt::LinkNotDurable(e))
            }
            Err(CommitError::Apply(e)) => {
                let f = rename_failure(target, e);
                Err(if f.is_no_space() {
                    Attempt::NoRoom(f, false)
                } else {
                    Attempt::Failed(f)
                })
            }
            Err(CommitError::Append(e)) => {
                let f = Failure::io("append journal row", self.journal.path(), e);
                Err(if f.is_no_space() {
                    Attempt::NoRoom(f, true)
                } else {
                    Attempt::Failed(f)
                })
            }
        }
    }
}

/// Rename `tmp` to `name` unless `name` exists. Falls back to link+unlink on filesystems that
/// do not support `RENAME_NOREPLACE`; both fail with `AlreadyExists` when the name is taken.
fn rename_noreplace(dir: &OwnedFd, tmp: &[u8], name: &std::ffi::OsStr) -> io::Result<()> {
    match rustix::fs::renameat_with(dir, tmp, dir, name, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            rustix::fs::linkat(dir, tmp, dir, name, AtFlags::empty()).map_err(errno_io)?;
            rustix::fs::unlinkat(dir, tmp, AtFlags::empty()).map_err(errno_io)
        }
        Err(e) => Err(errno_io(e)),
    }
}
