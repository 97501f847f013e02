//! The one home of write preconditions (L1): the mode a write asks for, whether the target
//! exists, the SHA-256 it must have (`expected_prev_sha256`) and the size limit. Callers make
//! these checks inside the pipeline's decision, under the lock that is held until the rename,
//! so what they decide still holds when the file is replaced.
//!
//! Users: `safe_write` and `tx_write` ([`Precondition::check`] and [`body`]), `safe_replace`
//! and `tx_replace` ([`existing_for_edit`]), `chunk_compose` ([`Precondition::check`], which
//! decides without reading the target's bytes, since compose streams), `restore`
//! ([`check_expected`]), and every size cap ([`within_limit`]).
//!
//! Architecture invariant: `Failure::StaleHash`, `TargetExists` and `TargetMissing` are built
//! here and nowhere else, but for the pipeline's rename, which reports the create-only race
//! that no lock can see (a file that appeared beside the workspace's own writers).
//! `tests/layers.rs` fails on any other constructor.

use crate::envelope::{Failure, Result};
use crate::write::pipeline::Existing;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How `safe_write` treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// Refuse if the file exists (never clobbers; the default).
    #[default]
    Create,
    /// Replace the file's content (creating it if missing).
    Overwrite,
    /// Add the content after the file's current content (creating it if missing).
    Append,
}

/// What a write does once the existing file is known: its journal `mode` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Create,
    Overwrite,
    Append,
}

impl Applied {
    /// The journal's and the result's `mode_applied` label.
    pub fn label(self) -> &'static str {
        match self {
            Applied::Create => "create",
            Applied::Overwrite => "overwrite",
            Applied::Append => "append",
        }
    }

    /// Whether the rename must not replace a file (one that appears after the decision).
    pub fn create_only(self) -> bool {
        self == Applied::Create
    }
}

/// Which refusal wins when `mode: create` meets an existing file whose hash is also not the
/// expected one. Both answers are correct; each tool keeps the one it has always given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// `TargetExists` first (`safe_write`, `chunk_compose`).
    ModeFirst,
    /// `StaleHash` first (`tx_write`, whose "existing" may be content staged earlier).
    HashFirst,
}

/// What a write asks of its target.
#[derive(Debug, Clone, Copy)]
pub struct Precondition<'a> {
    /// The path as the client gave it, for messages.
    pub shown: &'a str,
    /// `None`: create when missing, else overwrite (`chunk_compose` without a mode).
    pub mode: Option<WriteMode>,
    /// The SHA-256 the target must have now.
    pub expected: Option<&'a str>,
    pub order: Order,
}

impl Precondition<'_> {
    /// Refuse (`TargetExists` for `create` over a file, `StaleHash` for a hash that does not
    /// match) or say what the write does. Reads nothing: `existing.bytes` may be empty.
    pub fn check(&self, existing: Option<&Existing>) -> Result<Applied> {
        let exists_refused = || match (self.mode, existing) {
            (Some(WriteMode::Create), Some(e)) => Err(Failure::TargetExists {
                path: self.shown.into(),
                existing_sha256: e.sha256.clone(),
            }),
            _ => Ok(()),
        };
        match self.order {
            Order::ModeFirst => {
                exists_refused()?;
                check_expected(self.shown, self.expected, existing)?;
            }
            Order::HashFirst => {
                check_expected(self.shown, self.expected, existing)?;
                exists_refused()?;
            }
        }
        Ok(match (self.mode, existing) {
            (_, None) => Applied::Create,
            (Some(WriteMode::Append), Some(_)) => Applied::Append,
            (_, Some(_)) => Applied::Overwrite,
        })
    }
}

/// The file's new content for `applied`: `new` after the existing bytes for an append, else
/// `new` itself.
pub fn body(applied: Applied, existing: Option<&Existing>, new: Vec<u8>) -> Vec<u8> {
    match (applied, existing) {
        (Applied::Append, Some(e)) => {
            let mut all = Vec::with_capacity(e.bytes.len() + new.len());
            all.extend_from_slice(&e.bytes);
            all.extend_from_slice(&new);
            all
        }
        _ => new,
    }
}

/// Check `expected_prev_sha256` against the current file: `StaleHash` when the file is
/// missing or has another hash.
pub fn check_expected(
    shown: &str,
    expected: Option<&str>,
    existing: Option<&Existing>,
) -> Result<()> {
    if let Some(exp) = expected {
        let actual = existing.map(|e| e.sha256.as_str());
        if actual != Some(exp) {
            return Err(Failure::StaleHash {
                path: shown.into(),
                expected: exp.into(),
                actual: actual.map(str::to_string),
            });
        }
    }
    Ok(())
}

/// The file must not exist (`TargetExists` when it does): a restore that puts back a file a
/// deletion took, or takes back a file a session created and someone wrote again.
pub fn check_absent(shown: &str, existing: Option<&Existing>) -> Result<()> {
    match existing {
        None => Ok(()),
        Some(e) => Err(Failure::TargetExists {
            path: shown.into(),
            existing_sha256: e.sha256.clone(),
        }),
    }
}

/// The file an edit applies to: `TargetMissing` when there is none, then the expected hash.
pub fn existing_for_edit<'e>(
    shown: &str,
    expected: Option<&str>,
    existing: Option<&'e Existing>,
) -> Result<&'e Existing> {
    let Some(existing) = existing else {
        return Err(missing(shown));
    };
    check_expected(shown, expected, Some(existing))?;
    Ok(existing)
}

