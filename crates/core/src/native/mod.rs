//! Native edits (beyond the paper): writes an agent makes with its own Write and Edit tools,
//! which never pass through this server. The agents' hooks (`resilient-write hook`) call this
//! module before such a write (compute the resulting content to screen it, keep the current
//! content as a pre-image) and after it (journal the new content, and keep it too, so this
//! version stays restorable whoever changes the file next), so `history`, `restore`,
//! `journal_tail` and `analytics` cover native edits too. The agents' shell commands are
//! journaled file by file (`shell.rs`, with the snapshots of `gitsnap.rs` and `plainsnap.rs`),
//! and the journal rows of their MCP tool calls attributed to their session
//! ([`NativeWorkspace::attribute`], [`crate::agent_session`]).
//!
//! Guarantees:
//! - Files are named through [`Workspaces::resolve`], like every tool path: a path outside the
//!   workspace (or in the state directory) is `None`, and the hook lets it through untouched.
//! - The pre-image goes to the same object store, under the same retention (`gc`), as the
//!   pipeline's; the before-hook stages it, and it is durable in the store before the row
//!   that names it is appended ([`NativeWorkspace::keep_pre_image`]).
//! - The journal row is appended with [`Journal::append`] (one `write(2)` under `flock`,
//!   `fdatasync`ed) while holding the same directory lock the pipeline takes, so a running
//!   server and concurrent hooks never interleave a row, and the file read for the row's
//!   `sha256` is not being replaced by the server meanwhile.
//! - What links the two hook calls is a small record in `.resilient_write/hooks/` (the
//!   previous sha256 of one path), written by [`crate::state::replace_unsynced`]: not
//!   fsynced, as losing it (a crash between the two calls) loses only the row's
//!   `prev_sha256`, which then falls back to the path's newest journaled version. A row
//!   says whether the content it replaced is in the object store (`pre_image`); Cursor has
//!   no before-edit hook, so its rows say `false`.
//! - Rows carry hashes, sizes and names only, never content.

use crate::hash::sha256_hex;
use crate::journal::{Journal, JournalRow, new_journal_id, now_rfc3339};
use crate::objects::ObjectStore;
use crate::policy::active::ActivePolicy;
use crate::state::replace_unsynced;
use crate::util::dirlock::DirLock;
use crate::workspace::{Target, Workspaces};
use crate::write::pipeline::{Existing, read_existing};
use rustix::fd::AsFd;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

mod gitindex;
mod gitsnap;
mod plainsnap;
mod shell;
#[cfg(test)]
mod shell_tests;
pub mod watch;

pub use shell::{COMMAND_CHARS, DEFAULT_MAX_FILES, Found, SHELL_CAP_FIELD, ShellCall, ShellReport};

/// Directory of the before/after records inside the state directory.
pub use crate::layout::HOOKS_DIR;

/// The agents' edit tools' replacements, and what they produce: the shared edit engine's
/// (for the before-hook to screen what the agent's tool will write).
pub use crate::edit::{Replacement, apply_replacements as apply};

/// What the before-hook left for the after-hook of one path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Pending {
    /// The content's sha256 before the edit (`None`: the file did not exist).
    prev_sha256: Option<String>,
    /// The agent's id of the tool call, when it gives one (matches the after-hook's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call_id: Option<String>,
    /// The previous content waits beside this record (`<record>.pre`), not yet durable, for
    /// the after-hook to move into the object store (see [`NativeWorkspace::keep_pre_image`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    staged: bool,
}

/// Who made a native edit, for its journal row.
#[derive(Debug, Clone)]
pub struct NativeCall<'a> {
    /// The agent (`claude-code`, `cursor`, `gemini`): the row's `caller`.
    pub agent: &'a str,
    /// The agent's tool name: the row's `tool` is `native:<tool>`.
    pub tool: &'a str,
    /// The agent's session (conversation) id: the row's `agent_session`.
    pub session: Option<&'a str>,
    /// The agent's id of this tool call, linking the before and after hooks.
    pub call_id: Option<&'a str>,
    /// The row's mode when the file existed before (`overwrite` or `replace`).
    pub replacing: &'a str,
}

