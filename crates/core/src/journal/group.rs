//! Group commit: the writers of one process share the journal's `fdatasync`.
//!
//! **The invariant.** No write is acknowledged on the strength of a sync that began before its
//! own data was written. A sync covers what was written before it *started*; a sync already
//! running when a row (or a rename) was made may have flushed the file before that data
//! existed. It is enforced with a counter, not with timing:
//!
//! - [`CommitQueue`] (the journal): a writer queues its row and the step that applies the write
//!   (the rename). One writer at a time is the leader: it takes every queued row, writes them
//!   with one `write(2)` under the journal's `flock`, releases the lock, *then* starts one
//!   `fdatasync`, then applies the writes in queue order, and hands each writer a
//!   [`Receipt`]: the tick of the event clock at which its row was written and the tick at
//!   which the sync that covers it began. A writer checks `sync_started > written` before it
//!   acknowledges anything; a row queued while a sync runs waits for the next batch (tested
//!   with a sync held open). A writer may also hand an [`OnWritten`] hook, which the leader
//!   runs once the batch's rows are in the file and before the batch's sync starts: the
//!   pipeline starts its temp file's and pre-image link's syncs there, so that a journaling
//!   filesystem makes them and the row durable in one commit.
//! - The directories' fsyncs after the renames are the pipeline's, under the same invariant
//!   (`write/pipeline/dirsync.rs`).
//!
//! Across processes nothing is shared but the `flock`, held only for the `write(2)` of a
//! batch: rows of two processes never interleave, and the syncs of separate processes run at
//! once, which a journaling filesystem completes as one commit where it can (the writers of
//! one directory, the only ones whose renames could conflict, are still serialised by the
//! pipeline's directory lock, held from the precondition to the rename).
//!
//! If applying a write fails (a rename refused) or the sync fails, the rows that will not
//! happen are taken back in place: their bytes become spaces (one blank line, which every
//! reader skips, the original's too), never cut, since rows of other processes may follow
//! them. Writers queued after a failed one in the batch (not yet applied) are queued again:
//! their rows are written again in the next batch, so no row ever names a write that did not
//! happen and no applied write loses its row.

use rustix::fs::FlockOperation;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// The step that applies a write once its row is durable (the rename), run by the leader
/// after the batch's sync, with the journal unlocked (the pipeline's directory lock excludes
/// other writers of the target). A failure takes the row back by blanking it in place.
pub type Apply = Box<dyn FnOnce() -> io::Result<()> + Send>;

/// Run by the leader once the writer's row is in the file and before the sync that covers it
/// starts (the pipeline starts its temp file's fsync here: the file and the row then go to
/// the disk together, in one journal commit where the filesystem has one).
pub type OnWritten = Box<dyn FnOnce() + Send>;

/// Why a queued write was not committed.
#[derive(Debug)]
pub enum CommitError {
    /// Appending or syncing the row failed: nothing was applied, no row is left.
    Append(io::Error),
    /// The row was durable but applying the write failed: the row was taken back.
    Apply(io::Error),
}

/// When a committed row was written and when the sync that made it durable began, on the
/// queue's event clock; `batch` is how many rows that sync covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    pub written: u64,
    pub sync_started: u64,
    pub batch: usize,
}

impl Receipt {
    /// The invariant: the sync began after the row was written.
    pub fn covers(&self) -> bool {
        self.sync_started > self.written
    }
}

struct Entry {
    id: u64,
    line: String,
    on_written: Option<OnWritten>,
    apply: Apply,
}

type Outcome = Result<Receipt, CommitError>;

#[derive(Default)]
struct State {
    next_id: u64,
    pending: VecDeque<Entry>,
    leading: bool,
    done: HashMap<u64, Outcome>,
    /// Writers waiting for their turn: nobody to wake (a lone writer) costs no `futex` call.
    waiting: usize,
}

/// How the leader makes the journal durable (`fdatasync`; tests hold it open).
pub(crate) type SyncFn = dyn Fn(&File) -> io::Result<()> + Send + Sync;

