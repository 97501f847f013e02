//! Write targets inside the state directory (`.resilient_write/`), for the layers that keep
//! state there (L2 chunk sessions, L4 scratchpad).
//!
//! Tools can never reach the state directory through [`crate::workspace::Workspaces::resolve`];
//! the server's own state writes get their [`Target`] here instead, so they still go through
//! the one write pipeline (lock, temp file, fsync, read-back, journal, rename, directory
//! fsync). Guarantees: every directory below the state directory is opened relative to its
//! parent with `O_NOFOLLOW`, so a symlink planted inside `.resilient_write/` cannot redirect a
//! state write; new directories get the requested permission bits (0700 for the scratchpad)
//! and are reported in `created_dirs` so the pipeline fsyncs them.

use crate::envelope::{Failure, Result};
use crate::workspace::Target;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// An open directory below the state directory, and the directories created to reach it
/// (the existing ancestor that received the first new entry, then each new directory).
pub struct StateDir {
    pub path: PathBuf,
    /// `.resilient_write/<components>` with `/` separators, for display.
    pub display: String,
    pub dir: OwnedFd,
    pub created: Vec<OwnedFd>,
}

fn errno(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
}

fn open_dir_at(parent: &OwnedFd, name: &str) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Open `state_dir/<components...>`, creating missing directories with `dir_mode` (before
/// the umask) when `create` is set. `Ok(None)` when a directory is missing and `create` is
/// not set.
pub fn open_subdir(
    state_dir: &Path,
    components: &[&str],
    dir_mode: u32,
    create: bool,
) -> Result<Option<StateDir>> {
    let mut display = crate::store::STATE_DIR_NAME.to_string();
    let mut created = Vec::new();
    let mut dir = match rustix::fs::open(
        state_dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(d) => d,
        Err(e) if e == rustix::io::Errno::NOENT && create => {
            std::fs::create_dir_all(state_dir)
                .map_err(|e| Failure::io("create state directory", state_dir, e))?;
            if let Some(parent) = state_dir.parent() {
                let _ = crate::pipeline::fsync_dir(parent);
            }
            rustix::fs::open(
                state_dir,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| Failure::io("open state directory", state_dir, errno(e)))?
        }
        Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
        Err(e) => return Err(Failure::io("open state directory", state_dir, errno(e))),
    };
    let mut path = state_dir.to_path_buf();
    for comp in components {
        path.push(comp);
        display.push('/');
        display.push_str(comp);
        let next = match open_dir_at(&dir, comp) {
            Ok(d) => d,
            Err(e) if e == rustix::io::Errno::NOENT && create => {
                match rustix::fs::mkdirat(&dir, *comp, Mode::from_raw_mode(dir_mode)) {
                    Ok(()) => {}
                    Err(e) if e == rustix::io::Errno::EXIST => {}
                    Err(e) => return Err(Failure::io("create state directory", &path, errno(e))),
                }
                if created.is_empty() {
                    let parent = dir
                        .try_clone()
                        .map_err(|e| Failure::io("open state directory", &path, e))?;
                    created.push(parent);
                }
                let d = open_dir_at(&dir, comp)
                    .map_err(|e| Failure::io("open state directory", &path, errno(e)))?;
                created.push(
                    d.try_clone()
                        .map_err(|e| Failure::io("open state directory", &path, e))?,
                );
                d
            }
            Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
            Err(e) if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR => {
                return Err(Failure::InvalidPath {
                    path: display,
                    reason: "a state directory component is a symlink or not a directory; \
                        remove or rename it by hand"
                        .into(),
                });
            }
            Err(e) => return Err(Failure::io("open state directory", &path, errno(e))),
        };
        dir = next;
    }
    Ok(Some(StateDir {
        path,
        display,
        dir,
        created,
    }))
}

impl StateDir {
    /// A pipeline target for file `name` in this directory. The directory handle is
    /// duplicated, so one `StateDir` can serve many writes. The content it replaces is not
    /// kept for history (no tool can list or restore these files).
    pub fn target(&self, name: &str) -> Result<Target> {
        let dir = self
            .dir
            .try_clone()
            .map_err(|e| Failure::io("open state directory", &self.path, e))?;
        let created_dirs = self
            .created
            .iter()
            .map(|d| d.try_clone())
            .collect::<io::Result<Vec<_>>>()
            .map_err(|e| Failure::io("open state directory", &self.path, e))?;
        Ok(Target {
            abs_path: self.path.join(name),
            display: format!("{}/{name}", self.display),
            dir,
            name: OsString::from(name),
            created_dirs,
            via_symlink: false,
            keep_history: false,
        })
    }
}

/// A pipeline target for `state_dir/<subdir>/<name>`, creating the subdirectory (0700) when
/// missing. `subdir` and `name` are the server's own, already validated (no `/`, no `..`).
/// Used for checkpoints and handoff archives: saves a person may want back by hash, so
/// unlike chunks and the scratchpad ([`StateDir::target`]) their replaced content is kept.
pub fn target(state_dir: &Path, subdir: &str, name: &str) -> Result<Target> {
    match open_subdir(state_dir, &[subdir], 0o700, true)? {
        Some(dir) => dir.target(name).map(|t| Target {
            keep_history: true,
            ..t
        }),
        None => Err(Failure::Internal(format!(
            "state directory {subdir} could not be created"
        ))),
    }
}
