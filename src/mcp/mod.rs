//! The MCP front end: an `rmcp` [`ServerHandler`] over the [`Service`]. It holds no business
//! logic: it lists the catalogue, hands each call to [`Service::call`] on a blocking thread
//! (writes fsync), and wraps the result or envelope as `structuredContent` plus the same JSON
//! as text. A panic in a handler becomes an envelope, never a dead server.
//!
//! Beyond tools it serves resources (the handoff, the journal tail, each checkpoint), the
//! `resume` prompt, `logging` (the service's notices as `notifications/message`) and client
//! roots. Everything that belongs to one client (its roots, its log level, its name) lives in
//! [`McpServer`], never in the shared [`Service`]: an HTTP server builds one `McpServer` per
//! session over one `Arc<Service>`, and each call runs inside its client's
//! [`Session`](crate::session::Session).

use crate::dispatch::Service;
use crate::notices::{Level, Notice, Sink};
use crate::session::{Session, with_session};
use crate::tools::{self, catalog, listed_name};
use crate::workspace::Workspaces;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
    ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::model::{CompleteRequestParams, CompleteResult, CompletionInfo, Reference};
#[allow(deprecated)] // MCP logging: deprecated by SEP-2577 yet still in the protocol we serve.
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// What agents are told at `initialize`.
pub const INSTRUCTIONS: &str = "resilient-write gives you a durable write surface. Prefer its \
tools over raw file writes: rw_safe_write (create/overwrite/append, atomic, verified, journaled; \
pass expected_prev_sha256 when you edit a file you read), rw_safe_replace (exact-match edits, \
dry_run diffs, several edits at once). Every failure returns a typed envelope: branch on \
`error` and `suggested_action`, and do not repeat an identical call once retry_budget is 0. \
rw_journal_tail shows what was written. Large files: write them in pieces with rw_chunk_append \
(or rw_chunk_write with an index), check with rw_chunk_status or rw_chunk_preview, then \
rw_chunk_compose into the target. Material that must not enter the workspace (credentials, \
PII, binaries): rw_scratch_put, then refer to it by sha256. \
Before writing a draft that may hold credentials, \
keys or personal data, call rw_risk_score (or pass classify=true to the write); if it finds \
something, rw_redact returns the draft with typed {REDACTED:<rule>} placeholders in one call. A \
content_filter refusal is never worth retrying unchanged: redact or ask the user. \
Before you stop, or when you are blocked, record where \
the task stands with rw_handoff_write (HANDOFF.md); a fresh agent starts with rw_handoff_read or \
the `resume` prompt. Keep intermediate data in rw_checkpoint; check a draft's syntax with \
rw_validate before writing it. \
To change several files together, rw_tx_begin, stage with rw_tx_write / rw_tx_replace, then \
rw_tx_commit (all or nothing, also across a crash) or rw_tx_rollback. Every overwrite keeps the \
previous content: rw_history lists a file's versions and rw_restore puts one back (or undoes a \
whole transaction with tx_id).";

/// URI of the handoff resource (the workspace's HANDOFF.md).
pub const HANDOFF_URI: &str = "resilient-write://handoff";

/// URI of the journal-tail resource; `?n=`, `path=` and `mode=` narrow it (the template).
pub const JOURNAL_TAIL_URI: &str = "resilient-write://journal/tail";

/// Prefix of checkpoint resources: `resilient-write://checkpoint/<name>`.
pub const CHECKPOINT_URI_PREFIX: &str = "resilient-write://checkpoint/";

/// How long a call waits for the client's answer to `roots/list` (asked after `initialized`
/// and on `roots/list_changed`) before it runs with the roots it has. Waiting makes a write
/// into a just-announced root succeed instead of racing the answer.
const ROOTS_WAIT: Duration = Duration::from_secs(5);

/// Log level of a session until it sends `logging/setLevel` (MCP lets the server choose).
const DEFAULT_LOG_LEVEL: u8 = 3; // warning

