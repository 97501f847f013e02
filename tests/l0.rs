//! L0 over MCP and the `scan` command: risk_score, classify on safe_write / safe_replace,
//! redact, and the policy file (RW_POLICY_FILE, errors naming the line, disable_families).
//! Secret-shaped strings are generated here, never typed literally.

mod common;

use common::{Server, Workspace, bin, chars, github_token};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// A PKCS#8 private-key block with a random body.
fn private_key_block() -> String {
    let dashes = "-----";
    let body: Vec<String> = (0..12).map(|i| chars(100 + i, B64, 64)).collect();
    format!(
        "{dashes}BEGIN PRIVATE KEY{dashes}\n{}\n{dashes}END PRIVATE KEY{dashes}\n",
        body.join("\n")
    )
}

fn code_with(secret: &str) -> String {
    format!("import os\n\nclient = Client(token=\"{secret}\")\nprint(client.user())\n")
}

fn write_policy(ws: &Workspace, rel: &str, text: &str) {
    let p = ws.path(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn patterns(report: &Value) -> Vec<String> {
    report["detected_patterns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["pattern"].as_str().unwrap().to_string())
        .collect()
}

// ---- risk_score ------------------------------------------------------------------------------

#[test]
fn risk_score_calls_one_live_credential_at_least_medium_and_never_echoes_it() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let token = github_token(1);
    let r = s.ok("rw_risk_score", json!({"content": code_with(&token)}));
    assert!(
        ["medium", "high"].contains(&r["verdict"].as_str().unwrap()),
        "{r}"
    );
    let f = &r["detected_patterns"][0];
    assert_eq!(f["kind"], "github_pat");
    assert_eq!(f["pattern"], "github_classic_pat");
    assert_eq!(f["line"], 3);
    assert!(f["match"].as_str().unwrap().chars().count() <= 16);
    assert!(
        !r.to_string().contains(&token),
        "the token was echoed whole"
    );
    for k in [
        "score",
        "bytes",
        "line_count",
        "max_line_len",
        "suggested_actions",
    ] {
        assert!(r.get(k).is_some(), "missing {k}: {r}");
    }
    assert_eq!(r["suggested_actions"][0]["action"], "redact");
}

#[test]
fn risk_score_calls_a_private_key_block_high() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = s.ok(
        "rw_risk_score",
        json!({"content": format!("# deploy key\n{}", private_key_block()), "language_hint": "text"}),
    );
    assert_eq!(r["verdict"], "high", "{r}");
    assert_eq!(r["detected_patterns"][0]["kind"], "pem_block");
    assert_eq!(r["detected_patterns"][0]["pattern"], "pkcs8_private_key");
}

#[test]
fn risk_score_reports_a_redacted_vendor_prefix_with_its_own_pattern() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let draft = format!(
        "The leaked key looked like `{}{}{}`.\n",
        "sk-ant-", "oat01-", "{REDACTED}"
    );
    let r = s.ok("rw_risk_score", json!({"content": draft}));
    assert_ne!(r["verdict"], "safe", "{r}");
    assert_eq!(r["detected_patterns"][0]["kind"], "redacted_prefix");
    assert_eq!(
        r["detected_patterns"][0]["pattern"],
        "anthropic_redacted_prefix"
    );
}

#[test]
fn risk_score_of_ordinary_code_is_safe() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let r = s.ok(
        "rw_risk_score",
        json!({"content": "fn main() {\n    println!(\"hello\");\n}\n", "target_path": "src/main.rs"}),
    );
    assert_eq!(r["verdict"], "safe");
    assert_eq!(r["score"], 0.0);
    assert_eq!(r["line_count"], 3);
}

// ---- classify on writes ----------------------------------------------------------------------

