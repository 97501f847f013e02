//! Workspace roots and beneath-root path resolution (the first step of L1's pipeline).
//!
//! A tool path is turned into a [`Target`]: an open handle on the target's parent directory,
//! obtained beneath a workspace root with `cap-std` (openat2 `RESOLVE_BENEATH` on Linux), plus
//! the final component's name. Every later step (lock, temp file, read-back, rename, fsync)
//! acts relative to that handle, so there is no window between checking a path and using it:
//! swapping a directory for a symlink after resolution cannot redirect the write.
//!
//! Guarantees:
//! - `..` that climbs above a root, absolute paths outside every root, and symlinks (in a
//!   parent directory or as the final component) that point outside the root are refused.
//! - A final component that is a symlink inside the root is followed (at most 40 hops), so
//!   the write lands on the link's target and the link survives.
//! - Nothing under the state directory (`.resilient_write/`) is reachable through tools.
//! - Unsafe roots (`/`, `/etc`, `/tmp` itself, the home directory itself, ...) are refused
//!   with a reason that tool calls report; the server never dies over configuration.

use crate::envelope::{Failure, Result};
use crate::journal::paths::{JournalPaths, RowPath};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, FileType, OFlags};
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Directories that are never accepted as a workspace root, whatever the configuration says.
const DENIED_ROOTS: &[&str] = &[
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
    "/var/tmp",
    "/private/tmp",
    "/System",
    "/Library",
    "/Applications",
    "/Users",
];

/// Maximum symlink hops followed for a final component.
const MAX_SYMLINK_HOPS: usize = 40;

/// One accepted workspace root and its capability handle.
#[derive(Debug)]
pub struct Root {
    /// Canonical absolute path of the root.
    pub path: PathBuf,
    dir: Dir,
}

/// The set of workspace roots the server may write beneath. Cloning is cheap (roots are
/// shared), so a client session can hold its own set: the static roots plus its MCP roots.
#[derive(Debug, Clone)]
pub struct Workspaces {
    roots: Vec<Arc<Root>>,
    /// Candidates that were refused, with the reason (reported by tools and logged at start).
    refused: Vec<(PathBuf, String)>,
    /// The anchor for relative tool paths.
    cwd: PathBuf,
    /// Absolute path of `.resilient_write/`, which tools may not write into.
    state_dir: Option<PathBuf>,
}

/// A resolved write target: its parent directory handle and name, plus paths for display.
#[derive(Debug)]
pub struct Target {
    /// Absolute path of the target (after following a final-component symlink).
    pub abs_path: PathBuf,
    /// The path as the caller gave it (for envelopes).
    pub display: String,
    /// What the journal row records for the target (workspace-relative; see
    /// [`crate::journal::paths`]), also the `path` results show.
    pub row_path: RowPath,
    /// The parent directory, opened O_RDONLY|O_DIRECTORY beneath the root; shared with the
    /// journal's commit queue, which runs the rename on whichever thread leads the batch.
    pub dir: std::sync::Arc<OwnedFd>,
    /// The final component.
    pub name: OsString,
    /// Directories created to reach the parent, top-down, plus the existing ancestor that
    /// received the first new entry; each must be fsynced for the new entries to persist.
    pub created_dirs: Vec<OwnedFd>,
    /// Set when the caller's path was a symlink that was followed.
    pub via_symlink: bool,
    /// Keep the content a write replaces in the object store (history and restore). Set for
    /// workspace files, checkpoints and handoff archives; not for chunk sessions and the
    /// scratchpad, whose pre-images no tool can list or restore and would only pile up (the
    /// scratch index alone is rewritten at every deposit).
    pub keep_history: bool,
}

/// Lexically normalise `path` (absolute): drop `.`, apply `..`. `None` when `..` climbs above `/`.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir => out.push("/"),
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

/// Why `path` may not be a root, if it may not.
fn deny_reason(path: &Path, home: Option<&Path>) -> Option<String> {
    if DENIED_ROOTS.iter().any(|d| Path::new(d) == path) {
        return Some(format!(
            "{} is a system directory; name a project directory as the workspace",
            path.display()
        ));
    }
    if let Some(h) = home
        && h == path
    {
        return Some(format!(
            "{} is the home directory itself; pass a project directory inside it",
            path.display()
        ));
    }
    None
}

fn io_err(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
}

