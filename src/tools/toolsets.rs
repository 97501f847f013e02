//! Toolsets: what a session is shown of the tools, and how it asks for more (SPEC section 9,
//! "Context budget"). Every request an agent sends its model carries the definitions of the
//! tools it lists, so by default a session lists the original's 21 tools ([`ORIGINAL`]) and
//! the `toolsets` tool; ours beyond the original are grouped in named toolsets ([`SETS`]) that
//! one call of `toolsets` enables for that session (the MCP front end then sends
//! `notifications/tools/list_changed`). Listing is not permission: a tool not listed answers
//! when called by name ([`super::ToolListing::accepts`]).
//!
//! This module holds the table and the tool's logic over a session's enabled set; the set
//! itself belongs to the MCP session (`crate::mcp`), never to the shared service.

use super::{ToolNames, ToolSpec, listed_name, parse_args, result_schema, schema, to_value};
use resilient_write_core::envelope::{Failure, Result};
use resilient_write_core::store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The original's 21 tools (resilient-write 0.3.0), listed to every session by default: an
/// existing configuration and instruction file find every tool they name.
pub const ORIGINAL: &[&str] = &[
    "risk_score",
    "safe_write",
    "safe_replace",
    "chunk_write",
    "chunk_append",
    "chunk_compose",
    "chunk_reset",
    "chunk_status",
    "chunk_preview",
    "scratch_put",
    "scratch_ref",
    "scratch_get",
    "handoff_write",
    "handoff_read",
    "journal_tail",
    "validate",
    "analytics",
    "checkpoint",
    "checkpoint_read",
    "checkpoint_list",
    "checkpoint_cleanup",
];

/// A named group of tools beyond the original's.
#[derive(Debug)]
pub struct Toolset {
    pub name: &'static str,
    /// One line: what its tools are for.
    pub description: &'static str,
    /// Bare tool names, in catalogue order.
    pub tools: &'static [&'static str],
}

/// Every toolset. Each tool of the catalogue is in [`ORIGINAL`] or in exactly one of these,
/// and no toolset is named like a tool (a fixed `--tools` list takes both).
pub const SETS: &[Toolset] = &[
    Toolset {
        name: "files",
        description: "Read a file or a line range of it with the sha256 an edit passes as \
            expected_prev_sha256; stat a file without its content.",
        tools: &["read", "stat"],
    },
    Toolset {
        name: "redaction",
        description: "Return a draft with each secret risk_score finds replaced by a typed \
            placeholder, the originals optionally kept in the scratchpad.",
        tools: &["redact"],
    },
    Toolset {
        name: "transactions",
        description: "Stage writes and edits to several files, then commit them all or none \
            (also across a crash), or roll back.",
        tools: &[
            "tx_begin",
            "tx_write",
            "tx_replace",
            "tx_status",
            "tx_commit",
            "tx_rollback",
        ],
    },
    Toolset {
        name: "undo",
        description: "List a file's journaled versions and restore one (or undo a whole \
            transaction).",
        tools: &["history", "restore"],
    },
];

/// The toolset called `name`.
pub fn named(name: &str) -> Option<&'static Toolset> {
    SETS.iter().find(|s| s.name == name)
}

/// Whether the tool with bare name `tool` is listed to a session that enabled the toolsets
/// `enabled` (under the default listing).
pub fn listed(tool: &str, enabled: &[&str]) -> bool {
    tool == TOOLSETS.name
        || ORIGINAL.contains(&tool)
        || SETS
            .iter()
            .any(|s| enabled.contains(&s.name) && s.tools.contains(&tool))
}

/// Arguments of `toolsets`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsetsArgs {
    // No descriptions: the tool's says it.
    #[serde(default)]
    pub enable: Vec<String>,
    #[serde(default)]
    pub call: Option<String>,
    #[serde(default)]
    pub arguments: Option<serde_json::Map<String, Value>>,
}

/// A tool of a toolset just enabled, as `toolsets` describes it: what a client that keeps
/// the tool list it first received needs to call it through `toolsets` (`call`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

/// A `toolsets` call that runs another tool (`call`, `arguments`): its name and arguments.
/// `None`: the call enables or lists toolsets.
pub fn pass_through(args: &Value) -> Result<Option<(String, Value)>> {
    let Some(name) = args.get("call") else {
        return Ok(None);
    };
    let keys_ok = args
        .as_object()
        .is_some_and(|o| o.keys().all(|k| k == "call" || k == "arguments"));
    let (Some(name), true) = (name.as_str(), keys_ok) else {
        return Err(Failure::InvalidArguments {
            message: "call takes a tool's name, with its arguments in arguments (an object), \
                      and nothing else"
                .into(),
        });
    };
    if super::find(name).is_none() || super::bare_name(name) == TOOLSETS.name {
        return Err(Failure::InvalidArguments {
            message: format!("call: no tool {name:?} to run through toolsets"),
        });
    }
    let arguments = match args.get("arguments") {
        None => Value::Object(Default::default()),
        Some(a @ Value::Object(_)) => a.clone(),
        Some(_) => {
            return Err(Failure::InvalidArguments {
                message: "arguments must be an object of the called tool's arguments".into(),
            });
        }
    };
    Ok(Some((name.to_string(), arguments)))
}

