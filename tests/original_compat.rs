//! State shared with the Python original, both ways, with the original's own code: its
//! library functions (resilient-write 0.3.0 from PyPI, pinned by hash in
//! `tests/e2e/original.txt`) read the chunk session, scratchpad and journal this server wrote,
//! and this server reads the sessions, chunk rewrites and scratch deposits the original made.
//!
//! The wheel is fetched by `.ci/run` into `target/original-py/` (or named by
//! `RW_ORIGINAL_WHEEL`). Without it the test fails under CI (env `CI` set) and otherwise prints
//! a loud skip notice with the download command.

mod common;

use common::{Server, Workspace, model_visible, sha256};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const WHEEL: &str = "resilient_write-0.3.0-py3-none-any.whl";
const FETCH: &str = "python3 -m pip download --no-deps --python-version 3.12 \
    --only-binary=:all: --require-hashes -r tests/e2e/original.txt -d target/original-py";

fn wheel() -> Option<PathBuf> {
    let path = std::env::var_os("RW_ORIGINAL_WHEEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/original-py")
                .join(WHEEL)
        });
    if path.is_file() {
        return Some(path);
    }
    common::missing_prerequisite(&format!(
        "the original's wheel {} is missing; fetch it with: {FETCH} (and `pip install --user -r \
         tests/e2e/requirements.txt` for PyYAML)",
        path.display()
    ));
    None
}

/// Run the original on `root` (`read`, `write` or `verdicts SCORES`) and return what it
/// printed.
fn original(wheel: &Path, root: &Path, phase: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/original_compat.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(wheel)
        .arg(root)
        .args(phase)
        .env_remove("RW_POLICY_FILE")
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the original's {phase:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn write(s: &mut Server, index: u64, content: &str) {
    s.ok(
        "rw_chunk_write",
        json!({"session": "ours", "index": index, "content": content}),
    );
}

