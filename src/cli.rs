//! The command line: `resilient-write [serve]` runs the MCP server over stdio, `serve
//! --transport http|sse` over HTTP (see [`crate::http`]); other subcommands are for people
//! (`demo`, `init`, `doctor`, `validate`, `journal`, `analytics`, ...). Flags and environment
//! variables are resolved here
//! into a [`Config`]; nothing below this module reads the environment for configuration.

use crate::dispatch::{Config, DEFAULT_MAX_WRITE_BYTES, Service, ToolNames};
use crate::http::HttpOptions;
use crate::http::guard::Token;
use crate::mcp::McpServer;
use crate::shutdown::{Drain, Tracked};
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
        directory), RW_MAX_WRITE_BYTES, RW_POLICY_FILE, RW_AUTH_TOKEN (bearer token for \
        `serve --transport http|sse`), RUST_LOG."
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
    /// Put a file back to an earlier version (see `history`), or preview it with --diff.
    Restore(RestoreCliArgs),
    /// Apply the history retention of the policy file to the object store.
    Gc(GcArgs),
    /// Finish committed transactions and roll back abandoned ones (also done at every start).
    Recover,
    /// Scan files for secrets and other content filters reject (usable as a pre-commit hook).
    Scan(crate::scan::ScanArgs),
    /// Summarise the journal: writes, bytes, modes, callers, hot paths, sessions, velocity.
    Analytics(AnalyticsCliArgs),
    /// Replay the paper's motivating incident against the real server, step by step
    /// (start here: it shows every layer work in one command).
    Demo(crate::demo::DemoArgs),
    /// Set up a project for agents: the instruction block in CLAUDE.md/AGENTS.md, the MCP
    /// config of the chosen clients, and .resilient_write/ in .gitignore (idempotent).
    Init(crate::init::InitArgs),
    /// Check the configuration and the state directory; print each problem with its fix;
    /// repair what is safe with --fix. Exit 0 healthy, 1 problems remain.
    Doctor(crate::doctor::DoctorArgs),
    /// Check files' syntax (json, jsonl, yaml, toml, python, latex, markdown, xml, html):
    /// each error with line:col; exit 1 when any file is invalid.
    Validate(crate::cmd::validate::ValidateArgs),
}

