//! L1: the write pipeline. Every byte that lands in a workspace goes through [`Pipeline::commit`].
//!
//! The protocol, for one target already resolved beneath a root ([`crate::workspace::Target`]):
//!
//! 1. Lock: `flock(LOCK_EX)` on the target's parent directory handle. The lock excludes other
//!    threads and other processes writing into that directory until the rename is durable. (It
//!    is per directory, not per file: a rename replaces the file's inode, so a lock on the file
//!    itself would not exclude a writer that opened the new inode.)
//! 2. Precondition: the current content is read (`O_NOFOLLOW` relative to the directory handle)
//!    and handed to the caller's decision function, which checks mode and
//!    `expected_prev_sha256` and computes the new content, all under the lock.
//!    A target that exists must be writable by this process (`faccessat(W_OK)`): the rename
//!    would replace a read-only file, so one is refused with EACCES instead.
//! 3. Temp file: created in the same directory with `O_CREAT|O_EXCL|O_NOFOLLOW`, given the
//!    existing file's permission bits and owner, written, `fsync`ed.
//! 4. Read-back: the temp file is re-read and hashed; a mismatch with the hash of what was
//!    written deletes it and fails with `write_corruption`. The target is untouched.
//! 5. Journal: the row is appended and `fdatasync`ed, and the journal stays locked.
//! 6. Rename: `renameat2(RENAME_NOREPLACE)` for create (a file that appeared meanwhile is never
//!    clobbered; `link`+`unlink` where the filesystem lacks the flag), `renameat` otherwise. If
//!    the rename fails, the row is truncated away and the temp file removed: the server never
//!    reports failure for a write it applied, nor keeps a row for one it did not.
//! 7. Durability: the parent directory (and every directory created on the way) is `fsync`ed.
//!
//! A crash at any point leaves the target wholly old or wholly new. A crash after step 3 leaves
//! a temp file named `.<name>.rw-tmp-<pid>-<n>`, which [`sweep_temp_files`] removes at the
//! next start once process `<pid>` is gone. A crash between steps 5 and 6 (the journal's
//! fdatasync and the rename) can leave a row for a rename that never happened ("orphan row"):
//! the file on disk, not the row, is the truth; the crash test counts such rows, and
//! docs/ARCHITECTURE.md explains why this order is the one that never loses an acknowledged row.

use crate::envelope::{Failure, Result};
use crate::hash::{HashingWriter, sha256_hex};
use crate::journal::{Journal, JournalRow, new_journal_id, now_rfc3339};
use crate::workspace::Target;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags, RenameFlags};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Marker in temp file names; the sweep recognises temp files by it.
pub const TEMP_MARKER: &str = ".rw-tmp-";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

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
}

/// A producer that streams the new content into the temp file.
pub type Producer = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

/// The new content: whole bytes, or a producer that streams into the temp file (compose).
pub enum Body {
    Bytes(Vec<u8>),
    Stream(Producer),
}

/// What to write, decided under the lock by the caller.
pub struct Plan {
    pub body: Body,
    /// The journal's `mode` (create, overwrite, append, replace, compose, ...).
    pub mode_label: String,
    /// Refuse to replace an existing file at rename time (create mode).
    pub create_only: bool,
    /// Extra journal fields (session, tx_id, idempotency_key, ...).
    pub extra: BTreeMap<String, Value>,
    /// Permission bits for a file that does not exist yet (before the umask); `None` means
    /// 0666. An existing file always keeps its own bits. The scratchpad asks for 0600.
    pub new_file_mode: Option<u32>,
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
    pub mode_label: String,
    /// Hard links of the previous file that no longer share content with this path.
    pub detached_hardlinks: u64,
    /// Non-fatal problems after the write was applied (a directory fsync that failed, an
    /// owner that could not be kept).
    pub warnings: Vec<String>,
}

