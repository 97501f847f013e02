//! The real binary over stdio: handshake, catalogue and schemas, every writing behaviour of
//! safe_write / safe_replace / journal_tail, and the envelope for each kind of bad input. The
//! stdio transport itself (its message cap, end of input, a terminal, non-blocking pipes) is
//! `tests/mcp_surface.rs`.

mod common;

use common::{Server, Workspace, journal_rows, sha256};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"))
}

fn list_tools(s: &mut Server) -> Vec<Value> {
    s.request("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .expect("tools array")
        .clone()
}

#[test]
fn initialize_reports_server_info_and_instructions() {
    let ws = Workspace::new();
    let s = ws.server();
    let r = &s.init["result"];
    assert_eq!(r["serverInfo"]["name"], "resilient-write");
    assert_eq!(r["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        r["instructions"]
            .as_str()
            .unwrap()
            .contains("rw_safe_write")
    );
    assert!(r["capabilities"]["tools"].is_object());
}

#[test]
fn tools_are_listed_with_underscore_names_by_default_and_dotted_on_request() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let names: Vec<String> = list_tools(&mut s)
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    for n in ["rw_safe_write", "rw_safe_replace", "rw_journal_tail"] {
        assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
    }
    let mut d = Server::start(&ws.root, &["--tool-names", "dotted"], &[]);
    let dotted: Vec<String> = list_tools(&mut d)
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(dotted.contains(&"rw.safe_write".to_string()));
}

#[test]
fn both_spellings_are_callable() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_safe_write", json!({"path": "a.txt", "content": "1"}));
    s.ok("rw.safe_write", json!({"path": "b.txt", "content": "2"}));
    assert_eq!(std::fs::read(ws.path("b.txt")).unwrap(), b"2");
}

#[test]
fn every_published_schema_compiles_and_results_match_their_output_schema() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tools = s.list_every_tool();
    for t in &tools {
        jsonschema::validator_for(&t["inputSchema"])
            .unwrap_or_else(|e| panic!("{} inputSchema: {e}", t["name"]));
        jsonschema::validator_for(&t["outputSchema"])
            .unwrap_or_else(|e| panic!("{} outputSchema: {e}", t["name"]));
    }
    std::fs::write(ws.path("e.txt"), "x = 1\n").unwrap();
    let results = [
        (
            "rw_safe_write",
            s.ok("rw_safe_write", json!({"path": "n.txt", "content": "hi"})),
        ),
        (
            "rw_safe_replace",
            s.ok(
                "rw_safe_replace",
                json!({"path": "e.txt", "old_string": "1", "new_string": "2"}),
            ),
        ),
        (
            "rw_safe_replace",
            s.ok(
                "rw_safe_replace",
                json!({"path": "e.txt", "old_string": "2", "new_string": "3", "dry_run": true}),
            ),
        ),
        ("rw_journal_tail", s.ok("rw_journal_tail", json!({}))),
    ];
    for (name, result) in results {
        let v = jsonschema::validator_for(&tool(&tools, name)["outputSchema"]).unwrap();
        let errors: Vec<String> = v.iter_errors(&result).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:?} for {result}");
    }
    // Arguments the schema accepts are accepted by the handler, and vice versa for a typo.
    let input = jsonschema::validator_for(&tool(&tools, "rw_safe_write")["inputSchema"]).unwrap();
    assert!(input.is_valid(&json!({"path": "p", "content": "c", "mode": "append"})));
    assert!(!input.is_valid(&json!({"path": "p", "content": "c", "mode": "clobber"})));
}

