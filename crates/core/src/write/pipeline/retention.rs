//! Retention of the object store: [`Retention`] parsed from the policy file's `history:`
//! section, and [`gc`], which keeps the newest `keep_last` pre-images of each path and removes
//! the others when older than `max_age`, then oldest first while the store is over `max_bytes`.
//!
//! It lives with the pipeline because the pipeline enforces it as it adds objects
//! (`super::keep`); `gc` and `doctor --fix` run the same pass on request.

use crate::journal::Journal;
use crate::journal::paths::{JournalPaths, row_fields};
use crate::objects::ObjectStore;
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The journal field (and the warning's prefix) saying a row's pre-image was not kept: such
/// rows name no object, so retention has nothing of theirs to keep.
pub const NOT_KEPT_FIELD: &str = "history_not_kept";

/// Retention of the object store, from the policy file's `history:` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Retention {
    /// Most bytes the store may hold (beyond the `keep_last` floor).
    pub max_bytes: u64,
    /// Pre-images older than this go (beyond the `keep_last` floor).
    pub max_age: Duration,
    /// Pre-images always kept per path, newest first (unless the disk needs the room).
    pub keep_last: usize,
    /// Free space history never takes the state's filesystem below.
    pub min_free: MinFree,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(30 * 86400),
            keep_last: 20,
            min_free: MinFree::default(),
        }
    }
}

/// The free-space floor (`history.min_free`): a share of the filesystem (capped at
/// [`MinFree::PERCENT_CAP`]) or a number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinFree {
    /// Hundredths of a percent of the filesystem's size.
    Share(u32),
    Bytes(u64),
}

impl Default for MinFree {
    /// 5% of the filesystem, at most 1 GiB.
    fn default() -> Self {
        MinFree::Share(500)
    }
}

impl MinFree {
    /// The most a share of the filesystem asks for.
    pub const PERCENT_CAP: u64 = 1 << 30;

    /// The floor in bytes on a filesystem of `total` bytes.
    pub fn bytes(self, total: u64) -> u64 {
        match self {
            MinFree::Share(bp) => {
                ((total as u128 * bp as u128 / 10_000) as u64).min(Self::PERCENT_CAP)
            }
            MinFree::Bytes(b) => b,
        }
    }

    fn parse(v: &Value) -> std::result::Result<MinFree, String> {
        if let Some(t) = v.as_str().map(str::trim)
            && let Some(pct) = t.strip_suffix('%')
        {
            let p: f64 = pct
                .trim()
                .parse()
                .map_err(|_| format!("min_free {t:?} is not a share like 5%"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("min_free {t:?} is not between 0% and 100%"));
            }
            return Ok(MinFree::Share((p * 100.0).round() as u32));
        }
        parse_bytes(v)
            .map(MinFree::Bytes)
            .map_err(|e| e.replace("max_bytes", "min_free"))
    }
}

impl std::fmt::Display for MinFree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MinFree::Share(bp) if bp % 100 == 0 => write!(f, "{}% (at most 1 GiB)", bp / 100),
            MinFree::Share(bp) => write!(f, "{}% (at most 1 GiB)", *bp as f64 / 100.0),
            MinFree::Bytes(b) => write!(f, "{b} bytes"),
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