/// Fault injection for tests of paths that real disks rarely take. Honoured only in debug
/// builds, so a release binary cannot be told to corrupt anything.
fn fault(name: &str) -> bool {
    cfg!(debug_assertions)
        && std::env::var("RW_FAULT_INJECT")
            .map(|v| v.split(',').any(|f| f == name))
            .unwrap_or(false)
}

fn errno_io(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
}

/// The write pipeline of one state directory.
#[derive(Debug, Clone)]
pub struct Pipeline {
    journal: Journal,
}

/// Holds the directory lock; releases it when dropped, on every exit path.
struct DirLock<'a>(&'a OwnedFd);

impl Drop for DirLock<'_> {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(self.0, FlockOperation::Unlock);
    }
}

/// Removes the temp file when dropped unless disarmed (after a successful rename).
struct TempGuard<'a> {
    dir: &'a OwnedFd,
    name: Vec<u8>,
    armed: bool,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = rustix::fs::unlinkat(self.dir, self.name.as_slice(), AtFlags::empty());
        }
    }
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
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
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
        file.read_to_end(&mut bytes)?;
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
    }))
}

fn temp_name(name: &std::ffi::OsStr) -> Vec<u8> {
    // Keep the whole name under NAME_MAX (255) whatever the target's length.
    let base = name.as_bytes();
    let base = &base[..base.len().min(180)];
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut out = Vec::with_capacity(base.len() + 48);
    out.push(b'.');
    out.extend_from_slice(base);
    out.extend_from_slice(
        format!("{TEMP_MARKER}{}-{n}-{:08x}", std::process::id(), rand_u32()).as_bytes(),
    );
    out
}

fn rand_u32() -> u32 {
    // The temp name only needs to differ between concurrent writers; O_EXCL does the rest.
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    t ^ (std::process::id().rotate_left(16))
}

