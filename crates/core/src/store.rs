//! The store: everything the tools act on, and nothing of any front end. It owns the
//! workspaces, the pipeline and journal, the object store, the workspace policy, the
//! idempotency index and the log of first results of keyed calls ([`Store::once`]). Front
//! ends (the MCP server and the CLI, in the `resilient-write` crate) wrap it with dispatch,
//! retry budgets and transports.
//!
//! Startup work that matters for durability happens in [`Store::open`]: the journal's torn
//! tail is repaired and stale temp files of crashed writers are swept (in the background, so
//! the server answers `initialize` at once); [`crate::startup::open`] then recovers
//! transactions. The default L0 classifier is compiled on first
//! use, so neither the handshake nor an idle server pays for it.

use crate::envelope::Result;
use crate::journal::Journal;
use crate::notices::{Level, Notices};
use crate::objects::ObjectStore;
use crate::policy::active::ActivePolicy;
use crate::workspace::Workspaces;
use crate::write::idempotency::{
    IdempotencyIndex, Keyed, ResultLog, check_key, replay_of, result_row,
};
use crate::write::pipeline::retention::Retention;
use crate::write::pipeline::{Pipeline, sweep_temp_files};
use crate::write::results::Expiry;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

pub use crate::layout::{DEFAULT_MAX_WRITE_BYTES, STATE_DIR_NAME};

/// Configuration resolved from flags and environment by the front end: nothing in this crate
/// reads the environment (`tests/layers.rs` checks).
#[derive(Debug, Clone)]
pub struct Config {
    pub workspaces: Vec<PathBuf>,
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    /// The directory that holds `.resilient_write/` (RW_STATE_DIR), if given.
    pub state_root: Option<PathBuf>,
    pub max_write_bytes: u64,
    pub retry_budget: u32,
    /// Sweep stale temp files at start (tests of the sweep itself turn it off).
    pub sweep_on_start: bool,
    /// Repair at start: cut a torn journal tail and recover transactions. `doctor` turns it
    /// off to report the state as it is before `--fix` repairs it.
    pub repair_on_start: bool,
    /// RW_POLICY_FILE: absolute, or relative to the state root; `None` reads
    /// `.resilient_write/policy.yaml`. The policy's `retry_budget.default` replaces
    /// `retry_budget` when the file is usable.
    pub policy_file: Option<PathBuf>,
    /// The scratchpad is write-only (`scratch_get` refuses), and the front end's switch that
    /// made it so, which the refusal names.
    pub scratch_get_disabled: Option<String>,
    /// Warn at start when `.resilient_write/` is in a git work tree that does not ignore it
    /// (`init` turns it off in the run that adds the entry to .gitignore).
    pub warn_not_git_ignored: bool,
}

impl Config {
    /// Defaults for a process started in `cwd`.
    pub fn new(cwd: PathBuf) -> Config {
        Config {
            workspaces: Vec::new(),
            cwd,
            home: None,
            state_root: None,
            max_write_bytes: DEFAULT_MAX_WRITE_BYTES,
            retry_budget: 3,
            sweep_on_start: true,
            repair_on_start: true,
            policy_file: None,
            scratch_get_disabled: None,
            warn_not_git_ignored: true,
        }
    }
}

/// The state every tool acts on, shared by every session of a running server.
pub struct Store {
    /// The static roots (flags, environment, CWD). Client roots live in each session.
    workspaces: Arc<Workspaces>,
    pipeline: Pipeline,
    state_dir: PathBuf,
    config: Config,
    /// The retry budget's start value: the policy's `retry_budget.default`, else the flag.
    retry_start: u32,
    pub(crate) idempotency: Mutex<IdempotencyIndex>,
    /// First results of keyed calls no journal row answers for.
    results: ResultLog,
    caller: RwLock<String>,
    notes: Vec<String>,
    notices: Arc<Notices>,
    policy: ActivePolicy,
    /// Why the state directory must not be used (`state::planted`); empty when it may.
    planted: Vec<String>,
}

