//! A session's tool list: which tools `tools/list` shows this client, and the `toolsets` tool
//! that adds toolsets to it. The enabled toolsets are per client (one stdio process, one HTTP
//! session), never the shared service's; the table and the tool's logic are
//! [`crate::tools::toolsets`]. Enabling one sends `notifications/tools/list_changed` before the
//! call's answer, so a client that refreshes on it already sees the new tools.

use super::McpServer;
use crate::tools::toolsets::{self, TOOLSETS};
use rmcp::RoleServer;
use rmcp::model::Tool;
use rmcp::service::RequestContext;
use serde_json::Value;
use std::sync::{Mutex, PoisonError};

/// The toolsets one client enabled (names from [`toolsets::SETS`]), in the order it did.
#[derive(Default)]
pub(super) struct EnabledToolsets(Mutex<Vec<&'static str>>);

impl EnabledToolsets {
    fn snapshot(&self) -> Vec<&'static str> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl McpServer {
    /// What `tools/list` shows this client now.
    pub(super) fn listed_tools(&self) -> Vec<Tool> {
        let enabled = self.client.toolsets.snapshot();
        let listing = self.service.tools();
        self.tools
            .iter()
            .filter(|(name, _)| listing.lists(name, &enabled))
            .map(|(_, tool)| tool.clone())
            .collect()
    }

    /// `toolsets`: enable toolsets for this client (under a fixed `--tools` list the tool is
    /// refused like any tool outside it), then tell the client its list changed.
    pub(super) async fn call_toolsets(
        &self,
        args: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, resilient_write_core::envelope::Envelope> {
        let style = self.service.tool_names();
        let (outcome, changed) = {
            let mut enabled = self
                .client
                .toolsets
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let before = enabled.len();
            let outcome = self.service.call_with(&TOOLSETS, args, |args| {
                toolsets::apply(&mut enabled, args, style)
            });
            (outcome, enabled.len() != before)
        };
        if changed && let Err(e) = context.peer.notify_tool_list_changed().await {
            tracing::debug!("could not send tools/list_changed: {e}");
        }
        outcome
    }
}