/// A workspace as the hooks see it: its roots, state directory, journal, objects and policy.
pub struct NativeWorkspace {
    workspaces: Workspaces,
    state_dir: PathBuf,
    journal: Journal,
    objects: ObjectStore,
    policy: ActivePolicy,
    /// Why the state directory must not be used (`state::planted`).
    planted: Vec<String>,
    /// The write cap: a larger new version is journaled without its content.
    max_bytes: u64,
}

impl NativeWorkspace {
    /// The workspace rooted at `root` (the agent's `cwd`), its state under `state_root`
    /// (default: `root`), its policy from `policy_file` (as `RW_POLICY_FILE`). `home` itself
    /// is never a workspace. Reads nothing but the policy file.
    pub fn open(
        root: &Path,
        state_root: Option<&Path>,
        policy_file: Option<&Path>,
        home: Option<&Path>,
    ) -> NativeWorkspace {
        let mut workspaces = Workspaces::new(&[root.to_path_buf()], root, home);
        let explicit = state_root.is_some();
        let state_root = state_root.unwrap_or(root);
        let state_root = state_root
            .canonicalize()
            .unwrap_or_else(|_| state_root.to_path_buf());
        let state_dir = state_root.join(crate::layout::STATE_DIR_NAME);
        workspaces.set_state_dir(&state_dir);
        let planted = crate::state::planted(&state_dir, explicit);
        let policy_path = ActivePolicy::path_for(policy_file, &state_root);
        // a hook scores once and exits: its drafts are scanned on one thread
        let policy = if planted.is_empty() || !policy_path.starts_with(&state_dir) {
            ActivePolicy::load(policy_path)
        } else {
            ActivePolicy::defaults(policy_path)
        }
        .on_one_thread();
        NativeWorkspace {
            workspaces,
            journal: Journal::new(&state_dir),
            objects: ObjectStore::new(&state_dir),
            state_dir,
            policy,
            planted,
            max_bytes: crate::layout::DEFAULT_MAX_WRITE_BYTES,
        }
    }

