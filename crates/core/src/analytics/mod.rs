//! Journal analytics (the paper's section 3.7 extension): write counts, bytes, modes, callers,
//! hot paths, chunk sessions, velocity and period, computed in one streaming pass over
//! `.resilient_write/journal.jsonl`.
//!
//! Guarantees: the journal is read once, front to back, through a fixed-size buffer; memory
//! is proportional to the number of distinct paths, callers, sessions and minutes, not to the
//! journal's length. A corrupt line (not a JSON object, or torn) is skipped and counted, never
//! fatal. Rows are parsed into a borrowed struct that ignores fields it does not need, which
//! keeps a million-row journal well under two seconds (see `examples/journal_bench.rs`).
//!
//! The result has the original's fields and shapes (`total_writes`, `unique_paths`,
//! `total_bytes_written`, `by_mode`, `by_caller`, `timeline` (last 50), `hot_paths` (top 5),
//! `sessions`, `write_velocity`, `period`) plus `corrupt_lines`. Paths are workspace-relative
//! as the journal records them; with [`Query::paths`], a row of an earlier version (an
//! absolute path beneath a root) counts as, and is shown as, its relative form, so one file
//! is one path whichever version wrote its rows. A chunk session's `chunk_writes` counts the
//! rows of its chunk files (`.resilient_write/chunks/<session>/part-NNN.txt`), not those of
//! its manifest.
//!
//! [`query`] runs the analysis against a [`crate::journal::Journal`], as `analytics` (tool and
//! command) asks for it.

mod agents;
pub mod query;

pub use agents::AgentSessionStats;

use crate::journal::paths::JournalPaths;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{self, BufRead, BufReader, Read};

/// How many of the newest rows `timeline` keeps.
pub const TIMELINE_LIMIT: usize = 50;
/// How many paths `hot_paths` lists.
pub const HOT_PATHS: usize = 5;

/// One row of `timeline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineEntry {
    pub ts: String,
    pub path: String,
    /// The workspace root `path` is relative to, when not the home root (several roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    pub bytes: u64,
    pub mode: String,
}

/// One of the most-written paths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HotPath {
    pub path: String,
    /// The workspace root `path` is relative to, when not the home root (several roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    pub write_count: u64,
    pub total_bytes: u64,
    pub last_write: String,
}

/// A chunk session seen in the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionStats {
    pub chunk_writes: u64,
    pub composes: u64,
    pub first_write: String,
    pub last_write: String,
    pub duration_seconds: f64,
}

/// Writes over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WriteVelocity {
    pub writes_per_minute: f64,
    pub avg_bytes_per_write: f64,
    /// The minute (`YYYY-MM-DDTHH:MMZ`) with the most writes; the earliest on a tie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_minute: Option<String>,
}

/// The span the analysed rows cover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Period {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_entry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_entry: Option<String>,
    pub duration_seconds: f64,
}

/// The analysis (the `analytics` tool's fields besides `ok`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Analytics {
    pub total_writes: u64,
    pub unique_paths: u64,
    pub total_bytes_written: u64,
    pub by_mode: BTreeMap<String, u64>,
    pub by_caller: BTreeMap<String, u64>,
    /// The newest rows (at most 50), oldest first.
    pub timeline: Vec<TimelineEntry>,
    /// The most-written paths (at most 5), most writes first, then by path.
    pub hot_paths: Vec<HotPath>,
    /// Chunk sessions by name.
    pub sessions: BTreeMap<String, SessionStats>,
    /// Agent sessions (an agent's conversation, as its hooks journal it) by id: their native
    /// edits, shell-command changes and attributed MCP writes.
    #[serde(default)]
    pub agent_sessions: BTreeMap<String, AgentSessionStats>,
    pub write_velocity: WriteVelocity,
    pub period: Period,
    /// Lines skipped because they are not journal rows (torn or corrupt).
    pub corrupt_lines: u64,
}

