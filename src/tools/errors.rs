//! Which failures each tool can return, declared beside the tool ([`super::ToolSpec::errors`])
//! so that `docs/reference/tools.md` is generated from the code, not from prose that drifts.
//!
//! [`FailureCode`] names each [`Failure`] variant without its data. [`FailureCode::of`] is an
//! exhaustive `match` (no wildcard): a variant added to the core's `Failure` does not compile
//! here until it has a code, and [`FailureCode::ALL`] is generated from the same list as the
//! enum, so it cannot miss one. The tests then check that every code is claimed by a tool or
//! by [`ANY_TOOL`], and that the failures real bad calls provoke are declared by their tool
//! (`tests/reference.rs`).

use resilient_write_core::envelope::{ErrorKind, Failure};
use serde_json::{Map, Value, json};
use std::io;

/// Declares [`FailureCode`] and its [`FailureCode::ALL`] from one list.
macro_rules! failure_codes {
    ($($code:ident),* $(,)?) => {
        /// A [`Failure`] variant, without its data.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum FailureCode {
            $($code),*
        }

        impl FailureCode {
            /// Every code, in the order of the core's `Failure` enum.
            pub const ALL: &'static [FailureCode] = &[$(FailureCode::$code),*];

            /// The variant's name (`StaleHash`).
            pub fn name(self) -> &'static str {
                match self {
                    $(FailureCode::$code => stringify!($code)),*
                }
            }
        }
    };
}

failure_codes!(
    OutsideWorkspace,
    InvalidPath,
    NoWorkspace,
    StateDirectory,
    IsDirectory,
    TargetExists,
    TargetMissing,
    StaleHash,
    NoMatch,
    MatchCount,
    Corruption,
    Io,
    DiskFull,
    TooLarge,
    Encoding,
    InvalidArguments,
    BadArgument,
    IdempotencyConflict,
    RetryBudgetExhausted,
    ContentBlocked,
    TxNotOpen,
    TxConflict,
    VersionUnavailable,
    AmbiguousVersion,
    SessionUnknown,
    SessionConflict,
    UnknownTool,
    ToolNotEnabled,
    PolicyInvalid,
    ChunkArgument,
    ChunkSession,
    ScratchNotFound,
    ScratchGetDisabled,
    InvalidDocument,
    CorruptState,
    Internal,
);

use FailureCode as C;

impl FailureCode {
    /// The code of `f`. Exhaustive on purpose: a new `Failure` variant stops the build here.
    pub fn of(f: &Failure) -> FailureCode {
        match f {
            Failure::OutsideWorkspace { .. } => C::OutsideWorkspace,
            Failure::InvalidPath { .. } => C::InvalidPath,
            Failure::NoWorkspace { .. } => C::NoWorkspace,
            Failure::StateDirectory { .. } => C::StateDirectory,
            Failure::IsDirectory { .. } => C::IsDirectory,
            Failure::TargetExists { .. } => C::TargetExists,
            Failure::TargetMissing { .. } => C::TargetMissing,
            Failure::StaleHash { .. } => C::StaleHash,
            Failure::NoMatch { .. } => C::NoMatch,
            Failure::MatchCount { .. } => C::MatchCount,
            Failure::Corruption { .. } => C::Corruption,
            Failure::Io { .. } => C::Io,
            Failure::DiskFull { .. } => C::DiskFull,
            Failure::TooLarge { .. } => C::TooLarge,
            Failure::Encoding { .. } => C::Encoding,
            Failure::InvalidArguments { .. } => C::InvalidArguments,
            Failure::BadArgument { .. } => C::BadArgument,
            Failure::IdempotencyConflict { .. } => C::IdempotencyConflict,
            Failure::RetryBudgetExhausted { .. } => C::RetryBudgetExhausted,
            Failure::ContentBlocked { .. } => C::ContentBlocked,
            Failure::TxNotOpen { .. } => C::TxNotOpen,
            Failure::TxConflict { .. } => C::TxConflict,
            Failure::VersionUnavailable { .. } => C::VersionUnavailable,
            Failure::AmbiguousVersion { .. } => C::AmbiguousVersion,
            Failure::SessionUnknown { .. } => C::SessionUnknown,
            Failure::SessionConflict { .. } => C::SessionConflict,
            Failure::UnknownTool { .. } => C::UnknownTool,
            Failure::ToolNotEnabled { .. } => C::ToolNotEnabled,
            Failure::PolicyInvalid { .. } => C::PolicyInvalid,
            Failure::ChunkArgument { .. } => C::ChunkArgument,
            Failure::ChunkSession { .. } => C::ChunkSession,
            Failure::ScratchNotFound { .. } => C::ScratchNotFound,
            Failure::ScratchGetDisabled { .. } => C::ScratchGetDisabled,
            Failure::InvalidDocument { .. } => C::InvalidDocument,
            Failure::CorruptState { .. } => C::CorruptState,
            Failure::Internal(_) => C::Internal,
        }
    }

