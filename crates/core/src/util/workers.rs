//! Threads kept alive for the work the write pipeline hands off (a temp file's `fsync` run
//! while the journal row is synced). Starting a thread per write cost more than the overlap
//! saved on small files (a `clone3`, a stack mapped and unmapped, a dozen set-up calls, and
//! the new thread's first wake-up): a worker that has finished a job waits for the next one,
//! and one idle for `LINGER` exits. There are as many workers as jobs ever ran at once
//! (one per concurrent write), none while nothing is written.

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// A job: runs once, on a worker.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle worker waits for a job before it exits.
const LINGER: Duration = Duration::from_secs(30);

/// A worker's stack: the jobs are system calls and a few frames.
const STACK: usize = 256 * 1024;

struct Idle {
    /// Idle workers, each by its id and the sender of its own queue.
    workers: Vec<(u64, Sender<Job>)>,
    next_id: u64,
}

/// A set of workers. The process has one ([`run_job`], [`start`]); tests make their own.
pub struct Workers {
    idle: Mutex<Idle>,
}

static POOL: Workers = Workers::new();

/// Run `job` on one of the process's workers (see [`Workers::run_job`]).
pub fn run_job(job: Job) -> Result<(), Job> {
    POOL.run_job(job)
}

impl Workers {
    pub const fn new() -> Workers {
        Workers {
            idle: Mutex::new(Idle {
                workers: Vec::new(),
                next_id: 0,
            }),
        }
    }

    fn idle(&self) -> MutexGuard<'_, Idle> {
        // Every change under the lock is one push, pop or remove: a poisoned lock is whole.
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `job` on a worker: an idle one, or a new one. Gives the job back when no thread
    /// can be started (a process at its thread limit), for the caller to run itself.
    pub fn run_job(&'static self, job: Job) -> Result<(), Job> {
        let mut job = job;
        loop {
            let popped = self.idle().workers.pop();
            let Some((_, queue)) = popped else { break };
            match queue.send(job) {
                Ok(()) => return Ok(()),
                // Cannot happen while a worker leaves the idle list before it exits; should
                // it, the next idle worker (or a new one) takes the job.
                Err(mpsc::SendError(back)) => job = back,
            }
        }
        let (queue, jobs) = mpsc::channel::<Job>();
        let id = {
            let mut idle = self.idle();
            idle.next_id += 1;
            idle.next_id
        };
        let spawned = std::thread::Builder::new()
            .name("rw-sync".into())
            .stack_size(STACK)
            .spawn({
                let queue = queue.clone();
                move || self.work(id, queue, jobs)
            });
        if spawned.is_err() {
            return Err(job);
        }
        // The new worker's first job: sent after the spawn, so a failed spawn gives it back.
        queue.send(job).map_err(|mpsc::SendError(back)| back)
    }

    fn work(&self, id: u64, queue: Sender<Job>, jobs: mpsc::Receiver<Job>) {
        loop {
            let job = match jobs.recv_timeout(LINGER) {
                Ok(job) => job,
                Err(RecvTimeoutError::Timeout) => {
                    let mut idle = self.idle();
                    match idle.workers.iter().position(|(w, _)| *w == id) {
                        Some(at) => {
                            idle.workers.remove(at);
                            return;
                        }
                        // A caller popped this worker and its job is on the way.
                        None => continue,
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            // A job that panics takes nothing else down (its own result reports it).
            let _ = catch_unwind(AssertUnwindSafe(job));
            self.idle().workers.push((id, queue.clone()));
        }
    }
}

impl Default for Workers {
    fn default() -> Self {
        Workers::new()
    }
}

/// The outcome of an I/O job started with [`start`], waited for by whoever needs it done
/// (several threads may: a rename waits for a fsync, and so does the write that started it).
#[derive(Clone)]
pub struct Pending(Arc<Slot>);

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ended = self.0.result.lock().map(|r| r.is_some()).unwrap_or(true);
        f.debug_struct("Pending").field("ended", &ended).finish()
    }
}

#[derive(Default)]
struct Slot {
    result: Mutex<Option<io::Result<()>>>,
    ended: Condvar,
}

impl Slot {
    /// Records how the job ended and wakes whoever waits.
    fn end(&self, result: io::Result<()>) {
        *self.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        self.ended.notify_all();
    }

    /// Waits for the job to end: `Ok`, or an error saying it failed; with `take`, the error
    /// itself (once; later waits get a stand-in).
    fn ended(&self, take: bool) -> io::Result<()> {
        let failed = || io::Error::other("an I/O job failed");
        let mut result = self.result.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match result.as_ref() {
                Some(Ok(())) => return Ok(()),
                Some(Err(_)) if take => {
                    return result
                        .replace(Err(failed()))
                        .unwrap_or_else(|| Err(failed()));
                }
                Some(Err(e)) => return Err(io::Error::new(e.kind(), e.to_string())),
                None => result = self.ended.wait(result).unwrap_or_else(|p| p.into_inner()),
            }
        }
    }
}

