//! The commands for people: `init` (idempotent project setup) and `validate` (syntax checks
//! with line:col). `doctor` (state checks and repairs) is `tests/doctor.rs`.

mod common;

use common::{Workspace, home, journal_rows, out, run_cli as run};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
