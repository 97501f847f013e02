//! `risk_score` and `redact` (L0, paper section 3.1 and SPEC section 9): the pre-flight
//! classifier as tools. Neither touches a workspace file: they score or rewrite the draft they
//! are given. The classifier is the workspace policy's ([`resilient_write_core::policy::active`]); a bad policy
//! file makes both answer `policy_violation` naming the file and line.
//!
//! `redact` with `deposit: true` hands the originals to a [`Depository`]: the L4 scratchpad,
//! which stores each as an owner-only content-addressed blob and returns its hash.

use super::errors::{FailureCode as C, STATE};
use super::keyed::{IdempotencyKey, parse_keyed};
use super::{ToolSpec, is_false, parse_args, result_schema, schema, to_value};
use resilient_write_core::classify::{Original, RiskReport, redact};
use resilient_write_core::envelope::Result;
use resilient_write_core::store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Arguments of `risk_score`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RiskScoreArgs {
    pub content: String,
    // The original's arguments, accepted and ignored (no description: none is worth a
    // model's tokens).
    #[serde(default)]
    pub language_hint: Option<String>,
    #[serde(default)]
    pub target_path: Option<String>,
}

/// Result of `risk_score`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RiskScoreResult {
    pub ok: bool,
    #[serde(flatten)]
    pub report: RiskReport,
}

/// Arguments of `redact`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactArgs {
    pub content: String,
    /// Keep each original in the scratchpad; each replacement then gives its sha256 (for
    /// scratch_get).
    #[serde(default)]
    pub deposit: bool,
    #[serde(flatten)]
    pub key: IdempotencyKey,
}

/// One replaced finding.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RedactedItem {
    /// The rule that matched; also the placeholder's tag.
    pub rule: String,
    /// 1-based line of the original in the input.
    pub line: u32,
    /// `{REDACTED:<rule>}`, the text now in its place.
    pub placeholder: String,
    /// SHA-256 under which the original was deposited (only with `deposit: true` and a
    /// scratchpad).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Result of `redact`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RedactResult {
    pub ok: bool,
    /// The draft with each finding replaced by `{REDACTED:<rule>}`. Redacting it again changes
    /// nothing.
    pub content: String,
    pub replacements: Vec<RedactedItem>,
    /// Whether the originals were stored.
    pub deposited: bool,
    /// Why `deposit: true` stored nothing, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// True when this is the first result of an earlier call with the same idempotency_key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_replay: bool,
}

/// Where `redact` can put the originals (the L4 scratchpad). Implementations store the text
/// and return its SHA-256; they must never log it.
pub trait Depository {
    /// Store `original`, found by `rule`, and return its SHA-256.
    fn deposit(&self, original: &Original, rule: &str) -> Result<String>;
}

/// The L4 scratchpad as a depository: each original becomes a content-addressed blob
/// (0600) with an index row labelled `redact:<rule>`.
struct ScratchDepository<'a>(&'a Store);

impl Depository for ScratchDepository<'_> {
    fn deposit(&self, original: &Original, rule: &str) -> Result<String> {
        resilient_write_core::scratch::deposit_redacted(self.0, original.expose(), rule)
    }
}

/// The depository of this build: the scratchpad.
fn depository(store: &Store) -> Option<Box<dyn Depository + '_>> {
    Some(Box::new(ScratchDepository(store)))
}

pub const RISK_SCORE: ToolSpec = ToolSpec {
    name: "risk_score",
    title: "Pre-flight risk score",
    description: "Use before writing a draft that may hold secrets or PII: scores what content filters \
        and secret scanners reject (keys and tokens of 100+ formats, private keys, \
        passwords, PII, binary, size). Returns score 0..1, verdict safe|low|medium|high, \
        detected_patterns[{kind, pattern, match, line}], suggested_actions. Writes nothing.",
    read_only: true,
    destructive: false,
    idempotent: true,
    input_schema: schema::<RiskScoreArgs>,
    output_schema: result_schema::<RiskScoreResult>,
    run: run_risk_score,
    errors: &[&[C::PolicyInvalid]],
};

pub const REDACT: ToolSpec = ToolSpec {
    name: "redact",
    title: "Redact secrets from a draft",
    description: "Return the draft with each finding of risk_score replaced by a typed placeholder \
        {REDACTED:<rule>}, and replacements[{rule, line, placeholder}]; writes no workspace \
        file. Use when a write was refused for content_filter.",
    read_only: false,
    destructive: false,
    idempotent: true,
    input_schema: schema::<RedactArgs>,
    output_schema: result_schema::<RedactResult>,
    run: run_redact,
    errors: &[STATE, &[C::PolicyInvalid, C::Corruption, C::DiskFull]],
};

fn run_risk_score(store: &Store, raw: Value) -> Result<Value> {
    let args: RiskScoreArgs = parse_args(raw)?;
    let report = store.policy().risk_score(&args.content)?;
    to_value(&RiskScoreResult { ok: true, report })
}

fn run_redact(store: &Store, raw: Value) -> Result<Value> {
    let (args, request) = parse_keyed::<RedactArgs>("redact", raw)?;
    let r = redact(&args.content, store.policy().classifier()?);
    // What is kept under a key is the result without the redacted draft (drafts stay out of
    // the state directory); the draft is redacted again for every answer, to the same text.
    let mut result = request.once(store, || {
        let depot = if args.deposit {
            depository(store)
        } else {
            None
        };
        let mut replacements = Vec::with_capacity(r.replacements.len());
        for rep in &r.replacements {
            let sha256 = match &depot {
                Some(d) => Some(d.deposit(&rep.original, &rep.rule)?),
                None => None,
            };
            replacements.push(RedactedItem {
                rule: rep.rule.clone(),
                line: rep.line,
                placeholder: rep.placeholder.clone(),
                sha256,
            });
        }
        let note = (args.deposit && depot.is_none()).then(|| {
            "deposit is unavailable: this build has no scratchpad, so the originals were not \
             stored anywhere; keep them yourself if you need them"
                .to_string()
        });
        let mut v = to_value(&RedactResult {
            ok: true,
            content: String::new(),
            replacements,
            deposited: depot.is_some() && !r.replacements.is_empty(),
            note,
            idempotent_replay: false,
        })?;
        if let Value::Object(m) = &mut v {
            m.remove("content");
        }
        Ok(v)
    })?;
    if let Value::Object(m) = &mut result {
        m.insert("content".into(), Value::String(r.content));
    }
    Ok(result)
}
