//! MCP resources: the handoff (HANDOFF.md), the journal tail (narrowed by the
//! `{?n,path,mode}` template) and each checkpoint, listed, read and completed (checkpoint
//! names). A library failure becomes a JSON-RPC error carrying the envelope as `data`.

use super::McpServer;
use crate::dispatch::Service;
use crate::tools;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Reference, Resource, ResourceContents, ResourceTemplate,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

/// URI of the handoff resource (the workspace's HANDOFF.md).
pub const HANDOFF_URI: &str = "resilient-write://handoff";

/// URI of the journal-tail resource; `?n=`, `path=` and `mode=` narrow it (the template).
pub const JOURNAL_TAIL_URI: &str = "resilient-write://journal/tail";

/// Prefix of checkpoint resources: `resilient-write://checkpoint/<name>`.
pub const CHECKPOINT_URI_PREFIX: &str = "resilient-write://checkpoint/";

impl McpServer {
    /// Completes checkpoint names for the `resilient-write://checkpoint/{name}` template;
    /// anything else gets an empty list (MCP: "no suggestions" is a valid answer).
    pub(super) async fn complete_checkpoint(
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
            .blocking(&context, |service| {
                resilient_write_core::checkpoint::disk::list(service.store())
            })
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

    /// `resources/list`: the handoff, the journal tail and each checkpoint.
    pub(super) async fn list_resource_items(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let this = self.clone();
        let resources = self
            .blocking(&context, move |service| this.resources(service))
            .await?;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    /// `resources/read` of one URI.
    pub(super) async fn read_resource_uri(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let contents = if uri == HANDOFF_URI {
            let loaded = self
                .blocking(&context, |service| {
                    resilient_write_core::handoff::disk::load(
                        service.store(),
                        resilient_write_core::handoff::DEFAULT_HANDOFF_PATH,
                    )
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
                    service
                        .store()
                        .journal_tail(args.n, args.filter_path.as_deref(), args.filter_mode)
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
                    resilient_write_core::checkpoint::disk::stored(service.store(), &name)
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
        if let Ok(list) = resilient_write_core::checkpoint::disk::list(service.store()) {
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

/// `resources/templates/list`: the filtered journal tail and a checkpoint by name.
pub(super) fn templates() -> ListResourceTemplatesResult {
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
    ListResourceTemplatesResult::with_all_items(templates)
}

fn checkpoint_mime(format: resilient_write_core::checkpoint::Format) -> &'static str {
    match format {
        resilient_write_core::checkpoint::Format::Json => "application/json",
        resilient_write_core::checkpoint::Format::Yaml => "application/yaml",
        resilient_write_core::checkpoint::Format::Markdown => "text/markdown",
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
fn failure_error(
    f: resilient_write_core::envelope::Failure,
    what: &str,
    not_found: bool,
) -> McpError {
    let envelope = serde_json::to_value(f.envelope("resources/read", 0)).ok();
    let message = format!("{what}: {f}");
    if not_found {
        McpError::resource_not_found(message, envelope)
    } else {
        McpError::invalid_params(message, envelope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
