//! `resilient-write init`: set up a project for agents (paper section 7.2, "Agent awareness
//! and adoption"). Registering the server makes the tools available; an instruction file makes
//! them preferred. For the chosen clients, `init`:
//!
//! - adds a marked block (`<!-- resilient-write:begin -->` ... `<!-- resilient-write:end -->`)
//!   with the paper's decision table, in our tool names, to `CLAUDE.md` (Claude Code) and/or
//!   `AGENTS.md` (Codex, Cursor, VS Code); a block already there is replaced in place, and an
//!   existing block in the other file is kept in step;
//! - merges the server into the project's MCP config (`.mcp.json`, `.cursor/mcp.json`,
//!   `.vscode/mcp.json`), keeping every other server and key;
//! - prints the Codex snippet for `~/.codex/config.toml` (the user's file), or adds it with
//!   `--write-global` when the file has no such server yet;
//! - adds `.resilient_write/` to `.gitignore`.
//!
//! Guarantees: every file is planned before any is written, so a malformed existing file (JSON
//! that does not parse, a begin marker without its end) stops the command with a clear error
//! and nothing is written. Writes go through the service's `safe_write` (the write pipeline:
//! atomic, fsynced, journaled), as `create` for new files and as `overwrite` guarded by the
//! hash read when planning, so a file edited meanwhile is never clobbered. A file whose
//! content would not change is not written: a second run reports every file `unchanged` and
//! leaves them byte-identical.

use crate::dispatch::{Config, Service};
use crate::maint::gitignore::{with_gitignore_entry, write_text};
use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Markers of the block `init` owns in an instruction file.
pub const BLOCK_BEGIN: &str = "<!-- resilient-write:begin -->";
pub const BLOCK_END: &str = "<!-- resilient-write:end -->";
/// The server's name in every client config.
pub const SERVER_NAME: &str = "resilient-write";

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Client(s) to set up (repeatable): claude (CLAUDE.md, .mcp.json), cursor (AGENTS.md,
    /// .cursor/mcp.json), vscode (AGENTS.md, .vscode/mcp.json), codex (AGENTS.md, and the
    /// ~/.codex/config.toml snippet), all.
    #[arg(long = "client", value_enum, default_value = "claude")]
    pub clients: Vec<ClientKind>,
    /// Show what would change (as diffs) and write nothing.
    #[arg(long)]
    pub print: bool,
    /// Also add the server to ~/.codex/config.toml (default: print the snippet to paste).
    #[arg(long)]
    pub write_global: bool,
    /// The command clients run to start the server (default: `resilient-write` when that is
    /// this executable on PATH, else this executable's absolute path).
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// Only install a git pre-commit hook running `scan --staged` (for repositories that do not
    /// use the pre-commit framework; with it, use the repository's .pre-commit-hooks.yaml).
    #[arg(long, conflicts_with_all = ["clients", "write_global"])]
    pub pre_commit: bool,
    /// Only install the agents' native-edit hooks (`resilient-write hook`): Claude Code
    /// .claude/settings.json, Cursor .cursor/hooks.json, Gemini CLI .gemini/settings.json.
    #[arg(long, conflicts_with_all = ["clients", "write_global", "pre_commit"])]
    pub hooks: bool,
    /// With --hooks: remove those hook entries instead (other hooks are kept).
    #[arg(long, requires = "hooks")]
    pub remove: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientKind {
    Claude,
    Cursor,
    Vscode,
    Codex,
    All,
}

/// A failure that stops `init` before anything is written.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("{path}: {reason}; fix or remove it and run init again (nothing was written)")]
    Malformed { path: String, reason: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
}

/// What happens to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Create,
    Update,
    Unchanged,
}

impl Change {
    fn label(self) -> &'static str {
        match self {
            Change::Create => "created",
            Change::Update => "updated",
            Change::Unchanged => "unchanged",
        }
    }
}