#[derive(Debug, Args)]
pub struct HistoryCliArgs {
    /// The file.
    pub path: String,
    /// Most versions to show.
    #[arg(short, long, default_value_t = 50)]
    pub n: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RestoreCliArgs {
    /// The file.
    pub path: String,
    /// The version's SHA-256 (or a journal_id) from `history`.
    #[arg(long = "to", value_name = "SHA")]
    pub to: String,
    /// Show the diff from the current content to that version and write nothing.
    #[arg(long)]
    pub diff: bool,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Policy file with the `history:` section (default: .resilient_write/policy.yaml).
    #[arg(long, env = "RW_POLICY_FILE", value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Report what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct AnalyticsCliArgs {
    /// Only rows at or after this time (RFC 3339 or a date).
    #[arg(long)]
    pub since: Option<String>,
    /// Only this chunk session in the sessions breakdown.
    #[arg(long)]
    pub session: Option<String>,
    /// Print the analysis as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// stdio (default), http (Streamable HTTP at /mcp) or sse (the legacy GET /sse +
    /// POST /messages/ pair).
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: Transport,
    /// Address to listen on (http, sse). Loopback by default; any other address needs a
    /// bearer token.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (http, sse); 0 picks a free one. The bound address is printed on
    /// stderr as `listening on http://ADDR/mcp`.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Also accept this Host header (`name` for any port, or `name:port`; repeatable). The
    /// localhost forms of the bound address are always accepted; anything else gets 403.
    #[arg(long = "allowed-host", value_name = "HOST[:PORT]")]
    pub allowed_hosts: Vec<String>,
    /// Also accept requests carrying this browser Origin (`scheme://host[:port]`;
    /// repeatable). Requests without Origin are accepted; other Origins get 403.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// File holding the bearer token every HTTP request must carry
    /// (`Authorization: Bearer <token>`). Also RW_AUTH_TOKEN (the token itself).
    #[arg(long, value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,
    /// Largest HTTP request body accepted (413 beyond). Default: 6 x --max-write-bytes + 1 MiB,
    /// the same cap as a stdio message (JSON escaping can grow content up to 6x).
    #[arg(long, value_name = "BYTES")]
    pub max_body_bytes: Option<u64>,
    /// After SIGINT/SIGTERM (or stdin EOF), how long calls in flight may run on before the
    /// server exits.
    #[arg(long, value_name = "SECS", default_value_t = crate::shutdown::DEFAULT_GRACE.as_secs())]
    pub shutdown_grace_secs: u64,
}

impl Default for ServeArgs {
    fn default() -> ServeArgs {
        ServeArgs {
            transport: Transport::Stdio,
            host: "127.0.0.1".into(),
            port: 8000,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            auth_token_file: None,
            max_body_bytes: None,
            shutdown_grace_secs: crate::shutdown::DEFAULT_GRACE.as_secs(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    /// MCP over stdin/stdout.
    Stdio,
    /// Streamable HTTP at /mcp.
    Http,
    /// Legacy HTTP+SSE: GET /sse and POST /messages/.
    Sse,
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

/// Logs go to stderr, or appended to `file`; never to stdout, which carries MCP over stdio.
fn init_logging(level: &str, file: Option<&std::path::Path>) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .map_err(|e| format!("--log-level {level:?} is not a log filter: {e}"))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false);
    let _ = match file {
        None => builder.with_writer(std::io::stderr).try_init(),
        Some(path) => {
            // The operator's log, not a workspace file: an append-only stream like the
            // journal, outside the write pipeline.
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))?;
            builder.with_writer(std::sync::Mutex::new(f)).try_init()
        }
    };
    Ok(())
}

/// Build the service configuration from flags and environment.
pub fn config_from(global: &GlobalArgs) -> Result<Config, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let mut config = Config::new(cwd);
    config.store.workspaces = global.workspaces.clone();
    if let Some(v) = std::env::var_os("RW_WORKSPACE") {
        let v = v.to_string_lossy();
        config.store.workspaces.extend(parse_workspace_env(&v)?);
    }
    config.store.state_root = global.state_dir.clone();
    config.store.policy_file = global.policy_file.clone();
    config.store.max_write_bytes = global.max_write_bytes;
    config.tool_names = match global.tool_names {
        NameStyle::Underscore => ToolNames::Underscore,
        NameStyle::Dotted => ToolNames::Dotted,
    };
    Ok(config)
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = init_logging(&cli.global.log_level, cli.global.log_file.as_deref()) {
        eprintln!("resilient-write: {e}");
        return ExitCode::from(2);
    }
    let config = match config_from(&cli.global) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("resilient-write: {e}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        None => serve(config, ServeArgs::default()),
        Some(Command::Serve(args)) => serve(config, args),
        Some(Command::Journal(args)) => journal(config, args),
        Some(Command::Scan(args)) => crate::scan::run(&config, &args),
        Some(Command::Analytics(args)) => analytics(config, args),
        Some(Command::History(args)) => crate::cmd::history::history(config, args),
        Some(Command::Restore(args)) => crate::cmd::history::restore(config, args),
        Some(Command::Gc(args)) => crate::cmd::history::gc(config, args),
        Some(Command::Recover) => crate::cmd::history::recover(config),
        Some(Command::Demo(args)) => crate::demo::run(&config, &args),
        Some(Command::Init(args)) => crate::init::run(&config, &args),
        Some(Command::Doctor(args)) => crate::doctor::run(&config, &args),
        Some(Command::Validate(args)) => crate::cmd::validate::run(&args),
    }
}

/// The largest message a transport accepts for a given write cap: JSON escaping can grow
/// content up to 6x, plus room for the envelope. Beyond it, stdio answers with a typed size
/// error and HTTP with 413.
pub fn message_cap(max_write_bytes: u64) -> usize {
    let cap = max_write_bytes.saturating_mul(6).saturating_add(1 << 20);
    usize::try_from(cap).unwrap_or(usize::MAX)
}

/// The bearer token from `--auth-token-file` or `RW_AUTH_TOKEN` (not both).
fn load_token(args: &ServeArgs) -> Result<Option<Token>, String> {
    let env = std::env::var("RW_AUTH_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    match (&args.auth_token_file, env) {
        (Some(_), Some(_)) => {
            Err("the token is given twice: use --auth-token-file or RW_AUTH_TOKEN, not both".into())
        }
        (Some(path), None) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read --auth-token-file {}: {e}", path.display()))?;
            Token::new(&text)
                .map(Some)
                .map_err(|e| format!("--auth-token-file {}: {e}", path.display()))
        }
        (None, Some(text)) => Token::new(&text)
            .map(Some)
            .map_err(|e| format!("RW_AUTH_TOKEN: {e}")),
        (None, None) => Ok(None),
    }
}

