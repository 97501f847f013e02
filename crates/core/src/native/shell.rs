//! Shell commands an agent runs (Claude Code `Bash`, Gemini CLI `run_shell_command`),
//! journaled like its own edits: the before-hook snapshots the workspace, the after-hook
//! finds what the command created, changed or deleted and appends one `native:<tool>` row
//! per file, each with its previous content in the object store, so `history`, `restore`
//! and `restore --session` reach them. A file the command wrote that now holds a secret at
//! or above the hooks' reject level is reported to the caller (the write already happened).
//!
//! - In a git work tree the snapshot is git's own ([`super::gitsnap`]); elsewhere a stat
//!   manifest and a content cache ([`super::plainsnap`]). Ignored files are out of scope in
//!   both; symlinks are never followed nor journaled; the state directory is left out.
//! - What links the two hooks is the snapshot itself, in `.resilient_write/hooks/shell/calls/`
//!   and named by the agent's call id (else its session): our git index hard linked
//!   (`<key>.index`) or the stat manifest (`<key>.manifest`). A command the user refuses has
//!   no after-hook: its snapshot is dropped by a later call for the same key, or a day after
//!   it was made (its ctime: a link keeps the index's mtime) by any before-hook.
//! - In a git work tree a resident watcher ([`super::watch`]) tells the hooks which paths
//!   changed since our index was last brought up to date, so git looks at those only, and
//!   around a command that changes nothing is not run at all.
//! - Rows of one command are appended in one write ([`crate::journal::Journal::append_many`])
//!   while holding, in a stable order, the directory lock of every file read for them (the
//!   lock every pipeline write takes). Objects are deduplicated by content. A command that
//!   changes more than `max_files` files has the first `max_files` (by path) journaled, each
//!   row saying so in [`SHELL_CAP_FIELD`]; a file over the write cap is journaled with its
//!   hash but its content is not kept (`history_not_kept`).
//! - Each row carries the command's first [`COMMAND_CHARS`] characters, redacted by L0
//!   first, so a secret on the command line never reaches the journal.

use super::gitsnap::{Blob, GitSnap};
use super::plainsnap::{self, PlainSnap};
#[cfg(target_os = "linux")]
use super::watch::{Changed, Synced, Watch};
use super::{HOOKS_DIR, NativeWorkspace};
use crate::envelope::Failure;
use crate::journal::paths::RowPath;
use crate::journal::{JournalRow, new_journal_id, now_rfc3339};
use crate::policy::active::RejectAt;
use crate::util::dirlock::DirLocks;
use crate::workspace::Target;
use crate::write::pipeline::Existing;
use rustix::fd::AsFd;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// The row field naming the cap when a command changed more files than were journaled.
pub const SHELL_CAP_FIELD: &str = "shell_cap";
/// Files journaled per command at most, unless the policy says otherwise.
pub const DEFAULT_MAX_FILES: usize = 5000;
/// How much of the command a row keeps.
pub const COMMAND_CHARS: usize = 200;
/// A before-hook's record older than this is dropped (its command was refused).
const STALE_SECS: u64 = 24 * 3600;

/// One shell command of an agent.
#[derive(Debug, Clone)]
pub struct ShellCall<'a> {
    /// The agent: the rows' `caller`.
    pub agent: &'a str,
    /// The agent's shell tool: the rows' `tool` is `native:<tool>`.
    pub tool: &'a str,
    pub session: Option<&'a str>,
    pub call_id: Option<&'a str>,
    pub command: &'a str,
    /// The level at which a secret the command wrote is reported.
    pub reject_at: RejectAt,
    pub max_files: usize,
    /// The write cap: larger files are journaled without their content.
    pub max_bytes: u64,
    /// The program whose `shell-watcher` command watches the workspace between commands
    /// ([`super::watch`]); `None`: every snapshot walks the whole work tree.
    pub watcher: Option<&'a Path>,
}

/// A secret a command wrote: the file, the rule, its family and line (never the secret).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub path: String,
    pub pattern: String,
    pub kind: String,
    pub line: u64,
}