/// The MCP server: one per client session.
#[derive(Clone)]
pub struct McpServer {
    service: Arc<Service>,
    tools: Arc<Vec<Tool>>,
    client: Arc<ClientState>,
}

/// What belongs to one client.
struct ClientState {
    /// The client's roots: refreshes under way and the workspaces they produced.
    roots: watch::Sender<RootsState>,
    /// Whether the client declared the `roots` capability at initialize.
    offers_roots: AtomicBool,
    /// Minimum severity sent as `notifications/message` (MCP level rank, see [`level_rank`]).
    log_level: Arc<AtomicU8>,
    /// Wakes the log forwarder when the level changes (it then sends what it held back).
    log_events: OnceLock<mpsc::UnboundedSender<LogEvent>>,
    /// This session's notice sink; the service holds it weakly, so it lives as long as we do.
    notice_sink: OnceLock<Sink>,
}

#[derive(Default)]
struct RootsState {
    /// Refreshes asked for and not yet answered; calls wait while it is not zero.
    pending: usize,
    /// Sequence of the last refresh started and of the one whose answer is applied, so a
    /// slow answer never replaces a newer one.
    started: u64,
    applied: u64,
    /// Static roots plus the client's accepted roots; `None` before any answer.
    workspaces: Option<Arc<Workspaces>>,
}

enum LogEvent {
    Notice(Notice),
    LevelChanged,
}

fn as_object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Rank of an MCP logging level (debug lowest).
#[allow(deprecated)]
fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[allow(deprecated)]
fn mcp_level(level: Level) -> LoggingLevel {
    match level {
        Level::Debug => LoggingLevel::Debug,
        Level::Info => LoggingLevel::Info,
        Level::Warning => LoggingLevel::Warning,
        Level::Error => LoggingLevel::Error,
    }
}

/// Send one log message to the client if it is at or above the session's level. Returns
/// false when the client is gone.
#[allow(deprecated)]
async fn send_log(peer: &Peer<RoleServer>, min: &AtomicU8, level: Level, text: &str) -> bool {
    let level = mcp_level(level);
    if level_rank(level) < min.load(Ordering::Relaxed) {
        return true;
    }
    let param = LoggingMessageNotificationParam::new(level, Value::String(text.to_string()))
        .with_logger("resilient-write");
    peer.notify_logging_message(param).await.is_ok()
}

/// Forward the service's notices to one client: those kept so far, then each new one, and on
/// a level change those held back that the new level lets through. Each notice is sent once.
async fn forward_notices(
    peer: Peer<RoleServer>,
    service: Arc<Service>,
    min: Arc<AtomicU8>,
    backlog: Vec<Notice>,
    mut events: mpsc::UnboundedReceiver<LogEvent>,
) {
    let mut sent = HashSet::new();
    let mut batch = backlog;
    loop {
        for n in batch.drain(..) {
            if sent.contains(&n.seq) || level_rank(mcp_level(n.level)) < min.load(Ordering::Relaxed)
            {
                continue;
            }
            if !send_log(&peer, &min, n.level, &n.text).await {
                return;
            }
            sent.insert(n.seq);
        }
        match events.recv().await {
            Some(LogEvent::Notice(n)) => batch.push(n),
            Some(LogEvent::LevelChanged) => batch = service.notices().kept(),
            None => return,
        }
    }
}

/// The local path of a `file://` root (`file:///p` or `file://localhost/p`, percent-decoded).
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let path = if rest.starts_with('/') {
        rest
    } else {
        rest.strip_prefix("localhost")?
    };
    if !path.starts_with('/') {
        return None;
    }
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    Some(PathBuf::from(OsString::from_vec(bytes)))
}

