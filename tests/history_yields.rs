//! History never costs a write its room (issues 40 and 45): pre-images are a cache that yields
//! on whichever filesystem holds `.resilient_write/`, while the records (the journal) are never
//! dropped. Real small tmpfs filesystems (root; under CI a missing prerequisite fails), plus
//! the `enospc_journal:N` fault for the journal append.

mod common;

use common::tmpfs::{Tmpfs, fill};
use common::{Server, Workspace, journal_rows, run_cli, sha256};
use serde_json::{Value, json};
use std::path::Path;

/// Objects in the store under `state_root`.
fn objects(state_root: &Path) -> usize {
    let Ok(fans) = std::fs::read_dir(state_root.join(".resilient_write/objects")) else {
        return 0;
    };
    fans.flatten()
        .flat_map(|f| std::fs::read_dir(f.path()).into_iter().flatten().flatten())
        .filter(|e| e.file_name().len() == 64)
        .count()
}

/// A text of `n` bytes that differs for every `i`.
fn body(i: usize, n: usize) -> String {
    let head = format!("version {i}\n");
    format!("{head}{}", "x".repeat(n.saturating_sub(head.len())))
}

/// The disk-full envelope: `quota_exceeded`, naming the filesystem, what it holds and the
/// bytes the write needs.
fn assert_disk_full(env: &Value, mount: &Path, holds: &str) {
    assert_eq!(env["error"], json!("quota_exceeded"), "{env}");
    assert_eq!(env["reason_hint"], json!("size_limit"), "{env}");
    let c = &env["context"];
    assert_eq!(c["reason"], json!("disk_full"), "{env}");
    assert_eq!(c["errno"], json!(28), "{env}");
    assert_eq!(c["filesystem"], json!(mount.display().to_string()), "{env}");
    assert!(
        c["holds"].as_str().is_some_and(|h| h.contains(holds)),
        "{env}"
    );
    assert!(c["needed_bytes"].as_u64().is_some_and(|n| n > 0), "{env}");
    let message = c["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&mount.display().to_string()) && message.contains("free space"),
        "the message names the disk and the way out: {env}"
    );
}

