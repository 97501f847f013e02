//! The real binary over stdio: validate, handoff_write/handoff_read (drift, archive, L0,
//! dependency graph), the resume prompt and handoff resource, checkpoints, with the envelope for
//! each kind of bad input. Analytics and its CLI are `tests/analytics.rs`.

mod common;

use base64::Engine;
use common::{Server, Workspace, journal_rows, sha256};
use serde_json::{Value, json};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn envelope(ws: &Workspace) -> Value {
    std::fs::write(ws.path("src.rs"), "fn main() {}\n").unwrap();
    json!({
        "task_id": "telemetry-report",
        "status": "partial",
        "agent": "claude-opus-4-6",
        "summary": "19-page report complete; appendix pending",
        "next_steps": ["write the appendix", "compile the PDF"],
        "last_good_state": [{"path": "src.rs", "sha256": sha256(b"fn main() {}\n"), "bytes": 13}],
    })
}

// ---- validate ----

#[test]
fn validate_reports_valid_json_with_ok_true() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = s.ok(
        "rw_validate",
        json!({"content": "{\"a\": [1, 2]}", "format_hint": "json"}),
    );
    assert_eq!(r["valid"], true);
    assert_eq!(r["format"], "json");
    assert_eq!(r["errors"], json!([]));
    assert!(r["summary"].is_string());
}

#[test]
fn validate_reports_broken_json_as_invalid_with_line_and_col_still_ok_true() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = s.ok(
        "rw_validate",
        json!({"content": "{\n  \"a\": 1,\n}\n", "format_hint": "json"}),
    );
    assert_eq!(r["ok"], true);
    assert_eq!(r["valid"], false);
    let e = &r["errors"][0];
    assert_eq!(e["line"], 3);
    assert!(e["col"].as_u64().unwrap() >= 1);
    assert_eq!(e["severity"], "error");
}

#[test]
fn validate_picks_yaml_from_the_target_path_extension() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = s.ok(
        "rw_validate",
        json!({"content": "a: 1\na: 2\n", "target_path": "conf/app.yml"}),
    );
    assert_eq!(r["format"], "yaml");
    assert_eq!(r["valid"], false);
}

#[test]
fn validate_finds_a_python_syntax_error() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = s.ok(
        "rw_validate",
        json!({"content": "def f(:\n    return 1\n", "format_hint": "python"}),
    );
    assert_eq!(r["format"], "python");
    assert_eq!(r["valid"], false);
    assert_eq!(r["errors"][0]["line"], 1);
}

#[test]
fn validate_reports_non_utf8_base64_content_as_invalid_not_as_an_error() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = s.ok(
        "rw_validate",
        json!({"content": b64(b"{\"a\":\n \"\xff\"}"), "encoding": "base64", "format_hint": "json"}),
    );
    assert_eq!(r["valid"], false);
    assert_eq!(r["errors"][0]["line"], 2);
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("UTF-8")
    );
    let ok = s.ok(
        "rw_validate",
        json!({"content": b64(b"[1, 2]"), "encoding": "base64", "format_hint": "json"}),
    );
    assert_eq!(ok["valid"], true);
}

#[test]
fn validate_reports_a_lone_surrogate_in_content_as_invalid() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.send_raw(
        r#"{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{"name":"rw_validate","arguments":{"content":"[1,\n\ud800]","format_hint":"json"}}}"#,
    );
    let r = s.read_response(900);
    let sc = &r["result"]["structuredContent"];
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(sc["valid"], false);
    assert_eq!(sc["errors"][0]["line"], 2);
}

#[test]
fn validate_refuses_bad_base64_with_an_encoding_envelope() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let env = s.err(
        "rw_validate",
        json!({"content": "%%%", "encoding": "base64"}),
    );
    assert_eq!(env["error"], "policy_violation");
    assert_eq!(env["reason_hint"], "encoding");
}

// ---- handoff ----

