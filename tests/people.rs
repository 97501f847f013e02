//! The commands for people: `init` (idempotent project setup), `doctor` (state checks and
//! repairs) and `validate` (syntax checks with line:col).

mod common;

use common::{Workspace, journal_rows, temp_files};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(common::bin());
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .env_remove("RW_POLICY_FILE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run resilient-write")
}

fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Every file under `root` (except the state directory) with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.ends_with(".resilient_write") || p.ends_with(".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                files.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    files
}

/// A home directory for the child, so nothing touches the real one.
fn home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

// ---------------------------------------------------------------- init

#[test]
fn init_twice_writes_every_file_once_and_the_second_run_changes_nothing() {
    let ws = Workspace::new();
    let h = home();
    let env = [("HOME", h.path().to_str().unwrap())];
    let args = ["init", "--client", "all", "--command", "resilient-write"];
    let first = run(&ws.root, &args, &env);
    let text = out(&first);
    assert!(first.status.success(), "{text}");
    for f in [
        "CLAUDE.md",
        "AGENTS.md",
        ".mcp.json",
        ".cursor/mcp.json",
        ".vscode/mcp.json",
        ".gitignore",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with("created") && l.ends_with(f)),
            "{f} not created:\n{text}"
        );
    }
    assert!(text.contains("[mcp_servers.resilient-write]"), "{text}");
    assert!(
        !h.path().join(".codex").exists(),
        "the user's Codex config was touched"
    );
    let claude = std::fs::read_to_string(ws.path("CLAUDE.md")).unwrap();
    assert!(
        claude.starts_with("<!-- resilient-write:begin -->"),
        "{claude}"
    );
    assert!(claude.contains("| a large file or a long generation | `rw_chunk_write`"));
    assert_eq!(
        std::fs::read_to_string(ws.path(".gitignore")).unwrap(),
        ".resilient_write/\n"
    );
    let mcp: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path(".mcp.json")).unwrap()).unwrap();
    assert_eq!(
        mcp["mcpServers"]["resilient-write"]["command"],
        "resilient-write"
    );
    let vscode: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path(".vscode/mcp.json")).unwrap())
            .unwrap();
    assert_eq!(vscode["servers"]["resilient-write"]["type"], "stdio");
    // Through the write pipeline: one journal row per file.
    assert_eq!(journal_rows(&ws.root).len(), 6);

    let before = snapshot(&ws.root);
    let second = run(&ws.root, &args, &env);
    let text = out(&second);
    assert!(second.status.success(), "{text}");
    let reported: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with(".md") || l.ends_with(".json") || l.ends_with(".gitignore"))
        .collect();
    assert_eq!(reported.len(), 6, "{text}");
    assert!(
        reported.iter().all(|l| l.starts_with("unchanged")),
        "{text}"
    );
    assert_eq!(snapshot(&ws.root), before, "the second run changed a file");
    assert_eq!(journal_rows(&ws.root).len(), 6, "the second run wrote");
}

#[test]
fn init_merges_into_existing_files_keeping_what_is_there() {
    let ws = Workspace::new();
    std::fs::write(
        ws.path(".mcp.json"),
        r#"{"mcpServers": {"other": {"command": "other-server"}}, "extra": true}"#,
    )
    .unwrap();
    std::fs::write(
        ws.path("CLAUDE.md"),
        "# House rules\n\n<!-- resilient-write:begin -->\nan old block\n\
         <!-- resilient-write:end -->\n\nKeep tests fast.\n",
    )
    .unwrap();
    std::fs::write(ws.path(".gitignore"), "target").unwrap();
    let o = run(&ws.root, &["init", "--command", "rw"], &[]);
    assert!(o.status.success(), "{}", out(&o));
    let mcp: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path(".mcp.json")).unwrap()).unwrap();
    assert_eq!(mcp["mcpServers"]["other"]["command"], "other-server");
    assert_eq!(mcp["extra"], true);
    assert_eq!(mcp["mcpServers"]["resilient-write"]["command"], "rw");
    let claude = std::fs::read_to_string(ws.path("CLAUDE.md")).unwrap();
    assert!(claude.starts_with("# House rules\n\n<!-- resilient-write:begin -->\n"));
    assert!(claude.ends_with("<!-- resilient-write:end -->\n\nKeep tests fast.\n"));
    assert!(!claude.contains("an old block"));
    assert_eq!(claude.matches("resilient-write:begin").count(), 1);
    assert_eq!(
        std::fs::read_to_string(ws.path(".gitignore")).unwrap(),
        "target\n.resilient_write/\n"
    );
    // Only the client asked for: no AGENTS.md, no Cursor or VS Code config.
    assert!(!ws.path("AGENTS.md").exists());
    assert!(!ws.path(".cursor").exists());
}

