//! Recovery at start: every transaction in the WAL is rolled forward when its `COMMIT`
//! record exists and rolled back (or discarded once expired) when it does not and its owner
//! is gone; [`inspect`] reports what recovery would do without acting.

use super::plan_for;
use super::wal::{
    COMMIT, CommitRecord, expired, lock_dir, read_manifest, retire, valid_tx_id, wal_root,
};
use crate::envelope::{Failure, Result};
use crate::journal::json_string_forms;
use crate::pipeline::Caller;
use crate::store::Store;
use crate::workspace::Target;
use serde::Serialize;
use serde_json::Value;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

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
