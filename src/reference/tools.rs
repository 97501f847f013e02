//! `docs/reference/tools.md`: every tool a server lists, rendered from the catalogue the MCP
//! front end publishes (`tools/list` is built from the same [`ToolSpec`]s; `tests/reference.rs`
//! checks that the running server lists exactly these), ordered by task ([`SECTIONS`]).

use super::markdown::{anchor, cell, one_line, paragraphs, table};
use crate::tools::errors::{ANY_TOOL, FailureCode, IO_ERRNOS};
use crate::tools::profile::CORE;
use crate::tools::{ToolListing, ToolNames, ToolProfile, ToolSpec, listed_name, toolsets};
use resilient_write_core::envelope::{Envelope, Failure};
use serde_json::{Map, Value};
use std::fmt::Write;

/// The reference's sections, by task, and the tools in each (bare names). Every listed tool
/// is in exactly one ([`tools_md`] refuses otherwise).
pub const SECTIONS: &[(&str, &[&str])] = &[
    ("Writes", &["safe_write"]),
    ("Edits", &["safe_replace"]),
    ("Reading files", &["read", "stat"]),
    (
        "Chunks",
        &[
            "chunk_write",
            "chunk_append",
            "chunk_compose",
            "chunk_preview",
            "chunk_status",
            "chunk_reset",
        ],
    ),
    ("Scratchpad", &["scratch_put", "scratch_ref", "scratch_get"]),
    ("Handoffs", &["handoff_write", "handoff_read"]),
    (
        "Checkpoints",
        &[
            "checkpoint",
            "checkpoint_read",
            "checkpoint_list",
            "checkpoint_cleanup",
        ],
    ),
    (
        "Transactions",
        &[
            "tx_begin",
            "tx_write",
            "tx_replace",
            "tx_status",
            "tx_commit",
            "tx_rollback",
        ],
    ),
    ("History and restore", &["history", "restore"]),
    (
        "Screening and validation (L0)",
        &["risk_score", "redact", "validate"],
    ),
    ("Journal and analytics", &["journal_tail", "analytics"]),
    ("Meta", &["toolsets"]),
];

/// Every tool a session can be shown: the catalogue and the `toolsets` tool.
fn every_tool() -> Vec<&'static ToolSpec> {
    ToolListing::Toolsets.listable()
}

fn find(name: &str) -> Option<&'static ToolSpec> {
    every_tool().into_iter().find(|t| t.name == name)
}

fn shown(name: &str) -> String {
    listed_name(name, ToolNames::Underscore)
}

fn link(name: &str) -> String {
    format!("[`{}`](#{})", shown(name), anchor(&shown(name)))
}

/// The whole of `docs/reference/tools.md`. `Err` names a tool no section places, or placed
/// twice, or a section naming no tool.
pub fn tools_md() -> Result<String, String> {
    check_sections()?;
    let mut out = super::generated_banner();
    out += "\n\n# Tool reference\n\n";
    out += &intro();
    out += &contents();
    out += &listing();
    out += &failures();
    for (section, names) in SECTIONS {
        let _ = write!(out, "\n## {section}\n");
        for name in *names {
            let t = find(name).ok_or_else(|| format!("no tool {name}"))?;
            out += &tool(t);
        }
    }
    Ok(out.trim_end().to_string() + "\n")
}

fn check_sections() -> Result<(), String> {
    let placed: Vec<&str> = SECTIONS
        .iter()
        .flat_map(|(_, n)| n.iter().copied())
        .collect();
    for t in every_tool() {
        match placed.iter().filter(|n| **n == t.name).count() {
            1 => {}
            0 => {
                return Err(format!(
                    "tool {} is in no section of reference::SECTIONS",
                    t.name
                ));
            }
            _ => return Err(format!("tool {} is in several sections", t.name)),
        }
    }
    match placed.iter().find(|n| find(n).is_none()) {
        Some(n) => Err(format!("reference::SECTIONS names {n}, which is no tool")),
        None => Ok(()),
    }
}

fn intro() -> String {
    format!(
        "Every tool the MCP server can list, rendered from the tool catalogue that `tools/list` \
         publishes: name, description, arguments (from the input schema), result fields (from \
         the output schema), the failures it can return (declared beside each tool and checked \
         against failures real calls provoke), its annotations, and where it is listed. \
         Ordered by task.\n\n\
         Tools are listed as `rw_NAME` (`serve --tool-names dotted`: `rw.NAME`, the original's \
         spelling); a call accepts `rw_NAME`, `rw.NAME` or the bare `NAME` whatever is \
         listed. Every tool answers with a JSON object (`structuredContent`) whose `ok` is \
         true, or with an error envelope whose `ok` is false ([Failures](#failures)). Every \
         tool's `openWorldHint` is false: none reaches beyond the workspace.\n\n\
         {}\n",
        paragraphs(
            "Listing is not permission: under the default listing a tool not listed still \
             answers when called by name. A fixed list (`serve --tools all|core|original|\
             TOOLSET|NAME,...`, `--read-only`) lists only its tools and refuses every other \
             (`ToolNotEnabled`)."
        )
    )
}

