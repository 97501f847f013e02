//! Crash test of the append-only scratch index: a server depositing in a loop (new blobs and
//! deduplicated ones, a few labels) is SIGKILLed at random moments, in the style of
//! tests/crash.rs. After each kill:
//! - the index only grew: the bytes verified after the previous kill are still its prefix
//!   (a deposit never rewrites earlier rows);
//! - every line parses as an index row, except the fragments this test tore on purpose and
//!   at most an unterminated last line (a kill inside the one `write(2)`);
//! - every acknowledged deposit has its row (found by its `notes`) and its blob, whole;
//! - a fragment torn on purpose (as a crash mid-row leaves one) never spoils the next row.
//!
//! At the end `doctor --fix` compacts the index: every acknowledged (sha256, label) is still
//! there with all its deposits counted, and the server answers `scratch_ref` for it.
//!
//! `RW_SCRATCH_CRASH_TRIALS` sets the number of trials (default 40), `RW_CRASH_SEED` the seed.

mod common;

use common::{Killable, Rng};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

const LABELS: u64 = 5;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An acknowledged deposit.
struct Acked {
    seq: u64,
    sha256: String,
    label: String,
    content: Vec<u8>,
}

/// Deposit until the server dies; push each acknowledged deposit.
fn deposit_until_killed(c: &mut Killable, seq: &mut u64, rng: &mut Rng, acked: &mut Vec<Acked>) {
    loop {
        *seq += 1;
        // A third of the deposits repeat earlier content (deduplicated: only a row is added).
        let body = if rng.range(0, 2) == 0 {
            rng.range(0, 20)
        } else {
            1_000 + *seq
        };
        let content = format!("scratch crash body {body}\n").into_bytes();
        let label = format!("l{}", rng.range(0, LABELS - 1));
        let args = json!({
            "content": String::from_utf8(content.clone()).expect("ascii"),
            "label": label,
            "notes": format!("seq={seq}"),
        });
        let Some(r) = c.call("rw_scratch_put", args) else {
            return;
        };
        assert_eq!(r["sha256"], json!(common::sha256(&content)));
        acked.push(Acked {
            seq: *seq,
            sha256: common::sha256(&content),
            label,
            content,
        });
    }
}

/// The index's lines: parsed rows, and how many lines did not parse (the last one counted
/// apart when it is unterminated).
fn read_lines(index: &Path) -> (Vec<u8>, Vec<Map<String, Value>>, usize, bool) {
    let data = std::fs::read(index).unwrap_or_default();
    let mut rows = Vec::new();
    let mut bad = 0;
    let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    for line in data[..complete].split(|&b| b == b'\n') {
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Map<String, Value>>(line) {
            Ok(m) if m.contains_key("sha256") => rows.push(m),
            _ => bad += 1,
        }
    }
    let torn_tail = complete < data.len();
    (data, rows, bad, torn_tail)
}

