//! Targets inside resilient-write's own state directory (`.resilient_write/`), for the layers
//! that keep files there (L5 handoff archives, checkpoints).
//!
//! [`crate::workspace::Workspaces::resolve`] refuses the state directory on purpose: agents
//! must not write into it by path. Server-owned files are still written through the one
//! pipeline ([`crate::pipeline::Pipeline::commit`]), which needs a [`Target`]; this module
//! builds one for a fixed subdirectory and a name the caller has already validated (no `/`,
//! no `..`), so nothing here resolves agent-supplied paths.
//!
//! Guarantees: the subdirectory is opened with `O_NOFOLLOW`-style checks on every component
//! (a symlinked `.resilient_write/checkpoints` is refused, not followed), directories created
//! on the way are returned for fsync.

use crate::envelope::{Failure, Result};
use crate::workspace::Target;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use std::ffi::OsString;
use std::path::Path;

fn open_dir_nofollow(parent: Option<&OwnedFd>, name: &Path) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match parent {
        Some(p) => rustix::fs::openat(p, name, flags, Mode::empty()),
        None => rustix::fs::open(name, flags, Mode::empty()),
    }
}

/// Open (creating when missing) `state_dir/subdir`, one component at a time without following
/// symlinks below `state_dir`'s parent. Returns the directory and the ones created (plus the
/// existing directory that received the first new entry), for fsync.
pub fn open_subdir(state_dir: &Path, subdir: &str) -> Result<(OwnedFd, Vec<OwnedFd>)> {
    let shown = state_dir.join(subdir);
    let io = |e: rustix::io::Errno| Failure::io("open state directory", &shown, e.into());
    let base = state_dir.parent().unwrap_or(Path::new("/"));
    let mut dir = open_dir_nofollow(None, base).map_err(io)?;
    let mut created = Vec::new();
    let state_name = state_dir.file_name().unwrap_or_default();
    let components = std::iter::once(Path::new(state_name)).chain(
        Path::new(subdir)
            .components()
            .map(|c| Path::new(c.as_os_str())),
    );
    for comp in components {
        let next = match open_dir_nofollow(Some(&dir), comp) {
            Ok(d) => d,
            Err(e) if e == rustix::io::Errno::NOENT => {
                match rustix::fs::mkdirat(&dir, comp, Mode::from_raw_mode(0o755)) {
                    Ok(()) => {
                        if created.is_empty() {
                            created.push(
                                dir.try_clone()
                                    .map_err(|e| Failure::io("open state directory", &shown, e))?,
                            );
                        }
                    }
                    Err(e) if e == rustix::io::Errno::EXIST => {}
                    Err(e) => return Err(io(e)),
                }
                let d = open_dir_nofollow(Some(&dir), comp).map_err(io)?;
                if !created.is_empty() {
                    created.push(d.try_clone().map_err(|e| Failure::io("open", &shown, e))?);
                }
                d
            }
            Err(e) => return Err(io(e)),
        };
        dir = next;
    }
    Ok((dir, created))
}

/// A pipeline target for file `name` in `state_dir/subdir`. `name` must be a single, already
/// validated file name.
pub fn target(state_dir: &Path, subdir: &str, name: &str) -> Result<Target> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." || name.contains('\0') {
        return Err(Failure::InvalidPath {
            path: name.into(),
            reason: "not a plain file name".into(),
        });
    }
    let (dir, created_dirs) = open_subdir(state_dir, subdir)?;
    let abs_path = state_dir.join(subdir).join(name);
    Ok(Target {
        display: abs_path.display().to_string(),
        abs_path,
        dir,
        name: OsString::from(name),
        created_dirs,
        via_symlink: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_the_subdirectory_and_reports_new_dirs() {
        let t = tempfile::tempdir().unwrap();
        let state = t.path().join(".resilient_write");
        let target = target(&state, "checkpoints", "a.json").unwrap();
        assert!(state.join("checkpoints").is_dir());
        assert_eq!(target.created_dirs.len(), 3);
        assert_eq!(target.abs_path, state.join("checkpoints/a.json"));
        let again = super::target(&state, "checkpoints", "b.json").unwrap();
        assert!(again.created_dirs.is_empty());
    }

    #[test]
    fn a_symlinked_subdirectory_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let state = t.path().join(".resilient_write");
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::symlink(out.path(), state.join("checkpoints")).unwrap();
        assert!(target(&state, "checkpoints", "a.json").is_err());
    }

    #[test]
    fn names_with_separators_are_refused() {
        let t = tempfile::tempdir().unwrap();
        assert!(target(t.path(), "x", "../a").is_err());
    }
}