impl McpServer {
    pub fn new(service: Arc<Service>) -> McpServer {
        let style = service.tool_names();
        let tools = catalog()
            .iter()
            .map(|t| {
                Tool::new(
                    listed_name(t.name, style),
                    t.description,
                    Arc::new(as_object((t.input_schema)())),
                )
                .with_title(t.title)
                .with_raw_output_schema(Arc::new(as_object((t.output_schema)())))
                .with_annotations(
                    ToolAnnotations::with_title(t.title)
                        .read_only(t.read_only)
                        .destructive(t.destructive)
                        .idempotent(t.idempotent)
                        .open_world(false),
                )
            })
            .collect();
        McpServer {
            service,
            tools: Arc::new(tools),
            client: Arc::new(ClientState {
                roots: watch::Sender::new(RootsState::default()),
                offers_roots: AtomicBool::new(false),
                log_level: Arc::new(AtomicU8::new(DEFAULT_LOG_LEVEL)),
                log_events: OnceLock::new(),
                notice_sink: OnceLock::new(),
            }),
        }
    }

    /// The client's session for one call: its roots (after any refresh under way has been
    /// answered, or [`ROOTS_WAIT`] has passed) and its name (from `initialize`, or from the
    /// request's `_meta` under the handshake-less protocol).
    async fn session(&self, context: &RequestContext<RoleServer>) -> Arc<Session> {
        let mut rx = self.client.roots.subscribe();
        if tokio::time::timeout(ROOTS_WAIT, rx.wait_for(|s| s.pending == 0))
            .await
            .is_err()
        {
            tracing::warn!(
                "client did not answer roots/list in time; using the roots known so far"
            );
        }
        let workspaces = self.client.roots.borrow().workspaces.clone();
        Arc::new(Session {
            workspaces,
            caller: context.client_info().map(|i| i.name),
        })
    }

