//! The tool surface an agent pays for (issue 20): `read` and `stat`, tool profiles
//! (`serve --tools`, `--read-only`, their environment variables), and argument problems named
//! with their type and an example. What each profile costs is `tests/tool_tokens.rs`.

mod common;

use base64::Engine;
use common::{Server, Workspace, bin, sha256};
use serde_json::{Value, json};
use std::process::Command;

fn list_tools(s: &mut Server) -> Vec<Value> {
    s.request("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .expect("tools array")
        .clone()
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect()
}

fn serve(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Server {
    Server::start(&ws.root, args, env)
}

const CORE: [&str; 7] = [
    "rw_safe_write",
    "rw_safe_replace",
    "rw_read",
    "rw_risk_score",
    "rw_redact",
    "rw_history",
    "rw_restore",
];

// ---------------------------------------------------------------------------------------
// read and stat

#[test]
fn read_returns_the_whole_file_with_the_hash_an_edit_guards_with() {
    let ws = Workspace::new();
    let text = "one\ntwo\nthree\n";
    std::fs::write(ws.path("a.txt"), text).unwrap();
    let mut s = ws.server();
    let r = s.ok("rw_read", json!({"path": "a.txt"}));
    assert_eq!(r["content"], text);
    assert_eq!(r["sha256"], sha256(text.as_bytes()));
    assert_eq!(
        (r["bytes"].as_u64(), r["lines"].as_u64()),
        (Some(14), Some(3))
    );
    assert_eq!(r["slice"], false);
    assert_eq!(r["path"], "a.txt");
    assert!(r.get("start_line").is_none(), "{r}");
    // The hash is what expected_prev_sha256 compares against.
    let w = s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "new\n", "mode": "overwrite",
               "expected_prev_sha256": r["sha256"]}),
    );
    assert_eq!(w["prev_sha256"], r["sha256"]);
}

