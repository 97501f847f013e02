//! `history` and `restore` (beyond the paper): list the journaled versions of a path and put
//! a path, or every file of a transaction, back to an earlier version. The logic is
//! [`resilient_write_core::history`].

use super::errors::{FailureCode as C, KEYED, PATH, PIPELINE};
use super::{ToolSpec, is_false, parse_args, parse_expected_hash, result_schema, schema, to_value};
use resilient_write_core::envelope::{Failure, Result};
use resilient_write_core::history::{self, RestoreTo, Skipped, Version};
use resilient_write_core::store::Store;
use resilient_write_core::write::idempotency::request_hash;
use resilient_write_core::write::pipeline::read_existing;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Arguments of `history`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryArgs {
    /// The file whose versions to list.
    pub path: String,
    /// Most versions to return, newest first; at most 10000.
    #[serde(default = "default_limit")]
    pub limit: usize,
}

fn default_limit() -> usize {
    100
}

/// Result of `history`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct HistoryResult {
    pub ok: bool,
    /// The file's workspace-relative path, as the journal records it.
    pub path: String,
    pub abs_path: String,
    /// SHA-256 of the file now (absent: it does not exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_sha256: Option<String>,
    /// Journaled versions, newest first.
    pub versions: Vec<Version>,
    /// True when `limit` cut the list.
    pub truncated: bool,
}

/// Arguments of `restore`: give exactly one of to_sha256, journal_id (with path), tx_id or
/// session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreArgs {
    /// The file to restore (not with tx_id).
    #[serde(default)]
    pub path: Option<String>,
    /// The version to restore, by content hash (see history): all 64 hex digits, or a prefix
    /// of at least 8 that only one version of the path has (else the envelope lists the
    /// candidates).
    #[serde(default)]
    pub to_sha256: Option<String>,
    /// The version to restore, by the journal row that wrote it (see history).
    #[serde(default)]
    pub journal_id: Option<String>,
    /// Instead of path: put back every file this transaction changed.
    #[serde(default)]
    pub tx_id: Option<String>,
    /// Instead of path: an agent session id: undo all it changed (files it created removed).
    #[serde(default)]
    pub session: Option<String>,
    /// The SHA-256 the file must have now, else stale_precondition.
    #[serde(default)]
    pub expected_prev_sha256: Option<String>,
    /// Return the unified diff from the current content to the version; write nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Retry-safe: same key, same result, applied once.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// One file written (or that would be written) by `restore`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RestoredFile {
    /// The file's workspace-relative path, as the journal records it.
    pub path: String,
    pub abs_path: String,
    /// SHA-256 of the content now (the restored version unless dry_run).
    pub sha256: String,
    /// SHA-256 before the restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_sha256: Option<String>,
    /// Absent on a dry run or when the file already had that content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_id: Option<String>,
    /// True when the file already had that content (nothing written).
    #[serde(default)]
    pub unchanged: bool,
    /// Removed (the session created it).
    #[serde(default, skip_serializing_if = "is_false")]
    pub removed: bool,
}

/// Result of `restore`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RestoreResult {
    pub ok: bool,
    /// restore
    pub mode_applied: String,
    pub files: Vec<RestoredFile>,
    /// With tx_id: the transaction that did the restore (undo it with restore tx_id=this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_tx_id: Option<String>,
    /// With tx_id: files that could not be put back, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    #[serde(default)]
    pub dry_run: bool,
    /// Unified diff of the change (dry run only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// True when this is the first result of an earlier call with the same idempotency_key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
}

pub const HISTORY: ToolSpec = ToolSpec {
    name: "history",
    title: "Versions of a file",
    description: "The journaled versions of a file (path relative to the workspace root or \
        absolute), newest first: \
        versions[{journal_id, ts, sha256, bytes, mode, tx_id, stored}], stored saying whether \
        that content can still be restored. Every overwrite, append, \
        replace, compose, commit and restore keeps the content it replaced, so earlier versions \
        stay restorable until retention removes them.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<HistoryArgs>,
    output_schema: result_schema::<HistoryResult>,
    run: run_history,
    errors: &[PATH, &[C::InvalidArguments]],
};