#[test]
fn init_refuses_malformed_json_and_writes_nothing_at_all() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path(".cursor")).unwrap();
    let broken = "{ \"mcpServers\": { ";
    std::fs::write(ws.path(".cursor/mcp.json"), broken).unwrap();
    let o = run(&ws.root, &["init", "--client", "all"], &[]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(".cursor/mcp.json: is not valid JSON"),
        "{text}"
    );
    assert!(text.contains("nothing was written"), "{text}");
    assert_eq!(
        std::fs::read_to_string(ws.path(".cursor/mcp.json")).unwrap(),
        broken
    );
    for f in [
        "CLAUDE.md",
        "AGENTS.md",
        ".mcp.json",
        ".gitignore",
        ".resilient_write",
    ] {
        assert!(!ws.path(f).exists(), "{f} was written");
    }
}

#[test]
fn init_refuses_a_half_block_and_leaves_the_file_alone() {
    let ws = Workspace::new();
    let half = "notes\n<!-- resilient-write:begin -->\nno end\n";
    std::fs::write(ws.path("CLAUDE.md"), half).unwrap();
    let o = run(&ws.root, &["init"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).contains("without a matching"), "{}", out(&o));
    assert_eq!(std::fs::read_to_string(ws.path("CLAUDE.md")).unwrap(), half);
    assert!(!ws.path(".gitignore").exists());
}

#[test]
fn init_print_shows_diffs_and_writes_nothing() {
    let ws = Workspace::new();
    let o = run(&ws.root, &["init", "--print", "--client", "vscode"], &[]);
    let text = out(&o);
    assert!(o.status.success(), "{text}");
    assert!(text.contains("would be created  AGENTS.md"), "{text}");
    assert!(text.contains("+<!-- resilient-write:begin -->"), "{text}");
    assert!(
        text.contains("would be created  .vscode/mcp.json"),
        "{text}"
    );
    assert!(text.contains("${workspaceFolder}"), "{text}");
    assert_eq!(std::fs::read_dir(&ws.root).unwrap().count(), 0);
}

#[test]
fn init_write_global_adds_the_codex_server_once_keeping_the_users_settings() {
    let ws = Workspace::new();
    let h = home();
    let codex = h.path().join(".codex");
    std::fs::create_dir(&codex).unwrap();
    std::fs::write(codex.join("config.toml"), "model = \"m\"\n").unwrap();
    let env = [("HOME", h.path().to_str().unwrap())];
    let args = [
        "init",
        "--client",
        "codex",
        "--write-global",
        "--command",
        "/opt/rw",
    ];
    let o = run(&ws.root, &args, &env);
    assert!(o.status.success(), "{}", out(&o));
    let text = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    assert!(
        text.starts_with("model = \"m\"\n\n[mcp_servers.resilient-write]\n"),
        "{text}"
    );
    assert!(text.contains("command = \"/opt/rw\""), "{text}");
    let o = run(&ws.root, &args, &env);
    assert!(
        out(&o).contains("already defines [mcp_servers.resilient-write]"),
        "{}",
        out(&o)
    );
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        text
    );
}

// ---------------------------------------------------------------- doctor

/// A pid that belonged to a process that has exited.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// A project with some history: a file overwritten twice, a chunk session, a scratch blob.
fn project_with_state(ws: &Workspace) {
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "a.txt", "content": "one\n"}),
    );
    for c in ["two\n", "three\n"] {
        s.ok(
            "rw_safe_write",
            json!({"path": "a.txt", "content": c, "mode": "overwrite"}),
        );
    }
    for i in 1..=2 {
        s.ok(
            "rw_chunk_write",
            json!({"session": "s", "index": i, "content": format!("part {i}\n")}),
        );
    }
    s.ok(
        "rw_scratch_put",
        json!({"content": "raw material", "label": "x"}),
    );
    s.shutdown();
}

