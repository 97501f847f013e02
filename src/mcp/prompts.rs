//! MCP prompts: `resume`, which turns a handoff envelope (HANDOFF.md by default) into the
//! message a fresh agent starts from: summary, status, drifted files, next steps and notes.

use super::McpServer;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult, Prompt,
    PromptArgument, PromptMessage, Role,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;

/// `prompts/list`: the `resume` prompt.
pub(super) fn list() -> ListPromptsResult {
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
    ListPromptsResult::with_all_items(vec![prompt])
}

impl McpServer {
    /// `prompts/get`: the `resume` prompt over the handoff at `path`.
    pub(super) async fn get_resume_prompt(
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
            .unwrap_or(resilient_write_core::handoff::DEFAULT_HANDOFF_PATH)
            .to_string();
        let shown = path.clone();
        let text = self
            .blocking(&context, move |service| {
                resilient_write_core::handoff::disk::resume_prompt(service.store(), &path)
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
}