/// Start `job` on a worker; where no thread can be had (or `inline`), it runs here, now.
/// A job that panics ends as an error, so nobody waits for it forever.
pub fn start(job: impl FnOnce() -> io::Result<()> + Send + 'static, inline: bool) -> Pending {
    let slot = Arc::new(Slot::default());
    let run: Job = {
        let slot = Arc::clone(&slot);
        Box::new(move || {
            let result = catch_unwind(AssertUnwindSafe(job))
                .unwrap_or_else(|_| Err(io::Error::other("an I/O job panicked")));
            slot.end(result);
        })
    };
    let handed = if inline { Err(run) } else { run_job(run) };
    if let Err(run) = handed {
        run();
    }
    Pending(slot)
}

impl Pending {
    /// Waits for the job to end: `Ok`, or an error saying it failed.
    pub fn wait(&self) -> io::Result<()> {
        self.ended(false)
    }

    /// Waits for the job to end and takes its error itself (once; later waits get a
    /// stand-in error).
    pub fn take(&self) -> io::Result<()> {
        self.ended(true)
    }

    fn ended(&self, take: bool) -> io::Result<()> {
        self.0.ended(take)
    }
}

#[cfg(test)]
thread_local! {
    /// [`Deferred`] jobs started on this thread (the pipeline's tests check when).
    pub(crate) static STARTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// An I/O job to start later, once ([`Deferred::start`]), on a worker, and to wait for;
/// clones share it. The pipeline starts a write's syncs together (its temp file's, its
/// pre-image link's) once its journal row is written. Whoever waits for a job that no worker
/// has taken yet runs it itself: where syncs cost nothing (tmpfs), the writer would otherwise
/// sleep until a worker woke for a job it can do at once.
#[derive(Clone)]
pub struct Deferred(Arc<DeferredSlot>);

type IoJob = Box<dyn FnOnce() -> io::Result<()> + Send + 'static>;

struct DeferredSlot {
    /// The job until a thread takes it to run it.
    job: Mutex<Option<IoJob>>,
    /// Runs on the thread that starts it (see [`start`]).
    inline: bool,
    started: std::sync::atomic::AtomicBool,
    slot: Slot,
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deferred")
            .field("started", &self.is_started())
            .finish()
    }
}

impl Deferred {
    /// `job`, not started yet; `inline` runs it on the thread that starts it (see [`start`]).
    pub fn new(job: impl FnOnce() -> io::Result<()> + Send + 'static, inline: bool) -> Deferred {
        Deferred(Arc::new(DeferredSlot {
            job: Mutex::new(Some(Box::new(job))),
            inline,
            started: std::sync::atomic::AtomicBool::new(false),
            slot: Slot::default(),
        }))
    }

    fn is_started(&self) -> bool {
        self.0.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Starts the job (once: later calls do nothing). Returns whether this call started it.
    pub fn start(&self) -> bool {
        self.start_on(|job| POOL.run_job(job))
    }

    /// [`Deferred::start`], handing the job to `spawn` (which gives it back when it cannot
    /// run it; then it runs here).
    fn start_on(&self, spawn: impl FnOnce(Job) -> Result<(), Job>) -> bool {
        if self
            .0
            .started
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return false;
        }
        #[cfg(test)]
        STARTED.with(|n| n.set(n.get() + 1));
        let me = self.clone();
        let run: Job = Box::new(move || me.run_here());
        if self.0.inline {
            run();
        } else if let Err(run) = spawn(run) {
            run();
        }
        true
    }

    /// Runs the job on this thread unless a thread has taken it already.
    fn run_here(&self) {
        let job = self.0.job.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(job) = job {
            let result = catch_unwind(AssertUnwindSafe(job))
                .unwrap_or_else(|_| Err(io::Error::other("an I/O job panicked")));
            self.0.slot.end(result);
        }
    }

    /// Waits for the job to end, starting it first if nothing did, and running it here if no
    /// worker has taken it yet.
    pub fn wait(&self) -> io::Result<()> {
        self.start();
        self.run_here();
        self.ended(false)
    }

    /// Waits for a started job and takes its error (once; later calls get a stand-in); a job
    /// never started has nothing to report and is dropped unrun.
    pub fn finish(&self) -> io::Result<()> {
        if !self.is_started() {
            self.0.job.lock().unwrap_or_else(|p| p.into_inner()).take();
            return Ok(());
        }
        self.run_here();
        self.ended(true)
    }

    fn ended(&self, take: bool) -> io::Result<()> {
        self.0.slot.ended(take)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A deferred job that no worker has taken when it is waited for runs on the waiting
    /// thread, once: the worker that gets to it later finds nothing to do.
    #[test]
    fn a_deferred_job_no_worker_took_runs_on_the_waiting_thread_once() {
        let runs = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&runs);
        let d = Deferred::new(
            move || {
                seen.lock().unwrap().push(std::thread::current().id());
                Ok(())
            },
            false,
        );
        let parked: Arc<Mutex<Vec<Job>>> = Arc::default();
        let keep = Arc::clone(&parked);
        assert!(d.start_on(|job| {
            keep.lock().unwrap().push(job);
            Ok(())
        }));
        assert!(!d.start(), "started twice");
        d.wait().unwrap();
        assert_eq!(*runs.lock().unwrap(), [std::thread::current().id()]);
        // The worker's turn comes: nothing is left to run.
        for job in parked.lock().unwrap().drain(..) {
            job();
        }
        assert_eq!(runs.lock().unwrap().len(), 1);
        d.finish().unwrap();
    }