impl Pipeline {
    pub fn new(journal: Journal) -> Pipeline {
        Pipeline { journal }
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
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
    /// target may be gigabytes, so the precondition check costs no memory.
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
        rustix::fs::flock(&target.dir, FlockOperation::LockExclusive)
            .map_err(|e| Failure::io("lock", shown, errno_io(e)))?;
        let _lock = DirLock(&target.dir);

        let existing = read_existing_as(&target.dir, &target.name, keep_bytes).map_err(|e| {
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
        })?;

        let (plan, value) = match decide(existing.as_ref())? {
            Decision::Skip(v) => return Ok((None, v)),
            Decision::Write(plan, v) => (plan, v),
        };

        // A read-only file is refused, not silently replaced: the rename below only needs a
        // writable directory, so ask the kernel whether this process may write the file
        // itself (permission bits, ACLs, EROFS, immutable flag).
        if existing.is_some() {
            rustix::fs::accessat(
                &target.dir,
                &target.name,
                rustix::fs::Access::WRITE_OK,
                AtFlags::empty(),
            )
            .map_err(|e| Failure::io("check write permission", shown, errno_io(e)))?;
        }

        // 3. Exclusive temp file with the existing file's permissions.
        let tmp = temp_name(&target.name);
        let perm = existing
            .as_ref()
            .map_or(plan.new_file_mode.unwrap_or(0o666), |e| e.mode);
        let fd = rustix::fs::openat(
            &target.dir,
            tmp.as_slice(),
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(perm),
        )
        .map_err(|e| Failure::io("create temp file", shown, errno_io(e)))?;
        let mut guard = TempGuard {
            dir: &target.dir,
            name: tmp.clone(),
            armed: true,
        };
        let mut warnings = Vec::new();
        if let Some(old) = &existing {
            // open(2) applied the umask; restore the exact bits (setuid etc. included).
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(old.mode))
                .map_err(|e| Failure::io("chmod temp file", shown, errno_io(e)))?;
            let st = rustix::fs::fstat(&fd).map_err(|e| Failure::io("stat", shown, errno_io(e)))?;
            if st.st_uid != old.uid || st.st_gid != old.gid {
                let r = rustix::fs::fchown(
                    &fd,
                    Some(rustix::fs::Uid::from_raw(old.uid)),
                    Some(rustix::fs::Gid::from_raw(old.gid)),
                );
                if let Err(e) = r {
                    warnings.push(format!(
                        "could not keep owner {}:{} ({e}); the file is now owned by the server's user",
                        old.uid, old.gid
                    ));
                }
                // chown clears setuid/setgid bits: put them back.
                let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(old.mode));
            }
        }
        let mut file = File::from(fd);
        let (expected, bytes) = {
            let mut w = HashingWriter::new(BufWriter::with_capacity(256 * 1024, &mut file));
            let written = match plan.body {
                Body::Bytes(b) => w.write_all(&b),
                Body::Stream(produce) => produce(&mut w),
            };
            written.map_err(|e| Failure::io("write temp file", shown, e))?;
            let (digest, n, mut inner) = w.finish();
            inner
                .flush()
                .map_err(|e| Failure::io("write temp file", shown, e))?;
            (digest, n)
        };
        if fault("enospc_write") {
            return Err(Failure::io(
                "write temp file",
                shown,
                errno_io(rustix::io::Errno::NOSPC),
            ));
        }
        file.sync_all()
            .map_err(|e| Failure::io("fsync temp file", shown, e))?;

        // 4. Read back what the disk holds and compare.
        let actual = {
            let fd = rustix::fs::openat(
                &target.dir,
                tmp.as_slice(),
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| Failure::io("read back temp file", shown, errno_io(e)))?;
            let (digest, _) = crate::hash::sha256_reader(File::from(fd))
                .map_err(|e| Failure::io("read back temp file", shown, e))?;
            if fault("readback_mismatch") {
                sha256_hex(b"injected corruption")
            } else {
                digest
            }
        };
        if actual != expected {
            return Err(Failure::Corruption {
                path: shown.into(),
                expected,
                actual,
            });
        }
        drop(file);

        // 5. Journal row, durable, journal still locked.
        let journal_id = new_journal_id();
        let wrote_at = now_rfc3339();
        let row = JournalRow {
            journal_id: journal_id.clone(),
            ts: wrote_at.clone(),
            path: target.abs_path.display().to_string(),
            sha256: expected.clone(),
            prev_sha256: existing.as_ref().map(|e| e.sha256.clone()),
            bytes,
            mode: plan.mode_label.clone(),
            caller: who.caller.clone(),
            tool: who.tool.clone(),
            extra: plan.extra,
        };
        let appended = if fault("enospc_journal") {
            Err(errno_io(rustix::io::Errno::NOSPC))
        } else {
            self.journal.append(&row)
        }
        .map_err(|e| Failure::io("append journal row", self.journal.path(), e))?;

        // 6. Rename into place.
        let renamed = if plan.create_only {
            rename_noreplace(&target.dir, &tmp, &target.name)
        } else {
            rustix::fs::renameat(&target.dir, tmp.as_slice(), &target.dir, &target.name)
                .map_err(errno_io)
        };
        if let Err(e) = renamed {
            if let Err(re) = appended.rollback() {
                tracing::error!("journal rollback after failed rename: {re}");
            }
            if e.kind() == io::ErrorKind::AlreadyExists {
                let now = read_existing(&target.dir, &target.name)
                    .ok()
                    .flatten()
                    .map(|e| e.sha256)
                    .unwrap_or_default();
                return Err(Failure::TargetExists {
                    path: shown.into(),
                    existing_sha256: now,
                });
            }
            return Err(Failure::io("rename into place", shown, e));
        }
        guard.armed = false;
        appended.commit();

        // 7. Make the rename (and any new directories) durable. The write is applied now:
        // a failure here is reported as a warning, never as a failed write.
        if let Err(e) = rustix::fs::fsync(&target.dir) {
            warnings.push(format!("fsync of the parent directory failed: {e}"));
        }
        for d in &target.created_dirs {
            if let Err(e) = rustix::fs::fsync(d) {
                warnings.push(format!("fsync of a created directory failed: {e}"));
            }
        }
        let detached_hardlinks = existing.as_ref().map_or(0, |e| e.nlink.saturating_sub(1));
        if detached_hardlinks > 0 {
            warnings.push(format!(
                "the previous file had {detached_hardlinks} other hard link(s); they keep the old content"
            ));
        }
        Ok((
            Some(Outcome {
                abs_path: target.abs_path.clone(),
                sha256: expected,
                bytes,
                prev_sha256: existing.map(|e| e.sha256),
                journal_id,
                wrote_at,
                mode_label: plan.mode_label,
                detached_hardlinks,
                warnings,
            }),
            value,
        ))
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