/// One planned file.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// Absolute path.
    pub path: PathBuf,
    /// As shown to the user (relative to the project when inside it).
    pub shown: String,
    pub old: Option<String>,
    pub new: String,
}

impl PlannedFile {
    pub fn change(&self) -> Change {
        match &self.old {
            None => Change::Create,
            Some(o) if *o == self.new => Change::Unchanged,
            Some(_) => Change::Update,
        }
    }
}

/// The agent instructions: the paper's decision table (section 7.2) in our tool names.
pub fn instruction_block() -> String {
    format!(
        "{BLOCK_BEGIN}
## Writing files: use resilient-write

This project runs the resilient-write MCP server. Write files with its tools instead of raw
write/edit tools or shell redirection: every write is atomic, verified and journaled, and a
refused write returns a typed envelope that says what to do next.

| task | tool |
|---|---|
| create a file | `rw_safe_write` (mode `create`, the default: never clobbers) |
| replace a file you have read | `rw_safe_write` mode `overwrite` with `expected_prev_sha256` |
| change part of a file | `rw_safe_replace` (`dry_run: true` shows the diff; `edits` applies several at once) |
| add to the end of a file | `rw_safe_write` mode `append` |
| a large file or a long generation | `rw_chunk_write` per section, `rw_chunk_status` to resume, `rw_chunk_compose` |
| content that may hold tokens, keys or personal data | `rw_risk_score` first; if refused, `rw_redact` (`deposit: true`) and write the result |
| material that must not enter the tree | `rw_scratch_put`, referred to by its hash |
| several files that must change together | `rw_tx_begin`, `rw_tx_write` / `rw_tx_replace`, `rw_tx_commit` |
| check syntax before writing | `rw_validate` |
| undo a write | `rw_history`, then `rw_restore` |
| end a session or hand over | `rw_handoff_write`; the next session starts with `rw_handoff_read` |

When a tool fails, branch on the envelope: follow `suggested_action` (`redact`, `split`,
`escape`, `retry_later`, `ask_user`, `abort`). Never resend identical content after a
`content_filter` refusal or when `retry_budget` is 0.

Chunked writing: split at section boundaries; write chunks 1..N with `total_expected: N`;
after an interruption call `rw_chunk_status` and write only the `missing_indices`; then
`rw_chunk_compose` (`cleanup: true` once the output is verified).
{BLOCK_END}"
    )
}

/// `text` with the block inserted (appended) or replaced in place.
pub fn with_block(text: &str, block: &str) -> Result<String, String> {
    match (text.find(BLOCK_BEGIN), text.find(BLOCK_END)) {
        (Some(b), Some(e)) if e > b => {
            let end = e + BLOCK_END.len();
            Ok(format!("{}{block}{}", &text[..b], &text[end..]))
        }
        (None, None) => {
            let mut out = text.to_string();
            if !out.is_empty() {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push('\n');
            }
            out.push_str(block);
            out.push('\n');
            Ok(out)
        }
        _ => Err(format!(
            "has a `{BLOCK_BEGIN}` marker without a matching `{BLOCK_END}` after it"
        )),
    }
}

/// `text` of a JSON MCP config with our server set under `key`, other servers kept.
pub fn with_json_server(text: Option<&str>, key: &str, server: &Value) -> Result<String, String> {
    let mut root = match text {
        None => Value::Object(Map::new()),
        Some(t) if t.trim().is_empty() => Value::Object(Map::new()),
        Some(t) => serde_json::from_str::<Value>(t)
            .map_err(|e| format!("is not valid JSON ({e}; comments are not supported)"))?,
    };
    let Some(obj) = root.as_object_mut() else {
        return Err("is not a JSON object".into());
    };
    let servers = obj
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(servers) = servers.as_object_mut() else {
        return Err(format!("has a `{key}` that is not an object"));
    };
    if servers.get(SERVER_NAME) == Some(server)
        && let Some(t) = text
    {
        // Already there: keep the file exactly as it is (formatting, key order).
        return Ok(t.to_string());
    }
    servers.insert(SERVER_NAME.to_string(), server.clone());
    let mut out = serde_json::to_string_pretty(&root).map_err(|e| e.to_string())?;
    out.push('\n');
    Ok(out)
}