/// The formats JSON Schema 2020-12 defines; anything else (`uint64`, `int32`, `double`) makes
/// strict clients warn or refuse the tool. Written out here rather than taken from the code,
/// so that the test does not trust the list it checks.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every `format` outside the standard ones, `type` list, `null` type and `nullable` in `v`.
fn strict_complaints(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(f) = m.get("format").and_then(Value::as_str)
                && !STANDARD_FORMATS.contains(&f)
            {
                out.push(format!("{path}: format {f}"));
            }
            if let Some(t) = m.get("type")
                && (t.is_array() || t == "null")
            {
                out.push(format!("{path}: type {t}"));
            }
            if m.contains_key("nullable") || m.get("const") == Some(&Value::Null) {
                out.push(format!("{path}: nullable"));
            }
            for (k, sub) in m {
                strict_complaints(sub, &format!("{path}/{k}"), out);
            }
        }
        Value::Array(list) => {
            for (i, sub) in list.iter().enumerate() {
                strict_complaints(sub, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn listed_schemas_have_only_standard_formats_and_no_type_lists_or_null_types() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tools = s.list_every_tool();
    assert!(tools.len() >= 33, "{}", tools.len());
    let mut found = Vec::new();
    for t in &tools {
        let name = t["name"].as_str().unwrap();
        strict_complaints(&t["inputSchema"], &format!("{name}/input"), &mut found);
        strict_complaints(&t["outputSchema"], &format!("{name}/output"), &mut found);
    }
    assert!(found.is_empty(), "{} complaints: {found:#?}", found.len());
    // An unsigned count says so with a minimum instead of a format.
    let n = &tool(&tools, "rw_journal_tail")["inputSchema"]["properties"]["n"];
    assert_eq!((&n["type"], &n["minimum"]), (&json!("integer"), &json!(0)));
}

#[test]
fn explicit_null_for_an_optional_argument_is_read_as_absent() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let w = s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "1", "expected_prev_sha256": null,
               "idempotency_key": null}),
    );
    assert_eq!(w["mode_applied"], "create");
    s.ok(
        "rw_safe_replace",
        json!({"path": "a.txt", "old_string": "1", "new_string": "2", "edits": null,
               "expected_prev_sha256": null}),
    );
    let tail = s.ok(
        "rw_journal_tail",
        json!({"filter_path": null, "filter_mode": null}),
    );
    assert_eq!(tail["entries"].as_array().unwrap().len(), 2);
    s.ok(
        "rw_chunk_append",
        json!({"session": "s", "content": "x", "total_expected": null}),
    );
    let c = s.ok(
        "rw_chunk_compose",
        json!({"session": "s", "output_path": "c.txt", "mode": null,
               "expected_prev_sha256": null}),
    );
    assert_eq!(c["chunk_count"], 1);
    s.ok(
        "rw_scratch_put",
        json!({"content": "x", "label": null, "notes": null, "content_type": null}),
    );
    let tx = s.ok("rw_tx_begin", json!({"label": null, "timeout": null}));
    assert!(tx["tx_id"].is_string());
    s.ok(
        "rw_analytics",
        json!({"since": null, "session_filter": null}),
    );
}

#[test]
fn annotations_tell_the_truth() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let tools = list_tools(&mut s);
    let w = &tool(&tools, "rw_safe_write")["annotations"];
    assert_eq!(w["readOnlyHint"], false);
    assert_eq!(w["destructiveHint"], true);
    let j = &tool(&tools, "rw_journal_tail")["annotations"];
    assert_eq!(j["readOnlyHint"], true);
    assert_eq!(j["idempotentHint"], true);
}

#[test]
fn create_writes_exact_bytes_and_reports_the_papers_fields() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let content = "\u{feff}line one\r\nline two\r\n";
    let r = s.ok(
        "rw_safe_write",
        json!({"path": "dir/sub/f.txt", "content": content}),
    );
    assert_eq!(
        std::fs::read(ws.path("dir/sub/f.txt")).unwrap(),
        content.as_bytes()
    );
    assert_eq!(r["sha256"], sha256(content.as_bytes()));
    assert_eq!(r["bytes"], content.len());
    assert_eq!(r["mode_applied"], "create");
    assert_eq!(
        r["abs_path"],
        ws.path("dir/sub/f.txt").display().to_string()
    );
    for k in ["path", "journal_id", "wrote_at"] {
        assert!(r[k].is_string(), "{k}");
    }
}

#[test]
fn create_refuses_existing_file_and_reports_its_hash() {
    let ws = Workspace::new();
    std::fs::write(ws.path("a.txt"), "old").unwrap();
    let mut s = ws.server();
    let env = s.err("rw_safe_write", json!({"path": "a.txt", "content": "new"}));
    assert_eq!(env["error"], "stale_precondition");
    assert_eq!(env["context"]["existing_sha256"], sha256(b"old"));
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"old");
}