/// What the after-hook recorded.
#[derive(Debug, Default)]
pub struct ShellReport {
    /// Files the command created, changed or deleted in the workspace.
    pub changed: usize,
    pub journaled: usize,
    pub secrets: Vec<Found>,
    /// For a person (the hook prints them on stderr): the cap, files not journaled.
    pub notes: Vec<String>,
}

/// A file's content before the command, as the engine found it.
enum Pre {
    /// It did not exist.
    Absent,
    /// Its content (from git).
    Bytes(Vec<u8>),
    /// Its hash; the content is in the object store or in the plain snapshot's cache.
    Cached(String),
    /// Its hash and size: over the write cap, not kept.
    TooBig(String, u64),
    /// Its size only: the stat snapshot did not read it (over the cap, or past its budget).
    Unread(u64),
    /// It existed, but its content cannot be found.
    Lost,
}

/// One changed file.
struct Item {
    abs: PathBuf,
    pre: Pre,
    exists_after: bool,
}

impl NativeWorkspace {
    /// The workspace's root (the agent's cwd).
    fn root(&self) -> io::Result<PathBuf> {
        self.workspaces
            .roots()
            .next()
            .map(Path::to_path_buf)
            .ok_or_else(|| io::Error::other("no workspace root"))
    }

    fn calls_dir(&self) -> io::Result<PathBuf> {
        crate::state::open_subdir(&self.state_dir, &[HOOKS_DIR, "shell", "calls"], 0o700, true)
            .map_err(|f| io::Error::other(f.to_string()))?
            .map(|d| d.path)
            .ok_or_else(|| io::Error::other("no calls directory"))
    }

    fn call_key(call: &ShellCall<'_>) -> String {
        let key = call.call_id.or(call.session).unwrap_or("-");
        crate::hash::sha256_hex(key.as_bytes())[..32].to_string()
    }

    /// Before a shell command: snapshot the workspace and leave the record its after-hook
    /// reads: the snapshot itself, named by the call (`<key>.index`, our git index hard
    /// linked, or `<key>.manifest`, the stat manifest; which one says which engine).
    pub fn shell_before(&self, call: &ShellCall<'_>) -> io::Result<()> {
        self.usable()?;
        let root = self.root()?;
        let calls = self.calls_dir()?;
        drop_stale(&calls);
        let key = Self::call_key(call);
        let (index, manifest) = (
            calls.join(format!("{key}.index")),
            calls.join(format!("{key}.manifest")),
        );
        let _ = std::fs::remove_file(&manifest);
        match GitSnap::open(&root, &self.state_dir) {
            Some(git) => {
                let _lock = git.lock()?;
                git.maybe_rebuild();
                self.git_snapshot(&git, &root, call)?;
                git.save(&index)
            }
            None => {
                let _ = std::fs::remove_file(&index);
                let plain = PlainSnap::open(&root, &self.state_dir)?;
                let m = plain.scan(&plain.baseline(), &self.objects, call.max_bytes)?;
                plain.save_baseline(&m)?;
                plainsnap::write_manifest(&manifest, &m)
            }
        }
    }