    /// A failure with this code, for documenting its envelope: its classification and the
    /// context fields it carries come from the core's own mapping. `seed` varies every datum
    /// a caller chooses, so a context value equal under both seeds is fixed by the variant
    /// (a `reason` code) and one that differs is the caller's. An I/O failure's
    /// classification depends on its errno ([`IO_ERRNOS`]).
    pub fn sample(self, seed: bool) -> Failure {
        let s = |v: &str| format!("{v}-{}", u8::from(seed));
        let n = u64::from(seed) + 1;
        let reason = if seed { "seed_b" } else { "seed_a" };
        let op = if seed { "read" } else { "write" };
        match self {
            C::OutsideWorkspace => Failure::OutsideWorkspace {
                path: s("p"),
                reason: s("r"),
            },
            C::InvalidPath => Failure::InvalidPath {
                path: s("p"),
                reason: s("r"),
            },
            C::NoWorkspace => Failure::NoWorkspace { reason: s("r") },
            C::StateDirectory => Failure::StateDirectory { path: s("p") },
            C::IsDirectory => Failure::IsDirectory { path: s("p") },
            C::TargetExists => Failure::TargetExists {
                path: s("p"),
                existing_sha256: s("h"),
            },
            C::TargetMissing => Failure::TargetMissing { path: s("p") },
            C::StaleHash => Failure::StaleHash {
                path: s("p"),
                expected: s("h"),
                actual: Some(s("h")),
            },
            C::NoMatch => Failure::NoMatch {
                path: s("p"),
                edit_index: Some(1),
                nearest: None,
            },
            C::MatchCount => Failure::MatchCount {
                path: s("p"),
                edit_index: Some(1),
                expected: 1,
                found: usize::from(seed) + 2,
                lines: vec![1, 2],
            },
            C::Corruption => Failure::Corruption {
                path: s("p"),
                expected: s("h"),
                actual: s("h"),
            },
            C::Io => Failure::io(op, s("p"), io::Error::other(s("e"))),
            C::DiskFull => Failure::DiskFull {
                op,
                path: s("p"),
                source: io::Error::other(s("e")),
                disk: Box::new(resilient_write_core::envelope::DiskFull {
                    filesystem: s("fs"),
                    holds: s("h"),
                    free_bytes: Some(n),
                    needed_bytes: n,
                    pruned_versions: 0,
                    pruned_bytes: 0,
                }),
            },
            C::TooLarge => Failure::TooLarge {
                what: s("w"),
                bytes: n,
                limit: n,
            },
            C::Encoding => Failure::Encoding {
                field: s("f"),
                reason: s("r"),
            },
            C::InvalidArguments => Failure::InvalidArguments { message: s("m") },
            C::BadArgument => Failure::BadArgument {
                argument: s("a"),
                problem: reason,
                expected: Some(s("t")),
                example: Some(json!(n)),
                message: s("m"),
            },
            C::IdempotencyConflict => Failure::IdempotencyConflict { key: s("k") },
            C::RetryBudgetExhausted => Failure::RetryBudgetExhausted {
                last_error: if seed {
                    ErrorKind::Blocked
                } else {
                    ErrorKind::StalePrecondition
                },
            },
            C::ContentBlocked => Failure::ContentBlocked {
                score: 0.9,
                verdict: s("v"),
                families: vec![s("f")],
                detected: vec![json!(n)],
            },
            C::TxNotOpen => Failure::TxNotOpen {
                tx_id: s("t"),
                reason: s("r"),
            },
            C::TxConflict => Failure::TxConflict {
                tx_id: s("t"),
                conflicts: vec![json!(n)],
            },
            C::VersionUnavailable => Failure::VersionUnavailable {
                path: s("p"),
                version: s("v"),
                reason: s("r"),
            },
            C::AmbiguousVersion => Failure::AmbiguousVersion {
                path: s("p"),
                prefix: s("v"),
                candidates: vec![s("c")],
            },
            C::SessionUnknown => Failure::SessionUnknown { session: s("s") },
            C::SessionConflict => Failure::SessionConflict {
                session: s("s"),
                conflicts: vec![json!(n)],
            },
            C::UnknownTool => Failure::UnknownTool { name: s("n") },
            C::ToolNotEnabled => Failure::ToolNotEnabled {
                name: s("n"),
                enabled: vec![s("t")],
            },
            C::PolicyInvalid => Failure::PolicyInvalid {
                file: s("f"),
                line: n,
                message: s("m"),
            },
            C::ChunkArgument => Failure::ChunkArgument {
                session: s("s"),
                reason,
                message: s("m"),
            },
            C::ChunkSession => Failure::ChunkSession {
                session: s("s"),
                reason,
                message: s("m"),
                details: Map::new(),
            },
            C::ScratchNotFound => Failure::ScratchNotFound {
                sha256: Some(s("h")),
                label: Some(s("l")),
            },
            C::ScratchGetDisabled => Failure::ScratchGetDisabled { by: s("b") },
            C::InvalidDocument => Failure::InvalidDocument {
                what: s("w"),
                message: s("m"),
                line: Some(usize::from(seed)),
                field: Some(s("f")),
                missing_fields: vec![s("f")],
            },
            C::CorruptState => Failure::CorruptState {
                path: s("p"),
                reason: s("r"),
            },
            C::Internal => Failure::Internal(s("m")),
        }
    }