#[test]
fn overwrite_and_append_apply_and_record_prev_hash() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "one\n"}),
    );
    let o = s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "two\n", "mode": "overwrite"}),
    );
    assert_eq!(o["mode_applied"], "overwrite");
    assert_eq!(o["prev_sha256"], sha256(b"one\n"));
    let a = s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "three\n", "mode": "append"}),
    );
    assert_eq!(a["mode_applied"], "append");
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"two\nthree\n");
    assert_eq!(a["sha256"], sha256(b"two\nthree\n"));
}

#[test]
fn stale_expected_hash_is_refused_with_both_hashes() {
    let ws = Workspace::new();
    std::fs::write(ws.path("a.txt"), "current").unwrap();
    let mut s = ws.server();
    let stale = sha256(b"what the agent read earlier");
    let env = s.err(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "x", "mode": "overwrite", "expected_prev_sha256": stale}),
    );
    assert_eq!(env["error"], "stale_precondition");
    assert_eq!(env["context"]["expected_prev_sha256"], stale);
    assert_eq!(env["context"]["actual_prev_sha256"], sha256(b"current"));
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), b"current");
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "x", "mode": "overwrite", "expected_prev_sha256": sha256(b"current")}),
    );
}

#[test]
fn base64_content_lands_as_binary() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let bytes: Vec<u8> = (0u8..=255).collect();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let r = s.ok(
        "rw_safe_write",
        json!({"path": "blob.bin", "content": b64, "encoding": "base64"}),
    );
    assert_eq!(std::fs::read(ws.path("blob.bin")).unwrap(), bytes);
    assert_eq!(r["sha256"], sha256(&bytes));
    let env = s.err(
        "rw_safe_write",
        json!({"path": "bad.bin", "content": "not base64!!", "encoding": "base64"}),
    );
    assert_eq!(env["error"], "policy_violation");
    assert_eq!(env["reason_hint"], "encoding");
}

#[test]
fn overwrite_keeps_the_files_permission_bits() {
    let ws = Workspace::new();
    std::fs::write(ws.path("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(ws.path("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n", "mode": "overwrite"}),
    );
    let mode = std::fs::metadata(ws.path("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o750);
}

#[test]
fn replace_count_semantics_one_all_and_n() {
    let ws = Workspace::new();
    std::fs::write(ws.path("f.txt"), "a b a c a\n").unwrap();
    let mut s = ws.server();
    let env = s.err(
        "rw_safe_replace",
        json!({"path": "f.txt", "old_string": "a", "new_string": "x"}),
    );
    assert_eq!(env["context"]["reason"], "match_count_mismatch");
    assert_eq!(env["context"]["found_count"], 3);
    let env = s.err(
        "rw_safe_replace",
        json!({"path": "f.txt", "old_string": "a", "new_string": "x", "count": 2}),
    );
    assert_eq!(env["context"]["expected_count"], 2);
    let r = s.ok(
        "rw_safe_replace",
        json!({"path": "f.txt", "old_string": "a", "new_string": "x", "count": 3}),
    );
    assert_eq!(r["replacements"], 3);
    let r = s.ok(
        "rw_safe_replace",
        json!({"path": "f.txt", "old_string": "x", "new_string": "y", "count": -1}),
    );
    assert_eq!(r["replacements"], 3);
    let r = s.ok(
        "rw_safe_replace",
        json!({"path": "f.txt", "old_string": "b", "new_string": "B"}),
    );
    assert_eq!(r["replacements"], 1);
    assert_eq!(
        std::fs::read_to_string(ws.path("f.txt")).unwrap(),
        "y B y c y\n"
    );
}

#[test]
fn replace_miss_reports_nearest_region() {
    let ws = Workspace::new();
    std::fs::write(
        ws.path("m.py"),
        "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n",
    )
    .unwrap();
    let mut s = ws.server();
    let env = s.err(
        "rw_safe_replace",
        json!({"path": "m.py", "old_string": "def sub(a, b):\n    return a-b\n", "new_string": ""}),
    );
    assert_eq!(env["context"]["reason"], "no_match");
    let nearest = &env["context"]["nearest"];
    assert_eq!(nearest["line"], 4);
    assert!(nearest["similarity"].as_f64().unwrap() > 0.8);
    assert!(nearest["diff"].as_str().unwrap().contains("return a - b"));
}

#[test]
fn edits_apply_all_or_nothing() {
    let ws = Workspace::new();
    std::fs::write(ws.path("f.txt"), "alpha\nbeta\n").unwrap();
    let mut s = ws.server();
    let env = s.err(
        "rw_safe_replace",
        json!({"path": "f.txt", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "gamma", "new_string": "GAMMA"}
        ]}),
    );
    assert_eq!(env["context"]["edit_index"], 1);
    assert_eq!(
        std::fs::read_to_string(ws.path("f.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    let r = s.ok(
        "rw_safe_replace",
        json!({"path": "f.txt", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "beta", "new_string": "BETA"}
        ]}),
    );
    assert_eq!(r["replacements"], 2);
    assert_eq!(
        std::fs::read_to_string(ws.path("f.txt")).unwrap(),
        "ALPHA\nBETA\n"
    );
    assert_eq!(
        journal_rows(&ws.root).len(),
        1,
        "one write for the whole list"
    );
}

#[test]
fn dry_run_returns_a_diff_and_writes_nothing() {
    let ws = Workspace::new();
    std::fs::write(ws.path("f.txt"), "keep\nold\n").unwrap();
    let mut s = ws.server();
    let r = s.ok(
        "rw_safe_replace",
        json!({"path": "f.txt", "old_string": "old", "new_string": "new", "dry_run": true}),
    );
    assert_eq!(r["dry_run"], true);
    let diff = r["diff"].as_str().unwrap();
    assert!(diff.contains("-old") && diff.contains("+new"), "{diff}");
    assert_eq!(r["sha256"], sha256(b"keep\nnew\n"));
    assert_eq!(
        std::fs::read_to_string(ws.path("f.txt")).unwrap(),
        "keep\nold\n"
    );
    assert!(journal_rows(&ws.root).is_empty());
}

#[test]
fn replace_on_missing_file_is_a_typed_error() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let env = s.err(
        "rw_safe_replace",
        json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
    );
    assert_eq!(env["error"], "stale_precondition");
}

