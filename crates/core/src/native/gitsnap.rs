//! A shell command's snapshot in a git work tree, made by git itself: git's index is the
//! existing engine for "which files changed, and what did each hold", with a stat cache
//! that makes the question cheap on a large tree.
//!
//! The user's repository is never written to. Snapshots go through an index and an object
//! directory of our own (`.resilient_write/hooks/shell/git/`): `GIT_INDEX_FILE` names our
//! index (seeded once from a copy of the user's, so the stat cache starts warm), and
//! `GIT_OBJECT_DIRECTORY` our objects, with the repository's as an alternate, so the blobs
//! `git add` writes land with us while every blob the repository has is found there. The
//! user's index, stash, refs and object database stay byte for byte as they were.
//!
//! - A snapshot is one `git add -A` (untracked, non-ignored files included; ignored ones out
//!   of scope; symlinks and submodules left out), which hashes only the files whose stat
//!   data changed since our index last saw them; the snapshot is then a copy of our index.
//!   One git process per hook: the changes between two snapshots are found by reading the
//!   two index files here ([`parse_index`], [`diff`]), not by `write-tree` and `diff-tree`
//!   (two more processes, measured at a third of a hook's time on a small repository).
//! - The previous content of a changed file comes from `git cat-file --batch` (git's stored form;
//!   `--filters` for a file whose attributes make the checked-out form differ: `eol=crlf`,
//!   `core.autocrlf=true`, a `filter`, `ident`, `working-tree-encoding`). The caller copies
//!   what it keeps into our object store, so `history`, `restore` and `gc` never depend on
//!   git's objects, and a `git gc` in the repository cannot take a kept version away.
//! - Our object directory only grows with the content of changed files; past
//!   [`REBUILD_AFTER`] bytes it is dropped with our index, and the next snapshot starts again
//!   from a copy of the user's index.
//! - One snapshot at a time per workspace: an exclusive `flock` on `git/lock` around every
//!   use of our index (git's own `index.lock` would fail a concurrent one instead).

use super::gitindex::Change;
use super::gitindex::{diff, parse_index, read_index_file};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Bytes of changed content hashed into our object directory before it is dropped.
pub const REBUILD_AFTER: u64 = 512 << 20;

/// Where the repository holding a workspace keeps what we read (cached in `git/repo.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Repo {
    /// The work tree's top level.
    pub top: PathBuf,
    /// The repository's object directory (the alternate of ours).
    objects: PathBuf,
    /// The user's index (the seed of ours).
    index: PathBuf,
    /// `core.autocrlf` is true: checked-out text differs from the stored form.
    #[serde(default)]
    autocrlf: bool,
    /// Bytes of an object id (20 for SHA-1, 32 for SHA-256 repositories).
    #[serde(default = "sha1_len")]
    oid_len: usize,
    /// The files whose change may change what `add -A` picks up without a change in the
    /// work tree (ignore rules, configuration): a watcher's token is kept with their stat
    /// data, and void when it differs.
    #[serde(default)]
    rules: Vec<PathBuf>,
}

fn sha1_len() -> usize {
    20
}

/// The previous content of a changed file, as git has it.
pub enum Blob {
    Bytes(Vec<u8>),
    /// Over the size cap: only its digest and size.
    TooBig {
        sha256: String,
        size: u64,
    },
    Missing,
}

/// Snapshots of one workspace's repository through our own index and objects.
pub struct GitSnap {
    repo: Repo,
    /// `.resilient_write/hooks/shell/git`.
    dir: PathBuf,
    /// `add -A`'s pathspecs: the workspace, less the state directory.
    specs: Vec<OsString>,
}

fn failed(what: &str, out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    format!("git {what} failed: {}", line.trim())
}

/// A `git` command run in `dir` with nothing of the caller's git environment.
pub(super) fn bare_git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir).stdin(Stdio::null());
    for v in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_QUARANTINE_PATH",
        "GIT_LITERAL_PATHSPECS",
        "GIT_GLOB_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS",
        "GIT_ICASE_PATHSPECS",
        "GIT_EXTERNAL_DIFF",
    ] {
        c.env_remove(v);
    }
    c.env("LC_ALL", "C").env("GIT_TERMINAL_PROMPT", "0");
    c
}