/// The Codex `config.toml` table for the server.
pub fn codex_snippet(command: &str) -> String {
    let quoted = |s: &str| toml::Value::String(s.to_string()).to_string();
    format!(
        "[mcp_servers.{SERVER_NAME}]\ncommand = {}\nargs = [\"serve\"]\n",
        quoted(command)
    )
}

/// `text` of `~/.codex/config.toml` with the snippet appended, or `None` when it already
/// defines the server (left alone: it is the user's).
pub fn with_codex_server(text: &str, command: &str) -> Result<Option<String>, String> {
    let parsed: toml::Table =
        toml::from_str(text).map_err(|e| format!("is not valid TOML ({e})"))?;
    let defined = parsed
        .get("mcp_servers")
        .and_then(|s| s.as_table())
        .is_some_and(|s| s.contains_key(SERVER_NAME));
    if defined {
        return Ok(None);
    }
    let mut out = text.to_string();
    if !out.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&codex_snippet(command));
    Ok(Some(out))
}

fn expand(clients: &[ClientKind]) -> Vec<ClientKind> {
    let all = [
        ClientKind::Claude,
        ClientKind::Cursor,
        ClientKind::Vscode,
        ClientKind::Codex,
    ];
    all.into_iter()
        .filter(|c| clients.contains(c) || clients.contains(&ClientKind::All))
        .collect()
}

/// The command clients should run: `resilient-write` when PATH finds this executable.
fn default_command() -> String {
    let exe = std::env::current_exe().ok();
    let canonical = exe.as_ref().and_then(|p| p.canonicalize().ok());
    let on_path = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            let found = d.join(SERVER_NAME).canonicalize().ok();
            found.is_some() && found == canonical
        })
    });
    match exe {
        Some(p) if !on_path => p.display().to_string(),
        _ => SERVER_NAME.to_string(),
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, InitError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| InitError::Malformed {
                path: path.display().to_string(),
                reason: "is not UTF-8 text".into(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InitError::Read {
            path: path.display().to_string(),
            source,
        }),
    }
}

/// Everything `init` would write for `clients` in `project`, computed before writing.
pub struct Plan {
    pub files: Vec<PlannedFile>,
    /// Text to show the user (snippets for files `init` does not edit).
    pub notes: Vec<String>,
}

