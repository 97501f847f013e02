//! Cross-file transactions (beyond the paper, which names their absence as a gap): staged
//! writes in a write-ahead log, committed all or nothing, also across a crash.
//!
//! Layout: `.resilient_write/wal/<tx_id>/` holds `manifest.json` (the transaction: label,
//! owner pid, expiry; written once by `tx_begin`), `staged.bin` (the staged contents, appended
//! one after another), `ops.jsonl` (one line per staging call: the file, the hash its target
//! had when first staged (its base), the hash of the staged content and where it lies in
//! `staged.bin`; a later line for the same file supersedes an earlier one) and, once
//! committed, `COMMIT` (the commit record).
//!
//! Guarantees:
//! - Staging touches no workspace file, and appends (two `write`s, no rewrite of anything
//!   staged before, no fsync): an open transaction never outlives its process (recovery rolls
//!   back every uncommitted transaction whose owner is gone), so what staging wrote only has
//!   to be durable once a commit record refers to it. Commit fsyncs `staged.bin` and the WAL
//!   directory before the commit record appears.
//! - Commit ([`commit`]) goes through [`Pipeline::commit_many`]: every target directory is
//!   locked (stable order), every target must still have its base hash (one stale file fails
//!   the whole commit with a [`Failure::TxConflict`] naming each conflict; nothing is
//!   written), every new content is staged and verified next to its target and every
//!   pre-image is kept, then the `COMMIT` record is made durable: that is the commit point.
//!   Then one journal row per file (all rows in one append, each with `tx_id`), the renames,
//!   one fsync per touched directory, and the WAL is retired.
//! - Recovery ([`recover`], run by `startup::open` and `resilient-write recover`): a
//!   transaction with a `COMMIT` record is rolled forward idempotently (a file that already
//!   has its new hash is left alone; journal rows are not written twice); one without is
//!   rolled back when its owner process is gone, and discarded when its timeout has passed.
//! - Concurrent transactions on one path: the first commit wins; the other finds a base
//!   hash that no longer matches and fails with `stale_precondition`.
//!
//! A per-transaction `flock` on its WAL directory serialises calls on one transaction (also
//! across processes) and tells recovery which transactions a live process is working on.
//!
//! [`Pipeline::commit_many`]: crate::write::pipeline::Pipeline::commit_many

mod recover;
mod staging;
mod wal;

pub use recover::{RecoveryReport, TxState, inspect, recover};
pub use staging::{stage_replace, stage_write};
use wal::{
    COMMIT, OPS_LOG, STAGED_DATA, append_whole, expired, lock_dir, read_manifest, read_staged,
    retire, sync_staged, valid_tx_id, wal_root, write_durable_with, write_manifest,
};
pub use wal::{CommitRecord, Manifest, StagedOp, WAL_DIR};

use crate::envelope::{Failure, Result};
use crate::hash::sha256_hex;
use crate::journal::now_rfc3339;
use crate::journal::recorded::{RecordedRow, lenient};
use crate::store::Store;
use crate::workspace::Target;
use crate::write::idempotency::Answer;
use crate::write::pipeline::{Body, Caller, Existing, Outcome, Plan, Step, read_existing};
use rustix::fs::FlockOperation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// The journal mode (and a staged operation's `mode`) of a file a transaction removes.
pub const REMOVE_MODE: &str = "delete";

/// Default and longest timeout of an open transaction.
pub const DEFAULT_TIMEOUT_SECS: u64 = 3600;
pub const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

fn not_open(tx_id: &str, reason: &str) -> Failure {
    Failure::TxNotOpen {
        tx_id: tx_id.into(),
        reason: reason.into(),
    }
}

/// An open transaction, locked for the duration of one call.
struct Locked {
    dir: PathBuf,
    _lock: File,
    manifest: Manifest,
}

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self._lock, FlockOperation::Unlock);
    }
}