#[test]
fn a_line_range_is_a_slice_whose_hash_is_still_the_whole_files() {
    let ws = Workspace::new();
    let text = "l1\nl2\nl3\nl4\nlast without newline";
    std::fs::write(ws.path("b.txt"), text).unwrap();
    let mut s = ws.server();
    let r = s.ok(
        "rw_read",
        json!({"path": "b.txt", "start_line": 2, "end_line": 3}),
    );
    assert_eq!(r["content"], "l2\nl3\n");
    assert_eq!(r["slice"], true);
    assert_eq!(
        (r["start_line"].as_u64(), r["end_line"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(r["sha256"], sha256(text.as_bytes()));
    assert_eq!(r["lines"], 5, "a last line without a newline counts");
    // An end past the last line stops at it; from line 1 to the end is not a slice.
    let r = s.ok(
        "rw_read",
        json!({"path": "b.txt", "start_line": 4, "end_line": 99}),
    );
    assert_eq!(r["content"], "l4\nlast without newline");
    assert_eq!(r["end_line"], 5);
    let r = s.ok(
        "rw_read",
        json!({"path": "b.txt", "start_line": 1, "end_line": 5}),
    );
    assert_eq!(r["slice"], false);
    // A start past the end, or a range backwards, is a typed refusal naming the problem.
    let e = s.err("rw_read", json!({"path": "b.txt", "start_line": 6}));
    assert_eq!(e["error"], "policy_violation");
    assert!(
        e["context"]["message"]
            .as_str()
            .unwrap()
            .contains("5 lines"),
        "{e}"
    );
    let e = s.err(
        "rw_read",
        json!({"path": "b.txt", "start_line": 3, "end_line": 2}),
    );
    assert!(
        e["context"]["message"].as_str().unwrap().contains("before"),
        "{e}"
    );
    let e = s.err("rw_read", json!({"path": "b.txt", "start_line": 0}));
    assert!(
        e["context"]["message"]
            .as_str()
            .unwrap()
            .contains("1-based"),
        "{e}"
    );
    // An empty file reads as empty content, zero lines.
    std::fs::write(ws.path("empty.txt"), "").unwrap();
    let r = s.ok("rw_read", json!({"path": "empty.txt"}));
    assert_eq!(
        (r["content"].as_str(), r["lines"].as_u64()),
        (Some(""), Some(0))
    );
}

#[test]
fn binary_content_is_an_encoding_envelope_or_base64_on_request() {
    let ws = Workspace::new();
    let bytes: Vec<u8> = vec![0x89, b'P', b'N', b'G', 0xff, 0x00, b'\n', 0xfe];
    std::fs::write(ws.path("img.bin"), &bytes).unwrap();
    let mut s = ws.server();
    let e = s.err("rw_read", json!({"path": "img.bin"}));
    assert_eq!(
        (&e["error"], &e["reason_hint"], &e["suggested_action"]),
        (
            &json!("policy_violation"),
            &json!("encoding"),
            &json!("escape")
        )
    );
    assert!(
        e["context"]["reason"]
            .as_str()
            .unwrap()
            .contains("encoding=base64"),
        "{e}"
    );
    let r = s.ok("rw_read", json!({"path": "img.bin", "encoding": "base64"}));
    assert_eq!(r["encoding"], "base64");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(r["content"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, bytes);
    assert_eq!(r["sha256"], sha256(&bytes));
}

#[test]
fn content_over_the_write_cap_is_quota_exceeded_and_a_line_range_within_it_reads() {
    let ws = Workspace::new();
    let text: String = (1..=100).map(|i| format!("line {i:03}\n")).collect();
    std::fs::write(ws.path("big.txt"), &text).unwrap();
    let mut s = serve(&ws, &["--max-write-bytes", "100"], &[]);
    let e = s.err("rw_read", json!({"path": "big.txt"}));
    assert_eq!(
        (&e["error"], &e["reason_hint"], &e["suggested_action"]),
        (
            &json!("quota_exceeded"),
            &json!("size_limit"),
            &json!("split")
        )
    );
    assert_eq!(e["context"]["bytes"], text.len());
    assert_eq!(e["context"]["limit"], 100);
    assert!(
        e["context"]["what"].as_str().unwrap().contains("100 lines"),
        "{e}"
    );
    // Ten lines of 9 bytes fit; the hash is still the whole file's.
    let r = s.ok(
        "rw_read",
        json!({"path": "big.txt", "start_line": 41, "end_line": 50}),
    );
    assert_eq!(r["content"].as_str().unwrap().lines().count(), 10);
    assert!(r["content"].as_str().unwrap().starts_with("line 041\n"));
    assert_eq!(r["sha256"], sha256(text.as_bytes()));
    let e = s.err(
        "rw_read",
        json!({"path": "big.txt", "start_line": 41, "end_line": 60}),
    );
    assert_eq!(e["context"]["bytes"], 180);
    // stat keeps no content, so no cap applies.
    let st = s.ok("rw_stat", json!({"path": "big.txt"}));
    assert_eq!(st["lines"], 100);
}

#[test]
fn a_missing_file_or_a_path_outside_the_workspace_is_a_typed_envelope() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for tool in ["rw_read", "rw_stat"] {
        let e = s.err(tool, json!({"path": "nope/missing.txt"}));
        assert_eq!(e["error"], "stale_precondition", "{tool}: {e}");
        assert_eq!(e["context"]["path"], "nope/missing.txt", "{tool}: {e}");
        let e = s.err(tool, json!({"path": "../outside.txt"}));
        assert_eq!(e["error"], "policy_violation", "{tool}: {e}");
        let e = s.err(tool, json!({"path": "/etc/hostname"}));
        assert_eq!(e["error"], "policy_violation", "{tool}: {e}");
    }
    // The state directory (journal, scratchpad blobs a write-only scratchpad must not give
    // back) is off limits, as it is to writes.
    s.ok("rw_safe_write", json!({"path": "j.txt", "content": "x"}));
    for path in [
        ".resilient_write/journal.jsonl",
        ".resilient_write/scratch/index.jsonl",
    ] {
        for tool in ["rw_read", "rw_stat"] {
            let e = s.err(tool, json!({"path": path}));
            assert_eq!(
                (&e["error"], &e["reason_hint"]),
                (&json!("policy_violation"), &json!("permission")),
                "{tool} {path}: {e}"
            );
        }
    }
    // A symlink leading out of the workspace is refused, not followed.
    std::os::unix::fs::symlink("/etc/hostname", ws.path("link")).unwrap();
    let e = s.err("rw_read", json!({"path": "link"}));
    assert_eq!(e["error"], "policy_violation", "{e}");
    std::fs::create_dir(ws.path("dir")).unwrap();
    let e = s.err("rw_read", json!({"path": "dir"}));
    assert_eq!(e["error"], "policy_violation", "{e}");
}

#[test]
fn stat_reports_hash_size_lines_mtime_and_history() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_safe_write", json!({"path": "c.txt", "content": "v1\n"}));
    let st = s.ok("rw_stat", json!({"path": "c.txt"}));
    assert_eq!(st["history_versions"], 1);
    assert_eq!(st["history_restorable"], 0);
    s.ok(
        "rw_safe_write",
        json!({"path": "c.txt", "content": "v2\n", "mode": "overwrite"}),
    );
    s.ok(
        "rw_safe_write",
        json!({"path": "c.txt", "content": "v3\nmore\n", "mode": "overwrite"}),
    );
    let st = s.ok("rw_stat", json!({"path": "c.txt"}));
    assert_eq!(st["sha256"], sha256(b"v3\nmore\n"));
    assert_eq!(
        (st["bytes"].as_u64(), st["lines"].as_u64()),
        (Some(8), Some(2))
    );
    assert_eq!(st["history_versions"], 3);
    assert_eq!(st["history_restorable"], 2);
    let mtime = chrono::DateTime::parse_from_rfc3339(st["mtime"].as_str().unwrap())
        .expect("mtime is RFC 3339");
    let on_disk: chrono::DateTime<chrono::Utc> = std::fs::metadata(ws.path("c.txt"))
        .unwrap()
        .modified()
        .unwrap()
        .into();
    assert_eq!(mtime, on_disk);
    // A file nothing journaled: no history.
    std::fs::write(ws.path("d.txt"), "x").unwrap();
    let st = s.ok("rw_stat", json!({"path": "d.txt"}));
    assert_eq!(
        (st["history_versions"].as_u64(), st["lines"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(st.get("content").is_none());
}

#[test]
fn read_and_stat_are_annotated_read_only_and_match_their_output_schemas() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tools = s.list_every_tool();
    std::fs::write(ws.path("e.txt"), "a\nb\nc\n").unwrap();
    for (name, result) in [
        ("rw_read", s.ok("rw_read", json!({"path": "e.txt"}))),
        (
            "rw_read",
            s.ok(
                "rw_read",
                json!({"path": "e.txt", "start_line": 2, "encoding": "base64"}),
            ),
        ),
        ("rw_stat", s.ok("rw_stat", json!({"path": "e.txt"}))),
    ] {
        let t = tools.iter().find(|t| t["name"] == name).unwrap();
        let v = jsonschema::validator_for(&t["outputSchema"]).unwrap();
        let errors: Vec<String> = v.iter_errors(&result).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:?} for {result}");
    }
    for name in ["rw_read", "rw_stat"] {
        let t = tools.iter().find(|t| t["name"] == name).expect(name);
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
        assert_eq!(t["annotations"]["destructiveHint"], false, "{t}");
        assert!(
            t["inputSchema"]["properties"]
                .get("idempotency_key")
                .is_none()
        );
    }
}

// ---------------------------------------------------------------------------------------
// profiles

#[test]
fn the_core_profile_lists_the_write_path_and_refuses_the_rest() {
    let ws = Workspace::new();
    let mut s = serve(&ws, &["serve", "--tools", "core"], &[]);
    let tools = list_tools(&mut s);
    // Every tool publishes an output schema (SPEC section 4); a narrowed listing publishes
    // its fields' names and types (no prose, no `required`, arrays of objects without the
    // items' fields), and results still match it.
    for t in &tools {
        let schema = &t["outputSchema"];
        assert_eq!(schema["type"], "object", "{t}");
        assert!(
            !schema.to_string().contains("\"description\":\""),
            "prose left in {}: {schema}",
            t["name"]
        );
    }
    let mut all = ws.server();
    let full = list_tools(&mut all);
    assert!(full.iter().all(|t| t["outputSchema"]["type"] == "object"));
    assert!(
        full.iter()
            .any(|t| t["outputSchema"].to_string().contains("\"description\":\"")),
        "the default listing keeps the output schemas' descriptions"
    );
    let written = s.ok(
        "rw_safe_write",
        json!({"path": "terse.txt", "content": "x", "mode": "create"}),
    );
    let safe_write = tools.iter().find(|t| t["name"] == "rw_safe_write").unwrap();
    let v = jsonschema::validator_for(&safe_write["outputSchema"]).unwrap();
    assert!(v.is_valid(&written), "{written}");
    // Arrays of objects too (their items' fields are named in the description).
    let scored = s.ok(
        "rw_risk_score",
        json!({"content": format!("GITHUB_TOKEN={}\n", common::github_token(7))}),
    );
    assert!(!scored["detected_patterns"].as_array().unwrap().is_empty());
    let risk_score = tools.iter().find(|t| t["name"] == "rw_risk_score").unwrap();
    let v = jsonschema::validator_for(&risk_score["outputSchema"]).unwrap();
    assert!(v.is_valid(&scored), "{scored}");
    assert!(
        risk_score["description"]
            .as_str()
            .unwrap()
            .contains("detected_patterns[{kind, pattern, match"),
        "{risk_score}"
    );
    let mut listed = names(&tools);
    listed.sort();
    let mut want: Vec<String> = CORE.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(listed, want);
    // A hidden tool is refused with an envelope, never run: nothing reaches the disk.
    let e = s.err("rw_chunk_append", json!({"session": "s", "content": "x"}));
    assert_eq!(e["error"], "policy_violation");
    assert_eq!(e["context"]["reason"], "tool_not_enabled");
    assert_eq!(e["context"]["name"], "rw_chunk_append");
    let enabled = e["context"]["enabled_tools"].as_array().unwrap();
    assert_eq!(enabled.len(), CORE.len(), "{e}");
    assert!(!ws.path(".resilient_write/chunks/s").exists());
    // The instructions point only at tools that are there.
    let instructions = s.init["result"]["instructions"].as_str().unwrap();
    assert!(instructions.contains("rw_safe_write") && instructions.contains("rw_read"));
    assert!(instructions.contains("rw_restore"), "{instructions}");
    for hidden in [
        "rw_chunk",
        "rw_tx_",
        "rw_journal_tail",
        "rw_handoff",
        "rw_scratch",
    ] {
        assert!(!instructions.contains(hidden), "{hidden}: {instructions}");
    }
    let full = all.init["result"]["instructions"].as_str().unwrap();
    assert!(full.contains("rw_chunk_compose") && full.len() > instructions.len());
    // Dotted spelling is hidden too; the listed tools work.
    let e = s.err("rw.tx_begin", json!({}));
    assert_eq!(e["context"]["reason"], "tool_not_enabled");
    s.ok("rw_safe_write", json!({"path": "ok.txt", "content": "1"}));
}

#[test]
fn read_only_lists_only_read_only_tools_and_intersects_with_tools() {
    let ws = Workspace::new();
    let mut all = serve(&ws, &["serve", "--tools", "all"], &[]);
    let every = list_tools(&mut all);
    let mut s = serve(&ws, &["serve", "--read-only"], &[]);
    let ro = list_tools(&mut s);
    let want: Vec<String> = names(
        &every
            .iter()
            .filter(|t| t["annotations"]["readOnlyHint"] == true)
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert_eq!(names(&ro), want);
    assert!(want.len() >= 10 && want.len() < every.len(), "{want:?}");
    for t in &ro {
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    let e = s.err("rw_safe_write", json!({"path": "x.txt", "content": "1"}));
    assert_eq!(e["context"]["reason"], "tool_not_enabled");
    assert!(!ws.path("x.txt").exists());
    // --tools core --read-only: the read-only tools of core.
    let mut s = serve(&ws, &["serve", "--tools", "core", "--read-only"], &[]);
    assert_eq!(
        names(&list_tools(&mut s)),
        ["rw_read", "rw_risk_score", "rw_history"]
    );
}

#[test]
fn the_environment_sets_the_profile_of_a_bare_server() {
    let ws = Workspace::new();
    // Bare `resilient-write` (what client configs run) honours RW_TOOLS and RW_READ_ONLY.
    let mut s = serve(&ws, &[], &[("RW_TOOLS", "rw_read,stat,safe_write")]);
    assert_eq!(
        names(&list_tools(&mut s)),
        ["rw_safe_write", "rw_read", "rw_stat"]
    );
    let mut s = serve(
        &ws,
        &[],
        &[
            ("RW_TOOLS", "rw_read,stat,safe_write"),
            ("RW_READ_ONLY", "1"),
        ],
    );
    assert_eq!(names(&list_tools(&mut s)), ["rw_read", "rw_stat"]);
    // The flag wins over the environment.
    let mut s = serve(&ws, &["serve", "--tools", "all"], &[("RW_TOOLS", "core")]);
    assert!(list_tools(&mut s).len() > CORE.len());
}

#[test]
fn an_unknown_tool_name_is_a_cli_error_listing_the_valid_ones() {
    let ws = Workspace::new();
    let out = Command::new(bin())
        .args(["serve", "--tools", "safe_write,sfae_replace"])
        .current_dir(&ws.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sfae_replace"), "{err}");
    assert!(
        err.contains("safe_replace") && err.contains("chunk_compose"),
        "{err}"
    );
    // From the environment too, for a bare server.
    let out = Command::new(bin())
        .current_dir(&ws.root)
        .env("RW_TOOLS", "nope")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
    // A profile --read-only leaves empty is refused too.
    let out = Command::new(bin())
        .args(["serve", "--tools", "safe_write,restore", "--read-only"])
        .current_dir(&ws.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"));
}

// ---------------------------------------------------------------------------------------
// argument problems

fn message(e: &Value) -> &str {
    e["context"]["message"].as_str().expect("message")
}

#[test]
fn a_missing_argument_is_named_with_its_type_and_an_example() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let e = s.err("rw_safe_write", json!({"content": "x"}));
    assert_eq!(e["error"], "policy_violation");
    assert_eq!(e["context"]["reason"], "invalid_arguments");
    assert_eq!(e["context"]["argument"], "path");
    assert_eq!(e["context"]["problem"], "missing");
    assert_eq!(e["context"]["expected"], "a string");
    assert_eq!(e["context"]["example"], "src/main.rs");
    assert_eq!(
        message(&e),
        "invalid arguments: argument `path` is missing: expected a string (e.g. \"src/main.rs\")"
    );
    let e = s.err(
        "rw_safe_replace",
        json!({"path": "a.txt", "new_string": "y"}),
    );
    // old_string is optional at the top level (edits may replace it): the message says what
    // is needed instead; a missing one inside edits is named by its place.
    assert_eq!(e["context"]["reason"], "invalid_arguments", "{e}");
    assert_eq!(
        message(&e),
        "invalid arguments: give either old_string and new_string, or a non-empty edits list"
    );
    let e = s.err(
        "rw_safe_replace",
        json!({"path": "a.txt", "edits": [{"old_string": "a", "new_string": "b"}, {"new_string": "c"}]}),
    );
    assert_eq!(e["context"]["argument"], "edits[1].old_string", "{e}");
    assert_eq!(e["context"]["problem"], "missing");
    assert!(!ws.path("a.txt").exists());
}

#[test]
fn a_wrong_type_names_the_argument_the_type_an_example_and_what_came() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let e = s.err("rw_read", json!({"path": 42}));
    assert_eq!(
        message(&e),
        "invalid arguments: argument `path`: expected a string (e.g. \"src/main.rs\"), got an integer (42)"
    );
    assert_eq!(e["context"]["problem"], "wrong_type");
    let e = s.err("rw_read", json!({"path": "a", "start_line": "2"}));
    assert_eq!(e["context"]["argument"], "start_line");
    assert!(
        message(&e).contains("expected an integer >= 1 (e.g. 1), got a string"),
        "{e}"
    );
    let e = s.err("rw_journal_tail", json!({"n": -3}));
    assert!(message(&e).contains("expected an integer >= 0"), "{e}");
    let e = s.err(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "x", "mode": true}),
    );
    assert_eq!(e["context"]["argument"], "mode");
    assert!(
        message(&e).contains("\"create\""),
        "an enum lists its values: {e}"
    );
    let e = s.err("rw_safe_write", json!({"path": "a.txt", "content": ["x"]}));
    assert_eq!(e["context"]["argument"], "content");
    assert!(message(&e).contains("got an array of 1 items"), "{e}");
    // Strings that came are never echoed (they may be a whole file or a secret).
    let e = s.err("rw_journal_tail", json!({"n": "sk-not-echoed"}));
    assert!(!message(&e).contains("sk-not-echoed"), "{e}");
    assert!(!ws.path("a.txt").exists());
}

#[test]
fn an_unknown_argument_is_named_with_the_nearest_accepted_one() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let e = s.err("rw_stat", json!({"pth": "a.txt"}));
    assert_eq!(e["context"]["argument"], "pth");
    assert_eq!(e["context"]["problem"], "unknown");
    assert!(
        message(&e).contains("did you mean `path` (a string, e.g. \"src/main.rs\")?"),
        "{e}"
    );
    let e = s.err(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "x", "expected_sha256": "ab"}),
    );
    assert!(message(&e).contains("`expected_prev_sha256`"), "{e}");
    assert!(
        message(&e).contains("Accepted: classify, classify_reject_at, content"),
        "{e}"
    );
    let e = s.err(
        "rw_safe_replace",
        json!({"path": "a.txt", "edits": [{"old_string": "a", "new_string": "b", "cnt": 2}]}),
    );
    assert_eq!(e["context"]["argument"], "edits[0].cnt", "{e}");
    assert!(!ws.path("a.txt").exists());
}

