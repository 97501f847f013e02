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
//! [`resilient_write_core::client_session::ClientSession`].
//!
//! The handler here is thin: client roots live in `roots`, log forwarding in `logging`,
//! resources in `resources`, the `resume` prompt in `prompts` and the session's tool list
//! (toolsets) in `toolsets`.

mod logging;
mod prompts;
mod resources;
mod roots;
mod toolsets;

pub use resources::{CHECKPOINT_URI_PREFIX, HANDOFF_URI, JOURNAL_TAIL_URI};

use crate::dispatch::Service;
use crate::tools::{self, listed_name};
use logging::{DEFAULT_LOG_LEVEL, LogEvent};
use resilient_write_core::client_session::{ClientSession, with_client_session};
use resilient_write_core::notices::Sink;
#[allow(deprecated)] // MCP logging: deprecated by SEP-2577 yet still in the protocol we serve.
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use roots::{ROOTS_WAIT, RootsState};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, watch};

/// What agents are told at `initialize`. Clients send it with every request (Codex as the
/// description of our tool namespace, others in the system prompt), so it says what to use
/// when in few words and leaves the rest to the tools' descriptions. One sentence a tool
/// family: [`instructions_for`] drops the sentences naming a tool a fixed profile hides.
pub const INSTRUCTIONS: &str = "resilient-write: prefer its tools over raw file writes. \
rw_safe_write creates, overwrites or appends and rw_safe_replace edits, atomically and journaled. \
rw_read returns a file with the sha256 to pass as expected_prev_sha256 when you change it. \
A failure is a typed envelope: follow its suggested_action, and never repeat a call unchanged \
after a content_filter refusal or once retry_budget is 0. \
Large files: rw_chunk_append each part, then rw_chunk_compose. \
A draft that may hold secrets or PII: rw_risk_score first; rw_redact replaces what it finds. \
Material that must not enter the workspace: rw_scratch_put. \
Before you stop or when blocked, record the task with rw_handoff_write; a fresh agent starts \
with rw_handoff_read. \
Keep intermediate data with rw_checkpoint; check syntax with rw_validate. \
Several files all or nothing: rw_tx_begin, rw_tx_write or rw_tx_replace, rw_tx_commit. \
Undo: rw_history lists a file's versions, rw_restore puts one back.";

/// [`INSTRUCTIONS`] for the tools a server exposes. Under the default listing every tool is
/// there, those not listed yet one `rw_toolsets` call away, which a last sentence says; under
/// a fixed profile a sentence naming a tool the profile hides is left out, so an agent is
/// never pointed at a tool it cannot call.
pub fn instructions_for(listing: &tools::ToolListing) -> String {
    let profile = match listing {
        tools::ToolListing::Toolsets => {
            return format!("{INSTRUCTIONS} {}", toolsets_sentence());
        }
        tools::ToolListing::Fixed(p) if p.is_all() => return INSTRUCTIONS.to_string(),
        tools::ToolListing::Fixed(p) => p,
    };
    let mut out = Vec::new();
    for sentence in INSTRUCTIONS.split_inclusive(". ") {
        let hidden = sentence
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter_map(|w| w.strip_prefix("rw_"))
            .any(|name| !profile.allows(name));
        if !hidden {
            out.push(sentence);
        }
    }
    out.concat().trim_end().to_string()
}

