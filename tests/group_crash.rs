//! Crash test of the journal's group commit: one server answers several writers at once
//! (pipelined `tools/call` requests, which it runs concurrently, as parallel tool calls and
//! HTTP sessions do), so the writers share journal syncs and directory syncs; it is
//! SIGKILLed at random moments. After each kill:
//! - every acknowledged write is on disk (or replaced by a later write of the same writer)
//!   and has its journal row; each file is wholly its last acknowledged version or the one in
//!   flight, never torn;
//! - every complete journal line is a whole row, at most the last line is torn, and a write in
//!   flight that landed has its row (rows are durable before their renames);
//! - the next start cuts the torn line and leaves no temp file.
//!
//! A last round without a kill checks that every writer is answered (no writer is left
//! waiting for a sync that never comes). `RW_GROUP_CRASH_TRIALS` sets the number of trials
//! (default 40), `RW_CRASH_SEED` the seed.

mod common;

use common::{Rng, Workspace, bin, sha256, temp_files};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Writers, each overwriting its own file; half share one directory (their directory fsyncs
/// coalesce), half have one each.
const WRITERS: usize = 8;

fn rel(w: usize) -> String {
    if w.is_multiple_of(2) {
        format!("shared/w{w}.txt")
    } else {
        format!("own{w}/w{w}.txt")
    }
}

fn content(w: usize, seq: u64, len: u64) -> String {
    let mut s = format!("writer={w} seq={seq}\n");
    let mut x = seq ^ (w as u64) << 32;
    while (s.len() as u64) < len {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        s.push((b'a' + ((x >> 33) % 26) as u8) as char);
    }
    s
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start(root: &Path) -> Server {
        let mut child = Command::new(bin())
            .arg("serve")
            .current_dir(root)
            .env_remove("RW_WORKSPACE")
            .env_remove("RW_STATE_DIR")
            .env_remove("RW_FAULT_INJECT")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            lines,
        };
        s.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "group-crash", "version": "0"}}}),
        );
        let init = s
            .next(Duration::from_secs(60))
            .expect("initialize answered");
        assert_eq!(init["id"], 0, "{init}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    /// Send one message; false once the server is gone.
    fn send(&mut self, msg: &Value) -> bool {
        let mut line = msg.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).is_ok() && self.stdin.flush().is_ok()
    }

    /// The next complete message; `None` once the server is gone (a line torn by the kill is
    /// no message).
    fn next(&mut self, within: Duration) -> Option<Value> {
        match self.lines.recv_timeout(within) {
            Ok(line) => serde_json::from_str(&line).ok(),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no answer from a live server within {within:?}: a writer is stuck")
            }
        }
    }
}

/// What each writer's file must hold.
#[derive(Default)]
struct Model {
    acked: HashMap<usize, String>,
    in_flight: HashMap<usize, String>,
    acked_ids: Vec<String>,
}

/// Run writes from every writer at once until the server dies (or `limit` acknowledgements
/// when it is not killed). Returns how many writes were acknowledged.
fn drive(s: &mut Server, model: &mut Model, rng: &mut Rng, seq: &mut u64, limit: u64) -> u64 {
    let mut by_id: HashMap<u64, (usize, String)> = HashMap::new();
    let mut send =
        |s: &mut Server, w: usize, model: &mut Model, by_id: &mut HashMap<u64, (usize, String)>| {
            *seq += 1;
            let body = content(w, *seq, rng.range(16, 3000));
            let msg = json!({"jsonrpc": "2.0", "id": *seq, "method": "tools/call", "params": {
            "name": "rw_safe_write",
            "arguments": {"path": rel(w), "content": body, "mode": "overwrite"}}});
            model.in_flight.insert(w, body.clone());
            by_id.insert(*seq, (w, body));
            s.send(&msg)
        };
    for w in 0..WRITERS {
        if !send(s, w, model, &mut by_id) {
            return 0;
        }
    }
    let mut acked = 0;
    while acked < limit {
        let Some(msg) = s.next(Duration::from_secs(60)) else {
            return acked;
        };
        let Some(id) = msg["id"].as_u64() else {
            continue; // a notification
        };
        let (w, body) = by_id.remove(&id).expect("an answer to a request sent");
        let result = &msg["result"];
        assert_ne!(result["isError"], true, "a write failed: {msg}");
        let sc = &result["structuredContent"];
        assert_eq!(sc["sha256"], json!(sha256(body.as_bytes())), "{msg}");
        model
            .acked_ids
            .push(sc["journal_id"].as_str().expect("journal_id").to_string());
        model.in_flight.remove(&w);
        model.acked.insert(w, body);
        acked += 1;
        if !send(s, w, model, &mut by_id) {
            return acked;
        }
    }
    acked
}

