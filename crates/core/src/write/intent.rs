//! The one home of write preconditions (L1): the mode a write asks for, whether the target
//! exists, the SHA-256 it must have (`expected_prev_sha256`) and the size limit. The checks are
//! made under the pipeline's lock, so what they decide holds until the rename.
//!
//! Architecture invariant: `Failure::StaleHash`, `TargetExists` and `TargetMissing` are built
//! here (and, for the create-only race the lock cannot see, in the pipeline's rename); a test
//! in `tests/layers.rs` fails on any other constructor.

use crate::envelope::{Failure, Result};
use crate::pipeline::Existing;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a write treats an existing file.
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

/// Check `expected_prev_sha256` against the current file: `StaleHash` when the file is
/// missing or has another hash.
pub fn check_expected(
    path: &str,
    expected: Option<&str>,
    existing: Option<&Existing>,
) -> Result<()> {
    if let Some(exp) = expected {
        let actual = existing.map(|e| e.sha256.as_str());
        if actual != Some(exp) {
            return Err(Failure::StaleHash {
                path: path.into(),
                expected: exp.into(),
                actual: actual.map(str::to_string),
            });
        }
    }
    Ok(())
}
