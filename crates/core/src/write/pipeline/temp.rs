//! Step 3 of the protocol (the module doc of [`super`] has all seven): the temp file beside
//! its target. Its name, its exclusive creation with the existing file's permissions and
//! owner, the body written into it (a streamed body with its read-back trailing the writer
//! and its writeback started early), and its fsync.

use super::{Body, Existing, fault};
use crate::envelope::{Failure, Result};
use crate::hash::{CountingWriter, HashingWriter, sha256_hex};
use crate::util::sys::errno_io;
use crate::workspace::Target;
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Marker in temp file names; the sweep recognises temp files by it.
pub const TEMP_MARKER: &str = ".rw-tmp-";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Removes the temp file when dropped unless disarmed (after a successful rename).
pub(super) struct TempGuard<'a> {
    dir: &'a OwnedFd,
    pub(super) name: Vec<u8>,
    pub(super) armed: bool,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = rustix::fs::unlinkat(self.dir, self.name.as_slice(), AtFlags::empty());
        }
    }
}

fn temp_name(name: &std::ffi::OsStr) -> Vec<u8> {
    // Keep the whole name under NAME_MAX (255) whatever the target's length.
    let base = name.as_bytes();
    let base = &base[..base.len().min(180)];
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let mut out = Vec::with_capacity(base.len() + 48);
    out.push(b'.');
    out.extend_from_slice(base);
    out.extend_from_slice(format!("{TEMP_MARKER}{pid}-{n}-{:08x}", rand_u32(pid)).as_bytes());
    out
}

fn rand_u32(pid: u32) -> u32 {
    // The temp name only needs to differ between concurrent writers; O_EXCL does the rest.
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    t ^ pid.rotate_left(16)
}

/// A temp file written, fsynced and verified next to its target, waiting for its rename.
pub(super) struct Staged<'a> {
    pub(super) guard: TempGuard<'a>,
    pub(super) sha256: String,
    pub(super) bytes: u64,
    pub(super) warnings: Vec<String>,
}

/// Sets the digest of a body held in memory, which [`write_body`] leaves to be computed
/// here, after the write: [`Written::verify_then_sync`] calls it while a large body's
/// writeback runs, and every read-back calls it first ([`Written::read_back`]), so no path can compare or journal a digest not
/// yet computed. Once only; a streamed body's digest was computed as it was written (`body`
/// is `None`).
pub(super) fn hash_held(staged: &mut Staged<'_>, body: Option<&[u8]>) {
    if let Some(body) = body
        && staged.sha256.is_empty()
    {
        staged.sha256 = sha256_hex(body);
    }
}

/// A temp file written but not yet fsynced nor verified ([`write_temp`]); [`Written::finish`]
/// makes it a [`Staged`]. Split so that [`Pipeline::commit_many`] can write every temp file
/// first and then fsync them back to back, which the filesystem completes in far fewer
/// journal commits than interleaved write/fsync pairs.
///
/// [`Pipeline::commit_many`]: super::Pipeline::commit_many
pub(super) struct Written<'a> {
    pub(super) target: &'a Target,
    pub(super) file: File,
    pub(super) staged: Staged<'a>,
    /// The body, when it was held in memory: the read-back compares the file's bytes with
    /// it instead of hashing them a second time.
    /// `staged.sha256` stays empty until [`hash_held`] computes it from this.
    pub(super) body: Option<Vec<u8>>,
}

/// Steps 3 and 4: an exclusive temp file with the existing file's permissions and owner,
/// written, fsynced, read back and compared. Dropping the result removes the temp file.
pub(super) fn stage<'a>(
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
pub(super) struct Published {
    /// Bytes `write(2)` has accepted, and whether the writer is done.
    state: std::sync::Mutex<(u64, bool)>,
    pub(super) moved: std::sync::Condvar,
}

