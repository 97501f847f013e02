//! The checks of [`super`]: each reads the configuration or the state and pushes what it
//! finds; none writes. Long scans call `progress(what, done, total)` (`total` 0: unknown).

use super::{Finding, MAX_ENTRIES, Repair};
use crate::store::{STATE_DIR_NAME, Store};
use std::path::{Path, PathBuf};

/// Progress of a long scan: `(what, done, total)`, `total` 0 when unknown.
pub type Progress<'a> = dyn FnMut(&str, u64, u64) + 'a;

fn list(v: &[u64]) -> String {
    let mut s: Vec<String> = v.iter().take(10).map(u64::to_string).collect();
    if v.len() > 10 {
        s.push(format!("... ({} in all)", v.len()));
    }
    s.join(", ")
}

fn lines(v: &[usize]) -> String {
    let as_u64: Vec<u64> = v.iter().map(|&n| n as u64).collect();
    list(&as_u64)
}

/// The fix for a state file that cannot be read: a planted pipe, socket or device
/// (`statefile::not_regular`) is removed by hand; anything else gets `otherwise`.
fn fix_for(error: &str, otherwise: &str) -> String {
    if error.contains("not a regular file") {
        "remove it by hand (the server never makes one; it may have been planted)".into()
    } else {
        otherwise.into()
    }
}

/// Every check, in order; writes nothing.
pub fn check(store: &Store, progress: &mut Progress) -> Vec<Finding> {
    let mut out = Vec::new();
    check_config(store, &mut out);
    if check_state_dir(store, &mut out) {
        // Nothing beneath a planted symlink is read: the other state checks would read
        // (and `--fix` would write) outside the workspace.
        check_gitignore(store, &mut out);
        return out;
    }
    check_results(store, &mut out);
    check_journal(store, progress, &mut out);
    check_temps(store, progress, &mut out);
    check_chunks(store, &mut out);
    check_scratch(store, progress, &mut out);
    check_transactions(store, &mut out);
    check_objects(store, &mut out);
    check_gitignore(store, &mut out);
    out
}

/// The state directory, or one of its directories, is a planted symlink or not a directory
/// (`state::planted`): one problem each. True when there is any.
pub fn check_state_dir(store: &Store, out: &mut Vec<Finding>) -> bool {
    for p in store.state_refused() {
        out.push(Finding::problem(
            "state_dir",
            p.clone(),
            "remove or rename it by hand (the server refuses to start until then)".into(),
        ));
    }
    !store.state_refused().is_empty()
}

/// The idempotency result log, when present, is a regular file (a planted pipe, socket or
/// symlink would refuse every keyed call).
pub fn check_results(store: &Store, out: &mut Vec<Finding>) {
    let path = store
        .state_dir()
        .join(crate::write::idempotency::RESULTS_FILE);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return;
    };
    if !meta.file_type().is_file() {
        let kind = rustix::fs::FileType::from_raw_mode(std::os::unix::fs::MetadataExt::mode(&meta));
        out.push(Finding::problem(
            "idempotency",
            crate::util::statefile::not_regular(&path, kind).to_string(),
            "remove it by hand: keyed calls are refused until then".into(),
        ));
    }
}