    /// After a shell command: journal every file it created, changed or deleted.
    pub fn shell_after(&self, call: &ShellCall<'_>) -> io::Result<ShellReport> {
        self.usable()?;
        let root = self.root()?;
        let calls = self.calls_dir()?;
        let key = Self::call_key(call);
        let manifest = calls.join(format!("{key}.manifest"));
        let index = calls.join(format!("{key}.index"));
        // The snapshot goes, used or not.
        struct Discard<'p>([&'p Path; 2]);
        impl Drop for Discard<'_> {
            fn drop(&mut self) {
                for p in self.0 {
                    let _ = std::fs::remove_file(p);
                }
            }
        }
        let engine = match (index.symlink_metadata(), manifest.symlink_metadata()) {
            (Ok(_), _) => Some("git"),
            (_, Ok(_)) => Some("plain"),
            _ => None,
        };
        let _snapshot = Discard([&manifest, &index]);
        let Some(engine) = engine else {
            return Ok(ShellReport {
                notes: vec![
                    "no snapshot from before the command (was the before-hook \
                             installed?): its changes are not journaled"
                        .into(),
                ],
                ..ShellReport::default()
            });
        };
        let items = match engine {
            "git" => {
                let git = GitSnap::open(&root, &self.state_dir)
                    .ok_or_else(|| io::Error::other("the work tree is no longer a git one"))?;
                let _lock = git.lock()?;
                self.git_snapshot(&git, &root, call)?;
                self.git_items(&git, &index, call.max_bytes)?
            }
            _ => {
                let before = plainsnap::read_manifest(&manifest);
                let before =
                    before.ok_or_else(|| io::Error::other("the snapshot's manifest is gone"))?;
                let plain = PlainSnap::open(&root, &self.state_dir)?;
                self.plain_items(&plain, &root, &before, call.max_bytes)?
            }
        };
        self.journal_items(items, call)
    }

    /// Bring our index up to date with the work tree (the lock held): the whole work tree,
    /// there being no watcher where there is no inotify.
    #[cfg(not(target_os = "linux"))]
    fn git_snapshot(&self, git: &GitSnap, _root: &Path, _call: &ShellCall<'_>) -> io::Result<()> {
        git.snapshot().map_err(io::Error::other)
    }

    /// Bring our index up to date with the work tree (the lock held): only the paths the
    /// watcher saw change when it vouches for the rest, else the whole work tree. A watcher
    /// that is not running is started for the next command.
    #[cfg(target_os = "linux")]
    fn git_snapshot(&self, git: &GitSnap, root: &Path, call: &ShellCall<'_>) -> io::Result<()> {
        let full = || git.snapshot().map_err(io::Error::other);
        let watch = call
            .watcher
            .and_then(|exe| Some((exe, Watch::open(&self.state_dir)?)));
        let Some((exe, watch)) = watch else {
            return full();
        };
        let stamp = git.rules_stamp();
        let (since, rules_changed) = match git.token(&stamp) {
            Ok(t) => (t, false),
            Err(()) => (None, true),
        };
        match watch.sync(root, since.as_deref(), rules_changed) {
            Ok(Synced { token, changed }) => {
                let partial = match changed {
                    Changed::Paths(paths) => git.snapshot_paths(root, &paths).is_ok(),
                    Changed::All => false,
                };
                if !partial {
                    full()?;
                }
                git.keep_token(&token, &stamp, since.as_deref());
            }
            Err(e) => {
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) {
                    let _ = watch.spawn(exe, root, &self.state_dir);
                }
                full()?;
            }
        }
        Ok(())
    }

    fn git_items(&self, git: &GitSnap, before: &Path, max: u64) -> io::Result<Vec<Item>> {
        let changes = git.changes(before).map_err(io::Error::other)?;
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: Vec<(PathBuf, String)> = changes
            .iter()
            .filter_map(|c| c.old.clone().map(|o| (c.path.clone(), o)))
            .collect();
        let mut blobs = git
            .read_blobs(&wanted, max)
            .map_err(io::Error::other)?
            .into_iter();
        let mut grown = 0;
        let items = changes
            .into_iter()
            .map(|c| {
                let abs = git.top().join(&c.path);
                if c.exists_after {
                    grown += std::fs::symlink_metadata(&abs).map_or(0, |m| m.len());
                }
                let pre = match c.old {
                    None => Pre::Absent,
                    Some(_) => match blobs.next() {
                        Some(Blob::Bytes(b)) => Pre::Bytes(b),
                        Some(Blob::TooBig { sha256, size }) => Pre::TooBig(sha256, size),
                        _ => Pre::Lost,
                    },
                };
                Item {
                    abs,
                    pre,
                    exists_after: c.exists_after,
                }
            })
            .collect();
        git.grew(grown);
        Ok(items)
    }

    fn plain_items(
        &self,
        plain: &PlainSnap,
        root: &Path,
        before: &plainsnap::Manifest,
        max: u64,
    ) -> io::Result<Vec<Item>> {
        let after = plain.scan(before, &self.objects, max)?;
        plain.save_baseline(&after)?;
        let items = plainsnap::diff(before, &after)
            .into_iter()
            .map(|(path, b, a)| Item {
                abs: root.join(path),
                pre: match b {
                    None => Pre::Absent,
                    // Known by its stat data alone: its content was never read.
                    Some(e) if e.sha256.is_empty() => Pre::Unread(e.size),
                    Some(e) if e.size > max => Pre::TooBig(e.sha256.clone(), e.size),
                    Some(e) => Pre::Cached(e.sha256.clone()),
                },
                exists_after: a.is_some(),
            })
            .collect();
        plain.prune(&after);
        Ok(items)
    }

    /// The row path of a workspace file (`None`: outside the workspace, or state).
    fn workspace_row_path(&self, abs: &Path) -> Option<RowPath> {
        if abs.starts_with(&self.state_dir) {
            return None;
        }
        self.workspaces.journal_paths().relative(abs)
    }

    fn journal_items(&self, items: Vec<Item>, call: &ShellCall<'_>) -> io::Result<ShellReport> {
        let mut items: Vec<(Item, RowPath)> = items
            .into_iter()
            .filter_map(|i| self.workspace_row_path(&i.abs).map(|rp| (i, rp)))
            .collect();
        items.sort_by(|a, b| a.0.abs.cmp(&b.0.abs));
        let mut report = ShellReport {
            changed: items.len(),
            ..ShellReport::default()
        };
        if items.is_empty() {
            return Ok(report);
        }
        let cap = (items.len() > call.max_files).then(|| {
            format!(
                "the command changed {} files; the first {} (by path) are journaled \
                 (hooks.shell_max_files)",
                items.len(),
                call.max_files
            )
        });
        items.truncate(call.max_files);
        if let Some(c) = &cap {
            report.notes.push(c.clone());
        }
        // The files read for the rows, each directory locked once, in a stable order.
        let targets: Vec<Option<Target>> = items
            .iter()
            .map(|(i, _)| {
                i.exists_after
                    .then(|| self.resolve(&i.abs.display().to_string()))
                    .flatten()
            })
            .collect();
        let _locks =
            DirLocks::take(targets.iter().flatten().map(|t| t.dir.as_fd())).map_err(|e| e.error)?;
        let root = self.root()?;
        let plain = PlainSnap::open(&root, &self.state_dir).ok();
        let command = self.redacted_command(call.command);
        let mut rows = Vec::with_capacity(items.len());
        let mut batch = Batch::default();
        for ((item, rp), target) in items.into_iter().zip(&targets) {
            let now = match target {
                Some(t) => match self.read_post(t, call.max_bytes) {
                    Ok(n) => n,
                    Err(e) => {
                        report
                            .notes
                            .push(format!("{}: not journaled ({e})", rp.path));
                        continue;
                    }
                },
                None => None,
            };
            if item.exists_after && now.is_none() {
                continue; // gone again, or beyond the workspace now
            }
            let created = matches!(item.pre, Pre::Absent);
            let not_kept = match &item.pre {
                Pre::TooBig(_, size) => Some(format!("{size} bytes, over the write cap")),
                Pre::Unread(size) => Some(format!(
                    "{size} bytes, not read by the snapshot (over the write cap, or past the \
                     content one snapshot caches)"
                )),
                _ => None,
            };
            // The content before: its hash, and its bytes when the store lacks them.
            let (prev, pre_bytes, stored) = match item.pre {
                Pre::Absent | Pre::Lost | Pre::Unread(_) => (None, None, false),
                Pre::Bytes(b) => {
                    let h = crate::hash::sha256_hex(&b);
                    let stored = self.objects.contains(&h);
                    (Some(h), Some(b), stored)
                }
                Pre::Cached(h) => {
                    let stored = self.objects.contains(&h);
                    let bytes = if stored {
                        None
                    } else {
                        plain
                            .as_ref()
                            .and_then(|p| std::fs::read(p.blob(&h)).ok())
                            .filter(|b| crate::hash::sha256_hex(b) == h)
                    };
                    (Some(h), bytes, stored)
                }
                Pre::TooBig(h, _) => (Some(h), None, false),
            };
            if now.is_some() && now.as_ref().map(|n| &n.sha256) == prev.as_ref() {
                continue; // touched, not changed
            }
            if let Some(n) = &now {
                let before = match &pre_bytes {
                    Some(b) => Some(String::from_utf8_lossy(b).into_owned()),
                    None if stored => prev
                        .as_deref()
                        .and_then(|h| self.objects.get(h).ok().flatten())
                        .map(|b| String::from_utf8_lossy(&b).into_owned()),
                    None => None,
                };
                self.screen_post(n, before.as_deref(), &rp.path, call, &mut report);
            }
            let mut extra: BTreeMap<String, Value> = BTreeMap::new();
            if let Some(root) = &rp.root {
                extra.insert("root".into(), Value::from(root.clone()));
            }
            if let Some(s) = call.session {
                extra.insert("agent_session".into(), Value::from(s));
            }
            if let Some(id) = call.call_id {
                extra.insert("call_id".into(), Value::from(id));
            }
            extra.insert("command".into(), Value::from(command.clone()));
            if let Some(why) = not_kept {
                extra.insert(
                    crate::write::pipeline::NOT_KEPT_FIELD.into(),
                    Value::from(why),
                );
            }
            if let Some(c) = &cap {
                extra.insert(SHELL_CAP_FIELD.into(), Value::from(c.clone()));
            }
            let mode = match (&now, created) {
                (_, true) => "create",
                (None, false) => "delete",
                _ => "overwrite",
            };
            let row = JournalRow {
                journal_id: new_journal_id(),
                ts: now_rfc3339(),
                path: rp.path.clone(),
                sha256: now.as_ref().map(|n| n.sha256.clone()).unwrap_or_default(),
                prev_sha256: prev.clone(),
                bytes: now.as_ref().map_or(0, |n| n.size),
                mode: mode.into(),
                caller: call.agent.to_string(),
                tool: format!("native:{}", call.tool),
                extra,
            };
            let post = now
                .filter(|n| n.size <= call.max_bytes && !n.bytes.is_empty())
                .map(|n| (n.bytes, n.sha256));
            let pre = match (prev, pre_bytes) {
                (Some(h), Some(b)) if !stored && b.len() as u64 <= call.max_bytes => Some((b, h)),
                _ => None,
            };
            batch.add(row, stored, pre, post);
            if batch.bytes > BATCH_BYTES {
                rows.extend(batch.flush(&self.objects));
            }
        }
        rows.extend(batch.flush(&self.objects));
        if !rows.is_empty() {
            let need: u64 = rows.iter().map(|r| r.to_line().len() as u64).sum();
            self.with_room(need, || self.journal.append_many(&rows))?
                .commit();
        }
        report.journaled = rows.len();
        Ok(report)
    }

    /// The file now: its whole content up to `max` bytes, else only its hash and size.
    fn read_post(&self, target: &Target, max: u64) -> io::Result<Option<Existing>> {
        let st = match rustix::fs::statat(
            &target.dir,
            &target.name,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(st) => st,
            Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Ok(None);
        }
        if (st.st_size as u64) <= max {
            return self.current(target);
        }
        let fd = rustix::fs::openat(
            &target.dir,
            &target.name,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        let (sha256, size) = crate::hash::sha256_reader(std::fs::File::from(fd))?;
        Ok(Some(Existing {
            bytes: Vec::new(),
            sha256,
            mode: st.st_mode & 0o7777,
            uid: st.st_uid,
            gid: st.st_gid,
            nlink: st.st_nlink,
            size,
            inode: None,
        }))
    }

    /// L0 on what the command introduced into a text file (as `safe_replace` scores an
    /// edit, against its content `before`): findings at or above the reject level go to the
    /// report.
    fn screen_post(
        &self,
        now: &Existing,
        before: Option<&str>,
        shown: &str,
        call: &ShellCall<'_>,
        report: &mut ShellReport,
    ) {
        if now.bytes.is_empty() || now.size > call.max_bytes {
            return;
        }
        let Ok(after) = std::str::from_utf8(&now.bytes) else {
            return; // binary: not screened
        };
        match self
            .policy
            .preflight_edit(before.unwrap_or(""), after, true, call.reject_at)
        {
            Ok(()) => {}
            Err(Failure::ContentBlocked { detected, .. }) => {
                for d in detected {
                    let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
                    let found = Found {
                        path: shown.to_string(),
                        pattern: s("pattern"),
                        kind: s("kind"),
                        line: d.get("line").and_then(Value::as_u64).unwrap_or(0),
                    };
                    if !report.secrets.contains(&found) {
                        report.secrets.push(found);
                    }
                }
            }
            Err(e) => report.notes.push(format!("{shown}: not screened ({e})")),
        }
    }

    /// The command as a row keeps it: every L0 finding replaced by its placeholder, then
    /// cut to [`COMMAND_CHARS`] characters.
    fn redacted_command(&self, command: &str) -> String {
        let redacted = match self.policy.classifier() {
            Ok(c) => crate::classify::redact(command, c).content,
            Err(_) => return "(not recorded: the policy is unusable)".into(),
        };
        redacted.chars().take(COMMAND_CHARS).collect()
    }
}