fn contents() -> String {
    let mut out = String::from("\n## Contents\n\n");
    for (section, names) in SECTIONS {
        let tools: Vec<String> = names.iter().map(|n| link(n)).collect();
        let _ = writeln!(
            out,
            "- [{section}](#{}): {}",
            anchor(section),
            tools.join(", ")
        );
    }
    out
}

fn listing() -> String {
    let mut out = String::from("\n## Listing\n\n");
    let original: Vec<String> = toolsets::ORIGINAL.iter().map(|n| link(n)).collect();
    let _ = write!(
        out,
        "By default a session is listed the original's {} tools and {}: {}.\n\n\
         {} enables a toolset for the session (its tools are listed from then on, \
         `notifications/tools/list_changed`), or runs a tool through it (`call`, `arguments`) \
         for a client that keeps its first list:\n\n",
        toolsets::ORIGINAL.len(),
        link(toolsets::TOOLSETS.name),
        original.join(", "),
        link(toolsets::TOOLSETS.name),
    );
    let rows: Vec<Vec<String>> = toolsets::SETS
        .iter()
        .map(|s| {
            let tools: Vec<String> = s.tools.iter().map(|n| link(n)).collect();
            vec![
                format!("`{}`", s.name),
                tools.join(", "),
                cell(s.description),
            ]
        })
        .collect();
    out += &table(&["Toolset", "Tools", "For"], &rows);
    let core: Vec<String> = CORE.iter().map(|n| link(n)).collect();
    let _ = write!(
        out,
        "\nFixed lists (`serve --tools`, comma-separated, also `RW_TOOLS`): `all` (every tool \
         but {}), `core` ({}), `original` (the default listing's tools), a toolset's name, or \
         tool names. `--read-only` keeps only the tools whose `readOnlyHint` is true.\n",
        link(toolsets::TOOLSETS.name),
        core.join(", ")
    );
    out
}

/// A failure's envelope as the core builds it.
fn envelope(f: &Failure) -> Envelope {
    f.envelope("rw_tool", 0)
}

/// `error` / `reason_hint` / `suggested_action`, as the envelope spells them.
fn classification(e: &Envelope) -> [String; 3] {
    let word = |v: Result<Value, serde_json::Error>| match v {
        Ok(Value::String(s)) => format!("`{s}`"),
        _ => "?".into(),
    };
    [
        word(serde_json::to_value(e.error)),
        word(serde_json::to_value(e.reason_hint)),
        word(serde_json::to_value(e.suggested_action)),
    ]
}

fn failures() -> String {
    let mut out = String::from("\n## Failures\n\n");
    out += &paragraphs(
        "A failed call answers with an envelope: `ok: false`, `schema_version`, `error`, \
         `reason_hint`, `detected_patterns`, `suggested_action`, `retry_budget` and `context` \
         (always `tool`, `message` and `retriable`, then the fields below). Each tool lists \
         the failures it can return beyond those of any call. The table is the core's own \
         classification (`Failure::envelope`); a `reason` with a value is fixed by the failure, \
         one without carries the particulars.",
    );
    out += "\n\n### Any call\n\nAny tool call can fail with: ";
    let any: Vec<String> = ANY_TOOL.iter().map(|c| format!("`{}`", c.name())).collect();
    out += &any.join(", ");
    out += " (the dispatcher: an unknown or not enabled tool, an identical call retried past \
            its budget, a caught panic; and the argument check every tool makes: a missing, \
            mistyped or unknown argument, text that is not Unicode, a request message over the \
            limit).\n\n### Every failure\n\n";
    let rows: Vec<Vec<String>> = FailureCode::ALL
        .iter()
        .map(|&code| {
            let f = code.sample(false);
            let e = envelope(&f);
            let [kind, hint, action] = if code == FailureCode::Io {
                ["by errno".into(), "by errno".into(), "by errno".into()]
            } else {
                classification(&e)
            };
            let fields: Vec<String> = code
                .context_fields()
                .into_iter()
                .map(|(k, v)| match v {
                    Some(v) => format!("`{k}`=`{}`", v.as_str().unwrap_or("")),
                    None => format!("`{k}`"),
                })
                .collect();
            let tools: Vec<String> = every_tool()
                .iter()
                .filter(|t| t.error_codes().contains(&code))
                .map(|t| format!("`{}`", t.name))
                .collect();
            let tools = match (ANY_TOOL.contains(&code), tools.is_empty()) {
                (true, true) => "any call".to_string(),
                (true, false) => format!("any call; also {}", tools.join(", ")),
                (false, _) => tools.join(", "),
            };
            vec![
                format!("`{}`", code.name()),
                kind,
                hint,
                action,
                if f.retriable() { "yes" } else { "no" }.into(),
                fields.join(", "),
                tools,
            ]
        })
        .collect();
    out += &table(
        &[
            "Failure",
            "error",
            "reason_hint",
            "suggested_action",
            "retriable",
            "context",
            "tools",
        ],
        &rows,
    );
    out += "\n### I/O failures by errno\n\n`Io` is classified by the error number of the \
            failed system call (`context.errno`, `context.strerror`); an errno not listed is \
            classified as `ENOENT` is.\n\n";
    let rows: Vec<Vec<String>> = IO_ERRNOS
        .iter()
        .map(|(name, code)| {
            let f = Failure::io("write", "f", std::io::Error::from_raw_os_error(*code));
            let [kind, hint, action] = classification(&envelope(&f));
            vec![format!("`{name}`"), kind, hint, action]
        })
        .collect();
    out += &table(
        &["errno", "error", "reason_hint", "suggested_action"],
        &rows,
    );
    out
}