pub fn plan(
    project: &Path,
    home: Option<&Path>,
    clients: &[ClientKind],
    command: &str,
    write_global: bool,
) -> Result<Plan, InitError> {
    let clients = expand(clients);
    let mut files = Vec::new();
    let mut notes = Vec::new();
    let shown = |p: &Path| {
        p.strip_prefix(project)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    };
    let malformed = |p: &Path, reason: String| InitError::Malformed {
        path: p.display().to_string(),
        reason,
    };
    let mut add = |path: PathBuf, old: Option<String>, new: String| {
        files.push(PlannedFile {
            shown: shown(&path),
            path,
            old,
            new,
        });
    };

    // Instruction files: CLAUDE.md for Claude Code, AGENTS.md for the others; a block
    // already present in the other file is refreshed too, so the two never disagree.
    let block = instruction_block();
    let wants_claude = clients.contains(&ClientKind::Claude);
    let wants_agents = clients.iter().any(|c| *c != ClientKind::Claude);
    for (name, wanted) in [("CLAUDE.md", wants_claude), ("AGENTS.md", wants_agents)] {
        let path = project.join(name);
        let old = read_optional(&path)?;
        let has_block = old.as_deref().is_some_and(|t| t.contains(BLOCK_BEGIN));
        if wanted || has_block {
            let new = with_block(old.as_deref().unwrap_or(""), &block)
                .map_err(|r| malformed(&path, r))?;
            add(path, old, new);
        }
    }

    let stdio = |extra: &[&str]| {
        let mut args = vec!["serve".to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    // Cursor and VS Code may start servers outside the project: name it explicitly.
    let folder_args = stdio(&[
        "-w",
        "${workspaceFolder}",
        "--state-dir",
        "${workspaceFolder}",
    ]);
    for client in &clients {
        let (rel, key, server) = match client {
            ClientKind::Claude => (
                ".mcp.json",
                "mcpServers",
                json!({"type": "stdio", "command": command, "args": stdio(&[]), "env": {}}),
            ),
            ClientKind::Cursor => (
                ".cursor/mcp.json",
                "mcpServers",
                json!({"command": command, "args": folder_args}),
            ),
            ClientKind::Vscode => (
                ".vscode/mcp.json",
                "servers",
                json!({"type": "stdio", "command": command, "args": folder_args}),
            ),
            ClientKind::Codex | ClientKind::All => continue,
        };
        let path = project.join(rel);
        let old = read_optional(&path)?;
        let new =
            with_json_server(old.as_deref(), key, &server).map_err(|r| malformed(&path, r))?;
        add(path, old, new);
    }

    if clients.contains(&ClientKind::Codex) {
        let snippet = codex_snippet(command);
        match (write_global, home) {
            (true, Some(home)) => {
                let path = home.join(".codex").join("config.toml");
                let old = read_optional(&path)?;
                match with_codex_server(old.as_deref().unwrap_or(""), command)
                    .map_err(|r| malformed(&path, r))?
                {
                    Some(new) => add(path, old, new),
                    None => notes.push(format!(
                        "{} already defines [mcp_servers.{SERVER_NAME}]; left as it is",
                        path.display()
                    )),
                }
            }
            (true, None) => {
                return Err(InitError::Setup(
                    "--write-global needs HOME to find ~/.codex/config.toml".into(),
                ));
            }
            (false, _) => notes.push(format!(
                "Codex reads MCP servers from ~/.codex/config.toml (yours, so not edited; \
                 --write-global adds it). Add:\n\n{snippet}"
            )),
        }
    }

    let path = project.join(".gitignore");
    let old = read_optional(&path)?;
    let new = with_gitignore_entry(old.as_deref().unwrap_or(""));
    add(path, old, new);
    Ok(Plan { files, notes })
}

fn diff(file: &PlannedFile) -> String {
    let old = file.old.as_deref().unwrap_or("");
    similar::TextDiff::from_lines(old, file.new.as_str())
        .unified_diff()
        .context_radius(2)
        .header(&format!("a/{}", file.shown), &format!("b/{}", file.shown))
        .to_string()
}

/// Write the planned files that change.
fn apply(service: &Service, files: &[PlannedFile]) -> Result<(), String> {
    for f in files.iter().filter(|f| f.change() != Change::Unchanged) {
        write_text(service, &f.path, f.old.as_deref(), &f.new)
            .map_err(|e| format!("writing {} failed: {e}", f.shown))?;
    }
    Ok(())
}

/// The first line after the shebang of the hook `init --pre-commit` writes: a hook holding it
/// is ours to replace.
pub const HOOK_MARKER: &str =
    "# resilient-write pre-commit hook (installed by `resilient-write init --pre-commit`)";

/// The pre-commit hook running `command scan --staged`.
pub fn hook_script(command: &str) -> String {
    let quoted = format!("'{}'", command.replace('\'', "'\\''"));
    format!(
        "#!/bin/sh\n{HOOK_MARKER}\n# Refuses a commit whose staged content holds a secret at or above medium.\n\
         # Accept a finding with `pragma: allowlist secret` on its line or its fingerprint in\n\
         # .resilient-write-ignore; bypass once with `git commit --no-verify`.\n\
         exec {quoted} scan --staged\n"
    )
}

/// What installing the hook at `path` does, given its current content.
#[derive(Debug, PartialEq, Eq)]
pub enum HookPlan {
    Create,
    Update,
    Unchanged,
    /// Another tool's hook is there: left alone.
    Foreign,
}

pub fn hook_plan(existing: Option<&str>, script: &str) -> HookPlan {
    match existing {
        None => HookPlan::Create,
        Some(t) if t == script => HookPlan::Unchanged,
        Some(t) if t.contains(HOOK_MARKER) => HookPlan::Update,
        Some(_) => HookPlan::Foreign,
    }
}

/// The hooks directory of the repository at `project` (honours `core.hooksPath` and worktrees).
fn hooks_dir(project: &Path) -> Result<PathBuf, String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(project)
        .args(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{} is not in a git repository ({})",
            project.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&out.stdout).trim_end_matches('\n'),
    ))
}