#[test]
fn classify_refuses_a_credential_at_medium_writes_nothing_and_never_retries() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let token = github_token(2);
    let args = json!({
        "path": "client.py",
        "content": code_with(&token),
        "classify": true,
        "classify_reject_at": "medium",
    });
    let env = s.err("rw_safe_write", args.clone());
    assert!(
        !ws.path("client.py").exists(),
        "the refused file was written"
    );
    assert_eq!(env["error"], "blocked");
    assert_eq!(env["reason_hint"], "content_filter");
    assert_eq!(env["suggested_action"], "redact");
    assert_eq!(env["detected_patterns"], json!(["github_pat"]));
    assert_eq!(env["retry_budget"], 0);
    let d = &env["context"]["detected"][0];
    assert_eq!(d["pattern"], "github_classic_pat");
    assert_eq!(d["line"], 3);
    assert!(d["match"].as_str().unwrap().chars().count() <= 16);
    assert!(["medium", "high"].contains(&env["context"]["verdict"].as_str().unwrap()));
    assert!(
        !env.to_string().contains(&token),
        "the token was echoed whole"
    );
    // the identical call is refused at once
    let again = s.err("rw_safe_write", args);
    assert_eq!(again["context"]["reason"], "retry_budget_exhausted");
}

#[test]
fn classify_default_threshold_is_high_so_one_credential_is_written() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let args = json!({"path": "a.py", "content": code_with(&github_token(3)), "classify": true});
    s.ok("rw_safe_write", args);
    assert!(ws.path("a.py").exists());
    let key = json!({"path": "k.pem", "content": private_key_block(), "classify": true});
    let env = s.err("rw_safe_write", key);
    assert_eq!(env["detected_patterns"], json!(["pem_block"]));
    assert!(!ws.path("k.pem").exists());
}

#[test]
fn classify_false_writes_secrets_unchecked() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "k.pem", "content": private_key_block()}),
    );
    assert!(ws.path("k.pem").exists());
}

#[test]
fn classify_on_replace_refuses_an_edit_that_introduces_a_secret_and_keeps_the_file() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let original = "token = \"TODO\"\n";
    std::fs::write(ws.path("c.py"), original).unwrap();
    let env = s.err(
        "rw_safe_replace",
        json!({
            "path": "c.py", "old_string": "TODO", "new_string": github_token(4),
            "classify": true, "classify_reject_at": "medium",
        }),
    );
    assert_eq!(env["reason_hint"], "content_filter");
    assert_eq!(env["detected_patterns"], json!(["github_pat"]));
    assert_eq!(std::fs::read_to_string(ws.path("c.py")).unwrap(), original);
}

#[test]
fn classify_on_replace_ignores_a_secret_the_file_already_held() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let text = format!("# config\nkey = \"{}\"\nname = \"old\"\n", github_token(5));
    std::fs::write(ws.path("c.py"), &text).unwrap();
    let r = s.ok(
        "rw_safe_replace",
        json!({
            "path": "c.py", "old_string": "old", "new_string": "new",
            "classify": true, "classify_reject_at": "low",
        }),
    );
    assert_eq!(r["replacements"], 1);
}

#[test]
fn classify_reject_at_rejects_unknown_levels_as_invalid_arguments() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let env = s.err(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "x", "classify": true, "classify_reject_at": "severe"}),
    );
    assert_eq!(env["error"], "policy_violation");
    assert_eq!(env["context"]["reason"], "invalid_arguments");
}

// ---- redact ----------------------------------------------------------------------------------

#[test]
fn redact_replaces_each_secret_with_a_typed_placeholder_and_is_idempotent() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let token = github_token(6);
    let draft = format!("{}\n{}", code_with(&token), private_key_block());
    let r = s.ok("rw_redact", json!({"content": draft}));
    let content = r["content"].as_str().unwrap();
    assert!(!content.contains(&token));
    assert!(
        content.contains("{REDACTED:github_classic_pat}"),
        "{content}"
    );
    assert!(
        content.contains("{REDACTED:pkcs8_private_key}"),
        "{content}"
    );
    let reps = r["replacements"].as_array().unwrap();
    assert_eq!(reps.len(), 2);
    assert_eq!(reps[0]["rule"], "github_classic_pat");
    assert_eq!(reps[0]["line"], 3);
    assert_eq!(reps[0]["placeholder"], "{REDACTED:github_classic_pat}");
    assert!(!r.to_string().contains(&token));
    let again = s.ok("rw_redact", json!({"content": content}));
    assert_eq!(again["content"], r["content"]);
    assert_eq!(again["replacements"], json!([]));
    let score = s.ok("rw_risk_score", json!({"content": content}));
    assert_eq!(score["verdict"], "safe", "{score}");
}

