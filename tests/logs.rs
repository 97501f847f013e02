//! The operator's log never carries a secret whole (SPEC section 10), at every level: a whole
//! session at `trace` (with `RUST_LOG=trace` as well) over stdio, with secret-bearing content
//! in every kind of call, leaves no secret and no file content in `--log-file` or on stderr,
//! while the log does record each call (tool, size, outcome).

mod common;

use common::{ALNUM, Server, Workspace, bin, chars, github_token};
use serde_json::json;
use std::io::Write;
use std::process::{Command, Stdio};

const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

struct Secrets {
    github: String,
    aws_id: String,
    aws_secret: String,
    marker: String,
}

fn secrets(seed: u64) -> Secrets {
    Secrets {
        github: github_token(seed),
        aws_id: format!("{}{}", "AKIA", chars(seed + 1, UPPER_DIGITS, 16)),
        aws_secret: chars(seed + 2, ALNUM, 40),
        marker: format!("plain-content-{}", chars(seed + 3, ALNUM, 24)),
    }
}

impl Secrets {
    fn draft(&self) -> String {
        format!(
            "# {}\ntoken = \"{}\"\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            self.marker, self.github, self.aws_id, self.aws_secret
        )
    }

    fn assert_absent(&self, log: &str, what: &str) {
        for (name, s) in [
            ("GitHub token", &self.github),
            ("AWS key id", &self.aws_id),
            ("AWS secret", &self.aws_secret),
            ("file content", &self.marker),
        ] {
            if let Some(line) = log.lines().find(|l| l.contains(s.as_str())) {
                panic!("{what} carries the {name} whole: {line}");
            }
        }
    }
}

#[test]
fn a_trace_level_session_logs_calls_but_no_secret_and_no_content() {
    let ws = Workspace::new();
    let log = ws.root.join("server.log");
    let log_arg = log.to_string_lossy().into_owned();
    let s = secrets(11);
    let draft = s.draft();
    let mut srv = Server::start(
        &ws.root,
        &["--log-level", "trace", "--log-file", &log_arg],
        &[("RUST_LOG", "trace")],
    );
    srv.ok("rw_safe_write", json!({"path": "a.env", "content": draft}));
    srv.ok(
        "rw_safe_replace",
        json!({"path": "a.env", "old_string": s.marker, "new_string": s.github}),
    );
    srv.err(
        "rw_safe_write",
        json!({"path": "b.env", "content": draft, "classify": true, "classify_reject_at": "medium"}),
    );
    srv.ok("rw_risk_score", json!({"content": draft}));
    srv.ok("rw_redact", json!({"content": draft}));
    srv.ok(
        "rw_validate",
        json!({"content": draft, "format_hint": "toml"}),
    );
    let put = srv.ok("rw_scratch_put", json!({"content": draft, "label": "keys"}));
    srv.ok("rw_scratch_get", json!({"sha256": put["sha256"]}));
    srv.ok(
        "rw_chunk_write",
        json!({"session": "s1", "index": 1, "content": draft}),
    );
    srv.ok(
        "rw_chunk_compose",
        json!({"session": "s1", "output_path": "c.env"}),
    );
    srv.ok(
        "rw_checkpoint",
        json!({"name": "cp", "data": {"note": s.marker}}),
    );
    srv.ok("rw_checkpoint_read", json!({"name": "cp"}));
    srv.ok("rw_journal_tail", json!({}));
    // A frame the server cannot parse, secret inside.
    srv.send_raw(&format!(
        "{{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": \"{}\"",
        s.github
    ));
    srv.ok("rw_journal_tail", json!({"n": 1}));
    srv.shutdown();

    let text = std::fs::read_to_string(&log).expect("the log file");
    s.assert_absent(&text, "the log file");
    // The log is not silent: each call is recorded by tool, with its size and outcome.
    assert!(
        text.lines()
            .any(|l| l.contains("tool=rw_safe_write") && l.contains("arg_bytes=")),
        "no call line in the log:\n{text}"
    );
    assert!(
        text.lines().any(|l| l.contains("tool=rw_safe_write")
            && l.contains("failed")
            && l.contains("Blocked")),
        "no refusal line in the log:\n{text}"
    );
}

#[test]
fn stderr_at_trace_carries_no_secret() {
    let ws = Workspace::new();
    let s = secrets(23);
    let draft = s.draft();
    let frames = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "rw_safe_write", "arguments": {"path": "a.env", "content": draft}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "rw_scratch_put", "arguments": {"content": draft}}}),
    ];
    let mut child = Command::new(bin())
        .args(["--log-level", "trace"])
        .current_dir(&ws.root)
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .env("RUST_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    for f in &frames {
        writeln!(stdin, "{f}").expect("write a frame");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"id\":3"),
        "the calls were answered: {stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    s.assert_absent(&stderr, "stderr");
    assert!(
        stderr.contains("tool=rw_scratch_put"),
        "stderr logged no call:\n{stderr}"
    );
}
