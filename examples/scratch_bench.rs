//! `scratch_put` against the size of the index (issue 17: the index is appended to, never
//! rewritten by a deposit). For an index of 10 and of 10,000 rows, in one run:
//! - a deposit of content already stored (deduplicated: the index row is all it writes);
//! - a deposit of new content (a blob write through the pipeline, then the row);
//! - the previous design for contrast: the index rewritten whole through the pipeline to add
//!   one row (what every deposit did before), on the same index.
//!
//! Calls go through `Service::call` (the dispatch every front end uses), without a transport.
//! Each case starts from an index of the given size (it grows by the rows the case adds).
//! Prints the median per call and the ratio of 10,000 rows to 10 rows for each.
//! Run: `cargo run --release --example scratch_bench [CALLS]` (default 200 calls per case).

use resilient_write::dispatch::{Config, Service};
use resilient_write_core::write::pipeline::{Body, Caller, Decision, Plan};
use serde_json::json;
use std::io::Write;
use std::time::Instant;

fn service(root: &std::path::Path) -> std::sync::Arc<Service> {
    let mut c = Config::new(root.to_path_buf());
    c.store.workspaces = vec![root.to_path_buf()];
    c.store.sweep_on_start = false;
    Service::start(c)
}

fn median_ms(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2] * 1e3
}

/// A workspace whose scratch index already holds `rows` rows (one stored blob, many labels,
/// rows shaped like the ones a deposit writes).
fn prepared(rows: usize) -> (tempfile::TempDir, std::sync::Arc<Service>) {
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path().canonicalize().expect("canonical");
    let service = service(&root);
    service
        .call("scratch_put", json!({"content": "stored", "label": "seed"}))
        .expect("seed deposit");
    let index = root.join(".resilient_write/scratch/index.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&index)
        .expect("index");
    let sha = resilient_write_core::hash::sha256_hex(b"stored");
    let mut buf = Vec::new();
    for i in 1..rows {
        writeln!(
            buf,
            r#"{{"bytes":6,"content_type":"text/plain","created_at":"2026-12-04T10:00:00.000000Z","encoding":"utf-8","label":"prefill-{i}","notes":"a note of some length for row {i}","sha256":"{sha}"}}"#
        )
        .expect("row");
    }
    f.write_all(&buf).expect("prefill");
    f.sync_all().expect("sync");
    (t, service)
}

/// Per call: deduplicated deposits, new-content deposits, whole-index rewrites.
fn measure(rows: usize, calls: usize) -> [f64; 3] {
    let (_t, service) = prepared(rows);
    let mut dedup = Vec::with_capacity(calls);
    let mut fresh = Vec::with_capacity(calls);
    let mut rewrite = Vec::with_capacity(calls);
    for i in 0..calls {
        let t0 = Instant::now();
        service
            .call(
                "scratch_put",
                json!({"content": "stored", "label": format!("again-{i}")}),
            )
            .expect("dedup deposit");
        dedup.push(t0.elapsed().as_secs_f64());

        let t0 = Instant::now();
        service
            .call(
                "scratch_put",
                json!({"content": format!("new content {i}"), "label": format!("new-{i}")}),
            )
            .expect("new deposit");
        fresh.push(t0.elapsed().as_secs_f64());
    }
    // The previous design: read the index, add one row, write it all through the pipeline;
    // on an index of its own, of the same starting size.
    let (_t2, service) = prepared(rows);
    let dir = resilient_write_core::state::open_subdir(
        service.store().state_dir(),
        &["scratch"],
        0o700,
        false,
    )
    .expect("scratch dir")
    .expect("exists");
    let target = dir.target("index.jsonl").expect("target");
    let who = Caller {
        caller: "bench".into(),
        tool: "scratch_put".into(),
    };
    for i in 0..calls.min(50) {
        let line = format!(
            "{{\"bytes\":6,\"label\":\"rewrite-{i}\",\"sha256\":\"{}\"}}\n",
            resilient_write_core::hash::sha256_hex(b"stored")
        );
        let t0 = Instant::now();
        service
            .store()
            .pipeline()
            .commit(&target, &who, |existing| {
                let mut body = existing.map(|e| e.bytes.clone()).unwrap_or_default();
                body.extend_from_slice(line.as_bytes());
                Ok(Decision::Write(
                    Plan {
                        body: Body::Bytes(body),
                        mode: "append".into(),
                        create_only: false,
                        extra: Default::default(),
                        new_file_mode: Some(0o600),
                    },
                    (),
                ))
            })
            .expect("rewrite");
        rewrite.push(t0.elapsed().as_secs_f64());
    }
    [median_ms(dedup), median_ms(fresh), median_ms(rewrite)]
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let small = measure(10, calls);
    let large = measure(10_000, calls);
    println!("scratch_put, median ms per call ({calls} calls per case; rewrite: 50)");
    println!(
        "{:<44} {:>10} {:>12} {:>8}",
        "case", "10 rows", "10,000 rows", "ratio"
    );
    for (i, name) in [
        "deduplicated deposit (index row only)",
        "deposit of new content (blob + row)",
        "before: index rewritten whole (one row)",
    ]
    .iter()
    .enumerate()
    {
        println!(
            "{:<44} {:>10.3} {:>12.3} {:>7.2}x",
            name,
            small[i],
            large[i],
            large[i] / small[i]
        );
    }
}
