//! `resilient-write [serve]`: the MCP server over stdio (the default) or HTTP, with the drain
//! that lets requests in flight finish on SIGINT/SIGTERM.

use crate::dispatch::{Config, Service, ToolListing};
use crate::mcp::McpServer;
use crate::transport::http::HttpOptions;
use crate::transport::http::guard::Token;
use crate::transport::shutdown::{Drain, Tracked};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Largest HTTP request body accepted (413 beyond). Default: --max-write-bytes in base64
    /// (4/3 of it) + 1 MiB for the rest of the message, so content up to the write limit
    /// always fits in one request sent with encoding=base64 (90.5 MB with the default
    /// 64 MiB write limit). Larger files go in pieces with rw_chunk_append.
    #[arg(long, value_name = "BYTES")]
    pub max_body_bytes: Option<u64>,
    /// Seconds a connection has to send a complete request head (request line and headers),
    /// counted from when it opens or its previous response ends: slow or silent clients are
    /// disconnected, and so are keep-alive connections idle for this long (http, sse).
    #[arg(long, value_name = "SECS", default_value_t = HEADER_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_secs: u64,
    /// Seconds a request body has to arrive once its head has: a client that stalls or
    /// trickles its body gets 408 and is disconnected (http, sse). The default carries the
    /// default --max-body-bytes at 1.5 MB/s; send larger files in pieces (rw_chunk_append).
    #[arg(long, value_name = "SECS", default_value_t = BODY_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub body_timeout_secs: u64,
    /// Seconds after which a Streamable HTTP session with no request, no call running and no
    /// open event stream is closed; its client then gets 404 and initializes again.
    #[arg(long, value_name = "SECS", default_value_t = SESSION_IDLE.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle_secs: u64,
    /// Most sessions alive at once. Streamable HTTP: at the limit, a new session closes the
    /// longest-idle one (whose client gets 404 and initializes again); when every session is
    /// in use, initialize gets 503. sse: every session is an open stream, so GET /sse at the
    /// limit gets 503.
    #[arg(long, value_name = "N", default_value_t = SESSION_MAX, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: u64,
    /// After SIGINT/SIGTERM (or stdin EOF), how long calls in flight may run on before the
    /// server exits.
    #[arg(long, value_name = "SECS", default_value_t = crate::transport::shutdown::DEFAULT_GRACE.as_secs())]
    pub shutdown_grace_secs: u64,
    /// Which tools to list: default (the original's 21 and rw_toolsets, which enables the
    /// toolsets files, redaction, transactions and undo per session; every tool answers by
    /// name), or a fixed list: all, core (safe_write, safe_replace, risk_score, redact, read,
    /// history, restore), or a comma-separated list of tools and toolsets (may include core,
    /// and original: the original's 21). A fixed list answers only its tools; a call to
    /// another gets an envelope (tool_not_enabled). For a client that does not take a changed
    /// tool list within a session (Codex CLI 0.171), e.g. original,undo.
    #[arg(long, env = "RW_TOOLS", value_name = "default|all|core|NAME,...", default_value = "default", value_parser = ToolListing::parse)]
    pub tools: ToolListing,
    /// Expose only the tools annotated read-only, as a fixed list (with --tools: those of its
    /// tools).
    #[arg(long, env = "RW_READ_ONLY", action = clap::ArgAction::SetTrue, value_parser = clap::builder::BoolishValueParser::new())]
    pub read_only: bool,
}

const HEADER_TIMEOUT: std::time::Duration = crate::transport::http::listen::DEFAULT_HEADER_TIMEOUT;
const BODY_TIMEOUT: std::time::Duration = crate::transport::http::body::DEFAULT_BODY_TIMEOUT;
const SESSION_IDLE: std::time::Duration = crate::transport::http::sessions::DEFAULT_IDLE;
const SESSION_MAX: u64 = crate::transport::http::sessions::DEFAULT_MAX as u64;

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
            header_timeout_secs: HEADER_TIMEOUT.as_secs(),
            body_timeout_secs: BODY_TIMEOUT.as_secs(),
            session_idle_secs: SESSION_IDLE.as_secs(),
            max_sessions: SESSION_MAX,
            shutdown_grace_secs: crate::transport::shutdown::DEFAULT_GRACE.as_secs(),
            tools: ToolListing::default(),
            read_only: false,
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

/// Room in a message for everything but the content: the JSON-RPC frame, the tool name, the
/// path and the other arguments.
const ENVELOPE_BYTES: u64 = 1 << 20;

/// The largest stdio message for a given write cap: JSON escaping can grow content up to 6x
/// (`\u0000` for a control byte), plus the envelope. Beyond it, stdio answers with a typed
/// size error. The pipe has one client, which the cap only protects from its own mistakes.
pub fn message_cap(max_write_bytes: u64) -> usize {
    let cap = max_write_bytes
        .saturating_mul(6)
        .saturating_add(ENVELOPE_BYTES);
    usize::try_from(cap).unwrap_or(usize::MAX)
}