    /// A job a worker has taken is waited for, not run again; its error reaches the waiter,
    /// and `finish` takes it; a job never started is never run.
    #[test]
    fn a_deferred_job_a_worker_runs_is_waited_for_and_reports_its_error() {
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let go_rx = Mutex::new(go_rx);
        let d = Deferred::new(
            move || {
                go_rx.lock().unwrap().recv().unwrap();
                Err(io::Error::from_raw_os_error(5))
            },
            false,
        );
        let worker = std::sync::Arc::new(Mutex::new(None));
        let slot = Arc::clone(&worker);
        d.start_on(|job| {
            *slot.lock().unwrap() = Some(std::thread::spawn(job));
            Ok(())
        });
        // Wait until the worker holds the job, then let it finish.
        for _ in 0..1000 {
            if d.0.job.lock().unwrap().is_none() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            d.0.job.lock().unwrap().is_none(),
            "the worker never took the job"
        );
        go_tx.send(()).unwrap();
        assert_eq!(d.wait().unwrap_err().raw_os_error(), None); // a copy: kind and text
        assert_eq!(d.finish().unwrap_err().raw_os_error(), Some(5));
        worker.lock().unwrap().take().unwrap().join().unwrap();

        let never = Deferred::new(|| panic!("a job never started ran"), false);
        never.finish().unwrap();
    }

    /// A set of workers of the test's own (none of another test's in its idle list).
    fn pool() -> &'static Workers {
        Box::leak(Box::new(Workers::new()))
    }

    /// The id of the thread a job ran on.
    fn ran_on(pool: &'static Workers) -> std::thread::ThreadId {
        let (tx, rx) = mpsc::channel();
        pool.run_job(Box::new(move || {
            let _ = tx.send(std::thread::current().id());
        }))
        .unwrap_or_else(|_| panic!("no worker"));
        rx.recv_timeout(Duration::from_secs(10)).expect("job ran")
    }

    /// Waits until `pool` has `n` idle workers (a worker goes back to the list right after
    /// its job has sent its result).
    fn idle_workers(pool: &'static Workers, n: usize) {
        for _ in 0..1000 {
            if pool.idle().workers.len() == n {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("{n} idle workers expected");
    }

    #[test]
    fn a_worker_runs_one_job_after_another_without_a_new_thread() {
        let pool = pool();
        let first = ran_on(pool);
        assert_ne!(first, std::thread::current().id());
        for _ in 0..5 {
            idle_workers(pool, 1);
            assert_eq!(ran_on(pool), first, "a second thread for one job at a time");
        }
    }

    #[test]
    fn jobs_at_once_run_at_once() {
        // Each job waits for the other: on one thread, or one after another, neither ends.
        let pool = pool();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let (tx, rx) = mpsc::channel();
        for _ in 0..2 {
            let (barrier, tx) = (barrier.clone(), tx.clone());
            pool.run_job(Box::new(move || {
                barrier.wait();
                let _ = tx.send(());
            }))
            .unwrap_or_else(|_| panic!("no worker"));
        }
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("both jobs ran together");
        }
        idle_workers(pool, 2);
    }

    #[test]
    fn a_failed_job_gives_its_error_to_take_and_a_stand_in_to_every_other_wait() {
        let pending = start(|| Err(io::Error::from_raw_os_error(5)), false);
        let seen = pending.wait().unwrap_err();
        assert_eq!(seen.kind(), io::Error::from_raw_os_error(5).kind());
        assert_eq!(pending.take().unwrap_err().raw_os_error(), Some(5));
        // Taken: later waits still end, with an error.
        assert!(pending.wait().is_err());
        assert!(pending.take().is_err());
        let inline = start(|| Ok(()), true);
        assert!(inline.wait().is_ok() && inline.take().is_ok());
    }

    #[test]
    fn a_job_that_panics_leaves_its_worker_serving() {
        let pool = pool();
        let (tx, rx) = mpsc::channel();
        let _ = pool.run_job(Box::new(move || {
            let _ = tx.send(std::thread::current().id());
            panic!("job panics");
        }));
        let panicked_on = rx.recv_timeout(Duration::from_secs(10)).expect("job ran");
        idle_workers(pool, 1);
        assert_eq!(
            ran_on(pool),
            panicked_on,
            "the worker did not take a job again"
        );
    }

    #[test]
    fn a_panicking_io_job_ends_as_an_error() {
        let pending = start(|| panic!("job panics"), false);
        assert!(pending.wait().is_err());
    }
}
