//! Crash test for chunk sessions: a server appending chunks of known content to one session
//! and now and then composing it is SIGKILLed at random moments. After each kill:
//! - the session holds chunks 1..=k, contiguous, every one wholly its known content, and every
//!   acknowledged append is among them (a crash loses at most the chunk in flight);
//! - `chunk_status` reports no modified chunk and the session ready: a kill between a chunk
//!   write and its manifest update is not mistaken for a hand edit;
//! - the composed file, if any, is wholly the composition of chunks 1..=m for some m <= k
//!   (never torn, never mixed);
//! - the next compose succeeds and yields exactly chunks 1..=k.
//!
//! `RW_CHUNK_CRASH_TRIALS` sets the number of trials (default 25), `RW_CRASH_SEED` the seed.

mod common;

use common::{Killable, Rng};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The content of chunk `i`: a header naming it, then a body whose length depends on `i`.
fn chunk(i: u64) -> String {
    let len = 64 + (i * 7919) % 20_000;
    let mut s = format!("<chunk {i}>");
    while (s.len() as u64) < len {
        s.push((b'a' + (i % 26) as u8) as char);
    }
    s.push('\n');
    s
}

fn composed(n: u64) -> Vec<u8> {
    (1..=n).flat_map(|i| chunk(i).into_bytes()).collect()
}

/// Whether `bytes` is `composed(m)` for some `1 <= m <= k`, in one pass (building every
/// composition to compare would be quadratic in the session's size).
fn is_composition_of_a_prefix(bytes: &[u8], k: u64) -> bool {
    let mut at = 0;
    for i in 1..=k {
        let c = chunk(i);
        if !bytes[at..].starts_with(c.as_bytes()) {
            return false;
        }
        at += c.len();
        if at == bytes.len() {
            return true;
        }
    }
    false
}

fn present_chunks(root: &Path) -> Vec<u64> {
    let dir = root.join(".resilient_write/chunks/crash");
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.strip_prefix("part-")?.strip_suffix(".txt")?.parse().ok()
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

#[test]
fn killed_chunk_sessions_stay_consistent_and_compose() {
    let trials = std::env::var("RW_CHUNK_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25u64);
    let seed = std::env::var("RW_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_c4a5);
    let mut rng = Rng(seed);
    let ws = common::Workspace::new();
    let root = ws.root.clone();
    let out = root.join("out.txt");
    let mut acked = 0u64;
    let mut kills_mid_call = 0u64;
    let mut composes = 0u64;
    for trial in 0..trials {
        let mut c = Killable::start(&root, None).expect("server starts");
        let pid = c.pid();
        let delay = Duration::from_micros(rng.range(2_000, 250_000));
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        });
        loop {
            let next = acked + 1;
            let r = if rng.range(0, 9) == 0 {
                c.call(
                    "rw_chunk_compose",
                    json!({"session": "crash", "output_path": "out.txt"}),
                )
            } else {
                c.call(
                    "rw_chunk_append",
                    json!({"session": "crash", "content": chunk(next)}),
                )
                .inspect(|r| {
                    assert_eq!(r["index"], json!(next), "trial {trial}: append index");
                })
            };
            match r {
                Some(r) if r.get("index").is_some() => acked = next,
                Some(_) => composes += 1,
                None => {
                    kills_mid_call += 1;
                    break;
                }
            }
        }
        killer.join().unwrap();
        c.wait();

        let present = present_chunks(&root);
        let k = present.len() as u64;
        assert_eq!(present, (1..=k).collect::<Vec<_>>(), "trial {trial}: gap");
        assert!(
            k == acked || k == acked + 1,
            "trial {trial}: {k} chunks present, {acked} acknowledged"
        );
        for i in 1..=k {
            let got =
                std::fs::read(root.join(format!(".resilient_write/chunks/crash/part-{i:03}.txt")))
                    .unwrap();
            assert_eq!(got, chunk(i).as_bytes(), "trial {trial}: chunk {i} torn");
        }
        acked = k;
        if let Ok(bytes) = std::fs::read(&out) {
            assert!(
                is_composition_of_a_prefix(&bytes, k),
                "trial {trial}: composed file is not a composition of a prefix"
            );
        }
        let mut check = Killable::start(&root, None).expect("server starts");
        let st = check
            .call("rw_chunk_status", json!({"session": "crash"}))
            .expect("status answered");
        if k > 0 {
            assert_eq!(st["modified_chunks"], json!([]), "trial {trial}: {st}");
            assert_eq!(st["ready"], json!(true), "trial {trial}: {st}");
        }
        check.close();
    }
    let mut c = Killable::start(&root, None).expect("server starts");
    if acked > 0 {
        c.call(
            "rw_chunk_compose",
            json!({"session": "crash", "output_path": "out.txt"}),
        )
        .expect("final compose answered");
        assert_eq!(std::fs::read(&out).unwrap(), composed(acked));
    }
    eprintln!(
        "{trials} trials, {acked} chunks, {composes} composes acknowledged, {kills_mid_call} kills during a call"
    );
    c.kill();
}

/// A reset (or a compose's cleanup) killed part way leaves a session that compose refuses
/// (chunk 1 went first), never a shorter one it would compose as if whole; a second reset
/// finishes the job.
#[test]
fn a_reset_killed_part_way_leaves_a_session_compose_refuses() {
    if !common::faults_compiled_in() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut c = Killable::start(root, Some("reset_crash_after_first_unlink")).expect("starts");
    for i in 1..=3 {
        c.call(
            "rw_chunk_write",
            json!({"session": "r", "index": i, "content": chunk(i)}),
        )
        .expect("chunk written");
    }
    assert!(c.call("rw_chunk_reset", json!({"session": "r"})).is_none());
    c.wait();
    let mut s = common::Server::start(root, &[], &[]);
    let st = s.ok("rw_chunk_status", json!({"session": "r"}));
    assert_eq!(st["present_indices"], json!([2, 3]), "{st}");
    assert_eq!(st["missing_indices"], json!([1]), "{st}");
    assert_eq!(st["ready"], json!(false), "{st}");
    let e = s.err(
        "rw_chunk_compose",
        json!({"session": "r", "output_path": "out.txt"}),
    );
    assert_eq!(e["context"]["reason"], "non_contiguous_chunks", "{e}");
    assert!(!root.join("out.txt").exists());
    let r = s.ok("rw_chunk_reset", json!({"session": "r"}));
    assert_eq!(r["existed"], json!(true));
    assert!(!root.join(".resilient_write/chunks/r").exists());
}