pub fn check_config(store: &Store, out: &mut Vec<Finding>) {
    for (path, reason) in store.workspaces().refused() {
        out.push(Finding::problem(
            "config",
            format!("workspace {} is refused: {reason}", path.display()),
            "name a project directory as the workspace instead".into(),
        ));
    }
    if store.workspaces().roots().next().is_none() {
        out.push(Finding::problem(
            "config",
            "no usable workspace: every write would be refused".into(),
            "run from a project directory or pass -w DIR".into(),
        ));
    }
    let policy = store.policy();
    match (policy.problem(), policy.policy()) {
        (Some(p), _) => out.push(Finding::problem(
            "config",
            format!("the policy file is unusable: {}", p.message),
            format!(
                "correct line {} (tools that classify refuse until it parses)",
                p.line
            ),
        )),
        (None, None) => {}
        (None, Some(p)) => {
            let unreachable = p.thresholds.unreachable();
            if !unreachable.is_empty() {
                let t = p.thresholds;
                let names: Vec<String> = unreachable
                    .iter()
                    .map(|v| format!("{v:?}").to_lowercase())
                    .collect();
                out.push(Finding::warning(
                    "config",
                    format!(
                        "policy file {}: thresholds high {}, medium {}, low {} leave no score \
                         the verdict {} (scores are in [0, 1] and checked against high, then \
                         medium, then low)",
                        policy.path.display(),
                        t.high,
                        t.medium,
                        t.low,
                        names.join(", ")
                    ),
                    "order the thresholds 0 < low <= medium <= high <= 1 (a key left out \
                     keeps its default: high 0.7, medium 0.4, low 0.1)"
                        .into(),
                ));
            }
            if let Err(e) = crate::history::Retention::from_policy(p.history.as_ref()) {
                out.push(Finding::problem(
                    "config",
                    format!(
                        "policy file {}: history section: {e}",
                        policy.path.display()
                    ),
                    "correct the history section (gc refuses until it parses)".into(),
                ));
            }
            if let Err(e) = crate::write::results::Expiry::from_policy(p.idempotency.as_ref()) {
                out.push(Finding::problem(
                    "config",
                    format!(
                        "policy file {}: idempotency section: {e}",
                        policy.path.display()
                    ),
                    "correct the idempotency section (first results are kept 7 days until \
                     it parses)"
                        .into(),
                ));
            }
        }
    }
}

pub fn check_journal(store: &Store, progress: &mut Progress, out: &mut Vec<Finding>) {
    let journal = store.pipeline().journal();
    let shown = journal.path().display();
    match journal.check_lines(|done, total| progress("journal", done, total)) {
        Err(e) => out.push(Finding::problem(
            "journal",
            format!("{shown} cannot be read: {e}"),
            fix_for(&e.to_string(), "check its permissions"),
        )),
        Ok(c) => {
            if let Some(n) = c.torn_tail {
                out.push(
                    Finding::problem(
                        "journal",
                        format!(
                            "{shown}: line {n} is torn (an append that never finished, \
                             e.g. a crash)"
                        ),
                        "cut it off (the next server start also does)".into(),
                    )
                    .repaired_by(Repair::CutJournalTail),
                );
            }
            if !c.corrupt.is_empty() {
                out.push(Finding::warning(
                    "journal",
                    format!(
                        "{shown}: {} line(s) are not JSON and are skipped by readers: line {}",
                        c.corrupt.len(),
                        lines(&c.corrupt)
                    ),
                    "inspect them (sed -n 'Np'); the journal is append-only and shared with \
                     running servers, so doctor does not rewrite it"
                        .into(),
                ));
            }
        }
    }
}

pub fn check_temps(store: &Store, progress: &mut Progress, out: &mut Vec<Finding>) {
    let roots: Vec<PathBuf> = store.workspaces().roots().map(Path::to_path_buf).collect();
    let mut dirs = roots.clone();
    if !roots.iter().any(|r| store.state_dir().starts_with(r)) {
        dirs.push(store.state_dir().to_path_buf());
    }
    for (i, dir) in dirs.iter().enumerate() {
        progress("temp files", i as u64, dirs.len() as u64);
        let stale = crate::write::pipeline::stale_temp_files(dir, MAX_ENTRIES);
        if stale.is_empty() {
            continue;
        }
        let names: Vec<String> = stale
            .iter()
            .take(5)
            .map(|p| p.display().to_string())
            .collect();
        out.push(
            Finding::problem(
                "temp_files",
                format!(
                    "{} stale temp file(s) of crashed writers under {}: {}{}",
                    stale.len(),
                    dir.display(),
                    names.join(", "),
                    if stale.len() > 5 { ", ..." } else { "" }
                ),
                "remove them (their writer process is gone; targets are intact)".into(),
            )
            .repaired_by(Repair::SweepTemps(dir.clone())),
        );
    }
}