/// `TargetMissing` for a file that must exist (an edit's target, a checkpoint or handoff that
/// is read).
pub fn missing(shown: impl Into<String>) -> Failure {
    Failure::TargetMissing { path: shown.into() }
}

/// `TooLarge` when `bytes` is over `limit` (a body of exactly `limit` bytes passes). `what`
/// names the thing in the message: "content", "resulting file", "checkpoint".
pub fn within_limit(what: &str, bytes: u64, limit: u64) -> Result<()> {
    if bytes > limit {
        return Err(Failure::TooLarge {
            what: what.into(),
            bytes,
            limit,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::ErrorKind;

    const OLD: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const OTHER: &str = "2222222222222222222222222222222222222222222222222222222222222222";

    fn file() -> Existing {
        Existing {
            bytes: b"old".to_vec(),
            sha256: OLD.into(),
            mode: 0o644,
            uid: 0,
            gid: 0,
            nlink: 1,
            size: 3,
            inode: None,
        }
    }

    fn check(
        mode: Option<WriteMode>,
        existing: Option<&Existing>,
        expected: Option<&str>,
        order: Order,
    ) -> std::result::Result<Applied, String> {
        Precondition {
            shown: "a.txt",
            mode,
            expected,
            order,
        }
        .check(existing)
        .map_err(|f| match f {
            Failure::TargetExists { .. } => "exists".to_string(),
            Failure::StaleHash { actual, .. } => format!("stale:{}", actual.is_some()),
            other => format!("unexpected {other}"),
        })
    }

    /// mode x existing file x expected hash, for both orders: the whole truth table.
    #[test]
    fn the_precondition_truth_table() {
        use Applied::*;
        let e = file();
        let modes = [
            None,
            Some(WriteMode::Create),
            Some(WriteMode::Overwrite),
            Some(WriteMode::Append),
        ];
        for order in [Order::ModeFirst, Order::HashFirst] {
            for mode in modes {
                for (existing, expected) in [
                    (None, None),
                    (None, Some(OLD)),
                    (Some(&e), None),
                    (Some(&e), Some(OLD)),
                    (Some(&e), Some(OTHER)),
                ] {
                    let got = check(mode, existing, expected, order);
                    let want: std::result::Result<Applied, String> =
                        match (mode, existing, expected) {
                            // a hash is expected of a file that is not there
                            (_, None, Some(_)) => Err("stale:false".into()),
                            (_, None, None) => Ok(Create),
                            // create over a stale file: the order decides
                            (Some(WriteMode::Create), Some(_), Some(OTHER)) => Err(match order {
                                Order::ModeFirst => "exists".into(),
                                Order::HashFirst => "stale:true".into(),
                            }),
                            (Some(WriteMode::Create), Some(_), _) => Err("exists".into()),
                            (_, Some(_), Some(OTHER)) => Err("stale:true".into()),
                            (Some(WriteMode::Append), Some(_), _) => Ok(Append),
                            (_, Some(_), _) => Ok(Overwrite),
                        };
                    assert_eq!(
                        got,
                        want,
                        "{mode:?} {:?} {expected:?} {order:?}",
                        existing.is_some()
                    );
                }
            }
        }
    }

    #[test]
    fn create_over_a_file_reports_the_files_hash() {
        let e = file();
        let f = Precondition {
            shown: "dir/a.txt",
            mode: Some(WriteMode::Create),
            expected: None,
            order: Order::ModeFirst,
        }
        .check(Some(&e))
        .unwrap_err();
        let env = f.envelope("safe_write", 3);
        assert_eq!(env.error, ErrorKind::StalePrecondition);
        assert_eq!(env.context["existing_sha256"], OLD);
        assert_eq!(env.context["path"], "dir/a.txt");
    }

    #[test]
    fn only_a_created_file_is_renamed_create_only() {
        assert!(Applied::Create.create_only());
        assert!(!Applied::Overwrite.create_only());
        assert!(!Applied::Append.create_only());
        assert_eq!(
            [Applied::Create, Applied::Overwrite, Applied::Append].map(Applied::label),
            ["create", "overwrite", "append"]
        );
    }

    #[test]
    fn an_append_puts_the_new_bytes_after_the_old_ones() {
        let e = file();
        assert_eq!(
            body(Applied::Append, Some(&e), b"+new".to_vec()),
            b"old+new"
        );
        assert_eq!(body(Applied::Overwrite, Some(&e), b"new".to_vec()), b"new");
        assert_eq!(body(Applied::Create, None, b"new".to_vec()), b"new");
    }

    #[test]
    fn an_edit_needs_the_file_and_then_its_hash() {
        let e = file();
        assert!(matches!(
            existing_for_edit("a", None, None),
            Err(Failure::TargetMissing { .. })
        ));
        assert!(matches!(
            existing_for_edit("a", Some(OLD), None),
            Err(Failure::TargetMissing { .. })
        ));
        assert!(matches!(
            existing_for_edit("a", Some(OTHER), Some(&e)),
            Err(Failure::StaleHash { .. })
        ));
        assert_eq!(
            existing_for_edit("a", Some(OLD), Some(&e)).unwrap().sha256,
            OLD
        );
    }

    #[test]
    fn the_limit_itself_passes_one_byte_more_is_refused() {
        assert!(within_limit("content", 10, 10).is_ok());
        let f = within_limit("resulting file", 11, 10).unwrap_err();
        assert_eq!(
            f.to_string(),
            "resulting file is 11 bytes, over the limit of 10"
        );
    }
}
