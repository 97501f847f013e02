//! Crash test: a server doing many writes of known content is SIGKILLed at random moments.
//!
//! One workspace lives through every trial. A trial starts a server (which repairs the journal
//! and sweeps stale temp files), waits for the sweep, then sends an endless stream of writes
//! (overwrites of files from a few bytes to ~1 MB, some in new subdirectories, and appends)
//! while a second thread SIGKILLs the server after a random delay. After the kill:
//! - every target is wholly one of its known versions: the last acknowledged one or the one in
//!   flight, never torn or mixed; an acknowledged write is never lost;
//! - the journal parses except at most a torn last line, holds a row for every acknowledged
//!   write, and holds a row for an in-flight write that landed (row before rename);
//! - every row that names a kept pre-image (`prev_sha256` without `history_not_kept`) finds
//!   it whole in the object store (pre-images are hard-linked there when the workspace and
//!   the state directory share a filesystem, as here; the kill lands mid-link too);
//! - the next start leaves no temp file and cuts a torn last journal line (one is injected now
//!   and then, as a crash in the middle of an append would leave it).
//!
//! `RW_CRASH_TRIALS` sets the number of trials (default 200, about 25 s in a debug build on 2
//! cores), `RW_CRASH_SEED` the seed, `RW_CRASH_MAX_DELAY_US` the longest kill delay. The
//! long run: `RW_CRASH_TRIALS=5000 cargo test --release --test crash -- --nocapture`.

mod common;

use common::{Killable, Rng};
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Overwritten targets: (relative path, min size, max size, weight).
const TARGETS: &[(&str, u64, u64, u64)] = &[
    ("tiny.txt", 48, 200, 30),
    ("small.txt", 1_000, 16_000, 25),
    ("deep/er/medium.txt", 32_000, 200_000, 12),
    ("big.txt", 300_000, 1_000_000, 6),
];
const LOG: &str = "log.txt";
const APPEND_WEIGHT: u64 = 27;

/// Version `seq` of target `idx`: a recognisable header, then a body derived from `seq`.
fn version(idx: usize, seq: u64, len: u64) -> Vec<u8> {
    let mut out = format!("rw-crash target={idx} seq={seq} len={len}\n").into_bytes();
    let mut x = seq.wrapping_mul(6_364_136_223_846_793_005) ^ idx as u64;
    while (out.len() as u64) < len {
        if out.len() % 80 == 79 {
            out.push(b'\n');
        } else {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            out.push(b'a' + ((x >> 33) % 26) as u8);
        }
    }
    out
}

/// One append record: a whole line, recognisable by its sequence number.
fn record(seq: u64, len: u64) -> Vec<u8> {
    let mut r = format!("record seq={seq} ").into_bytes();
    while (r.len() as u64) < len - 1 {
        r.push(b'0' + (seq % 10) as u8);
    }
    r.push(b'\n');
    r
}

/// A write in flight when the server died.
#[derive(Clone)]
enum Pending {
    Overwrite { idx: usize, content: Vec<u8> },
    Append { rec: Vec<u8> },
}

/// What the files must hold, as acknowledged by the server.
struct Model {
    /// Acknowledged content of each overwritten target (None: never written).
    targets: Vec<Option<Vec<u8>>>,
    /// Acknowledged content of the append log.
    log: Vec<u8>,
    /// journal_ids of acknowledged writes.
    acked_ids: Vec<String>,
    /// Journal bytes already verified (complete lines only).
    journal_ok_len: usize,
    /// (path, sha256) of every journal row seen.
    rows: HashSet<(String, String)>,
    seq: u64,
}

