//! History and undo (beyond the paper): the journaled versions of a path, restore of a path
//! to one of them or of a whole transaction, and retention (`gc`) of the object store.
//!
//! - [`versions`] reads the journal backwards in large blocks and parses only the lines that
//!   contain the path's JSON-encoded form (a substring search, [`Journal::scan_back`]), and of
//!   those only the fields it reports, so listing the versions of one path costs a scan of
//!   raw bytes plus the rows it returns, not a parse of the whole journal. Whether each
//!   version's content is stored is answered from one listing per object fan-out directory
//!   ([`ObjectStore::presence`]), not one `stat` per version.
//! - A version's content is available (`stored`) when it is the file's current content or its
//!   pre-image is in the object store ([`crate::objects`]): every overwrite keeps the content
//!   it replaces, so every journaled version but the current one is a pre-image of a later
//!   write, until `gc` removes it.
//! - [`restore`] goes through the write pipeline (mode `restore`, journaled, its own
//!   pre-image kept, so a restore is itself undoable); [`restore_tx`] puts every file of a
//!   transaction back as one new transaction ([`crate::tx`]).
//! - Retention comes from the policy file's `history:` section ([`Retention`]): `keep_last`
//!   pre-images per path are always kept; others go when older than `max_age`, then oldest
//!   first while the store is over `max_bytes`.

use crate::envelope::{Failure, Result};
use crate::journal::{Journal, Row, json_string_forms};
use crate::objects::ObjectStore;
use crate::pipeline::{Body, Caller, Decision, Outcome, Plan};
use crate::store::Store;
use crate::tx::{self, NewContent};
use crate::write::intent;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::time::{Duration, SystemTime};

/// One journaled version of a path.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
pub struct Version {
    pub journal_id: String,
    pub ts: String,
    pub sha256: String,
    pub bytes: u64,
    pub mode: String,
    #[serde(default)]
    pub tx_id: Option<String>,
    /// Whether this version's content can be restored (stored, or the current content).
    pub stored: bool,
}

/// Scan the journal backwards for rows containing the string `value` (JSON-encoded, so a
/// field equal to it), newest first; `visit` gets each parsed row and returns false to stop.
/// The caller checks which field matched.
pub fn scan_back(
    journal: &Journal,
    value: &str,
    mut visit: impl FnMut(Row) -> bool,
) -> io::Result<()> {
    journal.scan_back(
        &json_string_forms(value),
        |line| match serde_json::from_slice::<Row>(line) {
            Ok(row) => visit(row),
            Err(_) => true,
        },
    )?;
    Ok(())
}

/// The fields of a journal row that [`versions`] reports, borrowed from the line where the
/// JSON allows it (the other fields are skipped unparsed).
#[derive(Deserialize)]
struct VersionRow<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    #[serde(borrow, default)]
    journal_id: Cow<'a, str>,
    #[serde(borrow, default)]
    ts: Cow<'a, str>,
    #[serde(borrow, default)]
    sha256: Cow<'a, str>,
    #[serde(default)]
    bytes: Option<u64>,
    #[serde(borrow, default)]
    mode: Cow<'a, str>,
    #[serde(borrow, default)]
    tx_id: Option<Cow<'a, str>>,
}