/// Contents gathered for one [`ObjectStore::put_many`](crate::objects::ObjectStore::put_many)
/// before the rows that name them, flushed every [`BATCH_BYTES`].
#[derive(Default)]
struct Batch {
    /// Rows, and whether each one's pre-image is stored already.
    rows: Vec<(JournalRow, bool)>,
    /// `(row, bytes, sha256, is the pre-image)` to store.
    objects: Vec<(usize, Vec<u8>, String, bool)>,
    bytes: u64,
}

/// Content held in memory before a batch is stored.
const BATCH_BYTES: u64 = 64 << 20;

impl Batch {
    fn add(
        &mut self,
        row: JournalRow,
        stored: bool,
        pre: Option<(Vec<u8>, String)>,
        post: Option<(Vec<u8>, String)>,
    ) {
        let at = self.rows.len();
        self.rows.push((row, stored));
        for (content, is_pre) in [(pre, true), (post, false)] {
            if let Some((bytes, sha256)) = content {
                self.bytes += bytes.len() as u64;
                self.objects.push((at, bytes, sha256, is_pre));
            }
        }
    }

    /// Store the batch's contents (durable before the rows naming them are appended) and
    /// return its rows, each saying whether its pre-image is kept. A content that cannot be
    /// kept is a cache miss, never a lost row.
    fn flush(&mut self, objects: &crate::objects::ObjectStore) -> Vec<JournalRow> {
        let items: Vec<(&[u8], &str)> = self
            .objects
            .iter()
            .map(|(_, b, h, _)| (b.as_slice(), h.as_str()))
            .collect();
        let results = objects.put_many(&items);
        let mut kept = vec![false; self.rows.len()];
        for ((at, _, sha256, is_pre), r) in self.objects.iter().zip(results) {
            if *is_pre {
                kept[*at] = r.is_ok() || objects.contains(sha256);
            }
        }
        self.objects.clear();
        self.bytes = 0;
        std::mem::take(&mut self.rows)
            .into_iter()
            .zip(kept)
            .map(|((mut row, stored), kept)| {
                // A created file replaced nothing: nothing was lost (as native rows say).
                let pre_image = match &row.prev_sha256 {
                    None => row.mode == "create",
                    Some(_) => stored || kept,
                };
                row.extra.insert("pre_image".into(), Value::from(pre_image));
                row
            })
            .collect()
    }
}

/// Remove records of calls whose after-hook never came (a day old).
fn drop_stale(calls: &Path) {
    let Ok(dir) = std::fs::read_dir(calls) else {
        return;
    };
    use std::os::unix::fs::MetadataExt;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    for e in dir.flatten() {
        // By the inode's change time: a hard link to our git index has the index's old
        // mtime, and linking sets the ctime.
        let old = e
            .metadata()
            .is_ok_and(|m| now - m.ctime() > STALE_SECS as i64);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
