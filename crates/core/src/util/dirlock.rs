//! The directory lock: `flock(LOCK_EX)` on a directory's handle, the write pipeline's step 1
//! (`write/pipeline/mod.rs`). Whoever writes into a workspace or state directory, or reads a
//! file there to journal it, takes it: the pipeline's commits, the scratchpad's index appends,
//! the agents' hooks journaling a native edit or a shell command. So a running server, other
//! servers on the same workspace and concurrent hooks never interleave in one directory.
//!
//! Guarantees: the lock is released when its guard is dropped, on every exit path (a panic
//! included); several directories are locked each once (by device and inode, so two handles
//! of one directory do not deadlock on each other) and in one order every taker shares, so
//! two takers of overlapping sets never deadlock.

use rustix::fd::BorrowedFd;
use rustix::fs::FlockOperation;
use std::io;

/// Holds the lock on one directory; released when dropped.
#[derive(Debug)]
pub struct DirLock<'a>(BorrowedFd<'a>);

impl<'a> DirLock<'a> {
    /// Wait for the lock on `dir` and take it.
    pub fn take(dir: BorrowedFd<'a>) -> io::Result<DirLock<'a>> {
        rustix::fs::flock(dir, FlockOperation::LockExclusive)?;
        Ok(DirLock(dir))
    }
}

impl Drop for DirLock<'_> {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(self.0, FlockOperation::Unlock);
    }
}

/// Holds the locks on several directories; released when dropped.
#[derive(Debug)]
pub struct DirLocks<'a>(Vec<DirLock<'a>>);

/// Why [`DirLocks::take`] failed: which of the directories, at which step.
#[derive(Debug)]
pub struct NotLocked {
    /// The index of the directory in the list given.
    pub index: usize,
    /// `"stat directory"` or `"lock"`.
    pub op: &'static str,
    pub error: io::Error,
}

impl<'a> DirLocks<'a> {
    /// Lock every directory of `dirs` once, in the order of `(st_dev, st_ino)`. On failure the
    /// locks already taken are released.
    pub fn take(dirs: impl IntoIterator<Item = BorrowedFd<'a>>) -> Result<DirLocks<'a>, NotLocked> {
        let mut ids = Vec::new();
        for (index, dir) in dirs.into_iter().enumerate() {
            let st = rustix::fs::fstat(dir).map_err(|e| NotLocked {
                index,
                op: "stat directory",
                error: e.into(),
            })?;
            ids.push(((st.st_dev as u64, st.st_ino as u64), index, dir));
        }
        ids.sort_by_key(|(id, _, _)| *id);
        ids.dedup_by_key(|(id, _, _)| *id);
        let mut held = Vec::with_capacity(ids.len());
        for (_, index, dir) in ids {
            held.push(DirLock::take(dir).map_err(|error| NotLocked {
                index,
                op: "lock",
                error,
            })?);
        }
        Ok(DirLocks(held))
    }

    /// The directories locked, in the order they were locked (each once).
    pub fn dirs(&self) -> impl Iterator<Item = BorrowedFd<'a>> + '_ {
        self.0.iter().map(|l| l.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fd::AsFd;
    use std::fs::File;

    /// Whether another open file description could take `path`'s lock now (it is not held).
    fn is_free(path: &std::path::Path) -> bool {
        let other = File::open(path).unwrap();
        let free = rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive).is_ok();
        let _ = rustix::fs::flock(&other, FlockOperation::Unlock);
        free
    }

    #[test]
    fn a_held_lock_excludes_other_handles_until_it_is_dropped() {
        let t = tempfile::tempdir().unwrap();
        let dir = File::open(t.path()).unwrap();
        let lock = DirLock::take(dir.as_fd()).unwrap();
        assert!(!is_free(t.path()));
        drop(lock);
        assert!(is_free(t.path()));
    }

    #[test]
    fn several_directories_are_locked_each_once_and_released_together() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        // Two handles of `a`: locking the second would wait for the first forever.
        let handles = [
            File::open(&b).unwrap(),
            File::open(&a).unwrap(),
            File::open(&a).unwrap(),
        ];
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let locks = DirLocks::take(handles.iter().map(AsFd::as_fd)).unwrap();
            let held = (locks.dirs().count(), is_free(&a), is_free(&b));
            drop(locks);
            tx.send((held, is_free(&a) && is_free(&b))).unwrap();
        });
        let (held, released) = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("DirLocks::take waited on a directory it already held");
        assert_eq!(held, (2, false, false));
        assert!(released);
    }
}
