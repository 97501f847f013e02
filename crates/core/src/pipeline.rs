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
//!    existing file's permission bits and owner, written, `fsync`ed. (A streamed body starts
//!    the writeback of what it has written every 16 MiB, so the fsync is left the last step;
//!    the fsync is still what makes the file durable.)
//! 4. Read-back: the temp file is re-read and hashed; a mismatch with the hash of what was
//!    written deletes it and fails with `write_corruption`. The target is untouched. (For a
//!    large file the read-back runs while its fsync does: both finish before step 6.)
//!    History: when the pipeline holds an [`ObjectStore`], the content about to be replaced
//!    is stored there (durably, deduplicated by SHA-256) now, after the new content is
//!    verified and before the rename, so every acknowledged write keeps its pre-image and a
//!    refused or failed write stores nothing.
//! 5. Journal: the row is appended and `fdatasync`ed, and the journal stays locked.
//! 6. Rename: `renameat2(RENAME_NOREPLACE)` for create (a file that appeared meanwhile is never
//!    clobbered; `link`+`unlink` where the filesystem lacks the flag), `renameat` otherwise. If
//!    the rename fails, the row is truncated away and the temp file removed: the server never
//!    reports failure for a write it applied, nor keeps a row for one it did not.
//! 7. Durability: the parent directory (and every directory created on the way) is `fsync`ed.
//!
//! [`Pipeline::commit_many`] runs the same steps for several targets at once (transactions):
//! all directories locked in a stable order, all preconditions checked, all temp files staged,
//! then the caller's commit point, one journal append, the renames, one fsync per directory.
//!
//! A crash at any point leaves the target wholly old or wholly new. A crash after step 3 leaves
//! a temp file named `.<name>.rw-tmp-<pid>-<n>`, which [`sweep_temp_files`] removes at the
//! next start once process `<pid>` is gone. A crash between steps 5 and 6 (the journal's
//! fdatasync and the rename) can leave a row for a rename that never happened ("orphan row"):
//! the file on disk, not the row, is the truth; the crash test counts such rows, and
//! docs/ARCHITECTURE.md explains why this order is the one that never loses an acknowledged row.

use crate::envelope::{Failure, Result};
use crate::hash::{CountingWriter, HashingWriter, sha256_hex};
use crate::journal::{Journal, JournalRow, new_journal_id, now_rfc3339};
use crate::objects::ObjectStore;
use crate::workspace::Target;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags, RenameFlags};
use serde_json::Value;
use sha2::{Digest, Sha256};
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
    pub mode_label: String,
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
    pub mode_label: String,
    /// Hard links of the previous file that no longer share content with this path.
    pub detached_hardlinks: u64,
    /// Non-fatal problems after the write was applied (a directory fsync that failed, an
    /// owner that could not be kept).
    pub warnings: Vec<String>,
}

/// Fault injection for tests of paths that real disks rarely take. Honoured only in debug
/// builds, so a release binary cannot be told to corrupt anything.
pub(crate) fn fault(name: &str) -> bool {
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
    /// Where pre-images go before a rename replaces them (history); `None` keeps none.
    objects: Option<ObjectStore>,
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

/// A temp file written, fsynced and verified next to its target, waiting for its rename.
struct Staged<'a> {
    guard: TempGuard<'a>,
    sha256: String,
    bytes: u64,
    warnings: Vec<String>,
}

/// A temp file written but not yet fsynced nor verified ([`write_temp`]); [`Written::finish`]
/// makes it a [`Staged`]. Split so that [`Pipeline::commit_many`] can write every temp file
/// first and then fsync them back to back, which the filesystem completes in far fewer
/// journal commits than interleaved write/fsync pairs.
struct Written<'a> {
    target: &'a Target,
    file: File,
    staged: Staged<'a>,
}

/// What [`Pipeline::commit_many`] staged for one target, shown to its commit-point callback.
#[derive(Debug, Clone)]
pub struct StagedFile {
    /// Index of the target in the caller's list.
    pub index: usize,
    pub sha256: String,
    pub bytes: u64,
    pub prev_sha256: Option<String>,
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

/// Steps 3 and 4: an exclusive temp file with the existing file's permissions and owner,
/// written, fsynced, read back and compared. Dropping the result removes the temp file.
fn stage<'a>(
    target: &'a Target,
    existing: Option<&Existing>,
    body: Body,
    new_file_mode: Option<u32>,
) -> Result<Staged<'a>> {
    match body {
        Body::Bytes(_) => write_temp(target, existing, body, new_file_mode)?.finish(),
        streamed => stage_streamed(target, existing, streamed, new_file_mode),
    }
}

