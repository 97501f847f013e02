//! A shell command's snapshot outside a git work tree: a stat manifest of the workspace and
//! a cache of the content it lists, so the after-hook knows which files a command changed
//! and what each held.
//!
//! - The manifest (`.resilient_write/hooks/shell/plain/baseline.json`) maps each regular
//!   file (path relative to the root, `/` separators) to its size, mtime, ctime, inode and
//!   sha256. A walk re-hashes only files whose stat data differs from the previous manifest
//!   (ctime changes with every write and cannot be set back by a program, so a command that
//!   restores an old mtime is still seen).
//! - Each hashed content is kept in `plain/blobs/<sha256>` unless the object store holds it
//!   already: written, not synced (the before-hook the agent waits for pays no fsync). The
//!   after-hook moves the content it needs into the object store durably
//!   ([`crate::objects::ObjectStore::adopt`], which checks the hash), so a blob torn by a
//!   crash is never stored. Blobs no manifest lists are removed after an hour.
//! - The walk follows no symlink, skips the state directory, `.git` and what `.gitignore` or
//!   `.ignore` files exclude, and stops at [`MAX_FILES`] files: a larger tree outside git is
//!   refused with the reason (use git). One walk hashes and caches at most [`CACHE_BUDGET`]
//!   bytes of new content; a file past it, or over the size cap, is known by its stat data
//!   alone (an empty `sha256`): a change to it is journaled without its previous content.

use crate::objects::ObjectStore;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most files a workspace outside git may hold for its shell commands to be snapshotted.
pub const MAX_FILES: usize = 50_000;

/// Most bytes of new content one walk hashes and caches (a large tree outside git is not
/// copied whole at its first snapshot).
pub const CACHE_BUDGET: u64 = 256 << 20;

/// One file as the manifest knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub size: u64,
    /// Modification and change times, nanoseconds.
    pub mtime: i128,
    pub ctime: i128,
    pub ino: u64,
    /// Empty when the content was not read (over the size cap, or past the walk's budget).
    pub sha256: String,
}

impl Entry {
    fn same_stat(&self, m: &std::fs::Metadata) -> bool {
        self.size == m.size()
            && self.mtime == mtime_of(m)
            && self.ctime == ctime_of(m)
            && self.ino == m.ino()
    }
}

fn mtime_of(m: &std::fs::Metadata) -> i128 {
    m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128
}

fn ctime_of(m: &std::fs::Metadata) -> i128 {
    m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128
}

/// Path (relative, `/`-separated) → entry.
pub type Manifest = BTreeMap<String, Entry>;

/// Snapshots of one workspace outside git.
pub struct PlainSnap {
    root: PathBuf,
    state_dir: PathBuf,
    /// `.resilient_write/hooks/shell/plain`.
    dir: PathBuf,
}

impl PlainSnap {
    /// The snapshotter of the workspace at `root` (its directories opened without following
    /// a symlink, created when missing).
    pub fn open(root: &Path, state_dir: &Path) -> io::Result<PlainSnap> {
        let dir = crate::state::open_subdir(
            state_dir,
            &[super::HOOKS_DIR, "shell", "plain", "blobs"],
            0o700,
            true,
        )
        .map_err(|f| io::Error::other(f.to_string()))?
        .ok_or_else(|| io::Error::other("no snapshot directory"))?
        .path;
        let dir = dir.parent().map(Path::to_path_buf).unwrap_or(dir);
        Ok(PlainSnap {
            root: root.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            dir,
        })
    }

    /// Where the content `sha256` is cached.
    pub fn blob(&self, sha256: &str) -> PathBuf {
        self.dir.join("blobs").join(sha256)
    }

    pub fn blobs_dir(&self) -> PathBuf {
        self.dir.join("blobs")
    }

    /// The manifest of the last walk (empty before the first).
    pub fn baseline(&self) -> Manifest {
        read_manifest(&self.dir.join("baseline.json")).unwrap_or_default()
    }

    pub fn save_baseline(&self, m: &Manifest) -> io::Result<()> {
        write_manifest(&self.dir.join("baseline.json"), m)
    }