/// The sentence of the instructions that names the toolsets and their tools (a set whose
/// tools share a prefix as `rw_tx_*`).
fn toolsets_sentence() -> String {
    let sets: Vec<String> = tools::toolsets::SETS
        .iter()
        .map(|s| {
            let prefix = s.tools[0].split_inclusive('_').next().unwrap_or("");
            let shared = s.tools.len() > 2
                && prefix.ends_with('_')
                && s.tools.iter().all(|t| t.starts_with(prefix));
            let names = if shared {
                format!("{}*", listed_name(prefix, tools::ToolNames::Underscore))
            } else {
                s.tools
                    .iter()
                    .map(|t| listed_name(t, tools::ToolNames::Underscore))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!("{} ({names})", s.name)
        })
        .collect();
    format!(
        "Toolsets, listed once rw_toolsets enables them, or run by rw_toolsets {{call, \
         arguments}}: {}.",
        sets.join(", ")
    )
}

/// The MCP server: one per client session.
#[derive(Clone)]
pub struct McpServer {
    service: Arc<Service>,
    /// Every tool a session may be shown, with its bare name ([`tools::ToolListing::listable`]).
    tools: Arc<Vec<(&'static str, Tool)>>,
    client: Arc<ClientState>,
    /// The transport's count of requests not yet answered, where a small call may run on
    /// the runtime's own thread when it is the only one ([`McpServer::inline_when_alone`]).
    outstanding: Option<Arc<AtomicUsize>>,
}

/// Tools a call of which may run on the runtime's thread (see
/// [`McpServer::inline_when_alone`]): their time is bounded by the size of what they
/// write, which [`INLINE_MAX_BYTES`] bounds.
const INLINE_TOOLS: &[&str] = &["safe_write"];

/// The most `content` an inline call may carry.
const INLINE_MAX_BYTES: usize = 1 << 20;

/// [`McpServer::inline`]'s rule: the only request outstanding, no progress asked for, a tool
/// of [`INLINE_TOOLS`] with at most [`INLINE_MAX_BYTES`] of `content`.
fn runs_inline(
    outstanding: Option<&AtomicUsize>,
    tool: &str,
    args: &Value,
    progress: bool,
) -> bool {
    let alone = outstanding.is_some_and(|n| n.load(Ordering::Acquire) <= 1);
    let small = args
        .get("content")
        .and_then(Value::as_str)
        .is_some_and(|c| c.len() <= INLINE_MAX_BYTES);
    alone && !progress && small && INLINE_TOOLS.contains(&tool)
}

/// What belongs to one client.
struct ClientState {
    /// The client's roots: refreshes under way and the workspaces they produced.
    roots: watch::Sender<RootsState>,
    /// Whether the client declared the `roots` capability at initialize.
    offers_roots: AtomicBool,
    /// Minimum severity sent as `notifications/message` (MCP level rank, see
    /// [`level_rank`](logging::level_rank)).
    log_level: Arc<AtomicU8>,
    /// Wakes the log forwarder when the level changes (it then sends what it held back).
    log_events: OnceLock<mpsc::UnboundedSender<LogEvent>>,
    /// This session's notice sink; the service holds it weakly, so it lives as long as we do.
    notice_sink: OnceLock<Sink>,
    /// The toolsets this client enabled.
    toolsets: toolsets::EnabledToolsets,
}

impl ClientState {
    fn new() -> ClientState {
        ClientState {
            roots: watch::Sender::new(RootsState::default()),
            offers_roots: AtomicBool::new(false),
            log_level: Arc::new(AtomicU8::new(DEFAULT_LOG_LEVEL)),
            log_events: OnceLock::new(),
            notice_sink: OnceLock::new(),
            toolsets: toolsets::EnabledToolsets::default(),
        }
    }
}

fn as_object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

impl McpServer {
    pub fn new(service: Arc<Service>) -> McpServer {
        let style = service.tool_names();
        // Every tool publishes its output schema (SPEC section 4). The default listing and
        // `--tools all` publish it whole (a client keeps it; the model is sent name,
        // description and input schema); a narrowed fixed profile is chosen to save an agent's
        // context, so its output schemas keep the fields' names, types and enums
        // (`schema::terse`): every result still validates, in about a third of the tokens.
        let full_output_schemas = match service.tools() {
            tools::ToolListing::Toolsets => true,
            tools::ToolListing::Fixed(p) => p.is_all(),
        };
        let tools = service
            .tools()
            .listable()
            .into_iter()
            .map(|t| {
                let tool = Tool::new(
                    listed_name(t.name, style),
                    t.description,
                    Arc::new(as_object((t.input_schema)())),
                )
                .with_title(t.title);
                let mut output = (t.output_schema)();
                if !full_output_schemas {
                    crate::tools::schema::terse(&mut output);
                }
                let tool = tool.with_raw_output_schema(Arc::new(as_object(output)));
                let tool = tool
                    // The title once, on the tool (MCP: it wins over the annotations' title).
                    .with_annotations(
                        ToolAnnotations::new()
                            .read_only(t.read_only)
                            .destructive(t.destructive)
                            .idempotent(t.idempotent)
                            .open_world(false),
                    );
                (t.name, tool)
            })
            .collect();
        McpServer {
            service,
            tools: Arc::new(tools),
            client: Arc::new(ClientState::new()),
            outstanding: None,
        }
    }

    /// Runs a small `safe_write` on the calling (runtime) thread instead of a blocking one
    /// when `outstanding` (the transport's count of requests not yet answered) says it is
    /// the only request in flight and no progress was asked for. One stdio client waiting
    /// for one answer gains the two thread wake-ups of the hand-off and back; a burst of parallel calls arrives together, counts more than one, and still
    /// runs on blocking threads, sharing journal syncs. A request that arrives meanwhile
    /// waits in the pipe until the write is done, as it would for the disk.
    pub fn inline_when_alone(mut self, outstanding: Arc<AtomicUsize>) -> McpServer {
        self.outstanding = Some(outstanding);
        self
    }

    /// Whether the call `tool` with `args` runs inline (see [`McpServer::inline_when_alone`]).
    fn inline(&self, tool: &str, args: &Value, progress: bool) -> bool {
        runs_inline(self.outstanding.as_deref(), tool, args, progress)
    }

    /// A server for another client over the same service: the tool list (schemas and all,
    /// the bulk of a server's memory) is shared, the client's state is fresh. HTTP builds
    /// one per session this way.
    pub fn for_new_client(&self) -> McpServer {
        McpServer {
            service: self.service.clone(),
            tools: self.tools.clone(),
            client: Arc::new(ClientState::new()),
            outstanding: None,
        }
    }

    /// The client's session for one call: its roots (after any refresh under way has been
    /// answered, or [`ROOTS_WAIT`] has passed) and its name (from `initialize`, or from the
    /// request's `_meta` under the handshake-less protocol).
    async fn session(&self, context: &RequestContext<RoleServer>) -> Arc<ClientSession> {
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
        Arc::new(ClientSession {
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
        tokio::task::spawn_blocking(move || with_client_session(Some(session), || f(&service)))
            .await
            .map_err(|e| McpError::internal_error(format!("task failed: {e}"), None))
    }
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // `logging` is deprecated upstream (SEP-2577) but still served.
    fn get_info(&self) -> InitializeResult {
        let mut instructions = instructions_for(self.service.tools());
        for note in self.service.store().notes() {
            instructions.push_str("\nNote: ");
            instructions.push_str(note);
        }
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .enable_logging()
            .enable_completions()
            .build();
        // Only the default listing changes (a session enabling toolsets); a fixed one never.
        if *self.service.tools() == tools::ToolListing::Toolsets
            && let Some(t) = capabilities.tools.as_mut()
        {
            t.list_changed = Some(true);
        }
        InitializeResult::new(capabilities)
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
        self.set_log_level(request.level);
        Ok(())
    }

    /// Completes checkpoint names for the `resilient-write://checkpoint/{name}` template;
    /// anything else gets an empty list (MCP: "no suggestions" is a valid answer).
    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.complete_checkpoint(request, context).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.listed_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        if tools::bare_name(&name) == tools::toolsets::TOOLSETS.name {
            // `call`: another tool, run as if called by name (for a client that keeps its
            // first tool list); refused with the toolsets tool under a fixed list.
            let toolsets = &tools::toolsets::TOOLSETS;
            let inner = if self.service.tools().accepts(toolsets.name) {
                tools::toolsets::pass_through(&args)
            } else {
                Ok(None)
            };
            return match inner {
                Ok(Some((inner, inner_args))) => self.run_tool(inner, inner_args, context).await,
                Ok(None) => Ok(call_result(self.call_toolsets(args, &context).await).into()),
                Err(f) => {
                    let refused = self.service.call_with(toolsets, args, |_| Err(f));
                    Ok(call_result(refused).into())
                }
            };
        }
        self.run_tool(name, args, context).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(prompts::list())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.get_resume_prompt(request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.list_resource_items(context).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.read_resource_uri(request, context).await
    }

    /// rmcp hands over as "custom" both methods it does not know and standard methods whose
    /// params do not parse (`logging/setLevel` with an unknown level): the first are
    /// method-not-found, the second invalid params, as JSON-RPC asks.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(unparsed_request_error(&request.method, request.params))
    }
}

/// A tool's answer: the result, or the envelope with `isError`, as `structuredContent` and the
/// same JSON as text.
fn call_result(outcome: Result<Value, resilient_write_core::envelope::Envelope>) -> CallToolResult {
    match outcome {
        Ok(value) => CallToolResult::structured(value),
        Err(envelope) => {
            CallToolResult::structured_error(serde_json::to_value(envelope).unwrap_or(Value::Null))
        }
    }
}

/// Why the params of a standard MCP request did not parse: serde's message for the expected
/// params type.
fn params_problem<T: serde::de::DeserializeOwned>(params: Option<Value>) -> String {
    match serde_json::from_value::<T>(params.unwrap_or(Value::Null)) {
        Err(e) => e.to_string(),
        Ok(_) => "the params do not match the method's schema".into(),
    }
}

/// The error for a request rmcp could not route: -32602 (with the reason) for a standard
/// method this server serves whose params are malformed, -32601 for any other method.
#[allow(deprecated)] // SetLevelRequestParams: `logging` is deprecated upstream but served.
fn unparsed_request_error(method: &str, params: Option<Value>) -> McpError {
    let why = match method {
        "logging/setLevel" => params_problem::<SetLevelRequestParams>(params),
        "initialize" => params_problem::<InitializeRequestParams>(params),
        "tools/call" => params_problem::<CallToolRequestParams>(params),
        "resources/read" => params_problem::<ReadResourceRequestParams>(params),
        "prompts/get" => params_problem::<GetPromptRequestParams>(params),
        "completion/complete" => params_problem::<CompleteRequestParams>(params),
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            params_problem::<Option<PaginatedRequestParams>>(params)
        }
        _ => {
            return McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                method.to_string(),
                None,
            );
        }
    };
    McpError::invalid_params(format!("invalid params for {method}: {why}"), None)
}

impl McpServer {
    /// A tool call by `name` with `args`: in the client's session (roots, caller), with
    /// progress when the client asked for it, on a blocking thread unless it runs inline.
    async fn run_tool(
        &self,
        name: String,
        args: Value,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(spec) = tools::find(&name) else {
            return Err(McpError::invalid_params(
                format!("unknown tool: {name}"),
                None,
            ));
        };
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
                let report: resilient_write_core::progress::Progress =
                    Arc::new(move |done, total| {
                        let _ = tx.send((done, total));
                    });
                (Some(report), Some(forwarder))
            }
        };
        let inline = self.inline(spec.name, &args, progress.is_some());
        let shown = name.clone();
        let run = move || {
            with_client_session(Some(session), || {
                resilient_write_core::progress::with_progress(progress, || {
                    service.call(&name, args)
                })
            })
        };
        let joined = if inline {
            // `Service::call` catches a tool's panic itself; this catches one of the wrappers.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
                .map_err(|_| "the call panicked".to_string())
        } else {
            tokio::task::spawn_blocking(run)
                .await
                .map_err(|e| e.to_string())
        };
        if let Some(f) = forwarder {
            let _ = f.await;
        }
        let result = match joined {
            Ok(outcome) => call_result(outcome),
            Err(e) => CallToolResult::structured_error(
                serde_json::to_value(
                    resilient_write_core::envelope::Failure::Internal(format!(
                        "tool task failed: {e}"
                    ))
                    .envelope(&shown, 0),
                )
                .unwrap_or(Value::Null),
            ),
        };
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_safe_write_runs_inline_only_when_it_is_alone() {
        let write = serde_json::json!({"path": "a", "content": "x"});
        let one = AtomicUsize::new(1);
        assert!(runs_inline(Some(&one), "safe_write", &write, false));
        // Not without a transport that counts, nor beside another request.
        assert!(!runs_inline(None, "safe_write", &write, false));
        assert!(!runs_inline(
            Some(&AtomicUsize::new(2)),
            "safe_write",
            &write,
            false
        ));
        // Not when progress was asked for, for another tool, or for a large content.
        assert!(!runs_inline(Some(&one), "safe_write", &write, true));
        assert!(!runs_inline(Some(&one), "compose", &write, false));
        let big = serde_json::json!({"path": "a", "content": "x".repeat(INLINE_MAX_BYTES + 1)});
        assert!(!runs_inline(Some(&one), "safe_write", &big, false));
        let no_content = serde_json::json!({"path": "a"});
        assert!(!runs_inline(Some(&one), "safe_write", &no_content, false));
    }
}
