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
//! - Recovery ([`recover`], run by `Store::open` and `resilient-write recover`): a
//!   transaction with a `COMMIT` record is rolled forward idempotently (a file that already
//!   has its new hash is left alone; journal rows are not written twice); one without is
//!   rolled back when its owner process is gone, and discarded when its timeout has passed.
//! - Concurrent transactions on one path: the first commit wins; the other finds a base
//!   hash that no longer matches and fails with `stale_precondition`.
//!
//! A per-transaction `flock` on its WAL directory serialises calls on one transaction (also
//! across processes) and tells recovery which transactions a live process is working on.

use crate::envelope::{Failure, Result};
use crate::hash::sha256_hex;
use crate::journal::{json_string_forms, now_rfc3339};
use crate::pipeline::{Body, Caller, Existing, Outcome, Plan, read_existing};
use crate::store::Store;
use crate::workspace::Target;
use rustix::fs::FlockOperation;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Directory of the write-ahead log inside the state directory.
pub const WAL_DIR: &str = "wal";
const MANIFEST: &str = "manifest.json";
const COMMIT: &str = "COMMIT";
/// Staged contents, appended (see the module doc).
const STAGED_DATA: &str = "staged.bin";
/// One staged operation per line, appended.
const OPS_LOG: &str = "ops.jsonl";

/// Default and longest timeout of an open transaction.
pub const DEFAULT_TIMEOUT_SECS: u64 = 3600;
pub const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

/// One staged file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StagedOp {
    /// The path as the agent gave it.
    pub path: String,
    pub abs_path: String,
    /// Journal mode: create, overwrite, append, replace or restore.
    pub mode: String,
    /// Hash of the target when first staged in this transaction (`None`: did not exist).
    pub base_sha256: Option<String>,
    /// Hash and size of the staged content.
    pub sha256: String,
    pub bytes: u64,
    /// File name of the staged content in the WAL directory.
    pub staged: String,
    /// Where the content starts in `staged` (`bytes` long); `None`: it is the whole file
    /// (transactions staged by earlier versions, one file per operation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacements: Option<usize>,
}

/// The transaction: `manifest.json` as `tx_begin` wrote it, with `ops` completed from
/// `ops.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub tx_id: String,
    #[serde(default)]
    pub label: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub timeout_seconds: u64,
    pub owner_pid: u32,
    pub caller: String,
    /// Staged files. Written as `[]` by `tx_begin`; earlier versions rewrote the manifest per
    /// staging call and kept them here, which is still read.
    #[serde(default)]
    pub ops: Vec<StagedOp>,
    /// Counter for staged file names (earlier versions).
    #[serde(default)]
    pub next_op: u64,
}

/// The commit record: its durable presence is the commit point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommitRecord {
    pub tx_id: String,
    pub committed_at: String,
    pub caller: String,
    pub files: Vec<StagedOp>,
}

fn wal_root(svc: &Store) -> PathBuf {
    svc.state_dir().join(WAL_DIR)
}

/// Transaction ids: `tx-` and a time-ordered UUID, so they sort by start time.
fn valid_tx_id(id: &str) -> bool {
    id.len() == 35 && id.starts_with("tx-") && id[3..].bytes().all(|b| b.is_ascii_hexdigit())
}

fn not_open(tx_id: &str, reason: &str) -> Failure {
    Failure::TxNotOpen {
        tx_id: tx_id.into(),
        reason: reason.into(),
    }
}

/// Write `bytes` to `dir/name` durably: temp file, fsync, rename, fsync `dir`.
fn write_durable(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    write_durable_with(dir, name, bytes, || Ok(()))
}

/// Like [`write_durable`]; `before_rename` runs after the temp file is fsynced and before it
/// is renamed into place, and the one directory fsync that follows covers what it created.
fn write_durable_with(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    before_rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    before_rename()?;
    fs::rename(&tmp, dir.join(name))?;
    File::open(dir)?.sync_all()
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
}

