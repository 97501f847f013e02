//! L5: task-continuity handoff envelopes (`HANDOFF.md`).
//!
//! A handoff is Markdown with a YAML front-matter block between `---` lines, in the layout of
//! the paper's Listing 2 (task_id, status, started_at, updated_at, agent, summary, next_steps,
//! context_hints, last_good_state[{path, sha256, bytes}], open_questions, blockers,
//! artifacts[{kind, path, sha256}], checkpoint_refs), plus our optional `dependency_graph`.
//! Keys this version does not know are kept, so envelopes of the Python original and of later
//! versions survive a read-modify-write.
//!
//! This module is the pure part: parsing (malformed front-matter is an error naming the
//! line), rendering, validation of required fields and status, the dependency graph (cycles
//! named, dangling ids refused, ready steps in list order), the free text that L0 must see,
//! and the `resume` message. File I/O, drift hashing and the pipeline live in
//! [`super::disk`].

use crate::envelope::{Failure, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// Default location of the envelope, relative to the working directory.
pub const DEFAULT_HANDOFF_PATH: &str = "HANDOFF.md";

/// Fields every envelope must carry (the original's list).
pub const REQUIRED_FIELDS: &[&str] = &[
    "task_id",
    "status",
    "agent",
    "summary",
    "next_steps",
    "last_good_state",
];

/// Where the task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Complete,
    Partial,
    Blocked,
    HandedOff,
}

pub const STATUSES: &[&str] = &["complete", "partial", "blocked", "handed_off"];

/// A file as it was when the task was last in a good state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileState {
    /// Workspace path (relative to the working directory, or absolute beneath a root).
    pub path: String,
    /// SHA-256 of the file then. Omitted on write: filled in from the file on disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Size then. Omitted on write: filled in from the file on disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// Something the task produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Artifact {
    /// What it is (report, figure, build, ...).
    #[serde(default)]
    pub kind: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One step of the optional dependency graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    pub id: String,
    #[serde(default)]
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub done: bool,
}

/// The front-matter of a handoff, in the paper's field order. Unknown keys are kept in
/// `extra` and written back after the known ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Handoff {
    pub task_id: String,
    pub status: Status,
    /// RFC 3339; kept from the previous envelope (or set now) when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// RFC 3339; set by handoff_write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    pub agent: String,
    pub summary: String,
    /// What the next agent should do, in order (strings; objects are kept as given).
    pub next_steps: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_hints: Vec<Value>,
    pub last_good_state: Vec<FileState>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_questions: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Checkpoint names (or the original's {name, sha256, bytes, path} objects).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoint_refs: Vec<Value>,
    /// Optional machine-readable plan: no cycles, no dangling ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_graph: Option<Vec<Step>>,
    /// Keys this version does not know, preserved.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::InvalidDocument {
        what: "handoff envelope".into(),
        message: message.into(),
        line: None,
        field: None,
        missing_fields: Vec::new(),
    }
}

fn invalid_field(field: &str, message: impl Into<String>) -> Failure {
    Failure::InvalidDocument {
        what: "handoff envelope".into(),
        message: message.into(),
        line: None,
        field: Some(field.into()),
        missing_fields: Vec::new(),
    }
}

/// Check and type an envelope given as JSON (a tool argument or parsed front-matter).
pub fn from_value(v: Value) -> Result<Handoff> {
    let Value::Object(map) = v else {
        return Err(invalid("the envelope must be a mapping of fields"));
    };
    let missing: Vec<String> = REQUIRED_FIELDS
        .iter()
        .filter(|f| map.get(**f).is_none_or(Value::is_null))
        .map(|f| f.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(Failure::InvalidDocument {
            what: "handoff envelope".into(),
            message: format!("missing required field(s): {}", missing.join(", ")),
            line: None,
            field: None,
            missing_fields: missing,
        });
    }
    if let Some(s) = map.get("status")
        && !s.as_str().is_some_and(|s| STATUSES.contains(&s))
    {
        return Err(invalid_field(
            "status",
            format!("unknown status {s}; use one of {}", STATUSES.join(", ")),
        ));
    }
    for (field, _) in map.iter() {
        if let Some(e) = check_field_type(&map, field) {
            return Err(e);
        }
    }
    let h: Handoff =
        serde_json::from_value(Value::Object(map)).map_err(|e| invalid(e.to_string()))?;
    for (i, f) in h.last_good_state.iter().enumerate() {
        if f.path.is_empty() {
            return Err(invalid_field(
                &format!("last_good_state[{i}].path"),
                "empty path",
            ));
        }
        if let Some(sha) = &f.sha256
            && !crate::hash::is_sha256_hex(sha)
        {
            return Err(invalid_field(
                &format!("last_good_state[{i}].sha256"),
                "must be 64 hex digits (a SHA-256)",
            ));
        }
    }
    if let Some(graph) = &h.dependency_graph {
        check_graph(graph)?;
    }
    Ok(h)
}

