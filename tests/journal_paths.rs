//! Journal rows name files relative to the workspace root, as the original writes them; a
//! server with several roots adds `root`; rows earlier versions wrote with absolute paths are
//! shown relative and found by either form, in every tool, resource and command that reads
//! the journal.

mod common;

use common::{Server, Workspace, journal_rows, sha256};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

fn strs<'a>(rows: &'a Value, key: &str) -> Vec<&'a str> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r[key].as_str().unwrap_or_default())
        .collect()
}

/// Rewrite every row's relative `path` in the form earlier versions wrote: absolute.
fn make_rows_absolute(root: &Path) {
    let journal = root.join(".resilient_write/journal.jsonl");
    let text: String = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| {
            let mut row: serde_json::Map<String, Value> = serde_json::from_str(l).unwrap();
            let rel = row["path"].as_str().unwrap().to_string();
            row.insert("path".into(), json!(root.join(rel).display().to_string()));
            format!("{}\n", Value::Object(row))
        })
        .collect();
    std::fs::write(journal, text).unwrap();
}

fn cli(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new(common::bin())
        .args(args)
        .current_dir(cwd)
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .output()
        .expect("run resilient-write");
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn rows_are_relative_and_tool_results_name_the_relative_path() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let abs = ws.path("src/a.txt").display().to_string();
    let w = s.ok("rw_safe_write", json!({"path": abs, "content": "one"}));
    // As the original: `path` relative to the root, `abs_path` absolute.
    assert_eq!(w["path"], "src/a.txt");
    assert_eq!(w["abs_path"], abs);
    let r = s.ok(
        "rw_safe_replace",
        json!({"path": abs, "old_string": "one", "new_string": "two"}),
    );
    assert_eq!(r["path"], "src/a.txt");
    s.ok(
        "rw_chunk_write",
        json!({"session": "s", "index": 1, "content": "x"}),
    );
    let c = s.ok(
        "rw_chunk_compose",
        json!({"session": "s", "output_path": ws.path("out.txt")}),
    );
    assert_eq!(c["output_path"], "out.txt");
    let rows = journal_rows(&ws.root);
    assert_eq!(
        strs(&Value::from(rows.clone()), "path"),
        [
            "src/a.txt",
            "src/a.txt",
            ".resilient_write/chunks/s/part-001.txt",
            ".resilient_write/chunks/s/manifest.json",
            "out.txt"
        ]
    );
    // One root: no row carries `root`.
    assert!(rows.iter().all(|r| r.get("root").is_none()), "{rows:?}");
}