#[test]
fn redact_replaces_vendor_documentation_examples_and_the_score_calls_them_examples() {
    let ws = Workspace::new();
    let mut s = ws.server();
    // AWS's documentation pair (public, not a credential).
    let draft = "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\
                 aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n";
    let r = s.ok("rw_redact", json!({"content": draft}));
    let content = r["content"].as_str().unwrap();
    assert!(!content.contains("EXAMPLE"), "{content}");
    assert_eq!(r["replacements"].as_array().unwrap().len(), 2, "{r}");
    let score = s.ok("rw_risk_score", json!({"content": draft}));
    assert_eq!(score["verdict"], "low", "{score}");
    assert!(
        score["detected_patterns"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["kind"] == "example_key"),
        "{score}"
    );
}

#[test]
fn redact_deposit_stores_each_original_in_the_scratchpad() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let token = github_token(7);
    let r = s.ok(
        "rw_redact",
        json!({"content": code_with(&token), "deposit": true}),
    );
    assert_eq!(r["deposited"], true, "{r}");
    assert!(r.get("note").is_none());
    let sha = r["replacements"][0]["sha256"].as_str().unwrap().to_string();
    assert!(!r["content"].as_str().unwrap().contains(&token));
    let got = s.ok("rw_scratch_get", json!({"sha256": sha}));
    assert_eq!(got["content"].as_str().unwrap(), token);
    let plain = s.ok("rw_redact", json!({"content": "nothing here\n"}));
    assert!(plain.get("note").is_none());
}

// ---- policy ----------------------------------------------------------------------------------

#[test]
fn bad_policy_file_is_a_policy_violation_naming_the_file_and_line_and_writes_still_work() {
    let ws = Workspace::new();
    write_policy(
        &ws,
        ".resilient_write/policy.yaml",
        "version: 1\n# thresholds below\nthresholds:\n  hihg: 0.9\n",
    );
    let mut s = ws.server();
    assert!(
        s.init["result"]["instructions"]
            .as_str()
            .unwrap()
            .contains("policy file is unusable")
    );
    for (tool, args) in [
        ("rw_risk_score", json!({"content": "x"})),
        ("rw_redact", json!({"content": "x"})),
        (
            "rw_safe_write",
            json!({"path": "a.txt", "content": "x", "classify": true}),
        ),
    ] {
        let env = s.err(tool, args);
        assert_eq!(env["error"], "policy_violation", "{tool}");
        assert_eq!(env["context"]["reason"], "policy_invalid");
        assert_eq!(env["context"]["line"], 4, "{env}");
        let file = env["context"]["policy_file"].as_str().unwrap();
        assert!(file.ends_with(".resilient_write/policy.yaml"), "{file}");
        let msg = env["context"]["message"].as_str().unwrap();
        assert!(msg.contains("policy.yaml line 4"), "{msg}");
    }
    s.ok("rw_safe_write", json!({"path": "b.txt", "content": "x"}));
}

#[test]
fn invalid_regex_in_policy_names_its_line() {
    let ws = Workspace::new();
    write_policy(
        &ws,
        "conf/rw.yaml",
        "version: 1\nextend_patterns:\n  - family: internal\n    name: acme\n    regex: 'acme_(['\n",
    );
    let mut s = Server::start(&ws.root, &[], &[("RW_POLICY_FILE", "conf/rw.yaml")]);
    let env = s.err("rw_risk_score", json!({"content": "x"}));
    assert_eq!(env["context"]["line"], 5);
    let msg = env["context"]["message"].as_str().unwrap();
    assert!(msg.contains("conf/rw.yaml line 5"), "{msg}");
    assert!(msg.contains("acme"), "{msg}");
}

