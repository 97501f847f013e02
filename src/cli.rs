//! The command line: `resilient-write [serve]` runs the MCP server over stdio; other
//! subcommands are for people (`journal`). Flags and environment variables are resolved here
//! into a [`Config`]; nothing below this module reads the environment for configuration.

use crate::mcp::McpServer;
use crate::service::{Config, DEFAULT_MAX_WRITE_BYTES, Service, ToolNames};
use crate::workspace::parse_workspace_env;
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
        directory), RW_MAX_WRITE_BYTES, RUST_LOG."
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
    /// Log level (logs go to stderr; RUST_LOG overrides).
    #[arg(long, global = true, default_value = "warn")]
    pub log_level: String,
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
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Transport: stdio.
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: Transport,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Transport {
    Stdio,
}

#[derive(Debug, Args)]
pub struct JournalArgs {
    /// How many rows.
    #[arg(short, long, default_value_t = 20)]
    pub n: usize,
    /// Only rows for this path.
    #[arg(long)]
    pub path: Option<String>,
    /// Only rows with this mode.
    #[arg(long)]
    pub mode: Option<String>,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// Build the service configuration from flags and environment.
pub fn config_from(global: &GlobalArgs) -> Result<Config, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let mut config = Config::new(cwd);
    config.workspaces = global.workspaces.clone();
    if let Some(v) = std::env::var_os("RW_WORKSPACE") {
        let v = v.to_string_lossy();
        config.workspaces.extend(parse_workspace_env(&v)?);
    }
    config.state_root = global.state_dir.clone();
    config.max_write_bytes = global.max_write_bytes;
    config.tool_names = match global.tool_names {
        NameStyle::Underscore => ToolNames::Underscore,
        NameStyle::Dotted => ToolNames::Dotted,
    };
    Ok(config)
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.global.log_level);
    let config = match config_from(&cli.global) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("resilient-write: {e}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        None
        | Some(Command::Serve(ServeArgs {
            transport: Transport::Stdio,
        })) => serve_stdio(config),
        Some(Command::Journal(args)) => journal(config, args),
    }
}

fn serve_stdio(config: Config) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("resilient-write: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        use rmcp::ServiceExt;
        let service = Service::start(config);
        let server = McpServer::new(service);
        let running = match server.serve((
            crate::stdio::sanitized(tokio::io::stdin()),
            tokio::io::stdout(),
        )).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("MCP initialisation failed: {e}");
                return ExitCode::FAILURE;
            }
        };
        match running.waiting().await {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("MCP server stopped: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

fn journal(mut config: Config, args: JournalArgs) -> ExitCode {
    config.sweep_on_start = false;
    let service = Service::start(config);
    let mut call = serde_json::json!({ "n": args.n });
    if let Some(p) = args.path {
        call["filter_path"] = p.into();
    }
    if let Some(m) = args.mode {
        call["filter_mode"] = m.into();
    }
    match service.call("journal_tail", call) {
        Ok(v) => {
            let rows = v["entries"].as_array().cloned().unwrap_or_default();
            if args.json {
                for r in rows {
                    println!("{r}");
                }
            } else {
                println!(
                    "{:<27} {:<9} {:>10} {:<12} path",
                    "ts", "mode", "bytes", "sha256"
                );
                for r in rows {
                    let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
                    println!(
                        "{:<27} {:<9} {:>10} {:<12} {}",
                        s("ts"),
                        s("mode"),
                        r["bytes"].as_u64().unwrap_or(0),
                        s("sha256").chars().take(12).collect::<String>(),
                        s("path")
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(env) => {
            eprintln!(
                "resilient-write: {}",
                env.context
                    .get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("failed")
            );
            ExitCode::FAILURE
        }
    }
}