/// A clear message for the common shape mistakes (serde's would name no field).
fn check_field_type(map: &Map<String, Value>, field: &str) -> Option<Failure> {
    let v = map.get(field)?;
    let ok = match field {
        "task_id" | "agent" | "summary" => v.is_string(),
        "next_steps" | "context_hints" | "open_questions" | "blockers" | "last_good_state"
        | "artifacts" | "checkpoint_refs" => v.is_array(),
        "started_at" | "updated_at" => v.is_string() || v.is_null(),
        "dependency_graph" => v.is_array() || v.is_null(),
        _ => true,
    };
    (!ok).then(|| {
        let want = match field {
            "task_id" | "agent" | "summary" | "started_at" | "updated_at" => "a string",
            _ => "a list",
        };
        invalid_field(field, format!("{field} must be {want}"))
    })
}

/// Validate the dependency graph: unique ids, every `depends_on` names a step, no cycle.
pub fn check_graph(steps: &[Step]) -> Result<()> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        if s.id.is_empty() {
            return Err(invalid_field(
                &format!("dependency_graph[{i}].id"),
                "empty step id",
            ));
        }
        if index.insert(s.id.as_str(), i).is_some() {
            return Err(invalid_field(
                "dependency_graph",
                format!("duplicate step id {:?}", s.id),
            ));
        }
    }
    for s in steps {
        for d in &s.depends_on {
            if !index.contains_key(d.as_str()) {
                return Err(invalid_field(
                    "dependency_graph",
                    format!("step {:?} depends on {:?}, which is not a step", s.id, d),
                ));
            }
        }
    }
    // Iterative DFS with colours; a grey successor closes a cycle, named from the stack.
    let mut colour = vec![0u8; steps.len()];
    for start in 0..steps.len() {
        if colour[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        colour[start] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(dep) = steps[node].depends_on.get(*next) {
                *next += 1;
                let d = index[dep.as_str()];
                match colour[d] {
                    0 => {
                        colour[d] = 1;
                        stack.push((d, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|(n, _)| *n == d).unwrap_or(0);
                        let mut names: Vec<&str> = stack[from..]
                            .iter()
                            .map(|(n, _)| steps[*n].id.as_str())
                            .collect();
                        names.push(steps[d].id.as_str());
                        return Err(invalid_field(
                            "dependency_graph",
                            format!("dependency cycle: {}", names.join(" -> ")),
                        ));
                    }
                    _ => {}
                }
            } else {
                colour[node] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

/// Steps not done whose dependencies are all done, in list order.
pub fn ready_steps(steps: &[Step]) -> Vec<Step> {
    let done: HashMap<&str, bool> = steps.iter().map(|s| (s.id.as_str(), s.done)).collect();
    steps
        .iter()
        .filter(|s| {
            !s.done
                && s.depends_on
                    .iter()
                    .all(|d| done.get(d.as_str()).copied().unwrap_or(false))
        })
        .cloned()
        .collect()
}

/// The free text of an envelope and its body, labelled by field, for L0.
pub fn free_text(h: &Handoff, body: &str) -> Vec<(String, String)> {
    fn strings(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
        match v {
            Value::String(s) => out.push((at.to_string(), s.clone())),
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    strings(x, &format!("{at}[{i}]"), out);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    strings(x, &format!("{at}.{k}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = vec![
        ("task_id".to_string(), h.task_id.clone()),
        ("agent".to_string(), h.agent.clone()),
        ("summary".to_string(), h.summary.clone()),
    ];
    for (name, list) in [
        ("next_steps", &h.next_steps),
        ("context_hints", &h.context_hints),
        ("open_questions", &h.open_questions),
        ("blockers", &h.blockers),
    ] {
        for (i, v) in list.iter().enumerate() {
            strings(v, &format!("{name}[{i}]"), &mut out);
        }
    }
    for (i, s) in h.dependency_graph.iter().flatten().enumerate() {
        out.push((
            format!("dependency_graph[{i}].description"),
            s.description.clone(),
        ));
    }
    for (k, v) in &h.extra {
        strings(v, k, &mut out);
    }
    out.push(("body".to_string(), body.to_string()));
    out
}

/// Refuse the envelope when its free text scores `medium` or more under L0. The envelope
/// reports per-match snippets (at most 16 characters) and the field each was found in.
pub fn screen(h: &Handoff, body: &str, classifier: &crate::classify::Classifier) -> Result<()> {
    let fields = free_text(h, body);
    let mut text = String::new();
    let mut starts = Vec::with_capacity(fields.len());
    for (name, s) in &fields {
        starts.push((text.len(), name.as_str()));
        text.push_str(s);
        text.push('\n');
    }
    let report = crate::classify::risk_score(&text, classifier);
    if report.verdict < crate::classify::Verdict::Medium {
        return Ok(());
    }
    let field_of = |offset: usize| {
        let i = starts.partition_point(|(s, _)| *s <= offset);
        starts.get(i.saturating_sub(1)).map_or("", |(_, n)| *n)
    };
    let mut families: Vec<String> = Vec::new();
    let detected = report
        .detected_patterns
        .iter()
        .map(|f| {
            if !families.contains(&f.kind) {
                families.push(f.kind.clone());
            }
            serde_json::json!({
                "kind": f.kind,
                "pattern": f.pattern,
                "match": f.r#match,
                "field": field_of(f.span().start),
            })
        })
        .collect();
    Err(Failure::ContentBlocked {
        score: report.score,
        verdict: format!("{:?}", report.verdict).to_lowercase(),
        families,
        detected,
    })
}

/// Render the file: `---`, the front-matter YAML, `---`, a blank line, the body.
pub fn render(h: &Handoff, body: &str) -> Result<String> {
    let yaml = serde_saphyr::to_string(h)
        .map_err(|e| Failure::Internal(format!("rendering the handoff front-matter: {e}")))?;
    let mut out = String::with_capacity(yaml.len() + body.len() + 16);
    out.push_str("---\n");
    out.push_str(yaml.trim_end());
    out.push_str("\n---\n");
    let body = body.trim_end();
    if !body.is_empty() {
        out.push('\n');
        out.push_str(body);
        out.push('\n');
    }
    Ok(out)
}

/// Split a handoff file into its front-matter (as JSON) and body. Errors name the line.
pub fn parse(text: &str) -> Result<(Value, String)> {
    let (front, body) = parse_front_matter(text, "handoff file")?;
    Ok((front, body.trim_start_matches(['\n', '\r']).to_string()))
}

/// Split `---`-delimited YAML front-matter (as a JSON mapping) from the rest of `text`, which
/// is returned exactly as it follows the closing line. Errors name the file's line.
pub fn parse_front_matter(text: &str, what: &str) -> Result<(Value, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc_err = |line: Option<usize>, message: String| Failure::InvalidDocument {
        what: what.into(),
        message,
        line,
        field: None,
        missing_fields: Vec::new(),
    };
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(doc_err(
            Some(1),
            "does not start with a `---` front-matter line".into(),
        ));
    }
    let mut offset = first.len();
    let front_start = offset;
    let mut front_end = None;
    for l in lines {
        let t = l.trim_end();
        if t == "---" || t == "..." {
            front_end = Some((offset, offset + l.len()));
            break;
        }
        offset += l.len();
    }
    let Some((end, body_start)) = front_end else {
        return Err(doc_err(
            None,
            "the front-matter is not closed by a `---` line".into(),
        ));
    };
    let front = &text[front_start..end];
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.with_snippet = false;
    let value: Value = if front.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_saphyr::from_str_with_options(front, options).map_err(|e| {
            // saphyr counts lines from the front-matter's start; the file has `---` above it.
            let line = e
                .location()
                .map(|l| usize::try_from(l.line()).unwrap_or(0) + 1);
            let msg = e.without_snippet().to_string();
            let msg = msg.lines().next().unwrap_or("").to_string();
            doc_err(line, format!("malformed YAML front-matter: {msg}"))
        })?
    };
    if !value.is_object() {
        return Err(doc_err(
            Some(2),
            "the front-matter is not a mapping of fields".into(),
        ));
    }
    Ok((value, text[body_start..].to_string()))
}

/// One drift warning: a `last_good_state` file that changed or disappeared since the handoff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Drift {
    pub path: String,
    /// changed, missing, unreadable or outside_workspace.
    pub reason: String,
    /// The recorded SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The SHA-256 on disk now (absent when missing or unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
}

/// The first message a fresh agent needs: the task, where it stands, what drifted, what is
/// ready to do next, and the body.
pub fn resume_message(path: &str, h: &Handoff, body: &str, drift: &[Drift]) -> String {
    use std::fmt::Write;
    let mut m = String::new();
    let status = serde_json::to_value(h.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let _ = writeln!(
        m,
        "You are resuming task `{}` (status: {status}), handed off by {}{}.",
        h.task_id,
        h.agent,
        h.updated_at
            .as_deref()
            .map(|t| format!(" at {t}"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        m,
        "The envelope is {path}.\n\n## Summary\n{}",
        h.summary.trim()
    );
    let list = |m: &mut String, title: &str, items: &[Value]| {
        if items.is_empty() {
            return;
        }
        let _ = writeln!(m, "\n## {title}");
        for (i, v) in items.iter().enumerate() {
            let s = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            let _ = writeln!(m, "{}. {s}", i + 1);
        }
    };
    if let Some(graph) = &h.dependency_graph {
        let ready = ready_steps(graph);
        let _ = writeln!(m, "\n## Ready now (dependency graph)");
        if ready.is_empty() {
            let _ = writeln!(m, "No step is ready (all done, or waiting on others).");
        }
        for s in ready {
            let _ = writeln!(m, "- {}: {}", s.id, s.description);
        }
    }
    list(&mut m, "Next steps", &h.next_steps);
    list(&mut m, "Blockers", &h.blockers);
    list(&mut m, "Open questions", &h.open_questions);
    list(&mut m, "Context hints", &h.context_hints);
    let _ = writeln!(m, "\n## Files (last good state)");
    if drift.is_empty() {
        let _ = writeln!(
            m,
            "All {} recorded file(s) still match their hashes.",
            h.last_good_state.len()
        );
    } else {
        let _ = writeln!(
            m,
            "WARNING: {} file(s) drifted since the handoff; re-read them before editing:",
            drift.len()
        );
        for d in drift {
            let _ = writeln!(m, "- {} ({})", d.path, d.reason);
        }
    }
    if !h.checkpoint_refs.is_empty() {
        list(
            &mut m,
            "Checkpoints (rw_checkpoint_read)",
            &h.checkpoint_refs,
        );
    }
    if !body.trim().is_empty() {
        let _ = writeln!(m, "\n## Notes\n{}", body.trim());
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(id: &str, deps: &[&str], done: bool) -> Step {
        Step {
            id: id.into(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            description: String::new(),
            done,
        }
    }

    #[test]
    fn a_cycle_is_named_in_order() {
        let g = vec![
            step("a", &["c"], false),
            step("b", &["a"], false),
            step("c", &["b"], false),
        ];
        let e = check_graph(&g).unwrap_err().to_string();
        assert!(e.contains("a -> c -> b -> a"), "{e}");
    }

    #[test]
    fn ready_steps_keep_list_order() {
        let g = vec![
            step("z", &[], false),
            step("a", &["x"], false),
            step("x", &[], true),
            step("m", &["z"], false),
        ];
        let ids: Vec<String> = ready_steps(&g).into_iter().map(|s| s.id).collect();
        assert_eq!(ids, ["z", "a"]);
    }

    #[test]
    fn render_then_parse_round_trips_with_unknown_keys() {
        let v = json!({"task_id": "t", "status": "partial", "agent": "a", "summary": "s: x\n#y",
            "next_steps": ["one"], "last_good_state": [], "custom": {"k": [1, 2]}});
        let h = from_value(v).unwrap();
        let text = render(&h, "# Body\n").unwrap();
        let (front, body) = parse(&text).unwrap();
        assert_eq!(from_value(front).unwrap(), h);
        assert_eq!(body, "# Body\n");
    }

    #[test]
    fn malformed_yaml_names_the_file_line() {
        let text = "---\ntask_id: t\nstatus: [unclosed\nagent: a\n---\n";
        let e = parse(text).unwrap_err();
        match e {
            Failure::InvalidDocument { line, .. } => {
                assert!(matches!(line, Some(3..=5)), "{line:?}")
            }
            other => panic!("{other:?}"),
        }
    }
}
