//! L3: typed error envelopes.
//!
//! Every failure of every tool is one [`Failure`] value, and [`Failure::envelope`] is the one
//! place that maps a failure to the paper's envelope (`error`, `reason_hint`,
//! `suggested_action`, `context`). Front ends never build envelopes by hand: they call
//! [`Failure::envelope`] and add the retry budget, which only they can count.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::io;
use std::path::Path;

/// The envelope's `error` field: what kind of failure this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Blocked,
    StalePrecondition,
    WriteCorruption,
    QuotaExceeded,
    PolicyViolation,
}

/// The envelope's `reason_hint`: the underlying cause, as far as it is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasonHint {
    ContentFilter,
    SizeLimit,
    Encoding,
    Permission,
    Network,
    Unknown,
}

/// The envelope's `suggested_action`: what the agent should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuggestedAction {
    Redact,
    Split,
    Escape,
    AskUser,
    RetryLater,
    Abort,
}

/// The wire form of a failure (SPEC section 4). `ok` is always false.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Envelope {
    pub ok: bool,
    pub schema_version: String,
    pub error: ErrorKind,
    pub reason_hint: ReasonHint,
    /// Pattern families that triggered a content-filter refusal (empty otherwise).
    pub detected_patterns: Vec<String>,
    pub suggested_action: SuggestedAction,
    /// How many more identical retries of this call the server will attempt.
    pub retry_budget: u32,
    /// `tool`, `path`, `message` and the per-error details.
    pub context: Map<String, Value>,
}

/// The nearest region of a file to an `old_string` that did not match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NearestMatch {
    /// 1-based line where the region starts.
    pub line: usize,
    /// 0.0..=1.0 similarity between `old_string` and the region.
    pub similarity: f64,
    /// A short unified diff from `old_string` to the region.
    pub diff: String,
    /// Set when the region differs from `old_string` only in whitespace.
    pub whitespace_only: bool,
}