/// Whether `root` lies in a git work tree: a `.git` entry in it or an ancestor (what git's
/// own discovery looks for), found without starting a process.
fn looks_like_git(root: &Path) -> bool {
    root.ancestors().any(|d| d.join(".git").exists())
}

impl Repo {
    /// The repository holding `root`, asked of git (`None`: not a work tree, or no git).
    fn discover(root: &Path) -> Option<Repo> {
        let out = bare_git(root)
            .args([
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--git-path",
                "objects",
                "--git-path",
                "index",
                "--show-object-format",
                "--git-path",
                "info/exclude",
                "--git-path",
                "config",
            ])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8(out.stdout).ok()?;
        let mut lines = text.lines();
        let (top, objects, index) = (lines.next()?, lines.next()?, lines.next()?);
        let oid_len = match lines.next()? {
            "sha1" => 20,
            "sha256" => 32,
            _ => return None,
        };
        let mut rules: Vec<PathBuf> = lines.map(PathBuf::from).collect();
        let config = |args: &[&str]| {
            bare_git(root)
                .arg("config")
                .args(args)
                .stderr(Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let autocrlf =
            config(&["--type=bool", "--get", "core.autocrlf"]).is_some_and(|v| v == "true");
        // The global and system configuration files, as git names them (`git var`, git
        // 2.42 on; older gits leave them out), and the excludes file: the configured one, or
        // git's default beside the XDG configuration file.
        let var = |name: &str| {
            bare_git(root)
                .args(["var", name])
                .stderr(Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        };
        let configs: Vec<PathBuf> = [var("GIT_CONFIG_GLOBAL"), var("GIT_CONFIG_SYSTEM")]
            .iter()
            .flat_map(|v| v.lines().map(PathBuf::from).collect::<Vec<_>>())
            .collect();
        match config(&["--path", "--get", "core.excludesFile"]) {
            Some(f) => rules.push(PathBuf::from(f)),
            None => rules.extend(
                configs
                    .iter()
                    .filter(|c| c.ends_with("git/config"))
                    .map(|c| c.with_file_name("ignore")),
            ),
        }
        rules.extend(configs);
        Some(Repo {
            top: PathBuf::from(top),
            objects: PathBuf::from(objects),
            index: PathBuf::from(index),
            autocrlf,
            oid_len,
            rules,
        })
    }
}

impl GitSnap {
    /// The snapshotter of the workspace at `root` whose state directory is `state_dir`, or
    /// `None` when `root` is not in a git work tree (or git cannot be run). The
    /// repository's location is cached beside our index.
    pub fn open(root: &Path, state_dir: &Path) -> Option<GitSnap> {
        if !looks_like_git(root) {
            return None;
        }
        // Opened component by component without following a symlink: a repository that
        // plants one in its `.resilient_write/` cannot send our index elsewhere.
        let dir =
            crate::state::open_subdir(state_dir, &[super::HOOKS_DIR, "shell", "git"], 0o700, true)
                .ok()??
                .path;
        let cache = dir.join("repo.json");
        let cached = crate::util::statefile::read(&cache)
            .ok()
            .and_then(|b| serde_json::from_slice::<Repo>(&b).ok())
            .filter(|r| r.objects.is_dir() && root.starts_with(&r.top) && !r.rules.is_empty());
        let repo = match cached {
            Some(r) => r,
            None => {
                let r = Repo::discover(root)?;
                if let Ok(body) = serde_json::to_vec(&r) {
                    let _ = crate::state::replace_unsynced(rustix::fs::CWD, &cache, &body, false);
                }
                r
            }
        };
        let literal = |p: &Path| {
            let mut s = OsString::from(":(literal)");
            s.push(p.as_os_str());
            s
        };
        let mut specs = match root.strip_prefix(&repo.top) {
            Ok(rel) if !rel.as_os_str().is_empty() => vec![literal(rel)],
            _ => vec![OsString::from(".")],
        };
        if let Ok(rel) = state_dir.strip_prefix(&repo.top) {
            let mut s = OsString::from(":(exclude,literal)");
            s.push(rel.as_os_str());
            specs.push(s);
        }
        Some(GitSnap { repo, dir, specs })
    }

    pub fn top(&self) -> &Path {
        &self.repo.top
    }

    fn index(&self) -> PathBuf {
        self.dir.join("index")
    }

    fn objects(&self) -> PathBuf {
        self.dir.join("objects")
    }

    /// `git` on our index and objects.
    fn git(&self) -> Command {
        let mut c = bare_git(&self.repo.top);
        c.env("GIT_INDEX_FILE", self.index())
            .env("GIT_OBJECT_DIRECTORY", self.objects())
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &self.repo.objects)
            .args([
                "-c",
                "advice.addIgnoredFile=false",
                "-c",
                "core.fsmonitor=false",
                "-c",
                "core.untrackedCache=true",
                "-c",
                "core.splitIndex=false",
                "-c",
                "gc.auto=0",
            ]);
        c
    }

    /// Hold our index for one snapshot (released when dropped).
    pub fn lock(&self) -> io::Result<std::fs::File> {
        std::fs::create_dir_all(self.objects())?;
        let f = crate::util::statefile::open_with(
            &self.dir.join("lock"),
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CREATE,
            0o600,
        )?;
        rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)?;
        // We hold the only right to our index: a lock file left by a killed git is stale.
        let _ = std::fs::remove_file(self.dir.join("index.lock"));
        Ok(f)
    }

    /// Drop our index and objects when the objects have grown past [`REBUILD_AFTER`] (call
    /// with the lock held, before a snapshot).
    pub fn maybe_rebuild(&self) {
        let grown = crate::util::statefile::read_to_string(&self.dir.join("grown"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
        if grown > REBUILD_AFTER {
            self.forget_token();
            let _ = std::fs::remove_file(self.index());
            let _ = std::fs::remove_dir_all(self.objects());
            let _ = std::fs::remove_file(self.dir.join("grown"));
            let _ = std::fs::create_dir_all(self.objects());
        }
    }

    /// Count `bytes` of content hashed into our objects (see [`GitSnap::maybe_rebuild`]).
    pub fn grew(&self, bytes: u64) {
        let path = self.dir.join("grown");
        let now = crate::util::statefile::read_to_string(&path)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
        // In place and padded to a fixed width: truncating a file costs a millisecond on a
        // journaled filesystem, and a torn count only rebuilds early or late.
        let body = format!("{:<20}\n", now + bytes);
        let _ = crate::state::overwrite_unsynced(&path, body.as_bytes());
    }

    /// Snapshot the work tree (call with the lock held) into our index; [`GitSnap::save`]
    /// keeps a copy of it.
    pub fn snapshot(&self) -> Result<(), String> {
        if !self.index().exists() {
            self.forget_token();
            // A warm start: the user's stat cache, so only what differs from it is hashed.
            // The copy keeps the index's mtime: git re-checks the entries not older than
            // it ("racily clean"), and a newer copy would vouch for them wrongly.
            if std::fs::copy(&self.repo.index, self.index()).is_ok() {
                let mtime = std::fs::metadata(&self.repo.index).and_then(|m| m.modified());
                let kept = mtime.and_then(|t| {
                    std::fs::File::options()
                        .write(true)
                        .open(self.index())
                        .and_then(|f| f.set_modified(t))
                });
                if kept.is_err() {
                    let _ = std::fs::remove_file(self.index());
                }
            }
        }
        let add = || {
            self.git()
                .args(["add", "-A", "--ignore-errors", "--"])
                .args(&self.specs)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .map_err(|e| format!("cannot run git: {e}"))
        };
        let out = add()?;
        if !added(&out) {
            // A seed git cannot use here (a split or sparse index): start from nothing.
            self.forget_token();
            let _ = std::fs::remove_file(self.index());
            let again = add()?;
            if !added(&again) {
                return Err(failed("add", &again));
            }
        }
        Ok(())
    }

    /// Snapshot only `paths` (relative to the workspace's `root`, as a watcher reports
    /// them; a directory stands for all below it) into our index (call with the lock held).
    /// A path that is neither on disk nor in our index (a file made and removed between
    /// two snapshots) is left out: git refuses a pathspec that matches nothing.
    #[cfg(target_os = "linux")]
    pub fn snapshot_paths(&self, root: &Path, paths: &[PathBuf]) -> Result<(), String> {
        if paths.is_empty() {
            return Ok(());
        }
        let data = read_index_file(&self.index()).map_err(|e| format!("our index: {e}"))?;
        let entries = parse_index(&data, self.repo.oid_len).map_err(|e| e.to_string())?;
        let rel_root = root.strip_prefix(&self.repo.top).unwrap_or(Path::new(""));
        let indexed = |p: &[u8]| {
            let at = entries.partition_point(|e| e.path.as_ref() < p);
            let mut dir = p.to_vec();
            dir.push(b'/');
            let under = entries.partition_point(|e| e.path.as_ref() < dir.as_slice());
            entries.get(at).is_some_and(|e| e.path.as_ref() == p)
                || entries.get(under).is_some_and(|e| e.path.starts_with(&dir))
        };
        let mut input = Vec::new();
        for p in paths {
            let rel = rel_root.join(p);
            let bytes = rel.as_os_str().as_bytes();
            if self.repo.top.join(&rel).symlink_metadata().is_ok() || indexed(bytes) {
                input.extend_from_slice(b":(literal)");
                input.extend_from_slice(bytes);
                input.push(0);
            }
        }
        if input.is_empty() {
            return Ok(());
        }
        for spec in &self.specs[1..] {
            input.extend_from_slice(spec.as_bytes());
            input.push(0);
        }
        let out = self.run_with_input(
            &[
                "add",
                "-A",
                "--ignore-errors",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            input,
        )?;
        match added(&out) {
            true => Ok(()),
            false => Err(failed("add", &out)),
        }
    }

    fn token_file(&self) -> PathBuf {
        self.dir.join("watch-token")
    }

    /// The stat data of the files that can change `add -A`'s answer without a change in
    /// the work tree (taken once per hook, before the snapshot: a change during it only
    /// voids the token next time).
    #[cfg(target_os = "linux")]
    pub fn rules_stamp(&self) -> String {
        use std::os::unix::fs::MetadataExt;
        self.repo
            .rules
            .iter()
            .map(|p| match std::fs::metadata(p) {
                Ok(m) => format!("{}.{}.{}.{} ", m.ino(), m.size(), m.mtime(), m.mtime_nsec()),
                Err(_) => "- ".into(),
            })
            .collect()
    }

    /// The watcher's token our index is up to date with: `Ok(None)` when there is none,
    /// `Err(())` when git's ignore rules or configuration changed since it was kept (its
    /// stamp is not `stamp`; the watcher must then build its watches again: which
    /// directories are ignored may differ).
    #[allow(clippy::result_unit_err)]
    #[cfg(target_os = "linux")]
    pub fn token(&self, stamp: &str) -> Result<Option<String>, ()> {
        let Ok(body) = crate::util::statefile::read_to_string(&self.token_file()) else {
            return Ok(None);
        };
        match body.split_once('\n') {
            Some((token, kept)) if kept == stamp => Ok(Some(token.to_string())),
            _ => Err(()),
        }
    }

    /// Keep `token` with our index and `stamp` (after the index is written: a crash between
    /// the two leaves an older token, whose answer covers more). `kept`: what
    /// [`GitSnap::token`] found under the same stamp, so an unchanged token is not written.
    ///
    /// Written in place ([`crate::state::overwrite_unsynced`]): a torn token fails to parse
    /// or names a watcher that is gone, either answered with everything.
    #[cfg(target_os = "linux")]
    pub fn keep_token(&self, token: &str, stamp: &str, kept: Option<&str>) {
        if kept == Some(token) {
            return;
        }
        let body = format!("{token}\n{stamp}");
        if crate::state::overwrite_unsynced(&self.token_file(), body.as_bytes()).is_err() {
            self.forget_token();
        }
    }

    pub fn forget_token(&self) {
        let _ = std::fs::remove_file(self.token_file());
    }

    /// Keep our index as the snapshot at `to`: a hard link (git replaces the index by
    /// renaming a new file over it, so the link keeps this version), else a copy.
    pub fn save(&self, to: &Path) -> io::Result<()> {
        let _ = std::fs::remove_file(to);
        if std::fs::hard_link(self.index(), to).is_ok() {
            return Ok(());
        }
        let body = read_index_file(&self.index())?;
        crate::state::replace_unsynced(rustix::fs::CWD, to, &body, false)
    }

    /// The regular files that differ between the snapshot saved at `before` and our index
    /// now (symlinks and submodules on either side are left out).
    pub fn changes(&self, before: &Path) -> Result<Vec<Change>, String> {
        use std::os::unix::fs::MetadataExt;
        let same = match (std::fs::metadata(before), std::fs::metadata(self.index())) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if same {
            return Ok(Vec::new()); // the very file saved before: git did not rewrite it
        }
        let read = |p: &Path| read_index_file(p).map_err(|e| format!("{}: {e}", p.display()));
        let (old, new) = (read(before)?, read(&self.index())?);
        // Unchanged work tree, unchanged index: nothing to parse.
        if old == new {
            return Ok(Vec::new());
        }
        let shown = |e: io::Error| format!("{}: {e}", self.index().display());
        let old = parse_index(&old, self.repo.oid_len).map_err(shown)?;
        let new = parse_index(&new, self.repo.oid_len).map_err(shown)?;
        Ok(diff(&old, &new))
    }

    /// The previous content of each `(path, blob)`, in order, as the file held it on disk:
    /// git's stored form, or its checked-out form where attributes make them differ.
    /// Contents over `max` bytes are hashed, not kept.
    pub fn read_blobs(&self, blobs: &[(PathBuf, String)], max: u64) -> Result<Vec<Blob>, String> {
        // Two git processes side by side: which paths convert, and every stored form.
        let (filtered, out) = std::thread::scope(|s| {
            let filtered = s.spawn(|| self.filtered(blobs));
            let out = self.cat_batch(blobs, max);
            let filtered = filtered
                .join()
                .unwrap_or_else(|_| Err("git check-attr: its thread failed".into()));
            (filtered, out)
        });
        let (filtered, mut out) = (filtered?, out?);
        for (i, (path, oid)) in blobs.iter().enumerate() {
            if filtered[i] {
                out[i] = self.cat_filtered(path, oid, max)?;
            }
        }
        Ok(out)
    }

    /// Which of `blobs`' paths git converts between the stored and the checked-out form.
    fn filtered(&self, blobs: &[(PathBuf, String)]) -> Result<Vec<bool>, String> {
        if blobs.is_empty() {
            return Ok(Vec::new());
        }
        if self.repo.autocrlf {
            return Ok(vec![true; blobs.len()]);
        }
        let mut input = Vec::new();
        for (p, _) in blobs {
            input.extend_from_slice(p.as_os_str().as_bytes());
            input.push(0);
        }
        let out = self.piped(
            &[
                "check-attr",
                "-z",
                "--stdin",
                "eol",
                "filter",
                "ident",
                "working-tree-encoding",
            ],
            input,
        )?;
        let mut converted = std::collections::HashSet::new();
        let fields: Vec<&[u8]> = out.split(|&b| b == 0).collect();
        for f in fields.chunks(3) {
            if let [path, attr, value] = f {
                let set = !matches!(*value, b"unspecified" | b"unset" | b"");
                let converts = match *attr {
                    b"eol" => *value == b"crlf",
                    _ => set,
                };
                if converts {
                    converted.insert(path.to_vec());
                }
            }
        }
        Ok(blobs
            .iter()
            .map(|(p, _)| converted.contains(p.as_os_str().as_bytes()))
            .collect())
    }

    /// Run git with `args`, `input` on stdin (fed from a thread, so a large input and output
    /// never wait on each other), returning stdout.
    fn piped(&self, args: &[&str], input: Vec<u8>) -> Result<Vec<u8>, String> {
        let out = self.run_with_input(args, input)?;
        if !out.status.success() {
            return Err(failed(args[0], &out));
        }
        Ok(out.stdout)
    }

    /// Run git with `args` and `input` on stdin (see [`GitSnap::piped`]).
    fn run_with_input(
        &self,
        args: &[&str],
        input: Vec<u8>,
    ) -> Result<std::process::Output, String> {
        let mut child = self
            .git()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run git: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let feeder = std::thread::spawn(move || stdin.write_all(&input));
        let out = child
            .wait_with_output()
            .map_err(|e| format!("git {}: {e}", args[0]))?;
        let _ = feeder.join();
        Ok(out)
    }

    /// Every blob's stored content through one `git cat-file --batch`.
    fn cat_batch(&self, blobs: &[(PathBuf, String)], max: u64) -> Result<Vec<Blob>, String> {
        if blobs.is_empty() {
            return Ok(Vec::new());
        }
        let mut child = self
            .git()
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run git: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let input: String = blobs.iter().map(|(_, oid)| format!("{oid}\n")).collect();
        let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut reader = BufReader::with_capacity(1 << 16, stdout);
        let mut out = Vec::with_capacity(blobs.len());
        for _ in blobs {
            out.push(read_one(&mut reader, max).map_err(|e| format!("git cat-file: {e}"))?);
        }
        let _ = feeder.join();
        let _ = child.wait();
        Ok(out)
    }

    /// One blob's checked-out form (`git cat-file --filters`).
    fn cat_filtered(&self, path: &Path, oid: &str, max: u64) -> Result<Blob, String> {
        let mut arg = OsString::from("--path=");
        arg.push(path.as_os_str());
        let out = self
            .git()
            .args(["cat-file", "--filters"])
            .arg(arg)
            .arg(oid)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if !out.status.success() {
            return Ok(Blob::Missing);
        }
        Ok(if out.stdout.len() as u64 > max {
            Blob::TooBig {
                sha256: crate::hash::sha256_hex(&out.stdout),
                size: out.stdout.len() as u64,
            }
        } else {
            Blob::Bytes(out.stdout)
        })
    }
}

/// Whether `git add` updated the index. Naming an ignored path (the state directory's
/// exclusion when it is ignored anyway, a watcher's changed path that is ignored) makes git
/// say so and exit 1, with the index updated all the same (LC_ALL=C: the message is git's
/// own).
fn added(o: &std::process::Output) -> bool {
    o.status.success()
        || (o.status.code() == Some(1)
            && String::from_utf8_lossy(&o.stderr)
                .contains("are ignored by one of your .gitignore files"))
}

/// One answer of `git cat-file --batch`: `<oid> blob <size>\n<content>\n`, or
/// `<oid> missing\n`.
fn read_one(reader: &mut impl BufRead, max: u64) -> io::Result<Blob> {
    let mut header = String::new();
    reader.read_line(&mut header)?;
    let parts: Vec<&str> = header.split_whitespace().collect();
    let size: u64 = match parts.as_slice() {
        [_, "blob", size] => size
            .parse()
            .map_err(|_| io::Error::other(format!("bad header {header:?}")))?,
        [_, "missing"] | [_, "ambiguous"] => return Ok(Blob::Missing),
        _ => return Err(io::Error::other(format!("bad header {header:?}"))),
    };
    let mut body = reader.take(size);
    let blob = if size > max {
        let (sha256, n) = crate::hash::sha256_reader(&mut body)?;
        if n != size {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        Blob::TooBig { sha256, size }
    } else {
        let mut bytes = Vec::with_capacity(size as usize);
        body.read_to_end(&mut bytes)?;
        if bytes.len() as u64 != size {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        Blob::Bytes(bytes)
    };
    let mut nl = [0u8; 1];
    reader.read_exact(&mut nl)?;
    Ok(blob)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_answer_is_read_whole_missing_or_hashed_over_the_cap() {
        let input = b"1111 blob 3\nabc\n2222 missing\n3333 blob 5\nhello\n".to_vec();
        let mut r = BufReader::new(&input[..]);
        assert!(matches!(read_one(&mut r, 10).unwrap(), Blob::Bytes(b) if b == b"abc"));
        assert!(matches!(read_one(&mut r, 10).unwrap(), Blob::Missing));
        match read_one(&mut r, 4).unwrap() {
            Blob::TooBig { sha256, size } => {
                assert_eq!(size, 5);
                assert_eq!(sha256, crate::hash::sha256_hex(b"hello"));
            }
            _ => panic!("over the cap"),
        }
    }
}