#[test]
fn handoff_write_then_read_round_trips_and_reports_no_drift() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let w = s.ok(
        "rw_handoff_write",
        json!({"envelope": envelope(&ws), "body": "# Notes\n\nAppendix B is next.\n"}),
    );
    let text = std::fs::read_to_string(ws.path("HANDOFF.md")).unwrap();
    assert!(
        text.starts_with("---\ntask_id: telemetry-report\n"),
        "{text}"
    );
    assert_eq!(w["sha256"], sha256(text.as_bytes()));
    assert_eq!(w["drift"], json!([]));
    assert_eq!(w["drift_warnings"], json!([]));
    let rows = journal_rows(&ws.root);
    assert_eq!(rows.last().unwrap()["tool"], "handoff_write");
    let r = s.ok("rw_handoff_read", json!({}));
    assert_eq!(r["envelope"]["task_id"], "telemetry-report");
    assert_eq!(r["envelope"]["status"], "partial");
    assert_eq!(r["envelope"]["next_steps"][1], "compile the PDF");
    assert!(r["envelope"]["updated_at"].is_string());
    assert!(r["envelope"]["started_at"].is_string());
    assert_eq!(r["body"], "# Notes\n\nAppendix B is next.\n");
    assert_eq!(r["drift"], json!([]));
}

#[test]
fn handoff_read_reports_changed_and_missing_files_as_warnings() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let mut env = envelope(&ws);
    std::fs::write(ws.path("gone.txt"), "x").unwrap();
    env["last_good_state"]
        .as_array_mut()
        .unwrap()
        .push(json!({"path": "gone.txt", "sha256": sha256(b"x")}));
    s.ok("rw_handoff_write", json!({"envelope": env}));
    std::fs::write(ws.path("src.rs"), "fn main() { changed() }\n").unwrap();
    std::fs::remove_file(ws.path("gone.txt")).unwrap();
    let r = s.ok("rw_handoff_read", json!({"path": "HANDOFF.md"}));
    let drift = r["drift"].as_array().unwrap();
    assert_eq!(drift.len(), 2, "{drift:?}");
    assert_eq!(drift[0]["path"], "src.rs");
    assert_eq!(drift[0]["reason"], "changed");
    assert_eq!(drift[0]["expected"], sha256(b"fn main() {}\n"));
    assert_eq!(drift[0]["actual"], sha256(b"fn main() { changed() }\n"));
    assert_eq!(drift[1]["path"], "gone.txt");
    assert_eq!(drift[1]["reason"], "missing");
    assert_eq!(drift[1]["actual"], Value::Null);
    assert_eq!(r["drift_warnings"], r["drift"]);
}

#[test]
fn handoff_write_fills_a_missing_sha256_from_disk() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let mut env = envelope(&ws);
    env["last_good_state"] = json!([{"path": "src.rs"}]);
    s.ok("rw_handoff_write", json!({"envelope": env}));
    let r = s.ok("rw_handoff_read", json!({}));
    let f = &r["envelope"]["last_good_state"][0];
    assert_eq!(f["sha256"], sha256(b"fn main() {}\n"));
    assert_eq!(f["bytes"], 13);
}

#[test]
fn handoff_write_refuses_missing_required_fields_and_names_them() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let env = s.err(
        "rw_handoff_write",
        json!({"envelope": {"task_id": "t", "status": "partial", "agent": "a"}}),
    );
    assert_eq!(env["error"], "policy_violation");
    assert_eq!(
        env["context"]["missing_fields"],
        json!(["summary", "next_steps", "last_good_state"])
    );
    assert!(!ws.path("HANDOFF.md").exists());
}

#[test]
fn handoff_write_refuses_an_unknown_status() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let mut e = envelope(&ws);
    e["status"] = json!("finished");
    let env = s.err("rw_handoff_write", json!({"envelope": e}));
    assert_eq!(env["context"]["field"], "status");
    assert!(
        env["context"]["message"]
            .as_str()
            .unwrap()
            .contains("handed_off")
    );
}

#[test]
fn handoff_write_refuses_last_good_state_paths_outside_the_workspace() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for bad in ["../outside.txt", "/etc/passwd"] {
        let mut e = envelope(&ws);
        e["last_good_state"] = json!([{"path": bad, "sha256": sha256(b"x")}]);
        let env = s.err("rw_handoff_write", json!({"envelope": e}));
        assert_eq!(env["error"], "policy_violation", "{bad}");
        assert_eq!(env["reason_hint"], "permission", "{bad}");
    }
    assert!(!ws.path("HANDOFF.md").exists());
}

