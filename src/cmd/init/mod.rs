//! `resilient-write init`: set up a project for agents (paper section 7.2, "Agent awareness
//! and adoption"). Registering the server makes the tools available; an instruction file makes
//! them preferred. For the chosen clients ([`clients::CLIENTS`], one row per client), `init`:
//!
//! - adds a marked block (`<!-- resilient-write:begin -->` ... `<!-- resilient-write:end -->`)
//!   with the paper's decision table, in our tool names, to the instruction file each client's
//!   agent reads (`CLAUDE.md`, `AGENTS.md`, `GEMINI.md`); a block already there is replaced in
//!   place, and an existing block in another of these files is kept in step;
//! - adds or updates the server entry in each client's MCP config: project files (`.mcp.json`,
//!   `.cursor/mcp.json`, `.vscode/mcp.json`, `.gemini/settings.json`) are written; the user's
//!   own files (Claude Desktop, Windsurf, Zed, Codex) only with `--write-global`, otherwise the
//!   change is shown as a diff. JSON with comments is edited in place ([`jsonc`]) and Codex's
//!   TOML through `toml_edit` ([`toml_cfg`]): comments, other servers and key order are kept;
//! - adds `.resilient_write/` to `.gitignore`.
//!
//! Guarantees: every file is planned before any is written, so a malformed existing file (JSON
//! that does not parse, a begin marker without its end) stops the command with a clear error
//! and nothing is written. Writes go through the service's `safe_write` (the write pipeline:
//! atomic, fsynced, journaled), as `create` for new files and as `overwrite` guarded by the
//! hash read when planning, so a file edited meanwhile is never clobbered. A file whose
//! content would not change is not written: a second run reports every file `unchanged` and
//! leaves them byte-identical.

pub mod clients;
pub mod jsonc;
pub mod pre_commit;
pub mod toml_cfg;

use crate::cmd::hook::{Agent, install};
use crate::dispatch::{Config, Service};
use clap::{Args, ValueEnum};
use clients::{Format, Launch, Scope};
use resilient_write_core::maint::gitignore::{with_gitignore_entry, write_text};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use pre_commit::{HOOK_MARKER, HookPlan, hook_plan, hook_script};