/// Lock transaction `tx_id` and check that it is open (not committed, not expired).
fn open(store: &Store, tx_id: &str) -> Result<Locked> {
    if !valid_tx_id(tx_id) {
        return Err(Failure::InvalidArguments {
            message: format!("tx_id {tx_id:?} is not a transaction id (tx-<32 hex digits>)"),
        });
    }
    let dir = wal_root(store).join(tx_id);
    let lock = match lock_dir(&dir, true) {
        Ok(Some(f)) => f,
        Ok(None) => return Err(not_open(tx_id, "busy")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(not_open(
                tx_id,
                "no open transaction with this id (it was committed, rolled back, expired, \
                 or never begun)",
            ));
        }
        Err(e) => return Err(Failure::io("lock transaction", &dir, e)),
    };
    if dir.join(COMMIT).exists() {
        return Err(not_open(tx_id, "already committed"));
    }
    let manifest = read_manifest(&dir).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            not_open(tx_id, "no open transaction with this id")
        } else {
            Failure::io("read transaction manifest", &dir, e)
        }
    })?;
    if expired(&manifest) {
        let _ = retire(&dir);
        return Err(not_open(
            tx_id,
            "expired: its timeout passed before it was committed; it was discarded",
        ));
    }
    Ok(Locked {
        dir,
        _lock: lock,
        manifest,
    })
}

/// `tx_begin`: a new open transaction.
pub fn begin(store: &Store, label: Option<String>, timeout_secs: Option<u64>) -> Result<Manifest> {
    let timeout = timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if timeout == 0 || timeout > MAX_TIMEOUT_SECS {
        return Err(Failure::InvalidArguments {
            message: format!("timeout must be 1..={MAX_TIMEOUT_SECS} seconds, got {timeout}"),
        });
    }
    let root = wal_root(store);
    let new_root = !root.is_dir();
    fs::create_dir_all(&root).map_err(|e| Failure::io("create WAL directory", &root, e))?;
    let tx_id = format!("tx-{}", uuid::Uuid::now_v7().simple());
    let dir = root.join(&tx_id);
    fs::create_dir(&dir).map_err(|e| Failure::io("create transaction directory", &dir, e))?;
    // Locked before the manifest exists, so recovery never takes a half-begun transaction.
    let lock = lock_dir(&dir, true)
        .map_err(|e| Failure::io("lock transaction", &dir, e))?
        .ok_or_else(|| not_open(&tx_id, "busy"))?;
    let now = chrono::Utc::now();
    let expires = now + chrono::Duration::seconds(timeout as i64);
    let m = Manifest {
        tx_id: tx_id.clone(),
        label,
        created_at: now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        expires_at: expires.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        timeout_seconds: timeout,
        owner_pid: std::process::id(),
        caller: store.caller(),
        ops: Vec::new(),
        next_op: 1,
    };
    store.pipeline().with_state_room(4096, || {
        write_manifest(&dir, &m).map_err(|e| Failure::io("write transaction manifest", &dir, e))
    })?;
    let sync = |d: &Path| File::open(d).and_then(|f| f.sync_all());
    sync(&root).map_err(|e| Failure::io("fsync WAL directory", &root, e))?;
    if new_root && let Some(state) = root.parent() {
        sync(state).map_err(|e| Failure::io("fsync state directory", state, e))?;
    }
    drop(lock);
    Ok(m)
}

/// What a staging call computed from the file's current (or already staged) content.
pub struct NewContent {
    pub bytes: Vec<u8>,
    pub mode: String,
    pub replacements: Option<usize>,
}

/// The content a staged operation sees: the file as staged earlier in this transaction, or
/// the file on disk.
pub struct Current {
    pub existing: Option<Existing>,
    /// True when `existing` is content staged earlier in this transaction.
    pub staged: bool,
}