#[test]
fn handoff_write_refuses_a_secret_in_free_text_and_echoes_only_a_snippet() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let token = common::github_token(1);
    let mut e = envelope(&ws);
    e["next_steps"] = json!(["deploy", format!("use token = \"{token}\" for the API")]);
    let env = s.err("rw_handoff_write", json!({"envelope": e}));
    assert_eq!(env["error"], "blocked");
    assert_eq!(env["reason_hint"], "content_filter");
    let d = &env["context"]["detected"][0];
    assert_eq!(d["field"], "next_steps[1]");
    assert!(d["match"].as_str().unwrap().chars().count() <= 16);
    assert!(
        !env.to_string().contains(&token),
        "the whole secret was echoed"
    );
    assert!(!ws.path("HANDOFF.md").exists());
    // The body is screened too.
    let env = s.err(
        "rw_handoff_write",
        json!({"envelope": envelope(&ws), "body": format!("token = \"{token}\"\n")}),
    );
    assert_eq!(env["context"]["detected"][0]["field"], "body");
}

#[test]
fn handoff_archive_keeps_the_previous_envelope_in_the_state_directory() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_handoff_write",
        json!({"envelope": envelope(&ws), "body": "first"}),
    );
    let first = std::fs::read(ws.path("HANDOFF.md")).unwrap();
    let mut e = envelope(&ws);
    e["status"] = json!("complete");
    let w = s.ok(
        "rw_handoff_write",
        json!({"envelope": e, "body": "second", "archive": true}),
    );
    // Relative to the state root, as journal rows name it.
    let archived = w["archived_path"].as_str().unwrap();
    assert!(
        archived.starts_with(".resilient_write/handoffs/"),
        "{archived}"
    );
    assert!(archived.ends_with("_telemetry-report.md"), "{archived}");
    assert_eq!(std::fs::read(ws.path(archived)).unwrap(), first);
    let rows = journal_rows(&ws.root);
    assert!(
        rows.iter()
            .any(|r| r["mode"] == "archive" && r["path"] == archived)
    );
    let r = s.ok("rw_handoff_read", json!({}));
    assert_eq!(r["envelope"]["status"], "complete");
    assert_eq!(r["body"], "second\n");
}

#[test]
fn handoff_write_keeps_started_at_of_the_previous_envelope() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let mut e = envelope(&ws);
    e["started_at"] = json!("2026-04-12T09:00:00Z");
    s.ok("rw_handoff_write", json!({"envelope": e}));
    s.ok("rw_handoff_write", json!({"envelope": envelope(&ws)}));
    let r = s.ok("rw_handoff_read", json!({}));
    assert_eq!(r["envelope"]["started_at"], "2026-04-12T09:00:00Z");
}

#[test]
fn handoff_read_of_malformed_front_matter_names_the_line() {
    let ws = Workspace::new();
    std::fs::write(
        ws.path("HANDOFF.md"),
        "---\ntask_id: t\nstatus: partial\nsummary: [unclosed\nagent: a\n---\nbody\n",
    )
    .unwrap();
    let mut s = ws.server();
    let env = s.err("rw_handoff_read", json!({}));
    assert_eq!(env["error"], "policy_violation");
    assert_eq!(env["reason_hint"], "encoding");
    let line = env["context"]["line"].as_u64().unwrap();
    assert!((4..=6).contains(&line), "line {line}: {env}");
}

#[test]
fn handoff_read_of_a_missing_file_is_stale_precondition() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let env = s.err("rw_handoff_read", json!({}));
    assert_eq!(env["error"], "stale_precondition");
}