/// Steps 3 and 4 for a streamed body (compose, large checkpoints): the read-back trails the
/// writer on a second thread, through its own descriptor, reading only what `write(2)` has
/// already accepted, and finishes while the fsync runs. The file is still read back whole and
/// compared after both the fsync and the read-back are done, before any rename; the read-back
/// reads the page cache before or after the fsync alike, so only the waiting changes.
///
/// A third thread starts the writeback of every [`WRITEBACK_STEP`] bytes the writer has
/// written, without waiting for it, so the disk works while the body is still being written
/// and the fsync at the end waits for the last step only. The fsync is what makes the file
/// durable either way; this only starts its work sooner.
fn stage_streamed<'a>(
    target: &'a Target,
    existing: Option<&Existing>,
    body: Body,
    new_file_mode: Option<u32>,
) -> Result<Staged<'a>> {
    let shown = target.display.as_str();
    let created = create_temp(target, existing, new_file_mode)?;
    let reader = open_read_back(target, &created.guard.name)?;
    let published = Published::default();
    std::thread::scope(|scope| {
        let trailing = scope.spawn(|| published.read_behind(&reader));
        scope.spawn(|| {
            published.write_behind(WRITEBACK_STEP, |offset, len| {
                // Only a head start: an error here comes back from the fsync too.
                let _ = start_writeback(&reader, offset, len);
            })
        });
        let written = created.fill(body, Some(&published));
        published.close();
        let read_back = || {
            trailing
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("read-back thread panicked")))
                .map_err(|e| Failure::io("read back temp file", shown, e))
        };
        let written = match written {
            Ok(w) => w,
            Err(e) => {
                let _ = read_back();
                return Err(e);
            }
        };
        let synced = written.sync();
        let actual = read_back();
        synced?;
        let actual = actual?;
        written.verify(if fault("readback_mismatch") {
            sha256_hex(b"injected corruption")
        } else {
            actual
        })
    })
}

/// How far the writer of a temp file has got, for the read-back trailing it.
#[derive(Default)]
struct Published {
    /// Bytes `write(2)` has accepted, and whether the writer is done.
    state: std::sync::Mutex<(u64, bool)>,
    moved: std::sync::Condvar,
}

impl Published {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, bool)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wrote(&self, n: usize) {
        self.lock().0 += n as u64;
        self.moved.notify_all();
    }

    /// The writer is done (or failed): the reader reads to the end of the file and stops.
    fn close(&self) {
        self.lock().1 = true;
        self.moved.notify_all();
    }

    /// Calls `start(offset, len)` each time the writer has published `step` bytes or more
    /// beyond the last call, with the range published since; returns once the writer is
    /// done (the range after the last call is left to the fsync).
    fn write_behind(&self, step: u64, mut start: impl FnMut(u64, u64)) {
        let mut started = 0u64;
        loop {
            let published = {
                let mut st = self.lock();
                while st.0 < started.saturating_add(step) && !st.1 {
                    st = self.moved.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                if st.1 {
                    return;
                }
                st.0
            };
            start(started, published - started);
            started = published;
        }
    }

    /// SHA-256 of the file as read through `file`, read up to what was published while the
    /// writer runs and to end of file once it is done (so bytes nobody wrote count too).
    fn read_behind(&self, file: &File) -> io::Result<String> {
        use std::os::unix::fs::FileExt;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1024 * 1024];
        let mut pos = 0u64;
        loop {
            let (published, done) = {
                let mut st = self.lock();
                while st.0 <= pos && !st.1 {
                    st = self.moved.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                *st
            };
            loop {
                let want = if done {
                    buf.len()
                } else if pos < published {
                    buf.len()
                        .min(usize::try_from(published - pos).unwrap_or(usize::MAX))
                } else {
                    break;
                };
                let n = match file.read_at(&mut buf[..want], pos) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => other?,
                };
                if n == 0 {
                    if done {
                        return Ok(hex::encode(hasher.finalize()));
                    }
                    // shorter than published (cut by someone else): wait for the writer
                    // to finish, then hash what the file holds
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    break;
                }
                hasher.update(&buf[..n]);
                pos += n as u64;
            }
        }
    }
}

/// A temp file's writes, published to the read-back trailing them.
struct Publishing<'f> {
    file: &'f mut File,
    to: &'f Published,
}