/// The journal's commit queue, shared by every clone of one [`super::Journal`].
pub struct CommitQueue {
    state: Mutex<State>,
    turn: Condvar,
    clock: AtomicU64,
    syncs: AtomicU64,
    /// Times waiting writers were woken (tests look).
    wakes: AtomicU64,
    sync: Box<SyncFn>,
}

impl std::fmt::Debug for CommitQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitQueue")
            .field("syncs", &self.syncs.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Default for CommitQueue {
    fn default() -> Self {
        CommitQueue::with_sync(Box::new(|f: &File| f.sync_data()))
    }
}

impl CommitQueue {
    pub(crate) fn with_sync(sync: Box<SyncFn>) -> CommitQueue {
        CommitQueue {
            state: Mutex::new(State::default()),
            turn: Condvar::new(),
            clock: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            wakes: AtomicU64::new(0),
            sync,
        }
    }

    /// How many journal syncs this queue has started (benchmarks and tests).
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    fn wakes(&self) -> u64 {
        self.wakes.load(Ordering::Relaxed)
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the state half-changed (every change
        // is one insert or drain), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue `line` (whole rows, newline-terminated) and `apply`; return once the rows are
    /// durable and `apply` ran, or with why not. `on_written` runs once the rows are in the
    /// file, before the sync that covers them starts (never if they could not be written).
    pub(crate) fn submit(
        &self,
        journal: &super::Journal,
        line: String,
        on_written: Option<OnWritten>,
        apply: Apply,
    ) -> Result<Receipt, CommitError> {
        let mut st = self.lock();
        let id = st.next_id;
        st.next_id += 1;
        st.pending.push_back(Entry {
            id,
            line,
            on_written,
            apply,
        });
        loop {
            if let Some(out) = st.done.remove(&id) {
                return match out {
                    Ok(r) if !r.covers() => Err(CommitError::Append(io::Error::other(
                        "journal group commit: the covering sync began before the row was written",
                    ))),
                    other => other,
                };
            }
            if !st.leading {
                st.leading = true;
                // Lead batches until this writer's own row is settled, then hand over.
                while !st.done.contains_key(&id) {
                    let batch: Vec<Entry> = st.pending.drain(..).collect();
                    drop(st);
                    let ids: Vec<u64> = batch.iter().map(|e| e.id).collect();
                    // A panic here must not leave the writers of the batch waiting forever.
                    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        self.run_batch(journal, batch)
                    }));
                    let (settled, again) = run.unwrap_or_else(|_| {
                        let failed = ids.into_iter().map(|id| {
                            let e = io::Error::other("journal group commit panicked");
                            (id, Err(CommitError::Append(e)))
                        });
                        (failed.collect(), Vec::new())
                    });
                    st = self.lock();
                    st.done.extend(settled);
                    for e in again.into_iter().rev() {
                        st.pending.push_front(e);
                    }
                    self.wake_waiting(&st);
                }
                st.leading = false;
                self.wake_waiting(&st);
                continue;
            }
            st.waiting += 1;
            st = self.turn.wait(st).unwrap_or_else(|p| p.into_inner());
            st.waiting -= 1;
        }
    }

    /// Wakes the writers waiting for their turn, if any (a `futex` call each time otherwise,
    /// two per write of a lone writer).
    fn wake_waiting(&self, st: &State) {
        if st.waiting > 0 {
            self.wakes.fetch_add(1, Ordering::Relaxed);
            self.turn.notify_all();
        }
    }

    /// Write one batch under the journal's lock, then sync and apply it. Returns the settled
    /// entries and those to queue again (after one whose apply failed).
    fn run_batch(
        &self,
        journal: &super::Journal,
        mut batch: Vec<Entry>,
    ) -> (Vec<(u64, Outcome)>, Vec<Entry>) {
        let fail_all = |batch: Vec<Entry>, e: io::Error| {
            let msg = e.to_string();
            let kind = e.kind();
            let raw = e.raw_os_error();
            batch
                .into_iter()
                .map(|en| {
                    let err = match raw {
                        Some(code) => io::Error::from_raw_os_error(code),
                        None => io::Error::new(kind, msg.clone()),
                    };
                    (en.id, Err(CommitError::Append(err)))
                })
                .collect::<Vec<_>>()
        };
        let mut file = match journal.open_for_append() {
            Ok(f) => f,
            Err(e) => return (fail_all(batch, e), Vec::new()),
        };
        if let Err(e) = rustix::fs::flock(&file, FlockOperation::LockExclusive) {
            return (fail_all(batch, e.into()), Vec::new());
        }
        let unlock = |file: &File| {
            let _ = rustix::fs::flock(file, FlockOperation::Unlock);
        };
        let offset = match super::Journal::cut_torn_tail(&file) {
            Ok(o) => o,
            Err(e) => {
                unlock(&file);
                return (fail_all(batch, e), Vec::new());
            }
        };
        let mut starts = Vec::with_capacity(batch.len());
        let mut bytes = String::with_capacity(batch.iter().map(|e| e.line.len()).sum());
        for e in &batch {
            starts.push(offset + bytes.len() as u64);
            bytes.push_str(&e.line);
        }
        if let Err(e) = write_whole(&mut file, bytes.as_bytes()) {
            let _ = file.set_len(offset);
            unlock(&file);
            return (fail_all(batch, e), Vec::new());
        }
        let end = offset + bytes.len() as u64;
        // The rows are in the file, whole: the lock is not held across the sync, so the
        // writers of other processes append and sync meanwhile, and the kernel makes their
        // syncs and this one one commit where it can. A row of ours that must go (its write
        // will not happen) is blanked in place from here on, never cut: rows of other
        // processes may follow it.
        unlock(&file);
        for e in &mut batch {
            if let Some(started) = e.on_written.take() {
                started();
            }
        }
        let written = self.tick();
        let sync_started = self.tick();
        self.syncs.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = (self.sync)(&file) {
            // Never leave rows behind for writes that will not happen.
            blank(&file, offset, end);
            return (fail_all(batch, e), Vec::new());
        }
        let receipt = Receipt {
            written,
            sync_started,
            batch: batch.len(),
        };
        let mut settled = Vec::with_capacity(batch.len());
        let mut rest = batch.into_iter().enumerate();
        let mut again = Vec::new();
        for (i, e) in rest.by_ref() {
            match (e.apply)() {
                Ok(()) => settled.push((e.id, Ok(receipt))),
                Err(err) => {
                    // Blank this row and every later one of the batch (none applied yet);
                    // those are queued again and written anew by the next batch.
                    blank(&file, starts[i], end);
                    settled.push((e.id, Err(CommitError::Apply(err))));
                    break;
                }
            }
        }
        again.extend(rest.map(|(_, e)| e));
        (settled, again)
    }
}