fn session_names(store: &Store) -> Vec<String> {
    let dir = store.state_dir().join(crate::chunks::CHUNKS_DIR);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

pub fn check_chunks(store: &Store, out: &mut Vec<Finding>) {
    for name in session_names(store) {
        let what = format!("chunk session {name}");
        if crate::chunks::validate_session(&name).is_err() {
            out.push(Finding::warning(
                "chunks",
                format!("{what}: not a valid session name; no tool can reach it"),
                format!("remove {STATE_DIR_NAME}/chunks/{name} if it is not needed"),
            ));
            continue;
        }
        let drift = match crate::chunks::manifest_drift(store, &name) {
            Ok(Some(d)) => d,
            Ok(None) => continue,
            Err(f) => {
                out.push(Finding::problem(
                    "chunks",
                    format!("{what}: cannot be read: {f}"),
                    "check the directory's permissions".into(),
                ));
                continue;
            }
        };
        let (drift, listing) = drift;
        if drift.needs_rebuild(!listing.parts.is_empty()) {
            let mut why = Vec::new();
            if drift.manifest != "ok" {
                why.push(format!("manifest.json is {}", drift.manifest));
            }
            if !drift.unrecorded.is_empty() {
                why.push(format!("chunks {} have no record", list(&drift.unrecorded)));
            }
            if !drift.stale_records.is_empty() {
                why.push(format!(
                    "records of chunks {} whose files are gone",
                    list(&drift.stale_records)
                ));
            }
            out.push(
                Finding::problem(
                    "chunks",
                    format!("{what}: {}", why.join("; ")),
                    "rebuild the manifest from the chunk files".into(),
                )
                .repaired_by(Repair::RebuildManifest(name.clone())),
            );
        }
        // Doctor re-hashes every chunk: it is the thorough check, not the quick status.
        let status = match crate::chunks::status(store, &name, true) {
            Ok(s) => s,
            Err(f) => {
                out.push(Finding::problem(
                    "chunks",
                    format!("{what}: cannot be checked: {f}"),
                    "check the chunk files' permissions".into(),
                ));
                continue;
            }
        };
        if !status.modified_chunks.is_empty() {
            let idx: Vec<u64> = status.modified_chunks.iter().map(|m| m.index).collect();
            out.push(Finding::problem(
                "chunks",
                format!(
                    "{what}: chunk(s) {} changed since they were written (edited outside \
                     resilient-write)",
                    list(&idx)
                ),
                "rewrite them with chunk_write, or chunk_reset the session".into(),
            ));
        }
        if !status.unrecognised_files.is_empty() {
            out.push(Finding::problem(
                "chunks",
                format!(
                    "{what}: files not written by resilient-write: {}",
                    status.unrecognised_files.join(", ")
                ),
                "remove them, or chunk_reset the session".into(),
            ));
        }
        if !status.missing_indices.is_empty() {
            out.push(Finding::warning(
                "chunks",
                format!(
                    "{what}: incomplete, missing chunk(s) {}",
                    list(&status.missing_indices)
                ),
                "write the missing chunks and compose, or chunk_reset it if abandoned".into(),
            ));
        }
    }
}

pub fn check_scratch(store: &Store, progress: &mut Progress, out: &mut Vec<Finding>) {
    let (rows, skipped) = match crate::scratch::read_index(store) {
        Ok(r) => r,
        Err(f) => {
            out.push(Finding::problem(
                "scratch",
                format!("the scratch index cannot be read: {f}"),
                fix_for(&f.to_string(), "check the scratch directory's permissions"),
            ));
            return;
        }
    };
    let index = format!("{STATE_DIR_NAME}/scratch/index.jsonl");
    if !skipped.is_empty() {
        let detail: Vec<String> = skipped
            .iter()
            .take(5)
            .map(|s| format!("line {}: {}", s.line, s.reason))
            .collect();
        out.push(
            Finding::problem(
                "scratch",
                format!(
                    "{index}: {} unreadable line(s): {}",
                    skipped.len(),
                    detail.join("; ")
                ),
                "drop them from the index (the blobs stay)".into(),
            )
            .repaired_by(Repair::CompactIndex),
        );
    }
    let live = crate::scratch::live_index(&rows).len();
    if crate::scratch::compaction_worthwhile(rows.len(), live) {
        out.push(
            Finding::warning(
                "scratch",
                format!(
                    "{index}: {} of its {} rows are superseded (deposits only append; {live} \
                     label(s) are live)",
                    rows.len() - live,
                    rows.len()
                ),
                "compact it to one row per sha256 and label (lookups answer the same)".into(),
            )
            .repaired_by(Repair::CompactIndex),
        );
    }
    let dir = store.state_dir().join(crate::scratch::SCRATCH_DIR);
    let mut named: Vec<String> = rows
        .iter()
        .filter_map(|r| r.get("sha256").and_then(|v| v.as_str()))
        .map(str::to_ascii_lowercase)
        .collect();
    named.sort();
    named.dedup();
    let mut missing = Vec::new();
    let mut tampered = Vec::new();
    for (i, sha) in named.iter().enumerate() {
        progress("scratch blobs", i as u64, named.len() as u64);
        let path = dir.join(format!("{sha}.bin"));
        match crate::util::statefile::open_read(&path).and_then(crate::hash::sha256_reader) {
            Ok((actual, _)) if actual == *sha => {}
            Ok(_) => tampered.push(sha.clone()),
            Err(_) => missing.push(sha.clone()),
        }
    }
    let short = |v: &[String]| {
        v.iter()
            .take(5)
            .map(|s| s[..12].to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !missing.is_empty() {
        out.push(Finding::problem(
            "scratch",
            format!(
                "{} blob(s) named by the index are missing: {}",
                missing.len(),
                short(&missing)
            ),
            "deposit the content again with scratch_put (the index row then resolves)".into(),
        ));
    }
    if !tampered.is_empty() {
        out.push(Finding::problem(
            "scratch",
            format!(
                "{} blob(s) do not match their address (tampered with): {}",
                tampered.len(),
                short(&tampered)
            ),
            "deposit the true content again with scratch_put (it restores the blob); \
             scratch_get refuses these meanwhile"
                .into(),
        ));
    }
    let unnamed: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            let sha = n.strip_suffix(".bin")?.to_ascii_lowercase();
            (crate::hash::is_sha256_hex(&sha) && named.binary_search(&sha).is_err()).then_some(sha)
        })
        .collect();
    if !unnamed.is_empty() {
        out.push(Finding::warning(
            "scratch",
            format!(
                "{} blob(s) have no index row: {}",
                unnamed.len(),
                short(&unnamed)
            ),
            "harmless (scratch_get by hash still works); remove them if not needed".into(),
        ));
    }
}

pub fn check_transactions(store: &Store, out: &mut Vec<Finding>) {
    use crate::tx::TxState;
    for (id, state) in crate::tx::inspect(store) {
        let (message, fix) = match state {
            TxState::Open => continue,
            TxState::Committed => (
                format!("transaction {id} committed but not fully applied (a crash?)"),
                "run recovery: it rolls the commit forward",
            ),
            TxState::Abandoned => (
                format!("transaction {id} was never committed and its process is gone"),
                "run recovery: it rolls it back (no workspace file changes)",
            ),
            TxState::Expired => (
                format!("transaction {id} passed its timeout without a commit"),
                "run recovery: it discards it",
            ),
        };
        out.push(
            Finding::problem("transactions", message, fix.into())
                .repaired_by(Repair::RecoverTransactions),
        );
    }
}

pub(super) fn retention(store: &Store) -> Option<crate::history::Retention> {
    let history = store.policy().policy()?.history.as_ref();
    crate::history::Retention::from_policy(history).ok()
}

/// The object store's size against its retention budget, and the filesystem that holds it
/// (what `doctor` reports first).
#[derive(Debug, Clone, serde::Serialize)]
pub struct HistoryUsage {
    pub objects: usize,
    pub bytes: u64,
    pub max_bytes: u64,
    pub keep_last: usize,
    pub max_age_secs: u64,
    /// `history.min_free` as the policy says it.
    pub min_free: String,
    /// The filesystem holding `.resilient_write/` (`None`: it reports no size).
    pub disk: Option<StateDiskReport>,
}

/// The state's filesystem in `doctor`'s report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StateDiskReport {
    pub mount: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// History's floor on it in bytes.
    pub floor_bytes: u64,
    pub below_floor: bool,
}