/// Stage a write of `path` in `tx_id`: `compute` sees the current content and returns the
/// new content (checking mode and `expected_prev_sha256` itself). Returns the staged entry
/// and the number of files staged in the transaction.
pub fn stage(
    store: &Store,
    tx_id: &str,
    path: &str,
    tool: &str,
    compute: impl FnOnce(&Current) -> Result<NewContent>,
) -> Result<(StagedOp, usize)> {
    stage_change(store, tx_id, path, tool, |cur| compute(cur).map(Some))
}

/// Stage the removal of `path` in `tx_id` (`restore --session` takes back the files a
/// session created): `check` sees the current content and refuses what must not be
/// removed. The commit removes the file, keeping its content as a pre-image; a file already
/// gone by then is left alone.
pub fn stage_remove(
    store: &Store,
    tx_id: &str,
    path: &str,
    tool: &str,
    check: impl FnOnce(&Current) -> Result<()>,
) -> Result<(StagedOp, usize)> {
    stage_change(store, tx_id, path, tool, |cur| check(cur).map(|()| None))
}

/// [`stage`] and [`stage_remove`]: `compute` returns the new content, or `None` to remove.
fn stage_change(
    store: &Store,
    tx_id: &str,
    path: &str,
    tool: &str,
    compute: impl FnOnce(&Current) -> Result<Option<NewContent>>,
) -> Result<(StagedOp, usize)> {
    let tx = open(store, tx_id)?;
    let resolved = store.workspaces().resolve(path, false);
    let (abs_path, disk) = match resolved {
        Ok(t) => {
            let e = read_existing(&t.dir, &t.name).map_err(|e| Failure::io("read", path, e))?;
            (t.abs_path.display().to_string(), e)
        }
        // A file in a directory that does not exist yet: created at commit.
        Err(Failure::Io { op, source, .. })
            if op == "open parent directory" && source.kind() == io::ErrorKind::NotFound =>
        {
            let abs = store.workspaces().absolute(path)?;
            (abs.display().to_string(), None)
        }
        Err(e) => return Err(e),
    };
    let earlier = tx.manifest.ops.iter().position(|o| o.abs_path == abs_path);
    let (current, base) = match earlier {
        // Removed earlier in this transaction: absent as the transaction sees it.
        Some(i) if tx.manifest.ops[i].mode == REMOVE_MODE => (
            Current {
                existing: None,
                staged: true,
            },
            tx.manifest.ops[i].base_sha256.clone(),
        ),
        Some(i) => {
            let op = &tx.manifest.ops[i];
            let bytes = read_staged(&tx.dir, op)
                .map_err(|e| Failure::io("read staged content", &tx.dir, e))?;
            let mode = disk.as_ref().map_or(0o644, |d| d.mode);
            let existing = Existing {
                sha256: sha256_hex(&bytes),
                size: bytes.len() as u64,
                bytes,
                mode,
                uid: 0,
                gid: 0,
                nlink: 1,
                inode: None,
            };
            (
                Current {
                    existing: Some(existing),
                    staged: true,
                },
                op.base_sha256.clone(),
            )
        }
        None => {
            let base = disk.as_ref().map(|d| d.sha256.clone());
            (
                Current {
                    existing: disk,
                    staged: false,
                },
                base,
            )
        }
    };
    let new = compute(&current)?;
    // The transaction's log is a record: history yields room for it (`room.rs`).
    let room = store.pipeline();
    let op = match new {
        Some(new) => {
            let data_path = tx.dir.join(STAGED_DATA);
            let offset = room.with_state_room(new.bytes.len() as u64, || {
                append_whole(&data_path, &new.bytes)
                    .map_err(|e| Failure::io("write staged content", &data_path, e))
            })?;
            // A second write to the same path in one transaction supersedes the first
            // (chained on its content) and keeps the original base, which the commit checks.
            StagedOp {
                path: path.to_string(),
                abs_path,
                mode: match earlier {
                    // Still a creation, however it was edited since.
                    Some(i) if tx.manifest.ops[i].mode == "create" => "create".into(),
                    _ => new.mode.clone(),
                },
                base_sha256: base,
                sha256: sha256_hex(&new.bytes),
                bytes: new.bytes.len() as u64,
                staged: STAGED_DATA.into(),
                offset: Some(offset),
                tool: tool.to_string(),
                replacements: new.replacements,
            }
        }
        None => StagedOp {
            path: path.to_string(),
            abs_path,
            mode: REMOVE_MODE.into(),
            base_sha256: base,
            sha256: String::new(),
            bytes: 0,
            staged: String::new(),
            offset: None,
            tool: tool.to_string(),
            replacements: None,
        },
    };
    let mut line =
        serde_json::to_vec(&op).map_err(|e| Failure::Internal(format!("staged operation: {e}")))?;
    line.push(b'\n');
    let ops_path = tx.dir.join(OPS_LOG);
    room.with_state_room(line.len() as u64, || {
        append_whole(&ops_path, &line)
            .map_err(|e| Failure::io("write transaction log", &ops_path, e))
    })?;
    let count = tx.manifest.ops.len() + usize::from(earlier.is_none());
    Ok((op, count))
}