/// Every way a tool can fail. One variant per situation; [`Failure::envelope`] maps each
/// once to the envelope's enums.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("{path}: outside every workspace root ({reason})")]
    OutsideWorkspace { path: String, reason: String },
    #[error("{path}: {reason}")]
    InvalidPath { path: String, reason: String },
    #[error("no usable workspace: {reason}")]
    NoWorkspace { reason: String },
    #[error(
        "{path}: resilient-write's own state directory is not readable or writable through file tools"
    )]
    StateDirectory { path: String },
    #[error("{path}: is a directory")]
    IsDirectory { path: String },
    #[error("{path}: already exists (mode=create never overwrites)")]
    TargetExists {
        path: String,
        existing_sha256: String,
    },
    #[error("{path}: does not exist")]
    TargetMissing { path: String },
    #[error("{path}: expected_prev_sha256 does not match the file on disk")]
    StaleHash {
        path: String,
        expected: String,
        actual: Option<String>,
    },
    #[error("{path}: old_string not found{}", edit_suffix(*edit_index))]
    NoMatch {
        path: String,
        edit_index: Option<usize>,
        nearest: Option<NearestMatch>,
    },
    #[error("{path}: expected {expected} match(es) of old_string, found {found}{}", edit_suffix(*edit_index))]
    MatchCount {
        path: String,
        edit_index: Option<usize>,
        expected: i64,
        found: usize,
        lines: Vec<usize>,
    },
    #[error("{path}: read-back hash {actual} differs from the content's {expected}")]
    Corruption {
        path: String,
        expected: String,
        actual: String,
    },
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },
    /// A filesystem had no room for a write even after history gave up what it could
    /// (`crate::write::pipeline::room`).
    #[error("{op} {path}: {source}; {}", disk.describe())]
    DiskFull {
        op: &'static str,
        path: String,
        #[source]
        source: io::Error,
        disk: Box<DiskFull>,
    },
    #[error("{what} is {bytes} bytes, over the limit of {limit}")]
    TooLarge {
        what: String,
        bytes: u64,
        limit: u64,
    },
    #[error("{field}: {reason}")]
    Encoding { field: String, reason: String },
    #[error("invalid arguments: {message}")]
    InvalidArguments { message: String },
    /// One argument that does not fit the tool's input schema: `problem` is `missing`,
    /// `wrong_type` or `unknown`; `message` names the argument, the expected type and an
    /// example value.
    #[error("invalid arguments: {message}")]
    BadArgument {
        argument: String,
        problem: &'static str,
        expected: Option<String>,
        example: Option<Value>,
        message: String,
    },
    #[error("idempotency_key {key:?} was used before with different arguments")]
    IdempotencyConflict { key: String },
    #[error("identical call failed too often; change the request instead of retrying it")]
    RetryBudgetExhausted { last_error: ErrorKind },
    #[error("content scored {score:.2} ({verdict}), at or above the refusal threshold")]
    ContentBlocked {
        score: f64,
        verdict: String,
        families: Vec<String>,
        detected: Vec<Value>,
    },
    #[error("transaction {tx_id}: {reason}")]
    TxNotOpen { tx_id: String, reason: String },
    #[error("transaction {tx_id}: {} file(s) changed since they were staged; nothing was written", conflicts.len())]
    TxConflict {
        tx_id: String,
        conflicts: Vec<Value>,
    },
    #[error("{path}: version {version} cannot be restored ({reason})")]
    VersionUnavailable {
        path: String,
        version: String,
        reason: String,
    },
    #[error("{path}: {} versions have a sha256 starting with {prefix}; give more of it", candidates.len())]
    AmbiguousVersion {
        path: String,
        prefix: String,
        candidates: Vec<String>,
    },
    /// `restore --session`: no journal row belongs to that agent session.
    #[error("no journal row belongs to agent session {session:?}: nothing to restore")]
    SessionUnknown { session: String },
    /// `restore --session`: files changed since the session left them; nothing was written.
    #[error("agent session {session}: {} file(s) changed since the session left them; nothing was written", conflicts.len())]
    SessionConflict {
        session: String,
        conflicts: Vec<Value>,
    },
    #[error("unknown tool {name:?}")]
    UnknownTool { name: String },
    /// A tool this server does not expose (`serve --tools`, `--read-only`).
    #[error("tool {name:?} is not enabled on this server (enabled: {})", enabled.join(", "))]
    ToolNotEnabled { name: String, enabled: Vec<String> },
    /// The workspace policy file could not be used; tools that need it refuse until it is fixed
    /// and the server restarted (never a silent fallback to the defaults).
    #[error("policy file unusable: {message}")]
    PolicyInvalid {
        file: String,
        line: u64,
        message: String,
    },
    /// A chunk tool's argument that can never be valid (session name, index range).
    #[error("chunk session {session:?}: {message}")]
    ChunkArgument {
        session: String,
        reason: &'static str,
        message: String,
    },
    /// A chunk session whose state refuses the operation (missing, gap, count mismatch,
    /// chunks edited by hand); `details` go into the envelope's context.
    #[error("chunk session {session:?}: {message}")]
    ChunkSession {
        session: String,
        reason: &'static str,
        message: String,
        details: Map<String, Value>,
    },
    #[error("no scratchpad entry for {}", scratch_key(sha256, label))]
    ScratchNotFound {
        sha256: Option<String>,
        label: Option<String>,
    },
    #[error("scratch_get is disabled by {by} (the scratchpad is write-only)")]
    ScratchGetDisabled { by: String },
    /// A structured document (a handoff envelope, a checkpoint argument) that breaks its
    /// format: malformed YAML (with the line), missing required fields, a bad value.
    #[error("{what}: {message}{}", line_suffix(*line))]
    InvalidDocument {
        what: String,
        message: String,
        line: Option<usize>,
        field: Option<String>,
        missing_fields: Vec<String>,
    },
    /// A server-owned state file (a checkpoint) that can no longer be parsed.
    #[error("{path}: corrupt ({reason})")]
    CorruptState { path: String, reason: String },
    #[error("internal error: {0}")]
    Internal(String),
}

fn scratch_key(sha256: &Option<String>, label: &Option<String>) -> String {
    match (sha256, label) {
        (Some(h), _) => format!("sha256 {h}"),
        (None, Some(l)) => format!("label {l:?}"),
        (None, None) => "the request".into(),
    }
}

