//! The command line, and the only place that reads the environment: `resilient-write [serve]`
//! runs the MCP server over stdio, `serve --transport http|sse` over HTTP ([`serve`]); the
//! other subcommands are for people (`demo`, `init`, `doctor`, `validate`, `scan`, `journal`,
//! `analytics`, `history`, `restore`, `gc`, `recover`), one file each, and `hook` is for the
//! agents' own hooks. Flags and environment
//! variables are resolved here into a [`Config`]; nothing below reads the environment for
//! configuration.

use crate::dispatch::{Config, DEFAULT_MAX_WRITE_BYTES, ToolNames};
use crate::workspace::parse_workspace_env;
use analytics::AnalyticsCliArgs;
use history::{GcArgs, HistoryCliArgs, RestoreCliArgs};
use journal::JournalArgs;
use serve::ServeArgs;

pub mod analytics;
pub mod demo;
pub mod doctor;
pub mod history;
pub mod hook;
pub mod init;
pub mod journal;
pub mod logging;
pub mod scan;
pub mod serve;
pub mod validate;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "resilient-write",
    version,
    about = "A durable, fault-tolerant write surface for LLM coding agents (MCP server and CLI).",
    long_about = "A durable, fault-tolerant write surface for LLM coding agents.\n\n\
        With no subcommand, runs the MCP server over stdio (same as `serve`). Every write is \
        atomic (temp file, fsync, read-back hash check, rename, directory fsync), journaled in \
        .resilient_write/journal.jsonl, and every failure is a typed envelope.\n\n\
        Environment: RW_WORKSPACE (a path, a ':'-separated list or a JSON array of workspace \
        roots), RW_STATE_DIR (directory holding .resilient_write/, default the working \
        directory), RW_MAX_WRITE_BYTES, RW_POLICY_FILE, RW_AUTH_TOKEN (bearer token for \
        `serve --transport http|sse`), RW_TOOLS and RW_READ_ONLY (`serve --tools`, \
        `--read-only`), RUST_LOG."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// A workspace root tools may write beneath (repeatable). The working directory is added
    /// when it is not inside one. Also RW_WORKSPACE.
    #[arg(short = 'w', long = "workspace", global = true, value_name = "DIR")]
    pub workspaces: Vec<PathBuf>,
    /// Directory holding .resilient_write/ (default: the working directory).
    #[arg(long, env = "RW_STATE_DIR", global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Refuse writes larger than this many bytes (quota_exceeded/size_limit).
    #[arg(long, env = "RW_MAX_WRITE_BYTES", global = true, default_value_t = DEFAULT_MAX_WRITE_BYTES)]
    pub max_write_bytes: u64,
    /// How tools are listed: rw_name (underscore, accepted by every client) or rw.name
    /// (the original's dotted names). Calls accept both.
    #[arg(long, value_enum, global = true, default_value = "underscore")]
    pub tool_names: NameStyle,
    /// Policy YAML for the L0 classifier and the retry budget: absolute, or relative to the
    /// state root (default: .resilient_write/policy.yaml; missing = defaults).
    #[arg(long, env = "RW_POLICY_FILE", global = true, value_name = "FILE")]
    pub policy_file: Option<PathBuf>,
    /// Log level: error, warn, info, debug, trace, or a filter like `resilient_write=debug`
    /// (RUST_LOG overrides).
    #[arg(long, global = true, default_value = "warn")]
    pub log_level: String,
    /// Append logs to this file instead of stderr (stdout never carries logs).
    #[arg(long, global = true, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum NameStyle {
    Underscore,
    Dotted,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server (the default).
    Serve(ServeArgs),
    /// Show the newest journal rows.
    Journal(JournalArgs),
    /// List the journaled versions of a file (newest first).
    History(HistoryCliArgs),
    /// Put a file back to an earlier version (see `history`), or preview it with --diff; or every file of a transaction with --tx.
    Restore(RestoreCliArgs),
    /// Apply the history retention of the policy file to the object store.
    Gc(GcArgs),
    /// Finish committed transactions and roll back abandoned ones (also done at every start).
    Recover,
    /// Scan files, the git index (--staged) or history (--git) for secrets and what content
    /// filters reject; text, JSON or SARIF (a pre-commit hook and CI check).
    Scan(crate::cmd::scan::ScanArgs),
    /// Summarise the journal: writes, bytes, modes, callers, hot paths, sessions, velocity.
    Analytics(AnalyticsCliArgs),
    /// Replay the paper's motivating incident against the real server, step by step
    /// (start here: it shows every layer work in one command).
    Demo(crate::cmd::demo::DemoArgs),
    /// Set up a project for agents: the instruction block in CLAUDE.md/AGENTS.md, the MCP
    /// config of the chosen clients, and .resilient_write/ in .gitignore (idempotent).
    Init(crate::cmd::init::InitArgs),
    /// Check the configuration and the state directory; print each problem with its fix;
    /// repair what is safe with --fix. Exit 0 healthy, 1 problems remain.
    Doctor(crate::cmd::doctor::DoctorArgs),
    /// The agents' hook command: screen (L0), journal and keep the pre-image of the agents'
    /// own Write/Edit tools. Reads the hook JSON on stdin, answers in the agent's format.
    Hook(crate::cmd::hook::HookArgs),
    /// Check files' syntax (json, jsonl, yaml, toml, python, latex, markdown, xml, html):
    /// each error with line:col; exit 1 when any file is invalid.
    Validate(crate::cmd::validate::ValidateArgs),
}

