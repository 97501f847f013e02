//! Small OS helpers: errno to `io::Error`, whether a process exists, fsync of a directory by
//! path, a background thread's priority.

use rustix::fd::AsFd;
use rustix::fs::{Mode, OFlags};
use std::io;
use std::path::Path;

pub(crate) fn errno_io(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
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
///
/// [`Target`]: crate::workspace::Target
pub fn fsync_dir(path: &Path) -> io::Result<()> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(errno_io)?;
    rustix::fs::fsync(fd.as_fd()).map_err(errno_io)
}

/// The nice value of background housekeeping threads: low enough that they yield to the
/// writes, high enough to finish on a machine whose every CPU is busy. Linux's scheduler
/// weighs nice 10 at 110 against 1024 for nice 0, so beside one busy thread per CPU such a
/// thread still gets about a tenth of a CPU: housekeeping costing C seconds of CPU is done
/// within about 10 C seconds (at the lowest priority, 19, the weight is 15: 70 C).
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread (only it: Linux keeps a nice value per thread) to
/// [`BACKGROUND_NICE`]. The start-up sweep for stale temp files walks the whole workspace:
/// sixteen agents starting at once on a large repository would otherwise take CPU from each
/// other's first writes for as long as the sixteen walks last.
pub fn lower_this_threads_priority() -> io::Result<()> {
    let tid = rustix::thread::gettid();
    rustix::process::setpriority_process(Some(tid), BACKGROUND_NICE).map_err(errno_io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowering_a_threads_priority_leaves_the_other_threads_alone() {
        let ours = rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        let theirs = std::thread::spawn(|| {
            lower_this_threads_priority().unwrap();
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(theirs, BACKGROUND_NICE);
        let after = rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        assert_eq!(after, ours, "the calling thread's priority changed too");
        assert_ne!(
            ours, BACKGROUND_NICE,
            "the test process itself runs at the background priority"
        );
    }
}