/// Append `bytes` to `path` whole or not at all: a failed write (ENOSPC) is cut off, so
/// the next append starts on a clean boundary. Returns the offset the bytes start at. The
/// caller holds the transaction's lock, so nothing else appends meanwhile.
fn append_whole(path: &Path, bytes: &[u8]) -> io::Result<u64> {
    let mut f = open_append(path)?;
    let offset = f.metadata()?.len();
    if let Err(e) = f.write_all(bytes) {
        let _ = f.set_len(offset);
        return Err(e);
    }
    Ok(offset)
}

/// The staged operations recorded in `ops.jsonl`, in order. A line cut short by a failed
/// append is not possible (see [`append_whole`]); any unreadable line is an error.
fn read_ops(dir: &Path) -> io::Result<Vec<StagedOp>> {
    let text = match fs::read(dir.join(OPS_LOG)) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice(l).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
        })
        .collect()
}

/// The content of a staged operation, read from the WAL.
fn read_staged(dir: &Path, op: &StagedOp) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let path = dir.join(&op.staged);
    match op.offset {
        None => fs::read(path),
        Some(offset) => {
            let len = usize::try_from(op.bytes)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "staged size"))?;
            let mut buf = vec![0u8; len];
            File::open(path)?.read_exact_at(&mut buf, offset)?;
            Ok(buf)
        }
    }
}