#[derive(Default, Debug)]
struct Outcomes {
    acked_writes: u64,
    killed_idle: u64,
    inflight_landed: u64,
    inflight_not_landed: u64,
    orphan_row: u64,
    temp_left_after_kill: u64,
    torn_line_after_kill: u64,
    torn_line_injected: u64,
    temp_files_swept: u64,
    pre_images_checked: u64,
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn journal_path(root: &Path) -> PathBuf {
    root.join(".resilient_write/journal.jsonl")
}

/// Check the journal after a kill: complete lines parse into rows with the required fields,
/// at most the last line is torn. Records rows in the model; returns whether a torn tail was
/// found.
fn check_journal_after_kill(root: &Path, model: &mut Model, trial: u64) -> bool {
    let data = std::fs::read(journal_path(root)).unwrap_or_default();
    assert!(
        data.len() >= model.journal_ok_len,
        "trial {trial}: the journal shrank from {} to {} bytes",
        model.journal_ok_len,
        data.len()
    );
    let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    assert!(
        complete >= model.journal_ok_len,
        "trial {trial}: verified journal rows were damaged"
    );
    for line in data[model.journal_ok_len..complete].split(|&b| b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let row: Map<String, Value> = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!(
                "trial {trial}: journal line is not a JSON object ({e}): {}",
                String::from_utf8_lossy(line)
            )
        });
        for k in [
            "journal_id",
            "ts",
            "path",
            "sha256",
            "prev_sha256",
            "bytes",
            "mode",
            "caller",
            "tool",
        ] {
            assert!(
                row.contains_key(k),
                "trial {trial}: row without {k}: {row:?}"
            );
        }
        model.rows.insert((
            row["path"].as_str().unwrap_or_default().to_string(),
            row["sha256"].as_str().unwrap_or_default().to_string(),
        ));
        model.rows.insert((
            "id".into(),
            row["journal_id"].as_str().unwrap_or_default().to_string(),
        ));
    }
    model.journal_ok_len = complete;
    for id in &model.acked_ids {
        assert!(
            model.rows.contains(&("id".into(), id.clone())),
            "trial {trial}: acknowledged write {id} has no journal row"
        );
    }
    model.acked_ids.clear();
    complete < data.len()
}

/// Every row appended since `from` whose pre-image was kept (it names `prev_sha256` and not
/// `history_not_kept`) finds that pre-image whole in the object store: linked, cloned or
/// copied, it was durable before its row. Returns how many were checked.
fn check_pre_images_after_kill(root: &Path, from: usize, trial: u64) -> u64 {
    let data = std::fs::read(journal_path(root)).unwrap_or_default();
    let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let mut checked = 0;
    for line in data[from.min(complete)..complete].split(|&b| b == b'\n') {
        let Ok(row) = serde_json::from_slice::<Map<String, Value>>(line) else {
            continue;
        };
        let Some(prev) = row.get("prev_sha256").and_then(Value::as_str) else {
            continue;
        };
        if row.contains_key("history_not_kept") {
            continue;
        }
        let obj = root
            .join(".resilient_write/objects")
            .join(&prev[..2])
            .join(prev);
        let bytes = std::fs::read(&obj).unwrap_or_else(|e| {
            panic!(
                "trial {trial}: row {} names pre-image {prev}, which is missing: {e}",
                row["journal_id"]
            )
        });
        assert_eq!(
            common::sha256(&bytes),
            prev,
            "trial {trial}: pre-image {prev} is not whole"
        );
        checked += 1;
    }
    checked
}

fn describe(bytes: &[u8]) -> String {
    let head: String = String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    format!("{} bytes starting {head:?}", bytes.len())
}

/// Check every target after a kill against the model and the write in flight; fold the
/// outcome into the model. Returns whether the in-flight write landed.
fn check_targets_after_kill(
    root: &Path,
    model: &mut Model,
    pending: Option<&Pending>,
    trial: u64,
) -> Option<bool> {
    let mut landed = None;
    for (idx, (rel, ..)) in TARGETS.iter().enumerate() {
        let on_disk = std::fs::read(root.join(rel)).ok();
        let inflight = match pending {
            Some(Pending::Overwrite { idx: i, content }) if *i == idx => Some(content),
            _ => None,
        };
        if on_disk == model.targets[idx] {
            if inflight.is_some() {
                landed = Some(false);
            }
            continue;
        }
        match (inflight, &on_disk) {
            (Some(new), Some(disk)) if disk == new => {
                landed = Some(true);
                model.targets[idx] = Some(new.clone());
            }
            _ => panic!(
                "trial {trial}: {rel} is neither its acknowledged version ({}) nor the one in \
                 flight ({}): it holds {}",
                model.targets[idx]
                    .as_deref()
                    .map_or("absent".into(), describe),
                inflight.map_or("none".into(), |c| describe(c)),
                on_disk.as_deref().map_or("nothing".into(), describe),
            ),
        }
    }
    let log = std::fs::read(root.join(LOG)).unwrap_or_default();
    let rec = match pending {
        Some(Pending::Append { rec }) => Some(rec),
        _ => None,
    };
    if log == model.log {
        if rec.is_some() {
            landed = Some(false);
        }
    } else {
        let ok = rec.is_some_and(|r| {
            log.len() == model.log.len() + r.len()
                && log.starts_with(&model.log)
                && log.ends_with(r)
        });
        assert!(
            ok,
            "trial {trial}: {LOG} is neither its acknowledged content ({} bytes) nor that plus \
             the record in flight: it holds {} bytes",
            model.log.len(),
            log.len()
        );
        model.log = log;
        landed = Some(true);
    }
    landed
}