impl Write for Publishing<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.to.wrote(n);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// How much a streamed temp file's writer writes between two starts of its writeback
/// ([`stage_streamed`]). Measured with `compose_bench` on 1 GiB: 8 and 32 MiB do alike, 128
/// MiB leaves more for the final fsync; without it the fsync waited for the whole file.
const WRITEBACK_STEP: u64 = 16 * 1024 * 1024;

/// Starts writing `len` bytes of `file` from `offset` to the disk, without waiting for it
/// (`sync_file_range(2)` with `SYNC_FILE_RANGE_WRITE`). It makes nothing durable: the fsync
/// still does that, with less left to write.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    // SAFETY: the descriptor is borrowed from a live `File` for the duration of the call, and
    // sync_file_range reads no memory of this process.
    let r = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Elsewhere the fsync does all the writing.
#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// A fresh read-only descriptor of the temp file, for its read-back.
fn open_read_back(target: &Target, tmp: &[u8]) -> Result<File> {
    rustix::fs::openat(
        &target.dir,
        tmp,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(File::from)
    .map_err(|e| Failure::io("read back temp file", &target.display, errno_io(e)))
}

/// Step 3 without its fsync: the temp file created, given its permissions and owner, and
/// written (hashing as it goes). Dropping the result removes the temp file.
fn write_temp<'a>(
    target: &'a Target,
    existing: Option<&Existing>,
    body: Body,
    new_file_mode: Option<u32>,
) -> Result<Written<'a>> {
    create_temp(target, existing, new_file_mode)?.fill(body, None)
}

/// A temp file created with its permissions and owner, still empty.
struct Created<'a> {
    target: &'a Target,
    file: File,
    guard: TempGuard<'a>,
    warnings: Vec<String>,
}

/// The temp file of step 3, created exclusively beside the target with the existing file's
/// permissions and owner. Dropping the result removes it.
fn create_temp<'a>(
    target: &'a Target,
    existing: Option<&Existing>,
    new_file_mode: Option<u32>,
) -> Result<Created<'a>> {
    let shown = target.display.as_str();
    let tmp = temp_name(&target.name);
    let kept = |mode: u32| new_file_mode.map_or(mode, |most| mode & most);
    let perm = existing.map_or(new_file_mode.unwrap_or(0o666), |e| kept(e.mode));
    let fd = rustix::fs::openat(
        &target.dir,
        tmp.as_slice(),
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(perm),
    )
    .map_err(|e| Failure::io("create temp file", shown, errno_io(e)))?;
    let guard = TempGuard {
        dir: &target.dir,
        name: tmp.clone(),
        armed: true,
    };
    let mut warnings = Vec::new();
    if let Some(old) = existing {
        // open(2) applied the umask; restore the exact bits (setuid etc. included).
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(kept(old.mode)))
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
            let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(kept(old.mode)));
        }
    }
    Ok(Created {
        target,
        file: File::from(fd),
        guard,
        warnings,
    })
}

/// Writes `body` into `sink` (buffered), returning the SHA-256 of what was written (the
/// producer's own, for a hashed stream) and its size.
fn write_body(sink: &mut dyn Write, body: Body) -> io::Result<(String, u64)> {
    let buffered = BufWriter::with_capacity(256 * 1024, sink);
    if let Body::HashedStream(produce) = body {
        let mut w = CountingWriter::new(buffered);
        let digest = produce(&mut w)?;
        let (n, mut inner) = w.finish();
        inner.flush()?;
        return Ok((digest, n));
    }
    let mut w = HashingWriter::new(buffered);
    match body {
        Body::Bytes(b) => w.write_all(&b)?,
        Body::Stream(produce) => produce(&mut w)?,
        Body::HashedStream(_) => {}
    }
    let (digest, n, mut inner) = w.finish();
    inner.flush()?;
    Ok((digest, n))
}

impl<'a> Created<'a> {
    /// The rest of step 3 without its fsync: the body written, its writes published to
    /// `publish` if given.
    fn fill(self, body: Body, publish: Option<&Published>) -> Result<Written<'a>> {
        let Created {
            target,
            mut file,
            guard,
            warnings,
        } = self;
        let shown = target.display.as_str();
        let written = match publish {
            Some(to) => write_body(
                &mut Publishing {
                    file: &mut file,
                    to,
                },
                body,
            ),
            None => write_body(&mut file, body),
        };
        let (expected, bytes) = written.map_err(|e| Failure::io("write temp file", shown, e))?;
        Written::new(target, file, guard, warnings, expected, bytes)
    }
}