/// The service a subcommand works on, or `None` after printing why its state directory is
/// refused (the caller exits 2).
pub(crate) fn service(config: Config) -> Option<std::sync::Arc<crate::dispatch::Service>> {
    match crate::dispatch::Service::start_checked(config) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("resilient-write: {e}");
            None
        }
    }
}

/// Build the service configuration from flags and environment.
pub fn config_from(global: &GlobalArgs) -> Result<Config, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let mut config = Config::new(cwd);
    // The crash and failure tests' fault points (honoured by debug builds only).
    if let Some(faults) = std::env::var_os("RW_FAULT_INJECT") {
        crate::pipeline::install_faults(&faults.to_string_lossy());
    }
    // The home directory itself is never a workspace; `init` writes client configs there.
    config.store.home = std::env::var_os("HOME").map(PathBuf::from);
    config.store.workspaces = global.workspaces.clone();
    if let Some(v) = std::env::var_os("RW_WORKSPACE") {
        let v = v.to_string_lossy();
        config.store.workspaces.extend(parse_workspace_env(&v)?);
    }
    config.store.state_root = global.state_dir.clone();
    config.store.policy_file = global.policy_file.clone();
    config.store.max_write_bytes = global.max_write_bytes;
    config.store.scratch_get_disabled =
        std::env::var_os(crate::scratch::DISABLE_GET_ENV).is_some_and(|v| !v.is_empty());
    config.tool_names = match global.tool_names {
        NameStyle::Underscore => ToolNames::Underscore,
        NameStyle::Dotted => ToolNames::Dotted,
    };
    Ok(config)
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // An agent reads exit status 2 of a hook as "block": a hook entry typed by hand with an
        // unknown agent or event is one stderr line and an allow, never a blocked agent.
        Err(e)
            if std::env::args_os().nth(1).is_some_and(|a| a == "hook")
                && !matches!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                ) =>
        {
            let first = e.to_string();
            let first = first.lines().next().unwrap_or_default();
            eprintln!("resilient-write hook: {first} (the edit is allowed)");
            return ExitCode::SUCCESS;
        }
        Err(e) => e.exit(),
    };
    // An agent reads exit status 2 of a hook as "block": `hook` never fails on configuration
    // (one stderr line, then the defaults), so a bad environment cannot stop an agent's edits.
    let hook = matches!(cli.command, Some(Command::Hook(_)));
    // doctor reports what the start-up notices say (an unignored state directory, a bad
    // policy) as findings; logged at the default level too, each was printed twice.
    let level = match cli.command {
        Some(Command::Doctor(_)) if cli.global.log_level == "warn" => "error",
        _ => cli.global.log_level.as_str(),
    };
    if let Err(e) = logging::init(level, cli.global.log_file.as_deref()) {
        eprintln!("resilient-write: {e}");
        if !hook {
            return ExitCode::from(2);
        }
    }
    let config = match config_from(&cli.global) {
        Ok(c) => c,
        Err(e) if hook => {
            eprintln!("resilient-write hook: {e}; using the defaults");
            Config::new(std::env::temp_dir())
        }
        Err(e) => {
            eprintln!("resilient-write: {e}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        None => match ServeArgs::from_env() {
            Ok(args) => serve::run(config, args),
            Err(e) => e.exit(),
        },
        Some(Command::Serve(args)) => serve::run(config, args),
        Some(Command::Journal(args)) => journal::run(config, args),
        Some(Command::Scan(args)) => crate::cmd::scan::run(&config, &args),
        Some(Command::Analytics(args)) => analytics::run(config, args),
        Some(Command::History(args)) => crate::cmd::history::history(config, args),
        Some(Command::Restore(args)) => crate::cmd::history::restore(config, args),
        Some(Command::Gc(args)) => crate::cmd::history::gc(config, args),
        Some(Command::Recover) => crate::cmd::history::recover(config),
        Some(Command::Demo(args)) => crate::cmd::demo::run(&config, &args),
        Some(Command::Init(args)) => crate::cmd::init::run(&config, &args),
        Some(Command::Doctor(args)) => crate::cmd::doctor::run(&config, &args),
        Some(Command::Validate(args)) => crate::cmd::validate::run(&args),
        Some(Command::Hook(args)) => crate::cmd::hook::run(&config, &args),
    }
}
