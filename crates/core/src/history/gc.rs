//! Retention of the object store: [`Retention`] parsed from the policy file's `history:`
//! section, and [`gc`], which keeps the newest `keep_last` pre-images of each path and removes
//! the others when older than `max_age`, then oldest first while the store is over `max_bytes`.

use super::s;
use crate::journal::Journal;
use crate::objects::ObjectStore;
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io;
use std::time::{Duration, SystemTime};

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
    use serde_json::json;

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
