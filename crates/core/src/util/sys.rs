//! Small OS helpers: errno to `io::Error`, whether a process exists, fsync of a directory by
//! path.

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