fn line_suffix(line: Option<usize>) -> String {
    match line {
        Some(l) => format!(" (line {l})"),
        None => String::new(),
    }
}

fn edit_suffix(edit_index: Option<usize>) -> String {
    match edit_index {
        Some(i) => format!(" (edits[{i}])"),
        None => String::new(),
    }
}

/// How an OS error maps to the envelope: the errno decides kind, hint and action.
fn classify_io(err: &io::Error) -> (ErrorKind, ReasonHint, SuggestedAction) {
    use rustix::io::Errno;
    let Some(code) = err.raw_os_error() else {
        return match err.kind() {
            io::ErrorKind::InvalidData => (
                ErrorKind::PolicyViolation,
                ReasonHint::Encoding,
                SuggestedAction::Escape,
            ),
            _ => (
                ErrorKind::PolicyViolation,
                ReasonHint::Unknown,
                SuggestedAction::AskUser,
            ),
        };
    };
    let errno = Errno::from_raw_os_error(code);
    if errno == Errno::ACCESS || errno == Errno::PERM || errno == Errno::ROFS {
        (
            ErrorKind::PolicyViolation,
            ReasonHint::Permission,
            SuggestedAction::AskUser,
        )
    } else if errno == Errno::NOSPC || errno == Errno::DQUOT || errno == Errno::FBIG {
        (
            ErrorKind::QuotaExceeded,
            ReasonHint::SizeLimit,
            SuggestedAction::AskUser,
        )
    } else if errno == Errno::LOOP || errno == Errno::XDEV {
        (
            ErrorKind::PolicyViolation,
            ReasonHint::Permission,
            SuggestedAction::Abort,
        )
    } else if errno == Errno::ILSEQ {
        (
            ErrorKind::PolicyViolation,
            ReasonHint::Encoding,
            SuggestedAction::Escape,
        )
    } else if errno == Errno::IO {
        (
            ErrorKind::WriteCorruption,
            ReasonHint::Unknown,
            SuggestedAction::RetryLater,
        )
    } else if errno == Errno::AGAIN || errno == Errno::BUSY || errno == Errno::INTR {
        (
            ErrorKind::Blocked,
            ReasonHint::Unknown,
            SuggestedAction::RetryLater,
        )
    } else {
        (
            ErrorKind::PolicyViolation,
            ReasonHint::Unknown,
            SuggestedAction::AskUser,
        )
    }
}

/// Which filesystem was full, and how far history went to make room on it
/// ([`Failure::DiskFull`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFull {
    /// Where the filesystem is mounted.
    pub filesystem: String,
    /// What it holds for this write: `workspace`, `state` (`.resilient_write/`) or both.
    pub holds: String,
    /// Free bytes it reports (`None`: it reports none it can be believed about).
    pub free_bytes: Option<u64>,
    /// About how much the write needs on it.
    pub needed_bytes: u64,
    /// Pre-images dropped trying to make room (history is a cache; records never go).
    pub pruned_versions: usize,
    pub pruned_bytes: u64,
}

impl DiskFull {
    fn describe(&self) -> String {
        let free = self.free_bytes.map_or_else(
            || "reports no usable free space".to_string(),
            |f| format!("has {f} bytes free"),
        );
        let history = if self.pruned_versions > 0 {
            format!(
                "history gave up {} earlier version(s), {} bytes, and that was not enough",
                self.pruned_versions, self.pruned_bytes
            )
        } else {
            "history holds no earlier version it could give up".to_string()
        };
        format!(
            "the filesystem at {} (holding the {}) {free}; this write needs about {} bytes there; \
             {history}: free space on that filesystem, then retry",
            self.filesystem, self.holds, self.needed_bytes
        )
    }
}

/// Whether `e` says a filesystem ran out of room (`ENOSPC`, `EDQUOT`).
pub fn is_no_space(e: &io::Error) -> bool {
    e.raw_os_error().is_some_and(|c| {
        let e = rustix::io::Errno::from_raw_os_error(c);
        e == rustix::io::Errno::NOSPC || e == rustix::io::Errno::DQUOT
    })
}