/// Every acknowledged write of `acked` (sha256s in order) has its row, in order.
fn assert_every_ack_has_its_row(state_root: &Path, path: &str, acked: &[String]) {
    let rows: Vec<String> = journal_rows(state_root)
        .iter()
        .filter(|r| r["path"] == json!(path))
        .map(|r| r["sha256"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(rows, acked, "one row per acknowledged write of {path}");
}

/// Where the state lives for a scenario: on a tmpfs of its own (`--state-dir`), or on the
/// workspace's tmpfs.
struct Setup {
    /// The tmpfs the state is on.
    state_fs: Tmpfs,
    /// A separate workspace, when the state has a filesystem of its own.
    ws: Option<Workspace>,
}

impl Setup {
    fn root(&self) -> &Path {
        self.ws.as_ref().map_or(&self.state_fs.dir, |w| &w.root)
    }

    fn server(&self) -> Server {
        let state = self.state_fs.dir.to_str().expect("utf-8 path");
        match &self.ws {
            Some(ws) => Server::start(&ws.root, &[], &[("RW_STATE_DIR", state)]),
            None => Server::start(&self.state_fs.dir, &[], &[]),
        }
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root().join(path)).unwrap()
    }
}

/// The first scenario: 80 overwrites of one 700-byte file with the state on a 64 KiB
/// filesystem keep succeeding; then a filler takes the rest of that filesystem: writes go on
/// while history has something to give up, then fail with the typed envelope naming the disk,
/// nothing half-done and the server still serving; the filler removed, the next write
/// succeeds. Every acknowledged write has its row. (After the filler the writes are creates:
/// an overwrite pays for its own pre-image by dropping an older one, so on a full disk
/// overwrites go on until the journal alone fills it; a create needs room history must give.)
fn a_full_state_disk_never_locks_writes_out(setup: Setup, fs_size_note: &str) {
    let mut s = setup.server();
    let mut acked = Vec::new();
    for i in 0..80 {
        let mode = if i == 0 { "create" } else { "overwrite" };
        let content = body(i, 700);
        let r = s.call_raw(
            "rw_safe_write",
            json!({"path": "note.txt", "content": content, "mode": mode}),
        );
        assert_ne!(
            r["isError"],
            json!(true),
            "overwrite {i} of 80 failed ({fs_size_note}): {r}"
        );
        acked.push(sha256(content.as_bytes()));
    }
    assert_eq!(setup.read("note.txt"), body(79, 700));
    assert!(
        objects(&setup.state_fs.dir) > 0,
        "history is kept meanwhile"
    );
    assert_every_ack_has_its_row(&setup.state_fs.dir, "note.txt", &acked);

    let filler = fill(&setup.state_fs.dir);
    assert!(
        std::fs::metadata(&filler).unwrap().len() > 0,
        "history left its floor free for the filler to take"
    );
    let mut created = Vec::new();
    let (at, env) = loop {
        let i = created.len();
        let path = format!("new{i}.txt");
        let content = body(i, 700);
        let r = s.call_raw("rw_safe_write", json!({"path": path, "content": content}));
        if r["isError"] == json!(true) {
            break (i, r["structuredContent"].clone());
        }
        created.push((path, sha256(content.as_bytes())));
        assert!(i < 2000, "the disk never filled ({fs_size_note})");
    };
    assert_eq!(
        objects(&setup.state_fs.dir),
        0,
        "the write at {at} failed while history still held pre-images"
    );
    let holds = if setup.ws.is_some() {
        "state"
    } else {
        "workspace and the state"
    };
    assert_disk_full(&env, &setup.state_fs.dir, holds);
    assert!(!setup.root().join(format!("new{at}.txt")).exists());
    assert_eq!(setup.read("note.txt"), body(79, 700), "untouched");
    // Still serving: a call that writes nothing answers.
    let score = s.ok("rw_risk_score", json!({"content": "hello"}));
    assert_eq!(score["verdict"], json!("safe"));

    std::fs::remove_file(filler).unwrap();
    let content = body(1000, 700);
    s.ok(
        "rw_safe_write",
        json!({"path": "note.txt", "content": content, "mode": "overwrite"}),
    );
    acked.push(sha256(content.as_bytes()));
    assert_eq!(setup.read("note.txt"), content);
    assert_every_ack_has_its_row(&setup.state_fs.dir, "note.txt", &acked);
    for (path, sha) in &created {
        assert_every_ack_has_its_row(&setup.state_fs.dir, path, std::slice::from_ref(sha));
    }
}

#[test]
fn a_full_state_disk_of_its_own_never_locks_writes_out() {
    let state_fs = tmpfs_or_skip!("64k");
    // 5% of 64 KiB is less than a page: a floor of three pages leaves the filler room.
    std::fs::create_dir_all(state_fs.dir.join(".resilient_write")).unwrap();
    std::fs::write(
        state_fs.dir.join(".resilient_write/policy.yaml"),
        "version: 1\nhistory:\n  min_free: 12k\n",
    )
    .unwrap();
    a_full_state_disk_never_locks_writes_out(
        Setup {
            state_fs,
            ws: Some(Workspace::new()),
        },
        "state on its own 64 KiB tmpfs",
    );
}

#[test]
fn a_full_disk_shared_with_the_workspace_never_locks_writes_out() {
    let state_fs = tmpfs_or_skip!("256k");
    a_full_state_disk_never_locks_writes_out(
        Setup { state_fs, ws: None },
        "state and workspace on one 256 KiB tmpfs",
    );
}

/// The injected `enospc_journal:1` fault: the journal append fails once. With pre-images in
/// the store, history yields and the write succeeds, its result and row naming what was
/// dropped; with none, the write fails typed, and the next one (the fault spent) succeeds.
#[test]
fn an_injected_full_journal_is_answered_by_history_yielding() {
    if !common::faults_compiled_in() {
        return;
    }
    let ws = Workspace::new();
    let mut s = Server::start(&ws.root, &[], &[]);
    for i in 0..4 {
        let mode = if i == 0 { "create" } else { "overwrite" };
        s.ok(
            "rw_safe_write",
            json!({"path": "t.txt", "content": body(i, 100), "mode": mode}),
        );
    }
    assert_eq!(objects(&ws.root), 3);
    drop(s);

    let mut s = Server::start(&ws.root, &[], &[("RW_FAULT_INJECT", "enospc_journal:1")]);
    let out = s.ok(
        "rw_safe_write",
        json!({"path": "t.txt", "content": body(4, 100), "mode": "overwrite"}),
    );
    assert!(
        out["warnings"].to_string().contains("history_pruned"),
        "{out}"
    );
    let last = journal_rows(&ws.root).pop().unwrap();
    let named = last["history_pruned"]["sha256"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!named.is_empty(), "the row names what was dropped: {last}");
    assert_eq!(
        named[0],
        json!(sha256(body(0, 100).as_bytes())),
        "oldest first: {last}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("t.txt")).unwrap(),
        body(4, 100)
    );
    drop(s);

    // Nothing to drop: typed failure, the file intact; the fault spent, the next write lands.
    let empty = Workspace::new();
    std::fs::write(empty.path("u.txt"), "old\n").unwrap();
    let mut s = Server::start(&empty.root, &[], &[("RW_FAULT_INJECT", "enospc_journal:1")]);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "u.txt", "content": "new\n", "mode": "overwrite"}),
    );
    assert_eq!(env["error"], json!("quota_exceeded"), "{env}");
    assert_eq!(env["context"]["reason"], json!("disk_full"), "{env}");
    assert!(
        env["context"]["holds"]
            .as_str()
            .is_some_and(|h| h.contains("state")),
        "{env}"
    );
    assert_eq!(
        std::fs::read_to_string(empty.path("u.txt")).unwrap(),
        "old\n"
    );
    assert!(journal_rows(&empty.root).is_empty());
    s.ok(
        "rw_safe_write",
        json!({"path": "u.txt", "content": "new\n", "mode": "overwrite"}),
    );
    assert_eq!(
        std::fs::read_to_string(empty.path("u.txt")).unwrap(),
        "new\n"
    );
}