#[test]
fn rw_policy_file_disable_families_turns_a_family_off() {
    let ws = Workspace::new();
    let content = format!(
        "git push https://github.com/o/r using {}\n",
        github_token(8)
    );
    let mut plain = ws.server();
    let before = plain.ok("rw_risk_score", json!({"content": content}));
    assert_eq!(patterns(&before), vec!["github_classic_pat"]);
    write_policy(
        &ws,
        "p.yaml",
        "version: 1\ndisable_families: [github_pat]\n",
    );
    let abs = ws.path("p.yaml");
    let mut s = Server::start(&ws.root, &[], &[("RW_POLICY_FILE", abs.to_str().unwrap())]);
    let after = s.ok("rw_risk_score", json!({"content": content}));
    assert!(patterns(&after).is_empty(), "{after}");
    assert_eq!(after["verdict"], "safe");
}

#[test]
fn policy_extend_patterns_and_thresholds_apply() {
    let ws = Workspace::new();
    write_policy(
        &ws,
        ".resilient_write/policy.yaml",
        "version: 1\nextend_patterns:\n  - family: internal\n    name: acme_token\n    regex: 'acme_[0-9a-f]{16}'\n    weight: 0.5\nthresholds:\n  high: 0.45\n",
    );
    let mut s = ws.server();
    let content = format!("id = acme_{}\n", chars(9, b"0123456789abcdef", 16));
    let r = s.ok("rw_risk_score", json!({"content": content}));
    assert_eq!(patterns(&r), vec!["acme_token"]);
    assert_eq!(r["verdict"], "high", "{r}");
}

#[test]
fn policy_retry_budget_default_sets_the_start_value() {
    let ws = Workspace::new();
    write_policy(
        &ws,
        ".resilient_write/policy.yaml",
        "version: 1\nretry_budget:\n  default: 5\n",
    );
    std::fs::write(ws.path("x.txt"), "a").unwrap();
    let mut s = ws.server();
    let env = s.err("rw_safe_write", json!({"path": "x.txt", "content": "b"}));
    assert_eq!(env["error"], "stale_precondition");
    assert_eq!(env["retry_budget"], 4);
}

// ---- the scan command ------------------------------------------------------------------------

fn scan(ws: &Workspace, args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let mut child = Command::new(bin())
        .arg("scan")
        .args(args)
        .current_dir(&ws.root)
        .env_remove("RW_POLICY_FILE")
        .env_remove("RW_STATE_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn scan");
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn scan_prints_a_table_and_exits_1_when_a_file_reaches_medium_without_printing_the_secret() {
    let ws = Workspace::new();
    let token = github_token(10);
    std::fs::write(ws.path("client.py"), code_with(&token)).unwrap();
    std::fs::write(ws.path("ok.py"), "print('hi')\n").unwrap();
    let (code, out, err) = scan(&ws, &["client.py", "ok.py"], None);
    assert_eq!(code, 1, "{out}{err}");
    let row = out.lines().find(|l| l.contains("client.py")).expect(&out);
    assert!(
        row.contains("github_pat") && row.contains("github_classic_pat"),
        "{row}"
    );
    assert!(row.split_whitespace().nth(1) == Some("3"), "{row}");
    assert!(!out.contains(&token) && !err.contains(&token));
    assert!(!out.contains("ok.py"));
}

#[test]
fn scan_exits_0_when_nothing_reaches_fail_at() {
    let ws = Workspace::new();
    std::fs::write(ws.path("client.py"), code_with(&github_token(11))).unwrap();
    let (code, _, _) = scan(&ws, &["--fail-at", "high", "client.py"], None);
    assert_eq!(code, 0);
    std::fs::write(ws.path("clean.rs"), "fn main() {}\n").unwrap();
    let (code, out, _) = scan(&ws, &["clean.rs"], None);
    assert_eq!(code, 0);
    assert!(out.is_empty(), "{out}");
}

#[test]
fn scan_walks_directories_skipping_git_and_what_gitignore_names() {
    let ws = Workspace::new();
    for dir in ["src", ".git", "target", "node_modules"] {
        std::fs::create_dir_all(ws.path(dir)).unwrap();
        std::fs::write(ws.path(&format!("{dir}/k.pem")), private_key_block()).unwrap();
    }
    // `.git` makes this a repository, so its .gitignore counts (as ripgrep's walk does)
    std::fs::write(ws.path(".gitignore"), "target/\nnode_modules/\n").unwrap();
    let (code, out, _) = scan(&ws, &["--json", "."], None);
    assert_eq!(code, 1);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let files: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, vec!["./src/k.pem"], "{doc}");
    assert_eq!(doc["files"][0]["verdict"], "high");
    assert_eq!(doc["failing_files"], 1);
}