fn s(row: &Row, k: &str) -> String {
    row.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The versions of `abs_path`, newest first, at most `limit`. `current_sha256` is the
/// file's content now (always restorable).
pub fn versions(
    journal: &Journal,
    objects: Option<&ObjectStore>,
    abs_path: &str,
    current_sha256: Option<&str>,
    limit: usize,
) -> io::Result<Vec<Version>> {
    let mut out = Vec::new();
    let mut stored = objects.map(ObjectStore::presence);
    journal.scan_back(&json_string_forms(abs_path), |line| {
        let Ok(row) = serde_json::from_slice::<VersionRow>(line) else {
            return true; // a corrupt line, or one whose `path` is not a string
        };
        if row.path != abs_path {
            return true;
        }
        let sha256 = row.sha256.into_owned();
        let is_stored = current_sha256 == Some(sha256.as_str())
            || stored.as_mut().is_some_and(|p| p.contains(&sha256));
        out.push(Version {
            journal_id: row.journal_id.into_owned(),
            ts: row.ts.into_owned(),
            bytes: row.bytes.unwrap_or(0),
            mode: row.mode.into_owned(),
            tx_id: row.tx_id.map(Cow::into_owned),
            sha256,
            stored: is_stored,
        });
        out.len() < limit
    })?;
    Ok(out)
}

/// The journal row with `journal_id`.
pub fn find_row(journal: &Journal, journal_id: &str) -> io::Result<Option<Row>> {
    let mut found = None;
    scan_back(journal, journal_id, |row| {
        if row.get("journal_id").and_then(Value::as_str) == Some(journal_id) {
            found = Some(row);
            false
        } else {
            true
        }
    })?;
    Ok(found)
}

/// The journal rows of transaction `tx_id` (all land in one append, so the scan stops at the
/// first row of another transaction after them).
pub fn tx_rows(journal: &Journal, tx_id: &str) -> io::Result<Vec<Row>> {
    let mut rows = Vec::new();
    scan_back(journal, tx_id, |row| {
        if row.get("tx_id").and_then(Value::as_str) == Some(tx_id) {
            rows.push(row);
        }
        true
    })?;
    rows.reverse();
    Ok(rows)
}

/// What restore wrote (`None` outcome: the file already had that content).
pub struct Restored {
    pub abs_path: String,
    pub to_sha256: String,
    pub outcome: Option<Outcome>,
    pub prev_sha256: Option<String>,
    /// Unified diff from the current content to the restored one (dry runs).
    pub diff: Option<String>,
}

/// Which version to restore.
pub enum RestoreTo {
    Sha256(String),
    JournalId(String),
}

/// Restore `path` to a journaled version through the pipeline (mode `restore`).
pub fn restore(
    svc: &Store,
    path: &str,
    to: RestoreTo,
    expected_prev_sha256: Option<&str>,
    dry_run: bool,
) -> Result<Restored> {
    let journal = svc.pipeline().journal();
    let jerr = |e| Failure::io("read journal", journal.path(), e);
    let target = svc.workspaces().resolve(path, true)?;
    let abs = target.abs_path.display().to_string();
    let (sha, journal_id) = match to {
        RestoreTo::JournalId(id) => {
            let row = find_row(journal, &id).map_err(jerr)?.ok_or_else(|| {
                Failure::VersionUnavailable {
                    path: path.into(),
                    version: id.clone(),
                    reason: "no journal row has this journal_id".into(),
                }
            })?;
            if s(&row, "path") != abs {
                return Err(Failure::VersionUnavailable {
                    path: path.into(),
                    version: id,
                    reason: format!("that journal row is a version of {}", s(&row, "path")),
                });
            }
            (s(&row, "sha256"), Some(id))
        }
        RestoreTo::Sha256(h) => {
            // Only a version this path had: its journal rows name it as new or previous.
            let mut known = false;
            scan_back(journal, &abs, |row| {
                known = row.get("path").and_then(Value::as_str) == Some(abs.as_str())
                    && (s(&row, "sha256") == h || s(&row, "prev_sha256") == h);
                !known
            })
            .map_err(jerr)?;
            if !known {
                return Err(Failure::VersionUnavailable {
                    path: path.into(),
                    version: h,
                    reason: "not a journaled version of this path (see history)".into(),
                });
            }
            (h, None)
        }
    };
    let objects = svc.pipeline().objects().cloned();
    let who = Caller {
        caller: svc.caller(),
        tool: "restore".into(),
    };
    let mut diff = None;
    let mut prev = None;
    let (outcome, ()) = svc.pipeline().commit(&target, &who, |existing| {
        intent::check_expected(path, expected_prev_sha256, existing)?;
        prev = existing.map(|e| e.sha256.clone());
        if existing.map(|e| e.sha256.as_str()) == Some(sha.as_str()) {
            return Ok(Decision::Skip(()));
        }
        let content = objects
            .as_ref()
            .map(|o| o.get(&sha))
            .transpose()
            .map_err(|e| Failure::io("read object", path, e))?
            .flatten()
            .ok_or_else(|| Failure::VersionUnavailable {
                path: path.into(),
                version: sha.clone(),
                reason: "its content is no longer stored (removed by gc, or written before \
                    history was kept)"
                    .into(),
            })?;
        if dry_run {
            let old = existing.map(|e| String::from_utf8_lossy(&e.bytes).to_string());
            diff = Some(crate::edit::unified_diff(
                old.as_deref().unwrap_or(""),
                &String::from_utf8_lossy(&content),
                path,
            ));
            return Ok(Decision::Skip(()));
        }
        let mut extra = BTreeMap::new();
        extra.insert("restored_sha256".into(), json!(sha));
        if let Some(id) = &journal_id {
            extra.insert("restored_journal_id".into(), json!(id));
        }
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(content),
                mode_label: "restore".into(),
                create_only: existing.is_none(),
                extra,
                new_file_mode: None,
            },
            (),
        ))
    })?;
    Ok(Restored {
        abs_path: abs,
        to_sha256: sha,
        outcome,
        prev_sha256: prev,
        diff: diff.or_else(|| dry_run.then(String::new)),
    })
}