/// Filters.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Only rows at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// Only this chunk session in `sessions` (other counters see every row).
    pub session_filter: Option<String>,
    /// How row paths map to files: rows of one file written in the relative and the old
    /// absolute form count as one path. `None`: paths are taken as written.
    pub paths: Option<JournalPaths>,
    /// The agent session of each MCP write its hooks attributed (`journal_id` → session,
    /// caller), from [`crate::agent_session`].
    pub attributed: HashMap<String, (String, String)>,
}

#[derive(Deserialize)]
struct Row<'a> {
    #[serde(borrow, default)]
    ts: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    root: Option<Cow<'a, str>>,
    #[serde(default)]
    bytes: Option<serde_json::Number>,
    #[serde(borrow, default)]
    mode: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    caller: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    session: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    agent_session: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    journal_id: Option<Cow<'a, str>>,
}

#[derive(Default)]
struct PathStat {
    writes: u64,
    bytes: u64,
    last: String,
}

struct SessionAcc {
    chunk_writes: u64,
    composes: u64,
    first: String,
    last: String,
}

fn parse_ts(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
        .or_else(|| {
            // The original wrote `...Z`-less naive UTC in places; accept it.
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
                .ok()
                .map(|n| n.and_utc())
        })
}

/// The chunk session a journal path belongs to: `.../.resilient_write/chunks/<s>/part-N.txt`.
fn chunk_session(path: &str) -> Option<&str> {
    let at = path.rfind(".resilient_write/chunks/")?;
    if at > 0 && !path[..at].ends_with('/') {
        return None;
    }
    let rest = &path[at + ".resilient_write/chunks/".len()..];
    let (session, file) = rest.split_once('/')?;
    let part = file.strip_prefix("part-")?.strip_suffix(".txt")?;
    (!session.is_empty() && !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        .then_some(session)
}

/// Whether a row at `ts` is at or after `since`. Our rows and the original's are UTC with a
/// `Z`; for those, whole seconds compare as text and only a tie needs a real parse.
fn at_or_after(ts: &str, since: &DateTime<Utc>, since_secs: &str) -> bool {
    let b = ts.as_bytes();
    if b.len() >= 20 && b[10] == b'T' && ts.ends_with('Z') && ts.is_char_boundary(19) {
        match ts[..19].cmp(since_secs) {
            std::cmp::Ordering::Less => return false,
            std::cmp::Ordering::Greater => return true,
            std::cmp::Ordering::Equal => {}
        }
    }
    parse_ts(ts).is_some_and(|t| t >= *since)
}

/// The fast path for the rows the pipeline writes: a flat JSON object whose values are
/// strings without escapes, numbers, booleans or null. Checks the structure strictly (and
/// UTF-8, and control characters in strings) and borrows the fields analytics needs; anything
/// else (nesting, escapes, malformed text) returns `None` and goes to serde_json, which decides
/// between a row and a corrupt line. About five times faster than the general parser.
fn scan_flat(line: &[u8]) -> Option<Row<'_>> {
    let text = std::str::from_utf8(line).ok()?;
    let b = text.as_bytes();
    let mut row = Row {
        ts: None,
        path: None,
        root: None,
        bytes: None,
        mode: None,
        caller: None,
        session: None,
        agent_session: None,
        tool: None,
        journal_id: None,
    };
    let ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\r') {
            *i += 1;
        }
    };
    // A string starting at b[i] == '"': its contents (no escapes) and the index after it.
    let string = |i: usize| -> Option<(&str, usize)> {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let rel = b[i + 1..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        let end = i + 1 + rel;
        (b[end] == b'"').then(|| (&text[i + 1..end], end + 1))
    };
    let mut i = 0;
    ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    ws(&mut i);
    if b.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            ws(&mut i);
            let (key, next) = string(i)?;
            i = next;
            ws(&mut i);
            if b.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
            ws(&mut i);
            match b.get(i)? {
                b'"' => {
                    let (v, next) = string(i)?;
                    i = next;
                    let v = Some(Cow::Borrowed(v));
                    match key {
                        "ts" => row.ts = v,
                        "path" => row.path = v,
                        "root" => row.root = v,
                        "mode" => row.mode = v,
                        "caller" => row.caller = v,
                        "session" => row.session = v,
                        "agent_session" => row.agent_session = v,
                        "tool" => row.tool = v,
                        "journal_id" => row.journal_id = v,
                        _ => {}
                    }
                }
                b'-' | b'0'..=b'9' => {
                    let start = i;
                    while i < b.len()
                        && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                    {
                        i += 1;
                    }
                    let num = &text[start..i];
                    if key == "bytes" {
                        row.bytes = Some(serde_json::Number::from(num.parse::<u64>().ok()?));
                    } else {
                        num.parse::<f64>().ok()?;
                    }
                }
                _ => {
                    let rest = &text[i..];
                    let lit = ["null", "true", "false"]
                        .into_iter()
                        .find(|l| rest.starts_with(l))?;
                    i += lit.len();
                }
            }
            ws(&mut i);
            match b.get(i)? {
                b',' => i += 1,
                b'}' => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    ws(&mut i);
    (i == b.len()).then_some(row)
}

/// Analyse a journal stream in one pass.
pub fn analyse(reader: impl Read, q: &Query) -> io::Result<Analytics> {
    let mut reader = BufReader::with_capacity(1 << 20, reader);
    let since_secs = q
        .since
        .map(|s| s.format("%Y-%m-%dT%H:%M:%S").to_string())
        .unwrap_or_default();
    let mut total_writes = 0u64;
    let mut total_bytes = 0u64;
    let mut corrupt = 0u64;
    let mut by_mode: HashMap<String, u64> = HashMap::new();
    let mut by_caller: HashMap<String, u64> = HashMap::new();
    let mut paths: HashMap<String, PathStat> = HashMap::new();
    let mut timeline: VecDeque<Vec<u8>> = VecDeque::with_capacity(TIMELINE_LIMIT + 1);
    let mut sessions: HashMap<String, SessionAcc> = HashMap::new();
    let mut agents = agents::AgentAcc::default();
    let mut minutes: HashMap<String, u64> = HashMap::new();
    let mut first_ts: Option<String> = None;
    let mut last_ts: Option<String> = None;
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            // A torn last line: a crash mid-append (repaired at the next start).
            corrupt += 1;
            break;
        }
        let text = &line[..line.len() - 1];
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let row = match scan_flat(text) {
            Some(r) => r,
            None => match serde_json::from_slice::<Row>(text) {
                Ok(r) => r,
                Err(_) => {
                    corrupt += 1;
                    continue;
                }
            },
        };
        let ts = row.ts.as_deref().unwrap_or("");
        if let Some(since) = &q.since
            && !at_or_after(ts, since, &since_secs)
        {
            continue;
        }
        let (path, root) = shown(q, &row);
        // One key per file: the shown path, and its root when it is not the home root.
        let key: Cow<str> = match &root {
            None => Cow::Borrowed(path.as_ref()),
            Some(r) => Cow::Owned(format!("{r}\0{path}")),
        };
        let bytes = row.bytes.as_ref().and_then(|b| b.as_u64()).unwrap_or(0);
        let mode = row.mode.as_deref().unwrap_or("unknown");
        let caller = row.caller.as_deref().unwrap_or("unknown");
        total_writes += 1;
        total_bytes += bytes;
        bump(&mut by_mode, mode);
        bump(&mut by_caller, caller);
        agents.add(q, &row, &key, ts);
        let stat = match paths.get_mut(key.as_ref()) {
            Some(s) => s,
            None => paths.entry(key.into_owned()).or_default(),
        };
        stat.writes += 1;
        stat.bytes += bytes;
        stat.last.clear();
        stat.last.push_str(ts);
        // The newest rows' raw text, in reused buffers: parsed again only at the end.
        let mut slot = if timeline.len() == TIMELINE_LIMIT {
            timeline.pop_front().unwrap_or_default()
        } else {
            Vec::new()
        };
        slot.clear();
        slot.extend_from_slice(text);
        timeline.push_back(slot);
        if first_ts.is_none() {
            first_ts = Some(ts.to_string());
        }
        match &mut last_ts {
            Some(l) => {
                l.clear();
                l.push_str(ts);
            }
            None => last_ts = Some(ts.to_string()),
        }
        if ts.len() >= 16 && ts.is_char_boundary(16) {
            bump(&mut minutes, &ts[..16]);
        }
        // Chunk sessions: a chunk file's row is a chunk write (ours carry `session` too, the
        // original's only the path); a compose row names its session. Other rows with a
        // session (the manifest's) are neither.
        let (session, is_compose) = match (row.session.as_deref(), chunk_session(&path)) {
            (_, Some(s)) => (Some(s), false),
            (Some(s), None) if mode == "compose" => (Some(s), true),
            _ => (None, false),
        };
        if let Some(s) = session
            && q.session_filter.as_deref().is_none_or(|f| f == s)
        {
            let acc = match sessions.get_mut(s) {
                Some(a) => a,
                None => sessions.entry(s.to_string()).or_insert(SessionAcc {
                    chunk_writes: 0,
                    composes: 0,
                    first: ts.to_string(),
                    last: ts.to_string(),
                }),
            };
            if is_compose {
                acc.composes += 1;
            } else {
                acc.chunk_writes += 1;
            }
            acc.last.clear();
            acc.last.push_str(ts);
        }
    }
    let seconds_between = |a: &str, b: &str| match (parse_ts(a), parse_ts(b)) {
        (Some(a), Some(b)) => (b - a).num_microseconds().unwrap_or(0) as f64 / 1e6,
        _ => 0.0,
    };
    let span = match (&first_ts, &last_ts) {
        (Some(f), Some(l)) => seconds_between(f, l),
        _ => 0.0,
    };
    let mut hot: Vec<(&String, &PathStat)> = paths.iter().collect();
    hot.sort_by(|a, b| b.1.writes.cmp(&a.1.writes).then(a.0.cmp(b.0)));
    let hot_paths = hot
        .into_iter()
        .take(HOT_PATHS)
        .map(|(k, s)| {
            let (root, path) = match k.split_once('\0') {
                Some((r, p)) => (Some(r.to_string()), p.to_string()),
                None => (None, k.clone()),
            };
            HotPath {
                path,
                root,
                write_count: s.writes,
                total_bytes: s.bytes,
                last_write: s.last.clone(),
            }
        })
        .collect();
    let peak_minute = minutes
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(m, _)| format!("{m}Z"));
    Ok(Analytics {
        total_writes,
        unique_paths: paths.len() as u64,
        total_bytes_written: total_bytes,
        by_mode: by_mode.into_iter().collect(),
        by_caller: by_caller.into_iter().collect(),
        timeline: timeline
            .iter()
            .filter_map(|t| scan_flat(t).or_else(|| serde_json::from_slice::<Row>(t).ok()))
            .map(|r| {
                let (path, root) = shown(q, &r);
                TimelineEntry {
                    ts: r.ts.as_deref().unwrap_or("").to_string(),
                    path: path.into_owned(),
                    root: root.map(Cow::into_owned),
                    bytes: r.bytes.as_ref().and_then(|b| b.as_u64()).unwrap_or(0),
                    mode: r.mode.as_deref().unwrap_or("unknown").to_string(),
                }
            })
            .collect(),
        hot_paths,
        sessions: sessions
            .into_iter()
            .map(|(k, a)| {
                let d = seconds_between(&a.first, &a.last);
                (
                    k,
                    SessionStats {
                        chunk_writes: a.chunk_writes,
                        composes: a.composes,
                        first_write: a.first,
                        last_write: a.last,
                        duration_seconds: d,
                    },
                )
            })
            .collect(),
        agent_sessions: agents.finish(),
        write_velocity: WriteVelocity {
            writes_per_minute: if span > 0.0 {
                total_writes as f64 / (span / 60.0)
            } else {
                0.0
            },
            avg_bytes_per_write: if total_writes > 0 {
                total_bytes as f64 / total_writes as f64
            } else {
                0.0
            },
            peak_minute,
        },
        period: Period {
            first_entry: first_ts,
            last_entry: last_ts,
            duration_seconds: span,
        },
        corrupt_lines: corrupt,
    })
}