/// The context of a failed system call: what, where, and the error number and its text.
fn io_details(op: &str, path: &str, source: &io::Error, put: &mut impl FnMut(&str, Value)) {
    put("path", json!(path));
    put("operation", json!(op));
    if let Some(code) = source.raw_os_error() {
        put("errno", json!(code));
        let errno = rustix::io::Errno::from_raw_os_error(code);
        put("strerror", json!(errno.to_string()));
    }
}

impl Failure {
    /// An I/O failure of `op` on `path`.
    pub fn io(op: &'static str, path: impl AsRef<Path>, source: io::Error) -> Self {
        Failure::Io {
            op,
            path: path.as_ref().display().to_string(),
            source,
        }
    }

    /// Whether a filesystem ran out of room (`ENOSPC`, `EDQUOT`): what history can help with.
    pub fn is_no_space(&self) -> bool {
        match self {
            Failure::Io { source, .. } => is_no_space(source),
            Failure::DiskFull { .. } => true,
            _ => false,
        }
    }

    /// The envelope's three enums for this failure.
    pub fn classification(&self) -> (ErrorKind, ReasonHint, SuggestedAction) {
        use ErrorKind as K;
        use ReasonHint as R;
        use SuggestedAction as A;
        match self {
            Failure::OutsideWorkspace { .. } => (K::PolicyViolation, R::Permission, A::Abort),
            Failure::StateDirectory { .. } => (K::PolicyViolation, R::Permission, A::Abort),
            Failure::NoWorkspace { .. } => (K::PolicyViolation, R::Permission, A::AskUser),
            Failure::InvalidPath { .. } | Failure::IsDirectory { .. } => {
                (K::PolicyViolation, R::Unknown, A::Abort)
            }
            Failure::TargetExists { .. } | Failure::TargetMissing { .. } => {
                (K::StalePrecondition, R::Unknown, A::AskUser)
            }
            Failure::StaleHash { .. } => (K::StalePrecondition, R::Unknown, A::RetryLater),
            Failure::NoMatch { .. } | Failure::MatchCount { .. } => {
                (K::StalePrecondition, R::Unknown, A::AskUser)
            }
            Failure::Corruption { .. } => (K::WriteCorruption, R::Unknown, A::RetryLater),
            Failure::Io { source, .. } => classify_io(source),
            Failure::DiskFull { .. } => (K::QuotaExceeded, R::SizeLimit, A::AskUser),
            Failure::TooLarge { .. } => (K::QuotaExceeded, R::SizeLimit, A::Split),
            Failure::Encoding { .. } => (K::PolicyViolation, R::Encoding, A::Escape),
            Failure::InvalidArguments { .. }
            | Failure::BadArgument { .. }
            | Failure::UnknownTool { .. } => (K::PolicyViolation, R::Unknown, A::Abort),
            Failure::ToolNotEnabled { .. } => (K::PolicyViolation, R::Permission, A::Abort),
            Failure::IdempotencyConflict { .. } => (K::StalePrecondition, R::Unknown, A::Abort),
            Failure::RetryBudgetExhausted { .. } => (K::Blocked, R::Unknown, A::Abort),
            Failure::ContentBlocked { .. } => (K::Blocked, R::ContentFilter, A::Redact),
            Failure::PolicyInvalid { .. } => (K::PolicyViolation, R::Unknown, A::AskUser),
            Failure::InvalidDocument { .. } => (K::PolicyViolation, R::Encoding, A::Escape),
            Failure::CorruptState { .. } => (K::WriteCorruption, R::Encoding, A::AskUser),
            Failure::TxNotOpen { .. } => (K::StalePrecondition, R::Unknown, A::Abort),
            Failure::TxConflict { .. } => (K::StalePrecondition, R::Unknown, A::RetryLater),
            Failure::VersionUnavailable { .. } => (K::StalePrecondition, R::Unknown, A::AskUser),
            Failure::AmbiguousVersion { .. } => (K::PolicyViolation, R::Unknown, A::AskUser),
            Failure::SessionUnknown { .. } => (K::StalePrecondition, R::Unknown, A::AskUser),
            Failure::SessionConflict { .. } => (K::StalePrecondition, R::Unknown, A::AskUser),
            Failure::Internal(_) => (K::PolicyViolation, R::Unknown, A::AskUser),
            Failure::ChunkArgument { .. } => (K::PolicyViolation, R::Unknown, A::Abort),
            Failure::ChunkSession { .. } => (K::StalePrecondition, R::Unknown, A::AskUser),
            Failure::ScratchNotFound { .. } => (K::StalePrecondition, R::Unknown, A::AskUser),
            Failure::ScratchGetDisabled { .. } => (K::PolicyViolation, R::Permission, A::Abort),
        }
    }