impl<'a> Written<'a> {
    fn new(
        target: &'a Target,
        file: File,
        guard: TempGuard<'a>,
        warnings: Vec<String>,
        expected: String,
        bytes: u64,
    ) -> Result<Written<'a>> {
        let shown = target.display.as_str();
        if fault("enospc_write") {
            return Err(Failure::io(
                "write temp file",
                shown,
                errno_io(rustix::io::Errno::NOSPC),
            ));
        }
        Ok(Written {
            target,
            file,
            staged: Staged {
                guard,
                sha256: expected,
                bytes,
                warnings,
            },
        })
    }
}

/// Temp files at least this large are read back while their fsync runs (on a second
/// thread): the read-back hashes from the page cache either way, and the rename waits for
/// both, so a gigabyte compose pays for the slower of the two instead of their sum.
const OVERLAP_VERIFY_BYTES: u64 = 8 * 1024 * 1024;

impl<'a> Written<'a> {
    /// The rest of steps 3 and 4: fsync, and read back what the file holds and compare.
    fn finish(self) -> Result<Staged<'a>> {
        if self.staged.bytes < OVERLAP_VERIFY_BYTES {
            self.sync()?;
            let actual = self.read_back()?;
            return self.verify(actual);
        }
        let (synced, actual) = std::thread::scope(|scope| {
            let sync = scope.spawn(|| self.sync());
            let actual = self.read_back();
            let synced = sync
                .join()
                .unwrap_or_else(|_| Err(Failure::Internal("fsync thread panicked".into())));
            (synced, actual)
        });
        synced?;
        let actual = actual?;
        self.verify(actual)
    }

    fn sync(&self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Failure::io("fsync temp file", &self.target.display, e))
    }

    /// SHA-256 of the temp file as read back through a fresh descriptor.
    fn read_back(&self) -> Result<String> {
        let shown = self.target.display.as_str();
        let file = open_read_back(self.target, &self.staged.guard.name)?;
        let (digest, _) = crate::hash::sha256_reader(file)
            .map_err(|e| Failure::io("read back temp file", shown, e))?;
        Ok(if fault("readback_mismatch") {
            sha256_hex(b"injected corruption")
        } else {
            digest
        })
    }

    /// Compare the read-back digest with what was written.
    fn verify(self, actual: String) -> Result<Staged<'a>> {
        let Written { target, staged, .. } = self;
        if actual != staged.sha256 {
            return Err(Failure::Corruption {
                path: target.display.clone(),
                expected: staged.sha256.clone(),
                actual,
            });
        }
        Ok(staged)
    }
}

