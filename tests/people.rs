//! The commands for people: `init` (idempotent project setup), `doctor` (state checks and
//! repairs) and `validate` (syntax checks with line:col).

mod common;

use common::{Workspace, journal_rows, temp_files};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    common::run_cli(cwd, args, env)
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
        "GEMINI.md",
        ".mcp.json",
        ".cursor/mcp.json",
        ".vscode/mcp.json",
        ".gemini/settings.json",
        ".gitignore",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with("created") && l.ends_with(f)),
            "{f} not created:\n{text}"
        );
    }
    assert!(text.contains("+[mcp_servers.resilient-write]"), "{text}");
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
    assert_eq!(journal_rows(&ws.root).len(), 8);

    let before = snapshot(&ws.root);
    let second = run(&ws.root, &args, &env);
    let text = out(&second);
    assert!(second.status.success(), "{text}");
    let reported: Vec<&str> = text
        .lines()
        .filter(|l| {
            ["created", "updated", "unchanged"]
                .iter()
                .any(|w| l.starts_with(w))
        })
        .collect();
    assert_eq!(reported.len(), 8, "{text}");
    assert!(
        reported.iter().all(|l| l.starts_with("unchanged")),
        "{text}"
    );
    assert_eq!(snapshot(&ws.root), before, "the second run changed a file");
    assert_eq!(journal_rows(&ws.root).len(), 8, "the second run wrote");
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
fn init_write_global_adds_the_codex_server_with_its_workspace_keeping_the_users_settings() {
    let ws = Workspace::new();
    let h = home();
    let codex = h.path().join(".codex");
    std::fs::create_dir(&codex).unwrap();
    // An entry from an older init: no workspace, so it failed when Codex started in $HOME.
    let before = "# mine\nmodel = \"m\"\n\n[mcp_servers.resilient-write]\ncommand = \"rw\"\nargs = [\"serve\"]\n";
    std::fs::write(codex.join("config.toml"), before).unwrap();
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
    assert!(text.starts_with("# mine\nmodel = \"m\"\n"), "{text}");
    let t: toml::Table = toml::from_str(&text).unwrap();
    let server = &t["mcp_servers"]["resilient-write"];
    assert_eq!(server["command"].as_str(), Some("/opt/rw"));
    let project = ws.root.canonicalize().unwrap();
    let project = project.to_str().unwrap();
    let args_written: Vec<&str> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        args_written,
        ["serve", "-w", project, "--state-dir", project]
    );
    let o = run(&ws.root, &args, &env);
    assert!(
        out(&o).contains("unchanged  ") && out(&o).contains(".codex/config.toml"),
        "{}",
        out(&o)
    );
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        text
    );
}

/// The value under `keys` in a JSON(C) file (comments and trailing commas allowed).
fn entry(path: &Path, keys: &[&str]) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let mut v = jsonc_parser::cst::CstRootNode::parse(&text, &Default::default())
        .unwrap_or_else(|e| panic!("{e}: {text}"))
        .to_serde_value()
        .unwrap();
    for k in keys {
        v = v[k].clone();
    }
    v
}