/// A file of a transaction that restore could not put back.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// Put every file of transaction `tx_id` back to its content before it, as one new
/// transaction. A file changed since the transaction fails the whole restore
/// (stale_precondition); a file the transaction created is skipped (the pipeline does not
/// delete files).
pub fn restore_tx(svc: &Store, tx_id: &str) -> Result<(tx::Committed, Vec<Skipped>)> {
    let journal = svc.pipeline().journal();
    let rows =
        tx_rows(journal, tx_id).map_err(|e| Failure::io("read journal", journal.path(), e))?;
    if rows.is_empty() {
        return Err(Failure::TxNotOpen {
            tx_id: tx_id.into(),
            reason: "no journal rows carry this tx_id: nothing to restore".into(),
        });
    }
    let objects = svc.pipeline().objects().cloned();
    let undo = tx::begin(svc, Some(format!("restore of {tx_id}")), None)?;
    let mut skipped = Vec::new();
    let staged = (|| -> Result<()> {
        for row in &rows {
            let path = s(row, "path");
            let Some(prev) = row.get("prev_sha256").and_then(Value::as_str) else {
                skipped.push(Skipped {
                    path,
                    reason: "created by the transaction; restore does not delete files".into(),
                });
                continue;
            };
            let after = s(row, "sha256");
            tx::stage(svc, &undo.tx_id, &path, "restore", |cur| {
                intent::check_expected(&path, Some(&after), cur.existing.as_ref())?;
                let bytes = objects
                    .as_ref()
                    .map(|o| o.get(prev))
                    .transpose()
                    .map_err(|e| Failure::io("read object", &path, e))?
                    .flatten()
                    .ok_or_else(|| Failure::VersionUnavailable {
                        path: path.clone(),
                        version: prev.to_string(),
                        reason: "its content is no longer stored".into(),
                    })?;
                Ok(NewContent {
                    bytes,
                    mode: "restore".into(),
                    replacements: None,
                })
            })?;
        }
        Ok(())
    })();
    if let Err(e) = staged {
        let _ = tx::rollback(svc, &undo.tx_id);
        return Err(e);
    }
    match tx::commit(svc, &undo.tx_id) {
        Ok(c) => Ok((c, skipped)),
        Err(e) => {
            let _ = tx::rollback(svc, &undo.tx_id);
            Err(e)
        }
    }
}

/// Retention of the object store, from the policy file's `history:` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Retention {
    /// Most bytes the store may hold (beyond the `keep_last` floor).
    pub max_bytes: u64,
    /// Pre-images older than this go (beyond the `keep_last` floor).
    pub max_age: Duration,
    /// Pre-images always kept per path, newest first.
    pub keep_last: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(30 * 86400),
            keep_last: 20,
        }
    }
}

fn parse_bytes(v: &Value) -> std::result::Result<u64, String> {
    if let Some(n) = v.as_u64() {
        return Ok(n);
    }
    let t = v
        .as_str()
        .ok_or("max_bytes must be a number or a size like 500MB")?;
    let t = t.trim().to_ascii_uppercase();
    let (num, mult) = [
        ("GB", 1u64 << 30),
        ("MB", 1 << 20),
        ("KB", 1 << 10),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
        ("B", 1),
    ]
    .iter()
    .find_map(|(suf, m)| t.strip_suffix(suf).map(|n| (n.trim().to_string(), *m)))
    .unwrap_or((t.clone(), 1));
    num.parse::<u64>()
        .map(|n| n.saturating_mul(mult))
        .map_err(|_| format!("max_bytes {t:?} is not a size like 500MB"))
}