#[test]
fn every_tools_generated_example_arguments_pass_the_argument_check() {
    // The examples the messages offer come from the published schemas: each tool called
    // with the example of its required arguments must get past argument checking (it may
    // still fail for what the workspace holds).
    let ws = Workspace::new();
    let mut s = ws.server();
    let tools = s.list_every_tool();
    assert!(tools.len() >= 33);
    for t in &tools {
        let schema = &t["inputSchema"];
        let args = resilient_write::tools::args::example(schema, schema, "");
        let name = t["name"].as_str().unwrap();
        let r = s.call_raw(name, args.clone());
        let sc = &r["structuredContent"];
        assert!(
            sc["context"]["reason"] != "invalid_arguments"
                || sc["context"].get("argument").is_none(),
            "{name} {args}: {sc}"
        );
    }
}

#[test]
fn every_tool_refuses_an_unknown_argument_and_names_it() {
    // Argument types that serde builds from several parts (flattened structs) cannot deny
    // unknown fields themselves; the check against the published schema must, for all.
    let ws = Workspace::new();
    let mut s = ws.server();
    let tools = s.list_every_tool();
    let mut accepted = Vec::new();
    for t in &tools {
        let schema = &t["inputSchema"];
        let mut args = resilient_write::tools::args::example(schema, schema, "");
        args.as_object_mut()
            .unwrap()
            .insert("zz_not_an_argument".into(), json!(1));
        let name = t["name"].as_str().unwrap();
        let r = s.call_raw(name, args.clone());
        let sc = &r["structuredContent"];
        if sc["context"]["argument"] != "zz_not_an_argument"
            || sc["context"]["problem"] != "unknown"
        {
            accepted.push(format!("{name}: {sc}"));
        }
    }
    assert!(accepted.is_empty(), "{accepted:#?}");
}