    /// Walk the workspace: files whose stat data matches `known` keep its hash; the others
    /// are hashed and their content cached (unless stored already or over `max` bytes).
    pub fn scan(&self, known: &Manifest, objects: &ObjectStore, max: u64) -> io::Result<Manifest> {
        let state = self.state_dir.clone();
        let walk = ignore::WalkBuilder::new(&self.root)
            .hidden(false)
            .git_ignore(true)
            .git_global(false)
            .git_exclude(false)
            .require_git(false)
            .ignore(true)
            .parents(false)
            .follow_links(false)
            .filter_entry(move |e| {
                let p = e.path();
                !(p.starts_with(&state) || p.file_name().is_some_and(|n| n == ".git"))
            })
            .build();
        let mut out = Manifest::new();
        let mut budget = CACHE_BUDGET;
        for entry in walk {
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue; // directories, symlinks, sockets
            }
            if out.len() >= MAX_FILES {
                return Err(io::Error::other(format!(
                    "the workspace holds more than {MAX_FILES} files outside git; shell \
                     commands are journaled in git work trees of that size"
                )));
            }
            let path = entry.path();
            let Ok(rel) = path.strip_prefix(&self.root) else {
                continue;
            };
            let key = crate::journal::paths::slash_path(rel);
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue; // gone meanwhile
            };
            if let Some(e) = known.get(&key)
                && e.same_stat(&meta)
            {
                out.insert(key, e.clone());
                continue;
            }
            let read = if meta.size() <= max && meta.size() <= budget {
                budget -= meta.size();
                self.hash_and_cache(path, &meta, objects)
            } else {
                Ok(String::new())
            };
            match read {
                Ok(sha256) => {
                    out.insert(
                        key,
                        Entry {
                            size: meta.size(),
                            mtime: mtime_of(&meta),
                            ctime: ctime_of(&meta),
                            ino: meta.ino(),
                            sha256,
                        },
                    );
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    fn hash_and_cache(
        &self,
        path: &Path,
        meta: &std::fs::Metadata,
        objects: &ObjectStore,
    ) -> io::Result<String> {
        let file = std::fs::File::open(path)?;
        let mut bytes = Vec::with_capacity(meta.size() as usize);
        // As much as the stat said (a file growing meanwhile is hashed as it was read).
        file.take(meta.size()).read_to_end(&mut bytes)?;
        let sha256 = crate::hash::sha256_hex(&bytes);
        let blob = self.blob(&sha256);
        if !objects.contains(&sha256) && !blob.exists() {
            // Not synced: a cached content is checked against its hash before it is used.
            crate::state::replace_unsynced(rustix::fs::CWD, &blob, &bytes, false)?;
        }
        Ok(sha256)
    }

    /// Remove cached contents `keep` does not list, once an hour old (a pending snapshot of
    /// a command still running may need a younger one).
    pub fn prune(&self, keep: &Manifest) {
        let listed: std::collections::HashSet<&str> =
            keep.values().map(|e| e.sha256.as_str()).collect();
        let Ok(dir) = std::fs::read_dir(self.blobs_dir()) else {
            return;
        };
        let hour = std::time::Duration::from_secs(3600);
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > hour);
            if old && !listed.contains(name) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// A manifest saved as JSON (`None`: missing or unreadable).
pub fn read_manifest(path: &Path) -> Option<Manifest> {
    let bytes = crate::util::statefile::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Save `m` at `path` (a temporary file renamed over it; not synced: losing it costs a
/// re-hash of the workspace at the next walk).
pub fn write_manifest(path: &Path, m: &Manifest) -> io::Result<()> {
    let body = serde_json::to_vec(m).map_err(io::Error::other)?;
    crate::state::replace_unsynced(rustix::fs::CWD, path, &body, false)
}

/// Whether two entries of one path hold the same content: by hash when both were read, else
/// by stat data.
fn same(a: &Entry, b: &Entry) -> bool {
    if a.sha256.is_empty() || b.sha256.is_empty() {
        (a.size, a.mtime, a.ctime, a.ino) == (b.size, b.mtime, b.ctime, b.ino)
    } else {
        a.sha256 == b.sha256
    }
}

/// The files that differ between two manifests: `(path, before, after)`, by path.
pub fn diff<'m>(
    before: &'m Manifest,
    after: &'m Manifest,
) -> Vec<(&'m str, Option<&'m Entry>, Option<&'m Entry>)> {
    let mut out = Vec::new();
    for (k, b) in before {
        match after.get(k) {
            Some(a) if same(a, b) => {}
            other => out.push((k.as_str(), Some(b), other)),
        }
    }
    for (k, a) in after {
        if !before.contains_key(k) {
            out.push((k.as_str(), None, Some(a)));
        }
    }
    out.sort_by(|x, y| x.0.cmp(y.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_hashes_only_what_changed_and_diff_names_each_change() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let state = root.join(".resilient_write");
        std::fs::create_dir_all(&state).unwrap();
        let objects = ObjectStore::new(&state);
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::write(root.join("b.txt"), "b").unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        std::fs::create_dir(root.join("ignored")).unwrap();
        std::fs::write(root.join("ignored/x"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("link")).unwrap();
        let snap = PlainSnap::open(&root, &state).unwrap();
        let m1 = snap.scan(&Manifest::new(), &objects, 1 << 20).unwrap();
        let keys: Vec<&str> = m1.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [".gitignore", "a.txt", "b.txt"],
            "no symlink, nothing ignored"
        );
        assert!(
            snap.blob(&crate::hash::sha256_hex(b"a")).is_file(),
            "content cached"
        );
        std::fs::write(root.join("a.txt"), "a2").unwrap();
        std::fs::remove_file(root.join("b.txt")).unwrap();
        std::fs::write(root.join("c.txt"), "c").unwrap();
        let m2 = snap.scan(&m1, &objects, 1 << 20).unwrap();
        let d: Vec<(&str, bool, bool)> = diff(&m1, &m2)
            .into_iter()
            .map(|(p, b, a)| (p, b.is_some(), a.is_some()))
            .collect();
        assert_eq!(
            d,
            [
                ("a.txt", true, true),
                ("b.txt", true, false),
                ("c.txt", false, true)
            ]
        );
        assert!(m2.keys().all(|k| !k.starts_with(".resilient_write")));
        // A file over the cap is known by its stat data: a change to it is still seen.
        std::fs::write(root.join("big.bin"), vec![7u8; 64]).unwrap();
        let m3 = snap.scan(&m2, &objects, 16).unwrap();
        assert_eq!(m3["big.bin"].sha256, "");
        assert!(!snap.blob(&crate::hash::sha256_hex(&[7u8; 64])).exists());
        std::fs::write(root.join("big.bin"), vec![8u8; 65]).unwrap();
        let m4 = snap.scan(&m3, &objects, 16).unwrap();
        let d: Vec<&str> = diff(&m3, &m4).into_iter().map(|(p, _, _)| p).collect();
        assert_eq!(d, ["big.bin"]);
    }
}