    /// The envelope's context fields for this code (besides `tool`, `message` and
    /// `retriable`, which every envelope has), each with its value when the variant fixes
    /// it (`reason`: `no_match`), sorted by name.
    pub fn context_fields(self) -> Vec<(String, Option<Value>)> {
        let (a, b) = (
            self.sample(false).envelope("t", 0).context,
            self.sample(true).envelope("t", 0).context,
        );
        let mut fields: Vec<(String, Option<Value>)> = a
            .into_iter()
            .filter(|(k, _)| !matches!(k.as_str(), "tool" | "message" | "retriable"))
            .map(|(k, v)| {
                let fixed = b.get(&k) == Some(&v) && v.is_string();
                (k, fixed.then_some(v))
            })
            .collect();
        // Sorted here, whatever order the map keeps (serde_json's `preserve_order`).
        fields.sort_by(|x, y| x.0.cmp(&y.0));
        fields
    }
}

/// The errnos whose classification [`FailureCode::Io`] documents (any other errno is
/// classified as the last, `ENOENT`, is).
pub const IO_ERRNOS: &[(&str, i32)] = &[
    ("EACCES", libc::EACCES),
    ("EPERM", libc::EPERM),
    ("EROFS", libc::EROFS),
    ("ENOSPC", libc::ENOSPC),
    ("EDQUOT", libc::EDQUOT),
    ("EFBIG", libc::EFBIG),
    ("ELOOP", libc::ELOOP),
    ("EXDEV", libc::EXDEV),
    ("EILSEQ", libc::EILSEQ),
    ("EIO", libc::EIO),
    ("EAGAIN", libc::EAGAIN),
    ("EBUSY", libc::EBUSY),
    ("EINTR", libc::EINTR),
    ("ENOENT", libc::ENOENT),
];

