//! A hostile repository: objects planted in the workspace before the server starts must not
//! hang a call, redirect the server's state out of the workspace, or cost unbounded memory.
//!
//! - A named pipe (or socket, or a symlink to a device) in place of a state file or a
//!   workspace file: every tool that touches it answers within a second with a typed error
//!   (or without needing it), and the server keeps serving.
//! - A symlink in place of `.resilient_write/` or one of its directories: the server refuses
//!   to start (exit 2, the path named), `doctor` reports it, and nothing is created outside.
//!   A state root named explicitly (`--state-dir`) may be reached through a symlink.
//! - A scratch index line over the cap is reported as a bad line, not parsed.

mod common;

use common::{Workspace, bin};
use resilient_write::client::{ClientError, Launch, McpClient};
use serde_json::{Value, json};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A call must be answered well within this (a blocked open never is).
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

fn client(root: &Path) -> McpClient {
    Launch::new(bin())
        .cwd(root)
        .env("RW_WORKSPACE", "")
        .timeout(ANSWER_WITHIN)
        .spawn()
        .expect("start the server")
}

fn mkfifo(path: &Path) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    let _ = std::fs::remove_file(path);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

/// `tool` answers promptly: its envelope, or `None` when it succeeded.
fn answered(c: &mut McpClient, tool: &str, args: Value) -> Option<Value> {
    let started = Instant::now();
    let r = c.call(tool, args);
    let took = started.elapsed();
    match r {
        Ok(_) => None,
        Err(ClientError::Tool { envelope, .. }) => {
            assert!(took < ANSWER_WITHIN, "{tool} took {took:?}");
            Some(envelope)
        }
        Err(e) => panic!("{tool} did not answer: {e}"),
    }
}

/// The envelope refuses with a typed error naming the planted file.
fn refused_naming(env: Option<Value>, name: &str, tool: &str) {
    let env = env.unwrap_or_else(|| panic!("{tool} succeeded on a planted {name}"));
    let text = env.to_string();
    assert!(env["error"].is_string(), "{tool}: {env}");
    assert!(
        text.contains(name),
        "{tool}: the envelope does not name {name}: {env}"
    );
}

/// The server still serves an ordinary write after the planted object was met.
fn still_serving(c: &mut McpClient) {
    let p = format!("fine-{}.txt", std::process::id());
    c.call(
        "rw_safe_write",
        json!({"path": p, "content": "ok\n", "mode": "overwrite"}),
    )
    .expect("the server keeps serving");
}

#[test]
fn a_fifo_for_the_journal_is_a_typed_error_not_a_hang() {
    let ws = Workspace::new();
    let mut c = client(&ws.root);
    c.call(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "one\n"}),
    )
    .unwrap();
    mkfifo(&ws.path(".resilient_write/journal.jsonl"));
    for (tool, args) in [
        ("rw_journal_tail", json!({})),
        ("rw_analytics", json!({})),
        ("rw_history", json!({"path": "a.txt"})),
        (
            "rw_restore",
            json!({"path": "a.txt", "to_sha256": "0123456789abcdef"}),
        ),
        (
            "rw_safe_write",
            json!({"path": "b.txt", "content": "two\n"}),
        ),
    ] {
        refused_naming(answered(&mut c, tool, args), "journal.jsonl", tool);
    }
    // A transaction stages without the journal; its commit needs it and is refused whole.
    let tx = c.call("rw_tx_begin", json!({})).unwrap();
    let tx_id = tx["tx_id"].as_str().unwrap().to_string();
    c.call(
        "rw_tx_write",
        json!({"tx_id": tx_id, "path": "c.txt", "content": "three\n"}),
    )
    .unwrap();
    refused_naming(
        answered(&mut c, "rw_tx_commit", json!({"tx_id": tx_id})),
        "journal.jsonl",
        "tx_commit",
    );
    assert!(!ws.path("c.txt").exists());
    // The refused write left no file behind.
    assert!(!ws.path("b.txt").exists());
    drop(c);
    // A server started over the planted pipe answers too.
    let mut c = client(&ws.root);
    refused_naming(
        answered(&mut c, "rw_journal_tail", json!({})),
        "journal.jsonl",
        "journal_tail after restart",
    );
}