impl Published {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, (u64, bool)> {
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
pub(super) const WRITEBACK_STEP: u64 = 16 * 1024 * 1024;

/// Starts writing `len` bytes of `file` from `offset` to the disk, without waiting for it
/// (`sync_file_range(2)` with `SYNC_FILE_RANGE_WRITE`). It makes nothing durable: the fsync
/// still does that, with less left to write.
#[cfg(target_os = "linux")]
pub(crate) fn start_writeback(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    #[cfg(test)]
    WRITEBACKS.with(|n| n.set(n.get() + 1));
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

#[cfg(test)]
thread_local! {
    /// [`start_writeback`] calls made on this thread (the pipeline's tests check when).
    pub(crate) static WRITEBACKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Elsewhere the fsync does all the writing.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start_writeback(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// Step 3 without its fsync: the temp file created, given its permissions and owner, and
/// written (hashing as it goes). Dropping the result removes the temp file.
pub(super) fn write_temp<'a>(
    target: &'a Target,
    existing: Option<&Existing>,
    body: Body,
    new_file_mode: Option<u32>,
) -> Result<Written<'a>> {
    create_temp(target, existing, new_file_mode)?.fill(body, None)
}

/// A body held in memory that could not be written, handed back with why.
pub(super) type NotWritten = Box<(Failure, Vec<u8>)>;

/// [`write_temp`] for a body held in memory, which a failure hands back (so the caller can
/// make room and write it once more without a copy).
pub(super) fn write_temp_bytes<'a>(
    target: &'a Target,
    existing: Option<&Existing>,
    body: Vec<u8>,
    new_file_mode: Option<u32>,
) -> std::result::Result<Written<'a>, NotWritten> {
    let created = match create_temp(target, existing, new_file_mode) {
        Ok(c) => c,
        Err(f) => return Err(Box::new((f, body))),
    };
    let Created {
        target,
        mut file,
        guard,
        warnings,
    } = created;
    if let Err(e) = file.write_all(&body) {
        return Err(Box::new((
            Failure::io("write temp file", &target.display, e),
            body,
        )));
    }
    let n = body.len() as u64;
    match Written::new(target, file, guard, warnings, String::new(), n) {
        Ok(mut w) => {
            w.body = Some(body);
            Ok(w)
        }
        Err(f) => Err(Box::new((f, body))),
    }
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

/// Writes `body` into `sink` (a body in memory with one `write_all`, a stream through a
/// buffer), returning the SHA-256 of what was written (the producer's own, for a hashed
/// stream; `None` for a body held in memory, hashed later by [`hash_held`] while
/// its fsync runs), its size, and the body itself when it was held in memory (the read-back
/// compares the file with it).
fn write_body(
    sink: &mut dyn Write,
    body: Body,
) -> io::Result<(Option<String>, u64, Option<Vec<u8>>)> {
    if let Body::Bytes(b) = body {
        // One write(2) of the whole body (a buffer would only copy it).
        sink.write_all(&b)?;
        let n = b.len() as u64;
        return Ok((None, n, Some(b)));
    }
    let buffered = BufWriter::with_capacity(256 * 1024, sink);
    if let Body::HashedStream(produce) = body {
        let mut w = CountingWriter::new(buffered);
        let digest = produce(&mut w)?;
        let (n, mut inner) = w.finish();
        inner.flush()?;
        return Ok((Some(digest), n, None));
    }
    let mut w = HashingWriter::new(buffered);
    if let Body::Stream(produce) = body {
        produce(&mut w)?;
    }
    let (digest, n, mut inner) = w.finish();
    inner.flush()?;
    Ok((Some(digest), n, None))
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
        let (expected, bytes, body) =
            written.map_err(|e| Failure::io("write temp file", shown, e))?;
        let mut written = Written::new(
            target,
            file,
            guard,
            warnings,
            expected.unwrap_or_default(),
            bytes,
        )?;
        written.body = body;
        Ok(written)
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
        if fault("corrupt_temp") {
            // The disk gives back other bytes than were written: the first one flipped.
            use std::os::unix::fs::FileExt;
            let mut first = [0u8; 1];
            if file.read_at(&mut first, 0).unwrap_or(0) == 1 {
                let _ = file.write_at(&[first[0] ^ 0x20], 0);
            }
        }
        Ok(Written {
            target,
            file,
            body: None,
            staged: Staged {
                guard,
                sha256: expected,
                bytes,
                warnings,
            },
        })
    }

    pub(super) fn sync(&self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Failure::io("fsync temp file", &self.target.display, e))
    }
}

/// A fresh read-only descriptor of the temp file, for its read-back.
pub(super) fn open_read_back(target: &Target, tmp: &[u8]) -> Result<File> {
    rustix::fs::openat(
        &target.dir,
        tmp,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(File::from)
    .map_err(|e| Failure::io("read back temp file", &target.display, errno_io(e)))
}

#[cfg(test)]
mod tests {
    use super::super::sweep::temp_owner_pid;
    use super::*;

    #[test]
    fn temp_names_are_recognised_and_owned_by_their_pid() {
        let name = temp_name(std::ffi::OsStr::new("file.txt"));
        assert_eq!(temp_owner_pid(&name), Some(std::process::id() as i32));
        assert_eq!(temp_owner_pid(b"file.txt"), None);
        assert_eq!(temp_owner_pid(b".x.rw-tmp-12-notanumber-0000"), None);
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
}