#[test]
fn journal_rows_have_the_listed_fields_and_tail_filters() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok("rw_safe_write", json!({"path": "a.txt", "content": "1"}));
    s.ok("rw_safe_write", json!({"path": "b.txt", "content": "2"}));
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "3", "mode": "append"}),
    );
    let raw = std::fs::read_to_string(ws.path(".resilient_write/journal.jsonl")).unwrap();
    for line in raw.lines() {
        let row: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
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
            assert!(row.contains_key(k), "{k} missing in {line}");
        }
        assert_eq!(row["caller"], "integration-test");
        let keys: Vec<&String> = row.keys().collect();
        let mut by_pos = keys.clone();
        by_pos.sort_by_key(|k| line.find(&format!("\"{k}\":")).unwrap());
        assert_eq!(keys, by_pos, "keys not sorted in {line}");
        assert!(!line.contains("\"1\"") || !line.contains("content"));
    }
    let t = s.ok("rw_journal_tail", json!({"n": 2}));
    assert_eq!(t["count"], 2);
    assert_eq!(t["entries"][1]["mode"], "append", "newest last");
    let t = s.ok("rw_journal_tail", json!({"filter_path": "a.txt"}));
    assert_eq!(t["count"], 2);
    let t = s.ok("rw_journal_tail", json!({"filter_mode": "create"}));
    assert_eq!(t["count"], 2);
}

#[test]
fn retry_budget_counts_down_and_refuses_at_zero() {
    let ws = Workspace::new();
    std::fs::write(ws.path("a.txt"), "x").unwrap();
    let mut s = ws.server();
    let args = json!({"path": "a.txt", "content": "y"});
    let budgets: Vec<Value> = (0..3)
        .map(|_| s.err("rw_safe_write", args.clone())["retry_budget"].clone())
        .collect();
    assert_eq!(budgets, vec![json!(2), json!(1), json!(0)]);
    // Even though the obstacle is gone, the identical call is now refused unattempted.
    std::fs::remove_file(ws.path("a.txt")).unwrap();
    let env = s.err("rw_safe_write", args.clone());
    assert_eq!(env["error"], "blocked");
    assert_eq!(env["suggested_action"], "abort");
    assert_eq!(env["context"]["reason"], "retry_budget_exhausted");
    assert!(!ws.path("a.txt").exists());
    // A changed request is a new call with a fresh budget.
    s.ok("rw_safe_write", json!({"path": "a.txt", "content": "z"}));
}

