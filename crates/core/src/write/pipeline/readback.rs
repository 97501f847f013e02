//! Step 4 of the protocol (the module doc of [`super`] has all seven): the temp file read back
//! through a fresh descriptor and compared with what was written: byte for byte with a body
//! held in memory (one SHA-256 of the body, not two), by digest with a streamed one. A
//! mismatch removes the temp file and fails with `write_corruption` (naming the digest of
//! what the file held); the target is untouched.

use super::fault;
use super::temp::{Published, Staged, Written, hash_held, open_read_back, start_writeback};
use crate::envelope::{Failure, Result};
use crate::hash::sha256_hex;
use crate::workspace::Target;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io;

impl Published {
    /// SHA-256 of the file as read through `file`, read up to what was published while the
    /// writer runs and to end of file once it is done (so bytes nobody wrote count too).
    pub(super) fn read_behind(&self, file: &File) -> io::Result<String> {
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

/// Temp files at least this large are read back while their fsync runs (on a second
/// thread): the read-back hashes from the page cache either way, and the rename waits for
/// both, so a gigabyte compose pays for the slower of the two instead of their sum.
const OVERLAP_VERIFY_BYTES: u64 = 8 * 1024 * 1024;

impl<'a> Written<'a> {
    /// The rest of steps 3 and 4: fsync, and read back what the file holds and compare.
    pub(super) fn finish(mut self) -> Result<Staged<'a>> {
        if self.staged.bytes < OVERLAP_VERIFY_BYTES {
            self.sync()?;
            let actual = self.read_back()?;
            return self.verify(actual);
        }
        hash_held(&mut self.staged, self.body.as_deref());
        let (synced, actual) = std::thread::scope(|scope| {
            let sync = scope.spawn(|| self.sync());
            let actual = read_back_digest(self.target, &self.staged.guard.name, self.held());
            let synced = sync
                .join()
                .unwrap_or_else(|_| Err(Failure::Internal("fsync thread panicked".into())));
            (synced, actual)
        });
        synced?;
        let actual = actual?;
        self.verify(actual)
    }

    /// SHA-256 of the temp file as read back through a fresh descriptor (a body held in
    /// memory is hashed first, if it was not yet: [`hash_held`]).
    pub(super) fn read_back(&mut self) -> Result<String> {
        hash_held(&mut self.staged, self.body.as_deref());
        read_back_digest(self.target, &self.staged.guard.name, self.held())
    }

    /// The body held in memory, with the digest it was written under.
    fn held(&self) -> Option<(&[u8], &str)> {
        self.body
            .as_deref()
            .map(|b| (b, self.staged.sha256.as_str()))
    }

    /// Steps 3 and 4 with the fsync left for later: the read-back and comparison run now, and
    /// the fsync is started by the journal's leader once this write's row is in the journal
    /// file (the hook handed to [`crate::journal::Journal::commit_row_then`]),
    /// right before the journal's own `fdatasync`. Both syncs then start together, so a
    /// journaling filesystem makes the file and the row durable in one commit (started
    /// earlier, the file's commit often left the row for the next one: 2.1-2.8 commits a
    /// create against the floor's 2, counted with `scripts/commits-per-write.py`). Every
    /// body starts its writeback now (`sync_file_range`), before it is hashed and read back
    /// and before its row is written: the disk works meanwhile, and a filesystem that
    /// allocates blocks at writeback (ext4's delayed allocation) records the file's blocks in
    /// the transaction the row's sync will commit, not in the next one, which the file's
    /// fsync would then have to commit on its own (started only at 64 KiB, a 1 KB create
    /// took 2.21-2.23 commits and an overwrite 2.25-2.48; started always, 2.05-2.06 and
    /// 2.08). The rename must wait for
    /// [`PendingSync::waiter`]; nothing else in the protocol depends on the temp file being
    /// durable (a row durable before its file is one more case of the orphan row a crash
    /// before the rename already leaves; see the module doc).
    pub(super) fn verify_then_sync(self) -> Result<(Staged<'a>, PendingSync)> {
        let Written {
            target,
            file,
            mut staged,
            body,
        } = self;
        if staged.bytes > 0 {
            // Only a head start: the fsync writes whatever this did not.
            let _ = start_writeback(&file, 0, staged.bytes);
        }
        let pending = PendingSync::deferred(file);
        hash_held(&mut staged, body.as_deref());
        let held = body.as_deref().map(|b| (b, staged.sha256.as_str()));
        let staged = read_back_digest(target, &staged.guard.name, held)
            .and_then(|actual| compare(target, staged, actual))?;
        Ok((staged, pending))
    }

    /// Compare the read-back digest with what was written.
    pub(super) fn verify(self, actual: String) -> Result<Staged<'a>> {
        compare(self.target, self.staged, actual)
    }
}