/// Step 6: rename the staged temp file over the target (never clobbering in create mode).
fn rename_into_place(target: &Target, tmp: &[u8], create_only: bool) -> io::Result<()> {
    if create_only {
        rename_noreplace(&target.dir, tmp, &target.name)
    } else {
        rustix::fs::renameat(&target.dir, tmp, &target.dir, &target.name).map_err(errno_io)
    }
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

fn hardlink_warning(existing: Option<&Existing>, warnings: &mut Vec<String>) -> u64 {
    let detached = existing.map_or(0, |e| e.nlink.saturating_sub(1));
    if detached > 0 {
        warnings.push(format!(
            "the previous file had {detached} other hard link(s); they keep the old content"
        ));
    }
    detached
}

fn journal_row(
    target: &Target,
    who: &Caller,
    staged: &Staged,
    prev: Option<&Existing>,
    plan_mode: &str,
    extra: BTreeMap<String, Value>,
) -> JournalRow {
    JournalRow {
        journal_id: new_journal_id(),
        ts: now_rfc3339(),
        path: target.abs_path.display().to_string(),
        sha256: staged.sha256.clone(),
        prev_sha256: prev.map(|e| e.sha256.clone()),
        bytes: staged.bytes,
        mode: plan_mode.to_string(),
        caller: who.caller.clone(),
        tool: who.tool.clone(),
        extra,
    }
}

impl Pipeline {
    pub fn new(journal: Journal) -> Pipeline {
        Pipeline {
            journal,
            objects: None,
        }
    }

    /// Keep the previous content of every replaced file in `objects` (history and undo).
    pub fn with_objects(mut self, objects: ObjectStore) -> Pipeline {
        self.objects = Some(objects);
        self
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    pub fn objects(&self) -> Option<&ObjectStore> {
        self.objects.as_ref()
    }

    /// History: store the content about to be replaced. Called after the new content is
    /// staged and verified (so a refused or failed write stores nothing) and before the
    /// rename (so a crash never loses the pre-image of an acknowledged write).
    fn preserve(&self, target: &Target, existing: Option<&Existing>) -> Result<()> {
        if !target.keep_history {
            return Ok(());
        }
        if let (Some(store), Some(old)) = (&self.objects, existing) {
            let stored = if old.bytes.is_empty() && old.sha256 != sha256_hex(b"") {
                // A streamed commit did not keep the bytes: copy the file as it is now (we
                // hold the directory lock, so it is still the content hashed above).
                rustix::fs::openat(
                    &target.dir,
                    &target.name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(errno_io)
                .and_then(|fd| store.put_reader(File::from(fd), &old.sha256))
            } else {
                store.put(&old.bytes, &old.sha256)
            };
            stored.map_err(|e| Failure::io("store the previous version", &target.display, e))?;
        }
        Ok(())
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
        rustix::fs::flock(&target.dir, FlockOperation::LockExclusive)
            .map_err(|e| Failure::io("lock", shown, errno_io(e)))?;
        let _lock = DirLock(&target.dir);

        // 2. Precondition, decided by the caller on the current content.
        let existing = read_target(target, keep_bytes)?;
        let (plan, value) = match decide(existing.as_ref())? {
            Decision::Skip(v) => return Ok((None, v)),
            Decision::Write(plan, v) => (plan, v),
        };
        check_writable(target, existing.as_ref())?;

        // 3-4. Temp file, fsync, read-back; then keep the pre-image.
        let mut staged = stage(target, existing.as_ref(), plan.body, plan.new_file_mode)?;
        self.preserve(target, existing.as_ref())?;

        // 5. Journal row, durable, journal still locked.
        let row = journal_row(
            target,
            who,
            &staged,
            existing.as_ref(),
            &plan.mode_label,
            plan.extra,
        );
        let (journal_id, wrote_at) = (row.journal_id.clone(), row.ts.clone());
        let appended = if fault("enospc_journal") {
            Err(errno_io(rustix::io::Errno::NOSPC))
        } else {
            self.journal.append(&row)
        }
        .map_err(|e| Failure::io("append journal row", self.journal.path(), e))?;

        // 6. Rename into place; a failed rename takes its row back.
        if let Err(e) = rename_into_place(target, &staged.guard.name, plan.create_only) {
            if let Err(re) = appended.rollback() {
                tracing::error!("journal rollback after failed rename: {re}");
            }
            return Err(rename_failure(target, e));
        }
        staged.guard.armed = false;
        appended.commit();

        // 7. Make the rename (and any new directories) durable. The write is applied now:
        // a failure here is reported as a warning, never as a failed write.
        let mut warnings = std::mem::take(&mut staged.warnings);
        if let Err(e) = rustix::fs::fsync(&target.dir) {
            warnings.push(format!("fsync of the parent directory failed: {e}"));
        }
        for d in &target.created_dirs {
            if let Err(e) = rustix::fs::fsync(d) {
                warnings.push(format!("fsync of a created directory failed: {e}"));
            }
        }
        let detached_hardlinks = hardlink_warning(existing.as_ref(), &mut warnings);
        Ok((
            Some(Outcome {
                abs_path: target.abs_path.clone(),
                sha256: staged.sha256,
                bytes: staged.bytes,
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

    /// The protocol for several targets at once, all or nothing (transactions):
    ///
    /// 1. Lock every distinct parent directory, in (device, inode) order so two multi-file
    ///    commits never deadlock (single-file commits lock one directory, so they cannot
    ///    take part in a cycle).
    /// 2. Read every target and let `decide` check all preconditions at once: it returns one
    ///    entry per target (`None`: leave it untouched) or fails the whole commit.
    /// 3. Stage every temp file (all written, then all fsynced back to back, then all read
    ///    back) and keep every pre-image.
    /// 4. `commit_point` runs with everything staged: the caller makes its commit record
    ///    durable there. Before it returns, nothing is applied; after, the caller's recovery
    ///    must roll forward.
    /// 5. Journal one row per written target with one durable append (skipped when
    ///    `journal_rows` is false: recovery of a transaction whose rows already landed).
    /// 6. Rename every temp file into place, then fsync each touched directory once.
    ///
    /// A failure after the commit point returns the error with the commit record in place:
    /// the caller's recovery finishes the renames.
    pub fn commit_many(
        &self,
        targets: &[&Target],
        who: &Caller,
        decide: impl FnOnce(&[Option<Existing>]) -> Result<Vec<Option<Plan>>>,
        commit_point: impl FnOnce(&[StagedFile]) -> Result<()>,
        journal_rows: bool,
    ) -> Result<Vec<Option<Outcome>>> {
        // 1. Locks, one per distinct directory, in a stable order.
        let mut dirs: Vec<((u64, u64), usize)> = Vec::new();
        for (i, t) in targets.iter().enumerate() {
            let st = rustix::fs::fstat(&t.dir)
                .map_err(|e| Failure::io("stat directory", &t.display, errno_io(e)))?;
            dirs.push(((st.st_dev as u64, st.st_ino as u64), i));
        }
        dirs.sort();
        dirs.dedup_by_key(|(id, _)| *id);
        let mut locks = Vec::with_capacity(dirs.len());
        for (_, i) in &dirs {
            let t = targets[*i];
            rustix::fs::flock(&t.dir, FlockOperation::LockExclusive)
                .map_err(|e| Failure::io("lock", &t.display, errno_io(e)))?;
            locks.push(DirLock(&t.dir));
        }

        // 2. Every precondition before anything is written.
        let existing = targets
            .iter()
            .map(|t| read_target(t, true))
            .collect::<Result<Vec<_>>>()?;
        let plans = decide(&existing)?;
        if plans.len() != targets.len() {
            return Err(Failure::Internal("one plan per target expected".into()));
        }

        // 3. Stage and preserve: every temp file written first, then all fsynced back to
        // back (the filesystem folds them into few journal commits), then all read back.
        // Progress (when the client asked for it): one step per file written, one per file
        // renamed, reported about twenty times in all.
        let progress = crate::progress::current();
        let steps = 2 * plans.iter().flatten().count() as u64;
        let every = (steps / 20).max(1);
        let tick = |done: u64| {
            if let Some(p) = &progress
                && (done.is_multiple_of(every) || done == steps)
            {
                p(done, steps);
            }
        };
        let mut written: Vec<(usize, Written, Plan)> = Vec::new();
        for (i, plan) in plans.into_iter().enumerate() {
            let Some(mut plan) = plan else { continue };
            let t = targets[i];
            check_writable(t, existing[i].as_ref())?;
            let body = std::mem::replace(&mut plan.body, Body::Bytes(Vec::new()));
            let w = write_temp(t, existing[i].as_ref(), body, plan.new_file_mode)?;
            written.push((i, w, plan));
            tick(written.len() as u64);
        }
        for (_, w, _) in &written {
            w.sync()?;
        }
        let mut staged: Vec<(usize, Staged, Plan)> = Vec::with_capacity(written.len());
        for (i, w, plan) in written {
            let actual = w.read_back()?;
            staged.push((i, w.verify(actual)?, plan));
        }
        for (i, _, _) in &staged {
            self.preserve(targets[*i], existing[*i].as_ref())?;
        }

        // 4. The commit point.
        let shown: Vec<StagedFile> = staged
            .iter()
            .map(|(i, s, _)| StagedFile {
                index: *i,
                sha256: s.sha256.clone(),
                bytes: s.bytes,
                prev_sha256: existing[*i].as_ref().map(|e| e.sha256.clone()),
            })
            .collect();
        commit_point(&shown)?;
        if fault("tx_crash_after_commit_record") {
            std::process::abort();
        }

        // 5. One durable append for every row.
        let rows: Vec<JournalRow> = staged
            .iter_mut()
            .map(|(i, s, plan)| {
                let t = targets[*i];
                journal_row(
                    t,
                    who,
                    s,
                    existing[*i].as_ref(),
                    &plan.mode_label,
                    std::mem::take(&mut plan.extra),
                )
            })
            .collect();
        let appended = if journal_rows && !rows.is_empty() {
            Some(
                self.journal
                    .append_many(&rows)
                    .map_err(|e| Failure::io("append journal rows", self.journal.path(), e))?,
            )
        } else {
            None
        };
        if fault("tx_crash_after_journal") {
            std::process::abort();
        }

        // 6. Renames, then one fsync per touched directory.
        let mut outcomes: Vec<Option<Outcome>> = (0..targets.len()).map(|_| None).collect();
        let mut renamed_dirs: Vec<usize> = Vec::new();
        for (n, ((i, s, plan), row)) in staged.iter_mut().zip(&rows).enumerate() {
            let t = targets[*i];
            if n == 1 && fault("tx_crash_mid_renames") {
                std::process::abort();
            }
            if let Err(e) = rename_into_place(t, &s.guard.name, plan.create_only) {
                if let Some(a) = appended {
                    a.commit();
                }
                return Err(rename_failure(t, e));
            }
            s.guard.armed = false;
            renamed_dirs.push(*i);
            tick(steps / 2 + n as u64 + 1);
            let mut warnings = std::mem::take(&mut s.warnings);
            let detached_hardlinks = hardlink_warning(existing[*i].as_ref(), &mut warnings);
            outcomes[*i] = Some(Outcome {
                abs_path: t.abs_path.clone(),
                sha256: s.sha256.clone(),
                bytes: s.bytes,
                prev_sha256: existing[*i].as_ref().map(|e| e.sha256.clone()),
                journal_id: row.journal_id.clone(),
                wrote_at: row.ts.clone(),
                mode_label: plan.mode_label.clone(),
                detached_hardlinks,
                warnings,
            });
        }
        if let Some(a) = appended {
            a.commit();
        }
        let mut fsync_failed = None;
        for (_, i) in &dirs {
            if let Err(e) = rustix::fs::fsync(&targets[*i].dir) {
                fsync_failed = Some(format!("fsync of a parent directory failed: {e}"));
            }
        }
        for i in renamed_dirs {
            for d in &targets[i].created_dirs {
                if let Err(e) = rustix::fs::fsync(d) {
                    fsync_failed = Some(format!("fsync of a created directory failed: {e}"));
                }
            }
        }
        if let Some(w) = fsync_failed {
            for o in outcomes.iter_mut().flatten() {
                o.warnings.push(w.clone());
            }
        }
        drop(locks);
        Ok(outcomes)
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
    scan_temp_files(root, max_entries, true)
}

/// The temp files beneath `root` whose writer process is gone, as [`sweep_temp_files`]
/// would remove them, without removing anything (`doctor`).
pub fn stale_temp_files(root: &Path, max_entries: usize) -> Vec<PathBuf> {
    scan_temp_files(root, max_entries, false)
}

fn scan_temp_files(root: &Path, max_entries: usize, remove: bool) -> Vec<PathBuf> {
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
                && (!remove || std::fs::remove_file(entry.path()).is_ok())
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

/// Whether process `pid` exists (this process counts as alive).
pub fn process_alive(pid: i32) -> bool {
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

    fn stream(f: &Fixture, path: &str, body: Body) -> Result<Outcome> {
        let target = f.ws.resolve(path, true)?;
        let (out, ()) = f.pipeline.commit_streaming(&target, &who(), |_| {
            Ok(Decision::Write(
                Plan {
                    body,
                    mode_label: "compose".into(),
                    create_only: false,
                    extra: BTreeMap::new(),
                    new_file_mode: None,
                },
                (),
            ))
        })?;
        Ok(out.unwrap())
    }

    fn leftovers(f: &Fixture) -> Vec<String> {
        std::fs::read_dir(&f.root)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| temp_owner_pid(n.as_bytes()).is_some())
            .collect()
    }

    /// Pieces of every size from 1 byte to past the writer's buffer, so the read-back that
    /// trails the writer wakes up at many different points.
    fn pieces() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut x = 7u32;
        for k in 0..300usize {
            let len = match k % 5 {
                0 => 1,
                1 => 4095,
                2 => 70_000,
                3 => 300_000,
                _ => 13,
            };
            out.push(
                (0..len)
                    .map(|_| {
                        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                        (x >> 16) as u8
                    })
                    .collect(),
            );
        }
        out
    }

    #[test]
    fn streamed_write_is_read_back_whole_while_it_is_written() {
        let f = fixture();
        let parts = pieces();
        let all: Vec<u8> = parts.concat();
        let producer_parts = parts.clone();
        let out = stream(
            &f,
            "big.bin",
            Body::Stream(Box::new(move |w| {
                for p in &producer_parts {
                    w.write_all(p)?;
                    w.flush()?;
                }
                Ok(())
            })),
        )
        .unwrap();
        assert_eq!(out.bytes, all.len() as u64);
        assert_eq!(out.sha256, sha256_hex(&all));
        assert_eq!(std::fs::read(f.root.join("big.bin")).unwrap(), all);
        assert!(leftovers(&f).is_empty());
    }

    #[test]
    fn hashed_stream_with_a_wrong_digest_is_corruption_and_lands_nothing() {
        let f = fixture();
        write(&f, "t.bin", b"old", true).unwrap();
        let parts = pieces();
        let right = sha256_hex(&parts.concat());
        let e = stream(
            &f,
            "t.bin",
            Body::HashedStream(Box::new(move |w| {
                for p in &parts {
                    w.write_all(p)?;
                }
                // the digest of all but the last byte: the read-back must see the difference
                let all = parts.concat();
                Ok(sha256_hex(&all[..all.len() - 1]))
            })),
        )
        .unwrap_err();
        match e {
            Failure::Corruption { actual, .. } => assert_eq!(actual, right),
            other => panic!("expected write_corruption, got {other:?}"),
        }
        assert_eq!(std::fs::read(f.root.join("t.bin")).unwrap(), b"old");
        assert!(leftovers(&f).is_empty());
    }

    #[test]
    fn hashed_stream_with_the_right_digest_lands() {
        let f = fixture();
        let parts = pieces();
        let all = parts.concat();
        let digest = sha256_hex(&all);
        let out = stream(
            &f,
            "h.bin",
            Body::HashedStream(Box::new(move |w| {
                for p in &parts {
                    w.write_all(p)?;
                }
                Ok(digest)
            })),
        )
        .unwrap();
        assert_eq!(out.sha256, sha256_hex(&all));
        assert_eq!(std::fs::read(f.root.join("h.bin")).unwrap(), all);
    }

    #[test]
    fn a_stream_failing_midway_stops_its_read_back_and_lands_nothing() {
        let f = fixture();
        write(&f, "s.bin", b"old", true).unwrap();
        let e = stream(
            &f,
            "s.bin",
            Body::Stream(Box::new(|w| {
                w.write_all(&vec![b'x'; 3 * 1024 * 1024])?;
                w.flush()?;
                Err(io::Error::other("producer gave up"))
            })),
        )
        .unwrap_err();
        assert!(e.to_string().contains("producer gave up"), "{e}");
        assert_eq!(std::fs::read(f.root.join("s.bin")).unwrap(), b"old");
        assert!(leftovers(&f).is_empty());
    }

    /// Waits (up to 10 s) until `calls` holds `n` entries.
    fn await_calls(calls: &std::sync::Mutex<Vec<(u64, u64)>>, n: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while calls.lock().unwrap().len() < n && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn writeback_starts_each_step_with_the_range_written_since() {
        let published = Published::default();
        let calls = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            scope.spawn(|| {
                published.write_behind(10, |at, len| calls.lock().unwrap().push((at, len)))
            });
            published.wrote(4);
            published.wrote(7);
            await_calls(&calls, 1);
            published.wrote(9);
            published.wrote(16);
            await_calls(&calls, 2);
            published.wrote(3);
            published.close();
        });
        // 11 bytes reach the first step, 25 more the next; the last 3 are left to the fsync
        assert_eq!(*calls.lock().unwrap(), vec![(0, 11), (11, 25)]);
    }

    #[test]
    fn writeback_of_a_body_shorter_than_a_step_is_left_to_the_fsync() {
        let published = Published::default();
        let calls = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            scope.spawn(|| {
                published.write_behind(10, |at, len| calls.lock().unwrap().push((at, len)))
            });
            published.wrote(9);
            published.close();
        });
        assert!(calls.lock().unwrap().is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn start_writeback_takes_a_written_file_and_refuses_a_pipe() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("f");
        std::fs::write(&path, vec![b'x'; 1 << 20]).unwrap();
        let file = File::open(&path).unwrap();
        start_writeback(&file, 0, 1 << 20).unwrap();
        let (rx, _tx) = std::io::pipe().unwrap();
        let e = start_writeback(&File::from(OwnedFd::from(rx)), 0, 1).unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::SPIPE.raw_os_error())
        );
    }

    #[test]
    fn a_stream_of_several_writeback_steps_lands_whole() {
        let f = fixture();
        let block: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        let n = (2 * WRITEBACK_STEP / (1 << 20) + 3) as usize;
        let all = block.repeat(n);
        let body = block.clone();
        let out = stream(
            &f,
            "big.bin",
            Body::Stream(Box::new(move |w| {
                for _ in 0..n {
                    w.write_all(&body)?;
                }
                Ok(())
            })),
        )
        .unwrap();
        assert_eq!(out.bytes, all.len() as u64);
        assert_eq!(out.sha256, sha256_hex(&all));
        assert!(std::fs::read(f.root.join("big.bin")).unwrap() == all);
        assert!(leftovers(&f).is_empty());
    }
}