fn serve(config: Config, args: ServeArgs) -> ExitCode {
    let grace = std::time::Duration::from_secs(args.shutdown_grace_secs);
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
    if args.transport == Transport::Stdio {
        let (code, stdin_closed) = runtime.block_on(serve_stdio(config, grace));
        if stdin_closed {
            // Writes whose handler rmcp dropped at EOF still run on blocking threads.
            runtime.shutdown_timeout(grace);
        } else {
            // After a signal every call was answered or its grace period is spent. tokio's
            // stdin reader is a blocking read that does not return while the client keeps
            // stdin open: do not wait for it.
            runtime.shutdown_background();
        }
        return code;
    }
    let token = match load_token(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("resilient-write: {e}");
            return ExitCode::from(2);
        }
    };
    let max_body = match args.max_body_bytes {
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => message_cap(config.store.max_write_bytes),
    };
    let opts = HttpOptions {
        host: args.host,
        port: args.port,
        legacy_sse: args.transport == Transport::Sse,
        allowed_hosts: args.allowed_hosts,
        allowed_origins: args.allowed_origins,
        token,
        max_body_bytes: max_body,
        grace,
    };
    let result = runtime.block_on(async move {
        let service = Service::start(config);
        crate::http::serve(service, opts, crate::shutdown::signal()).await
    });
    // Calls whose client went away still run on blocking threads: let them finish (bounded).
    runtime.shutdown_timeout(grace);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("resilient-write: {e}");
            ExitCode::from(2)
        }
    }
}

/// MCP over stdio until stdin closes or a signal arrives. Returns the exit code and whether
/// stdin reached its end (rather than a signal stopping the server).
async fn serve_stdio(config: Config, grace: std::time::Duration) -> (ExitCode, bool) {
    use rmcp::ServiceExt;
    let max_line = message_cap(config.store.max_write_bytes);
    let service = Service::start(config);
    let drain = Drain::new();
    let server = Tracked::new(McpServer::new(service), drain.clone());
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(
        crate::stdio::sanitized(tokio::io::stdin(), max_line),
        tokio::io::stdout(),
    )
    .with_max_line_length(usize::MAX);
    let signal = crate::shutdown::signal();
    tokio::pin!(signal);
    let running = tokio::select! {
        r = server.serve(transport) => match r {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("MCP initialisation failed: {e}");
                return (ExitCode::FAILURE, true);
            }
        },
        () = &mut signal => return (ExitCode::SUCCESS, false),
    };
    let stop = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        r = &mut waiting => {
            // stdin closed: answer what is still running, then exit.
            drain.begin();
            drain.idle(grace).await;
            match r {
                Ok(_) => (ExitCode::SUCCESS, true),
                Err(e) => {
                    tracing::error!("MCP server stopped: {e}");
                    (ExitCode::FAILURE, true)
                }
            }
        }
        () = &mut signal => {
            drain.begin();
            let drained = drain.idle(grace).await;
            if !drained {
                tracing::warn!(in_flight = drain.active(), "grace period over; exiting");
            }
            stop.cancel();
            let _ = waiting.await;
            (ExitCode::SUCCESS, false)
        }
    }
}

fn journal(mut config: Config, args: JournalArgs) -> ExitCode {
    config.store.sweep_on_start = false;
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

fn analytics(mut config: Config, args: AnalyticsCliArgs) -> ExitCode {
    config.store.sweep_on_start = false;
    let service = Service::start(config);
    let a = match crate::analytics::query::query(
        service.pipeline().journal(),
        args.since.as_deref(),
        args.session,
    ) {
        Ok(a) => a,
        Err(f) => {
            eprintln!("resilient-write: {f}");
            return ExitCode::FAILURE;
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&a) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("resilient-write: {e}");
                return ExitCode::FAILURE;
            }
        }
        return ExitCode::SUCCESS;
    }
    let p = &a.period;
    println!(
        "writes {}  paths {}  bytes {}  corrupt lines {}",
        a.total_writes, a.unique_paths, a.total_bytes_written, a.corrupt_lines
    );
    println!(
        "period {} .. {} ({:.1} s)  {:.2} writes/min  {:.0} bytes/write  peak minute {}",
        p.first_entry.as_deref().unwrap_or("-"),
        p.last_entry.as_deref().unwrap_or("-"),
        p.duration_seconds,
        a.write_velocity.writes_per_minute,
        a.write_velocity.avg_bytes_per_write,
        a.write_velocity.peak_minute.as_deref().unwrap_or("-")
    );
    for (title, map) in [("mode", &a.by_mode), ("caller", &a.by_caller)] {
        println!("\n{title:<24} {:>10}", "writes");
        for (k, n) in map {
            println!("{k:<24} {n:>10}");
        }
    }
    println!(
        "\n{:>8} {:>12} {:<27} hot path",
        "writes", "bytes", "last write"
    );
    for h in &a.hot_paths {
        println!(
            "{:>8} {:>12} {:<27} {}",
            h.write_count, h.total_bytes, h.last_write, h.path
        );
    }
    if !a.sessions.is_empty() {
        println!(
            "\n{:<24} {:>8} {:>8} {:>10}",
            "session", "chunks", "composes", "seconds"
        );
        for (name, s) in &a.sessions {
            println!(
                "{name:<24} {:>8} {:>8} {:>10.1}",
                s.chunk_writes, s.composes, s.duration_seconds
            );
        }
    }
    ExitCode::SUCCESS
}
