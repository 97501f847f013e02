//! The MCP front end: an `rmcp` [`ServerHandler`] over the [`Service`]. It holds no business
//! logic: it lists the catalogue, hands each call to [`Service::call`] on a blocking thread
//! (writes fsync), and wraps the result or envelope as `structuredContent` plus the same JSON
//! as text. A panic in a handler becomes an envelope, never a dead server.

use crate::service::Service;
use crate::tools::{self, catalog, listed_name};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool, ToolAnnotations,
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
rw_journal_tail shows what was written. \
To change several files together, rw_tx_begin, stage with rw_tx_write / rw_tx_replace, then \
rw_tx_commit (all or nothing, also across a crash) or rw_tx_rollback. Every overwrite keeps the \
previous content: rw_history lists a file's versions and rw_restore puts one back (or undoes a \
whole transaction with tx_id).";

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
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
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
}