/// Send writes until the server dies. Updates the model with each acknowledged write and
/// returns the write in flight when it died.
fn write_until_killed(c: &mut Killable, model: &mut Model, rng: &mut Rng) -> Option<Pending> {
    let total: u64 = TARGETS.iter().map(|t| t.3).sum::<u64>() + APPEND_WEIGHT;
    loop {
        model.seq += 1;
        let seq = model.seq;
        let mut pick = rng.range(0, total - 1);
        let chosen = TARGETS.iter().position(|t| {
            if pick < t.3 {
                true
            } else {
                pick -= t.3;
                false
            }
        });
        let (pending, args) = match chosen {
            Some(idx) => {
                let (rel, lo, hi, _) = TARGETS[idx];
                let content = version(idx, seq, rng.range(lo, hi));
                let args = json!({
                    "path": rel,
                    "content": String::from_utf8(content.clone()).expect("ascii"),
                    "mode": "overwrite",
                });
                (Pending::Overwrite { idx, content }, args)
            }
            None => {
                let rec = record(seq, rng.range(24, 400));
                let args = json!({
                    "path": LOG,
                    "content": String::from_utf8(rec.clone()).expect("ascii"),
                    "mode": "append",
                });
                (Pending::Append { rec }, args)
            }
        };
        let Some(sc) = c.call("rw_safe_write", args) else {
            return Some(pending);
        };
        let id = sc["journal_id"].as_str().expect("journal_id").to_string();
        match pending {
            Pending::Overwrite { idx, content } => {
                assert_eq!(sc["sha256"], json!(common::sha256(&content)));
                model.targets[idx] = Some(content);
            }
            Pending::Append { rec } => {
                model.log.extend_from_slice(&rec);
                assert_eq!(sc["sha256"], json!(common::sha256(&model.log)));
            }
        }
        model.acked_ids.push(id);
    }
}