impl Store {
    /// Open the store and repair the journal's torn tail. Transaction recovery, which needs
    /// the store, is [`crate::startup::open`]'s: use that to serve. Never fails:
    /// configuration problems are logged and reported by every tool call that they affect.
    pub fn open(config: Config) -> Arc<Store> {
        let notices = Arc::new(Notices::default());
        let mut ws = Workspaces::new(&config.workspaces, &config.cwd, config.home.as_deref());
        for (path, reason) in ws.refused() {
            notices.record(
                Level::Warning,
                format!("workspace {} refused: {reason}", path.display()),
            );
        }
        let state_root = config.state_root.clone().unwrap_or_else(|| {
            // Default: the CWD, unless the CWD itself was refused (a client that starts
            // servers in `/`): then the first accepted root.
            if ws.roots().any(|r| config.cwd.starts_with(r)) {
                config.cwd.clone()
            } else {
                ws.roots()
                    .next()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| config.cwd.clone())
            }
        });
        let state_root = state_root.canonicalize().unwrap_or(state_root);
        let state_dir = state_root.join(STATE_DIR_NAME);
        ws.set_state_dir(&state_dir);
        // A symlink planted for the state directory (or one of its directories) would carry
        // every journal row, pre-image and deposit out of the workspace: before anything in it
        // is read or written, find out; the front end refuses to serve such a store.
        let planted = crate::state::planted(&state_dir, config.state_root.is_some());
        for p in &planted {
            notices.record(Level::Error, format!("state directory refused: {p}"));
        }
        let usable = planted.is_empty();
        let journal = Journal::new(&state_dir);
        if usable
            && config.repair_on_start
            && let Err(e) = journal.repair()
        {
            notices.record(
                Level::Warning,
                format!("journal repair at {}: {e}", journal.path().display()),
            );
        }
        let mut notes = Vec::new();
        if let Some(note) = gitignore_note(&state_root).filter(|_| config.warn_not_git_ignored) {
            notices.record(Level::Warning, note.clone());
            notes.push(note);
        }
        let policy_path = ActivePolicy::path_for(config.policy_file.as_deref(), &state_root);
        let policy = if usable || !policy_path.starts_with(&state_dir) {
            ActivePolicy::load(policy_path)
        } else {
            // Not read through a planted symlink: the defaults, until the state is fixed.
            ActivePolicy::defaults(policy_path)
        };
        if let Some(p) = policy.problem() {
            notices.record(
                Level::Error,
                format!(
                    "policy file unusable, tools that classify will refuse: {}",
                    p.message
                ),
            );
            notes.push(format!(
                "the policy file is unusable ({}); risk_score, redact and classify=true writes \
                 refuse with policy_violation until it is fixed and the server restarted",
                p.message
            ));
        }
        let retry_start = policy
            .policy()
            .map_or(config.retry_budget, |p| p.retry_budget.default);
        if usable && config.sweep_on_start {
            let roots: Vec<PathBuf> = ws.roots().map(Path::to_path_buf).collect();
            let notices = notices.clone();
            let state = state_dir.clone();
            std::thread::Builder::new()
                .name("rw-sweep".into())
                .spawn(move || sweep_in_background(&roots, &state, &notices))
                .ok();
        }
        // First results of keyed calls are kept for the policy's `idempotency.max_age` (a
        // bad section is reported by `doctor`; the default applies meanwhile).
        let expiry = policy
            .policy()
            .and_then(|p| Expiry::from_policy(p.idempotency.as_ref()).ok())
            .unwrap_or_default();
        let results = ResultLog::new(&state_dir).with_expiry(expiry);
        // History: every replaced content is kept in the object store (objects.rs), within
        // the policy's retention budget (a bad `history:` section is reported by `doctor`;
        // the defaults apply meanwhile).
        let retention = policy
            .policy()
            .and_then(|p| Retention::from_policy(p.history.as_ref()).ok())
            .unwrap_or_default();
        let pipeline = Pipeline::new(journal)
            .with_objects(ObjectStore::new(&state_dir))
            .with_retention(retention, ws.journal_paths());
        let store = Arc::new(Store {
            workspaces: Arc::new(ws),
            pipeline,
            state_dir,
            retry_start,
            config,
            idempotency: Mutex::new(IdempotencyIndex::default()),
            results,
            caller: RwLock::new("unknown".into()),
            notes,
            notices,
            policy,
            planted,
        });
        // The default classifier compiles on first use (policy/active.rs): neither the
        // handshake nor an idle server pays for its CPU and its compiled automata.
        store
    }

    /// Why the state directory must not be used: a symlink or non-directory planted in its
    /// place or in place of one of its directories (`state::planted`). A front end refuses to
    /// serve a store with problems here; `doctor` reports them. Empty when all is well.
    pub fn state_refused(&self) -> &[String] {
        &self.planted
    }

    /// The journal row of an earlier call with idempotency `key` and these arguments (answer
    /// with it, write nothing), or `None` (no key, or no earlier call: go ahead). The same key
    /// with other arguments is a conflict. Callers check again under their lock.
    pub fn recorded(
        &self,
        key: Option<&str>,
        request_sha256: &str,
    ) -> Result<Option<Map<String, Value>>> {
        let Some(key) = key else {
            return Ok(None);
        };
        let key = check_key(key)?;
        let row = self
            .idempotency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .lookup(self.pipeline.journal(), &self.results, key)?;
        replay_of(key, row, request_sha256)
    }

    /// The earlier call `keyed` repeats, read as `T` from the journal row that recorded it
    /// ([`Store::recorded`], [`crate::journal::recorded`]).
    pub fn replay<T: DeserializeOwned>(&self, keyed: Keyed<'_>) -> Result<Option<T>> {
        self.recorded(keyed.key, keyed.request_sha256)?
            .map(crate::journal::recorded::read)
            .transpose()
    }

    /// Run `call`, the call of `tool` with idempotency `key` (if any) and the other arguments
    /// hashed to `request_sha256`, at most once: the first result is kept in the result log
    /// (when `record`; a dry run checks the key but keeps nothing), and a retry gets it back
    /// with `idempotent_replay: true` without `call` running. The same key with other
    /// arguments, or used by another tool, is a conflict. The log stays locked from the
    /// lookup to the record, so calls with one key never run side by side (keyed calls take
    /// turns; `call` without a key runs at once).
    pub fn once(
        &self,
        tool: &str,
        key: Option<&str>,
        request_sha256: &str,
        record: bool,
        call: impl FnOnce() -> Result<Value>,
    ) -> Result<Value> {
        let Some(key) = key else {
            return call();
        };
        let key = check_key(key)?;
        let path = self.results.path();
        let held = self
            .results
            .hold()
            .map_err(|e| crate::envelope::Failure::io("lock", path, e))?;
        if let Some(row) = self.recorded(Some(key), request_sha256)? {
            let mut result = row.get("result").cloned().unwrap_or(Value::Null);
            let Value::Object(m) = &mut result else {
                return Err(crate::envelope::Failure::Internal(format!(
                    "the first result of idempotency_key {key:?} is not recorded"
                )));
            };
            m.insert("idempotent_replay".into(), Value::Bool(true));
            return Ok(result);
        }
        let result = call()?;
        if !record {
            return Ok(result);
        }
        let row = result_row(key, request_sha256, tool, &result);
        if let Err(e) = self.results.record(held, &row) {
            // The call took effect: answer with it. Only a retry loses the guarantee.
            tracing::warn!(
                error = %e,
                "could not record the result of {tool} under its idempotency_key in {}",
                path.display()
            );
        }
        Ok(result)
    }

    /// The retry budget a failed call starts with.
    pub fn retry_start(&self) -> u32 {
        self.retry_start
    }

    /// The workspace policy loaded at start (L0 classifier, retry budget).
    pub fn policy(&self) -> &ActivePolicy {
        &self.policy
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The newest `n` journal rows (at most [`crate::journal::tail::MAX_TAIL`]), for the file
    /// `path` names (relative to the working directory, or absolute) and with `mode` when
    /// given: what `journal_tail` and the journal-tail resource serve.
    pub fn journal_tail(
        &self,
        n: usize,
        path: Option<&str>,
        mode: Option<String>,
    ) -> Result<crate::journal::tail::Tail> {
        use crate::journal::tail::{PathFilter, TailQuery, tail};
        let ws = self.workspaces();
        let path = match path {
            Some(p) => Some(PathFilter {
                raw: p.to_string(),
                abs: ws.absolute(p)?,
            }),
            None => None,
        };
        let q = TailQuery::new(ws.journal_paths(), n, path, mode)?;
        tail(self.pipeline.journal(), &q)
    }

    /// Start-up notes worth telling the agent (e.g. state not git-ignored).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Noteworthy events so far and a way to follow later ones (notices.rs).
    pub fn notices(&self) -> &Notices {
        &self.notices
    }

    /// The roots tool paths resolve beneath: the current session's (static roots plus the
    /// client's, client_session.rs) inside a client session, else the static ones.
    pub fn workspaces(&self) -> Arc<Workspaces> {
        crate::client_session::current()
            .and_then(|s| s.workspaces.clone())
            .unwrap_or_else(|| self.workspaces.clone())
    }

    /// The static roots plus `client_roots`, for one session; also the client roots that were
    /// refused (deny-list, missing, unreadable) with the reason. The static set is unchanged.
    pub fn with_client_roots(
        &self,
        client_roots: &[PathBuf],
    ) -> (Workspaces, Vec<(PathBuf, String)>) {
        let mut ws = (*self.workspaces).clone();
        let home = self
            .config
            .home
            .as_ref()
            .and_then(|h| h.canonicalize().ok());
        let before = ws.refused().len();
        for root in client_roots {
            ws.add_root(root, home.as_deref());
        }
        let refused = ws.refused()[before..].to_vec();
        (ws, refused)
    }

    /// Record who is calling outside a session (the CLI), for journal rows.
    pub fn set_caller(&self, caller: &str) {
        *self.caller.write().unwrap_or_else(|p| p.into_inner()) = caller.to_string();
    }

    /// Who is calling: the current session's client, else the name set with `set_caller`.
    pub fn caller(&self) -> String {
        if let Some(name) = crate::client_session::current().and_then(|s| s.caller.clone()) {
            return name;
        }
        self.caller
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Whether a `.gitignore`'s text has a line ignoring the state directory beside it
/// (`.resilient_write`, with or without a leading `/`, `**/` or a trailing `/`).
pub fn gitignore_mentions_state(gitignore: &str) -> bool {
    ignores_state_at(gitignore, "")
}

/// Whether a `.gitignore` (or `info/exclude`) has a line ignoring the state directory found at
/// `rel` below it (`""`: beside it; else `sub/dir`). An unanchored name matches at any depth;
/// an anchored one (a `/` before the end) names the path from the file's directory. Negations
/// and wildcards other than a leading `**/` are not interpreted.
fn ignores_state_at(gitignore: &str, rel: &str) -> bool {
    let here = if rel.is_empty() {
        STATE_DIR_NAME.to_string()
    } else {
        format!("{rel}/{STATE_DIR_NAME}")
    };
    gitignore.lines().map(str::trim).any(|line| {
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            return false;
        }
        let pattern = line.strip_suffix('/').unwrap_or(line);
        let unanchored = pattern.strip_prefix("**/").unwrap_or(pattern);
        if !unanchored.contains('/') {
            return unanchored == STATE_DIR_NAME;
        }
        pattern.strip_prefix('/').unwrap_or(pattern) == here
    })
}

/// Whether git ignores `state_root`'s `.resilient_write/`: `None` outside a git work tree;
/// else what git's rules say, matched with the `ignore` crate's gitignore matcher (globs,
/// anchoring, negations, ignored parent directories): the `.gitignore` of the state root and
/// of each ancestor up to the work tree's root (deeper first), the repository's
/// `info/exclude`, then the global excludes file (`core.excludesFile`, else
/// `$XDG_CONFIG_HOME/git/ignore`). The first source with a verdict wins, as in git.
pub fn state_dir_git_ignored(state_root: &Path) -> Option<bool> {
    let top = state_root.ancestors().find(|d| d.join(".git").exists())?;
    let target = state_root.join(STATE_DIR_NAME);
    let matcher = |root: &Path, file: PathBuf| {
        let mut b = ignore::gitignore::GitignoreBuilder::new(root);
        // A file that cannot be read or holds a bad glob adds what it can, as git does.
        let _ = b.add(file);
        b.build().ok()
    };
    let mut sources: Vec<ignore::gitignore::Gitignore> = state_root
        .ancestors()
        .take_while(|d| d.starts_with(top))
        .filter_map(|d| matcher(d, d.join(".gitignore")))
        .collect();
    if top.join(".git").is_dir() {
        sources.extend(matcher(top, top.join(".git").join("info").join("exclude")));
    }
    if let Some(global) = ignore::gitignore::gitconfig_excludes_path() {
        sources.extend(matcher(top, global));
    }
    for source in &sources {
        let m = source.matched_path_or_any_parents(&target, true);
        if m.is_ignore() {
            return Some(true);
        }
        if m.is_whitelist() {
            return Some(false);
        }
    }
    Some(false)
}

/// A warning when `.resilient_write/` would be committed: the state root is in a git work
/// tree that does not ignore it. Checked afresh on each call (an agent may fix it mid-session).
pub fn gitignore_note(state_root: &Path) -> Option<String> {
    (state_dir_git_ignored(state_root) == Some(false)).then(|| {
        format!(
            "{STATE_DIR_NAME}/ in {} is not git-ignored: the journal and scratchpad may hold \
             sensitive names; add `{STATE_DIR_NAME}/` to .gitignore (resilient-write init does)",
            state_root.display()
        )
    })
}

/// How old a before-hook's leftovers must be to be swept at start (`state::sweep_hook_leftovers`).
const HOOK_LEFTOVERS_AGE: std::time::Duration = std::time::Duration::from_secs(86400);

/// The start-up sweep (on a thread of its own): the before-hooks' leftovers older than a day,
/// then the temp files of crashed writers in a walk of every root. The walk first lowers its
/// thread's priority (`util::sys::BACKGROUND_NICE`: it yields to the writes, sixteen agents
/// starting on one large repository walk it sixteen times, yet it ends within about ten
/// times its CPU time on a machine whose every CPU is busy). The directories a crash most
/// likely left a temp file in were swept before the first call (`startup.rs`).
fn sweep_in_background(roots: &[PathBuf], state_dir: &Path, notices: &Notices) {
    if let Err(e) = crate::util::sys::lower_this_threads_priority() {
        tracing::debug!("sweep thread keeps its priority: {e}");
    }
    let hooks = crate::state::sweep_hook_leftovers(state_dir, HOOK_LEFTOVERS_AGE);
    if hooks > 0 {
        notices.record(
            Level::Info,
            format!("removed {hooks} leftover(s) of agent hook calls that never finished"),
        );
    }
    for root in roots {
        let removed = sweep_temp_files(root, 200_000);
        for p in &removed {
            tracing::debug!("removed stale temp file {}", p.display());
        }
        if !removed.is_empty() {
            notices.record(
                Level::Info,
                format!(
                    "removed {} stale temp file(s) of crashed writers under {}",
                    removed.len(),
                    root.display()
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start-up sweep lowers its thread to the background priority and still removes a
    /// temp file whose writer is gone (and reports it).
    #[test]
    fn the_start_up_sweep_runs_at_the_background_priority() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let stale = root.join(format!(
            ".a.txt{}{gone}-1-0123abcd",
            crate::write::pipeline::TEMP_MARKER
        ));
        std::fs::write(&stale, "debris").unwrap();
        let notices = Arc::new(Notices::default());
        let (roots, seen) = (vec![root.clone()], Arc::clone(&notices));
        let nice = std::thread::spawn(move || {
            sweep_in_background(&roots, &root.join(".resilient_write"), &seen);
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(nice, crate::util::sys::BACKGROUND_NICE);
        assert!(!stale.exists(), "the stale temp file was not swept");
        let kept = notices.kept();
        assert!(
            kept.iter()
                .any(|n| format!("{n:?}").contains("1 stale temp file(s)")),
            "{kept:?}"
        );
    }

    #[test]
    fn a_gitignore_line_ignores_the_state_dir_beside_it_in_every_form() {
        for line in [
            ".resilient_write",
            ".resilient_write/",
            "/.resilient_write",
            "/.resilient_write/",
            "**/.resilient_write",
            "**/.resilient_write/",
            "  .resilient_write/  ",
        ] {
            assert!(
                gitignore_mentions_state(&format!("target\n{line}\n")),
                "{line}"
            );
        }
        for line in [
            "# .resilient_write/",
            "!.resilient_write/",
            ".resilient_write_old/",
            "sub/.resilient_write/",
            "",
        ] {
            assert!(!gitignore_mentions_state(line), "{line}");
        }
    }

    #[test]
    fn an_ancestor_gitignore_ignores_a_nested_state_dir_unanchored_or_by_its_path() {
        assert!(ignores_state_at(".resilient_write/\n", "a/b"));
        assert!(ignores_state_at("**/.resilient_write\n", "a/b"));
        assert!(ignores_state_at("/a/b/.resilient_write/\n", "a/b"));
        assert!(ignores_state_at("a/b/.resilient_write\n", "a/b"));
        assert!(!ignores_state_at("/.resilient_write/\n", "a/b"));
        assert!(!ignores_state_at("/a/.resilient_write/\n", "a/b"));
    }

    #[test]
    fn the_state_dir_is_ignored_by_any_gitignore_up_to_the_work_tree_or_info_exclude() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        let nested = root.join("a").join("b");
        std::fs::create_dir_all(&nested).unwrap();
        // outside a work tree: nothing to warn about
        assert_eq!(state_dir_git_ignored(&nested), None);
        assert_eq!(gitignore_note(&nested), None);
        std::fs::create_dir_all(root.join(".git").join("info")).unwrap();
        assert_eq!(state_dir_git_ignored(&nested), Some(false));
        assert!(gitignore_note(&nested).is_some());
        // the repository's info/exclude, anchored at the work tree's root
        let exclude = root.join(".git").join("info").join("exclude");
        std::fs::write(&exclude, "/a/b/.resilient_write/\n").unwrap();
        assert_eq!(state_dir_git_ignored(&nested), Some(true));
        std::fs::write(&exclude, "/a/.resilient_write/\n").unwrap();
        assert_eq!(state_dir_git_ignored(&nested), Some(false));
        // a .gitignore between the state root and the work tree's root
        std::fs::write(root.join("a").join(".gitignore"), "b/.resilient_write\n").unwrap();
        assert_eq!(state_dir_git_ignored(&nested), Some(true));
        assert_eq!(gitignore_note(&nested), None);
        // a .gitignore above the work tree does not count
        let inner = root.join("inner");
        std::fs::create_dir_all(inner.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), ".resilient_write/\n").unwrap();
        assert_eq!(state_dir_git_ignored(&inner), Some(false));
        assert_eq!(state_dir_git_ignored(root), Some(true));
    }

    #[test]
    fn git_rules_decide_patterns_negations_and_ignored_parents() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        let nested = root.join("a").join("b");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let set = |text: &str| std::fs::write(root.join(".gitignore"), text).unwrap();
        set(".resilient_*/\n");
        assert_eq!(state_dir_git_ignored(&nested), Some(true), "a glob");
        set(".resilient_write/\n!.resilient_write/\n");
        assert_eq!(state_dir_git_ignored(&nested), Some(false), "a negation");
        set("a/\n");
        assert_eq!(
            state_dir_git_ignored(&nested),
            Some(true),
            "an ignored parent"
        );
        // A deeper .gitignore's negation wins over the root's rule.
        set(".resilient_write/\n");
        std::fs::write(nested.join(".gitignore"), "!.resilient_write/\n").unwrap();
        assert_eq!(
            state_dir_git_ignored(&nested),
            Some(false),
            "deeper negation"
        );
        assert!(gitignore_note(&nested).is_some());
    }
}