#[test]
fn scan_reads_stdin_with_a_dash_and_reports_json() {
    let ws = Workspace::new();
    let token = github_token(12);
    let (code, out, _) = scan(&ws, &["--json", "-"], Some(&code_with(&token)));
    assert_eq!(code, 1);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["files"][0]["path"], "-");
    assert_eq!(
        doc["files"][0]["detected_patterns"][0]["pattern"],
        "github_classic_pat"
    );
    assert!(!out.contains(&token));
}

#[test]
fn scan_of_a_missing_path_exits_2() {
    let ws = Workspace::new();
    let (code, _, err) = scan(&ws, &["nope.txt"], None);
    assert_eq!(code, 2);
    assert!(err.contains("nope.txt"), "{err}");
}

#[test]
fn scan_with_a_bad_policy_exits_2_naming_the_line() {
    let ws = Workspace::new();
    write_policy(
        &ws,
        ".resilient_write/policy.yaml",
        "version: 1\nbogus: 2\n",
    );
    std::fs::write(ws.path("a.txt"), "x\n").unwrap();
    let (code, _, err) = scan(&ws, &["a.txt"], None);
    assert_eq!(code, 2);
    assert!(err.contains("policy.yaml line 2"), "{err}");
}

// ---- classify on the chunk, compose and transaction tools -------------------------------------

#[test]
fn classify_on_chunk_write_and_append_refuses_a_secret_chunk_and_writes_nothing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let content = code_with(&github_token(30));
    for (tool, extra) in [
        ("rw_chunk_write", json!({"index": 1})),
        ("rw_chunk_append", json!({})),
    ] {
        let mut args = json!({
            "session": "doc",
            "content": content,
            "classify": true,
            "classify_reject_at": "medium",
        });
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let env = s.err(tool, args);
        assert_eq!(env["error"], "blocked", "{tool}: {env}");
        assert_eq!(env["reason_hint"], "content_filter");
    }
    assert!(
        !ws.path(".resilient_write/chunks/doc/part-001.txt").exists(),
        "a refused chunk was written"
    );
    // without classify the same chunk is stored (the caller chose not to check)
    s.ok(
        "rw_chunk_append",
        json!({"session": "doc", "content": content}),
    );
}