#[test]
fn rows_an_earlier_version_wrote_with_absolute_paths_are_shown_relative_and_found_either_way() {
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "src/a.txt", "content": "one"}),
    );
    let two = s.ok(
        "rw_safe_write",
        json!({"path": "src/a.txt", "content": "two", "mode": "overwrite"}),
    );
    s.ok("rw_safe_write", json!({"path": "b.txt", "content": "b"}));
    drop(s);
    make_rows_absolute(&ws.root);
    let abs = ws.path("src/a.txt").display().to_string();
    assert!(
        journal_rows(&ws.root)
            .iter()
            .all(|r| r["path"].as_str().is_some_and(|p| p.starts_with('/')))
    );

    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "src/a.txt", "content": "three", "mode": "overwrite"}),
    );
    // The tail shows every row relative.
    let t = s.ok("rw_journal_tail", json!({}));
    assert_eq!(
        strs(&t["entries"], "path"),
        ["src/a.txt", "src/a.txt", "b.txt", "src/a.txt"]
    );
    // The filter finds old and new rows given the path relative or absolute.
    for given in ["src/a.txt", abs.as_str(), "./src/../src/a.txt"] {
        let t = s.ok("rw_journal_tail", json!({"filter_path": given}));
        assert_eq!(
            strs(&t["entries"], "path"),
            ["src/a.txt", "src/a.txt", "src/a.txt"],
            "filter_path {given}: {t}"
        );
    }
    let t = s.ok(
        "rw_journal_tail",
        json!({"filter_path": "src/a.txt", "filter_mode": "create"}),
    );
    assert_eq!(t["count"], 1);
    // The journal-tail resource is the same tail.
    let r = s.request(
        "resources/read",
        json!({"uri": "resilient-write://journal/tail?path=src%2Fa.txt"}),
    );
    let tail: Value =
        serde_json::from_str(r["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(tail["count"], 3, "{tail}");
    assert_eq!(tail["entries"][0]["path"], "src/a.txt");
    // Analytics counts one file, shown relative.
    let a = s.ok("rw_analytics", json!({}));
    assert_eq!(a["unique_paths"], 2, "{a}");
    assert_eq!(a["hot_paths"][0]["path"], "src/a.txt");
    assert_eq!(a["hot_paths"][0]["write_count"], 3);
    assert!(
        strs(&a["timeline"], "path")
            .iter()
            .all(|p| !p.starts_with('/')),
        "{a}"
    );
    // History lists the old versions, and restore finds them (by a short hash).
    let h = s.ok("rw_history", json!({"path": abs}));
    assert_eq!(h["path"], "src/a.txt");
    assert_eq!(h["versions"].as_array().unwrap().len(), 3, "{h}");
    let short = &two["sha256"].as_str().unwrap()[..12];
    let r = s.ok(
        "rw_restore",
        json!({"path": "src/a.txt", "to_sha256": short}),
    );
    assert_eq!(r["files"][0]["path"], "src/a.txt");
    assert_eq!(std::fs::read(ws.path("src/a.txt")).unwrap(), b"two");
    drop(s);

    // The commands for people show the same.
    let table = cli(&ws.root, &["journal", "--path", "src/a.txt"]);
    assert_eq!(table.lines().count(), 5, "{table}");
    assert!(!table.contains(&abs), "{table}");
    assert!(
        table.lines().skip(1).all(|l| l.ends_with(" src/a.txt")),
        "{table}"
    );
    let table = cli(&ws.root, &["history", &abs]);
    assert_eq!(table.lines().count(), 5, "{table}");
    let json_out = cli(&ws.root, &["analytics", "--json"]);
    let a: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(a["hot_paths"][0]["path"], "src/a.txt");
    assert_eq!(a["hot_paths"][0]["write_count"], 4);
}

#[test]
fn a_server_with_several_roots_records_each_rows_root() {
    let a = Workspace::new();
    let b = Workspace::new();
    let (a_root, b_root) = (a.root.display().to_string(), b.root.display().to_string());
    let mut s = Server::start(&a.root, &["-w", &a_root, "-w", &b_root], &[]);
    s.ok("rw_safe_write", json!({"path": "x.txt", "content": "in a"}));
    let b_x = b.path("x.txt").display().to_string();
    let w = s.ok("rw_safe_write", json!({"path": b_x, "content": "one"}));
    assert_eq!(w["path"], "x.txt");
    assert_eq!(w["abs_path"], b_x);
    let rows = journal_rows(&a.root);
    let roots: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["root"].as_str().unwrap()))
        .collect();
    assert_eq!(
        roots,
        [("x.txt", a_root.as_str()), ("x.txt", b_root.as_str())]
    );

    // The filter tells the two files apart.
    let t = s.ok("rw_journal_tail", json!({"filter_path": b_x}));
    assert_eq!(strs(&t["entries"], "root"), [b_root.as_str()], "{t}");
    let t = s.ok("rw_journal_tail", json!({"filter_path": "x.txt"}));
    assert_eq!(strs(&t["entries"], "root"), [a_root.as_str()], "{t}");
    // Analytics counts two files and names the other root.
    let an = s.ok("rw_analytics", json!({}));
    assert_eq!(an["unique_paths"], 2, "{an}");
    let hot = an["hot_paths"].as_array().unwrap();
    assert!(
        hot.iter()
            .any(|h| h["path"] == "x.txt" && h.get("root").is_none())
    );
    assert!(
        hot.iter()
            .any(|h| h["path"] == "x.txt" && h["root"] == b_root.as_str())
    );
    // The command's table shows the other root's file with its root.
    let table = cli(&a.root, &["-w", &a_root, "-w", &b_root, "analytics"]);
    assert!(table.contains(&format!(" {b_root}/x.txt\n")), "{table}");
    assert!(table.contains(" x.txt\n"), "{table}");
    let table = cli(
        &a.root,
        &["-w", &a_root, "-w", &b_root, "journal", "--path", &b_x],
    );
    assert!(table.contains(&format!(" x.txt ({b_root})\n")), "{table}");

    // A transaction over the other root, and its undo: the rows' relative paths are read
    // against their root, not the working directory.
    let tx = s.ok("rw_tx_begin", json!({}))["tx_id"]
        .as_str()
        .unwrap()
        .to_string();
    s.ok(
        "rw_tx_write",
        json!({"tx_id": tx, "path": b_x, "content": "two", "mode": "overwrite"}),
    );
    s.ok("rw_tx_commit", json!({"tx_id": tx}));
    let replay = s.ok("rw_tx_commit", json!({"tx_id": tx}));
    assert_eq!(replay["files"][0]["abs_path"], b_x, "{replay}");
    let h = s.ok("rw_history", json!({"path": b_x}));
    assert_eq!(h["versions"].as_array().unwrap().len(), 2, "{h}");
    let r = s.ok("rw_restore", json!({"tx_id": tx}));
    assert_eq!(r["files"][0]["abs_path"], b_x, "{r}");
    assert_eq!(std::fs::read(b.path("x.txt")).unwrap(), b"one");
    assert_eq!(std::fs::read(a.path("x.txt")).unwrap(), b"in a");
    assert_eq!(
        sha256(&std::fs::read(b.path("x.txt")).unwrap()),
        sha256(b"one")
    );
}

#[test]
fn handoff_results_and_the_resume_prompt_name_the_handoff_relative_to_the_root() {
    let ws = Workspace::new();
    let mut s = ws.server();
    let abs = ws.path("docs/HANDOFF.md").display().to_string();
    let envelope = json!({"task_id": "t", "status": "partial", "agent": "a", "summary": "s",
        "next_steps": [], "last_good_state": []});
    let w = s.ok(
        "rw_handoff_write",
        json!({"envelope": envelope, "path": abs}),
    );
    assert_eq!(w["handoff_path"], "docs/HANDOFF.md");
    assert_eq!(w["abs_path"], abs);
    let r = s.ok("rw_handoff_read", json!({"path": abs}));
    assert_eq!(r["handoff_path"], "docs/HANDOFF.md");
    let p = s.request(
        "prompts/get",
        json!({"name": "resume", "arguments": {"path": abs}}),
    );
    let text = p["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("The envelope is docs/HANDOFF.md."), "{p}");
}