/// Directories the sweep never descends into.
const SWEEP_SKIP: &[&str] = &[".git", "node_modules", ".hg", ".svn"];

/// Remove temp files left by crashed writers beneath `root`: names containing
/// [`TEMP_MARKER`] whose writer process is gone. Visits at most `max_entries` entries.
/// Returns the paths removed.
pub fn sweep_temp_files(root: &Path, max_entries: usize) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > max_entries {
                return removed;
            }
            let name = entry.file_name();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if !SWEEP_SKIP.iter().any(|s| name.as_bytes() == s.as_bytes()) {
                    stack.push(entry.path());
                }
                continue;
            }
            if !ft.is_file() {
                continue;
            }
            if let Some(pid) = temp_owner_pid(name.as_bytes())
                && !process_alive(pid)
                && std::fs::remove_file(entry.path()).is_ok()
            {
                removed.push(entry.path());
            }
        }
    }
    removed
}

/// The writer pid encoded in a temp file name, if `name` is one of ours.
pub fn temp_owner_pid(name: &[u8]) -> Option<i32> {
    let marker = TEMP_MARKER.as_bytes();
    let pos = name.windows(marker.len()).rposition(|w| w == marker)?;
    if name.first() != Some(&b'.') {
        return None;
    }
    let rest = std::str::from_utf8(&name[pos + marker.len()..]).ok()?;
    let mut parts = rest.split('-');
    let pid: i32 = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    let tail = parts.next()?;
    (tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_hexdigit())).then_some(pid)
}

fn process_alive(pid: i32) -> bool {
    if pid as u32 == std::process::id() {
        return true;
    }
    match rustix::process::Pid::from_raw(pid) {
        Some(p) => match rustix::process::test_kill_process(p) {
            Ok(()) => true,
            Err(e) => e != rustix::io::Errno::SRCH,
        },
        None => false,
    }
}