#[test]
fn a_fifo_for_the_scratch_index_is_a_typed_error_and_the_server_keeps_serving() {
    let ws = Workspace::new();
    let mut c = client(&ws.root);
    c.call("rw_scratch_put", json!({"content": "x", "label": "l"}))
        .unwrap();
    mkfifo(&ws.path(".resilient_write/scratch/index.jsonl"));
    refused_naming(
        answered(&mut c, "rw_scratch_ref", json!({"label": "l"})),
        "index.jsonl",
        "scratch_ref",
    );
    refused_naming(
        answered(&mut c, "rw_scratch_put", json!({"content": "y"})),
        "index.jsonl",
        "scratch_put",
    );
    still_serving(&mut c);
}

#[test]
fn a_fifo_for_a_chunk_part_is_a_typed_error() {
    let ws = Workspace::new();
    let mut c = client(&ws.root);
    c.call(
        "rw_chunk_write",
        json!({"session": "s", "index": 1, "content": "a"}),
    )
    .unwrap();
    c.call(
        "rw_chunk_write",
        json!({"session": "s", "index": 2, "content": "b"}),
    )
    .unwrap();
    let part = std::fs::read_dir(ws.path(".resilient_write/chunks/s"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with("part-") && n.to_string_lossy().contains('2')
            })
        })
        .expect("part 2");
    let name = part.file_name().unwrap().to_string_lossy().into_owned();
    mkfifo(&part);
    for (tool, args) in [
        ("rw_chunk_preview", json!({"session": "s"})),
        (
            "rw_chunk_compose",
            json!({"session": "s", "output_path": "out.txt"}),
        ),
    ] {
        refused_naming(answered(&mut c, tool, args), &name, tool);
    }
    // chunk_status lists what is there without reading the part's content.
    let _ = answered(&mut c, "rw_chunk_status", json!({"session": "s"}));
    assert!(!ws.path("out.txt").exists());
    still_serving(&mut c);
}

#[test]
fn a_fifo_for_a_checkpoint_or_a_workspace_file_is_a_typed_error() {
    let ws = Workspace::new();
    let mut c = client(&ws.root);
    c.call("rw_checkpoint", json!({"name": "cp", "data": {"a": 1}}))
        .unwrap();
    let cp = std::fs::read_dir(ws.path(".resilient_write/checkpoints"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("cp."))
        })
        .expect("the checkpoint file");
    mkfifo(&cp);
    refused_naming(
        answered(&mut c, "rw_checkpoint_read", json!({"name": "cp"})),
        "cp",
        "checkpoint_read",
    );
    let _ = answered(&mut c, "rw_checkpoint_list", json!({}));
    // A pipe in the workspace itself, where a tool would read or replace a file.
    mkfifo(&ws.path("pipe.txt"));
    for (tool, args) in [
        (
            "rw_safe_write",
            json!({"path": "pipe.txt", "content": "x", "mode": "overwrite"}),
        ),
        (
            "rw_safe_replace",
            json!({"path": "pipe.txt", "old_string": "a", "new_string": "b"}),
        ),
        ("rw_handoff_read", json!({"path": "pipe.txt"})),
    ] {
        assert!(
            answered(&mut c, tool, args).is_some(),
            "{tool} succeeded on a pipe"
        );
    }
    still_serving(&mut c);
}

#[test]
fn a_socket_or_a_device_symlink_for_a_state_file_is_refused() {
    let ws = Workspace::new();
    let mut c = client(&ws.root);
    c.call("rw_scratch_put", json!({"content": "x", "label": "l"}))
        .unwrap();
    let index = ws.path(".resilient_write/scratch/index.jsonl");
    std::fs::remove_file(&index).unwrap();
    let _sock = UnixListener::bind(&index).unwrap();
    refused_naming(
        answered(&mut c, "rw_scratch_ref", json!({"label": "l"})),
        "index.jsonl",
        "scratch_ref (socket)",
    );
    std::fs::remove_file(&index).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &index).unwrap();
    refused_naming(
        answered(&mut c, "rw_scratch_ref", json!({"label": "l"})),
        "index.jsonl",
        "scratch_ref (device symlink)",
    );
    still_serving(&mut c);
}

#[test]
fn a_fifo_policy_file_does_not_hang_the_start() {
    let ws = Workspace::new();
    mkfifo(&ws.path(".resilient_write/policy.yaml"));
    let started = Instant::now();
    let mut c = client(&ws.root);
    assert!(started.elapsed() < ANSWER_WITHIN);
    // The policy is unusable: classifying tools say so; plain writes work.
    let env = answered(&mut c, "rw_risk_score", json!({"content": "x"}))
        .expect("risk_score refuses while the policy is unusable");
    assert!(env.to_string().contains("policy.yaml"), "{env}");
    still_serving(&mut c);
}