/// The common case of issue 45, scaled down: workspace and state on one small tmpfs, many
/// files with a pre-image each, the disk then filled by something else to a few KiB free.
/// Overwrites keep succeeding (each new pre-image is paid for by older ones); creates, which
/// add no history, make history give up room until it is empty, and only then fail typed;
/// once space is freed, writes succeed again.
#[test]
fn a_nearly_full_disk_takes_writes_while_history_has_room_to_give() {
    let fs = tmpfs_or_skip!("4m");
    let mut s = Server::start(&fs.dir, &[], &[]);
    for i in 0..300 {
        let p = format!("src/f{i}.txt");
        s.ok("rw_safe_write", json!({"path": p, "content": body(i, 200)}));
        s.ok(
            "rw_safe_write",
            json!({"path": p, "content": body(i + 1000, 200), "mode": "overwrite"}),
        );
    }
    assert_eq!(objects(&fs.dir), 300);
    // Something else fills the disk, leaving about 40 KiB.
    let filler = fill(&fs.dir);
    let free = |d: &Path| {
        rustix::fs::statvfs(d)
            .map(|v| v.f_bavail * v.f_frsize)
            .unwrap_or(0)
    };
    let keep_free = 40 * 1024;
    if free(&fs.dir) < keep_free {
        let len = std::fs::metadata(&filler).unwrap().len();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&filler)
            .unwrap();
        f.set_len(len.saturating_sub(keep_free)).unwrap();
    }

    for i in 0..100 {
        let p = format!("src/f{}.txt", i % 300);
        let r = s.call_raw(
            "rw_safe_write",
            json!({"path": p, "content": body(i + 5000, 200), "mode": "overwrite"}),
        );
        assert_ne!(r["isError"], json!(true), "overwrite {i} failed: {r}");
    }
    assert!(objects(&fs.dir) > 0, "overwrites pay for their pre-images");

    let mut created = 0;
    let env = loop {
        let r = s.call_raw(
            "rw_safe_write",
            json!({"path": format!("new/n{created}.txt"), "content": body(created, 3000)}),
        );
        if r["isError"] == json!(true) {
            break r["structuredContent"].clone();
        }
        created += 1;
        assert!(created < 5000, "the disk never filled");
    };
    assert!(created > 10, "history gave room to {created} creates only");
    assert_eq!(
        objects(&fs.dir),
        0,
        "a create failed while history still held pre-images: {env}"
    );
    assert_disk_full(&env, &fs.dir, "workspace and the state");
    assert!(!fs.dir.join(format!("new/n{created}.txt")).exists());

    std::fs::remove_file(filler).unwrap();
    s.ok(
        "rw_safe_write",
        json!({"path": format!("new/n{created}.txt"), "content": "fits\n"}),
    );
}