/// Install the pre-commit hook; exit 1 when a foreign hook is in the way.
fn install_hook(project: &Path, command: &str, print: bool) -> ExitCode {
    let dir = match hooks_dir(project) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("resilient-write init: {e}");
            return ExitCode::from(2);
        }
    };
    let path = dir.join("pre-commit");
    let existing = match read_optional(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("resilient-write init: {e}");
            return ExitCode::FAILURE;
        }
    };
    let script = hook_script(command);
    let plan = hook_plan(existing.as_deref(), &script);
    let shown = path.display();
    match plan {
        HookPlan::Unchanged => {
            println!("unchanged  {shown}");
            return ExitCode::SUCCESS;
        }
        HookPlan::Foreign => {
            eprintln!(
                "resilient-write init: {shown} exists and is not ours; left as it is. Add the line\n\
                 \n    {command} scan --staged\n\n\
                 to it, or, with the pre-commit framework, add the `resilient-write` hook of \
                 .pre-commit-hooks.yaml to .pre-commit-config.yaml"
            );
            return ExitCode::FAILURE;
        }
        HookPlan::Create | HookPlan::Update if print => {
            let verb = if plan == HookPlan::Create {
                "created"
            } else {
                "updated"
            };
            println!("would be {verb}  {shown}\n{script}");
            return ExitCode::SUCCESS;
        }
        HookPlan::Create | HookPlan::Update => {}
    }
    let written = (|| -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
        tmp.write_all(script.as_bytes())?;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o755))?;
        tmp.as_file().sync_all()?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    })();
    if let Err(e) = written {
        eprintln!("resilient-write init: writing {shown} failed: {e}");
        return ExitCode::FAILURE;
    }
    let verb = if plan == HookPlan::Create {
        "created"
    } else {
        "updated"
    };
    println!("{verb:<10} {shown}");
    ExitCode::SUCCESS
}

