//! The command line, and the only place that reads the environment: `resilient-write [serve]`
//! runs the MCP server over stdio, `serve --transport http|sse` over HTTP ([`serve`]); the
//! other subcommands are for people (`demo`, `init`, `doctor`, `validate`, `scan`, `journal`,
//! `analytics`, `history`, `restore`, `gc`, `recover`), one file each, and `hook` is for the
//! agents' own hooks. Flags and environment
//! variables are resolved here into a [`Config`]; nothing below reads the environment for
//! configuration.

use crate::dispatch::{Config, DEFAULT_MAX_WRITE_BYTES, ToolNames};
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
pub mod people;
pub mod scan;
pub mod serve;
pub mod since;
pub mod style;
pub mod validate;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Any non-empty value makes the scratchpad write-only (`scratch_get` refuses, naming it).
pub const SCRATCH_DISABLE_GET_ENV: &str = "RW_SCRATCH_DISABLE_GET";

/// Parse `RW_WORKSPACE`: a JSON array of paths, or an `os.pathsep`-separated list.
pub fn parse_workspace_env(value: &str) -> std::result::Result<Vec<PathBuf>, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    if trimmed.starts_with('[') {
        let list: Vec<String> = serde_json::from_str(trimmed)
            .map_err(|e| format!("RW_WORKSPACE is not a JSON array of strings: {e}"))?;
        return Ok(list
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect());
    }
    Ok(std::env::split_paths(trimmed)
        .filter(|p| !p.as_os_str().is_empty())
        .collect())
}

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
    /// The options of the bare invocation, which is `serve`: these are `serve`'s own options.
    /// Before another subcommand only the state, policy and log options are accepted (for
    /// scripts written when every option was global); that subcommand's own take precedence.
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub log: LogArgs,
    #[command(flatten)]
    pub service: ServiceArgs,
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Where the state lives: the options of every subcommand that opens the journal.
#[derive(Debug, Clone, Default, Args)]
pub struct StateArgs {
    /// A workspace root tools may write beneath (repeatable). The working directory is added
    /// when it is not inside one. Also RW_WORKSPACE.
    #[arg(short = 'w', long = "workspace", value_name = "DIR")]
    pub workspaces: Vec<PathBuf>,
    /// Directory holding .resilient_write/ (default: the working directory).
    #[arg(long, env = "RW_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// The policy file, read by every subcommand that screens or keeps history.
#[derive(Debug, Clone, Default, Args)]
pub struct PolicyArgs {
    /// Policy YAML for the L0 classifier and the retry budget: absolute, or relative to the
    /// state root (default: .resilient_write/policy.yaml; missing = defaults; keys in
    /// docs/guide/policy.md).
    #[arg(long, env = "RW_POLICY_FILE", value_name = "FILE")]
    pub policy_file: Option<PathBuf>,
}

/// Logging, for every subcommand that starts the service.
#[derive(Debug, Clone, Default, Args)]
pub struct LogArgs {
    /// Log level: error, warn, info, debug, trace, or a filter like `resilient_write=debug`
    /// (RUST_LOG overrides) [default: warn].
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Append logs to this file instead of stderr (stdout never carries logs).
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
}

/// What only the server needs: the write cap and how tools are named.
#[derive(Debug, Clone, Default, Args)]
pub struct ServiceArgs {
    /// Refuse writes larger than this many bytes (quota_exceeded/size_limit)
    /// [default: 67108864].
    #[arg(long, env = "RW_MAX_WRITE_BYTES", value_name = "BYTES")]
    pub max_write_bytes: Option<u64>,
    /// How tools are listed: rw_name (underscore, accepted by every client) or rw.name
    /// (the original's dotted names). Calls accept both [default: underscore].
    #[arg(long, value_enum, value_name = "STYLE")]
    pub tool_names: Option<NameStyle>,
}

/// Every option that shapes the service, resolved from the top level and the subcommand.
#[derive(Debug, Clone)]
pub struct GlobalArgs {
    pub workspaces: Vec<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub max_write_bytes: u64,
    pub tool_names: NameStyle,
    pub policy_file: Option<PathBuf>,
    pub log_level: String,
    pub log_file: Option<PathBuf>,
}

/// The state, policy and log options of a subcommand that opens the journal.
#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub log: LogArgs,
}