fn journal(root: &Path) -> Vec<u8> {
    std::fs::read(root.join(".resilient_write/journal.jsonl")).unwrap_or_default()
}

/// Complete rows as (path, sha256) and journal ids; panics on a damaged complete line.
fn rows(data: &[u8], trial: u64) -> (HashSet<(String, String)>, HashSet<String>, bool) {
    let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let (mut files, mut ids) = (HashSet::new(), HashSet::new());
    for line in data[..complete].split(|&b| b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let row: Map<String, Value> = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!(
                "trial {trial}: a complete journal line is not a row ({e}): {}",
                String::from_utf8_lossy(line)
            )
        });
        let field = |k: &str| row[k].as_str().unwrap_or_default().to_string();
        files.insert((field("path"), field("sha256")));
        ids.insert(field("journal_id"));
    }
    (files, ids, complete < data.len())
}

#[test]
fn sigkill_during_group_commits_loses_no_acknowledged_write_or_row() {
    let trials = std::env::var("RW_GROUP_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40u64);
    let seed = std::env::var("RW_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x6E0u64);
    let mut rng = Rng(seed);
    let ws = Workspace::new();
    let root = ws.root.clone();
    let mut model = Model::default();
    let (mut seq, mut acked_total, mut landed_in_flight, mut torn) = (0u64, 0u64, 0u64, 0u64);

    for trial in 0..trials {
        let mut s = Server::start(&root);
        // The start cut any torn line the last kill left.
        let data = journal(&root);
        assert!(
            data.is_empty() || data.ends_with(b"\n"),
            "trial {trial}: start left a torn journal line"
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        while !temp_files(&root).is_empty() {
            assert!(Instant::now() < deadline, "trial {trial}: temp files stay");
            std::thread::sleep(Duration::from_millis(5));
        }
        let pid = s.child.id() as i32;
        let delay = Duration::from_micros(rng.range(2_000, 120_000));
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            let pid = rustix::process::Pid::from_raw(pid).expect("pid");
            rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("SIGKILL");
        });
        acked_total += drive(&mut s, &mut model, &mut rng, &mut seq, u64::MAX);
        killer.join().expect("killer");
        assert!(!s.child.wait().expect("wait").success());

        let data = journal(&root);
        let (files, ids, was_torn) = rows(&data, trial);
        torn += u64::from(was_torn);
        for id in model.acked_ids.drain(..) {
            assert!(
                ids.contains(&id),
                "trial {trial}: acknowledged write {id} has no journal row"
            );
        }
        for w in 0..WRITERS {
            let on_disk = std::fs::read_to_string(root.join(rel(w))).ok();
            let acked = model.acked.get(&w);
            let flying = model.in_flight.remove(&w);
            match (&on_disk, acked, &flying) {
                (Some(d), _, Some(f)) if d == f => {
                    landed_in_flight += 1;
                    assert!(
                        files.contains(&(rel(w), sha256(d.as_bytes()))),
                        "trial {trial}: {} holds a write in flight without its row",
                        rel(w)
                    );
                    model.acked.insert(w, d.clone());
                }
                (Some(d), Some(a), _) => assert!(
                    d == a,
                    "trial {trial}: {} is neither its acknowledged nor its in-flight version",
                    rel(w)
                ),
                (None, None, _) => {}
                (d, a, _) => panic!(
                    "trial {trial}: {} on disk: {}, acknowledged: {}",
                    rel(w),
                    d.is_some(),
                    a.is_some()
                ),
            }
        }
    }

    // No kill: every writer is answered, and the rows are all there.
    let mut s = Server::start(&root);
    let done = drive(&mut s, &mut model, &mut rng, &mut seq, 400);
    assert_eq!(done, 400);
    drop(s.stdin);
    s.child.wait().expect("exit");
    let (_, ids, was_torn) = rows(&journal(&root), trials);
    assert!(!was_torn);
    for id in model.acked_ids.drain(..) {
        assert!(ids.contains(&id), "acknowledged write {id} has no row");
    }
    println!(
        "group crash: {trials} trials, {acked_total} acknowledged writes, \
         {landed_in_flight} in-flight writes landed, {torn} torn last lines"
    );
    assert!(acked_total > 0, "the kills never let a write through");
}