/// Fsync a directory by path (used for state directories created outside a [`Target`]).
pub fn fsync_dir(path: &Path) -> io::Result<()> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(errno_io)?;
    rustix::fs::fsync(fd.as_fd()).map_err(errno_io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::Workspaces;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    struct Fixture {
        _t: tempfile::TempDir,
        root: PathBuf,
        ws: Workspaces,
        pipeline: Pipeline,
    }

    fn fixture() -> Fixture {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let ws = Workspaces::new(std::slice::from_ref(&root), &root, None);
        let pipeline = Pipeline::new(Journal::new(&root.join(".resilient_write")));
        Fixture {
            _t: t,
            root,
            ws,
            pipeline,
        }
    }

    fn who() -> Caller {
        Caller {
            caller: "test".into(),
            tool: "safe_write".into(),
        }
    }

    fn write(f: &Fixture, path: &str, bytes: &[u8], create_only: bool) -> Result<Outcome> {
        let target = f.ws.resolve(path, true)?;
        let body = bytes.to_vec();
        let (out, ()) = f.pipeline.commit(&target, &who(), |_| {
            Ok(Decision::Write(
                Plan {
                    body: Body::Bytes(body),
                    mode_label: if create_only { "create" } else { "overwrite" }.into(),
                    create_only,
                    extra: BTreeMap::new(),
                    new_file_mode: None,
                },
                (),
            ))
        })?;
        Ok(out.unwrap())
    }

    #[test]
    fn write_lands_exact_bytes_and_journals_one_row() {
        let f = fixture();
        let bytes = b"\xef\xbb\xbfline1\r\nline2\n";
        let out = write(&f, "a.txt", bytes, true).unwrap();
        assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), bytes);
        assert_eq!(out.sha256, sha256_hex(bytes));
        let (rows, _) = f.pipeline.journal().tail(10, |_| true).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["sha256"], out.sha256.as_str());
        assert_eq!(rows[0]["prev_sha256"], Value::Null);
    }

    #[test]
    fn overwrite_keeps_permission_bits() {
        let f = fixture();
        write(&f, "x.sh", b"old", true).unwrap();
        std::fs::set_permissions(f.root.join("x.sh"), std::fs::Permissions::from_mode(0o751))
            .unwrap();
        write(&f, "x.sh", b"new", false).unwrap();
        let meta = std::fs::metadata(f.root.join("x.sh")).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o751);
    }

    #[test]
    fn create_only_never_clobbers_a_file_that_appeared() {
        let f = fixture();
        let target = f.ws.resolve("race.txt", true).unwrap();
        let root = f.root.clone();
        let err = f
            .pipeline
            .commit(&target, &who(), |existing| {
                assert!(existing.is_none());
                // Another writer that ignores our lock creates the file now.
                std::fs::write(root.join("race.txt"), b"theirs").unwrap();
                Ok(Decision::Write(
                    Plan {
                        body: Body::Bytes(b"ours".to_vec()),
                        mode_label: "create".into(),
                        create_only: true,
                        extra: BTreeMap::new(),
                        new_file_mode: None,
                    },
                    (),
                ))
            })
            .unwrap_err();
        assert!(matches!(err, Failure::TargetExists { .. }), "{err:?}");
        assert_eq!(std::fs::read(f.root.join("race.txt")).unwrap(), b"theirs");
        let (rows, _) = f.pipeline.journal().tail(10, |_| true).unwrap();
        assert!(
            rows.is_empty(),
            "the row of the refused write was rolled back"
        );
        assert_no_temp_files(&f.root);
    }

    #[test]
    fn hard_linked_target_is_reported() {
        let f = fixture();
        write(&f, "h.txt", b"old", true).unwrap();
        std::fs::hard_link(f.root.join("h.txt"), f.root.join("twin.txt")).unwrap();
        let out = write(&f, "h.txt", b"new", false).unwrap();
        assert_eq!(out.detached_hardlinks, 1);
        assert_eq!(std::fs::read(f.root.join("twin.txt")).unwrap(), b"old");
    }

    #[test]
    fn temp_names_are_recognised_and_owned_by_their_pid() {
        let name = temp_name(std::ffi::OsStr::new("file.txt"));
        assert_eq!(temp_owner_pid(&name), Some(std::process::id() as i32));
        assert_eq!(temp_owner_pid(b"file.txt"), None);
        assert_eq!(temp_owner_pid(b".x.rw-tmp-12-notanumber-0000"), None);
    }

    #[test]
    fn sweep_removes_temp_files_of_dead_processes_only() {
        let f = fixture();
        let dead = f.root.join(".a.txt.rw-tmp-999999999-1-0000abcd");
        let live = f
            .root
            .join(format!(".b.txt.rw-tmp-{}-1-0000abcd", std::process::id()));
        std::fs::write(&dead, b"x").unwrap();
        std::fs::write(&live, b"x").unwrap();
        let removed = sweep_temp_files(&f.root, 1000);
        assert_eq!(removed, vec![dead.clone()]);
        assert!(live.exists());
    }

    fn assert_no_temp_files(root: &Path) {
        for e in std::fs::read_dir(root).unwrap().flatten() {
            assert!(
                !e.file_name().to_string_lossy().contains(TEMP_MARKER),
                "left {:?}",
                e.file_name()
            );
        }
    }
}