#[test]
fn classify_on_compose_finds_a_secret_split_across_chunks_and_writes_nothing() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let doc = code_with(&github_token(31));
    let cut = doc.find("ghp_").unwrap() + 12;
    let (a, b) = doc.split_at(cut);
    for part in [a, b] {
        // each half alone is clean, even at the strictest threshold
        s.ok(
            "rw_chunk_append",
            json!({"session": "split", "content": part, "classify": true, "classify_reject_at": "low"}),
        );
    }
    let env = s.err(
        "rw_chunk_compose",
        json!({"session": "split", "output_path": "client.py", "classify": true,
               "classify_reject_at": "medium"}),
    );
    assert_eq!(env["error"], "blocked", "{env}");
    let d = &env["context"]["detected"][0];
    assert_eq!(d["pattern"], "github_classic_pat");
    assert_eq!(d["line"], 3, "lines count from the start of the document");
    assert!(!env.to_string().contains(&github_token(31)));
    assert!(!ws.path("client.py").exists(), "the blocked compose wrote");
    assert!(
        common::temp_files(&ws.root).is_empty(),
        "a temp file was left behind"
    );
    // the session is kept, so the agent can fix a chunk and compose again
    let st = s.ok("rw_chunk_status", json!({"session": "split"}));
    assert_eq!(st["present_indices"], json!([1, 2]));
    // clean content composes with classify on
    s.ok(
        "rw_chunk_write",
        json!({"session": "split", "index": 1, "content": "import os\n\nclient = Client(token="}),
    );
    s.ok(
        "rw_chunk_write",
        json!({"session": "split", "index": 2, "content": "os.environ[\"TOKEN\"])\n"}),
    );
    let r = s.ok(
        "rw_chunk_compose",
        json!({"session": "split", "output_path": "client.py", "classify": true,
               "classify_reject_at": "low"}),
    );
    assert_eq!(r["chunk_count"], 2);
    assert!(ws.path("client.py").exists());
}

#[test]
fn classify_on_tx_write_and_tx_replace_refuses_before_staging() {
    let ws = Workspace::new();
    std::fs::write(ws.path("app.py"), "token = None\n").unwrap();
    let mut s = ws.server();
    let tx = s.ok("rw_tx_begin", json!({}))["tx_id"]
        .as_str()
        .unwrap()
        .to_string();
    let token = github_token(32);
    let env = s.err(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "client.py", "content": code_with(&token),
               "classify": true, "classify_reject_at": "medium"}),
    );
    assert_eq!(env["error"], "blocked", "{env}");
    let env = s.err(
        "rw_tx_replace",
        json!({"tx_id": tx, "path": "app.py", "old_string": "None",
               "new_string": format!("\"{token}\""), "classify": true,
               "classify_reject_at": "medium"}),
    );
    assert_eq!(env["error"], "blocked", "{env}");
    let st = s.ok("rw_tx_status", json!({"tx_id": tx}));
    assert_eq!(
        st["files"],
        json!([]),
        "a refused operation was staged: {st}"
    );
    // the object store never saw the secret either
    let objects = ws.path(".resilient_write/objects");
    if objects.exists() {
        for e in common::files_under(&objects) {
            let bytes = std::fs::read(&e).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(&token),
                "{} holds the refused secret",
                e.display()
            );
        }
    }
    // a clean staged write still commits
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": "client.py", "content": "print(1)\n", "classify": true}),
    );
    s.ok("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(
        std::fs::read_to_string(ws.path("client.py")).unwrap(),
        "print(1)\n"
    );
}

#[test]
fn handoff_screening_uses_the_workspace_policy() {
    let ws = Workspace::new();
    write_policy(
        &ws,
        ".resilient_write/policy.yaml",
        "version: 1\nextend_patterns:\n  - family: internal\n    name: acme_token\n    regex: 'acme_[0-9a-f]{16}'\n    weight: 0.6\n",
    );
    let mut s = ws.server();
    let env = s.err(
        "rw_handoff_write",
        json!({"envelope": {
            "task_id": "t1",
            "status": "partial",
            "agent": "test",
            "summary": format!("deploy with acme_{}", chars(10, b"0123456789abcdef", 16)),
            "next_steps": ["deploy"],
            "last_good_state": [],
        }}),
    );
    assert_eq!(env["error"], "blocked", "{env}");
    assert_eq!(env["context"]["detected"][0]["pattern"], "acme_token");
    assert!(!ws.path("HANDOFF.md").exists());
}