/// Run `init` for the project named by `-w` (or the working directory).
pub fn run(config: &Config, args: &InitArgs) -> ExitCode {
    let project = match config.store.workspaces.as_slice() {
        [] => config.store.cwd.clone(),
        [one] => config.store.cwd.join(one),
        _ => {
            eprintln!("resilient-write init: sets up one project; give at most one -w DIR");
            return ExitCode::from(2);
        }
    };
    let project = match project.canonicalize() {
        Ok(p) if p.is_dir() => p,
        _ => {
            eprintln!(
                "resilient-write init: {} is not a directory",
                project.display()
            );
            return ExitCode::from(2);
        }
    };
    let command = args.command.clone().unwrap_or_else(default_command);
    if args.pre_commit {
        return install_hook(&project, &command, args.print);
    }
    if args.hooks {
        return crate::cmd::hook::install::run(config, &project, &command, args.remove, args.print);
    }
    let plan = match plan(
        &project,
        config.store.home.as_deref(),
        &args.clients,
        &command,
        args.write_global,
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("resilient-write init: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.print {
        for f in &plan.files {
            match f.change() {
                Change::Unchanged => println!("unchanged  {}", f.shown),
                c => {
                    println!("would be {}  {}", c.label(), f.shown);
                    print!("{}", diff(f));
                }
            }
        }
    } else {
        let mut cfg = config.clone();
        cfg.store.cwd = project.clone();
        cfg.store.workspaces = vec![project.clone()];
        // ~/.codex joins the workspaces only when it is written (--write-global).
        for f in &plan.files {
            if let Some(dir) = f.path.parent()
                && !f.path.starts_with(&project)
            {
                if let Err(e) = std::fs::create_dir_all(dir) {
                    eprintln!("resilient-write init: cannot create {}: {e}", dir.display());
                    return ExitCode::FAILURE;
                }
                cfg.store.workspaces.push(dir.to_path_buf());
            }
        }
        if cfg.store.state_root.is_none() {
            cfg.store.state_root = Some(project.clone());
        }
        cfg.store.sweep_on_start = false;
        let Some(service) = super::service(cfg) else {
            return ExitCode::from(2);
        };
        if let Err(e) = apply(&service, &plan.files) {
            eprintln!("resilient-write init: {e}");
            return ExitCode::FAILURE;
        }
        for f in &plan.files {
            println!("{:<10} {}", f.change().label(), f.shown);
        }
    }
    for note in &plan.notes {
        println!("\n{note}");
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_is_appended_once_and_replaced_in_place() {
        let block = instruction_block();
        let first = with_block("# Project\n\nNotes.", &block).unwrap();
        assert!(first.starts_with("# Project\n\nNotes.\n\n"));
        assert_eq!(with_block(&first, &block).unwrap(), first);
        let edited = first.replace("| create a file |", "| old row |");
        let fixed = with_block(&format!("{edited}\nAfter.\n"), &block).unwrap();
        assert_eq!(fixed, format!("{first}\nAfter.\n"));
    }

    #[test]
    fn a_begin_marker_without_end_is_an_error() {
        let err = with_block(&format!("x\n{BLOCK_BEGIN}\nhalf"), "b").unwrap_err();
        assert!(err.contains("without a matching"));
    }

    #[test]
    fn json_config_keeps_other_servers_and_refuses_non_objects() {
        let server = json!({"command": "rw"});
        let out = with_json_server(
            Some(r#"{"mcpServers": {"other": {"command": "x"}}, "keep": 1}"#),
            "mcpServers",
            &server,
        )
        .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert_eq!(v["mcpServers"][SERVER_NAME], server);
        assert_eq!(v["keep"], 1);
        assert_eq!(
            with_json_server(Some(&out), "mcpServers", &server).unwrap(),
            out
        );
        assert!(with_json_server(Some("[1]"), "mcpServers", &server).is_err());
        assert!(with_json_server(Some(r#"{"mcpServers": 3}"#), "mcpServers", &server).is_err());
        assert!(with_json_server(Some("{ // c\n}"), "mcpServers", &server).is_err());
    }

    #[test]
    fn hook_is_created_once_updated_when_ours_and_never_replaces_a_foreign_one() {
        let script = hook_script("/opt/it's/rw");
        assert!(
            script.contains("exec '/opt/it'\\''s/rw' scan --staged"),
            "{script}"
        );
        assert_eq!(hook_plan(None, &script), HookPlan::Create);
        assert_eq!(hook_plan(Some(&script), &script), HookPlan::Unchanged);
        assert_eq!(
            hook_plan(Some(&hook_script("old")), &script),
            HookPlan::Update
        );
        assert_eq!(
            hook_plan(Some("#!/bin/sh\nmake lint\n"), &script),
            HookPlan::Foreign
        );
    }

    #[test]
    fn codex_snippet_is_added_once_and_never_replaces_the_users() {
        let out = with_codex_server("model = \"m\"\n", "/opt/rw \"x\"")
            .unwrap()
            .unwrap();
        let t: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(
            t["mcp_servers"][SERVER_NAME]["command"].as_str(),
            Some("/opt/rw \"x\"")
        );
        assert_eq!(with_codex_server(&out, "other").unwrap(), None);
        assert!(with_codex_server("[[", "rw").is_err());
    }
}