#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum NameStyle {
    #[default]
    Underscore,
    Dotted,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server (the default).
    Serve {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        service: ServiceArgs,
        #[command(flatten)]
        args: ServeArgs,
    },
    /// Show the newest journal rows.
    Journal {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        args: JournalArgs,
    },
    /// List the journaled versions of a file (newest first).
    History {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        args: HistoryCliArgs,
    },
    /// Put a file back to an earlier version (see `history`), or preview it with --diff; or every file of a transaction with --tx.
    Restore {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        args: RestoreCliArgs,
    },
    /// Apply the history retention of the policy file to the object store, and drop the
    /// first results of keyed calls older than its idempotency.max_age.
    Gc {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        args: GcArgs,
    },
    /// Finish committed transactions and roll back abandoned ones (also done at every start).
    Recover {
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Scan files, the git index (--staged) or history (--git) for secrets and what content
    /// filters reject; text, JSON or SARIF (a pre-commit hook and CI check).
    Scan {
        #[command(flatten)]
        policy: PolicyArgs,
        #[command(flatten)]
        args: crate::cmd::scan::ScanArgs,
    },
    /// Summarise the journal: writes, bytes, modes, callers, hot paths, sessions, velocity.
    Analytics {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        args: AnalyticsCliArgs,
    },
    /// Replay the paper's motivating incident against the real server, step by step
    /// (start here: it shows every layer work in one command).
    Demo {
        #[command(flatten)]
        policy: PolicyArgs,
        #[command(flatten)]
        args: crate::cmd::demo::DemoArgs,
    },
    /// Set up a project for agents: the instruction block in CLAUDE.md/AGENTS.md, the MCP
    /// config of the chosen clients, and .resilient_write/ in .gitignore (idempotent).
    Init {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        args: crate::cmd::init::InitArgs,
    },
    /// Check the configuration and the state directory; print each problem with its fix;
    /// repair what is safe with --fix. Exit 0 healthy, 1 problems remain.
    Doctor {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        args: crate::cmd::doctor::DoctorArgs,
    },
    /// The agents' hook command: screen (L0), journal and keep the pre-image of the agents'
    /// own Write/Edit tools. Reads the hook JSON on stdin, answers in the agent's format.
    Hook {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        args: crate::cmd::hook::HookArgs,
    },
    /// Check files' syntax (json, jsonl, yaml, toml, python, latex, markdown, xml, html):
    /// each error with line:col; exit 1 when any file is invalid.
    Validate(crate::cmd::validate::ValidateArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(people::CompletionsArgs),
    /// Print the man page (roff) to stdout: `resilient-write man > resilient-write.1`.
    Man,
    /// The shell hooks' watcher of one workspace, started by the first hook (not for people).
    #[command(hide = true)]
    ShellWatcher(crate::cmd::hook::shell::WatcherArgs),
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
        resilient_write_core::write::pipeline::install_faults(&faults.to_string_lossy());
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
    config.store.scratch_get_disabled = std::env::var_os(SCRATCH_DISABLE_GET_ENV)
        .is_some_and(|v| !v.is_empty())
        .then(|| SCRATCH_DISABLE_GET_ENV.to_string());
    config.tool_names = match global.tool_names {
        NameStyle::Underscore => ToolNames::Underscore,
        NameStyle::Dotted => ToolNames::Dotted,
    };
    Ok(config)
}

/// The first of the bare invocation's serve options typed on the command line before a
/// subcommand that does not take it there: before `serve`, the HTTP options (which were never
/// accepted there); before any other subcommand, every serve option.
fn misplaced_serve_option(m: &clap::ArgMatches, command: &Command) -> Option<String> {
    let before_serve = matches!(command, Command::Serve { .. });
    let top = Cli::command();
    top.get_arguments()
        .filter(|a| {
            let id = a.get_id().as_str();
            let shared = matches!(
                id,
                "workspaces" | "state_dir" | "policy_file" | "log_level" | "log_file"
            );
            // Before `serve`, the write cap and tool names apply (they were global).
            let merged = before_serve && matches!(id, "max_write_bytes" | "tool_names");
            !(shared || merged)
        })
        .find(|a| {
            m.value_source(a.get_id().as_str()) == Some(clap::parser::ValueSource::CommandLine)
        })
        .map(|a| format!("--{}", a.get_long().unwrap_or(a.get_id().as_str())))
}

/// The parsed command line: the subcommand (`None` = serve), the serve options and the
/// resolved global options (a subcommand's own state, policy and log options win over the
/// ones typed before it).
fn resolve(cli: Cli) -> (Option<Command>, ServeArgs, GlobalArgs) {
    let Cli {
        state,
        policy,
        log,
        service,
        serve,
        command,
    } = cli;
    let (state, policy, log, service) = match &command {
        Some(
            Command::Serve { common, .. }
            | Command::Journal { common, .. }
            | Command::History { common, .. }
            | Command::Restore { common, .. }
            | Command::Gc { common, .. }
            | Command::Recover { common }
            | Command::Analytics { common, .. }
            | Command::Init { common, .. }
            | Command::Doctor { common, .. }
            | Command::Hook { common, .. },
        ) => {
            // Before `serve` too, the write cap and the tool names apply (they were global).
            let service = match &command {
                Some(Command::Serve { service: own, .. }) => ServiceArgs {
                    max_write_bytes: own.max_write_bytes.or(service.max_write_bytes),
                    tool_names: own.tool_names.or(service.tool_names),
                },
                _ => service,
            };
            (
                merge_state(&common.state, state),
                common.policy.policy_file.clone().or(policy.policy_file),
                LogArgs {
                    log_level: common.log.log_level.clone().or(log.log_level),
                    log_file: common.log.log_file.clone().or(log.log_file),
                },
                service,
            )
        }
        Some(Command::Scan { policy: p, .. } | Command::Demo { policy: p, .. }) => (
            state,
            p.policy_file.clone().or(policy.policy_file),
            log,
            service,
        ),
        _ => (state, policy.policy_file, log, service),
    };
    let global = GlobalArgs {
        workspaces: state.workspaces,
        state_dir: state.state_dir,
        max_write_bytes: service.max_write_bytes.unwrap_or(DEFAULT_MAX_WRITE_BYTES),
        tool_names: service.tool_names.unwrap_or_default(),
        policy_file: policy,
        log_level: log.log_level.unwrap_or_else(|| "warn".into()),
        log_file: log.log_file,
    };
    let (command, serve) = match command {
        Some(Command::Serve { args, .. }) => (None, args),
        other => (other, serve),
    };
    (command, serve, global)
}

/// A subcommand's workspaces and state directory, else the ones typed before it.
fn merge_state(sub: &StateArgs, top: StateArgs) -> StateArgs {
    StateArgs {
        workspaces: if sub.workspaces.is_empty() {
            top.workspaces
        } else {
            sub.workspaces.clone()
        },
        state_dir: sub.state_dir.clone().or(top.state_dir),
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (m, cli)));
    let (matches, cli) = match parsed {
        Ok(p) => p,
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
    // The bare invocation's options are serve's: typed before a subcommand that does not
    // take them there they would be silently ignored, so they are refused (exit 2, like any
    // other usage error).
    if let Some(command) = &cli.command
        && let Some(flag) = misplaced_serve_option(&matches, command)
    {
        let name = matches.subcommand_name().unwrap_or("the subcommand");
        eprintln!(
            "resilient-write: {flag} is an option of `serve` (the bare invocation); give it \
             after `{name}` if it takes it (see `resilient-write {name} --help`)"
        );
        return ExitCode::from(2);
    }
    let (command, serve_args, global) = resolve(cli);
    match command {
        Some(Command::Completions(args)) => return people::completions(&args),
        Some(Command::Man) => return people::man(),
        Some(Command::Validate(args)) => return crate::cmd::validate::run(&args),
        Some(Command::ShellWatcher(args)) => return crate::cmd::hook::shell::watcher(&args),
        _ => {}
    }
    // An agent reads exit status 2 of a hook as "block": `hook` never fails on configuration
    // (one stderr line, then the defaults), so a bad environment cannot stop an agent's edits.
    let hook = matches!(command, Some(Command::Hook { .. }));
    // doctor reports what the start-up notices say (an unignored state directory, a bad
    // policy) as findings; logged at the default level too, each was printed twice.
    let level = match command {
        Some(Command::Doctor { .. }) if global.log_level == "warn" => {
            "error,resilient_write_core::notices=off"
        }
        _ => global.log_level.as_str(),
    };
    if let Err(e) = logging::init(level, global.log_file.as_deref()) {
        eprintln!("resilient-write: {e}");
        if !hook {
            return ExitCode::from(2);
        }
    }
    let config = match config_from(&global) {
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
    match command {
        None | Some(Command::Serve { .. }) => serve::run(config, serve_args),
        Some(Command::Journal { args, .. }) => journal::run(config, args),
        Some(Command::Scan { args, .. }) => crate::cmd::scan::run(&config, &args),
        Some(Command::Analytics { args, .. }) => analytics::run(config, args),
        Some(Command::History { args, .. }) => crate::cmd::history::history(config, args),
        Some(Command::Restore { args, .. }) => crate::cmd::history::restore(config, args),
        Some(Command::Gc { args, .. }) => crate::cmd::history::gc(config, args),
        Some(Command::Recover { .. }) => crate::cmd::history::recover(config),
        Some(Command::Demo { args, .. }) => crate::cmd::demo::run(&config, &args),
        Some(Command::Init { args, .. }) => crate::cmd::init::run(&config, &args),
        Some(Command::Doctor { args, .. }) => crate::cmd::doctor::run(&config, &args),
        Some(Command::Hook { args, .. }) => crate::cmd::hook::run(&config, &args),
        Some(Command::Validate(args)) => crate::cmd::validate::run(&args),
        Some(Command::Completions(args)) => people::completions(&args),
        Some(Command::Man) => people::man(),
        Some(Command::ShellWatcher(args)) => crate::cmd::hook::shell::watcher(&args),
    }
}

#[cfg(test)]
mod workspace_env_tests {
    use super::*;

    #[test]
    fn env_accepts_json_array_and_pathsep_list() {
        assert_eq!(
            parse_workspace_env(r#"["/a","/b"]"#).unwrap(),
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert_eq!(
            parse_workspace_env("/a:/b").unwrap(),
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert!(parse_workspace_env("[1,2]").is_err());
    }
}
