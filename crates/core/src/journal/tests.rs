//! The journal's tests: rows, both appends, the reads.

use super::read::{FIRST_BLOCK, MAX_BLOCK, shared_suffix};
use super::*;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fs;
use std::fs::OpenOptions;
use std::io::Write;

fn row(path: &str, i: u64) -> JournalRow {
    JournalRow {
        journal_id: new_journal_id(),
        ts: now_rfc3339(),
        path: path.into(),
        sha256: "00".into(),
        prev_sha256: None,
        bytes: i,
        mode: "create".into(),
        caller: "test".into(),
        tool: "safe_write".into(),
        extra: BTreeMap::new(),
    }
}

/// Journal ids are distinct and sort in the order they were made, within a thread and
/// across threads (each thread's random bits come from its own seeded generator).
#[test]
fn journal_ids_are_distinct_and_time_ordered() {
    let made: Vec<Vec<String>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..4)
            .map(|_| s.spawn(|| (0..5000).map(|_| new_journal_id()).collect::<Vec<_>>()))
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for ids in &made {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "out of order");
        assert!(ids.iter().all(|id| id.len() == 32));
    }
    let all: std::collections::HashSet<&String> = made.iter().flatten().collect();
    assert_eq!(all.len(), 4 * 5000);
}

/// Bytes appended behind the journal's back (a torn row, another writer's line).
fn append_raw(j: &Journal, bytes: &[u8]) {
    OpenOptions::new()
        .append(true)
        .open(j.path())
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// The line as it was made before [`Line`]: every field cloned into a map of `Value`s.
fn line_through_values(r: &JournalRow) -> String {
    let mut m: BTreeMap<&str, Value> = BTreeMap::new();
    for (k, v) in &r.extra {
        m.insert(k.as_str(), v.clone());
    }
    m.insert("journal_id", Value::from(r.journal_id.clone()));
    m.insert("ts", Value::from(r.ts.clone()));
    m.insert("path", Value::from(r.path.clone()));
    m.insert("sha256", Value::from(r.sha256.clone()));
    m.insert(
        "prev_sha256",
        r.prev_sha256
            .clone()
            .map(Value::from)
            .unwrap_or(Value::Null),
    );
    m.insert("bytes", Value::from(r.bytes));
    m.insert("mode", Value::from(r.mode.clone()));
    m.insert("caller", Value::from(r.caller.clone()));
    m.insert("tool", Value::from(r.tool.clone()));
    let mut line = serde_json::to_string(&m).unwrap();
    line.push('\n');
    line
}

#[test]
fn a_line_is_byte_for_byte_what_a_map_of_values_gives() {
    let awkward = "d\u{e9}j\u{e0} \"q\" \\ \n\t\u{1} \u{7f} \u{2028} \u{1f600} </script>";
    let mut rows = vec![row("a", 1), row(awkward, u64::MAX)];
    let mut r = row("src/x.rs", 0);
    r.prev_sha256 = Some("ab".repeat(32));
    r.mode = awkward.into();
    r.caller = String::new();
    r.extra = BTreeMap::from([
        ("session".to_string(), Value::from(awkward)),
        ("tx_id".to_string(), Value::Null),
        ("replacements".to_string(), Value::from(-3)),
        ("ratio".to_string(), serde_json::json!(0.1)),
        (
            "nested".to_string(),
            serde_json::json!({"z": [1, "two", null], "a": {}}),
        ),
        // a field of `extra` named like a fixed one gives way to the fixed one
        ("path".to_string(), Value::from("not this")),
        ("bytes".to_string(), Value::from("nor this")),
        ("aaa".to_string(), Value::Bool(true)),
        ("zzz".to_string(), Value::from(awkward)),
    ]);
    rows.push(r);
    for r in &rows {
        assert_eq!(r.to_line(), line_through_values(r));
    }
    let parsed: Map<String, Value> = serde_json::from_str(&rows[2].to_line()).unwrap();
    assert_eq!(parsed["path"], "src/x.rs");
    assert_eq!(parsed["bytes"], 0);
}

#[test]
fn rows_have_sorted_keys_and_end_with_newline() {
    let line = row("a", 1).to_line();
    assert!(line.ends_with('\n'));
    let keys: Vec<String> = serde_json::from_str::<Map<String, Value>>(&line)
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let pos = |k: &str| line.find(&format!("\"{k}\"")).unwrap();
    let mut by_position = keys.clone();
    by_position.sort_by_key(|k| pos(k));
    let mut sorted = keys;
    sorted.sort();
    assert_eq!(by_position, sorted);
}

#[test]
fn tail_returns_newest_last_and_honours_filter() {
    let t = tempfile::tempdir().unwrap();
    let j = Journal::new(t.path());
    for i in 0..100 {
        j.append(&row(if i % 2 == 0 { "even" } else { "odd" }, i))
            .unwrap()
            .commit();
    }
    let (rows, _) = j.tail(3, |r| r["path"] == "odd").unwrap();
    let bytes: Vec<u64> = rows.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
    assert_eq!(bytes, vec![95, 97, 99]);
}

#[test]
fn torn_last_line_is_skipped_on_read_and_cut_on_next_append() {
    let t = tempfile::tempdir().unwrap();
    let j = Journal::new(t.path());
    j.append(&row("a", 1)).unwrap().commit();
    append_raw(&j, b"{\"journal_id\":\"tor");
    let (rows, stats) = j.tail(10, |_| true).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(stats.corrupt_lines, 1);
    j.append(&row("b", 2)).unwrap().commit();
    let text = fs::read_to_string(j.path()).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(
        text.lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok())
    );
}

