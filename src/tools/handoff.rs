//! `handoff_write` and `handoff_read` (L5): the I/O around [`crate::handoff`]. The envelope is
//! written through the pipeline beneath a workspace (default `HANDOFF.md`); with
//! `archive: true` the envelope it replaces is first kept, also through the pipeline, in
//! `.resilient_write/handoffs/<ts>_<task_id>.md`. Reads re-hash every `last_good_state` file
//! and report drift as warnings, never as errors.

use super::{ToolSpec, parse_args, schema, to_value};
use crate::dispatch::Service;
use crate::envelope::{Failure, Result};
use crate::handoff::{self, DEFAULT_HANDOFF_PATH, Drift, Handoff, Step};
use crate::journal::now_rfc3339;
use crate::pipeline::{Body, Caller, Decision, Plan, read_existing};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Subdirectory of the state directory that keeps archived envelopes.
pub const ARCHIVE_DIR: &str = "handoffs";

fn default_path() -> String {
    DEFAULT_HANDOFF_PATH.into()
}

/// Arguments of `handoff_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffWriteArgs {
    /// The front-matter: task_id, status (complete|partial|blocked|handed_off), agent,
    /// summary, next_steps, last_good_state[{path, sha256?, bytes?}] are required;
    /// started_at, context_hints, open_questions, blockers, artifacts[{kind, path, sha256}],
    /// checkpoint_refs, dependency_graph[{id, depends_on, description, done}] are optional;
    /// other keys are kept. updated_at is set by the server.
    pub envelope: Value,
    /// Markdown after the front-matter.
    #[serde(default)]
    pub body: String,
    /// Where to write (default HANDOFF.md).
    #[serde(default = "default_path")]
    pub path: String,
    /// Keep the envelope being replaced in .resilient_write/handoffs/<ts>_<task_id>.md.
    #[serde(default)]
    pub archive: bool,
}

/// Arguments of `handoff_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffReadArgs {
    /// The envelope to read (default HANDOFF.md).
    #[serde(default = "default_path")]
    pub path: String,
}

/// Result of `handoff_write`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct HandoffWriteResult {
    pub ok: bool,
    /// The path as given.
    pub handoff_path: String,
    pub abs_path: String,
    pub sha256: String,
    pub bytes: u64,
    pub journal_id: String,
    /// Where the replaced envelope was archived (archive: true and a previous envelope).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_path: Option<String>,
    /// last_good_state files that differ from their recorded hash right now.
    pub drift: Vec<Drift>,
    /// Same as drift (the original's name).
    pub drift_warnings: Vec<Drift>,
    /// Dependency-graph steps ready now (absent without a graph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_steps: Option<Vec<Step>>,
}

/// Result of `handoff_read`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct HandoffReadResult {
    pub ok: bool,
    pub handoff_path: String,
    pub abs_path: String,
    /// The front-matter, unknown keys included.
    pub envelope: Value,
    pub body: String,
    /// SHA-256 of the file as read.
    pub sha256: String,
    /// Warnings: files that changed or went missing since the handoff.
    pub drift: Vec<Drift>,
    /// Same as drift (the original's name).
    pub drift_warnings: Vec<Drift>,
    /// Dependency-graph steps not done whose dependencies are all done, in list order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_steps: Option<Vec<Step>>,
}

pub const HANDOFF_WRITE: ToolSpec = ToolSpec {
    name: "handoff_write",
    title: "Write a task handoff",
    description: "Write a task-continuity envelope (HANDOFF.md: YAML front-matter + Markdown \
        body) so a fresh agent can resume. Required: task_id, status \
        (complete|partial|blocked|handed_off), agent, summary, next_steps, \
        last_good_state[{path, sha256?, bytes?}] (missing hashes are taken from disk; paths \
        must be inside the workspace). Optional dependency_graph[{id, depends_on, \
        description, done}] is checked for cycles and unknown ids. Free text is screened by \
        the L0 classifier: a secret refuses the write (blocked/content_filter). archive: true \
        keeps the replaced envelope under .resilient_write/handoffs/. Atomic and journaled.",
    read_only: false,
    destructive: true,
    idempotent: false,
    input_schema: schema::<HandoffWriteArgs>,
    output_schema: schema::<HandoffWriteResult>,
    run: run_handoff_write,
};