#[test]
fn handoff_of_the_python_original_is_read_and_unknown_keys_survive_a_rewrite() {
    let ws = Workspace::new();
    std::fs::write(ws.path("src.rs"), "x").unwrap();
    // The layout PyYAML's safe_dump(sort_keys=False) produces, with a key we do not know.
    let original = format!(
        "---\ntask_id: t-1\nstatus: handed_off\nagent: gpt\nsummary: 'Half done: see notes'\n\
         next_steps:\n- one\n- two\nlast_good_state:\n- path: src.rs\n  sha256: {}\n\
         updated_at: '2026-04-12T10:00:00Z'\nreviewer: alice\n---\n\nNotes here.\n",
        sha256(b"x")
    );
    std::fs::write(ws.path("HANDOFF.md"), original).unwrap();
    let mut s = ws.server();
    let r = s.ok("rw_handoff_read", json!({}));
    assert_eq!(r["envelope"]["status"], "handed_off");
    assert_eq!(r["envelope"]["reviewer"], "alice");
    assert_eq!(r["body"], "Notes here.\n");
    assert_eq!(r["drift"], json!([]));
    s.ok(
        "rw_handoff_write",
        json!({"envelope": r["envelope"], "body": r["body"]}),
    );
    let text = std::fs::read_to_string(ws.path("HANDOFF.md")).unwrap();
    assert!(text.contains("reviewer: alice"), "{text}");
    // Timestamps stay strings for YAML readers that would turn bare ones into dates.
    let updated = text.lines().find(|l| l.starts_with("updated_at:")).unwrap();
    assert!(updated.contains('\'') || updated.contains('"'), "{updated}");
}

#[test]
fn dependency_graph_cycle_is_refused_and_named() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let mut e = envelope(&ws);
    e["dependency_graph"] = json!([
        {"id": "build", "depends_on": ["test"], "description": "", "done": false},
        {"id": "test", "depends_on": ["build"], "description": "", "done": false},
    ]);
    let env = s.err("rw_handoff_write", json!({"envelope": e}));
    let msg = env["context"]["message"].as_str().unwrap();
    assert!(msg.contains("build -> test -> build"), "{msg}");
}

#[test]
fn dependency_graph_dangling_id_is_refused() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let mut e = envelope(&ws);
    e["dependency_graph"] = json!([{"id": "a", "depends_on": ["nope"]}]);
    let env = s.err("rw_handoff_write", json!({"envelope": e}));
    assert!(
        env["context"]["message"]
            .as_str()
            .unwrap()
            .contains("\"nope\"")
    );
}

#[test]
fn handoff_read_returns_ready_steps_in_list_order() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let mut e = envelope(&ws);
    e["dependency_graph"] = json!([
        {"id": "docs", "depends_on": [], "description": "write docs"},
        {"id": "release", "depends_on": ["docs", "test"], "description": "tag"},
        {"id": "lint", "depends_on": ["fmt"], "description": "clippy"},
        {"id": "fmt", "depends_on": [], "description": "rustfmt", "done": true},
        {"id": "test", "depends_on": [], "description": "cargo test"},
    ]);
    let w = s.ok("rw_handoff_write", json!({"envelope": e}));
    let r = s.ok("rw_handoff_read", json!({}));
    let ids: Vec<&str> = r["ready_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["docs", "lint", "test"]);
    assert_eq!(w["ready_steps"], r["ready_steps"]);
}

#[test]
fn resume_prompt_carries_summary_drift_and_ready_steps() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let mut e = envelope(&ws);
    e["dependency_graph"] = json!([{"id": "appendix", "description": "write appendix B"}]);
    s.ok(
        "rw_handoff_write",
        json!({"envelope": e, "body": "Remember the figures."}),
    );
    std::fs::write(ws.path("src.rs"), "changed").unwrap();
    let caps = &s.init["result"]["capabilities"];
    assert!(
        caps["prompts"].is_object() && caps["resources"].is_object(),
        "{caps}"
    );
    let list = s.request("prompts/list", json!({}));
    assert_eq!(list["result"]["prompts"][0]["name"], "resume");
    let r = s.request("prompts/get", json!({"name": "resume", "arguments": {}}));
    let text = r["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("telemetry-report"), "{text}");
    assert!(text.contains("19-page report complete"), "{text}");
    assert!(text.contains("src.rs (changed)"), "{text}");
    assert!(text.contains("appendix: write appendix B"), "{text}");
    assert!(text.contains("Remember the figures."), "{text}");
    let missing = s.request(
        "prompts/get",
        json!({"name": "resume", "arguments": {"path": "NOPE.md"}}),
    );
    assert!(missing["error"].is_object(), "{missing}");
}