/// One toolset as `toolsets` reports it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ToolsetInfo {
    pub name: String,
    pub description: String,
    /// Its tools, under the names this server lists.
    pub tools: Vec<String>,
    /// Whether this session lists them.
    pub enabled: bool,
}

/// Result of `toolsets`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ToolsetsResult {
    pub ok: bool,
    pub toolsets: Vec<ToolsetInfo>,
    /// The toolsets this call enabled (not those enabled before); their tools are in the
    /// next tools/list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled_now: Vec<String>,
    /// The definitions of the tools just enabled, for a client that keeps its first tool
    /// list: such a one calls them through `toolsets` (`call`, `arguments`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub definitions: Vec<ToolDefinition>,
}

pub const TOOLSETS: ToolSpec = ToolSpec {
    name: "toolsets",
    title: "More tools",
    description: "Enable tools for this session: files (read, stat), redaction (redact), \
        transactions (tx_begin/write/replace/status/commit/rollback), undo (history, restore) \
        or all. Listed from then on; if not, call one with arguments. No arguments: lists them.",
    read_only: false,
    destructive: false,
    idempotent: true,
    input_schema: schema::<ToolsetsArgs>,
    output_schema: result_schema::<ToolsetsResult>,
    run: run_without_session,
    errors: &[],
};

/// Enable the toolsets `args` names in `enabled` (a session's set, toolset names) and report
/// every toolset. All or nothing: an unknown name enables none and names the valid ones.
pub fn apply(enabled: &mut Vec<&'static str>, args: Value, style: ToolNames) -> Result<Value> {
    let args: ToolsetsArgs = parse_args(args)?;
    if args.call.is_some() || args.arguments.is_some() {
        return Err(Failure::InvalidArguments {
            message: "call (with arguments) runs one tool; enable is a separate call".into(),
        });
    }
    let mut wanted: Vec<&'static str> = Vec::new();
    let mut unknown = Vec::new();
    for name in &args.enable {
        let bare = name.trim();
        match (bare, named(bare)) {
            ("all", _) => wanted.extend(SETS.iter().map(|s| s.name)),
            (_, Some(set)) => wanted.push(set.name),
            (_, None) => unknown.push(name.as_str()),
        }
    }
    if !unknown.is_empty() {
        let valid: Vec<&str> = SETS.iter().map(|s| s.name).collect();
        return Err(Failure::InvalidArguments {
            message: format!(
                "unknown toolset(s) {}: enable takes {} or all",
                unknown.join(", "),
                valid.join(", ")
            ),
        });
    }
    let mut enabled_now = Vec::new();
    for name in wanted {
        if !enabled.contains(&name) {
            enabled.push(name);
            enabled_now.push(name.to_string());
        }
    }
    to_value(&report(enabled, enabled_now, style))
}

fn report(enabled: &[&str], enabled_now: Vec<String>, style: ToolNames) -> ToolsetsResult {
    let definitions = SETS
        .iter()
        .filter(|s| enabled_now.iter().any(|n| n == s.name))
        .flat_map(|s| s.tools.iter())
        .filter_map(|t| super::find(t))
        .map(|t| ToolDefinition {
            name: listed_name(t.name, style),
            description: t.description.to_string(),
            input_schema: (t.input_schema)(),
        })
        .collect();
    ToolsetsResult {
        definitions,
        ok: true,
        toolsets: SETS
            .iter()
            .map(|s| ToolsetInfo {
                name: s.name.into(),
                description: s.description.into(),
                tools: s.tools.iter().map(|t| listed_name(t, style)).collect(),
                enabled: enabled.contains(&s.name),
            })
            .collect(),
        enabled_now,
    }
}

