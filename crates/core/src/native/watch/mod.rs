//! The shell hooks' watcher: one resident process per workspace that remembers which paths
//! changed since a token, so a hook asks git about those paths only instead of walking the
//! whole work tree (git's fsmonitor does this on macOS and Windows; its daemon does not
//! exist on Linux). With it, both hooks around a command that changes nothing run no git
//! at all.
//!
//! - The watcher ([`daemon::serve`], the hidden `shell-watcher` command) watches every
//!   directory of the workspace with inotify but `.git`, the state directory and the
//!   directories git ignores, and keeps a map path -> sequence number of the last change it
//!   saw there.
//! - A hook asks `sync <token>` over a Unix socket in `.resilient_write/hooks/shell/watch/`
//!   (a 0700 directory). Before answering, the watcher reads its inotify queue until it is
//!   empty: inotify queues an event inside the system call that made the change, so every
//!   change made before the question has been seen. The answer is a new token and either the
//!   paths changed since the old one ([`Changed::Paths`]) or [`Changed::All`]: the token is
//!   from another watcher or from before a moment the watcher could not follow (its queue
//!   overflowed, a directory was renamed, a `.gitignore` changed, too many paths changed).
//! - The hook keeps the token beside its index, written after the index: a crash between
//!   the two leaves an older token, whose answer is a superset. Lost tokens, an unreachable
//!   watcher, an error: the hook does what it did without one (a full `git add -A`).
//! - Not trusted: filesystems whose changes may come from another kernel (NFS, FUSE, 9p,
//!   virtiofs, a VM's shared folder): the watcher refuses them and leaves its reason in
//!   `watch/off`, which keeps the hooks from starting another for an hour. Changes inotify
//!   never reports (writes through `mmap`, through a hard link in another directory) are
//!   not seen either; docs/decisions/0048-shell-watcher.md weighs them.
//! - The first hook starts the watcher (a detached process, its stdio on /dev/null) and does
//!   a full snapshot; the watcher exits after [`IDLE`] without a question, when the
//!   workspace or its state directory is removed, or when another watcher took its socket.

pub mod daemon;

use rustix::fd::{AsRawFd, OwnedFd};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A watcher without a question for this long exits.
pub const IDLE: Duration = Duration::from_secs(30 * 60);
/// The most paths one answer lists; past it the answer is [`Changed::All`] (a full
/// snapshot is then cheaper than matching that many pathspecs).
pub const MAX_PATHS: usize = 1000;
/// How long a hook waits for the watcher's answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// How long a refusal in `watch/off` keeps hooks from starting a watcher.
const OFF_FOR: Duration = Duration::from_secs(3600);

const SOCKET: &str = "sock";
const LOCK: &str = "lock";
const OFF: &str = "off";

/// What changed since the token a hook presented.
#[derive(Debug, Clone, PartialEq)]
pub enum Changed {
    /// Unknown: snapshot everything.
    All,
    /// These paths (relative to the watched root; a directory stands for all below it).
    Paths(Vec<PathBuf>),
}

/// The watcher's answer to `sync`.
#[derive(Debug, Clone, PartialEq)]
pub struct Synced {
    /// What to present next time (keep it once the snapshot it covers is written).
    pub token: String,
    pub changed: Changed,
}

#[derive(Debug, Serialize, Deserialize)]
struct Request {
    root: PathBuf,
    since: Option<String>,
    /// Build the watches again first: git's ignore rules or configuration outside the work
    /// tree changed, so which directories are ignored may have.
    #[serde(default)]
    rebuild: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    token: String,
    all: bool,
    /// The number of NUL-terminated paths that follow.
    paths: usize,
}

/// The watcher's directory of one workspace's state (`.resilient_write/hooks/shell/watch`).
pub struct Watch {
    dir: OwnedFd,
    path: PathBuf,
}