impl Workspaces {
    /// Accept `candidates` (and `cwd`, unless it is inside one of them) as roots, refusing
    /// unsafe or unusable ones with a reason. Never fails: with no root left, every tool call
    /// reports why.
    pub fn new(candidates: &[PathBuf], cwd: &Path, home: Option<&Path>) -> Workspaces {
        let mut ws = Workspaces {
            roots: Vec::new(),
            refused: Vec::new(),
            cwd: cwd.to_path_buf(),
            state_dir: None,
        };
        let home = home.and_then(|h| h.canonicalize().ok());
        for c in candidates {
            ws.add_root(c, home.as_deref());
        }
        if !ws.roots.iter().any(|r| cwd.starts_with(&r.path)) {
            ws.add_root(cwd, home.as_deref());
        }
        ws
    }

    /// Try to add one root; record the reason when it is refused. Returns whether it was added.
    pub fn add_root(&mut self, candidate: &Path, home: Option<&Path>) -> bool {
        let abs = if candidate.is_absolute() {
            candidate.to_path_buf()
        } else {
            self.cwd.join(candidate)
        };
        let canonical = match abs.canonicalize() {
            Ok(p) => p,
            Err(e) => {
                self.refused
                    .push((abs.clone(), format!("{}: {e}", abs.display())));
                return false;
            }
        };
        if let Some(reason) = deny_reason(&canonical, home) {
            self.refused.push((canonical, reason));
            return false;
        }
        if self.roots.iter().any(|r| r.path == canonical) {
            return true;
        }
        match Dir::open_ambient_dir(&canonical, ambient_authority()) {
            Ok(dir) => {
                self.roots.push(Arc::new(Root {
                    path: canonical,
                    dir,
                }));
                // Longest root first, so the most specific root wins a prefix match.
                self.roots
                    .sort_by_key(|r| std::cmp::Reverse(r.path.as_os_str().len()));
                true
            }
            Err(e) => {
                let reason = format!("{}: {e}", canonical.display());
                self.refused.push((canonical, reason));
                false
            }
        }
    }

    /// Declare the state directory, which tools may not write into.
    pub fn set_state_dir(&mut self, state_dir: &Path) {
        self.state_dir = Some(normalize(state_dir).unwrap_or_else(|| state_dir.to_path_buf()));
    }