/// SHA-256 of the temp file `tmp` as read back through a fresh descriptor. With the body
/// `held` in memory (and the digest it was written under), the file's bytes are compared
/// with it instead: identical bytes have that digest, so it is hashed only when they differ
/// (for the `write_corruption` envelope). One hash of the body instead of two.
fn read_back_digest(target: &Target, tmp: &[u8], held: Option<(&[u8], &str)>) -> Result<String> {
    let shown = target.display.as_str();
    let file = open_read_back(target, tmp)?;
    let read = match held {
        Some((body, digest)) => match holds_exactly(&file, body) {
            Ok(true) => Ok(digest.to_owned()),
            Ok(false) => crate::hash::sha256_reader(&file).map(|(d, _)| d),
            Err(e) => Err(e),
        },
        None => crate::hash::sha256_reader(&file).map(|(d, _)| d),
    };
    let digest = read.map_err(|e| Failure::io("read back temp file", shown, e))?;
    Ok(if fault("readback_mismatch") {
        sha256_hex(b"injected corruption")
    } else {
        digest
    })
}

/// Whether `file` holds exactly `body`: read through from its start (positioned reads, so
/// the descriptor's offset stays at 0 for a hash after a mismatch) and compared chunk by
/// chunk, a byte too many or too few counting as a difference.
fn holds_exactly(file: &File, body: &[u8]) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; body.len().clamp(1, 256 * 1024) + 1];
    let mut pos = 0usize;
    loop {
        let n = match file.read_at(&mut buf, pos as u64) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => other?,
        };
        if n == 0 {
            return Ok(pos == body.len());
        }
        match body.get(pos..pos + n) {
            Some(expected) if expected == &buf[..n] => pos += n,
            _ => return Ok(false),
        }
    }
}

/// `staged` if the read-back digest is the one of what was written, else `write_corruption`.
fn compare<'a>(target: &Target, staged: Staged<'a>, actual: String) -> Result<Staged<'a>> {
    if actual != staged.sha256 {
        return Err(Failure::Corruption {
            path: target.display.clone(),
            expected: staged.sha256.clone(),
            actual,
        });
    }
    Ok(staged)
}

/// A temp file's fsync, started once ([`PendingSync::start`]) on a worker thread
/// ([`crate::util::workers`]) and waited for by the rename. Clones share it.
#[derive(Clone)]
pub(super) struct PendingSync(crate::util::workers::Deferred);

/// The temp file's fsync (faults: `slow_fsync_temp` holds it 500 ms, `eio_fsync_temp` fails it).
fn sync_temp(file: &File) -> io::Result<()> {
    if fault("slow_fsync_temp") {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    if fault("eio_fsync_temp") {
        return Err(io::Error::from_raw_os_error(
            rustix::io::Errno::IO.raw_os_error(),
        ));
    }
    file.sync_all()
}

impl PendingSync {
    fn deferred(file: File) -> PendingSync {
        // `no_fsync_thread`: as where no thread can be had, the same fsync, on the thread
        // that starts it.
        let inline = fault("no_fsync_thread");
        PendingSync(crate::util::workers::Deferred::new(
            move || sync_temp(&file),
            inline,
        ))
    }

    /// Start the fsync, once (later calls do nothing).
    pub(super) fn start(&self) {
        self.0.start();
    }

    /// What the rename runs first: waits for the fsync (starting it, if nothing did yet); an
    /// error (the fsync failed) keeps the rename from happening. The error itself comes from
    /// [`PendingSync::finish`].
    pub(super) fn waiter(self) -> impl FnOnce() -> io::Result<()> + Send + 'static {
        move || self.0.wait()
    }

    /// Waits for the fsync and says how it ended; one never started (the write failed
    /// before its row was written) has nothing to report.
    pub(super) fn finish(self) -> io::Result<()> {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::holds_exactly;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> std::fs::File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn the_read_back_holds_exactly_the_body_or_differs() {
        // Sizes around the chunk (256 KiB) so a difference in a later chunk is read too.
        for len in [0usize, 1, 1000, 256 * 1024, 256 * 1024 + 1, 700_000] {
            let body: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            assert!(holds_exactly(&file_with(&body), &body).unwrap(), "{len}");
            let mut longer = body.clone();
            longer.push(b'x');
            assert!(
                !holds_exactly(&file_with(&longer), &body).unwrap(),
                "{len}+1"
            );
            if len > 0 {
                assert!(!holds_exactly(&file_with(&body[..len - 1]), &body).unwrap());
                for at in [0, len / 2, len - 1] {
                    let mut changed = body.clone();
                    changed[at] ^= 1;
                    assert!(!holds_exactly(&file_with(&changed), &body).unwrap(), "{at}");
                }
            }
        }
    }
}
