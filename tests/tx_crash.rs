//! Crash test for transactions: a server committing multi-file transactions is SIGKILLed at
//! random moments, and in some trials aborts itself at an injected point (right after the
//! commit record is durable, after the journal rows, between two renames). After each
//! restart, every transaction is wholly applied or wholly absent across all its files:
//! - the three files always hold the same version (every transaction writes all three);
//! - an acknowledged commit is never lost, a transaction never begun never appears;
//! - the WAL is empty (rolled forward or back), and every transaction that landed has exactly
//!   one journal row per file.
//!
//! `RW_TX_CRASH_TRIALS` sets the number of trials (default 200), `RW_TX_CRASH_SEED` the seed.
//! The long run: `RW_TX_CRASH_TRIALS=5000 cargo test --release --test tx_crash -- --nocapture`.

mod common;

use common::{Killable, Rng};
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

const FILES: &[&str] = &["a.txt", "b.txt", "sub/dir/c.txt"];
const FAULTS: &[&str] = &[
    "tx_crash_after_commit_record",
    "tx_crash_after_journal",
    "tx_crash_mid_renames",
];

fn content(version: u64, file: &str) -> Vec<u8> {
    let mut s = format!("version={version} file={file}\n");
    for i in 0..(version % 7) * 300 {
        s.push_str(&format!("line {i} of version {version}\n"));
    }
    s.into_bytes()
}

fn version_of(root: &Path, file: &str) -> Option<u64> {
    let text = std::fs::read_to_string(root.join(file)).ok()?;
    let first = text.lines().next()?;
    let v: u64 = first
        .strip_prefix("version=")?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    assert_eq!(text.as_bytes(), content(v, file), "{file} is torn");
    Some(v)
}

#[test]
fn transactions_are_wholly_applied_or_wholly_absent_after_kills() {
    let trials: u64 = std::env::var("RW_TX_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let seed: u64 = std::env::var("RW_TX_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x0074_7863_7261_7368);
    let ws = common::Workspace::new();
    let root = ws.root.clone();
    let mut rng = Rng(seed);
    let mut acked: u64 = 0; // newest acknowledged version
    let mut attempted: u64 = 0; // newest version whose commit was sent
    let mut tx_of: HashMap<String, u64> = HashMap::new();
    let mut landed_unacked = 0u64;
    let mut absent_unacked = 0u64;
    for trial in 0..trials {
        let fault = rng
            .next()
            .is_multiple_of(3)
            .then(|| FAULTS[(rng.next() % 3) as usize]);
        // A plain start recovers (a server with a fault point set would abort in recovery).
        let Some(mut c) = Killable::start(&root, None) else {
            panic!("trial {trial}: server did not start");
        };
        // The start recovered: check the invariant before anything else happens.
        let versions: Vec<Option<u64>> = FILES.iter().map(|f| version_of(&root, f)).collect();
        assert!(
            versions.iter().all(|v| *v == versions[0]),
            "trial {trial}: files hold different transactions: {versions:?}"
        );
        let now = versions[0].unwrap_or(0);
        assert!(
            now >= acked,
            "trial {trial}: acknowledged version {acked} lost (now {now})"
        );
        assert!(
            now <= attempted,
            "trial {trial}: version {now} was never committed"
        );
        if now > acked {
            landed_unacked += 1;
            acked = now;
        } else if attempted > acked {
            absent_unacked += 1;
        }
        attempted = acked;
        let wal = root.join(".resilient_write/wal");
        let left: Vec<_> = std::fs::read_dir(&wal)
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        assert!(
            left.is_empty(),
            "trial {trial}: WAL not empty after restart: {left:?}"
        );

        if fault.is_some() {
            c.kill();
            c = Killable::start(&root, fault).expect("server with a fault point starts");
        }
        // Kill at a random moment (a fault point may abort the server first).
        let pid = c.pid();
        let delay = Duration::from_micros(rng.next() % 150_000);
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        });
        while let Some(b) = c.call("rw_tx_begin", json!({})) {
            let tx_id = b["tx_id"].as_str().unwrap_or_default().to_string();
            let v = attempted + 1;
            let mut ok = true;
            for f in FILES {
                let text = String::from_utf8(content(v, f)).unwrap_or_default();
                if c.call(
                    "rw_tx_write",
                    json!({"tx_id": tx_id, "path": f, "content": text, "mode": "overwrite"}),
                )
                .is_none()
                {
                    ok = false;
                    break;
                }
            }
            if !ok {
                break;
            }
            attempted = v;
            tx_of.insert(tx_id.clone(), v);
            match c.call("rw_tx_commit", json!({"tx_id": tx_id})) {
                Some(r) => {
                    assert_eq!(r["files"].as_array().map(Vec::len), Some(FILES.len()));
                    acked = v;
                }
                None => break,
            }
        }
        let _ = killer.join();
        c.kill();
    }
    // One last start recovers the final kill; then every landed transaction has one row per
    // file and no transaction has more.
    let c = Killable::start(&root, None).expect("final start");
    drop(c);
    let mut rows_per_tx: HashMap<String, usize> = HashMap::new();
    for row in common::journal_rows(&root) {
        if let Some(t) = row["tx_id"].as_str() {
            *rows_per_tx.entry(t.to_string()).or_default() += 1;
        }
    }
    for (t, n) in &rows_per_tx {
        assert_eq!(*n, FILES.len(), "transaction {t} has {n} journal rows");
    }
    let landed = rows_per_tx.len() as u64;
    eprintln!(
        "tx crash: {trials} trials, {landed} transactions landed, acked up to version {acked}, \
         {landed_unacked} unacknowledged commits rolled forward, {absent_unacked} rolled back \
         or never committed, {} transactions begun",
        tx_of.len()
    );
    assert!(
        acked > 0,
        "no transaction ever committed: the test exercised nothing"
    );
}
