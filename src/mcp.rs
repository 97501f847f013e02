//! The MCP front end: an `rmcp` [`ServerHandler`] over the [`Service`]. It holds no business
//! logic: it lists the catalogue, hands each call to [`Service::call`] on a blocking thread
//! (writes fsync), and wraps the result or envelope as `structuredContent` plus the same JSON
//! as text. A panic in a handler becomes an envelope, never a dead server.

use crate::service::Service;
use crate::tools::{self, catalog, listed_name};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InitializeResult, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument,
    PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use std::sync::Arc;

/// What agents are told at `initialize`.
pub const INSTRUCTIONS: &str = "resilient-write gives you a durable write surface. Prefer its \
tools over raw file writes: rw_safe_write (create/overwrite/append, atomic, verified, journaled; \
pass expected_prev_sha256 when you edit a file you read), rw_safe_replace (exact-match edits, \
dry_run diffs, several edits at once). Every failure returns a typed envelope: branch on \
`error` and `suggested_action`, and do not repeat an identical call once retry_budget is 0. \
rw_journal_tail shows what was written. Before you stop, or when you are blocked, record where \
the task stands with rw_handoff_write (HANDOFF.md); a fresh agent starts with rw_handoff_read or \
the `resume` prompt. Keep intermediate data in rw_checkpoint; check a draft's syntax with \
rw_validate before writing it.";

/// URI of the handoff resource (the workspace's HANDOFF.md).
pub const HANDOFF_URI: &str = "resilient-write://handoff";

/// The MCP server.
#[derive(Clone)]
pub struct McpServer {
    service: Arc<Service>,
    tools: Arc<Vec<Tool>>,
}

fn as_object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

impl McpServer {
    pub fn new(service: Arc<Service>) -> McpServer {
        let style = service.config().tool_names;
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
        }
    }
}

impl ServerHandler for McpServer {
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
                .build(),
        )
        .with_server_info(
            Implementation::new("resilient-write", env!("CARGO_PKG_VERSION"))
                .with_title("Resilient Write"),
        )
        .with_instructions(instructions)
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
        if let Some(info) = context.peer.peer_info() {
            self.service.set_caller(&info.client_info.name);
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let service = self.service.clone();
        let joined = tokio::task::spawn_blocking(move || service.call(&name, args)).await;
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
        _context: RequestContext<RoleServer>,
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
        let service = self.service.clone();
        let shown = path.clone();
        let text = tokio::task::spawn_blocking(move || {
            crate::tools::handoff::resume_prompt(&service, &path)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("resume task failed: {e}"), None))?
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
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let handoff = Resource::new(HANDOFF_URI, "handoff")
            .with_title("Task handoff (HANDOFF.md)")
            .with_description(
                "The current task-continuity envelope: YAML front-matter and Markdown notes.",
            )
            .with_mime_type("text/markdown");
        Ok(ListResourcesResult::with_all_items(vec![handoff]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri != HANDOFF_URI {
            return Err(McpError::resource_not_found(
                format!("unknown resource: {}", request.uri),
                None,
            ));
        }
        let service = self.service.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            crate::tools::handoff::load(&service, crate::handoff::DEFAULT_HANDOFF_PATH)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("read task failed: {e}"), None))?
        .map_err(|f| {
            let envelope = serde_json::to_value(f.envelope("resources/read", 0)).ok();
            McpError::resource_not_found(format!("handoff: {f}"), envelope)
        })?;
        let contents =
            ResourceContents::text(loaded.text, HANDOFF_URI).with_mime_type("text/markdown");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