#[test]
fn handoff_is_listed_and_read_as_a_resource() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_handoff_write", json!({"envelope": envelope(&ws)}));
    let list = s.request("resources/list", json!({}));
    let uri = list["result"]["resources"][0]["uri"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s.request("resources/read", json!({"uri": uri}));
    let c = &r["result"]["contents"][0];
    assert_eq!(c["mimeType"], "text/markdown");
    assert_eq!(
        c["text"].as_str().unwrap(),
        std::fs::read_to_string(ws.path("HANDOFF.md")).unwrap()
    );
}

// ---- checkpoints ----

#[test]
fn checkpoint_saves_and_reads_back_every_format() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let cases = [
        ("j", "json", json!({"rows": [1, 2, 3], "done": false})),
        ("y", "yaml", json!({"plan": ["a", "b"], "n": 2})),
        ("m", "markdown", json!("# Findings\n\n- one: two\n---\nend")),
    ];
    for (name, format, data) in &cases {
        let w = s.ok(
            "rw_checkpoint",
            json!({"name": name, "data": data, "format": format, "ttl": "permanent"}),
        );
        assert_eq!(w["chunked"], false);
        assert_eq!(w["format"], *format);
        let path = w["path"].as_str().unwrap();
        let ext = match *format {
            "markdown" => "md",
            f => f,
        };
        assert_eq!(path, format!(".resilient_write/checkpoints/{name}.{ext}"));
        assert_eq!(w["checkpoint_path"], path);
        assert_eq!(w["sha256"], sha256(&std::fs::read(ws.path(path)).unwrap()));
        let r = s.ok("rw_checkpoint_read", json!({"name": name}));
        assert_eq!(r["data"], *data, "{format}");
        assert_eq!(r["ttl"], "permanent");
        assert_eq!(r["format"], *format);
    }
}

#[test]
fn checkpoint_resave_keeps_created_at_and_drops_the_other_format() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let a = s.ok("rw_checkpoint", json!({"name": "plan", "data": {"v": 1}}));
    std::thread::sleep(std::time::Duration::from_millis(5));
    let b = s.ok(
        "rw_checkpoint",
        json!({"name": "plan", "data": {"v": 2}, "format": "yaml"}),
    );
    assert_eq!(a["created_at"], b["created_at"]);
    assert_ne!(a["updated_at"], b["updated_at"]);
    assert!(!ws.path(".resilient_write/checkpoints/plan.json").exists());
    let r = s.ok("rw_checkpoint_read", json!({"name": "plan"}));
    assert_eq!(r["data"], json!({"v": 2}));
}

#[test]
fn checkpoint_refuses_names_outside_the_pattern() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let long = "x".repeat(65);
    for bad in ["../escape", "a b", "", long.as_str(), "dot.name"] {
        let env = s.err("rw_checkpoint", json!({"name": bad, "data": 1}));
        assert_eq!(env["error"], "policy_violation", "{bad:?}");
        assert_eq!(env["context"]["field"], "name");
        let env = s.err("rw_checkpoint_read", json!({"name": bad}));
        assert_eq!(env["context"]["field"], "name");
    }
    assert!(!ws.path("escape.json").exists());
}

#[test]
fn checkpoint_refuses_invalid_iso_durations() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for bad in ["P", "PT", "30M", "P1H", "forever", "PT-5M"] {
        let env = s.err("rw_checkpoint", json!({"name": "a", "data": 1, "ttl": bad}));
        assert_eq!(env["context"]["field"], "ttl", "{bad}");
    }
    for good in ["PT30M", "P1D", "P1W", "P1DT12H"] {
        let r = s.ok(
            "rw_checkpoint",
            json!({"name": "a", "data": 1, "ttl": good}),
        );
        assert_eq!(r["ttl"], good);
    }
}

#[test]
fn checkpoint_markdown_needs_string_data() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let env = s.err(
        "rw_checkpoint",
        json!({"name": "m", "data": {"a": 1}, "format": "markdown"}),
    );
    assert_eq!(env["context"]["field"], "data");
}

