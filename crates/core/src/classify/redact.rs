//! One-call redaction (SPEC section 9): the draft with every L0 finding replaced by a typed
//! placeholder `{REDACTED:<rule>}`, plus the list of replacements.
//!
//! Guarantees: the originals travel with the result for the caller to deposit (e.g. into the L4
//! scratchpad) but are never serialized and never printed by `Debug`; placeholders match no rule,
//! so redacting a redacted draft changes nothing. Pure: no I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Classifier, findings};

/// A redacted original. Its `Debug` does not show the text; read it with [`Original::expose`].
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Original(String);

impl Original {
    /// The original text. Handle with care: it is the secret.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Original {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Original(<{} bytes>)", self.0.len())
    }
}

/// One replaced finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Replacement {
    /// The rule that matched (also the placeholder's tag).
    pub rule: String,
    /// 1-based line of the original in the input.
    pub line: u32,
    /// The text put in its place, `{REDACTED:<rule>}`.
    pub placeholder: String,
    /// The replaced text; never serialized.
    #[serde(skip)]
    #[schemars(skip)]
    pub original: Original,
}

/// The result of [`redact`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Redaction {
    /// The draft with every finding replaced.
    pub content: String,
    pub replacements: Vec<Replacement>,
}

/// Replaces every finding of `content` with `{REDACTED:<rule>}`.
pub fn redact(content: &str, classifier: &Classifier) -> Redaction {
    let found = findings(content, classifier);
    let mut out = String::with_capacity(content.len());
    let mut replacements = Vec::with_capacity(found.len());
    let mut pos = 0;
    for f in found {
        let span = f.span();
        if span.start < pos {
            continue;
        }
        let (Some(before), Some(original)) =
            (content.get(pos..span.start), content.get(span.clone()))
        else {
            continue;
        };
        let placeholder = format!("{{REDACTED:{}}}", f.pattern);
        out.push_str(before);
        out.push_str(&placeholder);
        replacements.push(Replacement {
            rule: f.pattern,
            line: f.line,
            placeholder,
            original: Original(original.to_string()),
        });
        pos = span.end;
    }
    out.push_str(content.get(pos..).unwrap_or(""));
    Redaction {
        content: out,
        replacements,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::risk_score;
    use crate::classify::testing::{clf, mixed_draft};

    #[test]
    fn redact_replaces_each_finding_with_a_typed_placeholder() {
        let d = mixed_draft();
        let r = redact(&d, clf());
        assert!(r.content.contains("{REDACTED:github_classic_pat}"));
        assert!(r.content.contains("{REDACTED:rsa_private_key}"));
        assert!(
            r.content
                .contains("password = \"{REDACTED:password_assignment}\"")
        );
        assert!(!r.content.contains("ghp_"));
        assert_eq!(r.replacements.len(), 5, "{:?}", r.replacements);
        assert!(risk_score(&r.content, clf()).detected_patterns.is_empty());
    }

    #[test]
    fn redaction_keeps_originals_out_of_serialization() {
        let d = mixed_draft();
        let r = redact(&d, clf());
        let first = &r.replacements[0];
        assert!(first.original.expose().starts_with("ghp_"));
        let json = serde_json::to_string(&r).unwrap_or_default();
        assert!(!json.contains(first.original.expose()));
        assert!(!format!("{r:?}").contains(first.original.expose()));
    }

    #[test]
    fn redacting_a_redacted_draft_changes_nothing() {
        let once = redact(&mixed_draft(), clf());
        let twice = redact(&once.content, clf());
        assert_eq!(twice.content, once.content);
        assert!(twice.replacements.is_empty());
    }
}
