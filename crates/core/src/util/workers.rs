//! Threads kept alive for the work the write pipeline hands off (a temp file's `fsync` run
//! while the journal row is synced). Starting a thread per write cost more than the overlap
//! saved on small files (a `clone3`, a stack mapped and unmapped, a dozen set-up calls, and
//! the new thread's first wake-up): a worker that has finished a job waits for the next one,
//! and one idle for [`LINGER`] exits. There are as many workers as jobs ever ran at once
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

static IDLE: Mutex<Idle> = Mutex::new(Idle {
    workers: Vec::new(),
    next_id: 0,
});

fn idle() -> MutexGuard<'static, Idle> {
    // Every change under the lock is one push, pop or remove: a poisoned lock is still whole.
    IDLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Run `job` on a worker: an idle one, or a new one. Gives the job back when no thread can
/// be started (a process at its thread limit), for the caller to run itself.
pub fn run_job(job: Job) -> Result<(), Job> {
    let mut job = job;
    loop {
        let popped = idle().workers.pop();
        let Some((_, queue)) = popped else { break };
        match queue.send(job) {
            Ok(()) => return Ok(()),
            // Cannot happen while a worker leaves the idle list before it exits; should it,
            // the next idle worker (or a new one) takes the job.
            Err(mpsc::SendError(back)) => job = back,
        }
    }
    let (queue, jobs) = mpsc::channel::<Job>();
    let id = {
        let mut idle = idle();
        idle.next_id += 1;
        idle.next_id
    };
    let spawned = std::thread::Builder::new()
        .name("rw-sync".into())
        .stack_size(STACK)
        .spawn({
            let queue = queue.clone();
            move || work(id, queue, jobs)
        });
    if spawned.is_err() {
        return Err(job);
    }
    // The new worker's first job: sent after the spawn, so a failed spawn gives it back.
    queue.send(job).map_err(|mpsc::SendError(back)| back)
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

/// Start `job` on a worker; where no thread can be had (or `inline`), it runs here, now.
/// A job that panics ends as an error, so nobody waits for it forever.
pub fn start(job: impl FnOnce() -> io::Result<()> + Send + 'static, inline: bool) -> Pending {
    let slot = Arc::new(Slot::default());
    let run: Job = {
        let slot = Arc::clone(&slot);
        Box::new(move || {
            let result = catch_unwind(AssertUnwindSafe(job))
                .unwrap_or_else(|_| Err(io::Error::other("an I/O job panicked")));
            *slot.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
            slot.ended.notify_all();
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

    /// Waits for the job to end and takes its error itself (once; later waits get `Ok` or a
    /// stand-in).
    pub fn take(&self) -> io::Result<()> {
        self.ended(true)
    }

    fn ended(&self, take: bool) -> io::Result<()> {
        let failed = || io::Error::other("an I/O job failed");
        let mut result = self.0.result.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match result.as_ref() {
                Some(Ok(())) => return Ok(()),
                Some(Err(_)) if take => return result.take().unwrap_or_else(|| Err(failed())),
                Some(Err(e)) => return Err(io::Error::new(e.kind(), e.to_string())),
                None => result = self.0.ended.wait(result).unwrap_or_else(|p| p.into_inner()),
            }
        }
    }
}

fn work(id: u64, queue: Sender<Job>, jobs: mpsc::Receiver<Job>) {
    loop {
        let job = match jobs.recv_timeout(LINGER) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => {
                let mut idle = idle();
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
        idle().workers.push((id, queue.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// The id of the thread a job ran on.
    fn ran_on() -> std::thread::ThreadId {
        let (tx, rx) = mpsc::channel();
        run_job(Box::new(move || {
            let _ = tx.send(std::thread::current().id());
        }))
        .unwrap_or_else(|_| panic!("no worker"));
        rx.recv_timeout(Duration::from_secs(10)).expect("job ran")
    }

    #[test]
    fn a_worker_runs_one_job_after_another_without_a_new_thread() {
        let first = ran_on();
        assert_ne!(first, std::thread::current().id());
        // Other tests may hold workers of their own: this one's comes back to the idle list
        // right after its job, so one of the next few jobs finds it.
        let again = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(2));
            ran_on() == first
        });
        assert!(again, "no job ran again on the first worker");
    }

    #[test]
    fn jobs_at_once_run_at_once() {
        // Each job waits for the other: on one thread, or one after another, neither ends.
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let (tx, rx) = mpsc::channel();
        for _ in 0..2 {
            let (barrier, tx) = (barrier.clone(), tx.clone());
            run_job(Box::new(move || {
                barrier.wait();
                let _ = tx.send(());
            }))
            .unwrap_or_else(|_| panic!("no worker"));
        }
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("both jobs ran together");
        }
    }

    #[test]
    fn a_job_that_panics_leaves_its_worker_serving() {
        let (tx, rx) = mpsc::channel();
        let _ = run_job(Box::new(move || {
            let _ = tx.send(std::thread::current().id());
            panic!("job panics");
        }));
        let panicked_on = rx.recv_timeout(Duration::from_secs(10)).expect("job ran");
        let again = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(2));
            ran_on() == panicked_on
        });
        assert!(again, "the worker whose job panicked took no job again");
    }
}