#[test]
fn checkpoint_list_reports_every_checkpoint_sorted_and_flags_corrupt_ones() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_checkpoint", json!({"name": "zeta", "data": 1}));
    s.ok(
        "rw_checkpoint",
        json!({"name": "alpha", "data": "t", "format": "markdown"}),
    );
    std::fs::write(
        ws.path(".resilient_write/checkpoints/broken.json"),
        "{not json",
    )
    .unwrap();
    let r = s.ok("rw_checkpoint_list", json!({}));
    assert_eq!(r["count"], 3);
    let cps = r["checkpoints"].as_array().unwrap();
    let names: Vec<&str> = cps.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alpha", "broken", "zeta"]);
    assert_eq!(cps[0]["format"], "markdown");
    assert_eq!(cps[1]["corrupt"], true);
    assert_eq!(cps[2]["ttl"], "session");
    assert!(cps[2]["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn checkpoint_cleanup_removes_session_and_expired_keeps_permanent_and_reports_corrupt() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_checkpoint", json!({"name": "sess", "data": 1}));
    s.ok(
        "rw_checkpoint",
        json!({"name": "keep", "data": 1, "ttl": "permanent"}),
    );
    s.ok(
        "rw_checkpoint",
        json!({"name": "fresh", "data": 1, "ttl": "P1D"}),
    );
    // An expired one, as the original would have left it.
    std::fs::write(
        ws.path(".resilient_write/checkpoints/old.json"),
        r#"{"created_at": "2020-01-01T00:00:00Z", "data": 1, "format": "json", "name": "old", "ttl": "PT30M", "updated_at": "2020-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    std::fs::write(ws.path(".resilient_write/checkpoints/bad.json"), "][").unwrap();
    let r = s.ok("rw_checkpoint_cleanup", json!({}));
    let mut removed: Vec<(String, String)> = r["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["name"].as_str().unwrap().into(),
                x["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    removed.sort();
    assert_eq!(
        removed,
        [
            ("old".into(), "expired".into()),
            ("sess".into(), "session_cleanup".into())
        ]
    );
    assert_eq!(r["kept"], 2);
    assert_eq!(r["corrupt"][0]["name"], "bad");
    assert!(ws.path(".resilient_write/checkpoints/bad.json").exists());
    assert!(ws.path(".resilient_write/checkpoints/keep.json").exists());
    assert!(!ws.path(".resilient_write/checkpoints/sess.json").exists());
}

#[test]
fn checkpoint_removals_are_journaled_and_the_content_is_kept_for_restore() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let first = s.ok("rw_checkpoint", json!({"name": "notes", "data": {"k": 1}}));
    // saving the name as yaml removes the json file: journaled too
    s.ok(
        "rw_checkpoint",
        json!({"name": "notes", "data": {"k": 2}, "format": "yaml"}),
    );
    assert!(!ws.path(".resilient_write/checkpoints/notes.json").exists());
    let r = s.ok("rw_checkpoint_cleanup", json!({}));
    assert_eq!(r["removed"][0]["name"], "notes");
    assert!(!ws.path(".resilient_write/checkpoints/notes.yaml").exists());
    let rows = journal_rows(&ws.root);
    let deletes: Vec<&Value> = rows.iter().filter(|r| r["mode"] == "delete").collect();
    assert_eq!(deletes.len(), 2, "{rows:?}");
    assert_eq!(deletes[0]["tool"], "checkpoint");
    assert_eq!(deletes[0]["reason"], "format_changed");
    assert_eq!(deletes[0]["prev_sha256"], first["sha256"]);
    assert_eq!(deletes[1]["tool"], "checkpoint_cleanup");
    assert_eq!(deletes[1]["reason"], "session_cleanup");
    assert!(
        deletes[1]["path"]
            .as_str()
            .unwrap()
            .ends_with(".resilient_write/checkpoints/notes.yaml")
    );
    // both removed versions are in the object store, byte for byte
    for d in &deletes {
        let sha = d["prev_sha256"].as_str().unwrap();
        let obj = ws.path(&format!(".resilient_write/objects/{}/{sha}", &sha[..2]));
        let bytes = std::fs::read(&obj).unwrap_or_else(|e| panic!("{}: {e}", obj.display()));
        assert_eq!(sha256(&bytes), sha);
    }
}

#[test]
fn checkpoint_cleanup_without_include_session_keeps_session_ones() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_checkpoint", json!({"name": "sess", "data": 1}));
    let r = s.ok("rw_checkpoint_cleanup", json!({"include_session": false}));
    assert_eq!(r["removed"], json!([]));
    assert_eq!(r["kept"], 1);
}

#[test]
fn checkpoint_over_one_megabyte_is_streamed_and_reads_back() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let big: Vec<String> = (0..40_000)
        .map(|i| format!("row {i:08} ............"))
        .collect();
    let w = s.ok("rw_checkpoint", json!({"name": "big", "data": big}));
    assert_eq!(w["chunked"], true);
    assert!(w["bytes"].as_u64().unwrap() > 1_048_576);
    let path = w["path"].as_str().unwrap();
    assert_eq!(w["sha256"], sha256(&std::fs::read(ws.path(path)).unwrap()));
    let r = s.ok("rw_checkpoint_read", json!({"name": "big"}));
    assert_eq!(r["data"], json!(big));
}

