//! Journal read paths on a journal of one million rows: `analytics` (one streaming pass,
//! target under 2 s) and `journal_tail` (reads from the end, target under 50 ms), also
//! filtered by a rare path (raw substring prefilter; the full parse is shown beside it).
//!
//! Run with `cargo run --release --example journal_bench [ROWS]`. Builds the journal in a
//! temporary directory with the same row writer the pipeline uses (realistic ids, hashes,
//! workspace-relative paths, chunk sessions, and the first quarter of the rows in the absolute
//! form earlier versions wrote, which the reads map back to the relative one), then reports the best of a few runs of each read and its ratio to
//! the target, plus the raw read throughput of the file as a floor for the analysis.

use resilient_write_core::analytics::{Query, analyse, parse_since};
use resilient_write_core::hash::sha256_hex;
use resilient_write_core::journal::paths::JournalPaths;
use resilient_write_core::journal::tail::{PathFilter, TailQuery, tail};
use resilient_write_core::journal::{Journal, JournalRow};
use std::collections::BTreeMap;
use std::io::{BufWriter, Read, Write};
use std::time::Instant;

/// The workspace root the generated rows are relative to.
const ROOT: &str = "/home/dev/project";

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(v);
    }
    (best, last.expect("at least one run"))
}

fn main() {
    let rows: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join(".resilient_write");
    std::fs::create_dir_all(&state).expect("state dir");
    let journal = Journal::new(&state);

    let t = Instant::now();
    {
        let file = std::fs::File::create(journal.path()).expect("journal");
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let base = chrono::DateTime::parse_from_rfc3339("2026-04-12T08:00:00Z")
            .expect("base time")
            .with_timezone(&chrono::Utc);
        let modes = ["create", "overwrite", "append", "replace", "compose"];
        let callers = ["claude-code", "codex", "cursor"];
        let mut prev = sha256_hex(b"seed");
        for i in 0..rows {
            let sha = sha256_hex(&(i as u64).to_le_bytes());
            let chunk = i % 10 == 0;
            let rel = if chunk {
                format!(
                    ".resilient_write/chunks/s{}/part-{:03}.txt",
                    i % 37,
                    i % 1000
                )
            } else {
                format!("src/module_{}/file_{}.rs", i % 50, i % 997)
            };
            let path = if i < rows / 4 {
                format!("{ROOT}/{rel}")
            } else {
                rel
            };
            let mut extra = BTreeMap::new();
            if chunk {
                extra.insert("session".into(), format!("s{}", i % 37).into());
            }
            let ts = base + chrono::Duration::milliseconds(i as i64 * 37);
            let row = JournalRow {
                journal_id: format!("{:032x}", i as u128 * 0x9e37_79b9_7f4a_7c15),
                ts: ts.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                path,
                sha256: sha.clone(),
                prev_sha256: (i % 3 != 0).then(|| prev.clone()),
                bytes: (i as u64 * 7919) % 200_000,
                mode: modes[i % modes.len()].into(),
                caller: callers[i % callers.len()].into(),
                tool: "safe_write".into(),
                extra,
            };
            w.write_all(row.to_line().as_bytes()).expect("write row");
            prev = sha;
        }
        w.flush().expect("flush");
    }
    let size = std::fs::metadata(journal.path()).expect("stat").len();
    println!(
        "journal: {rows} rows, {:.1} MB, generated in {:.2} s",
        size as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    let (read_s, _) = best_of(3, || {
        let mut f = std::fs::File::open(journal.path()).expect("open");
        let mut buf = vec![0u8; 1 << 20];
        let mut n = 0usize;
        loop {
            let k = f.read(&mut buf).expect("read");
            if k == 0 {
                break n;
            }
            n += k;
        }
    });
    println!(
        "raw read (floor):          {:>8.1} ms  {:>7.0} MB/s",
        read_s * 1e3,
        size as f64 / 1e6 / read_s
    );

    let paths = JournalPaths::new(ROOT.into(), Some(ROOT.into()), vec![ROOT.into()]);
    let all = Query {
        paths: Some(paths.clone()),
        ..Query::default()
    };
    let (an_s, a) = best_of(3, || {
        let f = std::fs::File::open(journal.path()).expect("open");
        analyse(f, &all).expect("analyse")
    });
    assert_eq!(a.total_writes as usize, rows);
    println!(
        "analytics (all rows):      {:>8.1} ms  {:>7.0} MB/s  {:.2}x the raw read; target 2000 ms: {:.2} of budget",
        an_s * 1e3,
        size as f64 / 1e6 / an_s,
        an_s / read_s,
        an_s / 2.0
    );
    let q = Query {
        since: parse_since("2026-04-12T16:00:00Z"),
        session_filter: Some("s3".into()),
        paths: Some(paths.clone()),
        attributed: Default::default(),
    };
    let (since_s, b) = best_of(3, || {
        let f = std::fs::File::open(journal.path()).expect("open");
        analyse(f, &q).expect("analyse")
    });
    println!(
        "analytics (since, filter): {:>8.1} ms  ({} rows matched)",
        since_s * 1e3,
        b.total_writes
    );

    let (tail_s, (t20, _)) = best_of(5, || journal.tail(20, |_| true).expect("tail"));
    assert_eq!(t20.len(), 20);
    println!(
        "journal_tail n=20:         {:>8.3} ms  target 50 ms: {:.3} of budget",
        tail_s * 1e3,
        tail_s / 0.05
    );
    // A rare path (20 rows in a million): the tool parses only the lines that contain the
    // path's JSON form (relative, absolute or as given); the full parse of every line is the
    // baseline, in the same run.
    let wanted = std::path::Path::new(ROOT).join("src/module_3/file_3.rs");
    let by_path = TailQuery {
        n: 20,
        path: Some(PathFilter {
            raw: "src/module_3/file_3.rs".into(),
            abs: wanted.clone(),
        }),
        mode: None,
        paths: paths.clone(),
    };
    let (ftail_s, tf) = best_of(5, || tail(&journal, &by_path).expect("tail").entries);
    let keep = |r: &serde_json::Map<String, serde_json::Value>| {
        let root = r.get("root").and_then(|v| v.as_str());
        r.get("path")
            .and_then(|p| p.as_str())
            .is_some_and(|p| paths.names(p, root, &wanted))
    };
    let (full_s, (mut tfull, _)) = best_of(1, || journal.tail(20, keep).expect("tail"));
    for r in &mut tfull {
        paths.relativize_row(r);
    }
    assert_eq!(tf, tfull);
    println!(
        "journal_tail n=20 by path: {:>8.3} ms  ({} rows; target 50 ms: {:.3} of budget; \
         {:.2}x the raw read)",
        ftail_s * 1e3,
        tf.len(),
        ftail_s / 0.05,
        ftail_s / read_s
    );
    println!(
        "  same, parsing every line: {:>8.1} ms  (prefilter {:.0}x faster)",
        full_s * 1e3,
        full_s / ftail_s
    );
}