/// The default HTTP body cap for a given write cap: the largest content a tool accepts,
/// base64-encoded (4 characters per 3 bytes, none of which JSON escapes), plus the envelope.
/// Every content the write limit allows fits in one request that way; text whose JSON
/// escaping grows it by more than a third must be sent as base64 or in chunks. An HTTP
/// server buffers a body per concurrent request from any number of clients, so its cap is
/// the tightest that still serves every tool, not stdio's 6x.
pub fn http_body_cap(max_write_bytes: u64) -> usize {
    let base64 = max_write_bytes.div_ceil(3).saturating_mul(4);
    usize::try_from(base64.saturating_add(ENVELOPE_BYTES)).unwrap_or(usize::MAX)
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

/// The tools `--tools` and `--read-only` leave; none is an error.
pub fn profile(args: &ServeArgs) -> Result<ToolListing, String> {
    if !args.read_only {
        return Ok(args.tools.clone());
    }
    let p = args.tools.clone().read_only();
    if p.is_empty() {
        return Err(format!(
            "--read-only leaves no tool of --tools {}: none of them is read-only",
            args.tools.fixed_names().join(",")
        ));
    }
    Ok(ToolListing::Fixed(p))
}

pub fn run(mut config: Config, args: ServeArgs) -> ExitCode {
    config.tools = match profile(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("resilient-write: {e}");
            return ExitCode::from(2);
        }
    };
    let grace = std::time::Duration::from_secs(args.shutdown_grace_secs);
    // stdio has one client on one pipe: one runtime thread reads, dispatches and answers,
    // and the tools run on the blocking pool, so no message is passed between two runtime
    // workers (each pass a wake-up of the other's `epoll_wait`). HTTP keeps two workers for
    // its many connections.
    let built = if args.transport == Transport::Stdio {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    };
    let runtime = match built {
        Ok(r) => r,
        Err(e) => {
            eprintln!("resilient-write: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.transport == Transport::Stdio {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            // A person ran it bare: say what it is (stderr; stdout carries only MCP).
            eprintln!("{}", terminal_hint());
        }
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
        None => http_body_cap(config.store.max_write_bytes),
    };
    let opts = HttpOptions {
        host: args.host,
        port: args.port,
        legacy_sse: args.transport == Transport::Sse,
        allowed_hosts: args.allowed_hosts,
        allowed_origins: args.allowed_origins,
        token,
        max_body_bytes: max_body,
        body_timeout: std::time::Duration::from_secs(args.body_timeout_secs),
        grace,
        header_timeout: std::time::Duration::from_secs(args.header_timeout_secs),
        sessions: crate::transport::http::sessions::SessionLimits {
            idle: std::time::Duration::from_secs(args.session_idle_secs),
            max: usize::try_from(args.max_sessions).unwrap_or(usize::MAX),
        },
    };
    let result = runtime.block_on(async move {
        let service = Service::start_checked(config)?;
        crate::transport::http::serve(service, opts, crate::transport::shutdown::signal()).await
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

/// The one line shown when stdin is a terminal.
pub fn terminal_hint() -> String {
    format!(
        "resilient-write {}: an MCP server speaking JSON-RPC on stdin/stdout, waiting for a \
         client. Try `resilient-write demo`; register it with `resilient-write init`; Ctrl-D exits.",
        env!("CARGO_PKG_VERSION")
    )
}

/// MCP over stdio until stdin closes or a signal arrives. Returns the exit code and whether
/// stdin reached its end (rather than a signal stopping the server).
async fn serve_stdio(config: Config, grace: std::time::Duration) -> (ExitCode, bool) {
    use rmcp::ServiceExt;
    let max_line = message_cap(config.store.max_write_bytes);
    let Some(service) = super::service(config) else {
        return (ExitCode::from(2), true);
    };
    let drain = Drain::new();
    let stdio = crate::transport::stdio::stdio();
    let _blocking_again = stdio.restore;
    let transport = crate::transport::stdio::Lines::new(stdio.input, stdio.output, max_line);
    let server = Tracked::new(
        McpServer::new(service).inline_when_alone(transport.outstanding()),
        drain.clone(),
    );
    let signal = crate::transport::shutdown::signal();
    tokio::pin!(signal);
    let running = tokio::select! {
        r = server.serve(transport) => match r {
            Ok(r) => r,
            // stdin ended before any client spoke (Ctrl-D in a terminal, `< /dev/null`):
            // nothing went wrong.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
                return (ExitCode::SUCCESS, true);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_http_body_cap_fits_the_write_limit_in_base64_and_refuses_100_mb() {
        let default = crate::dispatch::DEFAULT_MAX_WRITE_BYTES;
        let cap = http_body_cap(default) as u64;
        assert_eq!(cap, 89_478_488 + (1 << 20));
        assert!(cap < 100_000_000);
        // One byte over a multiple of 3 still gets its whole base64 quantum.
        assert_eq!(http_body_cap(4), 8 + (1 << 20));
        assert!(
            message_cap(default) as u64 > cap,
            "stdio keeps the 6x escaping margin"
        );
        assert_eq!(http_body_cap(u64::MAX), usize::MAX);
    }
}