/// After any failure the server compares a call's sketch (long strings cut to their ends)
/// with the failures it remembers before it hashes the whole content: budgets must stay
/// exact for large calls, a difference in the middle of the content included.
#[test]
fn retry_budgets_of_large_calls_stay_exact_after_other_failures() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.err("rw_read", json!({"path": "missing.txt"}));
    std::fs::write(ws.path("b.txt"), "x").unwrap();
    let big = "0123456789abcdef".repeat(12_800);
    let args = json!({"path": "b.txt", "content": big});
    let mut middle = big.clone();
    middle.replace_range(100_000..100_001, "!");
    let other = json!({"path": "b.txt", "content": middle});
    let budget = |s: &mut common::Server, a: &Value| {
        s.err("rw_safe_write", a.clone())["retry_budget"].clone()
    };
    assert_eq!(budget(&mut s, &args), json!(2));
    assert_eq!(budget(&mut s, &args), json!(1));
    assert_eq!(
        budget(&mut s, &other),
        json!(2),
        "another call: its own budget"
    );
    assert_eq!(budget(&mut s, &args), json!(0));
    std::fs::remove_file(ws.path("b.txt")).unwrap();
    let env = s.err("rw_safe_write", args.clone());
    assert_eq!(env["context"]["reason"], "retry_budget_exhausted");
    assert!(!ws.path("b.txt").exists());
    // A success forgives the call: failing again later starts from a fresh budget.
    std::fs::write(ws.path("c.txt"), "x").unwrap();
    let c = json!({"path": "c.txt", "content": big});
    assert_eq!(budget(&mut s, &c), json!(2));
    std::fs::remove_file(ws.path("c.txt")).unwrap();
    s.ok("rw_safe_write", c.clone());
    assert_eq!(budget(&mut s, &c), json!(2), "the success was counted");
}

#[test]
fn idempotency_key_applies_an_append_once() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let args =
        json!({"path": "log.txt", "content": "entry\n", "mode": "append", "idempotency_key": "k1"});
    let first = s.ok("rw_safe_write", args.clone());
    let second = s.ok("rw_safe_write", args.clone());
    assert_eq!(
        std::fs::read_to_string(ws.path("log.txt")).unwrap(),
        "entry\n"
    );
    assert_eq!(second["idempotent_replay"], true);
    assert_eq!(second["journal_id"], first["journal_id"]);
    assert_eq!(second["sha256"], first["sha256"]);
    // Also across a restart: the key lives in the journal.
    drop(s);
    let mut s = ws.server();
    let third = s.ok("rw_safe_write", args);
    assert_eq!(third["journal_id"], first["journal_id"]);
    assert_eq!(
        std::fs::read_to_string(ws.path("log.txt")).unwrap(),
        "entry\n"
    );
    let env = s.err(
        "rw_safe_write",
        json!({"path": "log.txt", "content": "other\n", "mode": "append", "idempotency_key": "k1"}),
    );
    assert_eq!(env["error"], "stale_precondition");
    assert_eq!(env["context"]["reason"], "idempotency_key_reused");
}

#[test]
fn size_cap_is_answered_with_quota_exceeded() {
    let ws = Workspace::new();
    let mut s = Server::start(&ws.root, &["--max-write-bytes", "1000"], &[]);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "big.txt", "content": "x".repeat(1001)}),
    );
    assert_eq!(env["error"], "quota_exceeded");
    assert_eq!(env["reason_hint"], "size_limit");
    assert_eq!(env["suggested_action"], "split");
    assert!(!ws.path("big.txt").exists());
}

#[test]
fn ten_megabytes_are_written_and_a_hundred_refused_by_default() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let ten = "0123456789abcdef".repeat(10 * 1024 * 1024 / 16);
    let r = s.ok("rw_safe_write", json!({"path": "ten.txt", "content": ten}));
    assert_eq!(r["bytes"], 10 * 1024 * 1024);
    let hundred = "x".repeat(100 * 1024 * 1024);
    let env = s.err(
        "rw_safe_write",
        json!({"path": "hundred.txt", "content": hundred}),
    );
    assert_eq!(env["error"], "quota_exceeded");
    assert!(!ws.path("hundred.txt").exists());
    s.ok(
        "rw_safe_write",
        json!({"path": "after.txt", "content": "still serving"}),
    );
}