// ---- planted symlinks for the state directory -------------------------------------------------

fn outside_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Runs the binary with `args` in `root`; (exit code, stderr).
fn run(root: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .args(args)
        .current_dir(root)
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn planted(ws: &Workspace, what: &str) -> (PathBuf, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    let link = ws.path(what);
    if let Some(dir) = link.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::os::unix::fs::symlink(outside.path(), &link).unwrap();
    (link, outside)
}

fn assert_refused_everywhere(ws: &Workspace, outside: &Path, named: &str) {
    // The server refuses to start (stdin closed at once: it must not serve).
    let (code, _, err) = run(&ws.root, &["serve"]);
    assert_eq!(code, 2, "serve: {err}");
    assert!(err.contains(named), "serve names {named}: {err}");
    for args in [&["journal"][..], &["history", "a.txt"], &["analytics"]] {
        let (code, _, err) = run(&ws.root, args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
    let (code, out, _) = run(&ws.root, &["doctor"]);
    assert_eq!(code, 1, "doctor: {out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("PROBLEM") && l.contains("state_dir") && l.contains(named)),
        "doctor: {out}"
    );
    let (code, _, _) = run(&ws.root, &["doctor", "--fix"]);
    assert_eq!(code, 1);
    assert_eq!(
        outside_entries(outside),
        Vec::<String>::new(),
        "something was created outside"
    );
}

#[test]
fn a_symlinked_state_directory_is_refused_and_nothing_lands_outside() {
    let ws = Workspace::new();
    let (_, outside) = planted(&ws, ".resilient_write");
    assert_refused_everywhere(&ws, outside.path(), ".resilient_write");
}

#[test]
fn a_symlink_for_any_state_subdirectory_is_refused() {
    for sub in resilient_write_core::layout::STATE_SUBDIRS {
        let ws = Workspace::new();
        std::fs::create_dir_all(ws.path(".resilient_write")).unwrap();
        let (_, outside) = planted(&ws, &format!(".resilient_write/{sub}"));
        assert_refused_everywhere(&ws, outside.path(), sub);
    }
}

#[test]
fn an_explicit_state_root_may_be_reached_through_a_symlink() {
    let ws = Workspace::new();
    let real = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(real.path().join("state")).unwrap();
    std::os::unix::fs::symlink(real.path().join("state"), ws.path(".resilient_write")).unwrap();
    let state_root = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        real.path().join("state"),
        state_root.path().join(".resilient_write"),
    )
    .unwrap();
    let mut c = Launch::new(bin())
        .cwd(&ws.root)
        .arg("--state-dir")
        .arg(state_root.path())
        .timeout(ANSWER_WITHIN)
        .spawn()
        .unwrap();
    c.call("rw_safe_write", json!({"path": "a.txt", "content": "x\n"}))
        .expect("an explicit state root is the operator's choice");
    assert!(real.path().join("state/journal.jsonl").is_file());
}

#[test]
fn the_subdirectory_list_names_every_state_directory() {
    let mut known = vec![
        resilient_write_core::objects::OBJECTS_DIR,
        resilient_write_core::tx::WAL_DIR,
        resilient_write_core::scratch::SCRATCH_DIR,
        resilient_write_core::chunks::CHUNKS_DIR,
        resilient_write_core::checkpoint::doc::CHECKPOINT_DIR,
        resilient_write_core::handoff::disk::ARCHIVE_DIR,
        resilient_write_core::native::HOOKS_DIR,
    ];
    known.sort();
    let mut listed = resilient_write_core::layout::STATE_SUBDIRS.to_vec();
    listed.sort();
    assert_eq!(listed, known);
}

// ---- oversized lines --------------------------------------------------------------------------

#[test]
fn a_scratch_index_line_over_the_cap_is_reported_not_parsed() {
    let ws = Workspace::new();
    let mut c = client(&ws.root);
    let put = c
        .call("rw_scratch_put", json!({"content": "x", "label": "keep"}))
        .unwrap();
    let index = ws.path(".resilient_write/scratch/index.jsonl");
    let mut text = std::fs::read(&index).unwrap();
    let huge = format!("{{\"sha256\": \"{}\"}}\n", "a".repeat(3 << 20));
    text.extend_from_slice(huge.as_bytes());
    std::fs::write(&index, &text).unwrap();
    let r = c.call("rw_scratch_ref", json!({"label": "keep"})).unwrap();
    assert_eq!(r["sha256"], put["sha256"], "{r}");
    let skipped = r["skipped_lines"]
        .as_array()
        .expect("the bad line is reported");
    assert_eq!(skipped.len(), 1, "{r}");
    assert_eq!(skipped[0]["line"], 2);
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{r}"
    );
}

#[test]
fn a_fifo_for_a_stored_version_or_a_scratch_blob_is_a_typed_error() {
    let ws = Workspace::new();
    let mut c = client(&ws.root);
    let one = c
        .call(
            "rw_safe_write",
            json!({"path": "a.txt", "content": "one\n"}),
        )
        .unwrap();
    let one_sha = one["sha256"].as_str().unwrap().to_string();
    c.call(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "two\n", "mode": "overwrite"}),
    )
    .unwrap();
    let object = ws
        .path(".resilient_write/objects")
        .join(&one_sha[..2])
        .join(&one_sha);
    assert!(object.is_file(), "the pre-image is stored at {object:?}");
    std::fs::remove_file(&object).unwrap();
    mkfifo(&object);
    refused_naming(
        answered(
            &mut c,
            "rw_restore",
            json!({"path": "a.txt", "to_sha256": one_sha}),
        ),
        &one_sha,
        "restore from a planted object",
    );
    assert_eq!(std::fs::read_to_string(ws.path("a.txt")).unwrap(), "two\n");

    let put = c
        .call("rw_scratch_put", json!({"content": "kept", "label": "k"}))
        .unwrap();
    let sha = put["sha256"].as_str().unwrap().to_string();
    let blob = ws.path(&format!(".resilient_write/scratch/{sha}.bin"));
    std::fs::remove_file(&blob).unwrap();
    mkfifo(&blob);
    refused_naming(
        answered(&mut c, "rw_scratch_get", json!({"sha256": sha})),
        &sha,
        "scratch_get of a planted blob",
    );
    still_serving(&mut c);
}