fn disk_report(store: &Store) -> Option<StateDiskReport> {
    store.pipeline().state_disk().map(|d| StateDiskReport {
        mount: d.mount.display().to_string(),
        total_bytes: d.space.total,
        free_bytes: d.space.avail,
        floor_bytes: d.floor,
        below_floor: d.below_floor(),
    })
}

/// [`HistoryUsage`] of `store`, or why the store cannot be listed (`None`: history is off).
pub fn history_store(store: &Store) -> Option<std::io::Result<HistoryUsage>> {
    // Nothing beneath a planted symlink is listed (`check_state_dir`).
    if !store.state_refused().is_empty() {
        return None;
    }
    let objects = store.pipeline().objects()?;
    let retention = retention(store).unwrap_or_default();
    Some(objects.list().map(|all| HistoryUsage {
        objects: all.len(),
        bytes: all.iter().map(|o| o.bytes).sum(),
        max_bytes: retention.max_bytes,
        keep_last: retention.keep_last,
        max_age_secs: retention.max_age.as_secs(),
        min_free: retention.min_free.to_string(),
        disk: disk_report(store),
    }))
}

pub fn check_objects(store: &Store, out: &mut Vec<Finding>) {
    let (Some(objects), Some(retention)) = (store.pipeline().objects(), retention(store)) else {
        return;
    };
    if let Some(d) = disk_report(store).filter(|d| d.below_floor)
        && let Ok(u) = objects.usage()
    {
        out.push(
            Finding::problem(
                "disk",
                format!(
                    "the filesystem at {} holding {STATE_DIR_NAME}/ has {} bytes free, below \
                     history's floor of {} bytes (history.min_free {}); the history holds {} \
                     bytes in {} version(s), which writes give up only as they need room",
                    d.mount, d.free_bytes, d.floor_bytes, retention.min_free, u.blocks, u.objects
                ),
                "free space on that filesystem, or run doctor --fix to drop the oldest \
                 versions until the floor is free again"
                    .into(),
            )
            .repaired_by(Repair::Gc),
        );
    }
    match crate::history::gc(
        store.pipeline().journal(),
        &store.workspaces().journal_paths(),
        objects,
        &retention,
        true,
    ) {
        Ok(r) if r.removed > 0 => out.push(
            Finding::warning(
                "objects",
                format!(
                    "the object store holds {} bytes in {} object(s); the retention policy \
                     would remove {} object(s), {} bytes",
                    r.kept_bytes + r.removed_bytes,
                    r.kept + r.removed,
                    r.removed,
                    r.removed_bytes
                ),
                "run gc".into(),
            )
            .repaired_by(Repair::Gc),
        ),
        Ok(_) => {}
        Err(e) => out.push(Finding::problem(
            "objects",
            format!("the object store cannot be listed: {e}"),
            fix_for(&e.to_string(), "check its permissions"),
        )),
    }
}

