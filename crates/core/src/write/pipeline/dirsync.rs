//! Step 7 of the protocol (the module doc of [`super`] has all seven): writers of one directory
//! share its `fsync`. The invariant is the journal's commit queue's (`journal/group.rs`): no
//! write is acknowledged on the strength of a sync that began before its own rename. A writer
//! that renamed into a directory asks [`GroupSync::sync_after`] for a sync that starts after
//! its call (generation `started + 1` at the time of asking); if one is already running it
//! waits for that one to finish and for the next, which it may run itself. A counter, not
//! timing, says which sync covers whom.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Coalesced `fsync`s of one object (a directory): see the module's invariant.
#[derive(Debug, Default)]
pub struct GroupSync {
    state: Mutex<SyncState>,
    done: Condvar,
}

#[derive(Debug, Default)]
struct SyncState {
    /// Syncs started so far (the generation of the newest).
    started: u64,
    /// The newest generation finished.
    completed: u64,
    running: bool,
    /// The newest generation that failed, and why.
    failed: Option<(u64, String)>,
    /// Threads waiting for a generation (tests look).
    waiting: usize,
}

impl GroupSync {
    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Return once a sync that started after this call has finished, running `sync` if none
    /// is running. Returns the generation that covered the caller. A failure of any sync from
    /// the caller's generation on is reported (conservatively: never a success that was not).
    pub fn sync_after(&self, sync: impl FnOnce() -> io::Result<()>) -> io::Result<u64> {
        let mut st = self.lock();
        let need = st.started + 1;
        let mut sync = Some(sync);
        loop {
            if st.completed >= need {
                return match &st.failed {
                    Some((g, why)) if *g >= need => Err(io::Error::other(why.clone())),
                    _ => Ok(need),
                };
            }
            if !st.running
                && let Some(run) = sync.take()
            {
                st.running = true;
                st.started += 1;
                let generation = st.started;
                drop(st);
                let result = run();
                st = self.lock();
                st.running = false;
                st.completed = generation;
                if let Err(e) = result {
                    st.failed = Some((generation, e.to_string()));
                }
                if st.waiting > 0 {
                    self.done.notify_all();
                }
                continue;
            }
            st.waiting += 1;
            st = self.done.wait(st).unwrap_or_else(|p| p.into_inner());
            st.waiting -= 1;
        }
    }

    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.lock().waiting
    }
}

/// One [`GroupSync`] per directory (by device and inode), for the directory fsyncs of writes in
/// one process.
#[derive(Debug, Default)]
pub struct DirSyncs {
    dirs: Mutex<HashMap<(u64, u64), Arc<GroupSync>>>,
}

/// Directories remembered before the unused ones are forgotten.
const DIRS_KEPT: usize = 1024;

impl DirSyncs {
    /// Fsync directory `dir`, sharing the sync with writers of the same directory: returns once
    /// a sync of it that began after this call has finished.
    pub fn sync(&self, dir: &rustix::fd::OwnedFd) -> io::Result<()> {
        let st = rustix::fs::fstat(dir)?;
        let key = (st.st_dev, st.st_ino);
        let group = {
            let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
            if dirs.len() >= DIRS_KEPT {
                dirs.retain(|_, g| Arc::strong_count(g) > 1);
            }
            dirs.entry(key).or_default().clone()
        };
        group
            .sync_after(|| rustix::fs::fsync(dir).map_err(io::Error::from))
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    fn until(mut cond: impl FnMut() -> bool) {
        for _ in 0..10_000 {
            if cond() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("condition never held");
    }

    /// A directory sync already running when a writer asks does not cover it: the writer gets
    /// the next generation (and a second sync runs). Accepting the running one would return
    /// generation 1 after a single sync.
    #[test]
    fn a_directory_sync_running_before_the_call_does_not_cover_it() {
        let g = GroupSync::default();
        let runs = AtomicU64::new(0);
        let (entered_tx, entered_rx) = mpsc::channel::<()>();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        std::thread::scope(|s| {
            let first = s.spawn(|| {
                g.sync_after(|| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    entered_tx.send(()).unwrap();
                    release_rx.lock().unwrap().recv().unwrap();
                    Ok(())
                })
                .unwrap()
            });
            entered_rx.recv().unwrap();
            let second = s.spawn(|| {
                g.sync_after(|| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
                .unwrap()
            });
            until(|| g.waiting() == 1);
            release_tx.send(()).unwrap();
            assert_eq!(first.join().unwrap(), 1);
            assert_eq!(second.join().unwrap(), 2);
        });
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    /// Writers that ask while no sync is running share one; a failed sync is reported to
    /// every writer it was meant to cover.
    #[test]
    fn directory_syncs_coalesce_and_report_failures() {
        let g = GroupSync::default();
        let (entered_tx, entered_rx) = mpsc::channel::<()>();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let runs = AtomicU64::new(0);
        std::thread::scope(|s| {
            let first = s.spawn(|| {
                g.sync_after(|| {
                    entered_tx.send(()).unwrap();
                    release_rx.lock().unwrap().recv().unwrap();
                    Ok(())
                })
            });
            entered_rx.recv().unwrap();
            let waiters: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        g.sync_after(|| {
                            runs.fetch_add(1, Ordering::SeqCst);
                            Err(io::Error::other("disk gone"))
                        })
                    })
                })
                .collect();
            until(|| g.waiting() == 4);
            release_tx.send(()).unwrap();
            assert_eq!(first.join().unwrap().unwrap(), 1);
            for w in waiters {
                let e = w.join().unwrap().unwrap_err();
                assert!(e.to_string().contains("disk gone"));
            }
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1, "four waiters, one sync");
    }
}