fn parse_age(v: &Value) -> std::result::Result<Duration, String> {
    if let Some(n) = v.as_u64() {
        return Ok(Duration::from_secs(n));
    }
    let t = v
        .as_str()
        .ok_or("max_age must be seconds or a duration like 30d")?
        .trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("max_age {t:?} is not a duration like 30d"))?;
    let secs = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        "w" => 7 * 86400,
        u => return Err(format!("max_age unit {u:?} is not one of s, m, h, d, w")),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

impl Retention {
    /// Parse the policy's raw `history:` section (`None`: the defaults).
    pub fn from_policy(section: Option<&Value>) -> std::result::Result<Retention, String> {
        let mut r = Retention::default();
        let Some(section) = section else {
            return Ok(r);
        };
        if section.is_null() {
            return Ok(r);
        }
        let map = section
            .as_object()
            .ok_or("history: must be a mapping of max_bytes, max_age, keep_last")?;
        for (k, v) in map {
            match k.as_str() {
                "max_bytes" => r.max_bytes = parse_bytes(v)?,
                "max_age" => r.max_age = parse_age(v)?,
                "keep_last" => {
                    r.keep_last = v.as_u64().ok_or("keep_last must be a whole number")? as usize
                }
                other => {
                    return Err(format!(
                        "history: unknown key {other:?} (known: max_bytes, max_age, keep_last)"
                    ));
                }
            }
        }
        Ok(r)
    }
}

/// What `gc` did (or would do with `dry_run`).
#[derive(Debug, Default, Clone, Serialize)]
pub struct GcReport {
    pub removed: usize,
    pub removed_bytes: u64,
    pub kept: usize,
    pub kept_bytes: u64,
    pub dry_run: bool,
}

/// Apply `retention` to the object store. Pre-images named by the journal are ranked per
/// path; the newest `keep_last` of each path are kept whatever their age and size.
pub fn gc(
    journal: &Journal,
    objects: &ObjectStore,
    retention: &Retention,
    dry_run: bool,
) -> io::Result<GcReport> {
    let (rows, _, _) = journal.read_from(0)?;
    let mut per_path: HashMap<String, Vec<String>> = HashMap::new();
    for row in &rows {
        if let Some(prev) = row.get("prev_sha256").and_then(Value::as_str) {
            per_path
                .entry(s(row, "path"))
                .or_default()
                .push(prev.to_string());
        }
    }
    let mut protected: HashSet<String> = HashSet::new();
    for shas in per_path.values() {
        let mut kept = HashSet::new();
        for sha in shas.iter().rev() {
            if kept.len() >= retention.keep_last {
                break;
            }
            kept.insert(sha.clone());
        }
        protected.extend(kept);
    }
    let mut all = objects.list()?;
    all.sort_by_key(|o| o.stored_at);
    let now = SystemTime::now();
    let mut total: u64 = all.iter().map(|o| o.bytes).sum();
    let mut report = GcReport {
        dry_run,
        ..GcReport::default()
    };
    for o in &all {
        let old = now
            .duration_since(o.stored_at)
            .map(|age| age > retention.max_age)
            .unwrap_or(false);
        let remove = !protected.contains(&o.sha256) && (old || total > retention.max_bytes);
        if remove {
            if !dry_run {
                objects.remove(&o.sha256)?;
            }
            total -= o.bytes;
            report.removed += 1;
            report.removed_bytes += o.bytes;
        } else {
            report.kept += 1;
            report.kept_bytes += o.bytes;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_parses_sizes_ages_and_refuses_unknown_keys() {
        let r = Retention::from_policy(Some(
            &json!({"max_bytes": "2MB", "max_age": "7d", "keep_last": 3}),
        ))
        .unwrap();
        assert_eq!(r.max_bytes, 2 << 20);
        assert_eq!(r.max_age, Duration::from_secs(7 * 86400));
        assert_eq!(r.keep_last, 3);
        assert!(Retention::from_policy(Some(&json!({"keep_versions": 3}))).is_err());
        assert_eq!(Retention::from_policy(None).unwrap(), Retention::default());
    }
}