/// `tx_status`: the transaction and, per staged file, whether its target still has its base.
pub fn status(store: &Store, tx_id: &str) -> Result<(Manifest, Vec<Option<String>>)> {
    let tx = open(store, tx_id)?;
    let current = tx
        .manifest
        .ops
        .iter()
        .map(|op| current_hash(store, &op.abs_path))
        .collect::<Result<Vec<_>>>()?;
    Ok((tx.manifest.clone(), current))
}

fn current_hash(store: &Store, abs_path: &str) -> Result<Option<String>> {
    let resolved = store.workspaces().resolve(abs_path, false);
    match resolved {
        Ok(t) => Ok(read_existing(&t.dir, &t.name)
            .map_err(|e| Failure::io("read", abs_path, e))?
            .map(|e| e.sha256)),
        Err(Failure::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `tx_rollback`: discard an open transaction. Returns the number of staged files dropped.
pub fn rollback(store: &Store, tx_id: &str) -> Result<usize> {
    let tx = open(store, tx_id)?;
    let n = tx.manifest.ops.len();
    retire(&tx.dir).map_err(|e| Failure::io("remove transaction", &tx.dir, e))?;
    Ok(n)
}

/// A committed transaction.
pub struct Committed {
    pub tx_id: String,
    pub committed_at: String,
    pub files: Vec<(StagedOp, Outcome)>,
}

/// The journal rows of transaction `tx_id`'s commit (one per file, in order; written by
/// `tx_commit` or by the recovery that rolled it forward), or none when it never committed.
pub fn committed_rows(store: &Store, tx_id: &str) -> Result<Vec<Map<String, Value>>> {
    let journal = store.pipeline().journal();
    journal
        .tail_containing(
            usize::MAX,
            &crate::journal::json_string_forms(tx_id),
            |row| row.get("tx_id").and_then(Value::as_str) == Some(tx_id),
        )
        .map(|(rows, _)| rows)
        .map_err(|e| Failure::io("read journal", journal.path(), e))
}

/// One file written by `tx_commit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommittedFile {
    pub path: String,
    pub abs_path: String,
    pub sha256: String,
    pub bytes: u64,
    pub mode_applied: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_sha256: Option<String>,
    pub journal_id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl CommittedFile {
    /// The file staged as `path`, written as `o` tells.
    fn new(path: String, o: Outcome) -> Self {
        CommittedFile {
            path,
            abs_path: o.abs_path.display().to_string(),
            sha256: o.sha256,
            bytes: o.bytes,
            mode_applied: o.mode,
            prev_sha256: o.prev_sha256,
            journal_id: o.journal_id,
            warnings: o.warnings,
        }
    }
}

/// A commit as `tx_commit` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitReport {
    pub tx_id: String,
    /// When it committed (for a replay: when its first file was journaled).
    pub committed_at: String,
    pub files: Vec<CommittedFile>,
}

/// A committed file's journal row, as a replay reads it.
#[derive(Default, Deserialize)]
#[serde(default)]
struct TxRow {
    #[serde(flatten)]
    row: RecordedRow,
    /// The path as the agent gave it to `tx_write` (absent from rows of recovery).
    #[serde(deserialize_with = "lenient")]
    tx_path: Option<String>,
}

/// `tx_commit` as a tool answers it: [`commit`], or for a transaction that is no longer open
/// because it committed (its answer lost, or rolled forward after a crash) the files it wrote
/// then, read back from their journal rows, instead of `tx_not_open`. Nothing is written
/// then.
pub fn commit_or_replay(store: &Store, tx_id: &str) -> Result<Answer<CommitReport>> {
    let c = match commit(store, tx_id) {
        Ok(c) => c,
        Err(f @ Failure::TxNotOpen { .. }) => {
            let rows = committed_rows(store, tx_id)?;
            if rows.is_empty() {
                return Err(f);
            }
            let paths = store.workspaces().journal_paths();
            let rows = rows
                .into_iter()
                .map(crate::journal::recorded::read::<TxRow>)
                .collect::<Result<Vec<_>>>()?;
            return Ok(Answer::Replayed(CommitReport {
                tx_id: tx_id.to_string(),
                committed_at: rows.first().map(|r| r.row.ts.clone()).unwrap_or_default(),
                files: rows
                    .into_iter()
                    .map(|r| {
                        let path = r.tx_path.unwrap_or_else(|| r.row.path.clone());
                        let abs_path = paths.absolute(&r.row.path, r.row.root.as_deref());
                        CommittedFile::new(path, Outcome::recorded(r.row, abs_path))
                    })
                    .collect(),
            }));
        }
        Err(f) => return Err(f),
    };
    Ok(Answer::Applied(CommitReport {
        tx_id: c.tx_id,
        committed_at: c.committed_at,
        files: c
            .files
            .into_iter()
            .map(|(op, o)| CommittedFile::new(op.path, o))
            .collect(),
    }))
}

/// `tx_commit`.
pub fn commit(store: &Store, tx_id: &str) -> Result<Committed> {
    let tx = open(store, tx_id)?;
    let m = &tx.manifest;
    let targets = m
        .ops
        .iter()
        .map(|op| store.workspaces().resolve(&op.abs_path, true))
        .collect::<Result<Vec<Target>>>()?;
    let refs: Vec<&Target> = targets.iter().collect();
    let who = Caller {
        caller: store.caller(),
        tool: "tx_commit".into(),
    };
    let committed_at = now_rfc3339();
    let dir = tx.dir.clone();
    let record = CommitRecord {
        tx_id: m.tx_id.clone(),
        committed_at: committed_at.clone(),
        caller: who.caller.clone(),
        files: m.ops.clone(),
    };
    let outcomes = store.pipeline().commit_many(
        &refs,
        &who,
        |existing| {
            let conflicts: Vec<Value> = m
                .ops
                .iter()
                .zip(existing)
                .filter(|(op, e)| e.as_ref().map(|e| &e.sha256) != op.base_sha256.as_ref())
                .map(|(op, e)| {
                    json!({
                        "path": op.path,
                        "expected_prev_sha256": op.base_sha256,
                        "actual_prev_sha256": e.as_ref().map(|e| e.sha256.clone()),
                    })
                })
                .collect();
            if !conflicts.is_empty() {
                return Err(Failure::TxConflict {
                    tx_id: m.tx_id.clone(),
                    conflicts,
                });
            }
            m.ops
                .iter()
                .map(|op| plan_for(&dir, &m.tx_id, op).map(Some))
                .collect()
        },
        |_| {
            let bytes = serde_json::to_vec_pretty(&record)
                .map_err(|e| Failure::Internal(format!("commit record: {e}")))?;
            // The staged contents become durable with the record that refers to them: one
            // fsync of staged.bin, and one of the WAL directory for both names.
            store.pipeline().with_state_room(bytes.len() as u64, || {
                write_durable_with(&dir, COMMIT, &bytes, || sync_staged(&dir))
                    .map_err(|e| Failure::io("write commit record", &dir, e))
            })
        },
        true,
    )?;
    let files = m
        .ops
        .iter()
        .cloned()
        .zip(outcomes)
        .filter_map(|(op, o)| o.map(|o| (op, o)))
        .collect();
    if let Err(e) = retire(&tx.dir) {
        tracing::warn!("retiring the WAL of committed {tx_id}: {e}; recovery will finish it");
    }
    Ok(Committed {
        tx_id: tx_id.to_string(),
        committed_at,
        files,
    })
}

/// What the commit does to `op`'s file: write its staged content, or remove it.
fn plan_for(dir: &Path, tx_id: &str, op: &StagedOp) -> Result<Step> {
    let mut extra = BTreeMap::new();
    extra.insert("tx_id".into(), json!(tx_id));
    // The path as the caller staged it, so a retried tx_commit can answer as the first did.
    extra.insert("tx_path".into(), json!(op.path));
    if op.mode == REMOVE_MODE {
        return Ok(Step::Remove {
            mode: REMOVE_MODE.into(),
            extra,
        });
    }
    let bytes = read_staged(dir, op).map_err(|e| Failure::io("read staged content", dir, e))?;
    if sha256_hex(&bytes) != op.sha256 {
        return Err(Failure::Corruption {
            path: op.path.clone(),
            expected: op.sha256.clone(),
            actual: sha256_hex(&bytes),
        });
    }
    if let Some(r) = op.replacements {
        extra.insert("replacements".into(), json!(r));
    }
    Ok(Step::Write(Plan {
        body: Body::Bytes(bytes),
        mode: op.mode.clone(),
        // A file that did not exist when staged must not be clobbered if it appeared.
        create_only: op.base_sha256.is_none(),
        extra,
        new_file_mode: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::wal::MANIFEST;
    use super::*;
    use std::sync::Arc;

    pub(super) fn service() -> (tempfile::TempDir, Arc<Store>) {
        crate::testing::temp_store()
    }

    pub(super) fn stage_bytes(
        store: &Store,
        tx_id: &str,
        path: &str,
        bytes: &[u8],
    ) -> (StagedOp, usize) {
        stage(store, tx_id, path, "tx_write", |cur| {
            Ok(NewContent {
                bytes: bytes.to_vec(),
                mode: if cur.existing.is_some() {
                    "overwrite"
                } else {
                    "create"
                }
                .into(),
                replacements: None,
            })
        })
        .unwrap()
    }

    #[test]
    fn a_committed_transaction_asked_again_answers_with_the_files_it_wrote() {
        let (_t, store) = service();
        let m = begin(&store, None, None).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"a");
        stage_bytes(&store, &m.tx_id, "sub/../b.txt", b"b");
        let Answer::Applied(first) = commit_or_replay(&store, &m.tx_id).unwrap() else {
            panic!("the first commit applies");
        };
        assert_eq!(first.files.len(), 2);
        let journal = || store.pipeline().journal().read_from(0).unwrap().0;
        let rows = journal();
        let Answer::Replayed(again) = commit_or_replay(&store, &m.tx_id).unwrap() else {
            panic!("the retry replays");
        };
        assert_eq!(journal(), rows, "a replay writes nothing");
        assert_eq!(again.files, first.files);
        assert_eq!(again.tx_id, m.tx_id);
        assert_eq!(again.committed_at, rows[rows.len() - 2]["ts"]);
        // A transaction that never committed stays unknown.
        let e = commit_or_replay(&store, &format!("tx-{}", "0".repeat(32))).unwrap_err();
        assert!(matches!(e, Failure::TxNotOpen { .. }), "{e:?}");
    }

    #[test]
    fn staging_appends_and_never_rewrites_the_manifest() {
        let (t, store) = service();
        let m = begin(&store, None, None).unwrap();
        let dir = wal_root(&store).join(&m.tx_id);
        let manifest_before = fs::read(dir.join(MANIFEST)).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"first a");
        stage_bytes(&store, &m.tx_id, "b.txt", b"b");
        let (op, count) = stage_bytes(&store, &m.tx_id, "a.txt", b"second a");
        assert_eq!(count, 2, "a second write of a.txt supersedes the first");
        assert_eq!(op.offset, Some(b"first ab".len() as u64));
        assert_eq!(fs::read(dir.join(MANIFEST)).unwrap(), manifest_before);
        let log = fs::read_to_string(dir.join(OPS_LOG)).unwrap();
        assert_eq!(log.lines().count(), 3);
        assert_eq!(
            fs::read(dir.join(STAGED_DATA)).unwrap(),
            b"first absecond a"
        );
        let (status_m, _) = status(&store, &m.tx_id).unwrap();
        let shas: Vec<&str> = status_m.ops.iter().map(|o| o.sha256.as_str()).collect();
        assert_eq!(shas, [sha256_hex(b"second a"), sha256_hex(b"b")]);
        commit(&store, &m.tx_id).unwrap();
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"second a");
        assert_eq!(fs::read(t.path().join("b.txt")).unwrap(), b"b");
        assert!(!dir.exists(), "the WAL is retired");
    }

    #[test]
    fn a_transaction_staged_by_an_earlier_version_still_commits() {
        // One file per operation and the operations in manifest.json, as before staging
        // became append-only.
        let (t, store) = service();
        let m = begin(&store, None, None).unwrap();
        let dir = wal_root(&store).join(&m.tx_id);
        fs::write(dir.join("op-0001.bin"), b"legacy content").unwrap();
        let mut legacy = m.clone();
        legacy.ops.push(StagedOp {
            path: "old.txt".into(),
            abs_path: t
                .path()
                .canonicalize()
                .unwrap()
                .join("old.txt")
                .display()
                .to_string(),
            mode: "create".into(),
            base_sha256: None,
            sha256: sha256_hex(b"legacy content"),
            bytes: 14,
            staged: "op-0001.bin".into(),
            offset: None,
            tool: "tx_write".into(),
            replacements: None,
        });
        legacy.next_op = 2;
        fs::write(dir.join(MANIFEST), serde_json::to_vec(&legacy).unwrap()).unwrap();
        stage_bytes(&store, &m.tx_id, "new.txt", b"new content");
        let c = commit(&store, &m.tx_id).unwrap();
        assert_eq!(c.files.len(), 2);
        assert_eq!(
            fs::read(t.path().join("old.txt")).unwrap(),
            b"legacy content"
        );
        assert_eq!(fs::read(t.path().join("new.txt")).unwrap(), b"new content");
    }

    #[test]
    fn a_damaged_staged_content_fails_the_commit_and_writes_nothing() {
        let (t, store) = service();
        let m = begin(&store, None, None).unwrap();
        let dir = wal_root(&store).join(&m.tx_id);
        stage_bytes(&store, &m.tx_id, "x.txt", b"xxxx");
        stage_bytes(&store, &m.tx_id, "y.txt", b"yyyy");
        fs::write(dir.join(STAGED_DATA), b"xxxxYYYY").unwrap();
        let e = match commit(&store, &m.tx_id) {
            Err(e) => e,
            Ok(_) => panic!("committed damaged content"),
        };
        assert!(matches!(e, Failure::Corruption { .. }), "{e:?}");
        assert!(!t.path().join("x.txt").exists());
        assert!(!t.path().join("y.txt").exists());
    }
}