fn yes_no(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// Where `t` is listed: by default or in which toolset, and in which fixed lists.
fn where_listed(t: &ToolSpec) -> String {
    let default = if toolsets::listed(t.name, &[]) {
        "the default listing".to_string()
    } else {
        let set = toolsets::SETS.iter().find(|s| s.tools.contains(&t.name));
        set.map_or_else(
            || "no listing".to_string(),
            |s| format!("toolset `{}` (enable with `rw_toolsets`)", s.name),
        )
    };
    let mut fixed: Vec<String> = ["all", "core", "original"]
        .iter()
        .filter(|p| ToolProfile::parse(p).is_ok_and(|p| p.allows(t.name)))
        .map(|p| format!("`{p}`"))
        .collect();
    fixed.extend(
        toolsets::SETS
            .iter()
            .filter(|s| s.tools.contains(&t.name))
            .map(|s| format!("`{}`", s.name)),
    );
    let fixed = if fixed.is_empty() {
        "none (a fixed list never changes, so it has no `rw_toolsets`)".to_string()
    } else {
        fixed.join(", ")
    };
    let read_only = if ToolListing::Toolsets.read_only().allows(t.name) {
        "; kept by `--read-only`"
    } else {
        ""
    };
    format!("{default}; fixed lists: {fixed}{read_only}")
}

fn tool(t: &ToolSpec) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "\n### `{}`\n\n**{}**. Also `{}`.\n\n{}\n\n",
        shown(t.name),
        one_line(t.title),
        listed_name(t.name, ToolNames::Dotted),
        paragraphs(t.description)
    );
    let _ = writeln!(out, "- Listed in: {}", where_listed(t));
    let _ = writeln!(
        out,
        "- Annotations: `readOnlyHint` {}, `destructiveHint` {}, `idempotentHint` {}",
        yes_no(t.read_only),
        yes_no(t.destructive),
        yes_no(t.idempotent)
    );
    let codes: Vec<String> = t
        .error_codes()
        .iter()
        .map(|c| format!("`{}`", c.name()))
        .collect();
    let errors = if codes.is_empty() {
        "none beyond any call's".to_string()
    } else {
        codes.join(", ")
    };
    let _ = writeln!(
        out,
        "- [Failures](#failures), beyond [any call's](#any-call): {errors}"
    );
    let input = (t.input_schema)();
    let args = fields(&input, &defs(&input));
    out += "\n**Arguments**";
    if args.is_empty() {
        out += ": none.\n";
    } else {
        out += "\n\n";
        let rows: Vec<Vec<String>> = args
            .into_iter()
            .map(|f| {
                vec![
                    format!("`{}`", f.name),
                    f.ty,
                    f.required.into(),
                    f.default,
                    f.description,
                ]
            })
            .collect();
        out += &table(
            &["Name", "Type", "Required", "Default", "Description"],
            &rows,
        );
    }
    let output = (t.output_schema)();
    let rows: Vec<Vec<String>> = fields(&output, &defs(&output))
        .into_iter()
        .map(|f| {
            vec![
                format!("`{}`", f.name),
                f.ty,
                f.required.into(),
                f.description,
            ]
        })
        .collect();
    out += "\n**Result**\n\n";
    out += &table(&["Field", "Type", "Always", "Description"], &rows);
    out
}