#[test]
fn the_original_reads_our_state_and_we_read_the_originals() {
    let Some(wheel) = wheel() else { return };
    let ws = Workspace::new();
    let mut s = ws.server();

    // Ours, read by the original.
    write(&mut s, 1, "one ");
    s.ok(
        "rw_chunk_append",
        json!({"session": "ours", "content": "two "}),
    );
    write(&mut s, 3, "three ");
    let put = s.ok(
        "rw_scratch_put",
        json!({"content": "kept aside", "label": "ours-label"}),
    );
    let theirs = original(&wheel, &ws.root, &["read"]);
    assert_eq!(theirs["status"]["present_indices"], json!([1, 2, 3]));
    assert_eq!(theirs["preview"]["content"], "one two three ");
    assert_eq!(
        theirs["compose"]["sha256"],
        json!(sha256(b"one two three "))
    );
    assert_eq!(
        std::fs::read(ws.path("by-original.txt")).unwrap(),
        b"one two three "
    );
    assert_eq!(theirs["scratch_ref"]["entry"]["sha256"], put["sha256"]);
    assert_eq!(theirs["scratch_get"]["content"], "kept aside");
    // Every row of our journal parses for the original (its reader raises on a bad line).
    let ours = common::journal_rows(&ws.root).len() as u64;
    assert!(theirs["journal_rows"].as_u64().unwrap() >= ours, "{theirs}");

    // Theirs, read by us.
    let theirs = original(&wheel, &ws.root, &["write"]);
    assert_eq!(theirs["ours_append"]["index"], 4, "{theirs}");
    let st = s.ok(
        "rw_chunk_status",
        json!({"session": "theirs", "verify": true}),
    );
    assert_eq!(st["present_indices"], json!([1, 2, 3]));
    assert_eq!(st["total_expected"], 3);
    assert_eq!(st["ready"], true, "{st}");
    let r = s.ok(
        "rw_chunk_compose",
        json!({"session": "theirs", "output_path": "theirs.txt"}),
    );
    assert_eq!(r["chunk_count"], 3);
    assert_eq!(
        std::fs::read_to_string(ws.path("theirs.txt")).unwrap(),
        "α β γ"
    );
    // The original rewrote our chunk 2 (its journal row vouches for it) and appended chunk 4
    // (its manifest dropped our records): neither is an edit by hand.
    let st = s.ok(
        "rw_chunk_status",
        json!({"session": "ours", "verify": true}),
    );
    assert_eq!(st["present_indices"], json!([1, 2, 3, 4]));
    assert_eq!(st["modified_chunks"], json!([]), "{st}");
    assert_eq!(st["ready"], true, "{st}");
    s.ok(
        "rw_chunk_compose",
        json!({"session": "ours", "output_path": "ours.txt"}),
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("ours.txt")).unwrap(),
        "one TWO three four"
    );
    let sha = theirs["scratch_put"]["sha256"].clone();
    let r = s.ok("rw_scratch_ref", json!({"label": "theirs-label"}));
    assert_eq!(r["sha256"], sha);
    assert!(r.get("skipped_lines").is_none(), "{r}");
    let g = s.ok("rw_scratch_get", json!({"sha256": sha}));
    assert_eq!(g["content"], "from the original");
    // The original's index row is kept beside ours, and a deposit of ours after it makes the
    // index owner-only again.
    s.ok(
        "rw_scratch_put",
        json!({"content": "after", "label": "after"}),
    );
    let r = s.ok("rw_scratch_ref", json!({"label": "ours-label"}));
    assert_eq!(r["sha256"], put["sha256"]);
    use std::os::unix::fs::PermissionsExt;
    let index = ws.path(".resilient_write/scratch/index.jsonl");
    let mode = std::fs::metadata(index).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn the_original_reads_the_index_we_append_to_and_doctor_compacts() {
    let Some(wheel) = wheel() else { return };
    let ws = Workspace::new();
    let mut s = ws.server();
    // 110 superseded deposits of one label: enough for doctor to compact.
    for k in 0..110 {
        s.ok(
            "rw_scratch_put",
            json!({"content": "kept aside", "label": "ours-label", "notes": format!("n{k}")}),
        );
    }
    s.ok(
        "rw_scratch_put",
        json!({"content": "other content", "label": "other"}),
    );
    let put = s.ok(
        "rw_scratch_put",
        json!({"content": "kept aside", "label": "ours-label", "notes": "latest"}),
    );
    let ours_before = s.ok("rw_scratch_ref", json!({"label": "ours-label"}));
    assert_eq!(ours_before["alias_count"], 111);
    let theirs = original(&wheel, &ws.root, &["scratch_read"]);
    assert_eq!(theirs["ours-label"]["alias_count"], 111, "{theirs}");
    assert_eq!(theirs["ours-label"]["entry"]["notes"], "latest");
    assert_eq!(theirs["other"]["entry"]["label"], "other");
    assert_eq!(theirs["get"]["content"], "kept aside");

    let o = common::run_cli(&ws.root, &["doctor", "--fix"], &[]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(text.contains("rows are superseded"), "{text}");
    let index = std::fs::read_to_string(ws.path(".resilient_write/scratch/index.jsonl")).unwrap();
    assert_eq!(index.lines().count(), 2, "{index}");
    // The original still reads it: the latest deposit of each label, whole.
    let theirs = original(&wheel, &ws.root, &["scratch_read"]);
    assert_eq!(theirs["ours-label"]["entry"]["sha256"], put["sha256"]);
    assert_eq!(theirs["ours-label"]["entry"]["notes"], "latest");
    assert_eq!(theirs["ours-label"]["entry"]["deposits"], 111);
    assert_eq!(theirs["other"]["entry"]["label"], "other");
    assert_eq!(theirs["get"]["content"], "kept aside");
    // And we answer as before the compaction.
    let ours_after = s.ok("rw_scratch_ref", json!({"label": "ours-label"}));
    assert_eq!(ours_after, ours_before);
}

/// The `path`s of journal rows, in order.
fn paths_of(rows: &Value) -> Vec<String> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_originals_journal_tail_and_analytics_read_our_rows_by_relative_path() {
    let Some(wheel) = wheel() else { return };
    let ws = Workspace::new();
    let mut s = ws.server();
    s.ok(
        "rw_safe_write",
        json!({"path": "src/a.txt", "content": "one\n"}),
    );
    // An absolute tool path is journaled relative to the root all the same.
    let abs = ws.path("src/a.txt").display().to_string();
    s.ok(
        "rw_safe_write",
        json!({"path": abs, "content": "two\n", "mode": "overwrite"}),
    );
    s.ok(
        "rw_safe_replace",
        json!({"path": "src/a.txt", "old_string": "two", "new_string": "three"}),
    );
    for i in 1..=3 {
        s.ok(
            "rw_chunk_write",
            json!({"session": "s", "index": i, "content": format!("part {i}\n")}),
        );
    }
    s.ok(
        "rw_chunk_compose",
        json!({"session": "s", "output_path": "out.txt"}),
    );
    s.ok("rw_checkpoint", json!({"name": "cp", "data": {"k": 1}}));
    let ours = s.ok("rw_analytics", json!({}));

    let theirs = original(&wheel, &ws.root, &["journal_read"]);
    let modes = |rows: &Value| -> Vec<String> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r["mode"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        modes(&theirs["src/a.txt"]),
        ["create", "overwrite", "replace"],
        "{theirs}"
    );
    assert_eq!(paths_of(&theirs["out.txt"]), ["out.txt"]);
    assert_eq!(
        paths_of(&theirs[".resilient_write/checkpoints/cp.json"]),
        [".resilient_write/checkpoints/cp.json"]
    );
    // The original compares strings: its absolute form names no row (none is absolute).
    assert_eq!(theirs[abs.as_str()], json!([]));

    let a = &theirs["analytics"];
    assert_eq!(a["hot_paths"][0]["path"], "src/a.txt", "{a}");
    assert_eq!(a["hot_paths"][0]["write_count"], 3);
    // The original counts the chunk files of session s, and the checkpoint by name.
    assert_eq!(a["sessions"]["s"]["chunk_writes"], 3, "{a}");
    assert_eq!(a["checkpoints"]["by_name"]["cp"]["saves"], 1, "{a}");
    // Ours and the original agree on the counts.
    for k in ["total_writes", "unique_paths", "total_bytes_written"] {
        assert_eq!(ours[k], a[k], "{k}: ours {ours} theirs {a}");
    }
    assert_eq!(ours["sessions"]["s"]["chunk_writes"], 3, "{ours}");
    assert_eq!(ours["hot_paths"][0], a["hot_paths"][0]);
}

#[test]
fn we_read_the_originals_journal_rows_by_relative_and_absolute_path() {
    let Some(wheel) = wheel() else { return };
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path("src")).unwrap();
    let theirs = original(&wheel, &ws.root, &["journal_write"]);
    assert_eq!(theirs["create"]["path"], "src/b.txt", "{theirs}");
    let mut s = ws.server();
    let abs = ws.path("src/b.txt").display().to_string();
    for given in ["src/b.txt", abs.as_str()] {
        let t = s.ok("rw_journal_tail", json!({"filter_path": given}));
        assert_eq!(
            paths_of(&t["entries"]),
            ["src/b.txt", "src/b.txt", "src/b.txt"],
            "filter_path {given}: {t}"
        );
        let modes: Vec<&str> = t["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["mode"].as_str().unwrap())
            .collect();
        assert_eq!(modes, ["create", "overwrite", "replace"]);
    }
    let a = s.ok("rw_analytics", json!({}));
    let o = &theirs["analytics"];
    for k in ["total_writes", "unique_paths", "total_bytes_written"] {
        assert_eq!(a[k], o[k], "{k}: ours {a} theirs {o}");
    }
    assert_eq!(a["hot_paths"][0]["path"], "src/b.txt");
    assert_eq!(a["hot_paths"][0]["write_count"], 3);
    assert_eq!(a["sessions"]["orig"]["chunk_writes"], 3, "{a}");
    // History lists the original's three versions of the file (it keeps no pre-images, so
    // only the current one is stored).
    let h = s.ok("rw_history", json!({"path": "src/b.txt"}));
    assert_eq!(h["path"], "src/b.txt");
    let versions = h["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 3, "{h}");
    assert_eq!(versions[0]["sha256"], json!(sha256(b"three\n")));
    assert_eq!(versions[0]["stored"], true);
}

/// The default listing's budget against the original's (issue 46): what a model is sent of
/// our definitions on every turn, at most this many times what it was sent of the original's.
const LISTING_RATIO: f64 = 1.35;

#[test]
fn the_default_listing_is_the_originals_tools_within_1_35x_of_its_definitions() {
    let Some(wheel) = wheel() else { return };
    let ws = Workspace::new();
    let theirs = original(&wheel, &ws.root, &["listing"])["tools"].clone();
    let theirs = theirs.as_array().expect("tools");
    let mut s = ws.server();
    let ours = s.request("tools/list", json!({}))["result"]["tools"].clone();
    let ours = ours.as_array().expect("tools");
    // The same 21 tools (theirs spelled `rw.x`), and rw_toolsets for the rest of ours.
    let mut their_names: Vec<String> = theirs
        .iter()
        .map(|t| t["name"].as_str().unwrap().replacen("rw.", "rw_", 1))
        .collect();
    their_names.push("rw_toolsets".into());
    let mut our_names: Vec<String> = ours
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    their_names.sort();
    our_names.sort();
    assert_eq!(their_names.len(), 22);
    assert_eq!(our_names, their_names);
    // Measured the same way: name, description and input schema, compact JSON, UTF-8.
    let (o, t) = (model_visible(ours).len(), model_visible(theirs).len());
    let ratio = o as f64 / t as f64;
    println!("model-visible definitions: ours {o} bytes, the original's {t} bytes, {ratio:.3}x");
    assert!(
        ratio <= LISTING_RATIO,
        "the default listing costs {ratio:.3}x the original's ({o} / {t} bytes), over \
         {LISTING_RATIO}x"
    );
}

/// Drafts whose scores spread over [0, 1]: nothing, an address (pii), a long line, both,
/// and those over 100 KB and 500 KB.
fn drafts() -> Vec<String> {
    let email = "contact: jane.doe@acme-corp.io\n";
    let long_line = format!("{}\n", "ab ".repeat(700));
    let big = "word ".repeat(21_000) + "\n";
    let huge = "word ".repeat(101_000) + "\n";
    vec![
        String::new(),
        email.to_string(),
        long_line.clone(),
        format!("{email}{long_line}"),
        format!("{big}{long_line}"),
        format!("{big}{email}{long_line}"),
        format!("{huge}{long_line}"),
        format!("{huge}{email}{long_line}"),
    ]
}

#[test]
fn policy_thresholds_in_any_order_give_the_originals_verdicts() {
    let Some(wheel) = wheel() else { return };
    for thresholds in [
        "thresholds:\n  high: 0.3\n",
        "thresholds:\n  low: 0.5\n",
        "thresholds:\n  high: 1.5\n  medium: 0.2\n  low: 0\n",
        "thresholds:\n  medium: 0.8\n  low: 0.36\n",
    ] {
        let ws = Workspace::new();
        std::fs::create_dir(ws.path(".resilient_write")).unwrap();
        std::fs::write(ws.path(".resilient_write/policy.yaml"), thresholds).unwrap();
        let mut s = ws.server();
        let (scores, ours): (Vec<f64>, Vec<Value>) = drafts()
            .into_iter()
            .map(|d| {
                let r = s.ok("rw_risk_score", json!({"content": d}));
                (r["score"].as_f64().unwrap(), r["verdict"].clone())
            })
            .unzip();
        // The drafts reach every region these thresholds cut, the out-of-order ones too.
        for (lo, hi) in [(0.0, 0.1), (0.1, 0.3), (0.3, 0.4), (0.4, 0.7), (0.7, 1.0)] {
            assert!(
                scores.iter().any(|s| (lo..hi).contains(s)),
                "no score in [{lo}, {hi}): {scores:?}"
            );
        }
        let theirs = original(
            &wheel,
            &ws.root,
            &["verdicts", &serde_json::to_string(&scores).unwrap()],
        );
        assert_eq!(
            theirs["verdicts"],
            json!(ours),
            "{thresholds:?}: scores {scores:?}, the original's thresholds {}",
            theirs["thresholds"]
        );
    }
}