#[test]
fn checkpoint_read_of_a_corrupt_file_is_write_corruption() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_checkpoint", json!({"name": "c", "data": 1}));
    std::fs::write(ws.path(".resilient_write/checkpoints/c.json"), "{\"trunc").unwrap();
    let env = s.err("rw_checkpoint_read", json!({"name": "c"}));
    assert_eq!(env["error"], "write_corruption");
}

#[test]
fn checkpoint_read_of_a_missing_name_is_stale_precondition() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let env = s.err("rw_checkpoint_read", json!({"name": "nope"}));
    assert_eq!(env["error"], "stale_precondition");
}

#[test]
fn checkpoint_written_by_the_original_is_read() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path(".resilient_write/checkpoints")).unwrap();
    std::fs::write(
        ws.path(".resilient_write/checkpoints/legacy.json"),
        "{\n  \"created_at\": \"2026-04-12T10:00:00Z\",\n  \"data\": \"a: 1\",\n  \"format\": \"yaml\",\n  \"name\": \"legacy\",\n  \"ttl\": \"session\",\n  \"updated_at\": \"2026-04-12T10:00:00Z\"\n}\n",
    )
    .unwrap();
    let mut s = ws.server();
    let r = s.ok("rw_checkpoint_read", json!({"name": "legacy"}));
    assert_eq!(r["format"], "yaml");
    assert_eq!(r["data"], "a: 1");
    assert_eq!(r["created_at"], "2026-04-12T10:00:00Z");
}

// ---- schemas ----

#[test]
fn results_of_the_new_tools_match_their_output_schemas() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tools = s.list_every_tool();
    let e = envelope(&ws);
    let mut results = vec![
        ("rw_validate", s.ok("rw_validate", json!({"content": "{}"}))),
        (
            "rw_handoff_write",
            s.ok("rw_handoff_write", json!({"envelope": e, "archive": true})),
        ),
        ("rw_handoff_read", s.ok("rw_handoff_read", json!({}))),
        (
            "rw_checkpoint",
            s.ok("rw_checkpoint", json!({"name": "a", "data": [1]})),
        ),
        (
            "rw_checkpoint_read",
            s.ok("rw_checkpoint_read", json!({"name": "a"})),
        ),
        ("rw_checkpoint_list", s.ok("rw_checkpoint_list", json!({}))),
        ("rw_analytics", s.ok("rw_analytics", json!({}))),
    ];
    results.push((
        "rw_checkpoint_cleanup",
        s.ok("rw_checkpoint_cleanup", json!({})),
    ));
    for (name, result) in results {
        let t = tools.iter().find(|t| t["name"] == name).unwrap();
        let v = jsonschema::validator_for(&t["outputSchema"]).unwrap();
        let errors: Vec<String> = v.iter_errors(&result).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:?} for {result}");
    }
    let _ = Server::start; // the harness's other entry point is used by other test files
}