pub(crate) fn parse_age(v: &Value) -> std::result::Result<Duration, String> {
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
            .ok_or("history: must be a mapping of max_bytes, max_age, keep_last, min_free")?;
        for (k, v) in map {
            match k.as_str() {
                "max_bytes" => r.max_bytes = parse_bytes(v)?,
                "max_age" => r.max_age = parse_age(v)?,
                "keep_last" => {
                    r.keep_last = v.as_u64().ok_or("keep_last must be a whole number")? as usize
                }
                "min_free" => r.min_free = MinFree::parse(v)?,
                other => {
                    return Err(format!(
                        "history: unknown key {other:?} (known: max_bytes, max_age, keep_last, \
                         min_free)"
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
    /// When the oldest object kept was stored.
    #[serde(skip)]
    pub oldest_kept: Option<SystemTime>,
}

/// How far a gc pass goes beyond the policy (the automatic pass: [`super::keep`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sweep {
    /// Remove oldest first while the store is over this many bytes (`None`: `max_bytes`).
    pub target_bytes: Option<u64>,
    /// Never remove an object stored more recently than this: a write in another process
    /// may have kept it (or found it already kept) and not yet journaled its row.
    pub spare_younger_than: Duration,
    /// Objects a write of this process is keeping right now.
    pub pinned: HashSet<String>,
    /// Protect this many pre-images per file instead of the policy's `keep_last`.
    pub keep_last: Option<usize>,
}

/// Apply `retention` to the object store. Pre-images named by the journal are ranked per
/// file (its rows in the relative form and the absolute one of earlier versions are one
/// file, see [`JournalPaths`]); the newest `keep_last` of each are kept whatever their age
/// and size.
pub fn gc(
    journal: &Journal,
    paths: &JournalPaths,
    objects: &ObjectStore,
    retention: &Retention,
    dry_run: bool,
) -> io::Result<GcReport> {
    gc_with(
        journal,
        paths,
        objects,
        retention,
        dry_run,
        &Sweep::default(),
    )
}

/// [`gc`], going as far as `sweep` says.
pub(crate) fn gc_with(
    journal: &Journal,
    paths: &JournalPaths,
    objects: &ObjectStore,
    retention: &Retention,
    dry_run: bool,
    sweep: &Sweep,
) -> io::Result<GcReport> {
    let (rows, _, _) = journal.read_from(0)?;
    let mut per_path: HashMap<PathBuf, Vec<String>> = HashMap::new();
    for row in &rows {
        // A row whose pre-image was not kept holds no place among the last N.
        if row.get(NOT_KEPT_FIELD).is_some() {
            continue;
        }
        if let Some(prev) = row.get("prev_sha256").and_then(Value::as_str) {
            let (path, root) = row_fields(row).unwrap_or_default();
            per_path
                .entry(paths.absolute(path, root))
                .or_default()
                .push(prev.to_string());
        }
    }
    let mut protected: HashSet<String> = HashSet::new();
    for shas in per_path.values() {
        let mut kept = HashSet::new();
        for sha in shas.iter().rev() {
            if kept.len() >= sweep.keep_last.unwrap_or(retention.keep_last) {
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
    let target = sweep
        .target_bytes
        .unwrap_or(retention.max_bytes)
        .min(retention.max_bytes);
    let mut kept = Vec::with_capacity(all.len());
    for o in &all {
        let age = now.duration_since(o.stored_at).unwrap_or_default();
        let old = age > retention.max_age;
        let spared = age < sweep.spare_younger_than || sweep.pinned.contains(&o.sha256);
        let remove = !spared && !protected.contains(&o.sha256) && (old || total > target);
        if remove {
            if !dry_run {
                objects.remove(&o.sha256)?;
            }
            total -= o.bytes;
            report.removed += 1;
            report.removed_bytes += o.bytes;
        } else {
            kept.push(o.clone());
            report.kept += 1;
            report.kept_bytes += o.bytes;
            report.oldest_kept = Some(
                report
                    .oldest_kept
                    .map_or(o.stored_at, |t| t.min(o.stored_at)),
            );
        }
    }
    if !dry_run {
        // The listing is fresh: the index of what retention may drop starts from it.
        objects.reindex(&kept);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;
    use crate::journal::{JournalRow, new_journal_id, now_rfc3339};
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::fs::File;

    const HOUR: Duration = Duration::from_secs(3600);
    const DAY: Duration = Duration::from_secs(86400);

    /// A journal and an object store in a fresh state directory.
    fn state() -> (tempfile::TempDir, Journal, ObjectStore) {
        let t = tempfile::tempdir().unwrap();
        let (j, o) = (Journal::new(t.path()), ObjectStore::new(t.path()));
        (t, j, o)
    }

    /// Journal an overwrite of `path` whose pre-image is `prev`, store `prev` as an object
    /// stored `age` ago, and return its hash.
    fn pre_image(j: &Journal, o: &ObjectStore, path: &str, prev: &[u8], age: Duration) -> String {
        let sha = sha256_hex(prev);
        j.append(&JournalRow {
            journal_id: new_journal_id(),
            ts: now_rfc3339(),
            path: path.into(),
            sha256: sha256_hex(format!("after {sha}").as_bytes()),
            prev_sha256: Some(sha.clone()),
            bytes: 1,
            mode: "overwrite".into(),
            caller: "test".into(),
            tool: "test".into(),
            extra: BTreeMap::new(),
        })
        .unwrap();
        o.put(prev, &sha).unwrap();
        File::open(o.path_of(&sha))
            .unwrap()
            .set_modified(SystemTime::now() - age)
            .unwrap();
        sha
    }

    fn w() -> JournalPaths {
        JournalPaths::new("/w".into(), Some("/w".into()), vec!["/w".into()])
    }

    fn stored(o: &ObjectStore, shas: &[String]) -> Vec<bool> {
        shas.iter().map(|s| o.contains(s)).collect()
    }

    #[test]
    fn gc_keeps_the_last_n_pre_images_of_each_path_whatever_their_age() {
        let (_t, j, o) = state();
        let a: Vec<String> = (0..4)
            .map(|i| pre_image(&j, &o, "/w/a", format!("a{i}").as_bytes(), 100 * DAY))
            .collect();
        let b = pre_image(&j, &o, "/w/b", b"b0", 100 * DAY);
        let r = Retention {
            max_bytes: u64::MAX,
            max_age: 30 * DAY,
            keep_last: 2,
            ..Retention::default()
        };
        let report = gc(&j, &w(), &o, &r, false).unwrap();
        assert_eq!(stored(&o, &a), [false, false, true, true]);
        assert!(o.contains(&b), "each path keeps its own last N");
        assert_eq!((report.removed, report.kept), (2, 3));
        assert_eq!((report.removed_bytes, report.kept_bytes), (4, 6));
        assert!(!report.dry_run);
    }

    #[test]
    fn gc_counts_relative_and_old_absolute_rows_of_a_file_as_one_path() {
        let (_t, j, o) = state();
        let a = [
            pre_image(&j, &o, "/w/a", b"a0", 100 * DAY),
            pre_image(&j, &o, "a", b"a1", 100 * DAY),
            pre_image(&j, &o, "/w/a", b"a2", 100 * DAY),
            pre_image(&j, &o, "a", b"a3", 100 * DAY),
        ];
        let r = Retention {
            max_bytes: u64::MAX,
            max_age: 30 * DAY,
            keep_last: 2,
            ..Retention::default()
        };
        gc(&j, &w(), &o, &r, false).unwrap();
        assert_eq!(stored(&o, &a), [false, false, true, true]);
    }

    #[test]
    fn gc_drops_objects_older_than_the_max_age() {
        let (_t, j, o) = state();
        let old = pre_image(&j, &o, "/w/a", b"old", 31 * DAY);
        let young = pre_image(&j, &o, "/w/a", b"young", 29 * DAY);
        let r = Retention {
            max_bytes: u64::MAX,
            max_age: 30 * DAY,
            keep_last: 0,
            ..Retention::default()
        };
        let report = gc(&j, &w(), &o, &r, false).unwrap();
        assert_eq!(stored(&o, &[old, young]), [false, true]);
        assert_eq!((report.removed, report.kept), (1, 1));
    }

    /// `n` pre-images of 10 bytes each of `/w/a`, the first the oldest (an hour apart).
    fn ten_byte_versions(j: &Journal, o: &ObjectStore, n: u32) -> Vec<String> {
        (0..n)
            .map(|i| {
                pre_image(
                    j,
                    o,
                    "/w/a",
                    format!("{i}123456789").as_bytes(),
                    (n - i) * HOUR,
                )
            })
            .collect()
    }

    #[test]
    fn gc_removes_oldest_first_until_within_the_byte_budget() {
        let (_t, j, o) = state();
        let shas = ten_byte_versions(&j, &o, 4);
        let r = Retention {
            max_bytes: 25,
            max_age: 30 * DAY,
            keep_last: 0,
            ..Retention::default()
        };
        let report = gc(&j, &w(), &o, &r, false).unwrap();
        assert_eq!(stored(&o, &shas), [false, false, true, true]);
        assert_eq!(report.kept_bytes, 20);
        assert!(report.kept_bytes <= r.max_bytes);
        assert_eq!(report.removed_bytes, 20);
    }

    #[test]
    fn gc_byte_budget_never_removes_the_last_n() {
        let (_t, j, o) = state();
        let shas = ten_byte_versions(&j, &o, 3);
        let r = Retention {
            max_bytes: 0,
            max_age: 30 * DAY,
            keep_last: 2,
            ..Retention::default()
        };
        gc(&j, &w(), &o, &r, false).unwrap();
        assert_eq!(stored(&o, &shas), [false, true, true]);
    }

    #[test]
    fn gc_dry_run_reports_what_it_would_remove_and_removes_nothing() {
        let (_t, j, o) = state();
        let old = pre_image(&j, &o, "/w/a", b"old", 100 * DAY);
        let r = Retention {
            keep_last: 0,
            ..Retention::default()
        };
        let report = gc(&j, &w(), &o, &r, true).unwrap();
        assert!(report.dry_run);
        assert_eq!((report.removed, report.removed_bytes), (1, 3));
        assert!(o.contains(&old));
    }

    #[test]
    fn retention_accepts_plain_numbers_and_refuses_bad_values() {
        let r = Retention::from_policy(Some(&json!({"max_bytes": 1000, "max_age": 60}))).unwrap();
        assert_eq!(r.max_bytes, 1000);
        assert_eq!(r.max_age, Duration::from_secs(60));
        assert_eq!(r.keep_last, Retention::default().keep_last);
        let r =
            Retention::from_policy(Some(&json!({"max_bytes": "1 g", "max_age": "2w"}))).unwrap();
        assert_eq!(r.max_bytes, 1 << 30);
        assert_eq!(r.max_age, 14 * DAY);
        assert_eq!(
            Retention::from_policy(Some(&Value::Null)).unwrap(),
            Retention::default()
        );
        for bad in [
            json!({"max_bytes": "lots"}),
            json!({"max_age": "3y"}),
            json!({"max_age": true}),
            json!({"keep_last": -1}),
            json!(["max_bytes"]),
        ] {
            assert!(Retention::from_policy(Some(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn min_free_is_a_share_capped_at_a_gib_or_a_size() {
        let r = Retention::from_policy(None).unwrap();
        assert_eq!(r.min_free, MinFree::Share(500));
        assert_eq!(r.min_free.bytes(64 * 1024), 3276, "5% of 64 KiB");
        assert_eq!(r.min_free.bytes(500 << 30), 1 << 30, "at most 1 GiB");
        let r = Retention::from_policy(Some(&json!({"min_free": "2.5%"}))).unwrap();
        assert_eq!(r.min_free.bytes(1000), 25);
        let r = Retention::from_policy(Some(&json!({"min_free": "12k"}))).unwrap();
        assert_eq!(r.min_free, MinFree::Bytes(12 * 1024));
        assert_eq!(
            r.min_free.bytes(u64::MAX),
            12 * 1024,
            "a size is not capped"
        );
        let r = Retention::from_policy(Some(&json!({"min_free": 0}))).unwrap();
        assert_eq!(r.min_free.bytes(1 << 40), 0);
        for bad in [
            json!({"min_free": "150%"}),
            json!({"min_free": "lots"}),
            json!({"min_free": "x%"}),
        ] {
            let e = Retention::from_policy(Some(&bad)).unwrap_err();
            assert!(e.contains("min_free"), "{bad}: {e}");
        }
        assert_eq!(MinFree::default().to_string(), "5% (at most 1 GiB)");
    }

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