#[test]
fn lone_surrogate_is_an_encoding_error_and_the_server_keeps_serving() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.send_raw(
        r#"{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{"name":"rw_safe_write","arguments":{"path":"s.txt","content":"a\ud800b"}}}"#,
    );
    let r = s.read_response(900);
    let env = &r["result"]["structuredContent"];
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(env["error"], "policy_violation");
    assert_eq!(env["reason_hint"], "encoding");
    assert_eq!(env["context"]["field"], "content");
    assert!(!ws.path("s.txt").exists());
    s.ok("rw_safe_write", json!({"path": "t.txt", "content": "fine"}));
}

#[test]
fn invalid_arguments_are_typed_errors() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for args in [
        json!({"content": "no path"}),
        json!({"path": 5, "content": "x"}),
        json!({"path": "a", "content": "x", "mode": "clobber"}),
        json!({"path": "a", "content": "x", "expected_prev_sha": "typo"}),
        json!({"path": "a", "content": "x", "expected_prev_sha256": "abc"}),
    ] {
        let env = s.err("rw_safe_write", args.clone());
        assert_eq!(env["error"], "policy_violation", "{args}");
        assert_eq!(env["context"]["reason"], "invalid_arguments", "{args}");
    }
    let env = s.err("rw_safe_write", json!({"path": "", "content": "x"}));
    assert_eq!(env["error"], "policy_violation");
    std::fs::create_dir(ws.path("d")).unwrap();
    let env = s.err(
        "rw_safe_write",
        json!({"path": "d", "content": "x", "mode": "overwrite"}),
    );
    assert!(
        env["context"]["message"]
            .as_str()
            .unwrap()
            .contains("directory")
    );
}

#[test]
fn unknown_tool_is_a_json_rpc_error() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = s.request("tools/call", json!({"name": "rw_nope", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn paths_outside_the_workspace_are_refused() {
    let ws = Workspace::new();
    let mut s = ws.server();
    for p in ["../escape.txt", "/etc/rw-should-not-exist"] {
        let env = s.err("rw_safe_write", json!({"path": p, "content": "x"}));
        assert_eq!(env["error"], "policy_violation", "{p}");
        assert_eq!(env["reason_hint"], "permission", "{p}");
    }
    assert!(!ws.root.parent().unwrap().join("escape.txt").exists());
    let env = s.err(
        "rw_safe_write",
        json!({"path": ".resilient_write/journal.jsonl", "content": "x", "mode": "overwrite"}),
    );
    assert_eq!(env["error"], "policy_violation");
}

#[test]
fn unsafe_root_is_refused_with_a_clear_message_and_the_server_still_answers() {
    let ws = Workspace::new();
    let mut s = Server::start(std::path::Path::new("/"), &["-w", "/"], &[]);
    let env = s.err("rw_safe_write", json!({"path": "x.txt", "content": "x"}));
    assert_eq!(env["error"], "policy_violation");
    let msg = env["context"]["message"].as_str().unwrap();
    assert!(msg.contains("system directory"), "{msg}");
    // The same server process keeps answering.
    s.ok("rw_journal_tail", json!({}));
    drop(ws);
}

#[test]
fn rw_workspace_json_array_and_state_dir_are_honoured() {
    let ws = Workspace::new();
    let other = Workspace::new();
    let state = Workspace::new();
    let list = serde_json::to_string(&[other.root.display().to_string()]).unwrap();
    let mut s = Server::start(
        &ws.root,
        &[],
        &[
            ("RW_WORKSPACE", list.as_str()),
            ("RW_STATE_DIR", state.root.to_str().unwrap()),
        ],
    );
    let target = other.path("x.txt");
    s.ok(
        "rw_safe_write",
        json!({"path": target.display().to_string(), "content": "there"}),
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "there");
    assert_eq!(journal_rows(&state.root).len(), 1);
    assert!(!ws.path(".resilient_write").exists());
}