/// `doctor` shows the state's filesystem and reports a problem when it is below history's
/// floor; `doctor --fix` drops the oldest versions until the floor is free again.
#[test]
fn doctor_reports_a_state_disk_below_the_floor_and_fix_restores_it() {
    let fs = tmpfs_or_skip!("1m");
    std::fs::create_dir_all(fs.dir.join(".resilient_write")).unwrap();
    std::fs::write(
        fs.dir.join(".resilient_write/policy.yaml"),
        "version: 1\nhistory:\n  min_free: 40%\n",
    )
    .unwrap();
    let mut s = Server::start(&fs.dir, &[], &[]);
    for i in 0..8 {
        let mode = if i == 0 { "create" } else { "overwrite" };
        s.ok(
            "rw_safe_write",
            json!({"path": "big.txt", "content": body(i, 48 * 1024), "mode": mode}),
        );
    }
    drop(s);
    assert_eq!(objects(&fs.dir), 7);
    // Something else leaves 20% of the disk free: below the 40% floor.
    let filler = fs.dir.join("filler.bin");
    let free = rustix::fs::statvfs(&fs.dir)
        .map(|v| v.f_bavail * v.f_frsize)
        .unwrap();
    std::fs::write(&filler, vec![0u8; (free - 200 * 1024) as usize]).unwrap();

    let out = run_cli(&fs.dir, &["doctor"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "a problem: {text}");
    assert!(text.contains("state disk: "), "{text}");
    assert!(text.contains("BELOW THE FLOOR"), "{text}");
    assert!(text.contains("min_free 40%"), "{text}");
    assert!(
        text.lines().any(|l| l.contains("PROBLEM")
            && l.contains("disk")
            && l.contains("below history's floor")),
        "{text}"
    );
    let json_out = run_cli(&fs.dir, &["doctor", "--json"], &[]);
    let doc: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(
        doc["history_store"]["disk"]["below_floor"],
        json!(true),
        "{doc}"
    );
    assert_eq!(
        doc["history_store"]["disk"]["mount"],
        json!(fs.dir.display().to_string())
    );

    let fixed = run_cli(&fs.dir, &["doctor", "--fix"], &[]);
    let text = String::from_utf8_lossy(&fixed.stdout);
    assert!(fixed.status.success(), "{text}");
    assert!(objects(&fs.dir) < 7, "the oldest versions went");
    let v = rustix::fs::statvfs(&fs.dir).unwrap();
    assert!(
        v.f_bavail * 10 >= v.f_blocks * 4,
        "the floor is free again: {} of {} blocks",
        v.f_bavail,
        v.f_blocks
    );
}