    /// Run `f` on a blocking thread inside the client's session.
    async fn blocking<R: Send + 'static>(
        &self,
        context: &RequestContext<RoleServer>,
        f: impl FnOnce(&Service) -> R + Send + 'static,
    ) -> Result<R, McpError> {
        let session = self.session(context).await;
        let service = self.service.clone();
        tokio::task::spawn_blocking(move || with_session(Some(session), || f(&service)))
            .await
            .map_err(|e| McpError::internal_error(format!("task failed: {e}"), None))
    }

    /// Ask the client for its roots and make its `file://` roots extra workspaces of this
    /// session. Refused roots (deny-list, missing, not `file://`) are logged and skipped; a
    /// client that fails to answer keeps the roots it had. `counted`: the caller already
    /// raised `pending` (at initialize, so no call can slip in before the first answer).
    #[allow(deprecated)] // roots: deprecated upstream by SEP-2577, still what clients send.
    async fn refresh_roots(&self, peer: Peer<RoleServer>, counted: bool) {
        let mut seq = 0;
        self.client.roots.send_modify(|s| {
            if !counted {
                s.pending += 1;
            }
            s.started += 1;
            seq = s.started;
        });
        let answer = tokio::time::timeout(ROOTS_WAIT, peer.list_roots()).await;
        let mut rejected = Vec::new();
        let built = match answer {
            Ok(Ok(list)) => {
                let mut paths = Vec::new();
                for root in &list.roots {
                    match file_uri_path(&root.uri) {
                        Some(p) => paths.push(p),
                        None => rejected.push(format!(
                            "client root {} refused: only local file:// roots can be workspaces",
                            root.uri
                        )),
                    }
                }
                let service = self.service.clone();
                match tokio::task::spawn_blocking(move || service.with_client_roots(&paths)).await {
                    Ok((ws, refused)) => {
                        for (path, reason) in refused {
                            rejected
                                .push(format!("client root {} refused: {reason}", path.display()));
                        }
                        Some(Arc::new(ws))
                    }
                    Err(e) => {
                        rejected.push(format!("client roots not applied: {e}"));
                        None
                    }
                }
            }
            Ok(Err(e)) => {
                rejected.push(format!("roots/list failed, keeping the roots known: {e}"));
                None
            }
            Err(_) => {
                rejected.push("client did not answer roots/list; keeping the roots known".into());
                None
            }
        };
        for text in &rejected {
            tracing::warn!("{text}");
            send_log(&peer, &self.client.log_level, Level::Warning, text).await;
        }
        if let Some(ws) = &built {
            // A transaction committed in a client root before a crash could not be finished
            // at start (only the static roots were known then): finish it now that the roots
            // are, before any call of this session runs (they wait for `pending`).
            let session = Arc::new(Session {
                workspaces: Some(ws.clone()),
                caller: None,
            });
            let service = self.service.clone();
            let recovered = tokio::task::spawn_blocking(move || {
                with_session(Some(session), || crate::tx::recover(&service))
            })
            .await;
            if let Ok(mut report) = recovered {
                // Problems (say, a transaction outside these roots too) recur at every
                // refresh: they go to the server's log only. What was done goes to the client.
                for problem in std::mem::take(&mut report.problems) {
                    tracing::warn!("{problem}");
                }
                for text in report.summary() {
                    send_log(&peer, &self.client.log_level, Level::Warning, &text).await;
                }
            }
        }
        self.client.roots.send_modify(|s| {
            if let Some(ws) = built
                && seq > s.applied
            {
                tracing::info!(
                    "client roots: {}",
                    ws.roots()
                        .map(|r| r.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                s.workspaces = Some(ws);
                s.applied = seq;
            }
            s.pending = s.pending.saturating_sub(1);
        });
    }

    /// Start forwarding the service's notices to this client (once).
    fn start_log_forwarding(&self, peer: Peer<RoleServer>) {
        let (tx, rx) = mpsc::unbounded_channel();
        if self.client.log_events.set(tx.clone()).is_err() {
            return;
        }
        let sink: Sink = Arc::new(move |n: &Notice| {
            let _ = tx.send(LogEvent::Notice(n.clone()));
        });
        let backlog = self.service.notices().subscribe(&sink);
        let _ = self.client.notice_sink.set(sink);
        tokio::spawn(forward_notices(
            peer,
            self.service.clone(),
            self.client.log_level.clone(),
            backlog,
            rx,
        ));
    }

    fn resources(&self, service: &Service) -> Vec<Resource> {
        let mut out = vec![
            Resource::new(HANDOFF_URI, "handoff")
                .with_title("Task handoff (HANDOFF.md)")
                .with_description(
                    "The current task-continuity envelope: YAML front-matter and Markdown notes.",
                )
                .with_mime_type("text/markdown"),
            Resource::new(JOURNAL_TAIL_URI, "journal-tail")
                .with_title("Recent writes")
                .with_description(
                    "The newest 20 journal rows as JSON (like rw_journal_tail); \
                     ?n=, path= and mode= narrow it.",
                )
                .with_mime_type("application/json"),
        ];
        // A checkpoint directory that cannot be read only hides the checkpoints; the other
        // resources are still listed (checkpoint_list reports the error).
        if let Ok(list) = crate::checkpoint::store::list(service) {
            for cp in list {
                let mime = cp.format.map_or("text/plain", checkpoint_mime);
                let what = if cp.corrupt {
                    "Checkpoint (its file cannot be parsed)".to_string()
                } else {
                    format!("Checkpoint, ttl {}", cp.ttl.as_deref().unwrap_or("?"))
                };
                out.push(
                    Resource::new(
                        format!("{CHECKPOINT_URI_PREFIX}{}", cp.name),
                        format!("checkpoint-{}", cp.name),
                    )
                    .with_title(format!("Checkpoint {}", cp.name))
                    .with_description(what)
                    .with_mime_type(mime)
                    .with_size(cp.bytes),
                );
            }
        }
        out
    }
}

fn checkpoint_mime(format: crate::checkpoint::Format) -> &'static str {
    match format {
        crate::checkpoint::Format::Json => "application/json",
        crate::checkpoint::Format::Yaml => "application/yaml",
        crate::checkpoint::Format::Markdown => "text/markdown",
    }
}