    pub fn roots(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.path.as_path())
    }

    pub fn refused(&self) -> &[(PathBuf, String)] {
        &self.refused
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The directory holding `.resilient_write/` (the working directory until declared).
    pub fn state_root(&self) -> &Path {
        self.state_dir
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(&self.cwd)
    }

    /// How journal paths map to files under these roots ([`crate::journal::paths`]): the
    /// home root is the (most specific) root of the working directory, else that of the
    /// state root, else the first.
    pub fn journal_paths(&self) -> JournalPaths {
        let roots: Vec<PathBuf> = self.roots().map(Path::to_path_buf).collect();
        let state_root = self.state_root();
        let home = roots
            .iter()
            .find(|r| self.cwd.starts_with(r))
            .or_else(|| roots.iter().find(|r| state_root.starts_with(r)))
            .or_else(|| roots.first())
            .cloned();
        JournalPaths::new(self.state_root().to_path_buf(), home, roots)
    }

    /// The absolute, lexically normalised form of a tool path (no filesystem access).
    pub fn absolute(&self, user_path: &str) -> Result<PathBuf> {
        if user_path.is_empty() {
            return Err(Failure::InvalidPath {
                path: String::new(),
                reason: "empty path".into(),
            });
        }
        if user_path.contains('\0') {
            return Err(Failure::InvalidPath {
                path: user_path.escape_debug().to_string(),
                reason: "path contains a NUL byte".into(),
            });
        }
        let p = Path::new(user_path);
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.cwd.join(p)
        };
        normalize(&joined).ok_or_else(|| Failure::OutsideWorkspace {
            path: user_path.into(),
            reason: "`..` climbs above the filesystem root".into(),
        })
    }

    /// The root an absolute, normalised path lies beneath, and the path relative to it.
    fn locate(&self, user_path: &str, abs: &Path) -> Result<(&Root, PathBuf)> {
        if self.roots.is_empty() {
            let why = if self.refused.is_empty() {
                "no workspace root is configured".to_string()
            } else {
                self.refused
                    .iter()
                    .map(|(_, r)| r.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            return Err(Failure::NoWorkspace { reason: why });
        }
        for root in &self.roots {
            if let Ok(rel) = abs.strip_prefix(&root.path) {
                return Ok((root, rel.to_path_buf()));
            }
        }
        Err(Failure::OutsideWorkspace {
            path: user_path.into(),
            reason: format!(
                "resolves to {}, which is under none of: {}",
                abs.display(),
                self.roots
                    .iter()
                    .map(|r| r.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }

    fn check_not_state(&self, user_path: &str, abs: &Path) -> Result<()> {
        if let Some(state) = &self.state_dir
            && abs.starts_with(state)
        {
            return Err(Failure::StateDirectory {
                path: user_path.into(),
            });
        }
        Ok(())
    }

    /// Resolve a tool path to a [`Target`] beneath a root. With `create_parents`, missing
    /// parent directories are created (beneath the root) and reported for fsync.
    pub fn resolve(&self, user_path: &str, create_parents: bool) -> Result<Target> {
        let abs = self.absolute(user_path)?;
        let (root, mut rel) = self.locate(user_path, &abs)?;
        let mut via_symlink = false;
        for _ in 0..MAX_SYMLINK_HOPS {
            let target_abs = root.path.join(&rel);
            self.check_not_state(user_path, &target_abs)?;
            let name = match rel.file_name() {
                Some(n) => n.to_os_string(),
                None => {
                    return Err(Failure::IsDirectory {
                        path: user_path.into(),
                    });
                }
            };
            let parent_rel = rel.parent().unwrap_or(Path::new("")).to_path_buf();
            let (dir, created_dirs) = open_parent(root, &parent_rel, user_path, create_parents)?;
            match rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Err(e) if e == rustix::io::Errno::NOENT => {}
                Err(e) => return Err(Failure::io("stat", user_path, io_err(e))),
                Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                    FileType::Directory => {
                        return Err(Failure::IsDirectory {
                            path: user_path.into(),
                        });
                    }
                    FileType::Symlink => {
                        let link = rustix::fs::readlinkat(&dir, name.as_os_str(), Vec::new())
                            .map_err(|e| Failure::io("readlink", user_path, io_err(e)))?;
                        let link = PathBuf::from(std::ffi::OsStr::from_bytes(link.as_bytes()));
                        let next_abs = if link.is_absolute() {
                            normalize(&link)
                        } else {
                            normalize(&root.path.join(&parent_rel).join(&link))
                        };
                        rel = match next_abs.as_deref().map(|p| p.strip_prefix(&root.path)) {
                            Some(Ok(r)) if !r.as_os_str().is_empty() => r.to_path_buf(),
                            _ => {
                                return Err(Failure::OutsideWorkspace {
                                    path: user_path.into(),
                                    reason: format!(
                                        "is a symlink to {}, outside the workspace root {}",
                                        link.display(),
                                        root.path.display()
                                    ),
                                });
                            }
                        };
                        via_symlink = true;
                        continue;
                    }
                    _ => {}
                },
            }
            let row_path = self.journal_paths().record(&root.path, &rel);
            return Ok(Target {
                abs_path: target_abs,
                display: user_path.to_string(),
                row_path,
                dir: dir.into(),
                name,
                created_dirs,
                via_symlink,
                keep_history: true,
            });
        }
        Err(Failure::InvalidPath {
            path: user_path.into(),
            reason: format!("more than {MAX_SYMLINK_HOPS} symlink hops"),
        })
    }

    /// Open a directory beneath a root for reading (journal filters, sweeps, reads).
    pub fn open_dir(&self, user_path: &str) -> Result<(PathBuf, Dir)> {
        let abs = self.absolute(user_path)?;
        let (root, rel) = self.locate(user_path, &abs)?;
        let dir = if rel.as_os_str().is_empty() {
            root.dir.try_clone()
        } else {
            root.dir.open_dir(&rel)
        }
        .map_err(|e| map_beneath_error(user_path, e))?;
        Ok((abs, dir))
    }
}

/// cap-std reports an escape attempt as PermissionDenied with a message naming the sandbox;
/// report it as a workspace escape rather than as a permission problem of the disk.
fn map_beneath_error(user_path: &str, e: io::Error) -> Failure {
    let escape = e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none()
        || e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error());
    if escape {
        Failure::OutsideWorkspace {
            path: user_path.into(),
            reason: format!("a path component leads outside the workspace root ({e})"),
        }
    } else if e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) {
        Failure::InvalidPath {
            path: user_path.into(),
            reason: "a parent component is not a directory".into(),
        }
    } else {
        Failure::io("open parent directory", user_path, e)
    }
}

/// Reopen a cap-std directory as an O_RDONLY directory fd: cap-std's handles are O_PATH, which
/// can be neither fsynced nor flocked.
fn reopen_readable(dir: &Dir) -> io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(io::Error::from)
}