pub const RESTORE: ToolSpec = ToolSpec {
    name: "restore",
    title: "Restore an earlier version",
    description: "Put a file back to an earlier version (path with to_sha256 or journal_id from \
        history) through the write pipeline, itself undoable; or with tx_id, every file that \
        transaction changed, in one new transaction.",
    read_only: false,
    destructive: true,
    idempotent: false,
    input_schema: schema::<RestoreArgs>,
    output_schema: result_schema::<RestoreResult>,
    run: run_restore,
    errors: &[
        PATH,
        PIPELINE,
        KEYED,
        &[
            C::TargetMissing,
            C::StaleHash,
            C::VersionUnavailable,
            C::AmbiguousVersion,
            C::TxNotOpen,
            C::TxConflict,
            C::SessionUnknown,
            C::SessionConflict,
            C::InvalidArguments,
        ],
    ],
};

fn run_history(store: &Store, raw: Value) -> Result<Value> {
    let args: HistoryArgs = parse_args(raw)?;
    if args.limit == 0 || args.limit > 10_000 {
        return Err(Failure::InvalidArguments {
            message: format!("limit must be 1..=10000, got {}", args.limit),
        });
    }
    let workspaces = store.workspaces();
    let paths = workspaces.journal_paths();
    let resolved = workspaces.resolve(&args.path, false);
    let (abs, current) = match resolved {
        Ok(t) => (
            t.abs_path,
            read_existing(&t.dir, &t.name)
                .map_err(|e| Failure::io("read", &args.path, e))?
                .map(|e| e.sha256),
        ),
        Err(Failure::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            (workspaces.absolute(&args.path)?, None)
        }
        Err(e) => return Err(e),
    };
    // The form the journal records (a file beneath no root keeps its absolute path).
    let shown = paths
        .relative(&abs)
        .map_or_else(|| abs.display().to_string(), |rp| rp.path);
    let journal = store.pipeline().journal();
    let mut versions = history::versions(
        journal,
        store.pipeline().objects(),
        &paths,
        &abs,
        current.as_deref(),
        args.limit + 1,
    )
    .map_err(|e| Failure::io("read journal", journal.path(), e))?;
    let truncated = versions.len() > args.limit;
    versions.truncate(args.limit);
    to_value(&HistoryResult {
        ok: true,
        path: shown,
        abs_path: abs.display().to_string(),
        current_sha256: current,
        versions,
        truncated,
    })
}

/// `to_sha256` as given: a whole SHA-256, or a prefix of at least 8 hex digits that
/// `history::restore` resolves among the path's versions.
fn version_hash(given: &str) -> Result<RestoreTo> {
    let h = given.to_ascii_lowercase();
    if !(8..=64).contains(&h.len()) || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Failure::InvalidArguments {
            message: format!(
                "to_sha256 must be 8 to 64 hex digits (a SHA-256 or a unique prefix of one), \
                 got {} characters",
                given.chars().count()
            ),
        });
    }
    Ok(if h.len() == 64 {
        RestoreTo::Sha256(h)
    } else {
        RestoreTo::Sha256Prefix(h)
    })
}

fn run_restore(store: &Store, raw: Value) -> Result<Value> {
    let request_sha256 = request_hash("restore", &raw);
    let args: RestoreArgs = parse_args(raw)?;
    let key = args.idempotency_key.clone();
    // A dry run writes nothing: its key is checked, and nothing is kept under it.
    let record = !args.dry_run;
    store.once("restore", key.as_deref(), &request_sha256, record, || {
        restore(store, args)
    })
}