/// What any tool call can return, whatever the tool: the dispatcher's refusals (unknown or
/// not enabled tool, retry budget, a caught panic) and the argument checks every tool makes
/// ([`super::parse_args`]: missing, mistyped or unknown argument, text that is not Unicode,
/// an oversized request message).
pub const ANY_TOOL: &[FailureCode] = &[
    C::BadArgument,
    C::InvalidArguments,
    C::Encoding,
    C::TooLarge,
    C::RetryBudgetExhausted,
    C::ToolNotEnabled,
    C::UnknownTool,
    C::Internal,
];

/// Resolving a path in a workspace and opening it.
pub const PATH: &[FailureCode] = &[
    C::OutsideWorkspace,
    C::InvalidPath,
    C::NoWorkspace,
    C::StateDirectory,
    C::IsDirectory,
    C::Io,
];

/// The write pipeline: room on the disk, the size cap, the read-back check.
pub const PIPELINE: &[FailureCode] = &[C::Io, C::DiskFull, C::TooLarge, C::Corruption];

/// The L0 screen a `classify`ing tool runs before it writes (and the policy it needs).
pub const SCREEN: &[FailureCode] = &[C::ContentBlocked, C::PolicyInvalid];

/// A tool that takes an `idempotency_key`.
pub const KEYED: &[FailureCode] = &[C::IdempotencyConflict];

/// An edit of a file that must exist: its precondition and its matches.
pub const EDIT: &[FailureCode] = &[
    C::TargetMissing,
    C::StaleHash,
    C::NoMatch,
    C::MatchCount,
    C::Encoding,
];

/// A whole-file write's preconditions (`mode=create`, `expected_prev_sha256`).
pub const PRECONDITION: &[FailureCode] = &[C::TargetExists, C::StaleHash];

/// The server's own state files (journal, chunks, scratchpad, transactions).
pub const STATE: &[FailureCode] = &[C::Io];

/// A tool's declared groups as one list, in [`FailureCode::ALL`] order, without repeats.
pub fn flatten(groups: &[&[FailureCode]]) -> Vec<FailureCode> {
    let mut all: Vec<FailureCode> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    all.sort();
    all.dedup();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_names_its_own_variant_and_all_is_complete() {
        for (i, &code) in FailureCode::ALL.iter().enumerate() {
            assert_eq!(FailureCode::of(&code.sample(false)), code);
            assert_eq!(FailureCode::of(&code.sample(true)), code);
            assert_eq!(code as usize, i, "{}", code.name());
        }
    }

    #[test]
    fn context_fields_mark_what_the_variant_fixes() {
        let f = C::ScratchNotFound.context_fields();
        assert!(
            f.contains(&("reason".into(), Some(json!("not_found")))),
            "{f:?}"
        );
        assert!(f.contains(&("sha256".into(), None)), "{f:?}");
        let f = C::TxNotOpen.context_fields();
        assert!(f.contains(&("reason".into(), None)), "{f:?}");
        assert!(f.iter().all(|(k, _)| k != "tool" && k != "message"));
    }

    #[test]
    fn flatten_sorts_and_drops_repeats() {
        assert_eq!(
            flatten(&[PIPELINE, STATE, &[C::OutsideWorkspace]]),
            [
                C::OutsideWorkspace,
                C::Corruption,
                C::Io,
                C::DiskFull,
                C::TooLarge
            ]
        );
    }
}
