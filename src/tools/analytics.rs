//! `analytics`: the MCP face of [`resilient_write_core::analytics`], one streaming pass over the journal.
//! Argument parsing and the result shape only; the query is [`resilient_write_core::analytics::query`].

use super::errors::{FailureCode as C, STATE};
use super::{ToolSpec, parse_args, result_schema, schema, to_value};
use resilient_write_core::analytics::Analytics;
use resilient_write_core::analytics::query::query;
use resilient_write_core::envelope::Result;
use resilient_write_core::store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Arguments of `analytics`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyticsArgs {
    /// Only rows from this time on (RFC 3339 or a date).
    #[serde(default)]
    pub since: Option<String>,
    /// Only this chunk session in `sessions`.
    #[serde(default)]
    pub session_filter: Option<String>,
}

/// Result of `analytics`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AnalyticsResult {
    pub ok: bool,
    #[serde(flatten)]
    pub analytics: Analytics,
}

pub const ANALYTICS: ToolSpec = ToolSpec {
    name: "analytics",
    title: "Journal analytics",
    description: "Statistics of the write journal: writes, paths, bytes, modes, callers, timeline, hot \
        paths, chunk sessions, velocity.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<AnalyticsArgs>,
    output_schema: result_schema::<AnalyticsResult>,
    run: run_analytics,
    errors: &[STATE, &[C::InvalidArguments]],
};

fn run_analytics(store: &Store, raw: Value) -> Result<Value> {
    let args: AnalyticsArgs = parse_args(raw)?;
    let analytics = query(
        store.pipeline().journal(),
        store.workspaces().journal_paths(),
        args.since.as_deref(),
        args.session_filter,
    )?;
    to_value(&AnalyticsResult {
        ok: true,
        analytics,
    })
}