/// Make what staging appended durable (the commit record will refer to it).
fn sync_staged(dir: &Path) -> io::Result<()> {
    match File::open(dir.join(STAGED_DATA)) {
        Ok(f) => f.sync_data(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
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

fn lock_dir(dir: &Path, blocking: bool) -> io::Result<Option<File>> {
    let f = File::open(dir)?;
    let op = if blocking {
        FlockOperation::LockExclusive
    } else {
        FlockOperation::NonBlockingLockExclusive
    };
    match rustix::fs::flock(&f, op) {
        Ok(()) => Ok(Some(f)),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The manifest with every staged operation (a later operation on a file supersedes the
/// earlier one in place).
fn read_manifest(dir: &Path) -> io::Result<Manifest> {
    let text = fs::read(dir.join(MANIFEST))?;
    let mut m: Manifest =
        serde_json::from_slice(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    for op in read_ops(dir)? {
        match m.ops.iter().position(|o| o.abs_path == op.abs_path) {
            Some(i) => m.ops[i] = op,
            None => m.ops.push(op),
        }
    }
    Ok(m)
}

fn write_manifest(dir: &Path, m: &Manifest) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(m).map_err(io::Error::other)?;
    write_durable(dir, MANIFEST, &bytes)
}

fn expired(m: &Manifest) -> bool {
    chrono::DateTime::parse_from_rfc3339(&m.expires_at)
        .map(|t| t < chrono::Utc::now())
        .unwrap_or(true)
}

/// Remove a transaction's WAL directory durably.
fn retire(dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    if let Some(parent) = dir.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

/// Lock transaction `tx_id` and check that it is open (not committed, not expired).
fn open(svc: &Store, tx_id: &str) -> Result<Locked> {
    if !valid_tx_id(tx_id) {
        return Err(Failure::InvalidArguments {
            message: format!("tx_id {tx_id:?} is not a transaction id (tx-<32 hex digits>)"),
        });
    }
    let dir = wal_root(svc).join(tx_id);
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
pub fn begin(svc: &Store, label: Option<String>, timeout_secs: Option<u64>) -> Result<Manifest> {
    let timeout = timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if timeout == 0 || timeout > MAX_TIMEOUT_SECS {
        return Err(Failure::InvalidArguments {
            message: format!("timeout must be 1..={MAX_TIMEOUT_SECS} seconds, got {timeout}"),
        });
    }
    let root = wal_root(svc);
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
        caller: svc.caller(),
        ops: Vec::new(),
        next_op: 1,
    };
    write_manifest(&dir, &m).map_err(|e| Failure::io("write transaction manifest", &dir, e))?;
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
    svc: &Store,
    tx_id: &str,
    path: &str,
    tool: &str,
    compute: impl FnOnce(&Current) -> Result<NewContent>,
) -> Result<(StagedOp, usize)> {
    let tx = open(svc, tx_id)?;
    let resolved = svc.workspaces().resolve(path, false);
    let (abs_path, disk) = match resolved {
        Ok(t) => {
            let e = read_existing(&t.dir, &t.name).map_err(|e| Failure::io("read", path, e))?;
            (t.abs_path.display().to_string(), e)
        }
        // A file in a directory that does not exist yet: created at commit.
        Err(Failure::Io { op, source, .. })
            if op == "open parent directory" && source.kind() == io::ErrorKind::NotFound =>
        {
            let abs = svc.workspaces().absolute(path)?;
            (abs.display().to_string(), None)
        }
        Err(e) => return Err(e),
    };
    let earlier = tx.manifest.ops.iter().position(|o| o.abs_path == abs_path);
    let (current, base) = match earlier {
        Some(i) => {
            let op = &tx.manifest.ops[i];
            let bytes = read_staged(&tx.dir, op)
                .map_err(|e| Failure::io("read staged content", &tx.dir, e))?;
            let mode = disk.as_ref().map_or(0o644, |d| d.mode);
            let existing = Existing {
                sha256: sha256_hex(&bytes),
                bytes,
                mode,
                uid: 0,
                gid: 0,
                nlink: 1,
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
    let data_path = tx.dir.join(STAGED_DATA);
    let offset = append_whole(&data_path, &new.bytes)
        .map_err(|e| Failure::io("write staged content", &data_path, e))?;
    // A second write to the same path in one transaction supersedes the first (chained on
    // its content) and keeps the original base, which the commit checks.
    let op = StagedOp {
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
    };
    let mut line =
        serde_json::to_vec(&op).map_err(|e| Failure::Internal(format!("staged operation: {e}")))?;
    line.push(b'\n');
    let ops_path = tx.dir.join(OPS_LOG);
    append_whole(&ops_path, &line)
        .map_err(|e| Failure::io("write transaction log", &ops_path, e))?;
    let count = tx.manifest.ops.len() + usize::from(earlier.is_none());
    Ok((op, count))
}

/// `tx_status`: the transaction and, per staged file, whether its target still has its base.
pub fn status(svc: &Store, tx_id: &str) -> Result<(Manifest, Vec<Option<String>>)> {
    let tx = open(svc, tx_id)?;
    let current = tx
        .manifest
        .ops
        .iter()
        .map(|op| current_hash(svc, &op.abs_path))
        .collect::<Result<Vec<_>>>()?;
    Ok((tx.manifest.clone(), current))
}

fn current_hash(svc: &Store, abs_path: &str) -> Result<Option<String>> {
    let resolved = svc.workspaces().resolve(abs_path, false);
    match resolved {
        Ok(t) => Ok(read_existing(&t.dir, &t.name)
            .map_err(|e| Failure::io("read", abs_path, e))?
            .map(|e| e.sha256)),
        Err(Failure::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `tx_rollback`: discard an open transaction. Returns the number of staged files dropped.
pub fn rollback(svc: &Store, tx_id: &str) -> Result<usize> {
    let tx = open(svc, tx_id)?;
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
pub fn committed_rows(svc: &Store, tx_id: &str) -> Result<Vec<Map<String, Value>>> {
    let journal = svc.pipeline().journal();
    journal
        .tail_containing(
            usize::MAX,
            &crate::journal::json_string_forms(tx_id),
            |row| row.get("tx_id").and_then(Value::as_str) == Some(tx_id),
        )
        .map(|(rows, _)| rows)
        .map_err(|e| Failure::io("read journal", journal.path(), e))
}

/// `tx_commit`.
pub fn commit(svc: &Store, tx_id: &str) -> Result<Committed> {
    let tx = open(svc, tx_id)?;
    let m = &tx.manifest;
    let targets = m
        .ops
        .iter()
        .map(|op| svc.workspaces().resolve(&op.abs_path, true))
        .collect::<Result<Vec<Target>>>()?;
    let refs: Vec<&Target> = targets.iter().collect();
    let who = Caller {
        caller: svc.caller(),
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
    let outcomes = svc.pipeline().commit_many(
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
            write_durable_with(&dir, COMMIT, &bytes, || sync_staged(&dir))
                .map_err(|e| Failure::io("write commit record", &dir, e))
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

fn plan_for(dir: &Path, tx_id: &str, op: &StagedOp) -> Result<Plan> {
    let bytes = read_staged(dir, op).map_err(|e| Failure::io("read staged content", dir, e))?;
    if sha256_hex(&bytes) != op.sha256 {
        return Err(Failure::Corruption {
            path: op.path.clone(),
            expected: op.sha256.clone(),
            actual: sha256_hex(&bytes),
        });
    }
    let mut extra = BTreeMap::new();
    extra.insert("tx_id".into(), json!(tx_id));
    // The path as the caller staged it, so a retried tx_commit can answer as the first did.
    extra.insert("tx_path".into(), json!(op.path));
    if let Some(r) = op.replacements {
        extra.insert("replacements".into(), json!(r));
    }
    Ok(Plan {
        body: Body::Bytes(bytes),
        mode_label: op.mode.clone(),
        // A file that did not exist when staged must not be clobbered if it appeared.
        create_only: op.base_sha256.is_none(),
        extra,
        new_file_mode: None,
    })
}

/// What recovery did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct RecoveryReport {
    pub rolled_forward: Vec<String>,
    pub rolled_back: Vec<String>,
    pub expired: Vec<String>,
    /// Transactions left alone: open in a live process.
    pub open: Vec<String>,
    pub problems: Vec<String>,
}

impl RecoveryReport {
    pub fn summary(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in &self.rolled_forward {
            out.push(format!(
                "transaction {t}: committed before a crash; rolled forward"
            ));
        }
        for t in &self.rolled_back {
            out.push(format!(
                "transaction {t}: not committed by a process that is gone; rolled back"
            ));
        }
        for t in &self.expired {
            out.push(format!("transaction {t}: timed out; discarded"));
        }
        for p in &self.problems {
            out.push(p.clone());
        }
        out
    }
}

fn process_alive(pid: u32) -> bool {
    crate::pipeline::process_alive(pid as i32)
}

/// What recovery would do with a transaction in the WAL, found without acting on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxState {
    /// Its `COMMIT` record exists: recovery rolls it forward.
    Committed,
    /// Being worked on by a live process (locked, or its owner alive and not expired).
    Open,
    /// Never committed and its owner is gone (or it has no readable manifest): rolled back.
    Abandoned,
    /// Never committed and past its timeout: discarded.
    Expired,
}

/// Every transaction in the WAL and what [`recover`] would do with it (oldest first). Reads
/// only: `doctor` reports these, and `doctor --fix` runs [`recover`].
pub fn inspect(svc: &Store) -> Vec<(String, TxState)> {
    let Ok(entries) = fs::read_dir(wal_root(svc)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, TxState)> = entries
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| (e.file_name().to_string_lossy().to_string(), e.path()))
        .filter(|(n, _)| valid_tx_id(n))
        .map(|(id, dir)| {
            let state = if dir.join(COMMIT).exists() {
                TxState::Committed
            } else if matches!(lock_dir(&dir, false), Ok(None)) {
                TxState::Open
            } else {
                match read_manifest(&dir) {
                    Ok(m) if expired(&m) => TxState::Expired,
                    Ok(m) if process_alive(m.owner_pid) => TxState::Open,
                    _ => TxState::Abandoned,
                }
            };
            (id, state)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Recovery of every transaction in the WAL (see the module doc).
pub fn recover(svc: &Store) -> RecoveryReport {
    let mut report = RecoveryReport::default();
    let root = wal_root(svc);
    let Ok(entries) = fs::read_dir(&root) else {
        return report;
    };
    let mut dirs: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| (e.file_name().to_string_lossy().to_string(), e.path()))
        .filter(|(n, _)| valid_tx_id(n))
        .collect();
    // Oldest first: a later transaction may build on an earlier one's files.
    dirs.sort();
    for (tx_id, dir) in dirs {
        let lock = match lock_dir(&dir, false) {
            Ok(Some(l)) => l,
            Ok(None) => {
                report.open.push(tx_id);
                continue;
            }
            Err(e) => {
                report.problems.push(format!("transaction {tx_id}: {e}"));
                continue;
            }
        };
        let outcome = recover_one(svc, &tx_id, &dir, &mut report);
        drop(lock);
        if let Err(f) = outcome {
            report.problems.push(format!("transaction {tx_id}: {f}"));
        }
    }
    report
}

fn recover_one(svc: &Store, tx_id: &str, dir: &Path, report: &mut RecoveryReport) -> Result<()> {
    match fs::read(dir.join(COMMIT)) {
        Ok(bytes) => {
            let record: CommitRecord = serde_json::from_slice(&bytes).map_err(|e| {
                Failure::Internal(format!("commit record of {tx_id} is unreadable: {e}"))
            })?;
            roll_forward(svc, dir, &record, report)?;
            retire(dir).map_err(|e| Failure::io("remove transaction", dir, e))?;
            report.rolled_forward.push(tx_id.to_string());
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => match read_manifest(dir) {
            Ok(m) if process_alive(m.owner_pid) && !expired(&m) => {
                report.open.push(tx_id.to_string());
            }
            Ok(m) if expired(&m) => {
                retire(dir).map_err(|e| Failure::io("remove transaction", dir, e))?;
                report.expired.push(tx_id.to_string());
            }
            // Owner gone, or a begin that crashed before its manifest: never acknowledged
            // as committed, so nothing of it may land.
            _ => {
                retire(dir).map_err(|e| Failure::io("remove transaction", dir, e))?;
                report.rolled_back.push(tx_id.to_string());
            }
        },
        Err(e) => return Err(Failure::io("read commit record", dir, e)),
    }
    Ok(())
}

/// Apply what a committed transaction has not applied yet. A file with its new hash is done;
/// a file with its base hash gets the staged content; any other content means someone wrote
/// the file after the crash: it is left alone and reported.
fn roll_forward(
    svc: &Store,
    dir: &Path,
    record: &CommitRecord,
    report: &mut RecoveryReport,
) -> Result<()> {
    let targets = record
        .files
        .iter()
        .map(|op| svc.workspaces().resolve(&op.abs_path, true))
        .collect::<Result<Vec<Target>>>()?;
    let refs: Vec<&Target> = targets.iter().collect();
    // All rows of a commit land in one append: one row with this tx_id means all of them.
    let tx_id = record.tx_id.as_str();
    let (rows, _) = svc
        .pipeline()
        .journal()
        .tail_containing(1, &json_string_forms(tx_id), |r| {
            r.get("tx_id").and_then(Value::as_str) == Some(tx_id)
        })
        .map_err(|e| Failure::io("read journal", svc.pipeline().journal().path(), e))?;
    let who = Caller {
        caller: record.caller.clone(),
        tool: "tx_commit".into(),
    };
    svc.pipeline().commit_many(
        &refs,
        &who,
        |existing| {
            record
                .files
                .iter()
                .zip(existing)
                .map(|(op, e)| {
                    let now = e.as_ref().map(|e| &e.sha256);
                    if now == Some(&op.sha256) {
                        Ok(None)
                    } else if now == op.base_sha256.as_ref() {
                        plan_for(dir, tx_id, op).map(Some)
                    } else {
                        report.problems.push(format!(
                            "transaction {tx_id}: {} changed after the crash; left as it is",
                            op.path
                        ));
                        Ok(None)
                    }
                })
                .collect()
        },
        |_| Ok(()),
        rows.is_empty(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Config;
    use std::sync::Arc;

    fn service() -> (tempfile::TempDir, Arc<Store>) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let mut c = Config::new(root.clone());
        c.workspaces = vec![root];
        c.sweep_on_start = false;
        (t, Store::open(c))
    }

    fn stage_bytes(svc: &Store, tx_id: &str, path: &str, bytes: &[u8]) -> (StagedOp, usize) {
        stage(svc, tx_id, path, "tx_write", |cur| {
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
    fn staging_appends_and_never_rewrites_the_manifest() {
        let (t, svc) = service();
        let m = begin(&svc, None, None).unwrap();
        let dir = wal_root(&svc).join(&m.tx_id);
        let manifest_before = fs::read(dir.join(MANIFEST)).unwrap();
        stage_bytes(&svc, &m.tx_id, "a.txt", b"first a");
        stage_bytes(&svc, &m.tx_id, "b.txt", b"b");
        let (op, count) = stage_bytes(&svc, &m.tx_id, "a.txt", b"second a");
        assert_eq!(count, 2, "a second write of a.txt supersedes the first");
        assert_eq!(op.offset, Some(b"first ab".len() as u64));
        assert_eq!(fs::read(dir.join(MANIFEST)).unwrap(), manifest_before);
        let log = fs::read_to_string(dir.join(OPS_LOG)).unwrap();
        assert_eq!(log.lines().count(), 3);
        assert_eq!(
            fs::read(dir.join(STAGED_DATA)).unwrap(),
            b"first absecond a"
        );
        let (status_m, _) = status(&svc, &m.tx_id).unwrap();
        let shas: Vec<&str> = status_m.ops.iter().map(|o| o.sha256.as_str()).collect();
        assert_eq!(shas, [sha256_hex(b"second a"), sha256_hex(b"b")]);
        commit(&svc, &m.tx_id).unwrap();
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"second a");
        assert_eq!(fs::read(t.path().join("b.txt")).unwrap(), b"b");
        assert!(!dir.exists(), "the WAL is retired");
    }

    #[test]
    fn a_transaction_staged_by_an_earlier_version_still_commits() {
        // One file per operation and the operations in manifest.json, as before staging
        // became append-only.
        let (t, svc) = service();
        let m = begin(&svc, None, None).unwrap();
        let dir = wal_root(&svc).join(&m.tx_id);
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
        stage_bytes(&svc, &m.tx_id, "new.txt", b"new content");
        let c = commit(&svc, &m.tx_id).unwrap();
        assert_eq!(c.files.len(), 2);
        assert_eq!(
            fs::read(t.path().join("old.txt")).unwrap(),
            b"legacy content"
        );
        assert_eq!(fs::read(t.path().join("new.txt")).unwrap(), b"new content");
    }

    #[test]
    fn a_damaged_staged_content_fails_the_commit_and_writes_nothing() {
        let (t, svc) = service();
        let m = begin(&svc, None, None).unwrap();
        let dir = wal_root(&svc).join(&m.tx_id);
        stage_bytes(&svc, &m.tx_id, "x.txt", b"xxxx");
        stage_bytes(&svc, &m.tx_id, "y.txt", b"yyyy");
        fs::write(dir.join(STAGED_DATA), b"xxxxYYYY").unwrap();
        let e = match commit(&svc, &m.tx_id) {
            Err(e) => e,
            Ok(_) => panic!("committed damaged content"),
        };
        assert!(matches!(e, Failure::Corruption { .. }), "{e:?}");
        assert!(!t.path().join("x.txt").exists());
        assert!(!t.path().join("y.txt").exists());
    }
}