/// `toolsets` called outside an MCP session (no tool list to change): lists the toolsets,
/// and refuses to enable any.
fn run_without_session(_: &Store, args: Value) -> Result<Value> {
    let args: ToolsetsArgs = parse_args(args)?;
    if args.call.is_some() {
        return Err(Failure::InvalidArguments {
            message: "outside an MCP session, call the tool itself".into(),
        });
    }
    if !args.enable.is_empty() {
        return Err(Failure::InvalidArguments {
            message: "toolsets are enabled per MCP session, and this call has none".into(),
        });
    }
    to_value(&report(&[], Vec::new(), ToolNames::Underscore))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_tool_is_an_original_or_in_exactly_one_toolset() {
        for t in super::super::catalog() {
            let sets = SETS.iter().filter(|s| s.tools.contains(&t.name)).count();
            let original = usize::from(ORIGINAL.contains(&t.name));
            assert_eq!(sets + original, 1, "{}", t.name);
        }
        assert_eq!(ORIGINAL.len(), 21);
        for s in SETS {
            assert!(super::super::find(s.name).is_none(), "{} is a tool", s.name);
            for t in s.tools {
                assert!(super::super::find(t).is_some(), "{t}");
            }
        }
    }

    #[test]
    fn enabling_adds_the_sets_tools_to_the_listing_once() {
        let mut enabled = Vec::new();
        assert!(!listed("tx_commit", &enabled) && listed("safe_write", &enabled));
        assert!(listed("toolsets", &enabled));
        let r = apply(
            &mut enabled,
            json!({"enable": ["transactions"]}),
            ToolNames::Dotted,
        )
        .unwrap();
        assert_eq!(r["enabled_now"], json!(["transactions"]));
        assert!(listed("tx_commit", &enabled) && !listed("read", &enabled));
        let tx = &r["toolsets"][2];
        assert_eq!(
            (tx["name"].as_str(), &tx["enabled"]),
            (Some("transactions"), &json!(true))
        );
        assert_eq!(tx["tools"][0], "rw.tx_begin");
        // Again: nothing new.
        let r = apply(
            &mut enabled,
            json!({"enable": ["transactions"]}),
            ToolNames::Underscore,
        )
        .unwrap();
        assert!(r.get("enabled_now").is_none(), "{r}");
        apply(
            &mut enabled,
            json!({"enable": ["all"]}),
            ToolNames::Underscore,
        )
        .unwrap();
        assert_eq!(enabled.len(), SETS.len());
    }

    #[test]
    fn enabling_describes_the_tools_it_adds_for_clients_that_keep_their_list() {
        let mut enabled = Vec::new();
        let r = apply(
            &mut enabled,
            json!({"enable": ["undo"]}),
            ToolNames::Underscore,
        )
        .unwrap();
        let names: Vec<&str> = r["definitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["name"].as_str())
            .collect();
        assert_eq!(names, ["rw_history", "rw_restore"]);
        assert_eq!(r["definitions"][0]["inputSchema"]["type"], "object");
        let r = apply(
            &mut enabled,
            json!({"enable": ["undo"]}),
            ToolNames::Underscore,
        )
        .unwrap();
        assert!(
            r.get("definitions").is_none(),
            "only what this call enabled: {r}"
        );
    }

    #[test]
    fn call_names_a_tool_and_its_arguments_or_is_refused() {
        let ok = pass_through(&json!({"call": "rw_tx_begin", "arguments": {"label": "x"}}));
        assert_eq!(
            ok.unwrap(),
            Some(("rw_tx_begin".to_string(), json!({"label": "x"})))
        );
        assert_eq!(
            pass_through(&json!({"call": "history"})).unwrap(),
            Some(("history".to_string(), json!({})))
        );
        assert_eq!(pass_through(&json!({"enable": ["undo"]})).unwrap(), None);
        for bad in [
            json!({"call": "nope"}),
            json!({"call": "rw_toolsets"}),
            json!({"call": 3}),
            json!({"call": "history", "arguments": [1]}),
            json!({"call": "history", "enable": ["undo"]}),
        ] {
            assert!(pass_through(&bad).is_err(), "{bad}");
        }
        let mut enabled = Vec::new();
        let e = apply(
            &mut enabled,
            json!({"call": "history"}),
            ToolNames::Underscore,
        );
        assert!(e.is_err());
    }

    #[test]
    fn an_unknown_toolset_enables_nothing_and_names_the_valid_ones() {
        let mut enabled = Vec::new();
        let e = apply(
            &mut enabled,
            json!({"enable": ["files", "nope"]}),
            ToolNames::Underscore,
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("nope") && msg.contains("transactions"),
            "{msg}"
        );
        assert!(enabled.is_empty());
        let e = apply(
            &mut enabled,
            json!({"enable": "files"}),
            ToolNames::Underscore,
        );
        assert!(e.is_err());
    }

    #[test]
    fn without_a_session_toolsets_lists_and_refuses_to_enable() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let mut c = resilient_write_core::store::Config::new(root.clone());
        c.workspaces = vec![root];
        let store = resilient_write_core::startup::open(c).0;
        let r = (TOOLSETS.run)(&store, json!({})).unwrap();
        assert_eq!(r["toolsets"].as_array().unwrap().len(), SETS.len());
        assert_eq!(r["toolsets"][0]["enabled"], false);
        let e = (TOOLSETS.run)(&store, json!({"enable": ["files"]})).unwrap_err();
        assert!(e.to_string().contains("per MCP session"), "{e}");
    }
}