/// The arguments of a journal-tail resource URI (`?n=5&path=src/a.rs&mode=append`).
fn journal_tail_args(query: &str) -> Result<tools::journal_tail::JournalTailArgs, McpError> {
    let mut args = tools::journal_tail::JournalTailArgs {
        n: 20,
        filter_path: None,
        filter_mode: None,
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .map_err(|_| McpError::invalid_params(format!("{key}: the value is not UTF-8"), None))?
            .into_owned();
        match key {
            "n" => {
                args.n = value.parse().map_err(|_| {
                    McpError::invalid_params(
                        format!("n must be a whole number of rows, not {value:?}"),
                        None,
                    )
                })?
            }
            "path" => args.filter_path = Some(value),
            "mode" => args.filter_mode = Some(value),
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown parameter {other:?}: the journal tail takes n, path, mode"),
                    None,
                ));
            }
        }
    }
    Ok(args)
}

/// A failure of the library as a JSON-RPC error carrying the envelope as `data`.
fn failure_error(f: crate::envelope::Failure, what: &str, not_found: bool) -> McpError {
    let envelope = serde_json::to_value(f.envelope("resources/read", 0)).ok();
    let message = format!("{what}: {f}");
    if not_found {
        McpError::resource_not_found(message, envelope)
    } else {
        McpError::invalid_params(message, envelope)
    }
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // `logging` is deprecated upstream (SEP-2577) but still served.
    fn get_info(&self) -> InitializeResult {
        let mut instructions = INSTRUCTIONS.to_string();
        for note in self.service.notes() {
            instructions.push_str("\nNote: ");
            instructions.push_str(note);
        }
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_logging()
                .enable_completions()
                .build(),
        )
        .with_server_info(
            Implementation::new("resilient-write", env!("CARGO_PKG_VERSION"))
                .with_title("Resilient Write"),
        )
        .with_instructions(instructions)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if request.capabilities.roots.is_some()
            && !self.client.offers_roots.swap(true, Ordering::SeqCst)
        {
            // Counted now, before the answer goes out, so a call sent right after
            // `initialized` waits for the client's roots instead of racing them.
            self.client.roots.send_modify(|s| s.pending += 1);
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.start_log_forwarding(context.peer.clone());
        if self.client.offers_roots.load(Ordering::SeqCst) {
            self.refresh_roots(context.peer, true).await;
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.refresh_roots(context.peer, false).await;
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.client
            .log_level
            .store(level_rank(request.level), Ordering::Relaxed);
        if let Some(tx) = self.client.log_events.get() {
            let _ = tx.send(LogEvent::LevelChanged);
        }
        Ok(())
    }

    /// Completes checkpoint names for the `resilient-write://checkpoint/{name}` template;
    /// anything else gets an empty list (MCP: "no suggestions" is a valid answer).
    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let template = format!("{CHECKPOINT_URI_PREFIX}{{name}}");
        let wants_checkpoint = matches!(&request.r#ref, Reference::Resource(r) if r.uri == template)
            && request.argument.name == "name";
        if !wants_checkpoint {
            return Ok(CompleteResult::default());
        }
        let prefix = request.argument.value;
        let names: Vec<String> = self
            .blocking(&context, |service| crate::checkpoint::store::list(service))
            .await?
            .map(|l| l.into_iter().map(|c| c.name).collect())
            .unwrap_or_default();
        let matching: Vec<String> = names
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .collect();
        let total = matching.len();
        let shown: Vec<String> = matching
            .into_iter()
            .take(CompletionInfo::MAX_VALUES)
            .collect();
        let has_more = total > shown.len();
        let info = CompletionInfo::with_pagination(shown, u32::try_from(total).ok(), has_more)
            .map_err(|e| McpError::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if tools::find(&name).is_none() {
            return Err(McpError::invalid_params(
                format!("unknown tool: {name}"),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let session = self.session(&context).await;
        let service = self.service.clone();
        // Progress (long composes): when the client sent a progressToken, the tool reports
        // through a channel drained by one task, so notifications keep their order and all
        // precede the response.
        let (progress, forwarder) = match context.meta.get_progress_token() {
            None => (None, None),
            Some(token) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, u64)>();
                let peer = context.peer.clone();
                let forwarder = tokio::spawn(async move {
                    while let Some((done, total)) = rx.recv().await {
                        let param =
                            rmcp::model::ProgressNotificationParam::new(token.clone(), done as f64)
                                .with_total(total as f64);
                        let _ = peer.notify_progress(param).await;
                    }
                });
                let report: crate::progress::Progress = Arc::new(move |done, total| {
                    let _ = tx.send((done, total));
                });
                (Some(report), Some(forwarder))
            }
        };
        let joined = tokio::task::spawn_blocking(move || {
            with_session(Some(session), || {
                crate::progress::with_progress(progress, || service.call(&name, args))
            })
        })
        .await;
        if let Some(f) = forwarder {
            let _ = f.await;
        }
        let result = match joined {
            Ok(Ok(value)) => CallToolResult::structured(value),
            Ok(Err(envelope)) => CallToolResult::structured_error(
                serde_json::to_value(envelope).unwrap_or(Value::Null),
            ),
            Err(e) => CallToolResult::structured_error(
                serde_json::to_value(
                    crate::envelope::Failure::Internal(format!("tool task failed: {e}"))
                        .envelope(&request.name, 0),
                )
                .unwrap_or(Value::Null),
            ),
        };
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompt = Prompt::new(
            "resume",
            Some(
                "Resume an interrupted task from its handoff envelope: summary, status, \
                 files that drifted since, steps ready now, next steps and notes.",
            ),
            Some(vec![
                PromptArgument::new("path")
                    .with_description("The handoff file (default HANDOFF.md)")
                    .with_required(false),
            ]),
        )
        .with_title("Resume from HANDOFF.md");
        Ok(ListPromptsResult::with_all_items(vec![prompt]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != "resume" {
            return Err(McpError::invalid_params(
                format!("unknown prompt: {}", request.name),
                None,
            ));
        }
        let path = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("path"))
            .and_then(Value::as_str)
            .unwrap_or(crate::handoff::DEFAULT_HANDOFF_PATH)
            .to_string();
        let shown = path.clone();
        let text = self
            .blocking(&context, move |service| {
                crate::handoff::store::resume_prompt(service, &path)
            })
            .await?
            .map_err(|f| {
                let envelope = serde_json::to_value(f.envelope("resume", 0)).ok();
                McpError::invalid_params(format!("cannot resume from {shown}: {f}"), envelope)
            })?;
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        result.description = Some(format!("Resume the task recorded in {shown}"));
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let this = self.clone();
        let resources = self
            .blocking(&context, move |service| this.resources(service))
            .await?;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let templates = vec![
            ResourceTemplate::new(
                format!("{JOURNAL_TAIL_URI}{{?n,path,mode}}"),
                "journal-tail",
            )
            .with_title("Recent writes, filtered")
            .with_description(
                "The newest n journal rows (default 20, at most 10000), only for path \
                     and/or mode when given.",
            )
            .with_mime_type("application/json"),
            ResourceTemplate::new(format!("{CHECKPOINT_URI_PREFIX}{{name}}"), "checkpoint")
                .with_title("A checkpoint")
                .with_description("The stored file of checkpoint <name>, as saved.")
                .with_mime_type("application/json"),
        ];
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let contents = if uri == HANDOFF_URI {
            let loaded = self
                .blocking(&context, |service| {
                    crate::handoff::store::load(service, crate::handoff::DEFAULT_HANDOFF_PATH)
                })
                .await?
                .map_err(|f| failure_error(f, "handoff", true))?;
            ResourceContents::text(loaded.text, HANDOFF_URI).with_mime_type("text/markdown")
        } else if let Some(rest) = uri.strip_prefix(JOURNAL_TAIL_URI)
            && (rest.is_empty() || rest.starts_with('?'))
        {
            let args = journal_tail_args(rest.trim_start_matches('?'))?;
            let tail = self
                .blocking(&context, move |service| {
                    let q = crate::journal::tail::TailQuery::new(
                        &service.workspaces(),
                        args.n,
                        args.filter_path.as_deref(),
                        args.filter_mode,
                    )?;
                    crate::journal::tail::tail(service.pipeline().journal(), &q)
                        .map(tools::journal_tail::JournalTailResult::from)
                })
                .await?
                .map_err(|f| failure_error(f, "journal tail", false))?;
            let text = serde_json::to_string_pretty(&tail)
                .map_err(|e| McpError::internal_error(format!("journal tail: {e}"), None))?;
            ResourceContents::text(text, uri.clone()).with_mime_type("application/json")
        } else if let Some(raw_name) = uri.strip_prefix(CHECKPOINT_URI_PREFIX) {
            let name = percent_encoding::percent_decode_str(raw_name)
                .decode_utf8_lossy()
                .into_owned();
            let shown = name.clone();
            let stored = self
                .blocking(&context, move |service| {
                    crate::checkpoint::store::stored(service, &name)
                })
                .await?
                .map_err(|f| failure_error(f, "checkpoint", true))?;
            let Some((format, bytes)) = stored else {
                return Err(McpError::resource_not_found(
                    format!("no checkpoint named {shown:?}"),
                    None,
                ));
            };
            match String::from_utf8(bytes) {
                Ok(text) => ResourceContents::text(text, uri.clone()),
                Err(e) => {
                    use base64::Engine;
                    let blob = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
                    ResourceContents::blob(blob, uri.clone())
                }
            }
            .with_mime_type(checkpoint_mime(format))
        } else {
            return Err(McpError::resource_not_found(
                format!(
                    "unknown resource: {uri} (resources/list and resources/templates/list \
                     show what exists)"
                ),
                None,
            ));
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths_and_other_schemes_do_not() {
        assert_eq!(
            file_uri_path("file:///home/a/my%20proj"),
            Some(PathBuf::from("/home/a/my proj"))
        );
        assert_eq!(
            file_uri_path("file://localhost/srv/x"),
            Some(PathBuf::from("/srv/x"))
        );
        assert_eq!(file_uri_path("file://otherhost/srv/x"), None);
        assert_eq!(file_uri_path("https://example.com/x"), None);
        assert_eq!(file_uri_path("file://"), None);
    }

    #[test]
    fn journal_tail_query_is_parsed_and_bad_parameters_are_refused() {
        let a = journal_tail_args("n=5&path=src%2Fa.rs&mode=append").expect("valid query");
        assert_eq!(a.n, 5);
        assert_eq!(a.filter_path.as_deref(), Some("src/a.rs"));
        assert_eq!(a.filter_mode.as_deref(), Some("append"));
        assert_eq!(journal_tail_args("").map(|a| a.n).ok(), Some(20));
        assert!(journal_tail_args("n=many").is_err());
        assert!(journal_tail_args("limit=3").is_err());
    }

    #[test]
    #[allow(deprecated)]
    fn log_levels_rank_by_severity() {
        assert!(level_rank(LoggingLevel::Debug) < level_rank(LoggingLevel::Info));
        assert!(level_rank(LoggingLevel::Warning) < level_rank(LoggingLevel::Error));
        assert_eq!(level_rank(mcp_level(Level::Warning)), DEFAULT_LOG_LEVEL);
    }
}
