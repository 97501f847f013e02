//! Recovery at start: every transaction in the WAL is rolled forward when its `COMMIT`
//! record exists and rolled back (or discarded once expired) when it does not and its owner
//! is gone; [`inspect`] reports what recovery would do without acting.

use super::plan_for;
use super::wal::{
    COMMIT, CommitRecord, expired, lock_dir, read_manifest, retire, valid_tx_id, wal_root,
};
use crate::envelope::{Failure, Result};
use crate::journal::json_string_forms;
use crate::store::Store;
use crate::workspace::Target;
use crate::write::pipeline::Caller;
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
    /// The directories of the files the recovered transactions staged: where a crashed
    /// commit may have left temp files (start-up sweeps them before the first call).
    pub target_dirs: Vec<PathBuf>,
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
    crate::write::pipeline::process_alive(pid as i32)
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
pub fn inspect(store: &Store) -> Vec<(String, TxState)> {
    let Ok(entries) = fs::read_dir(wal_root(store)) else {
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
pub fn recover(store: &Store) -> RecoveryReport {
    let mut report = RecoveryReport::default();
    let root = wal_root(store);
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
        if let Ok(m) = read_manifest(&dir) {
            report.target_dirs.extend(
                m.ops
                    .iter()
                    .filter_map(|o| Path::new(&o.abs_path).parent().map(Path::to_path_buf)),
            );
        }
        let outcome = recover_one(store, &tx_id, &dir, &mut report);
        drop(lock);
        if let Err(f) = outcome {
            report.problems.push(format!("transaction {tx_id}: {f}"));
        }
    }
    report
}

fn recover_one(store: &Store, tx_id: &str, dir: &Path, report: &mut RecoveryReport) -> Result<()> {
    match crate::util::statefile::read(&dir.join(COMMIT)) {
        Ok(bytes) => {
            let record: CommitRecord = serde_json::from_slice(&bytes).map_err(|e| {
                Failure::Internal(format!("commit record of {tx_id} is unreadable: {e}"))
            })?;
            roll_forward(store, dir, &record, report)?;
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
    store: &Store,
    dir: &Path,
    record: &CommitRecord,
    report: &mut RecoveryReport,
) -> Result<()> {
    let targets = record
        .files
        .iter()
        .map(|op| store.workspaces().resolve(&op.abs_path, true))
        .collect::<Result<Vec<Target>>>()?;
    let refs: Vec<&Target> = targets.iter().collect();
    // All rows of a commit land in one append: one row with this tx_id means all of them.
    let tx_id = record.tx_id.as_str();
    let (rows, _) = store
        .pipeline()
        .journal()
        .tail_containing(1, &json_string_forms(tx_id), |r| {
            r.get("tx_id").and_then(Value::as_str) == Some(tx_id)
        })
        .map_err(|e| Failure::io("read journal", store.pipeline().journal().path(), e))?;
    let who = Caller {
        caller: record.caller.clone(),
        tool: "tx_commit".into(),
    };
    store.pipeline().commit_many(
        &refs,
        &who,
        |existing| {
            record
                .files
                .iter()
                .zip(existing)
                .map(|(op, e)| {
                    let now = e.as_ref().map(|e| &e.sha256);
                    // Done: the new content is there, or the file to remove is gone.
                    let done = if op.mode == super::REMOVE_MODE {
                        now.is_none()
                    } else {
                        now == Some(&op.sha256)
                    };
                    if done {
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
    use super::super::tests::{service, stage_bytes};
    use super::super::{begin, committed_rows};
    use super::*;
    use crate::journal::now_rfc3339;
    use crate::store::Config;
    use crate::tx::wal::{MANIFEST, OPS_LOG, sync_staged, write_durable_with};
    use serde_json::json;
    use std::sync::Arc;

    /// Write the commit record of open transaction `tx_id` and stop there, as a crash right
    /// after the commit point leaves it: nothing applied, no journal row.
    fn commit_point_only(store: &Store, tx_id: &str) -> PathBuf {
        let dir = wal_root(store).join(tx_id);
        let m = read_manifest(&dir).unwrap();
        let record = CommitRecord {
            tx_id: tx_id.into(),
            committed_at: now_rfc3339(),
            caller: m.caller.clone(),
            files: m.ops,
        };
        let bytes = serde_json::to_vec_pretty(&record).unwrap();
        write_durable_with(&dir, COMMIT, &bytes, || sync_staged(&dir)).unwrap();
        dir
    }

    /// The id of a process that has exited.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    /// Make transaction `tx_id` look like the one of a process that is gone.
    fn orphan(store: &Store, tx_id: &str) -> PathBuf {
        let dir = wal_root(store).join(tx_id);
        let p = dir.join(MANIFEST);
        let mut v: Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        v["owner_pid"] = json!(dead_pid());
        fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
        dir
    }

    /// A second store on the same directory, as a restarted server opens it.
    fn reopen(root: &Path) -> (Arc<Store>, Option<RecoveryReport>) {
        let root = root.canonicalize().unwrap();
        let mut c = Config::new(root.clone());
        c.workspaces = vec![root];
        c.sweep_on_start = false;
        crate::startup::open(c)
    }

    #[test]
    fn recovery_at_start_rolls_forward_a_committed_but_unapplied_transaction() {
        let (t, store) = service();
        fs::write(t.path().join("b.txt"), b"b old").unwrap();
        let m = begin(&store, None, None).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"a new");
        stage_bytes(&store, &m.tx_id, "b.txt", b"b new");
        let dir = commit_point_only(&store, &m.tx_id);
        assert!(!t.path().join("a.txt").exists());
        assert_eq!(fs::read(t.path().join("b.txt")).unwrap(), b"b old");
        drop(store);

        let (store, report) = reopen(t.path());
        let report = report.expect("recovery ran at start");
        assert_eq!(report.rolled_forward, [m.tx_id.as_str()]);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"a new");
        assert_eq!(fs::read(t.path().join("b.txt")).unwrap(), b"b new");
        assert!(!dir.exists(), "the WAL is retired");
        assert_eq!(committed_rows(&store, &m.tx_id).unwrap().len(), 2);
    }

    #[test]
    fn a_committed_removal_is_rolled_forward_and_journaled_once() {
        let (t, store) = service();
        fs::write(t.path().join("gone.txt"), b"created by a session").unwrap();
        fs::write(t.path().join("b.txt"), b"b old").unwrap();
        let m = begin(&store, None, None).unwrap();
        crate::tx::stage_remove(&store, &m.tx_id, "gone.txt", "restore", |cur| {
            assert!(cur.existing.is_some());
            Ok(())
        })
        .unwrap();
        stage_bytes(&store, &m.tx_id, "b.txt", b"b new");
        commit_point_only(&store, &m.tx_id);
        assert!(t.path().join("gone.txt").exists(), "nothing applied yet");
        let report = recover(&store);
        assert_eq!(report.rolled_forward, [m.tx_id.as_str()]);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert!(!t.path().join("gone.txt").exists());
        assert_eq!(fs::read(t.path().join("b.txt")).unwrap(), b"b new");
        let rows = committed_rows(&store, &m.tx_id).unwrap();
        assert_eq!(rows.len(), 2);
        let removal = rows.iter().find(|r| r["path"] == "gone.txt").unwrap();
        assert_eq!(removal["mode"], "delete");
        assert_eq!(removal["sha256"], "");
        let kept = crate::hash::sha256_hex(b"created by a session");
        assert_eq!(removal["prev_sha256"], kept.as_str());
        assert!(store.pipeline().objects().unwrap().contains(&kept));
    }

    #[test]
    fn a_roll_forward_whose_journal_rows_already_landed_writes_no_second_row() {
        let (t, store) = service();
        let m = begin(&store, None, None).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"a new");
        let dir = commit_point_only(&store, &m.tx_id);
        let copy = t.path().join("wal-copy");
        fs::create_dir(&copy).unwrap();
        for e in fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), copy.join(e.file_name())).unwrap();
        }
        assert_eq!(recover(&store).rolled_forward, [m.tx_id.as_str()]);
        assert_eq!(committed_rows(&store, &m.tx_id).unwrap().len(), 1);
        // As a crash after the journal append and before the rename leaves it: the rows are
        // in, the file is not, the WAL is still there.
        fs::remove_file(t.path().join("a.txt")).unwrap();
        fs::rename(&copy, &dir).unwrap();
        let again = recover(&store);
        assert_eq!(again.rolled_forward, [m.tx_id.as_str()]);
        assert!(again.problems.is_empty(), "{:?}", again.problems);
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"a new");
        assert_eq!(committed_rows(&store, &m.tx_id).unwrap().len(), 1);
        assert!(!dir.exists());
    }

    #[test]
    fn recovery_rolls_back_an_uncommitted_transaction_whose_owner_is_gone() {
        let (t, store) = service();
        fs::write(t.path().join("b.txt"), b"b old").unwrap();
        let m = begin(&store, None, None).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"a new");
        stage_bytes(&store, &m.tx_id, "b.txt", b"b new");
        let dir = orphan(&store, &m.tx_id);
        assert_eq!(
            inspect(&store),
            [(m.tx_id.clone(), TxState::Abandoned)],
            "inspect reports without acting"
        );
        assert!(dir.exists());
        let report = recover(&store);
        assert_eq!(report.rolled_back, [m.tx_id.as_str()]);
        assert!(report.rolled_forward.is_empty() && report.problems.is_empty());
        assert!(!t.path().join("a.txt").exists());
        assert_eq!(fs::read(t.path().join("b.txt")).unwrap(), b"b old");
        assert!(!dir.exists(), "the WAL is retired");
        assert!(committed_rows(&store, &m.tx_id).unwrap().is_empty());
    }

    #[test]
    fn recovery_leaves_an_uncommitted_transaction_of_a_live_owner_open() {
        let (t, store) = service();
        let m = begin(&store, None, None).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"a new");
        let report = recover(&store);
        assert_eq!(report.open, [m.tx_id.as_str()]);
        assert!(report.rolled_back.is_empty());
        assert!(wal_root(&store).join(&m.tx_id).exists());
        assert!(!t.path().join("a.txt").exists());
        assert_eq!(inspect(&store), [(m.tx_id.clone(), TxState::Open)]);
    }

    #[test]
    fn recovery_discards_an_expired_uncommitted_transaction() {
        let (_t, store) = service();
        let m = begin(&store, None, None).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"a new");
        let dir = wal_root(&store).join(&m.tx_id);
        let p = dir.join(MANIFEST);
        let mut v: Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        v["expires_at"] = json!("2000-01-01T00:00:00Z");
        fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
        assert_eq!(inspect(&store), [(m.tx_id.clone(), TxState::Expired)]);
        assert_eq!(recover(&store).expired, [m.tx_id.as_str()]);
        assert!(!dir.exists());
    }

    #[test]
    fn recovery_rolls_back_an_abandoned_transaction_with_a_torn_ops_log_tail() {
        let (t, store) = service();
        let m = begin(&store, None, None).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"a new");
        let dir = orphan(&store, &m.tx_id);
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(dir.join(OPS_LOG))
            .unwrap();
        std::io::Write::write_all(&mut f, b"{\"path\":\"b.t").unwrap();
        let report = recover(&store);
        assert_eq!(report.rolled_back, [m.tx_id.as_str()]);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert!(!t.path().join("a.txt").exists());
        assert!(!dir.exists());
    }

    #[test]
    fn a_committed_transaction_with_a_torn_ops_log_tail_still_rolls_forward() {
        // The commit record lists every file: the ops log is not read again.
        let (t, store) = service();
        let m = begin(&store, None, None).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"a new");
        let dir = commit_point_only(&store, &m.tx_id);
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(dir.join(OPS_LOG))
            .unwrap();
        std::io::Write::write_all(&mut f, b"{\"path\":\"b.t").unwrap();
        let report = recover(&store);
        assert_eq!(report.rolled_forward, [m.tx_id.as_str()]);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(fs::read(t.path().join("a.txt")).unwrap(), b"a new");
    }

    #[test]
    fn recovery_leaves_a_file_changed_after_the_crash_alone_and_reports_it() {
        let (t, store) = service();
        fs::write(t.path().join("a.txt"), b"a old").unwrap();
        let m = begin(&store, None, None).unwrap();
        stage_bytes(&store, &m.tx_id, "a.txt", b"a new");
        stage_bytes(&store, &m.tx_id, "b.txt", b"b new");
        commit_point_only(&store, &m.tx_id);
        fs::write(t.path().join("a.txt"), b"someone else's").unwrap();
        let report = recover(&store);
        assert_eq!(report.rolled_forward, [m.tx_id.as_str()]);
        assert_eq!(
            fs::read(t.path().join("a.txt")).unwrap(),
            b"someone else's",
            "the later write survives"
        );
        assert_eq!(fs::read(t.path().join("b.txt")).unwrap(), b"b new");
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert!(
            report.problems[0].contains(&m.tx_id)
                && report.problems[0].contains("a.txt")
                && report.problems[0].contains("changed after the crash"),
            "{:?}",
            report.problems
        );
        assert!(
            report
                .summary()
                .iter()
                .any(|l| l.contains("a.txt") && l.contains("left as it is")),
            "{:?}",
            report.summary()
        );
    }
}