#[test]
fn sigkilled_writes_leave_every_target_wholly_old_or_new_and_the_next_start_cleans_up() {
    let trials = env_u64("RW_CRASH_TRIALS", 200);
    let seed = env_u64("RW_CRASH_SEED", 0x5EED_C0DE);
    let max_delay_us = env_u64("RW_CRASH_MAX_DELAY_US", 150_000);
    let mut rng = Rng(seed);
    let ws = common::Workspace::new();
    let root = ws.root.clone();
    let mut model = Model {
        targets: vec![None; TARGETS.len()],
        log: Vec::new(),
        acked_ids: Vec::new(),
        journal_ok_len: 0,
        rows: HashSet::new(),
        seq: 0,
    };
    let mut out = Outcomes::default();
    let started = Instant::now();
    let mut injected_torn_len: Option<usize> = None;

    for trial in 0..=trials {
        // The next start: journal repaired before `initialize` is answered, temp files swept
        // in the background (poll with a generous bound).
        let mut c = Killable::start(&root, None).expect("server starts");
        let journal_len = std::fs::metadata(journal_path(&root)).map_or(0, |m| m.len() as usize);
        assert_eq!(
            journal_len, model.journal_ok_len,
            "trial {trial}: start did not cut the torn last journal line"
        );
        if let Some(len) = injected_torn_len.take() {
            assert_eq!(journal_len, len);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut left = common::temp_files(&root);
        while !left.is_empty() {
            assert!(
                Instant::now() < deadline,
                "trial {trial}: temp files still there a minute after start: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
            left = common::temp_files(&root);
        }
        if trial == trials {
            // The last start only checks the cleanup of the previous trial.
            c.kill();
            break;
        }

        // Kill after a random delay. The child is not waited for before the killer is
        // joined, so its pid cannot be reused in between.
        let pid = c.pid() as i32;
        let delay = Duration::from_micros(rng.range(0, max_delay_us));
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            let pid = rustix::process::Pid::from_raw(pid).expect("pid");
            rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("SIGKILL");
        });
        let pending = write_until_killed(&mut c, &mut model, &mut rng);
        killer.join().expect("killer thread");
        let status = c.wait();
        assert!(
            !status.success(),
            "trial {trial}: the server was not killed"
        );
        out.acked_writes += model.acked_ids.len() as u64;

        // Nothing torn, nothing acknowledged lost.
        match check_targets_after_kill(&root, &mut model, pending.as_ref(), trial) {
            None => out.killed_idle += 1,
            Some(true) => out.inflight_landed += 1,
            Some(false) => out.inflight_not_landed += 1,
        }
        let objects_from = model.journal_ok_len;
        let torn = check_journal_after_kill(&root, &mut model, trial);
        out.pre_images_checked += check_pre_images_after_kill(&root, objects_from, trial);
        if torn {
            out.torn_line_after_kill += 1;
        }
        // Applied implies journaled (the row is appended before the rename); a row for a
        // write whose rename never happened is the documented one-syscall window.
        if let Some(p) = &pending {
            let (path, sha) = match p {
                Pending::Overwrite { idx, content } => {
                    (root.join(TARGETS[*idx].0), common::sha256(content))
                }
                Pending::Append { rec } => {
                    let mut all = model.log.clone();
                    if !model.log.ends_with(rec) {
                        all.extend_from_slice(rec);
                    }
                    (root.join(LOG), common::sha256(&all))
                }
            };
            // Rows name files relative to the workspace root.
            let rel = path.strip_prefix(&root).unwrap_or(&path);
            let journaled = model
                .rows
                .contains(&(rel.display().to_string(), sha.clone()));
            let on_disk = std::fs::read(&path).map(|b| common::sha256(&b)).ok();
            if on_disk.as_deref() == Some(sha.as_str()) {
                assert!(
                    journaled,
                    "trial {trial}: {} holds the write in flight but the journal has no row for it",
                    path.display()
                );
            } else if journaled {
                out.orphan_row += 1;
            }
        }
        let temps = common::temp_files(&root);
        if !temps.is_empty() {
            out.temp_left_after_kill += 1;
            out.temp_files_swept += temps.len() as u64;
        }
        // Now and then leave a torn row, as a crash in the middle of an append would.
        if !torn && rng.range(0, 9) == 0 {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(journal_path(&root))
                .expect("open journal");
            f.write_all(br#"{"bytes":12,"journal_id":"torn-by-test","path":"#)
                .expect("tear journal");
            out.torn_line_injected += 1;
            injected_torn_len = Some(model.journal_ok_len);
        }
    }

    let secs = started.elapsed().as_secs_f64();
    println!(
        "crash: {trials} trials in {secs:.1}s (seed {seed:#x}, kill delay 0..{max_delay_us}us): {out:?}"
    );
    assert!(
        out.acked_writes > 0 && out.inflight_landed + out.inflight_not_landed > 0,
        "the kills never hit a write: {out:?}"
    );
    assert!(
        out.pre_images_checked > 0,
        "no overwrite kept a pre-image: {out:?}"
    );
}

/// A workspace holding `t.txt` ("old\n") and a server on it with `fault` injected; none in a
/// build without fault injection.
fn faulty_server_over_old_file(fault: &str) -> Option<(common::Workspace, common::Server)> {
    if !common::faults_compiled_in() {
        return None;
    }
    let ws = common::Workspace::new();
    std::fs::write(ws.path("t.txt"), "old\n").unwrap();
    let s = common::Server::start(&ws.root, &[], &[("RW_FAULT_INJECT", fault)]);
    Some((ws, s))
}

/// The temp file's fsync runs while the journal row is synced; the rename, and so the
/// acknowledgement, still waits for it: with the fsync held 500 ms (the `slow_fsync_temp`
/// fault), no write is acknowledged sooner, and the target is the old one until then.
#[test]
fn the_rename_and_the_ack_wait_for_the_temp_files_fsync() {
    let Some((ws, mut s)) = faulty_server_over_old_file("slow_fsync_temp") else {
        return;
    };
    for (i, mode) in ["overwrite", "create"].iter().enumerate() {
        let path = if i == 0 { "t.txt" } else { "new.txt" };
        let watched = ws.path(path);
        let started = Instant::now();
        let watcher = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(250));
            std::fs::read(&watched).ok()
        });
        let r = s.ok(
            "rw_safe_write",
            json!({"path": path, "content": "new\n", "mode": mode}),
        );
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(500),
            "{mode} acknowledged after {waited:?}"
        );
        let seen = watcher.join().unwrap();
        assert_ne!(
            seen.as_deref(),
            Some(&b"new\n"[..]),
            "{mode}: renamed before its fsync"
        );
        assert_eq!(std::fs::read(ws.path(path)).unwrap(), b"new\n");
        assert_eq!(r["sha256"], common::sha256(b"new\n"));
    }
    assert_eq!(common::journal_rows(&ws.root).len(), 2);
}