    /// Whether retrying the identical call could ever succeed. Content-filter refusals never
    /// can (the paper's retry-thrashing incident), nor can malformed requests.
    pub fn retriable(&self) -> bool {
        !matches!(
            self,
            Failure::ContentBlocked { .. }
                | Failure::RetryBudgetExhausted { .. }
                | Failure::InvalidArguments { .. }
                | Failure::BadArgument { .. }
                | Failure::UnknownTool { .. }
                | Failure::ToolNotEnabled { .. }
                | Failure::Encoding { .. }
                | Failure::OutsideWorkspace { .. }
                | Failure::StateDirectory { .. }
                | Failure::IdempotencyConflict { .. }
                | Failure::PolicyInvalid { .. }
                | Failure::ChunkArgument { .. }
                | Failure::ScratchGetDisabled { .. }
                | Failure::InvalidDocument { .. }
                | Failure::TxNotOpen { .. }
                | Failure::AmbiguousVersion { .. }
                | Failure::SessionUnknown { .. }
        )
    }

    /// The per-error details that go into `context` (besides tool and message).
    fn details(&self) -> Map<String, Value> {
        let mut c = Map::new();
        let mut put = |k: &str, v: Value| {
            c.insert(k.to_string(), v);
        };
        match self {
            Failure::OutsideWorkspace { path, reason } | Failure::InvalidPath { path, reason } => {
                put("path", json!(path));
                put("reason", json!(reason));
            }
            Failure::NoWorkspace { reason } => put("reason", json!(reason)),
            Failure::StateDirectory { path }
            | Failure::IsDirectory { path }
            | Failure::TargetMissing { path } => put("path", json!(path)),
            Failure::TargetExists {
                path,
                existing_sha256,
            } => {
                put("path", json!(path));
                put("existing_sha256", json!(existing_sha256));
            }
            Failure::StaleHash {
                path,
                expected,
                actual,
            } => {
                put("path", json!(path));
                put("expected_prev_sha256", json!(expected));
                put("actual_prev_sha256", json!(actual));
            }
            Failure::NoMatch {
                path,
                edit_index,
                nearest,
            } => {
                put("path", json!(path));
                put("reason", json!("no_match"));
                if let Some(i) = edit_index {
                    put("edit_index", json!(i));
                }
                put("nearest", json!(nearest));
            }
            Failure::MatchCount {
                path,
                edit_index,
                expected,
                found,
                lines,
            } => {
                put("path", json!(path));
                put(
                    "reason",
                    json!(if *found == 0 {
                        "no_match"
                    } else {
                        "match_count_mismatch"
                    }),
                );
                if let Some(i) = edit_index {
                    put("edit_index", json!(i));
                }
                put("expected_count", json!(expected));
                put("found_count", json!(found));
                put("match_lines", json!(lines));
            }
            Failure::Corruption {
                path,
                expected,
                actual,
            } => {
                put("path", json!(path));
                put("expected_sha256", json!(expected));
                put("actual_sha256", json!(actual));
            }
            Failure::Io { op, path, source } => io_details(op, path, source, &mut put),
            Failure::DiskFull {
                op,
                path,
                source,
                disk,
            } => {
                io_details(op, path, source, &mut put);
                put("reason", json!("disk_full"));
                put("filesystem", json!(disk.filesystem));
                put("holds", json!(disk.holds));
                put("free_bytes", json!(disk.free_bytes));
                put("needed_bytes", json!(disk.needed_bytes));
                put(
                    "history_pruned",
                    json!({"versions": disk.pruned_versions, "bytes": disk.pruned_bytes}),
                );
            }
            Failure::TooLarge { what, bytes, limit } => {
                put("what", json!(what));
                put("bytes", json!(bytes));
                put("limit", json!(limit));
            }
            Failure::Encoding { field, reason } => {
                put("field", json!(field));
                put("reason", json!(reason));
            }
            Failure::InvalidArguments { .. } => put("reason", json!("invalid_arguments")),
            Failure::BadArgument {
                argument,
                problem,
                expected,
                example,
                ..
            } => {
                put("reason", json!("invalid_arguments"));
                put("argument", json!(argument));
                put("problem", json!(problem));
                if let Some(e) = expected {
                    put("expected", json!(e));
                }
                if let Some(e) = example {
                    put("example", e.clone());
                }
            }
            Failure::UnknownTool { name } => {
                put("reason", json!("unknown_tool"));
                put("name", json!(name));
            }
            Failure::ToolNotEnabled { name, enabled } => {
                put("reason", json!("tool_not_enabled"));
                put("name", json!(name));
                put("enabled_tools", json!(enabled));
            }
            Failure::IdempotencyConflict { key } => {
                put("reason", json!("idempotency_key_reused"));
                put("idempotency_key", json!(key));
            }
            Failure::RetryBudgetExhausted { last_error } => {
                put("reason", json!("retry_budget_exhausted"));
                put("last_error", json!(last_error));
            }
            Failure::ContentBlocked {
                score,
                verdict,
                detected,
                ..
            } => {
                put("score", json!(score));
                put("verdict", json!(verdict));
                put("detected", json!(detected));
            }
            Failure::PolicyInvalid {
                file,
                line,
                message,
            } => {
                put("reason", json!("policy_invalid"));
                put("policy_file", json!(file));
                put("line", json!(line));
                put("policy_error", json!(message));
            }
            Failure::InvalidDocument {
                what,
                line,
                field,
                missing_fields,
                ..
            } => {
                put("reason", json!("invalid_document"));
                put("document", json!(what));
                if let Some(l) = line {
                    put("line", json!(l));
                }
                if let Some(f) = field {
                    put("field", json!(f));
                }
                if !missing_fields.is_empty() {
                    put("missing_fields", json!(missing_fields));
                }
            }
            Failure::CorruptState { path, reason } => {
                put("path", json!(path));
                put("reason", json!(reason));
            }
            Failure::TxNotOpen { tx_id, reason } => {
                put("tx_id", json!(tx_id));
                put("reason", json!(reason));
            }
            Failure::TxConflict { tx_id, conflicts } => {
                put("tx_id", json!(tx_id));
                put("reason", json!("tx_conflict"));
                put("conflicts", json!(conflicts));
            }
            Failure::VersionUnavailable {
                path,
                version,
                reason,
            } => {
                put("path", json!(path));
                put("version", json!(version));
                put("reason", json!(reason));
            }
            Failure::AmbiguousVersion {
                path,
                prefix,
                candidates,
            } => {
                put("path", json!(path));
                put("version", json!(prefix));
                put("reason", json!("ambiguous_version"));
                put("candidates", json!(candidates));
            }
            Failure::SessionUnknown { session } => {
                put("agent_session", json!(session));
                put("reason", json!("unknown_session"));
            }
            Failure::SessionConflict { session, conflicts } => {
                put("agent_session", json!(session));
                put("reason", json!("session_conflict"));
                put("conflicts", json!(conflicts));
            }
            Failure::Internal(_) => put("reason", json!("internal")),
            Failure::ChunkArgument {
                session, reason, ..
            } => {
                put("session", json!(session));
                put("reason", json!(reason));
            }
            Failure::ChunkSession {
                session,
                reason,
                details,
                ..
            } => {
                put("session", json!(session));
                put("reason", json!(reason));
                for (k, v) in details {
                    put(k, v.clone());
                }
            }
            Failure::ScratchNotFound { sha256, label } => {
                put("reason", json!("not_found"));
                put("sha256", json!(sha256));
                put("label", json!(label));
            }
            Failure::ScratchGetDisabled { by } => {
                put("reason", json!("scratch_get_disabled"));
                put("env", json!(by));
            }
        }
        c
    }