#[test]
fn filtered_tail_finds_rare_rows_across_many_blocks_and_stops_at_n() {
    let t = tempfile::tempdir().unwrap();
    let j = Journal::new(t.path());
    // Enough rows that the scan crosses several blocks (and lines cross block edges).
    let mut lines = String::new();
    for i in 0..20_000u64 {
        let path = if i % 1000 == 7 {
            "/w/rare.txt"
        } else {
            "/w/common.txt"
        };
        lines.push_str(&row(path, i).to_line());
    }
    fs::write(j.path(), lines).unwrap();
    let wanted = json_string_forms("/w/rare.txt");
    let (rows, stats) = j
        .tail_containing(3, &wanted, |r| r["path"] == "/w/rare.txt")
        .unwrap();
    let bytes: Vec<u64> = rows.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
    assert_eq!(bytes, vec![17_007, 18_007, 19_007]);
    assert_eq!(stats.corrupt_lines, 0);
    let (all, _) = j
        .tail_containing(100, &wanted, |r| r["path"] == "/w/rare.txt")
        .unwrap();
    assert_eq!(all.len(), 20);
    // The same answer as the unfiltered read.
    let (slow, _) = j.tail(100, |r| r["path"] == "/w/rare.txt").unwrap();
    assert_eq!(all, slow);
}

#[test]
fn needles_sharing_a_long_suffix_are_searched_by_it_and_others_by_each() {
    let forms = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        shared_suffix(&forms(&["\"src/a.rs\"", "\"/w/src/a.rs\""])),
        Some(&b"src/a.rs\""[..])
    );
    // too short a suffix to filter: each needle is searched for
    assert_eq!(
        shared_suffix(&forms(&["\"caf\u{e9}.rs\"", "\"caf\\u00e9.rs\""])),
        None
    );
    assert_eq!(shared_suffix(&forms(&["\"a\"", "\"b\""])), None);
    // Either way every row of the file is found, and only those are kept.
    let t = tempfile::tempdir().unwrap();
    let j = Journal::new(t.path());
    for (i, p) in ["src/a.rs", "/w/src/a.rs", "x/src/a.rs", "src/b.rs"]
        .into_iter()
        .enumerate()
    {
        j.append(&row(p, i as u64)).unwrap().commit();
    }
    let wanted = ["src/a.rs", "/w/src/a.rs"];
    let needles: Vec<String> = wanted.iter().flat_map(|p| json_string_forms(p)).collect();
    let (rows, _) = j
        .tail_containing(10, &needles, |r| wanted.iter().any(|w| r["path"] == *w))
        .unwrap();
    let bytes: Vec<u64> = rows.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
    assert_eq!(bytes, [0, 1]);
}

