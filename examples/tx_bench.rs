//! Transactions and history, measured in one run:
//! - a 100-file transaction of 10 KB files (tx_begin, 100 tx_write, tx_commit) against 100
//!   separate safe_write calls of the same files (ratio; the commit batches the directory
//!   fsyncs and the journal append);
//! - `history` of a path with 10,000 journaled versions in a 20,000-row journal (ms).
//!
//! Calls go through `Service::call` (the dispatch every front end uses), without a transport.
//! Run: `cargo run --release --example tx_bench` (add a directory argument to measure on a
//! particular filesystem; the default is a temp dir).

use resilient_write::dispatch::{Config, Service};
use resilient_write_core::journal::{JournalRow, new_journal_id, now_rfc3339};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

fn service(root: &std::path::Path) -> std::sync::Arc<Service> {
    let mut c = Config::new(root.to_path_buf());
    c.store.workspaces = vec![root.to_path_buf()];
    c.store.sweep_on_start = false;
    Service::start(c)
}

fn main() {
    let base = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let t = tempfile::tempdir_in(base).expect("tempdir");
    let root = t.path().canonicalize().expect("canonical");
    let tx_service = service(&root);
    let content: String = "0123456789abcdef\n".repeat(10 * 1024 / 17);
    let rounds = 5;

    let mut separate = Vec::new();
    let mut tx = Vec::new();
    for round in 0..rounds {
        let t0 = Instant::now();
        for i in 0..100 {
            tx_service.call(
                "safe_write",
                json!({"path": format!("sep{round}/f{i}.txt"), "content": content, "mode": "overwrite"}),
            )
            .expect("safe_write");
        }
        separate.push(t0.elapsed().as_secs_f64() * 1e3);

        let t0 = Instant::now();
        let b = tx_service.call("tx_begin", json!({})).expect("begin");
        let id = b["tx_id"].as_str().unwrap_or_default().to_string();
        for i in 0..100 {
            tx_service.call(
                "tx_write",
                json!({"tx_id": id, "path": format!("tx{round}/f{i}.txt"), "content": content, "mode": "overwrite"}),
            )
            .expect("tx_write");
        }
        tx_service
            .call("tx_commit", json!({"tx_id": id}))
            .expect("commit");
        tx.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (sep, txm) = (median(&mut separate), median(&mut tx));
    println!("100 x 10 KB files, median of {rounds} rounds:");
    println!("  100 separate safe_write calls : {sep:8.1} ms");
    println!("  one transaction (begin, 100 tx_write, commit): {txm:8.1} ms");
    println!("  ratio separate / transaction  : {:8.2}x", sep / txm);

    // History: 10,000 versions of one path among 20,000 rows.
    let hist = tempfile::tempdir().expect("tempdir");
    let hroot = hist.path().canonicalize().expect("canonical");
    let state = hroot.join(".resilient_write");
    std::fs::create_dir_all(&state).expect("state dir");
    let target = hroot.join("hot.txt");
    std::fs::write(&target, b"current\n").expect("write");
    let mut journal = std::io::BufWriter::new(
        std::fs::File::create(state.join("journal.jsonl")).expect("journal"),
    );
    for i in 0..20_000u64 {
        let path = if i % 2 == 0 {
            target.display().to_string()
        } else {
            hroot
                .join(format!("other{}.txt", i % 50))
                .display()
                .to_string()
        };
        let row = JournalRow {
            journal_id: new_journal_id(),
            ts: now_rfc3339(),
            path,
            sha256: format!("{i:064x}"),
            prev_sha256: (i > 1).then(|| format!("{:064x}", i - 2)),
            bytes: 1000 + i,
            mode: "overwrite".into(),
            caller: "bench".into(),
            tool: "safe_write".into(),
            extra: BTreeMap::new(),
        };
        journal.write_all(row.to_line().as_bytes()).expect("row");
    }
    drop(journal);
    let history_service = service(&hroot);
    let mut times = Vec::new();
    let mut n = 0;
    for _ in 0..7 {
        let t0 = Instant::now();
        let v = history_service
            .call("history", json!({"path": "hot.txt", "limit": 10000}))
            .expect("history");
        times.push(t0.elapsed().as_secs_f64() * 1e3);
        n = v["versions"].as_array().map_or(0, Vec::len);
    }
    let first = times[0];
    let h = median(&mut times);
    println!("history of a path with 10,000 versions (20,000-row journal):");
    println!(
        "  {n} versions returned in {h:.1} ms (median of 7; first call {first:.1} ms); goal < 50 ms"
    );
}
