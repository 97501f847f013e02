//! `doctor` for people: the state checks (a fresh project, global excludes, clients whose
//! server binary is missing, each kind of damage, what needs a person, bad policy lines and
//! unreachable verdicts, the history store against its budget), `--fix` repairs and `--json`.

mod common;

use common::{Workspace, home, journal_rows, out, run_cli as run, temp_files};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

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
    // A home of its own: the developer's client configs are not this project's health.
    let h = home();
    let o = run(
        &ws.root,
        &["doctor"],
        &[
            ("HOME", h.path().to_str().unwrap()),
            (
                "XDG_CONFIG_HOME",
                h.path().join(".config").to_str().unwrap(),
            ),
        ],
    );
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
fn doctor_honours_the_global_excludes_file_and_patterns() {
    let ws = Workspace::new();
    let h = home();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws.root)
        .output()
        .expect("git");
    assert!(git.status.success());
    let home_s = h.path().to_str().unwrap();
    let xdg = h.path().join("xdg");
    let env = [("HOME", home_s), ("XDG_CONFIG_HOME", xdg.to_str().unwrap())];
    // Not ignored anywhere: a problem.
    let o = run(&ws.root, &["doctor"], &env);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert_eq!(
        out(&o).matches("is not git-ignored").count(),
        1,
        "{}",
        out(&o)
    );
    // Ignored by the user's global excludes file (core.excludesFile): healthy.
    let excludes = h.path().join("my-ignores");
    std::fs::write(&excludes, ".resilient_write/\n").unwrap();
    std::fs::write(
        h.path().join(".gitconfig"),
        format!("[core]\n\texcludesFile = {}\n", excludes.display()),
    )
    .unwrap();
    let o = run(&ws.root, &["doctor"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    // By a pattern in the project's .gitignore: healthy too.
    std::fs::remove_file(h.path().join(".gitconfig")).unwrap();
    std::fs::write(ws.path(".gitignore"), ".resilient_*\n").unwrap();
    let o = run(&ws.root, &["doctor"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(!ws.path(".resilient_write").exists());
}

#[test]
fn doctor_reports_a_client_whose_server_binary_is_missing() {
    let ws = Workspace::new();
    let h = home();
    let env = [("HOME", h.path().to_str().unwrap())];
    let gone = h.path().join("old-build/resilient-write");
    let o = run(
        &ws.root,
        &[
            "init",
            "--client",
            "claude",
            "--client",
            "codex",
            "--write-global",
            "--command",
            gone.to_str().unwrap(),
        ],
        &env,
    );
    assert!(o.status.success(), "{}", out(&o));
    let o = run(&ws.root, &["doctor", "--json"], &env);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let clients: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "clients")
        .collect();
    assert_eq!(clients.len(), 2, "{doc}");
    assert!(clients.iter().all(|f| f["severity"] == "problem"), "{doc}");
    assert!(
        clients[0]["message"]
            .as_str()
            .unwrap()
            .contains("Claude Code"),
        "{doc}"
    );
    assert!(
        clients[1]["message"].as_str().unwrap().contains("Codex"),
        "{doc}"
    );
    // Registered with this binary: healthy.
    let exe = common::bin();
    let args = [
        "init",
        "--client",
        "claude",
        "--client",
        "codex",
        "--write-global",
        "--command",
        exe.to_str().unwrap(),
    ];
    assert!(run(&ws.root, &args, &env).status.success());
    let o = run(&ws.root, &["doctor"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
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

/// `doctor --json` in `ws` (its state directory made) under the policy file `yaml`: the run
/// and its document.
fn doctor_json_with_policy(ws: &Workspace, yaml: &str) -> (std::process::Output, Value) {
    std::fs::write(ws.path(".resilient_write/policy.yaml"), yaml).unwrap();
    let o = run(&ws.root, &["doctor", "--json"], &[]);
    let doc = serde_json::from_slice(&o.stdout).expect("doctor --json prints JSON");
    (o, doc)
}

#[test]
fn doctor_json_names_each_finding_and_a_bad_policy_line() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path(".resilient_write")).unwrap();
    let (o, doc) = doctor_json_with_policy(&ws, "version: 1\nthresholds: [not, a, map]\n");
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert_eq!(doc["ok"], false);
    let f = &doc["findings"][0];
    assert_eq!(f["check"], "config");
    assert_eq!(f["severity"], "problem");
    // Said once: the file and its line appear one time each in the finding.
    let message = f["message"].as_str().unwrap();
    assert!(message.starts_with("the policy file is unusable: "), "{f}");
    assert_eq!(message.matches("policy.yaml").count(), 1, "{f}");
    assert_eq!(message.matches("line").count(), 1, "{f}");
    // ... and not again on stderr by the start-up notice the finding reports.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("policy"), "{stderr}");
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
    let (o, doc) = doctor_json_with_policy(&ws, "thresholds:\n  high: 0.3\n");
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
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
    let (_, doc) = doctor_json_with_policy(&ws, "history:\n  max_bytes: 1MB\n  keep_last: 5\n");
    // a.txt was overwritten twice: its first two versions ("one\n", "two\n") are kept.
    let mut store = doc["history_store"].clone();
    let disk = store
        .as_object_mut()
        .and_then(|s| s.remove("disk"))
        .unwrap_or_default();
    assert_eq!(
        store,
        json!({"objects": 2, "bytes": 8, "max_bytes": 1 << 20, "keep_last": 5,
               "max_age_secs": 30 * 86400, "min_free": "5% (at most 1 GiB)"}),
        "{doc}"
    );
    // The filesystem holding the state, and history's floor on it.
    let total = disk["total_bytes"].as_u64().unwrap_or(0);
    assert!(total > 0, "{doc}");
    assert_eq!(
        disk["floor_bytes"],
        json!((total / 20).min(1 << 30)),
        "{doc}"
    );
    assert!(
        disk["free_bytes"].as_u64().is_some_and(|f| f <= total),
        "{doc}"
    );
    assert!(
        disk["mount"].as_str().is_some_and(|m| m.starts_with('/')),
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
    assert!(out(&o).contains("state disk: "), "{}", out(&o));
    assert!(
        out(&o).contains("min_free 5% (at most 1 GiB)"),
        "{}",
        out(&o)
    );
}