fn restore(store: &Store, args: RestoreArgs) -> Result<Value> {
    let expected =
        parse_expected_hash("expected_prev_sha256", args.expected_prev_sha256.as_deref())?;
    let bad = |m: &str| Failure::InvalidArguments { message: m.into() };
    if let Some(session) = args.session {
        if args.path.is_some()
            || args.to_sha256.is_some()
            || args.journal_id.is_some()
            || args.tx_id.is_some()
            || expected.is_some()
        {
            return Err(bad(
                "session restores a whole agent session: give it alone (dry_run allowed)",
            ));
        }
        return restore_session(store, &session, args.dry_run);
    }
    if let Some(tx_id) = args.tx_id {
        if args.path.is_some() || args.to_sha256.is_some() || args.journal_id.is_some() {
            return Err(bad("tx_id restores a whole transaction: give it alone"));
        }
        if args.dry_run || expected.is_some() {
            return Err(bad(
                "dry_run and expected_prev_sha256 apply to one path, not to tx_id",
            ));
        }
        let (c, skipped) = history::restore_tx(store, &tx_id)?;
        let paths = store.workspaces().journal_paths();
        return to_value(&RestoreResult {
            ok: true,
            mode_applied: "restore".into(),
            files: c
                .files
                .into_iter()
                .map(|(_, o)| RestoredFile {
                    path: paths
                        .relative(&o.abs_path)
                        .map_or_else(|| o.abs_path.display().to_string(), |rp| rp.path),
                    abs_path: o.abs_path.display().to_string(),
                    sha256: o.sha256,
                    prev_sha256: o.prev_sha256,
                    journal_id: Some(o.journal_id),
                    unchanged: false,
                    removed: false,
                })
                .collect(),
            restore_tx_id: Some(c.tx_id),
            skipped,
            dry_run: false,
            diff: None,
            idempotent_replay: false,
        });
    }
    let path = args
        .path
        .ok_or_else(|| bad("give path with to_sha256 or journal_id, or tx_id"))?;
    let to = match (args.to_sha256, args.journal_id) {
        (Some(h), None) => version_hash(&h)?,
        (None, Some(id)) => RestoreTo::JournalId(id),
        _ => return Err(bad("give exactly one of to_sha256 and journal_id")),
    };
    let r = history::restore(store, &path, to, expected.as_deref(), args.dry_run)?;
    let unchanged = r.outcome.is_none() && r.diff.is_none();
    let file = match r.outcome {
        Some(o) => RestoredFile {
            path: r.path.clone(),
            abs_path: r.abs_path,
            sha256: o.sha256,
            prev_sha256: o.prev_sha256,
            journal_id: Some(o.journal_id),
            unchanged: false,
            removed: false,
        },
        None => RestoredFile {
            path: r.path.clone(),
            abs_path: r.abs_path,
            sha256: if args.dry_run {
                r.prev_sha256.clone().unwrap_or_default()
            } else {
                r.to_sha256.clone()
            },
            prev_sha256: r.prev_sha256,
            journal_id: None,
            unchanged,
            removed: false,
        },
    };
    to_value(&RestoreResult {
        ok: true,
        mode_applied: "restore".into(),
        files: vec![file],
        restore_tx_id: None,
        skipped: Vec::new(),
        dry_run: args.dry_run,
        diff: r.diff,
        idempotent_replay: false,
    })
}

/// `restore` with `session`: every file the agent session changed, back as before it.
fn restore_session(store: &Store, session: &str, dry_run: bool) -> Result<Value> {
    use history::SessionAction;
    let r = history::restore_session(store, session, dry_run)?;
    let mut applied: std::collections::HashMap<
        std::path::PathBuf,
        resilient_write_core::write::pipeline::Outcome,
    > = r
        .committed
        .iter()
        .flat_map(|c| c.files.iter().map(|(_, o)| (o.abs_path.clone(), o.clone())))
        .collect();
    let files = r
        .files
        .into_iter()
        .map(|f| {
            let abs_path = f.abs_path.display().to_string();
            let removed = f.action == SessionAction::Remove;
            let target = match &f.action {
                SessionAction::Restore(h) => h.clone(),
                SessionAction::Remove => String::new(),
                SessionAction::Unchanged => f.current.clone().unwrap_or_default(),
            };
            match applied.remove(&f.abs_path) {
                Some(o) => RestoredFile {
                    path: f.path,
                    abs_path,
                    sha256: o.sha256,
                    prev_sha256: o.prev_sha256,
                    journal_id: Some(o.journal_id),
                    unchanged: false,
                    removed,
                },
                None => RestoredFile {
                    path: f.path,
                    abs_path,
                    // A dry run names the content it would put back; nothing changes here.
                    sha256: target,
                    prev_sha256: f.current,
                    journal_id: None,
                    unchanged: f.action == SessionAction::Unchanged,
                    removed,
                },
            }
        })
        .collect();
    to_value(&RestoreResult {
        ok: true,
        mode_applied: "restore".into(),
        files,
        restore_tx_id: r.committed.map(|c| c.tx_id),
        skipped: r.skipped,
        dry_run,
        diff: r.diff,
        idempotent_replay: false,
    })
}