#[test]
fn lines_longer_than_a_block_are_read_whole_filtered_or_not() {
    let t = tempfile::tempdir().unwrap();
    let j = Journal::new(t.path());
    let mut big = row("/w/big.txt", 1);
    // longer than the first block and than the largest one: carried across several reads
    big.extra.insert(
        "note".into(),
        Value::from("x".repeat(MAX_BLOCK + FIRST_BLOCK)),
    );
    let mut lines = String::new();
    for i in 0..3000u64 {
        lines.push_str(&row("/w/small.txt", i).to_line());
    }
    lines.push_str(&big.to_line());
    for i in 3000..3100u64 {
        lines.push_str(&row("/w/small.txt", i).to_line());
    }
    fs::write(j.path(), lines).unwrap();
    let wanted = json_string_forms("/w/big.txt");
    let (rows, stats) = j
        .tail_containing(5, &wanted, |r| r["path"] == "/w/big.txt")
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(stats.corrupt_lines, 0);
    assert_eq!(
        rows[0]["note"].as_str().map(str::len),
        Some(MAX_BLOCK + FIRST_BLOCK)
    );
    let (all, stats) = j.tail(200, |_| true).unwrap();
    assert_eq!(stats.corrupt_lines, 0);
    assert_eq!(all.len(), 200);
    assert_eq!(all[99]["path"], "/w/big.txt");
    assert_eq!(all[98]["bytes"], 2999);
    assert_eq!(all[100]["bytes"], 3000);
}

#[test]
fn filtered_tail_finds_rows_written_by_the_python_original() {
    // json.dumps defaults: ", " and ": " separators, non-ASCII escaped as \uXXXX.
    let t = tempfile::tempdir().unwrap();
    let j = Journal::new(t.path());
    let path = "/w/caf\u{e9} \u{1f600}.md";
    j.append(&row(path, 1)).unwrap().commit();
    let python = "{\"bytes\": 2, \"mode\": \"overwrite\", \
        \"path\": \"/w/caf\\u00e9 \\ud83d\\ude00.md\"}\n";
    append_raw(&j, python.as_bytes());
    j.append(&row("/w/other", 3)).unwrap().commit();
    let (rows, _) = j
        .tail_containing(10, &json_string_forms(path), |r| r["path"] == path)
        .unwrap();
    let bytes: Vec<u64> = rows.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
    assert_eq!(bytes, vec![1, 2]);
}

#[test]
fn filtered_tail_counts_a_torn_last_line() {
    let t = tempfile::tempdir().unwrap();
    let j = Journal::new(t.path());
    j.append(&row("a", 1)).unwrap().commit();
    append_raw(&j, b"{\"path\":\"a\",\"tor");
    let (rows, stats) = j
        .tail_containing(10, &json_string_forms("a"), |r| r["path"] == "a")
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(stats.corrupt_lines, 1);
}

#[test]
fn rollback_removes_the_row() {
    let t = tempfile::tempdir().unwrap();
    let j = Journal::new(t.path());
    j.append(&row("a", 1)).unwrap().commit();
    j.append(&row("b", 2)).unwrap().rollback().unwrap();
    let (rows, _) = j.tail(10, |_| true).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["path"], "a");
}

#[test]
fn corrupt_middle_lines_are_counted_not_fatal() {
    let t = tempfile::tempdir().unwrap();
    let j = Journal::new(t.path());
    j.append(&row("a", 1)).unwrap().commit();
    append_raw(&j, b"not json\n");
    j.append(&row("b", 2)).unwrap().commit();
    let (rows, stats) = j.tail(10, |_| true).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(stats.corrupt_lines, 1);
    let (rows, next, stats) = j.read_from(0).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(stats.corrupt_lines, 1);
    assert_eq!(next, fs::metadata(j.path()).unwrap().len());
}