#[test]
fn a_fifo_for_the_result_log_refuses_keyed_calls_only() {
    let ws = Workspace::new();
    let mut c = client(&ws.root);
    c.call("rw_checkpoint", json!({"name": "cp", "data": {"a": 1}}))
        .unwrap();
    mkfifo(&ws.path(".resilient_write/idempotency.jsonl"));
    refused_naming(
        answered(
            &mut c,
            "rw_checkpoint",
            json!({"name": "cp2", "data": {"b": 2}, "idempotency_key": "k-1"}),
        ),
        "idempotency.jsonl",
        "keyed checkpoint",
    );
    // A call without a key never reads the result log.
    c.call("rw_checkpoint", json!({"name": "cp3", "data": {"c": 3}}))
        .expect("an unkeyed call is served");
    still_serving(&mut c);
}

/// `run`, killing the process if it has not exited within `secs` (a hang fails the test
/// instead of holding the suite).
fn run_within(root: &Path, args: &[&str], secs: u64) -> (i32, String) {
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(root)
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
            return (status.code().unwrap_or(-1), out);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} did not finish within {secs}s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn doctor_reports_each_planted_pipe_without_hanging() {
    let ws = Workspace::new();
    let mut c = client(&ws.root);
    c.call("rw_scratch_put", json!({"content": "x", "label": "l"}))
        .unwrap();
    drop(c);
    for f in ["journal.jsonl", "scratch/index.jsonl", "idempotency.jsonl"] {
        let p = ws.path(&format!(".resilient_write/{f}"));
        let _ = std::fs::remove_file(&p);
        mkfifo(&p);
    }
    let (code, out) = run_within(&ws.root, &["doctor"], 20);
    assert_eq!(code, 1, "doctor: {out}");
    for f in ["journal.jsonl", "index.jsonl", "idempotency.jsonl"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with("PROBLEM") && l.contains(f) && l.contains("named pipe")),
            "doctor names the pipe {f}: {out}"
        );
    }
    assert!(out.contains("fix: remove it by hand"), "doctor: {out}");
    assert!(
        !out.contains("permissions"),
        "a pipe is no permission problem: {out}"
    );
    let (code, _) = run_within(&ws.root, &["doctor", "--fix"], 20);
    assert_eq!(code, 1, "--fix leaves a planted pipe to the user");
    assert!(
        std::fs::symlink_metadata(ws.path(".resilient_write/journal.jsonl"))
            .unwrap()
            .file_type()
            .is_fifo(),
        "--fix does not remove what it did not make"
    );
}