#[test]
fn init_sets_up_every_client_keeping_comments_and_other_servers() {
    let ws = Workspace::new();
    let h = home();
    let project = ws.root.canonicalize().unwrap();
    let project_s = project.to_str().unwrap().to_string();
    // (client, file, base, keys to the servers object, existing text with a comment and another server)
    let jsonc = |key: &str| {
        format!(
            "// settings of mine\n{{\n  \"theme\": \"dark\", // keep\n  \"{key}\": {{\n    \"other\": {{ \"command\": \"other-server\" }},\n  }},\n  \"z_last\": 1\n}}\n"
        )
    };
    let desktop = if cfg!(target_os = "macos") {
        "Library/Application Support/Claude/claude_desktop_config.json"
    } else {
        ".config/Claude/claude_desktop_config.json"
    };
    let cases: Vec<(&str, PathBuf, &str, bool)> = vec![
        ("claude", project.join(".mcp.json"), "mcpServers", false),
        (
            "claude-desktop",
            h.path().join(desktop),
            "mcpServers",
            false,
        ),
        (
            "cursor",
            project.join(".cursor/mcp.json"),
            "mcpServers",
            true,
        ),
        ("vscode", project.join(".vscode/mcp.json"), "servers", true),
        (
            "windsurf",
            h.path().join(".codeium/windsurf/mcp_config.json"),
            "mcpServers",
            false,
        ),
        (
            "zed",
            h.path().join(".config/zed/settings.json"),
            "context_servers",
            false,
        ),
        (
            "gemini",
            project.join(".gemini/settings.json"),
            "mcpServers",
            false,
        ),
    ];
    for (_, file, key, _) in &cases {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, jsonc(key)).unwrap();
    }
    let env = [("HOME", h.path().to_str().unwrap())];
    let mut args = vec!["init", "--write-global", "--command", "/opt/bin/rw"];
    for (client, ..) in &cases {
        args.extend(["--client", client]);
    }
    args.extend(["--client", "codex"]);
    let o = run(&ws.root, &args, &env);
    let text = out(&o);
    assert!(o.status.success(), "{text}");
    for (client, file, key, folder) in &cases {
        let written = std::fs::read_to_string(file).unwrap();
        for kept in [
            "// settings of mine",
            "\"theme\": \"dark\", // keep",
            "\"z_last\": 1",
        ] {
            assert!(written.contains(kept), "{client}: {kept} lost:\n{written}");
        }
        assert!(
            written.find("\"theme\"").unwrap() < written.find(key).unwrap()
                && written.find(key).unwrap() < written.find("\"z_last\"").unwrap(),
            "{client}: keys reordered:\n{written}"
        );
        let servers = entry(file, &[key]);
        assert_eq!(servers["other"]["command"], "other-server", "{client}");
        let ours = &servers["resilient-write"];
        assert_eq!(ours["command"], "/opt/bin/rw", "{client}: {written}");
        let w = if *folder {
            "${workspaceFolder}"
        } else {
            project_s.as_str()
        };
        assert_eq!(
            ours["args"],
            json!(["serve", "-w", w, "--state-dir", w]),
            "{client}"
        );
        let shown = file
            .strip_prefix(&project)
            .unwrap_or(file)
            .display()
            .to_string();
        assert_eq!(
            text.lines().filter(|l| l.ends_with(&shown)).count(),
            1,
            "{client}: {shown} reported other than once:\n{text}"
        );
    }
    assert_eq!(
        entry(
            &project.join(".vscode/mcp.json"),
            &["servers", "resilient-write", "type"]
        ),
        "stdio"
    );
    assert_eq!(
        entry(
            &project.join(".mcp.json"),
            &["mcpServers", "resilient-write", "type"]
        ),
        "stdio"
    );
    assert_eq!(
        entry(
            &h.path().join(".config/zed/settings.json"),
            &["context_servers", "resilient-write", "source"]
        ),
        "custom"
    );
    for f in ["CLAUDE.md", "AGENTS.md", "GEMINI.md"] {
        let t = std::fs::read_to_string(project.join(f)).unwrap();
        assert_eq!(t.matches("resilient-write:begin").count(), 1, "{f}");
    }
    // Nothing printed twice.
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    let n = lines.len();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), n, "a line printed twice:\n{text}");
    // A second run changes nothing.
    let before = (snapshot(&ws.root), snapshot(h.path()));
    let o = run(&ws.root, &args, &env);
    assert!(o.status.success(), "{}", out(&o));
    assert!(
        out(&o).lines().all(|l| l.starts_with("unchanged")),
        "{}",
        out(&o)
    );
    assert_eq!((snapshot(&ws.root), snapshot(h.path())), before);
}

#[test]
fn init_shows_the_users_files_as_diffs_without_write_global_and_dry_run_writes_nothing() {
    let ws = Workspace::new();
    let h = home();
    let env = [("HOME", h.path().to_str().unwrap())];
    let o = run(
        &ws.root,
        &["init", "--client", "zed", "--command", "/opt/rw"],
        &env,
    );
    let text = out(&o);
    assert!(o.status.success(), "{text}");
    assert!(text.contains("Zed reads"), "{text}");
    assert!(text.contains("+  \"context_servers\": {"), "{text}");
    assert_eq!(
        std::fs::read_dir(h.path()).unwrap().count(),
        0,
        "HOME touched"
    );
    let ws2 = Workspace::new();
    let o = run(
        &ws2.root,
        &[
            "init",
            "--dry-run",
            "--write-global",
            "--client",
            "all",
            "--command",
            "/opt/rw",
        ],
        &env,
    );
    let text = out(&o);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("would be created  .gemini/settings.json"),
        "{text}"
    );
    assert!(text.contains("+[mcp_servers.resilient-write]"), "{text}");
    assert_eq!(std::fs::read_dir(&ws2.root).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(h.path()).unwrap().count(), 0);
}

#[test]
fn init_without_command_names_this_binary_by_absolute_path() {
    let ws = Workspace::new();
    let o = run(&ws.root, &["init"], &[]);
    assert!(o.status.success(), "{}", out(&o));
    let cmd = entry(
        &ws.path(".mcp.json"),
        &["mcpServers", "resilient-write", "command"],
    );
    let cmd = PathBuf::from(cmd.as_str().unwrap());
    assert!(cmd.is_absolute(), "{}", cmd.display());
    assert_eq!(cmd, common::bin().canonicalize().unwrap());
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