pub fn check_gitignore(store: &Store, out: &mut Vec<Finding>) {
    let Some(root) = store.state_dir().parent() else {
        return;
    };
    if crate::store::state_dir_git_ignored(root) == Some(false) {
        let path = root.join(".gitignore");
        out.push(
            Finding::problem(
                "gitignore",
                format!(
                    "{STATE_DIR_NAME}/ in {} is not git-ignored: the journal and scratchpad \
                     may hold sensitive names",
                    root.display()
                ),
                format!("add `{STATE_DIR_NAME}/` to {}", path.display()),
            )
            .repaired_by(Repair::GitIgnore(path)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    /// A store over a fresh workspace that shows the state as it is (no start-up repairs).
    fn store() -> (tempfile::TempDir, PathBuf, Arc<Store>) {
        let (t, mut c) = crate::testing::temp_config();
        c.repair_on_start = false;
        let root = c.cwd.clone();
        (t, root, crate::startup::open(c).0)
    }

    fn run(store: &Store, one: fn(&Store, &mut Vec<Finding>)) -> Vec<Finding> {
        let mut out = Vec::new();
        one(store, &mut out);
        out
    }

    fn all(store: &Store) -> Vec<Finding> {
        check(store, &mut |_, _, _| {})
    }

    #[test]
    fn a_fresh_workspace_has_no_findings() {
        let (_t, _root, store) = store();
        let findings = all(&store);
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(super::super::problems(&findings), 0);
    }

    #[test]
    fn a_torn_journal_tail_is_reported_and_repaired() {
        let (_t, _root, store) = store();
        let path = store.pipeline().journal().path().to_path_buf();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"ok\": true}\n{\"torn\": ").unwrap();
        drop(f);
        let mut ticks = Vec::new();
        let mut out = Vec::new();
        check_journal(
            &store,
            &mut |what, _, _| ticks.push(what.to_string()),
            &mut out,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        let f = &out[0];
        assert_eq!(
            (f.check, f.severity),
            ("journal", super::super::Severity::Problem)
        );
        assert!(f.message.contains("line 2 is torn"), "{}", f.message);
        assert!(f.fixable);
        assert_eq!(f.repair, Some(Repair::CutJournalTail));
        super::super::repair(&store, f.repair.as_ref().unwrap()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"ok\": true}\n");
        assert!(all(&store).is_empty());
    }

    #[test]
    fn a_stale_temp_file_of_a_dead_pid_is_reported_and_swept() {
        let (_t, root, store) = store();
        // Beyond Linux's largest pid (4194304): no process has it.
        let temp = root.join(".notes.md.rw-tmp-2147483000-1-deadbeef");
        std::fs::write(&temp, b"half a write").unwrap();
        // A live writer's temp file (this process) is not stale.
        let live = root.join(format!(".b.md.rw-tmp-{}-2-cafef00d", std::process::id()));
        std::fs::write(&live, b"being written").unwrap();
        let mut out = Vec::new();
        check_temps(&store, &mut |_, _, _| {}, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        let f = &out[0];
        assert_eq!(f.check, "temp_files");
        assert!(
            f.message.starts_with("1 stale temp file(s)"),
            "{}",
            f.message
        );
        assert!(f.message.contains(".notes.md.rw-tmp-2147483000-1-deadbeef"));
        assert_eq!(f.repair, Some(Repair::SweepTemps(root.clone())));
        super::super::repair(&store, f.repair.as_ref().unwrap()).unwrap();
        assert!(!temp.exists());
        assert!(live.exists());
        assert!(run(&store, |s, o| check_temps(s, &mut |_, _, _| {}, o)).is_empty());
    }

    #[test]
    fn a_chunk_session_whose_manifest_drifted_is_reported_and_rebuilt() {
        let (_t, _root, store) = store();
        let dir = store
            .state_dir()
            .join(crate::chunks::CHUNKS_DIR)
            .join("report");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(crate::chunks::part_name(1)), b"one\n").unwrap();
        std::fs::write(dir.join(crate::chunks::part_name(2)), b"two\n").unwrap();
        let out = run(&store, check_chunks);
        let rebuild: Vec<&Finding> = out.iter().filter(|f| f.fixable).collect();
        assert_eq!(rebuild.len(), 1, "{out:?}");
        let f = rebuild[0];
        assert_eq!(
            (f.check, f.severity),
            ("chunks", super::super::Severity::Problem)
        );
        assert!(
            f.message
                .starts_with("chunk session report: manifest.json is "),
            "{}",
            f.message
        );
        assert_eq!(f.repair, Some(Repair::RebuildManifest("report".into())));
        super::super::repair(&store, f.repair.as_ref().unwrap()).unwrap();
        assert!(run(&store, check_chunks).is_empty());
        // A chunk file that appears after the manifest: a chunk with no record.
        std::fs::write(dir.join(crate::chunks::part_name(3)), b"three\n").unwrap();
        let out = run(&store, check_chunks);
        assert!(
            out.iter()
                .any(|f| f.message.contains("chunks 3 have no record") && f.fixable),
            "{out:?}"
        );
    }

    #[test]
    fn a_state_dir_not_git_ignored_is_reported_and_the_line_added() {
        let (_t, root, store) = store();
        // Outside a git work tree there is nothing to ignore.
        assert!(run(&store, check_gitignore).is_empty());
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "target").unwrap();
        let out = run(&store, check_gitignore);
        assert_eq!(out.len(), 1, "{out:?}");
        let f = &out[0];
        assert_eq!(
            (f.check, f.severity),
            ("gitignore", super::super::Severity::Problem)
        );
        assert!(f.message.contains("is not git-ignored"), "{}", f.message);
        assert_eq!(f.repair, Some(Repair::GitIgnore(root.join(".gitignore"))));
        super::super::repair(&store, f.repair.as_ref().unwrap()).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join(".gitignore")).unwrap(),
            "target\n.resilient_write/\n"
        );
        assert!(run(&store, check_gitignore).is_empty());
    }
}
