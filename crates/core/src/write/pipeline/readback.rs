//! Step 4 of the protocol (the module doc of [`super`] has all seven): the temp file read back
//! through a fresh descriptor and hashed, and the digest compared with that of what was
//! written. A mismatch removes the temp file and fails with `write_corruption`; the target is
//! untouched.

use super::fault;
use super::temp::{Published, Staged, Written, open_read_back};
use crate::envelope::{Failure, Result};
use crate::hash::sha256_hex;
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
    pub(super) fn finish(self) -> Result<Staged<'a>> {
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

    /// SHA-256 of the temp file as read back through a fresh descriptor.
    pub(super) fn read_back(&self) -> Result<String> {
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
    pub(super) fn verify(self, actual: String) -> Result<Staged<'a>> {
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