#[test]
fn sigkilled_deposits_only_ever_append_and_every_acknowledged_one_is_readable() {
    let trials = env_u64("RW_SCRATCH_CRASH_TRIALS", 40);
    let seed = env_u64("RW_CRASH_SEED", 0x5C2A_7C4D);
    let mut rng = Rng(seed);
    let ws = common::Workspace::new();
    let root = ws.root.clone();
    let index = root.join(".resilient_write/scratch/index.jsonl");
    let mut acked: Vec<Acked> = Vec::new();
    let mut seq = 0;
    let mut verified: Vec<u8> = Vec::new();
    // Fragments in the index (torn on purpose or by a kill), and whether the unterminated
    // last line, if any, is one of them already.
    let mut fragments = 0;
    let mut tail_known = false;
    let (mut killed_mid_row, mut deposits_checked) = (0, 0);

    for trial in 0..trials {
        let mut c = Killable::start(&root, None).expect("server starts");
        let pid = c.pid() as i32;
        let delay = Duration::from_micros(rng.range(2_000, 120_000));
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            let pid = rustix::process::Pid::from_raw(pid).expect("pid");
            rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("SIGKILL");
        });
        deposit_until_killed(&mut c, &mut seq, &mut rng, &mut acked);
        killer.join().expect("killer thread");
        assert!(
            !c.wait().success(),
            "trial {trial}: the server was not killed"
        );

        let (data, rows, bad, torn_tail) = read_lines(&index);
        assert!(
            data.starts_with(&verified),
            "trial {trial}: earlier index bytes were rewritten ({} verified, {} now)",
            verified.len(),
            data.len()
        );
        if torn_tail && !tail_known {
            killed_mid_row += 1;
            fragments += 1;
        }
        tail_known = torn_tail;
        assert_eq!(
            bad + usize::from(torn_tail),
            fragments,
            "trial {trial}: a line other than the known fragments does not parse"
        );
        let by_note: HashMap<&str, &Map<String, Value>> = rows
            .iter()
            .filter_map(|r| Some((r.get("notes")?.as_str()?, r)))
            .collect();
        for a in &acked {
            let note = format!("seq={}", a.seq);
            let row = by_note.get(note.as_str()).unwrap_or_else(|| {
                panic!("trial {trial}: acknowledged deposit {note} has no index row")
            });
            assert_eq!(row["sha256"], json!(a.sha256), "trial {trial}: {note}");
            assert_eq!(row["label"], json!(a.label), "trial {trial}: {note}");
            let blob = root.join(format!(".resilient_write/scratch/{}.bin", a.sha256));
            assert_eq!(
                std::fs::read(&blob).ok().as_deref(),
                Some(a.content.as_slice()),
                "trial {trial}: the blob of {note} is not whole"
            );
        }
        deposits_checked += acked.len();
        verified = data;
        // Now and then tear a row on purpose, as a crash in the middle of one leaves it:
        // the next deposit must start on a line of its own.
        if !torn_tail && rng.range(0, 4) == 0 {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&index)
                .expect("open index");
            f.write_all(br#"{"bytes":9,"label":"torn-by-test","sha"#)
                .expect("tear index");
            fragments += 1;
            tail_known = true;
            verified = std::fs::read(&index).expect("read index");
        }
    }
    println!(
        "scratch crash: {trials} trials, {} deposits acknowledged, {deposits_checked} checks, \
         {fragments} fragments ({killed_mid_row} left by a kill)",
        acked.len()
    );
    assert!(
        acked.len() > trials as usize,
        "the kills left too few deposits"
    );

    // doctor --fix compacts: the fragments go, every acknowledged key stays, all counted.
    let o = common::run_cli(&root, &["doctor", "--fix"], &[]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        !text.contains("remains: scratch"),
        "doctor left a scratch problem:\n{text}"
    );
    let (_, rows, bad, torn_tail) = read_lines(&index);
    assert_eq!(
        (bad, torn_tail),
        (0, false),
        "doctor --fix left unreadable lines"
    );
    let mut deposits: HashMap<(String, String), u64> = HashMap::new();
    for r in &rows {
        let key = (
            r["sha256"].as_str().unwrap_or_default().to_string(),
            r["label"].as_str().unwrap_or_default().to_string(),
        );
        assert!(
            deposits
                .insert(key, r.get("deposits").and_then(Value::as_u64).unwrap_or(1))
                .is_none(),
            "two rows for one key after compaction"
        );
    }
    let mut want: HashMap<(String, String), u64> = HashMap::new();
    for a in &acked {
        *want.entry((a.sha256.clone(), a.label.clone())).or_default() += 1;
    }
    for (key, n) in &want {
        let got = deposits.get(key).copied().unwrap_or(0);
        // At least the acknowledged ones (a row whose answer the kill cut off counts too).
        assert!(
            got >= *n,
            "{key:?}: {got} deposits after compaction, {n} acknowledged"
        );
    }
    let last = acked.last().expect("a deposit");
    let mut c = Killable::start(&root, None).expect("server starts");
    let r = c
        .call("rw_scratch_ref", json!({"label": last.label}))
        .expect("scratch_ref");
    assert!(r["skipped_lines"].is_null(), "{r}");
    let by_sha = c
        .call("rw_scratch_ref", json!({"sha256": last.sha256}))
        .expect("scratch_ref");
    assert_eq!(by_sha["sha256"], json!(last.sha256));
    c.close();
}