#[test]
fn doctor_on_a_fresh_project_is_healthy() {
    let ws = Workspace::new();
    let o = run(&ws.root, &["doctor"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        out(&o).contains("healthy: no problems found"),
        "{}",
        out(&o)
    );
    assert!(
        !ws.path(".resilient_write").exists(),
        "doctor created state"
    );
}

#[test]
fn doctor_reports_each_kind_of_damage_fix_repairs_it_and_the_next_check_is_clean() {
    let ws = Workspace::new();
    project_with_state(&ws);
    let state = ws.path(".resilient_write");
    // An abandoned transaction: its server is killed before the commit.
    {
        let mut s = ws.server();
        let tx = s.ok("rw_tx_begin", json!({"label": "t"}))["tx_id"].clone();
        s.ok(
            "rw_tx_write",
            json!({"tx_id": tx, "path": "b.txt", "content": "staged\n"}),
        );
    }
    // Damage of every kind doctor repairs.
    append(&state.join("journal.jsonl"), b"{\"journal_id\": \"torn");
    let temp = ws.path(&format!(".a.txt.rw-tmp-{}-1-0123abcd", dead_pid()));
    std::fs::write(&temp, "debris").unwrap();
    std::fs::remove_file(state.join("chunks/s/manifest.json")).unwrap();
    append(&state.join("scratch/index.jsonl"), b"{\"sha256\": \"ab");
    std::fs::create_dir(ws.path(".git")).unwrap();
    std::fs::write(
        state.join("policy.yaml"),
        "version: 1\nhistory:\n  max_bytes: 0\n  keep_last: 0\n",
    )
    .unwrap();
    let untouched = std::fs::read(ws.path("a.txt")).unwrap();

    // Every pre-image is removable under this policy (how many depends on how many
    // overwrites the setup made).
    let objects = object_count(&state.join("objects"));
    assert!(objects > 0, "the setup kept no pre-image");
    let removable = format!("the retention policy would remove {objects} object(s)");
    let o = run(&ws.root, &["doctor"], &[]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    for expected in [
        removable.as_str(),
        "journal.jsonl: line ",
        "is torn",
        "1 stale temp file(s) of crashed writers",
        "chunk session s: manifest.json is missing",
        "index.jsonl: 1 unreadable line(s): line ",
        "was never committed and its process is gone",
        ".resilient_write/ in ",
        "is not git-ignored",
        "can be repaired with --fix",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // Checking wrote nothing: the damage is all still there.
    assert!(temp.exists());
    assert!(!state.join("chunks/s/manifest.json").exists());
    assert!(!ws.path(".gitignore").exists());

    let o = run(&ws.root, &["doctor", "--fix"], &[]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("after --fix: 0 problem(s) remain"), "{text}");
    assert!(!temp.exists());
    assert!(temp_files(&ws.root).is_empty());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(state.join("chunks/s/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["chunks"].as_object().map(|c| c.len()), Some(2));
    assert!(
        std::fs::read(state.join("journal.jsonl"))
            .unwrap()
            .ends_with(b"\n")
    );
    let index = std::fs::read_to_string(state.join("scratch/index.jsonl")).unwrap();
    assert_eq!(index.lines().count(), 1, "{index}");
    assert_eq!(
        std::fs::read_to_string(ws.path(".gitignore")).unwrap(),
        ".resilient_write/\n"
    );
    assert_eq!(std::fs::read_dir(state.join("wal")).unwrap().count(), 0);
    assert!(
        !ws.path("b.txt").exists(),
        "the abandoned transaction landed"
    );
    assert_eq!(std::fs::read(ws.path("a.txt")).unwrap(), untouched);
    // The repairs that write files went through the pipeline.
    let rows = journal_rows(&ws.root);
    assert!(
        rows.iter()
            .any(|r| r["tool"] == "doctor" && r["mode"] == "manifest")
    );
    assert!(rows.iter().any(|r| r["path"] == ".gitignore"));

    let o = run(&ws.root, &["doctor"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        out(&o).contains("healthy: no problems found"),
        "{}",
        out(&o)
    );
}

#[test]
fn doctor_reports_what_needs_a_person_and_fix_leaves_it_alone() {
    let ws = Workspace::new();
    project_with_state(&ws);
    let state = ws.path(".resilient_write");
    std::fs::write(state.join("chunks/s/part-001.txt"), "edited by hand\n").unwrap();
    let blob = std::fs::read_dir(state.join("scratch"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "bin"))
        .unwrap();
    std::fs::remove_file(&blob).unwrap();
    // A corrupt line in the middle of the journal: reported by number, not rewritten.
    let journal = state.join("journal.jsonl");
    let mut text = std::fs::read_to_string(&journal).unwrap();
    let second = text.find('\n').unwrap() + 1;
    text.insert_str(second, "not json\n");
    std::fs::write(&journal, &text).unwrap();

    let o = run(&ws.root, &["doctor", "--fix"], &[]);
    let report = out(&o);
    assert_eq!(o.status.code(), Some(1), "{report}");
    assert!(
        report.contains("chunk(s) 1 changed since they were written"),
        "{report}"
    );
    assert!(
        report.contains("1 blob(s) named by the index are missing"),
        "{report}"
    );
    assert!(
        report.contains("line(s) are not JSON and are skipped by readers: line 2"),
        "{report}"
    );
    assert!(
        report.contains("after --fix: 2 problem(s) remain"),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(state.join("chunks/s/part-001.txt")).unwrap(),
        "edited by hand\n"
    );
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), text);
}

#[test]
fn doctor_json_names_each_finding_and_a_bad_policy_line() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path(".resilient_write")).unwrap();
    std::fs::write(
        ws.path(".resilient_write/policy.yaml"),
        "version: 1\nthresholds: [not, a, map]\n",
    )
    .unwrap();
    let o = run(&ws.root, &["doctor", "--json"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("doctor --json prints JSON");
    assert_eq!(doc["ok"], false);
    let f = &doc["findings"][0];
    assert_eq!(f["check"], "config");
    assert_eq!(f["severity"], "problem");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("policy.yaml is unusable"),
        "{f}"
    );
    assert!(
        f["fix"].as_str().unwrap().starts_with("correct line 2"),
        "{f}"
    );
    assert_eq!(f["fixable"], false);
}

#[test]
fn doctor_warns_about_thresholds_that_leave_a_verdict_unreachable() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path(".resilient_write")).unwrap();
    // The original accepts this file (high below the default medium 0.4): so do we, and
    // doctor says that medium can no longer be given.
    std::fs::write(
        ws.path(".resilient_write/policy.yaml"),
        "thresholds:\n  high: 0.3\n",
    )
    .unwrap();
    let o = run(&ws.root, &["doctor", "--json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("doctor --json prints JSON");
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "config")
        .unwrap_or_else(|| panic!("no config finding: {doc}"));
    assert_eq!(f["severity"], "warning");
    let msg = f["message"].as_str().unwrap();
    assert!(msg.contains("high 0.3, medium 0.4, low 0.1"), "{msg}");
    assert!(msg.contains("the verdict medium"), "{msg}");
    let o = run(&ws.root, &["doctor"], &[]);
    assert!(out(&o).contains("the verdict medium"), "{}", out(&o));
}

// ---------------------------------------------------------------- validate

#[test]
fn validate_prints_each_error_with_line_and_column_and_exits_1() {
    let ws = Workspace::new();
    std::fs::write(ws.path("bad.json"), "{\n  \"a\": 1,\n  \"b\" 2\n}\n").unwrap();
    std::fs::write(ws.path("good.yaml"), "a: 1\nb: [2, 3]\n").unwrap();
    let o = run(&ws.root, &["validate", "bad.json", "good.yaml"], &[]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("bad.json:3:"), "{text}");
    assert!(text.contains("bad.json: INVALID"), "{text}");
    assert!(text.contains("good.yaml: valid"), "{text}");
    let o = run(&ws.root, &["validate", "good.yaml"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
}

#[test]
fn validate_json_output_and_format_override_and_unreadable_files() {
    let ws = Workspace::new();
    std::fs::write(ws.path("data.txt"), "a = [1, 2\n").unwrap();
    let o = run(
        &ws.root,
        &["validate", "--format", "toml", "--json", "data.txt"],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["valid"], false);
    assert_eq!(doc["files"][0]["report"]["format"], "toml");
    assert!(
        doc["files"][0]["report"]["errors"][0]["line"]
            .as_u64()
            .is_some()
    );
    let o = run(&ws.root, &["validate", "missing.json"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
}

/// Files in the object store (`objects/<fan>/<sha256>`).
fn object_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|fan| std::fs::read_dir(fan.path()).into_iter().flatten().count())
        .sum()
}

#[test]
fn doctor_reports_the_history_store_against_its_budget() {
    let ws = Workspace::new();
    project_with_state(&ws);
    std::fs::write(
        ws.path(".resilient_write/policy.yaml"),
        "history:\n  max_bytes: 1MB\n  keep_last: 5\n",
    )
    .unwrap();
    let o = run(&ws.root, &["doctor", "--json"], &[]);
    let doc: Value = serde_json::from_slice(&o.stdout).expect("doctor --json prints JSON");
    // a.txt was overwritten twice: its first two versions ("one\n", "two\n") are kept.
    assert_eq!(
        doc["history_store"],
        json!({"objects": 2, "bytes": 8, "max_bytes": 1 << 20, "keep_last": 5,
               "max_age_secs": 30 * 86400}),
        "{doc}"
    );
    let o = run(&ws.root, &["doctor"], &[]);
    assert!(
        out(&o).contains(
            "history: 2 object(s), 8 B of the 1.0 MiB budget (0%); keep_last 5, max_age 30d"
        ),
        "{}",
        out(&o)
    );
}