/// A row's path as the result shows it (see [`Query::paths`]), and its root when that is
/// not the home root.
fn shown<'r>(q: &Query, row: &'r Row<'_>) -> (Cow<'r, str>, Option<Cow<'r, str>>) {
    let path = row.path.as_deref().unwrap_or("");
    match &q.paths {
        Some(p) => p.shown(path, row.root.as_deref()),
        None => (Cow::Borrowed(path), row.root.as_deref().map(Cow::Borrowed)),
    }
}

fn bump(m: &mut HashMap<String, u64>, k: &str) {
    match m.get_mut(k) {
        Some(v) => *v += 1,
        None => {
            m.insert(k.to_string(), 1);
        }
    }
}

/// Parse a `since` argument: RFC 3339 (a missing offset means UTC) or a date.
pub fn parse_since(s: &str) -> Option<DateTime<Utc>> {
    parse_ts(s).or_else(|| {
        chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|n| n.and_utc())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ts: &str, path: &str, mode: &str, bytes: u64) -> String {
        format!(
            "{{\"bytes\":{bytes},\"caller\":\"c\",\"mode\":\"{mode}\",\"path\":\"{path}\",\"ts\":\"{ts}\"}}\n"
        )
    }

    #[test]
    fn counts_sessions_and_skips_corrupt_lines() {
        let mut j = String::new();
        j += &row("2026-01-01T00:00:00Z", "/w/a", "create", 10);
        j += "garbage\n";
        j += &row(
            "2026-01-01T00:01:00.5Z",
            "/w/.resilient_write/chunks/s1/part-001.txt",
            "create",
            5,
        );
        j += &row("2026-01-01T00:02:00Z", "/w/a", "overwrite", 20);
        j += "{\"torn";
        let a = analyse(j.as_bytes(), &Query::default()).unwrap();
        assert_eq!(a.total_writes, 3);
        assert_eq!(a.corrupt_lines, 2);
        assert_eq!(a.unique_paths, 2);
        assert_eq!(a.total_bytes_written, 35);
        assert_eq!(a.hot_paths[0].path, "/w/a");
        assert_eq!(a.sessions["s1"].chunk_writes, 1);
        assert_eq!(a.period.duration_seconds, 120.0);
        assert_eq!(a.write_velocity.writes_per_minute, 1.5);
    }

    #[test]
    fn chunk_writes_count_chunk_files_not_the_manifest() {
        // As chunk_write journals three chunks of a new session: the first also writes the
        // manifest (a row with the session but the manifest's path), then the compose.
        let with_session = |path: &str, mode: &str| {
            format!(
                "{{\"bytes\":1,\"mode\":\"{mode}\",\"path\":\"{path}\",\"session\":\"s\",\"ts\":\"2026-01-01T00:00:00Z\"}}\n"
            )
        };
        let j = [
            with_session(".resilient_write/chunks/s/part-001.txt", "create"),
            with_session(".resilient_write/chunks/s/manifest.json", "manifest"),
            with_session(".resilient_write/chunks/s/part-002.txt", "create"),
            with_session(".resilient_write/chunks/s/part-003.txt", "create"),
            with_session("out.txt", "compose"),
        ]
        .concat();
        let a = analyse(j.as_bytes(), &Query::default()).unwrap();
        assert_eq!(a.sessions["s"].chunk_writes, 3);
        assert_eq!(a.sessions["s"].composes, 1);
    }

    #[test]
    fn old_absolute_and_new_relative_rows_of_a_file_are_one_path() {
        let paths = JournalPaths::new(
            "/w".into(),
            Some("/w".into()),
            vec!["/w".into(), "/x".into()],
        );
        let mut j = String::new();
        j += &row("2026-01-01T00:00:00Z", "/w/src/a.rs", "create", 1);
        j += &row("2026-01-01T00:00:01Z", "src/a.rs", "overwrite", 2);
        j += "{\"bytes\":4,\"mode\":\"overwrite\",\"path\":\"src/a.rs\",\"root\":\"/w\",\"ts\":\"2026-01-01T00:00:02Z\"}\n";
        j += &row(
            "2026-01-01T00:00:03Z",
            "/w/.resilient_write/chunks/s/part-001.txt",
            "create",
            8,
        );
        j += &row("2026-01-01T00:00:04Z", "/x/src/a.rs", "create", 16);
        j += &row("2026-01-01T00:00:05Z", "/elsewhere/b", "create", 32);
        let q = Query {
            paths: Some(paths),
            ..Query::default()
        };
        let a = analyse(j.as_bytes(), &q).unwrap();
        assert_eq!(a.unique_paths, 4, "{:?}", a.hot_paths);
        let hot = &a.hot_paths[0];
        assert_eq!((hot.path.as_str(), hot.root.as_deref()), ("src/a.rs", None));
        assert_eq!((hot.write_count, hot.total_bytes), (3, 7));
        let shown: Vec<(&str, Option<&str>)> = a
            .timeline
            .iter()
            .map(|t| (t.path.as_str(), t.root.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [
                ("src/a.rs", None),
                ("src/a.rs", None),
                ("src/a.rs", None),
                (".resilient_write/chunks/s/part-001.txt", None),
                ("src/a.rs", Some("/x")),
                ("/elsewhere/b", None),
            ]
        );
        assert_eq!(a.sessions["s"].chunk_writes, 1);
        // Without the mapping, paths are taken as written.
        assert_eq!(
            analyse(j.as_bytes(), &Query::default())
                .unwrap()
                .unique_paths,
            6
        );
    }

    #[test]
    fn since_compares_sub_second_timestamps_correctly() {
        let j = row("2026-01-01T00:00:00.9Z", "a", "create", 1)
            + &row("2026-01-01T00:00:00Z", "b", "create", 1);
        let q = Query {
            since: parse_since("2026-01-01T00:00:00.5Z"),
            ..Query::default()
        };
        let a = analyse(j.as_bytes(), &q).unwrap();
        assert_eq!(a.total_writes, 1);
        assert_eq!(a.timeline[0].path, "a");
    }

    #[test]
    fn fast_path_and_general_parser_agree_and_malformed_rows_are_corrupt() {
        let rows = [
            r#"{"bytes":3,"caller":"c","mode":"create","path":"/w/a","ts":"2026-01-01T00:00:00Z"}"#,
            r#"{"bytes":3,"caller":"c","mode":"create","path":"/w/\u0061","ts":"2026-01-01T00:00:00Z"}"#,
            r#"{"bytes":3,"extra":{"n":[1]},"mode":"create","path":"/w/a","ts":"2026-01-01T00:00:00Z"}"#,
        ];
        let j = rows.join("\n") + "\n";
        let a = analyse(j.as_bytes(), &Query::default()).unwrap();
        assert_eq!(a.total_writes, 3);
        assert_eq!(
            a.unique_paths, 1,
            "an escaped path decodes to the same path"
        );
        assert!(scan_flat(rows[0].as_bytes()).is_some());
        assert!(scan_flat(rows[1].as_bytes()).is_none());
        for bad in [
            r#"{"ts":"a" "path":"b"}"#,
            r#"{"ts":"a",}"#,
            r#"{"ts":"a"} x"#,
            "{\"ts\":\"\u{1}\"}",
        ] {
            assert!(scan_flat(bad.as_bytes()).is_none(), "{bad}");
        }
        let a = analyse(r#"{"ts":"a",}"#.as_bytes(), &Query::default()).unwrap();
        assert_eq!(a.corrupt_lines, 1);
    }
}