/// One argument or result field, flattened (`edits[].old_string`).
struct Field {
    name: String,
    ty: String,
    required: &'static str,
    default: String,
    description: String,
}

fn defs(schema: &Value) -> Map<String, Value> {
    schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `schema` with a `$ref` to `#/$defs/X` replaced by the definition (once: no cycle here).
fn resolved<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
        .unwrap_or(schema)
}

/// The properties of the object schema `schema`, required ones first (in the schema's
/// order), then the rest by name, each followed by its nested fields.
fn fields(schema: &Value, defs: &Map<String, Value>) -> Vec<Field> {
    let mut out = Vec::new();
    walk(resolved(schema, defs), defs, "", &mut out);
    out
}

fn walk(schema: &Value, defs: &Map<String, Value>, prefix: &str, out: &mut Vec<Field>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<&String> = props.keys().collect();
    names.sort_by_key(|n| {
        (
            required.iter().position(|r| r == n).unwrap_or(usize::MAX),
            n.as_str(),
        )
    });
    for name in names {
        let raw = &props[name.as_str()];
        let prop = resolved(raw, defs);
        let path = format!("{prefix}{name}");
        let description = raw
            .get("description")
            .or_else(|| prop.get("description"))
            .and_then(Value::as_str)
            .map(cell)
            .unwrap_or_default();
        out.push(Field {
            name: path.clone(),
            ty: type_of(prop, defs),
            required: if required.contains(&name.as_str()) {
                "yes"
            } else {
                ""
            },
            default: raw
                .get("default")
                .map(|d| format!("`{}`", cell(&d.to_string())))
                .unwrap_or_default(),
            description,
        });
        walk(prop, defs, &format!("{path}."), out);
        if let Some(items) = prop.get("items") {
            walk(resolved(items, defs), defs, &format!("{path}[]."), out);
        }
        if let Some(values) = map_values(prop) {
            walk(resolved(values, defs), defs, &format!("{path}.*."), out);
        }
    }
}

/// A schema's type in a few words: `string`, `integer ≥ 0`, `` `create` \| `append` ``,
/// `array of string`, `object`.
fn type_of(schema: &Value, defs: &Map<String, Value>) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let v: Vec<String> = values
            .iter()
            .map(|v| match v {
                Value::String(s) => format!("`{}`", cell(s)),
                other => format!("`{}`", cell(&other.to_string())),
            })
            .collect();
        return v.join(" \\| ");
    }
    let base = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".into(),
    };
    match base.as_str() {
        "array" => match schema.get("items") {
            Some(items) => format!("array of {}", type_of(resolved(items, defs), defs)),
            None => "array".into(),
        },
        "integer" | "number" => match schema.get("minimum") {
            Some(m) => format!("{base} ≥ {m}"),
            None => base,
        },
        "string" => match schema.get("format").and_then(Value::as_str) {
            Some(f) => format!("string ({f})"),
            None => base,
        },
        "object" => match map_values(schema) {
            Some(values) => format!("map of {}", type_of(resolved(values, defs), defs)),
            None => base,
        },
        _ => base,
    }
}

/// The schema of a map's values (`additionalProperties` as a schema, not `true`/`false`).
fn map_values(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|v| v.is_object())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::catalog;
    use serde_json::json;

    #[test]
    fn fields_flatten_nested_objects_and_arrays_with_required_first() {
        let schema = json!({
            "type": "object",
            "required": ["path"],
            "properties": {
                "mode": {"type": "string", "enum": ["create", "append"], "default": "create"},
                "path": {"type": "string", "description": "Where |to| write"},
                "edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}},
            },
            "$defs": {"Edit": {"type": "object", "required": ["old"], "properties": {
                "old": {"type": "string"}, "count": {"type": "integer", "minimum": 0}}}}
        });
        let f = fields(&schema, &defs(&schema));
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["path", "edits", "edits[].old", "edits[].count", "mode"]
        );
        assert_eq!(f[0].required, "yes");
        assert_eq!(f[0].description, "Where \\|to\\| write");
        assert_eq!(f[1].ty, "array of object");
        assert_eq!(f[3].ty, "integer ≥ 0");
        assert_eq!(f[4].ty, "`create` \\| `append`");
        assert_eq!(f[4].default, "`\"create\"`");
    }

    #[test]
    fn every_tool_is_placed_in_one_section() {
        assert_eq!(check_sections(), Ok(()));
        let placed: usize = SECTIONS.iter().map(|(_, n)| n.len()).sum();
        assert_eq!(placed, catalog().len() + 1);
    }
}