pub const HANDOFF_READ: ToolSpec = ToolSpec {
    name: "handoff_read",
    title: "Read the task handoff",
    description: "Read a handoff envelope (default HANDOFF.md): envelope, body, drift \
        warnings for last_good_state files that changed or are missing since (warnings, not \
        errors), and the dependency-graph steps ready now. Read-only.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<HandoffReadArgs>,
    output_schema: schema::<HandoffReadResult>,
    run: run_handoff_read,
};

/// Hash a workspace file now: `Ok(None)` when it does not exist.
fn hash_file(svc: &Service, path: &str) -> Result<Option<(String, u64)>> {
    let target = match svc.workspaces().resolve(path, false) {
        Ok(t) => t,
        Err(Failure::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    match read_existing(&target.dir, &target.name) {
        Ok(Some(e)) => Ok(Some((e.sha256, e.bytes.len() as u64))),
        Ok(None) => Ok(None),
        Err(e) => Err(Failure::io("read", path, e)),
    }
}

/// Compare every recorded file with the disk. Never fails.
pub fn drift(svc: &Service, h: &Handoff) -> Vec<Drift> {
    let mut out = Vec::new();
    for f in &h.last_good_state {
        let warn = |reason: &str, actual: Option<String>| Drift {
            path: f.path.clone(),
            reason: reason.into(),
            expected: f.sha256.clone(),
            actual,
        };
        match hash_file(svc, &f.path) {
            Ok(None) => out.push(warn("missing", None)),
            Ok(Some((sha, _))) => {
                if f.sha256.as_deref().map(str::to_ascii_lowercase) != Some(sha.clone()) {
                    out.push(warn("changed", Some(sha)));
                }
            }
            Err(Failure::OutsideWorkspace { .. } | Failure::NoWorkspace { .. }) => {
                out.push(warn("outside_workspace", None))
            }
            Err(_) => out.push(warn("unreadable", None)),
        }
    }
    out
}

/// Make `task_id` safe as part of a file name.
fn file_safe(task_id: &str) -> String {
    let s: String = task_id
        .chars()
        .take(80)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

fn run_handoff_write(svc: &Service, raw: Value) -> Result<Value> {
    let args: HandoffWriteArgs = parse_args(raw)?;
    let mut h = handoff::from_value(args.envelope)?;
    // Paths must be inside the workspace; missing hashes are filled in from the disk.
    for (i, f) in h.last_good_state.iter_mut().enumerate() {
        let field = format!("last_good_state[{i}].path");
        match hash_file(svc, &f.path) {
            Ok(Some((sha, bytes))) => {
                if f.sha256.is_none() {
                    f.sha256 = Some(sha);
                    f.bytes = f.bytes.or(Some(bytes));
                }
            }
            Ok(None) if f.sha256.is_some() => {}
            Ok(None) => {
                return Err(Failure::InvalidDocument {
                    what: "handoff envelope".into(),
                    message: format!(
                        "{} does not exist, so its sha256 cannot be filled in; give it",
                        f.path
                    ),
                    line: None,
                    field: Some(field),
                    missing_fields: Vec::new(),
                });
            }
            Err(
                e @ (Failure::OutsideWorkspace { .. }
                | Failure::NoWorkspace { .. }
                | Failure::InvalidPath { .. }),
            ) => return Err(e),
            Err(_) if f.sha256.is_some() => {}
            Err(e) => return Err(e),
        }
        if let Some(s) = &mut f.sha256 {
            *s = s.to_ascii_lowercase();
        }
    }
    // The workspace policy's classifier: its extra patterns and disabled families apply.
    handoff::screen(&h, &args.body, svc.classifier()?)?;
    let now = now_rfc3339();
    h.updated_at = Some(now.clone());

    let target = svc.workspaces().resolve(&args.path, true)?;
    let who = Caller {
        caller: svc.caller(),
        tool: "handoff_write".into(),
    };
    let path = args.path.as_str();
    let body = args.body;
    let (outcome, (archived_path, h)) = svc.pipeline().commit(&target, &who, |existing| {
        let mut h = h;
        let previous = existing.and_then(|e| {
            let text = std::str::from_utf8(&e.bytes).ok()?;
            let (front, _) = handoff::parse(text).ok()?;
            Some(front)
        });
        if h.started_at.is_none() {
            h.started_at = previous
                .as_ref()
                .and_then(|p| p.get("started_at"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| Some(now.clone()));
        }
        let mut archived_path = None;
        if args.archive
            && let Some(old) = existing
        {
            let ts = chrono::Utc::now().format("%Y%m%dT%H%M%S%.6fZ");
            let name = format!("{ts}_{}.md", file_safe(&h.task_id));
            let archive = crate::state::target(svc.state_dir(), ARCHIVE_DIR, &name)?;
            let bytes = old.bytes.clone();
            let archive_who = Caller {
                caller: who.caller.clone(),
                tool: "handoff_write".into(),
            };
            let (out, ()) = svc.pipeline().commit(&archive, &archive_who, |_| {
                Ok(Decision::Write(
                    Plan {
                        body: Body::Bytes(bytes),
                        mode_label: "archive".into(),
                        create_only: true,
                        extra: BTreeMap::new(),
                        new_file_mode: Some(0o600),
                    },
                    (),
                ))
            })?;
            archived_path = out.map(|o| o.abs_path.display().to_string());
        }
        let text = handoff::render(&h, &body)?;
        Ok(Decision::Write(
            Plan {
                body: Body::Bytes(text.into_bytes()),
                mode_label: crate::pipeline::mode_over(existing, "overwrite"),
                create_only: existing.is_none(),
                extra: BTreeMap::new(),
                new_file_mode: None,
            },
            (archived_path, h),
        ))
    })?;
    let Some(o) = outcome else {
        return Err(Failure::Internal("handoff write was not applied".into()));
    };
    let drift = drift(svc, &h);
    to_value(&HandoffWriteResult {
        ok: true,
        handoff_path: path.into(),
        abs_path: o.abs_path.display().to_string(),
        sha256: o.sha256,
        bytes: o.bytes,
        journal_id: o.journal_id,
        archived_path,
        drift_warnings: drift.clone(),
        drift,
        ready_steps: h.dependency_graph.as_deref().map(handoff::ready_steps),
    })
}

/// A handoff as read from disk, with its drift: what `handoff_read`, the `resume` prompt and
/// the handoff resource share.
pub struct LoadedHandoff {
    pub abs_path: String,
    pub text: String,
    pub sha256: String,
    pub front: Value,
    pub body: String,
    pub handoff: Handoff,
    pub drift: Vec<Drift>,
}

/// Read, parse and validate the envelope at `path`, and compute its drift.
pub fn load(svc: &Service, path: &str) -> Result<LoadedHandoff> {
    let target = svc.workspaces().resolve(path, false)?;
    let existing = read_existing(&target.dir, &target.name)
        .map_err(|e| Failure::io("read", path, e))?
        .ok_or_else(|| crate::write::intent::missing(path))?;
    let text = String::from_utf8(existing.bytes).map_err(|e| Failure::Encoding {
        field: "path".into(),
        reason: format!("the handoff file is not valid UTF-8: {e}"),
    })?;
    let (front, body) = handoff::parse(&text)?;
    let h = handoff::from_value(front.clone()).map_err(|e| match e {
        Failure::InvalidDocument {
            message,
            line,
            field,
            missing_fields,
            ..
        } => Failure::InvalidDocument {
            what: format!("handoff file {path}"),
            message,
            line,
            field,
            missing_fields,
        },
        other => other,
    })?;
    let drift = drift(svc, &h);
    Ok(LoadedHandoff {
        abs_path: target.abs_path.display().to_string(),
        text,
        sha256: existing.sha256,
        front,
        body,
        handoff: h,
        drift,
    })
}

fn run_handoff_read(svc: &Service, raw: Value) -> Result<Value> {
    let args: HandoffReadArgs = parse_args(raw)?;
    let l = load(svc, &args.path)?;
    to_value(&HandoffReadResult {
        ok: true,
        handoff_path: args.path,
        abs_path: l.abs_path,
        envelope: l.front,
        body: l.body,
        sha256: l.sha256,
        drift_warnings: l.drift.clone(),
        drift: l.drift,
        ready_steps: l
            .handoff
            .dependency_graph
            .as_deref()
            .map(handoff::ready_steps),
    })
}

/// The `resume` prompt's text for the envelope at `path`.
pub fn resume_prompt(svc: &Service, path: &str) -> Result<String> {
    let l = load(svc, path)?;
    Ok(handoff::resume_message(path, &l.handoff, &l.body, &l.drift))
}