/// Take back rows `[from, to)` of the journal (whole lines of one batch, ending in a newline)
/// without moving any other: the bytes become spaces, the last newline stays, so the range is
/// one blank line, which every reader skips (the original's too), then synced. The journal is
/// not locked: rows of other processes may follow, and they are not touched.
fn blank(file: &File, from: u64, to: u64) {
    use std::os::unix::fs::FileExt;
    if to <= from {
        return;
    }
    let spaces = vec![b' '; (to - from - 1) as usize];
    // A positioned write on an O_APPEND descriptor would append: drop the flag first (this
    // descriptor appends nothing more).
    let done = rustix::fs::fcntl_setfl(file, rustix::fs::OFlags::empty())
        .map_err(io::Error::from)
        .and_then(|()| file.write_all_at(&spaces, from))
        .and_then(|()| file.sync_data());
    if let Err(e) = done {
        tracing::error!("journal: taking back rows of a write that did not happen failed: {e}");
    }
}

/// One `write(2)` of `bytes`; a short write (the disk or a quota filled mid-row) reports why.
pub(crate) fn write_whole(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    let n = file.write(bytes)?;
    if n != bytes.len() {
        // Writing the rest tells why (ENOSPC, EDQUOT, EFBIG), so the envelope says
        // quota_exceeded; the caller cuts the partial rows off either way.
        return Err(match file.write(&bytes[n..]) {
            Err(e) => e,
            Ok(_) => io::Error::new(
                io::ErrorKind::WriteZero,
                "short write appending a journal row",
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Journal, JournalRow, new_journal_id, now_rfc3339};
    use std::collections::BTreeMap;
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    fn line(path: &str) -> String {
        JournalRow {
            journal_id: new_journal_id(),
            ts: now_rfc3339(),
            path: path.into(),
            sha256: "00".into(),
            prev_sha256: None,
            bytes: 1,
            mode: "create".into(),
            caller: "test".into(),
            tool: "safe_write".into(),
            extra: BTreeMap::new(),
        }
        .to_line()
    }

    fn ok() -> Apply {
        Box::new(|| Ok(()))
    }

    /// Wait (bounded) until `cond` holds.
    fn until(mut cond: impl FnMut() -> bool) {
        for _ in 0..10_000 {
            if cond() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("condition never held");
    }

    fn paths(j: &Journal) -> Vec<String> {
        let (rows, _) = j.tail(1000, |_| true).unwrap();
        rows.iter()
            .map(|r| r["path"].as_str().unwrap().to_string())
            .collect()
    }

    /// A queue whose every sync says it began (`entered`) and waits to be let go (`release`).
    fn held_sync() -> (CommitQueue, mpsc::Receiver<()>, mpsc::Sender<()>) {
        let (entered_tx, entered_rx) = mpsc::channel::<()>();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let entered_tx = Mutex::new(entered_tx);
        let queue = CommitQueue::with_sync(Box::new(move |f: &File| {
            let _ = entered_tx.lock().unwrap().send(());
            release_rx.lock().unwrap().recv().unwrap();
            f.sync_data()
        }));
        (queue, entered_rx, release_tx)
    }

    /// A row queued while a sync is running is not acknowledged by that sync: it waits for
    /// one that started after its row was written. A queue that let it ride on the running
    /// sync would hand it a receipt from the first sync (and start only one).
    #[test]
    fn a_row_queued_during_a_sync_waits_for_a_sync_that_starts_after_it() {
        let t = tempfile::tempdir().unwrap();
        let (queue, entered_rx, release_tx) = held_sync();
        let j = Journal::with_queue(t.path(), Arc::new(queue));
        std::thread::scope(|s| {
            let first = s.spawn(|| j.commit_line(line("first"), None, ok()).unwrap());
            entered_rx.recv().unwrap(); // the first sync is running
            let second = s.spawn(|| j.commit_line(line("second"), None, ok()).unwrap());
            // The second row is queued (not written) while the first sync runs.
            until(|| j.queue().lock().pending.len() == 1);
            release_tx.send(()).unwrap(); // first sync ends
            let a = first.join().unwrap();
            // A second sync starts, for the second row (a queue that acknowledged it with the
            // first sync would start none).
            entered_rx
                .recv_timeout(Duration::from_secs(60))
                .expect("a second sync");
            release_tx.send(()).unwrap();
            let b = second.join().unwrap();
            assert!(a.covers() && b.covers());
            assert!(b.written > a.sync_started, "{a:?} {b:?}");
            assert!(b.sync_started > a.sync_started);
            assert_eq!((a.batch, b.batch), (1, 1));
        });
        assert_eq!(j.queue().syncs(), 2);
        assert_eq!(paths(&j), ["first", "second"]);
    }

    /// Writers queued together share one sync, and each one's row lands once.
    #[test]
    fn concurrent_writers_share_syncs_and_every_row_lands_once() {
        let t = tempfile::tempdir().unwrap();
        let (queue, entered_rx, release_tx) = held_sync();
        let j = Journal::with_queue(t.path(), Arc::new(queue));
        std::thread::scope(|s| {
            let first = s.spawn(|| j.commit_line(line("w0"), None, ok()).unwrap());
            entered_rx.recv().unwrap();
            let rest: Vec<_> = (1..8)
                .map(|i| {
                    let j = &j;
                    s.spawn(move || j.commit_line(line(&format!("w{i}")), None, ok()).unwrap())
                })
                .collect();
            until(|| j.queue().lock().pending.len() == 7);
            release_tx.send(()).unwrap();
            entered_rx.recv().unwrap();
            release_tx.send(()).unwrap();
            first.join().unwrap();
            for h in rest {
                let r = h.join().unwrap();
                assert_eq!(r.batch, 7, "the seven queued rows share one sync");
                assert!(r.covers());
            }
        });
        assert_eq!(j.queue().syncs(), 2);
        assert!(j.queue().wakes() > 0, "the queued writers were woken");
        let mut got = paths(&j);
        got.sort();
        let mut want: Vec<String> = (0..8).map(|i| format!("w{i}")).collect();
        want.sort();
        assert_eq!(got, want);
    }

    /// A writer alone leads its own batch and has nobody to wake: no `futex` call per write
    /// (two before, each a system call for nothing).
    #[test]
    fn a_lone_writer_wakes_nobody() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::with_queue(t.path(), Arc::new(CommitQueue::default()));
        for i in 0..5 {
            j.commit_line(line(&format!("w{i}")), None, ok()).unwrap();
        }
        assert_eq!(j.queue().syncs(), 5);
        assert_eq!(j.queue().wakes(), 0);
        assert_eq!(paths(&j), ["w0", "w1", "w2", "w3", "w4"]);
    }

    /// A failed apply takes its own row back by blanking it in place (rows of other processes
    /// may follow it); rows queued after it in the same batch are written again and applied,
    /// so every applied write has exactly one row.
    #[test]
    fn a_failed_apply_blanks_its_row_and_requeues_the_rows_after_it() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        let q = j.queue().clone();
        let batch = vec![
            Entry {
                id: 100,
                line: line("a"),
                on_written: None,
                apply: ok(),
            },
            Entry {
                id: 101,
                line: line("refused"),
                on_written: None,
                apply: Box::new(|| Err(io::Error::from_raw_os_error(17))),
            },
            Entry {
                id: 102,
                line: line("c"),
                on_written: None,
                apply: Box::new(|| panic!("applied before its row was rewritten")),
            },
        ];
        let (settled, again) = q.run_batch(&j, batch);
        assert_eq!(settled.len(), 2);
        assert!(settled[0].1.is_ok());
        assert!(matches!(settled[1].1, Err(CommitError::Apply(_))));
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].id, 102);
        assert_eq!(paths(&j), ["a"]);
        let raw = std::fs::read_to_string(j.path()).unwrap();
        assert!(
            raw.lines()
                .skip(1)
                .take(2)
                .all(|l| l.trim().is_empty() && !l.is_empty()),
            "the refused row and the one after it are blanks, not cut: {raw:?}"
        );
        let (settled, again) = q.run_batch(
            &j,
            vec![Entry {
                id: 102,
                line: line("c"),
                on_written: None,
                apply: ok(),
            }],
        );
        assert!(settled[0].1.is_ok() && again.is_empty());
        assert_eq!(paths(&j), ["a", "c"]);
        // Through the queue, a refused apply is the caller's error and leaves no row.
        let err = j
            .commit_line(
                line("refused"),
                None,
                Box::new(|| Err(io::Error::from_raw_os_error(17))),
            )
            .unwrap_err();
        assert!(matches!(err, CommitError::Apply(_)));
        assert_eq!(paths(&j), ["a", "c"]);
    }

    /// A writer's `on_written` runs once its row is in the file and before the sync that
    /// covers it starts (the pipeline starts its temp file's fsync there, so the file and the
    /// row reach the disk in one commit), and never when the row could not be written.
    #[test]
    fn on_written_runs_after_the_row_is_written_and_before_its_sync() {
        let t = tempfile::tempdir().unwrap();
        let events = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = Arc::clone(&events);
        let queue = CommitQueue::with_sync(Box::new(move |f: &File| {
            seen.lock().unwrap().push("sync".into());
            f.sync_data()
        }));
        let j = Journal::with_queue(t.path(), Arc::new(queue));
        let journal_file = j.path().to_path_buf();
        let seen = Arc::clone(&events);
        let on_written: OnWritten = Box::new(move || {
            let text = std::fs::read_to_string(&journal_file).unwrap_or_default();
            seen.lock()
                .unwrap()
                .push(format!("written:{}", text.contains("\"hooked\"")));
        });
        let receipt = j
            .commit_line(line("hooked"), Some(on_written), ok())
            .unwrap();
        assert!(receipt.covers());
        assert_eq!(*events.lock().unwrap(), ["written:true", "sync"]);

        // A row that cannot be written (the journal's place is a directory): no hook.
        let blocked = tempfile::tempdir().unwrap();
        std::fs::create_dir(blocked.path().join(super::super::JOURNAL_FILE)).unwrap();
        let j = Journal::new(blocked.path());
        let ran = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&ran);
        let hook: OnWritten = Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        });
        let err = j.commit_line(line("never"), Some(hook), ok()).unwrap_err();
        assert!(matches!(err, CommitError::Append(_)));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }

    /// The journal's lock is not held across the sync: another process (here, another
    /// descriptor) can append its own row while this batch's sync runs, so the two syncs can
    /// be one commit of the filesystem. A queue holding the lock would make the other wait.
    #[test]
    fn the_journal_is_unlocked_while_a_batch_syncs() {
        let t = tempfile::tempdir().unwrap();
        let (queue, entered_rx, release_tx) = held_sync();
        let j = Journal::with_queue(t.path(), Arc::new(queue));
        std::thread::scope(|s| {
            let first = s.spawn(|| j.commit_line(line("first"), None, ok()).unwrap());
            entered_rx.recv().unwrap(); // its sync is running
            let other = j.open_for_append().unwrap();
            rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive)
                .expect("the journal is not locked during the sync");
            let _ = rustix::fs::flock(&other, FlockOperation::Unlock);
            release_tx.send(()).unwrap();
            assert!(first.join().unwrap().covers());
        });
    }

    /// A row taken back after its batch's lock was released is blanked in place: a row that
    /// another process appended after it meanwhile stays, and the file still reads as rows
    /// (the taken-back range is one blank line, which readers skip).
    #[test]
    fn a_row_taken_back_is_blanked_and_rows_after_it_stay() {
        let t = tempfile::tempdir().unwrap();
        let j = Journal::new(t.path());
        let q = j.queue().clone();
        let jj = j.clone();
        let batch = vec![
            Entry {
                id: 1,
                line: line("kept"),
                on_written: None,
                apply: ok(),
            },
            Entry {
                id: 2,
                line: line("refused"),
                on_written: None,
                apply: Box::new(move || {
                    // Another process appends after this batch before the rename fails.
                    let mut other = jj.open_for_append()?;
                    other.write_all(line("theirs").as_bytes())?;
                    Err(io::Error::from_raw_os_error(17))
                }),
            },
        ];
        let (settled, again) = q.run_batch(&j, batch);
        assert!(settled[0].1.is_ok() && matches!(settled[1].1, Err(CommitError::Apply(_))));
        assert!(again.is_empty());
        assert_eq!(paths(&j), ["kept", "theirs"]);
        let text = std::fs::read_to_string(j.path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[1].trim().is_empty() && !lines[1].is_empty(), "{text}");
        assert!(!text.contains("refused"));
        assert_eq!(
            j.check_lines(|_, _| {}).unwrap().corrupt,
            Vec::<usize>::new()
        );
    }
}