    /// The envelope for this failure, raised by `tool`, with `retry_budget` retries left.
    pub fn envelope(&self, tool: &str, retry_budget: u32) -> Envelope {
        let (error, reason_hint, suggested_action) = self.classification();
        let mut context = Map::new();
        context.insert("tool".into(), json!(tool));
        context.insert("message".into(), json!(self.to_string()));
        context.extend(self.details());
        context.insert("retriable".into(), json!(self.retriable()));
        let detected_patterns = match self {
            Failure::ContentBlocked { families, .. } => families.clone(),
            _ => Vec::new(),
        };
        Envelope {
            ok: false,
            schema_version: "1".into(),
            error,
            reason_hint,
            detected_patterns,
            suggested_action,
            retry_budget,
            context,
        }
    }
}

pub type Result<T, E = Failure> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn os(code: i32) -> Failure {
        Failure::io("write", "f", io::Error::from_raw_os_error(code))
    }

    #[test]
    fn permission_errnos_map_to_policy_violation_permission() {
        for code in [libc_code("EACCES"), libc_code("EPERM"), libc_code("EROFS")] {
            let env = os(code).envelope("rw_safe_write", 2);
            assert_eq!(env.error, ErrorKind::PolicyViolation);
            assert_eq!(env.reason_hint, ReasonHint::Permission);
            assert_eq!(env.context["errno"], json!(code));
        }
    }

    #[test]
    fn space_errnos_map_to_quota_exceeded_size_limit() {
        for code in [libc_code("ENOSPC"), libc_code("EDQUOT"), libc_code("EFBIG")] {
            let env = os(code).envelope("rw_safe_write", 2);
            assert_eq!(env.error, ErrorKind::QuotaExceeded);
            assert_eq!(env.reason_hint, ReasonHint::SizeLimit);
        }
    }

    #[test]
    fn content_filter_refusal_is_never_retriable_and_names_families() {
        let f = Failure::ContentBlocked {
            score: 0.8,
            verdict: "high".into(),
            families: vec!["api_key".into()],
            detected: vec![],
        };
        let env = f.envelope("rw_safe_write", 0);
        assert!(!f.retriable());
        assert_eq!(env.error, ErrorKind::Blocked);
        assert_eq!(env.reason_hint, ReasonHint::ContentFilter);
        assert_eq!(env.suggested_action, SuggestedAction::Redact);
        assert_eq!(env.detected_patterns, vec!["api_key".to_string()]);
    }

    #[test]
    fn envelope_serialises_with_the_papers_field_names() {
        let env = Failure::TargetExists {
            path: "a.txt".into(),
            existing_sha256: "00".into(),
        }
        .envelope("rw_safe_write", 3);
        let v = serde_json::to_value(&env).unwrap();
        for k in [
            "ok",
            "schema_version",
            "error",
            "reason_hint",
            "detected_patterns",
            "suggested_action",
            "retry_budget",
            "context",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert_eq!(v["ok"], json!(false));
        assert_eq!(v["error"], json!("stale_precondition"));
        assert_eq!(v["context"]["existing_sha256"], json!("00"));
        assert_eq!(v["context"]["tool"], json!("rw_safe_write"));
    }

    fn libc_code(name: &str) -> i32 {
        use rustix::io::Errno;
        match name {
            "EACCES" => Errno::ACCESS.raw_os_error(),
            "EPERM" => Errno::PERM.raw_os_error(),
            "EROFS" => Errno::ROFS.raw_os_error(),
            "ENOSPC" => Errno::NOSPC.raw_os_error(),
            "EDQUOT" => Errno::DQUOT.raw_os_error(),
            "EFBIG" => Errno::FBIG.raw_os_error(),
            _ => unreachable!(),
        }
    }
}