/// Markers of the block `init` owns in an instruction file.
pub const BLOCK_BEGIN: &str = "<!-- resilient-write:begin -->";
pub const BLOCK_END: &str = "<!-- resilient-write:end -->";
/// The server's name in every client config.
pub const SERVER_NAME: &str = "resilient-write";
/// Every instruction file `init` may keep a block in.
const INSTRUCTION_FILES: [&str; 3] = ["CLAUDE.md", "AGENTS.md", "GEMINI.md"];

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Client(s) to set up (repeatable; default claude): claude (Claude Code: CLAUDE.md,
    /// .mcp.json), claude-desktop (its user config), cursor (.cursor/mcp.json), vscode
    /// (.vscode/mcp.json), windsurf (~/.codeium/windsurf/mcp_config.json), zed
    /// (~/.config/zed/settings.json), gemini (GEMINI.md, .gemini/settings.json), codex
    /// (~/.codex/config.toml), all. Cursor, VS Code, Windsurf, Zed and Codex get AGENTS.md.
    /// With --hooks: the agents whose hooks to install (claude, cursor, gemini, all).
    #[arg(long = "client", value_enum)]
    pub clients: Vec<ClientKind>,
    /// Show what would change (as diffs) and write nothing.
    #[arg(long, visible_alias = "print")]
    pub dry_run: bool,
    /// Also edit the user's own config files (Claude Desktop, Windsurf, Zed, Codex); without
    /// it their change is shown as a diff to apply by hand.
    #[arg(long)]
    pub write_global: bool,
    /// The command clients run to start the server (default: this executable's absolute
    /// path, which works whatever PATH the client sees).
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// Only install a git pre-commit hook running `scan --staged` (for repositories that do not
    /// use the pre-commit framework; with it, use the repository's .pre-commit-hooks.yaml).
    #[arg(long, conflicts_with_all = ["clients", "write_global"])]
    pub pre_commit: bool,
    /// Only install the agents' hooks on their own edits and shell commands, and after our
    /// MCP tools (`resilient-write hook`): Claude Code
    /// .claude/settings.json, Cursor .cursor/hooks.json, Gemini CLI .gemini/settings.json.
    /// For the agents named with --client; without it, for the agents already set up in the
    /// project (their MCP entry or our hooks are there).
    #[arg(long, conflicts_with_all = ["write_global", "pre_commit"])]
    pub hooks: bool,
    /// With --hooks: remove those hook entries instead (other hooks are kept).
    #[arg(long, requires = "hooks")]
    pub remove: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientKind {
    Claude,
    ClaudeDesktop,
    Cursor,
    Vscode,
    Windsurf,
    Zed,
    Gemini,
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

/// The agent instructions: the paper's decision table (section 7.2) in our tool names, and
/// the toolsets that list our tools beyond the original's (named from the table the server
/// uses, so the two cannot drift).
pub fn instruction_block() -> String {
    let toolsets: Vec<String> = crate::tools::toolsets::SETS
        .iter()
        .map(|s| {
            let tools: Vec<String> = s.tools.iter().map(|t| format!("`rw_{t}`")).collect();
            format!("- `{}`: {}", s.name, tools.join(", "))
        })
        .collect();
    let toolsets = toolsets.join("\n");
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

Tools beyond the original's are listed once their toolset is enabled: one `rw_toolsets` call
with `enable: [\"<toolset>\"]` (or `[\"all\"]`) adds them for the session. If your tool list
does not change (Codex), `rw_toolsets` with `call` and `arguments` runs one.
{toolsets}
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

/// The command clients should run: this executable's absolute path (clients started from a
/// desktop do not see the shell's PATH, so a bare name may not resolve there).
fn default_command() -> Result<String, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this executable's path ({e}); give --command"))?;
    Ok(exe.canonicalize().unwrap_or(exe).display().to_string())
}

pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, InitError> {
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
    /// Text to show the user (changes to the user's files, not made without --write-global).
    pub notes: Vec<String>,
}

pub fn plan(
    project: &Path,
    home: Option<&Path>,
    kinds: &[ClientKind],
    command: &str,
    write_global: bool,
) -> Result<Plan, InitError> {
    let selected = clients::selected(kinds);
    let mut files: Vec<PlannedFile> = Vec::new();
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

    // Instruction files: the ones the chosen clients read, and any already holding a block
    // (refreshed so they never disagree).
    let block = instruction_block();
    for name in INSTRUCTION_FILES {
        let wanted = selected.iter().any(|c| c.instructions == Some(name));
        let path = project.join(name);
        let old = read_optional(&path)?;
        let has_block = old.as_deref().is_some_and(|t| t.contains(BLOCK_BEGIN));
        if wanted || has_block {
            let new = with_block(old.as_deref().unwrap_or(""), &block)
                .map_err(|r| malformed(&path, r))?;
            files.push(PlannedFile {
                shown: shown(&path),
                path,
                old,
                new,
            });
        }
    }

    let launch = Launch {
        command: command.to_string(),
        project: project.to_path_buf(),
    };
    for client in &selected {
        let Some(path) = clients::config_path(client, project, home) else {
            return Err(InitError::Setup(format!(
                "{} reads a file in the home directory, and HOME is not set",
                client.label
            )));
        };
        let old = read_optional(&path)?;
        let new = match client.format {
            Format::Json(keys) => {
                jsonc::with_server(old.as_deref(), keys, SERVER_NAME, &(client.entry)(&launch))
            }
            Format::CodexToml => toml_cfg::with_server(
                old.as_deref().unwrap_or(""),
                SERVER_NAME,
                command,
                &launch.args(),
            ),
        }
        .map_err(|r| malformed(&path, r))?;
        let file = PlannedFile {
            shown: shown(&path),
            path,
            old,
            new,
        };
        if client.scope == Scope::User && !write_global {
            if file.change() != Change::Unchanged {
                notes.push(format!(
                    "{} reads {} (yours, so not edited; --write-global applies it):\n{}",
                    client.label,
                    file.shown,
                    diff(&file)
                ));
            }
            continue;
        }
        files.push(file);
    }

    let path = project.join(".gitignore");
    let old = read_optional(&path)?;
    let new = with_gitignore_entry(old.as_deref().unwrap_or(""));
    files.push(PlannedFile {
        shown: shown(&path),
        path,
        old,
        new,
    });
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
        write_text(service.store(), &f.path, f.old.as_deref(), &f.new)
            .map_err(|e| format!("writing {} failed: {e}", f.shown))?;
    }
    Ok(())
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
    let command = match args.command.clone().map_or_else(default_command, Ok) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("resilient-write init: {e}");
            return ExitCode::from(2);
        }
    };
    if args.pre_commit {
        return pre_commit::install_hook(&project, &command, args.dry_run);
    }
    if args.hooks {
        let agents = match hook_agents(&project, &args.clients, &command, args.remove) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("resilient-write init: {e}");
                return ExitCode::from(2);
            }
        };
        return crate::cmd::hook::install::run(
            config,
            &project,
            &agents,
            &command,
            args.remove,
            args.dry_run,
        );
    }
    let kinds = match args.clients.as_slice() {
        [] => &[ClientKind::Claude][..],
        k => k,
    };
    let plan = match plan(
        &project,
        config.store.home.as_deref(),
        kinds,
        &command,
        args.write_global,
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("resilient-write init: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.dry_run {
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
        // A command does not warn about what it is fixing: this run adds the entry.
        if plan
            .files
            .iter()
            .any(|f| f.path == project.join(".gitignore") && f.change() != Change::Unchanged)
        {
            cfg.store.warn_not_git_ignored = false;
        }
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

/// The agents `init --hooks` acts on: those `clients` name (`all`: every agent with hooks);
/// without `--client`, those set up in `project` (our MCP entry in its project config, or our
/// hooks already in its settings), and with `--remove` every agent whose settings file exists.
fn hook_agents(
    project: &Path,
    clients: &[ClientKind],
    command: &str,
    remove: bool,
) -> Result<Vec<Agent>, String> {
    let all = [Agent::ClaudeCode, Agent::Cursor, Agent::Gemini];
    if !clients.is_empty() {
        let mut agents = Vec::new();
        for &kind in clients {
            let wanted: &[Agent] = match kind {
                ClientKind::All => &all,
                ClientKind::Claude => &[Agent::ClaudeCode],
                ClientKind::Cursor => &[Agent::Cursor],
                ClientKind::Gemini => &[Agent::Gemini],
                other => {
                    let label = clients::CLIENTS
                        .iter()
                        .find(|c| c.kind == other)
                        .map_or("that client", |c| c.label);
                    return Err(format!(
                        "{label} has no native-edit hooks to install; --hooks takes --client \
                         claude, cursor, gemini or all (nothing was written)"
                    ));
                }
            };
            for a in wanted {
                if !agents.contains(a) {
                    agents.push(*a);
                }
            }
        }
        return Ok(agents);
    }
    let registered = clients::registered(project, None);
    let agents: Vec<Agent> = all
        .into_iter()
        .filter(|&agent| {
            let settings = project.join(install::settings_file(agent));
            let text = std::fs::read_to_string(&settings).ok();
            let kind = match agent {
                Agent::ClaudeCode => ClientKind::Claude,
                Agent::Cursor => ClientKind::Cursor,
                Agent::Gemini => ClientKind::Gemini,
            };
            let has_server = registered.iter().any(|r| r.kind == kind);
            let has_ours = text.as_deref().is_some_and(|t| {
                matches!(install::edit(Some(t), agent, command, true), Ok(Some(_)))
            });
            if remove {
                text.is_some()
            } else {
                has_server || has_ours
            }
        })
        .collect();
    if agents.is_empty() && !remove {
        return Err(
            "no agent is set up in this project yet: name the agents with \
             `init --hooks --client claude` (or cursor, gemini, all), or set one up first with \
             `init --client claude` (nothing was written)"
                .into(),
        );
    }
    Ok(agents)
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
    fn the_block_names_every_toolset_and_its_tools() {
        let block = instruction_block();
        assert!(block.contains("`rw_toolsets`"), "{block}");
        for set in crate::tools::toolsets::SETS {
            assert!(
                block.contains(&format!("- `{}`: ", set.name)),
                "{}",
                set.name
            );
            for t in set.tools {
                assert!(block.contains(&format!("`rw_{t}`")), "{t}");
            }
        }
    }

    #[test]
    fn a_begin_marker_without_end_is_an_error() {
        let err = with_block(&format!("x\n{BLOCK_BEGIN}\nhalf"), "b").unwrap_err();
        assert!(err.contains("without a matching"));
    }
}