    /// With the write cap `max_bytes` (`RW_MAX_WRITE_BYTES`).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> NativeWorkspace {
        self.max_bytes = max_bytes;
        self
    }

    /// Record that agent `agent`'s session `session` wrote the journal rows `journal_ids`
    /// through our MCP tool `tool` (the agent's after-hook on our tools).
    pub fn attribute(
        &self,
        agent: &str,
        session: &str,
        tool: &str,
        journal_ids: Vec<String>,
    ) -> io::Result<()> {
        self.usable()?;
        let a = crate::agent_session::Attribution {
            ts: now_rfc3339(),
            agent_session: session.into(),
            caller: agent.into(),
            tool: tool.into(),
            journal_ids,
        };
        let need = serde_json::to_vec(&a).map_or(4096, |v| v.len() as u64);
        self.with_room(need, || crate::agent_session::append(&self.state_dir, &a))
    }

    pub fn policy(&self) -> &ActivePolicy {
        &self.policy
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Why the state directory must not be used; empty when it may.
    pub fn state_refused(&self) -> &[String] {
        &self.planted
    }

    /// Whether the workspace has an accepted root (`$HOME` or `/` are refused).
    pub fn has_root(&self) -> bool {
        self.workspaces.roots().next().is_some()
    }

    /// Whether `path` (absolute, or relative to the workspace root) lies beneath the
    /// workspace: symlinks of its existing ancestors followed, `..` taken lexically. A path
    /// outside it is let through untouched by every hook.
    pub fn inside(&self, path: &str) -> bool {
        let p = Path::new(path);
        let abs = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.workspaces.cwd().join(p)
        };
        let mut lexical = PathBuf::new();
        for c in abs.components() {
            match c {
                std::path::Component::ParentDir => {
                    lexical.pop();
                }
                std::path::Component::CurDir => {}
                other => lexical.push(other),
            }
        }
        // The deepest existing ancestor, canonical, then the rest as given.
        let mut existing = lexical.as_path();
        let mut rest = Vec::new();
        let canonical = loop {
            if let Ok(c) = existing.canonicalize() {
                break rest.iter().rev().fold(c, |acc: PathBuf, n| acc.join(n));
            }
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent;
                }
                _ => break lexical.clone(),
            }
        };
        self.workspaces.roots().any(|r| canonical.starts_with(r))
    }

    /// The file `path` names beneath the workspace, or `None` when it is outside it, in the
    /// state directory, or its directory does not exist yet (it is not created here: the
    /// agent's call may still be refused).
    pub fn resolve(&self, path: &str) -> Option<Target> {
        if !self.inside(path) {
            return None;
        }
        self.workspaces.resolve(path, false).ok()
    }

    /// The current content of `target` (`None`: it does not exist).
    pub fn current(&self, target: &Target) -> io::Result<Option<Existing>> {
        read_existing(&target.dir, &target.name)
    }

    /// Before a native write of `target`: keep `existing` (its current content) for the object
    /// store and leave the record the after-hook reads. Returns the pre-image's sha256.
    ///
    /// The content is written beside the record and its writeback started, but nothing waits
    /// for the disk here: the after-hook makes it durable and moves it into the store before
    /// the journal row that names it is appended (a pre-image matters only through that row;
    /// a call the user refuses never gets one). The before-hook, which the agent waits for
    /// before every edit, pays no fsync.
    pub fn keep_pre_image(
        &self,
        target: &Target,
        existing: Option<&Existing>,
        call: &NativeCall<'_>,
    ) -> io::Result<Option<String>> {
        self.usable()?;
        let dir = self
            .hooks_dir(true)?
            .ok_or_else(|| io::Error::other("no hooks directory"))?;
        let name = Self::pending_name(target);
        let staged = match existing {
            Some(e) if !self.objects.contains(&e.sha256) => {
                let pre = format!("{name}.pre");
                self.with_room(e.bytes.len() as u64, || {
                    replace_unsynced(&dir.dir, Path::new(&pre), &e.bytes, true)
                })?;
                true
            }
            _ => {
                // Nothing to move: no stale content of an earlier call may stand in for it.
                let _ = rustix::fs::unlinkat(
                    &dir.dir,
                    format!("{name}.pre").as_str(),
                    rustix::fs::AtFlags::empty(),
                );
                false
            }
        };
        let pending = Pending {
            prev_sha256: existing.map(|e| e.sha256.clone()),
            call_id: call.call_id.map(str::to_string),
            staged,
        };
        let body = serde_json::to_vec(&pending).map_err(io::Error::other)?;
        replace_unsynced(&dir.dir, Path::new(&name), &body, false)?;
        Ok(pending.prev_sha256)
    }

    /// After a native write of `target`: append its journal row (`None`: the content did not
    /// change, or the file is gone, and nothing is recorded). The previous version is the
    /// before-hook's record when there is one for this call, else the path's newest journaled
    /// version; `pre_image` says whether its content is in the object store.
    pub fn record(&self, target: &Target, call: &NativeCall<'_>) -> io::Result<Option<JournalRow>> {
        self.usable()?;
        // The pipeline's directory lock: no server write into this directory meanwhile.
        let _lock = DirLock::take(target.dir.as_fd())?;
        self.record_locked(target, call)
    }

    fn record_locked(
        &self,
        target: &Target,
        call: &NativeCall<'_>,
    ) -> io::Result<Option<JournalRow>> {
        let pending = self.take_pending(target)?;
        let mut staged = pending.as_ref().is_some_and(|p| p.staged);
        let Some(now) = self.current(target)? else {
            self.settle_staged(target, None, &mut staged);
            return Ok(None);
        };
        let (prev, known) = match pending {
            Some(p)
                if p.call_id.is_none()
                    || call.call_id.is_none()
                    || p.call_id.as_deref() == call.call_id =>
            {
                (p.prev_sha256, true)
            }
            _ => {
                self.settle_staged(target, None, &mut staged);
                (self.newest_version(target)?, false)
            }
        };
        if prev.as_deref() == Some(now.sha256.as_str()) {
            self.settle_staged(target, None, &mut staged);
            return Ok(None);
        }
        // The pre-image is durable in the store before the row naming it is appended.
        self.settle_staged(target, prev.as_deref(), &mut staged);
        // So is the new content: this version stays restorable after the next change,
        // whoever makes it (a shell command outside git, the user's editor). A cache like
        // any pre-image: one that cannot be kept is a warning, never a lost row.
        if now.bytes.len() as u64 <= self.max_bytes
            && !self.objects.contains(&now.sha256)
            && let Err(e) = self.objects.put(&now.bytes, &now.sha256)
        {
            tracing::warn!("new content of {} not kept: {e}", target.display);
        }
        let pre_image = match &prev {
            Some(h) => self.objects.contains(h),
            // Known absent before: a created file has nothing to keep.
            None => known,
        };
        let mode = if known && prev.is_none() {
            "create"
        } else {
            call.replacing
        };
        let mut extra: BTreeMap<String, Value> = BTreeMap::new();
        if let Some(root) = &target.row_path.root {
            extra.insert("root".into(), Value::from(root.clone()));
        }
        if let Some(s) = call.session {
            extra.insert("agent_session".into(), Value::from(s));
        }
        extra.insert("pre_image".into(), Value::from(pre_image));
        let row = JournalRow {
            journal_id: new_journal_id(),
            ts: now_rfc3339(),
            path: target.row_path.path.clone(),
            sha256: now.sha256.clone(),
            prev_sha256: prev,
            bytes: now.bytes.len() as u64,
            mode: mode.to_string(),
            caller: call.agent.to_string(),
            tool: format!("native:{}", call.tool),
            extra,
        };
        self.with_room(row.to_line().len() as u64, || self.journal.append(&row))?
            .commit();
        Ok(Some(row))
    }

    /// Run `step`, which writes about `need` bytes into the state directory; on `ENOSPC`
    /// history yields (oldest pre-images first, as the pipeline's `room.rs` does) and the
    /// step runs once more. Pre-images are a cache; the journal row is a record.
    fn with_room<T>(&self, need: u64, mut step: impl FnMut() -> io::Result<T>) -> io::Result<T> {
        match step() {
            Err(e) if crate::envelope::is_no_space(&e) => {
                let dropped = self
                    .objects
                    .drop_oldest(need.saturating_add(crate::write::pipeline::room::SLACK))?;
                if dropped.is_empty() {
                    return Err(e);
                }
                tracing::info!(
                    "history gave up {} pre-image(s), {} bytes, for a hook that met a full disk",
                    dropped.sha256.len(),
                    dropped.blocks
                );
                step()
            }
            other => other,
        }
    }

    /// The sha256 of the newest journaled version of `target`.
    fn newest_version(&self, target: &Target) -> io::Result<Option<String>> {
        let paths = self.workspaces.journal_paths();
        let v = crate::history::versions(&self.journal, None, &paths, &target.abs_path, None, 1)?;
        Ok(v.into_iter().next().map(|v| v.sha256))
    }

    fn usable(&self) -> io::Result<()> {
        match self.planted.first() {
            None => Ok(()),
            Some(p) => Err(io::Error::other(format!("state directory refused: {p}"))),
        }
    }

    fn pending_name(target: &Target) -> String {
        let key = format!(
            "{}\0{}",
            target.row_path.root.as_deref().unwrap_or(""),
            target.row_path.path
        );
        format!("{}.json", sha256_hex(key.as_bytes()))
    }

    /// The hooks' directory in the state directory (`None`: absent and not `create`d).
    fn hooks_dir(&self, create: bool) -> io::Result<Option<crate::state::StateDir>> {
        crate::state::open_subdir(&self.state_dir, &[HOOKS_DIR], 0o700, create)
            .map_err(|f| io::Error::other(f.to_string()))
    }

    /// The content a before-hook left beside its record (`staged`): moved into the object
    /// store, durably, as `prev` when the row about to be appended names it; removed
    /// otherwise (a call that did not happen, or a record of another call). A content that
    /// cannot be kept is a warning: the row then says `pre_image: false`.
    fn settle_staged(&self, target: &Target, prev: Option<&str>, staged: &mut bool) {
        if !std::mem::take(staged) {
            return;
        }
        let Ok(Some(dir)) = self.hooks_dir(false) else {
            return;
        };
        let name = format!("{}.pre", Self::pending_name(target));
        match prev {
            Some(sha) => {
                if let Err(e) = self
                    .objects
                    .adopt(&dir.dir, std::ffi::OsStr::new(&name), sha)
                {
                    tracing::warn!("pre-image of {} not kept: {e}", target.display);
                }
            }
            None => {
                let _ = rustix::fs::unlinkat(&dir.dir, name.as_str(), rustix::fs::AtFlags::empty());
            }
        }
    }

    /// Read and remove the record of `target`'s before-hook.
    fn take_pending(&self, target: &Target) -> io::Result<Option<Pending>> {
        let dir = match self.hooks_dir(false)? {
            Some(d) => d,
            None => return Ok(None),
        };
        let name = Self::pending_name(target);
        let file = match crate::util::statefile::open_read_at(
            &dir.dir,
            Path::new(&name),
            &dir.path.join(&name),
        ) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut body = Vec::new();
        io::Read::read_to_end(&mut io::Read::take(file, 64 * 1024), &mut body)?;
        let _ = rustix::fs::unlinkat(&dir.dir, name.as_str(), rustix::fs::AtFlags::empty());
        Ok(serde_json::from_slice(&body).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, NativeWorkspace) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let w = NativeWorkspace::open(&root, None, None, None);
        (t, w)
    }

    /// A hook scores once and exits: its policy's classifier scans on one thread.
    #[test]
    fn the_hooks_classifier_scans_on_one_thread() {
        let (_t, w) = ws();
        assert!(w.policy().classifier().unwrap().is_on_one_thread());
    }

    fn call<'a>(id: Option<&'a str>) -> NativeCall<'a> {
        NativeCall {
            agent: "claude-code",
            tool: "Edit",
            session: Some("s1"),
            call_id: id,
            replacing: "replace",
        }
    }

    #[test]
    fn a_native_edit_is_journaled_with_its_pre_image() {
        let (t, w) = ws();
        let file = t.path().join("f.txt");
        std::fs::write(&file, "old").unwrap();
        let target = w.resolve(file.to_str().unwrap()).unwrap();
        let existing = w.current(&target).unwrap();
        let prev = w
            .keep_pre_image(&target, existing.as_ref(), &call(Some("t1")))
            .unwrap();
        assert_eq!(prev.as_deref(), Some(sha256_hex(b"old").as_str()));
        std::fs::write(&file, "new").unwrap();
        let row = w.record(&target, &call(Some("t1"))).unwrap().unwrap();
        assert_eq!(row.sha256, sha256_hex(b"new"));
        assert_eq!(row.prev_sha256, prev);
        assert_eq!(row.tool, "native:Edit");
        assert_eq!(row.extra["pre_image"], Value::Bool(true));
        assert_eq!(row.path, "f.txt");
        assert_eq!(w.objects.get(&sha256_hex(b"old")).unwrap().unwrap(), b"old");
        // Nothing changed since: no second row.
        assert!(w.record(&target, &call(None)).unwrap().is_none());
    }

    fn staged_files(t: &tempfile::TempDir) -> Vec<String> {
        let dir = t.path().join(".resilient_write").join(HOOKS_DIR);
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".pre"))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    #[test]
    fn the_before_hook_stages_the_pre_image_and_the_after_hook_stores_it() {
        let (t, w) = ws();
        let file = t.path().join("f.txt");
        std::fs::write(&file, "old").unwrap();
        let target = w.resolve(file.to_str().unwrap()).unwrap();
        let existing = w.current(&target).unwrap();
        w.keep_pre_image(&target, existing.as_ref(), &call(Some("t1")))
            .unwrap();
        let old = sha256_hex(b"old");
        // The agent waits for the before-hook: nothing of the store is written (no fsync).
        assert!(!w.objects.contains(&old));
        assert_eq!(staged_files(&t).len(), 1);
        std::fs::write(&file, "new").unwrap();
        let row = w.record(&target, &call(Some("t1"))).unwrap().unwrap();
        assert_eq!(row.extra["pre_image"], Value::Bool(true));
        assert_eq!(w.objects.get(&old).unwrap().unwrap(), b"old");
        assert!(staged_files(&t).is_empty(), "moved, not copied");
    }

    #[test]
    fn a_staged_pre_image_that_lost_its_hash_is_not_stored() {
        let (t, w) = ws();
        let file = t.path().join("f.txt");
        std::fs::write(&file, "old").unwrap();
        let target = w.resolve(file.to_str().unwrap()).unwrap();
        let existing = w.current(&target).unwrap();
        w.keep_pre_image(&target, existing.as_ref(), &call(None))
            .unwrap();
        // As a power loss between the two hooks could leave it: torn.
        let name = &staged_files(&t)[0];
        std::fs::write(
            t.path().join(".resilient_write").join(HOOKS_DIR).join(name),
            "ol",
        )
        .unwrap();
        std::fs::write(&file, "new").unwrap();
        let row = w.record(&target, &call(None)).unwrap().unwrap();
        assert_eq!(row.extra["pre_image"], Value::Bool(false));
        assert!(!w.objects.contains(&sha256_hex(b"old")));
        // Only the new content, kept so that this version stays restorable.
        let stored: Vec<String> = w
            .objects
            .list()
            .unwrap()
            .into_iter()
            .map(|o| o.sha256)
            .collect();
        assert_eq!(stored, [sha256_hex(b"new")]);
        assert!(staged_files(&t).is_empty());
    }

    #[test]
    fn a_refused_call_leaves_nothing_staged_behind_the_next_one() {
        let (t, w) = ws();
        let file = t.path().join("f.txt");
        std::fs::write(&file, "v1").unwrap();
        let target = w.resolve(file.to_str().unwrap()).unwrap();
        let existing = w.current(&target).unwrap();
        // The user refuses this call: its after-hook never runs.
        w.keep_pre_image(&target, existing.as_ref(), &call(Some("refused")))
            .unwrap();
        assert_eq!(staged_files(&t).len(), 1);
        // A server write stores v1 meanwhile; the next call has nothing to stage.
        w.objects.put(b"v1", &sha256_hex(b"v1")).unwrap();
        w.keep_pre_image(&target, existing.as_ref(), &call(Some("t2")))
            .unwrap();
        assert!(staged_files(&t).is_empty());
        std::fs::write(&file, "v2").unwrap();
        let row = w.record(&target, &call(Some("t2"))).unwrap().unwrap();
        assert_eq!(row.prev_sha256.as_deref(), Some(sha256_hex(b"v1").as_str()));
        assert_eq!(row.extra["pre_image"], Value::Bool(true));
        // An after-hook of another call than the staged one removes the staged content. (The
        // user changes the file first: v2 itself is stored, kept by the t2 row.)
        assert!(w.objects.contains(&sha256_hex(b"v2")));
        std::fs::write(&file, "v2 edited by the user").unwrap();
        w.keep_pre_image(
            &target,
            w.current(&target).unwrap().as_ref(),
            &call(Some("t3")),
        )
        .unwrap();
        assert_eq!(staged_files(&t).len(), 1);
        std::fs::write(&file, "v3").unwrap();
        w.record(&target, &call(Some("other"))).unwrap();
        assert!(staged_files(&t).is_empty());
        assert!(!w.objects.contains(&sha256_hex(b"v2 edited by the user")));
    }

    /// Without a before-hook (Cursor) the first row says no pre-image; every version a row
    /// journals is kept, so the next change, whoever makes it, can be undone.
    #[test]
    fn without_a_before_hook_only_the_first_edit_has_no_pre_image() {
        let (t, w) = ws();
        let file = t.path().join("g.txt");
        std::fs::write(&file, "v1").unwrap();
        let target = w.resolve(file.to_str().unwrap()).unwrap();
        let row = w.record(&target, &call(None)).unwrap().unwrap();
        assert_eq!(row.prev_sha256, None);
        assert_eq!(row.extra["pre_image"], Value::Bool(false));
        std::fs::write(&file, "v2").unwrap();
        let row = w.record(&target, &call(None)).unwrap().unwrap();
        // The newest journaled version is the previous one, kept by the first row.
        assert_eq!(row.prev_sha256.as_deref(), Some(sha256_hex(b"v1").as_str()));
        assert_eq!(row.extra["pre_image"], Value::Bool(true));
        assert_eq!(w.objects.get(&sha256_hex(b"v1")).unwrap().unwrap(), b"v1");
    }

    #[test]
    fn paths_outside_the_workspace_or_in_its_state_are_not_resolved() {
        let (t, w) = ws();
        let other = tempfile::tempdir().unwrap();
        assert!(
            w.resolve(other.path().join("x").to_str().unwrap())
                .is_none()
        );
        let state = t.path().join(".resilient_write/journal.jsonl");
        assert!(w.resolve(state.to_str().unwrap()).is_none());
        assert!(w.resolve("/etc/passwd").is_none());
    }
}