/// Open `parent_rel` beneath `root`, creating missing directories when asked.
fn open_parent(
    root: &Root,
    parent_rel: &Path,
    user_path: &str,
    create: bool,
) -> Result<(OwnedFd, Vec<OwnedFd>)> {
    if parent_rel.as_os_str().is_empty() {
        // The root itself, reopened readable straight from its handle (no clone to close).
        let fd = reopen_readable(&root.dir).map_err(|e| map_beneath_error(user_path, e))?;
        return Ok((fd, Vec::new()));
    }
    let open = |rel: &Path| -> io::Result<Dir> {
        if rel.as_os_str().is_empty() {
            root.dir.try_clone()
        } else {
            root.dir.open_dir(rel)
        }
    };
    match open(parent_rel) {
        Ok(d) => {
            let fd = reopen_readable(&d).map_err(|e| map_beneath_error(user_path, e))?;
            Ok((fd, Vec::new()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
            // Find the deepest existing ancestor: it receives the first new entry.
            let mut existing = parent_rel.to_path_buf();
            while !existing.as_os_str().is_empty() && open(&existing).is_err() {
                existing.pop();
            }
            root.dir
                .create_dir_all(parent_rel)
                .map_err(|e| map_beneath_error(user_path, e))?;
            let mut created = Vec::new();
            let mut walk = existing.clone();
            let anc = open(&walk).map_err(|e| map_beneath_error(user_path, e))?;
            created.push(reopen_readable(&anc).map_err(|e| Failure::io("open", user_path, e))?);
            let tail = parent_rel.strip_prefix(&existing).unwrap_or(parent_rel);
            for comp in tail.components() {
                walk.push(comp);
                let d = open(&walk).map_err(|e| map_beneath_error(user_path, e))?;
                created.push(reopen_readable(&d).map_err(|e| Failure::io("open", user_path, e))?);
            }
            let d = open(parent_rel).map_err(|e| map_beneath_error(user_path, e))?;
            let fd = reopen_readable(&d).map_err(|e| Failure::io("open", user_path, e))?;
            Ok((fd, created))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(Failure::io("open parent directory", user_path, e))
        }
        Err(e) => Err(map_beneath_error(user_path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(dir: &Path) -> Workspaces {
        Workspaces::new(&[dir.to_path_buf()], dir, None)
    }

    #[test]
    fn unsafe_roots_are_refused_with_a_reason() {
        let w = Workspaces::new(
            &[PathBuf::from("/"), PathBuf::from("/etc")],
            Path::new("/"),
            None,
        );
        assert_eq!(w.roots().count(), 0);
        assert!(
            w.refused()
                .iter()
                .any(|(_, r)| r.contains("system directory"))
        );
        let err = w.resolve("x.txt", true).unwrap_err();
        assert!(matches!(err, Failure::NoWorkspace { .. }));
    }

    #[test]
    fn dotdot_escape_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let err = ws(t.path()).resolve("../x", true).unwrap_err();
        assert!(matches!(err, Failure::OutsideWorkspace { .. }), "{err:?}");
    }

    #[test]
    fn absolute_path_outside_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let err = ws(t.path()).resolve("/etc/passwd", true).unwrap_err();
        assert!(matches!(err, Failure::OutsideWorkspace { .. }));
    }

    #[test]
    fn parent_symlink_pointing_out_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let err = ws(&root).resolve("link/x.txt", true).unwrap_err();
        assert!(matches!(err, Failure::OutsideWorkspace { .. }), "{err:?}");
        assert!(!outside.path().join("x.txt").exists());
    }

    #[test]
    fn final_symlink_pointing_out_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path().join("f"), root.join("f")).unwrap();
        let err = ws(&root).resolve("f", true).unwrap_err();
        assert!(matches!(err, Failure::OutsideWorkspace { .. }), "{err:?}");
    }

    #[test]
    fn final_symlink_inside_is_followed() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink("real/f", root.join("f")).unwrap();
        let target = ws(&root).resolve("f", true).unwrap();
        assert_eq!(target.abs_path, root.join("real/f"));
        assert!(target.via_symlink);
    }

    #[test]
    fn missing_parents_are_created_and_reported() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let target = ws(&root).resolve("a/b/c.txt", true).unwrap();
        assert!(root.join("a/b").is_dir());
        assert_eq!(target.created_dirs.len(), 3);
    }

    #[test]
    fn state_directory_is_not_writable_through_tools() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let mut w = ws(&root);
        w.set_state_dir(&root.join(".resilient_write"));
        let err = w
            .resolve(".resilient_write/journal.jsonl", true)
            .unwrap_err();
        assert!(matches!(err, Failure::StateDirectory { .. }));
    }

    #[test]
    fn directory_target_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        let err = ws(&root).resolve("d", true).unwrap_err();
        assert!(matches!(err, Failure::IsDirectory { .. }));
    }
}