/// A temp file whose fsync fails (the `eio_fsync_temp` fault) is never renamed: the call
/// fails with a typed envelope naming the fsync, its journal row is taken back, the target
/// keeps its content and no temp file is left.
#[test]
fn a_failed_temp_fsync_lands_nothing_and_leaves_no_row() {
    let Some((ws, mut s)) = faulty_server_over_old_file("eio_fsync_temp") else {
        return;
    };
    for (path, mode) in [("t.txt", "overwrite"), ("new.txt", "create")] {
        let e = s.err(
            "rw_safe_write",
            json!({"path": path, "content": "new\n", "mode": mode}),
        );
        assert_eq!(e["context"]["errno"], 5, "{e}");
        assert!(
            e["context"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("fsync temp file")
                || e.to_string().contains("fsync temp file"),
            "{e}"
        );
    }
    assert_eq!(std::fs::read(ws.path("t.txt")).unwrap(), b"old\n");
    assert!(!ws.path("new.txt").exists());
    assert_eq!(common::temp_files(&ws.root), Vec::<PathBuf>::new());
    assert!(common::journal_rows(&ws.root).is_empty());
}

/// Where no thread can be started for the temp file's fsync (the `no_fsync_thread` fault),
/// the fsync runs on the caller's thread and the write lands, journaled, as any other.
#[test]
fn without_a_thread_for_the_fsync_the_write_still_lands() {
    let Some((ws, mut s)) = faulty_server_over_old_file("no_fsync_thread") else {
        return;
    };
    for (path, mode) in [("t.txt", "overwrite"), ("new.txt", "create")] {
        let r = s.ok(
            "rw_safe_write",
            json!({"path": path, "content": "new\n", "mode": mode}),
        );
        assert_eq!(r["sha256"], common::sha256(b"new\n"));
        assert_eq!(std::fs::read(ws.path(path)).unwrap(), b"new\n");
    }
    assert_eq!(common::journal_rows(&ws.root).len(), 2);
    assert_eq!(common::temp_files(&ws.root), Vec::<PathBuf>::new());
}

/// A new pre-image link is made durable on a worker, started beside the temp file's fsync and
/// the journal row's once the row is written; the rename and the acknowledgement wait for it:
/// with the object's sync held 500 ms (the `slow_object_sync` fault), the target is the old
/// one at 250 ms, and the write is acknowledged after 500 ms with its pre-image stored and
/// named by its row.
#[test]
fn the_rename_and_the_ack_wait_for_the_pre_images_sync() {
    let Some((ws, mut s)) = faulty_server_over_old_file("slow_object_sync") else {
        return;
    };
    let watched = ws.path("t.txt");
    let started = Instant::now();
    let watcher = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(250));
        std::fs::read(&watched).ok()
    });
    let r = s.ok(
        "rw_safe_write",
        json!({"path": "t.txt", "content": "new\n", "mode": "overwrite"}),
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(500),
        "acknowledged after {waited:?}"
    );
    let seen = watcher.join().unwrap();
    assert_eq!(seen.as_deref(), Some(&b"old\n"[..]), "renamed too soon");
    assert!(r["warnings"].as_array().is_none_or(|w| w.is_empty()), "{r}");
    let old = common::sha256(b"old\n");
    let object = ws.path(&format!(".resilient_write/objects/{}/{old}", &old[..2]));
    assert_eq!(
        std::fs::read(&object).unwrap(),
        b"old\n",
        "pre-image not stored"
    );
    let rows = common::journal_rows(&ws.root);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["prev_sha256"], old);
    assert!(rows[0].get("history_not_kept").is_none(), "{:?}", rows[0]);
}

/// A pre-image whose sync fails (the `eio_object_sync` fault) is not kept, and the write
/// goes ahead: the result and the row say `history_not_kept`, and no object is left behind.
#[test]
fn a_pre_image_that_cannot_be_synced_is_not_kept_and_the_write_lands() {
    let Some((ws, mut s)) = faulty_server_over_old_file("eio_object_sync") else {
        return;
    };
    let r = s.ok(
        "rw_safe_write",
        json!({"path": "t.txt", "content": "new\n", "mode": "overwrite"}),
    );
    let warned = r["warnings"].as_array().is_some_and(|w| {
        w.iter().any(|w| {
            w.as_str()
                .is_some_and(|w| w.starts_with("history_not_kept"))
        })
    });
    assert!(warned, "{r}");
    assert_eq!(std::fs::read(ws.path("t.txt")).unwrap(), b"new\n");
    let rows = common::journal_rows(&ws.root);
    assert_eq!(rows.len(), 1);
    assert!(rows[0]["history_not_kept"].is_string(), "{:?}", rows[0]);
    let objects = ws.path(".resilient_write/objects");
    let left = common::files_under(&objects);
    assert!(left.is_empty(), "objects left: {left:?}");
}