impl Watch {
    /// The watch directory under `state_dir` (created, 0700), or `None` when it cannot be.
    pub fn open(state_dir: &Path) -> Option<Watch> {
        let d = crate::state::open_subdir(
            state_dir,
            &[super::HOOKS_DIR, "shell", "watch"],
            0o700,
            true,
        )
        .ok()??;
        Some(Watch {
            dir: d.dir,
            path: d.path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The socket's path through this process's descriptor of the directory: short enough
    /// for `sun_path` however deep the workspace lies.
    fn socket(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}/{SOCKET}", self.dir.as_raw_fd()))
    }

    /// Ask the watcher of `root` what changed since `since` (`rebuild`: build the watches
    /// again first, git's ignore rules or configuration outside the tree having changed).
    pub fn sync(&self, root: &Path, since: Option<&str>, rebuild: bool) -> io::Result<Synced> {
        let mut s = UnixStream::connect(self.socket())?;
        s.set_read_timeout(Some(ANSWER_WITHIN))?;
        s.set_write_timeout(Some(ANSWER_WITHIN))?;
        let req = Request {
            root: root.to_path_buf(),
            since: since.map(str::to_string),
            rebuild,
        };
        let mut line = serde_json::to_vec(&req).map_err(io::Error::other)?;
        line.push(b'\n');
        s.write_all(&line)?;
        read_answer(BufReader::new(s))
    }

    /// Why the watcher refused this workspace, while that still holds.
    pub fn off(&self) -> Option<String> {
        refusal(self.path.parent()?.parent()?.parent()?)
    }

    /// Start the watcher of `root`: `exe shell-watcher --root R --state-dir S`, detached
    /// (its own process group, stdio on /dev/null, so no agent waits on its output).
    pub fn spawn(&self, exe: &Path, root: &Path, state_dir: &Path) -> io::Result<()> {
        use std::os::unix::process::CommandExt;
        if self.off().is_some() {
            return Ok(());
        }
        std::process::Command::new(exe)
            .arg("shell-watcher")
            .arg("--root")
            .arg(root)
            .arg("--state-dir")
            .arg(state_dir)
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .map(drop)
    }
}

/// Why the watcher refused the workspace whose state directory is `state_dir`, while that
/// still holds (read only: nothing is created).
pub fn refusal(state_dir: &Path) -> Option<String> {
    let p = state_dir
        .join(super::HOOKS_DIR)
        .join("shell/watch")
        .join(OFF);
    let age = std::fs::symlink_metadata(&p)
        .ok()?
        .modified()
        .ok()?
        .elapsed()
        .ok()?;
    (age < OFF_FOR).then(|| {
        crate::util::statefile::read_to_string(&p)
            .unwrap_or_default()
            .trim()
            .to_string()
    })
}

/// Read one answer: a JSON header line, then its NUL-terminated paths.
fn read_answer(mut r: impl BufRead) -> io::Result<Synced> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    if let Some(err) = line.strip_prefix("error ") {
        return Err(io::Error::other(format!("watcher: {}", err.trim())));
    }
    let h: Header = serde_json::from_str(&line).map_err(io::Error::other)?;
    let mut rest = Vec::new();
    r.take(64 << 20).read_to_end(&mut rest)?;
    let paths: Vec<PathBuf> = rest
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(OsString::from_vec(p.to_vec())))
        .collect();
    if paths.len() != h.paths {
        return Err(io::Error::other("watcher: answer cut short"));
    }
    Ok(Synced {
        token: h.token,
        changed: match h.all {
            true => Changed::All,
            false => Changed::Paths(paths),
        },
    })
}

/// Write one answer (the watcher's side of [`read_answer`]).
fn write_answer(w: &mut impl Write, synced: &Synced) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let paths: &[PathBuf] = match &synced.changed {
        Changed::All => &[],
        Changed::Paths(p) => p,
    };
    let h = Header {
        token: synced.token.clone(),
        all: synced.changed == Changed::All,
        paths: paths.len(),
    };
    let mut out = serde_json::to_vec(&h).map_err(io::Error::other)?;
    out.push(b'\n');
    for p in paths {
        out.extend_from_slice(p.as_os_str().as_bytes());
        out.push(0);
    }
    w.write_all(&out)
}

#[cfg(test)]
mod tests;
