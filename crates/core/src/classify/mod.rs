//! L0 of the paper (section 3.1): the pre-flight risk classifier. It scores a draft for the
//! likelihood that a downstream content filter or secret scanner rejects it, names what it found
//! (family, rule, a 16-character snippet, line) and suggests what to do, before any byte is
//! written. [`redact`] replaces every finding with a typed placeholder in one call.
//!
//! Architecture invariant: the classifier is a pure function of the content and a compiled
//! [`Classifier`]: no I/O, no clock, no randomness; the same input gives the same report.
//!
//! Guarantees:
//! - One pass for every keyed rule: an Aho-Corasick automaton over all rule keywords finds the
//!   places worth looking at, and each rule's regex runs only on the merged windows (one line, or a
//!   bounded forward span) around its keywords; PII numbers and binary hints are hand-written
//!   linear scans. Every window is bounded and merged, so cost is linear in the input (a 10 MB
//!   single line and 1 MB of `=` are benchmarked in `examples/l0_bench.rs`).
//! - A reported `match` is at most 16 characters and never contains a whole secret (it is cut to
//!   half of the secret when the secret is short).
//! - Redacting a redacted draft changes nothing: placeholders never match a rule.
//!
//! Score (the paper's equation 1): `sum_f w_f * min(1.5, 1 + 0.25 (n_f - 1))` over the families
//! with at least one finding (`n_f` = distinct matched secrets), plus size rules (over 100 KB
//! +0.15, over 500 KB +0.30, a line over 2000 chars +0.20, over 5000 lines +0.10), clamped to
//! [0, 1]. Verdict: high from 0.70, medium from 0.40, low from 0.10, else safe (the policy's
//! `thresholds` may move these).
//!
//! Weights (the paper's in brackets). They are raised so that one live credential alone reaches
//! `medium` and one private key alone reaches `high`; two credentials of different families reach
//! `high`; personal contact data and binary hints alone stay `low`:
//!
//! | family              | weight | what                                                        |
//! |---------------------|--------|-------------------------------------------------------------|
//! | `pem_block`         | 0.75 (0.50) | PEM/OpenSSH/PGP/PuTTY private keys, age secret keys    |
//! | `aws_secret`        | 0.55 (0.40) | AWS secret access keys, session tokens                 |
//! | `api_key`           | 0.45 (0.35) | vendor tokens (AWS key ids, GCP, Slack, Stripe, AI...) |
//! | `github_pat`        | 0.45 (0.35) | all GitHub token kinds                                 |
//! | `connection_string` | 0.45   | URL/JDBC/ODBC passwords, Azure keys and SAS signatures      |
//! | `password`          | 0.45   | password literals, Basic auth, netrc, docker/npm auth       |
//! | `generic_secret`    | 0.45   | entropy-gated secret/token/key assignments, k8s Secret data |
//! | `jwt`               | 0.40 (0.25) | JSON Web Tokens with a decodable header                |
//! | `pii_financial`     | 0.40   | Luhn-checked card numbers, mod-97-checked IBANs             |
//! | `pii_government_id` | 0.40   | US SSNs of a valid shape                                    |
//! | `redacted_prefix`   | 0.25   | a vendor prefix followed by a redaction marker              |
//! | `binary_hint`       | 0.20 (0.20) | long base64 (also wrapped), hex blobs, non-printables  |
//! | `pii`               | 0.15 (0.15) | emails outside reserved domains, phone numbers         |
//!
//! Families added by policy (`extend_patterns`) weigh [`DEFAULT_CUSTOM_WEIGHT`] unless the policy
//! gives a weight.

mod binary;
pub(crate) mod config;
mod entropy;
mod pii;
mod redact;
mod rules;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::Range;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::bytes::{Captures, Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use config::{PatternSpec, Thresholds};
use rules::{Check, Scanner, Tier, Window};

pub use redact::{Original, Redaction, Replacement, redact};

/// Weight of a family introduced by the policy without a weight.
pub const DEFAULT_CUSTOM_WEIGHT: f64 = 0.45;
/// Maximum characters of a reported match.
pub const SNIPPET_CHARS: usize = 16;

/// The built-in family weights (see the module documentation).
pub const DEFAULT_WEIGHTS: &[(&str, f64)] = &[
    ("pem_block", 0.75),
    ("aws_secret", 0.55),
    ("api_key", 0.45),
    ("github_pat", 0.45),
    ("connection_string", 0.45),
    ("password", 0.45),
    ("generic_secret", 0.45),
    ("jwt", 0.40),
    ("pii_financial", 0.40),
    ("pii_government_id", 0.40),
    ("redacted_prefix", 0.25),
    ("binary_hint", 0.20),
    ("pii", 0.15),
];

/// The categorical verdict, ordered `safe < low < medium < high`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Safe,
    Low,
    Medium,
    High,
}

/// One detected pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The family (reporting category), e.g. `api_key`.
    pub kind: String,
    /// The specific rule, e.g. `github_fine_grained_pat`.
    pub pattern: String,
    /// At most 16 characters from the start of the match; never the whole secret.
    #[serde(rename = "match")]
    pub r#match: String,
    /// 1-based line of the secret.
    pub line: u32,
    /// Byte range of the secret in the content (what redaction replaces). Not serialized.
    #[serde(skip)]
    #[schemars(skip)]
    span: Range<usize>,
}

impl Finding {
    /// Byte range of the secret in the scored content.
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }
}

/// One suggested next step: `{action, targets}` or `{action, reason}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuggestedAction {
    /// `redact`, `split` or `escape`.
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The result of [`risk_score`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RiskReport {
    /// In [0, 1], rounded to 4 decimals.
    pub score: f64,
    pub verdict: Verdict,
    /// UTF-8 length of the content.
    pub bytes: usize,
    pub line_count: usize,
    /// Longest line, in characters.
    pub max_line_len: usize,
    pub detected_patterns: Vec<Finding>,
    pub suggested_actions: Vec<SuggestedAction>,
}

#[derive(Clone)]
struct CompiledRule {
    name: String,
    family: String,
    tier: Tier,
    check: Check,
    window: Window,
    regex: Option<Regex>,
    has_groups: bool,
    /// The regex needs an assignment operator (`=` or `:`) in the window.
    needs_assign: bool,
}

/// A rule a keyword hit wakes up.
#[derive(Clone)]
struct KeywordRule {
    rule: usize,
    /// The keyword can only matter at the start of a token.
    at_start: bool,
    /// The keyword's exact bytes when the rule is case-sensitive (the automaton is not).
    exact: Option<Box<[u8]>>,
}

/// The compiled rules of a policy; build once (`Policy::compile`) and reuse. Cloning is
/// cheap (compiled automata are shared), for work that outlives a borrow (a streaming compose).
#[derive(Clone)]
pub struct Classifier {
    rules: Vec<CompiledRule>,
    /// Every rule's keywords in one ASCII case-insensitive automaton: one pass over the content.
    keywords: Option<AhoCorasick>,
    /// The rules of each keyword of `keywords`, by pattern id.
    keyword_rules: Vec<Vec<KeywordRule>>,
    unkeyed: Vec<usize>,
    scanners: Vec<(Scanner, usize)>,
    weights: BTreeMap<String, f64>,
    thresholds: Thresholds,
}

impl std::fmt::Debug for Classifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classifier")
            .field("rules", &self.rules.len())
            .field("weights", &self.weights)
            .field("thresholds", &self.thresholds)
            .finish()
    }
}

impl Default for Classifier {
    fn default() -> Self {
        // The built-in rules are constants of this crate; failing to compile them is a bug caught
        // by `builtin_rules_compile`.
        #[allow(clippy::expect_used)]
        Classifier::build(&[], &[], BTreeMap::new(), Thresholds::default())
            .expect("built-in L0 rules compile")
    }
}

fn build_ac(words: &[String]) -> Option<AhoCorasick> {
    if words.is_empty() {
        return None;
    }
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        // a full DFA: one transition per byte for the overlapping scan (the keyword set is small)
        .kind(Some(AhoCorasickKind::DFA))
        .build(words)
        .ok()
}

/// A rule whose regex does not compile: its name, the policy line of its `regex` (0 when unknown)
/// and the last line of the regex error. The policy turns it into its `InvalidRegex` error.
#[derive(Debug)]
pub(crate) struct InvalidRule {
    pub(crate) name: String,
    pub(crate) line: u64,
    pub(crate) message: String,
}

impl Classifier {
    /// Compiles the built-in rules (minus `disable_families`) and the operator's `extend_patterns`,
    /// with the family weights of `weight_overrides` and the verdict cut-offs `thresholds`.
    pub(crate) fn build(
        disable_families: &[String],
        extend_patterns: &[PatternSpec],
        weight_overrides: BTreeMap<String, f64>,
        thresholds: Thresholds,
    ) -> Result<Classifier, InvalidRule> {
        let disabled: BTreeSet<&str> = disable_families.iter().map(String::as_str).collect();
        let mut specs: Vec<rules::RuleSpec> = rules::builtin()
            .into_iter()
            .filter(|r| !disabled.contains(r.family.as_str()))
            .collect();
        let custom_start = specs.len();
        for p in extend_patterns {
            if disabled.contains(p.family.as_str()) {
                continue;
            }
            specs.push(rules::RuleSpec {
                name: p.name.clone(),
                family: p.family.clone(),
                keywords: Vec::new(),
                case_sensitive: false,
                regex: p.regex.clone(),
                check: Check::None,
                window: Window::Line,
                tier: Tier::Vendor,
                scanner: None,
            });
        }
        let mut rules = Vec::with_capacity(specs.len());
        let mut words = Vec::<String>::new();
        let mut keyword_rules = Vec::<Vec<KeywordRule>>::new();
        let mut unkeyed = Vec::new();
        let mut scanners = Vec::new();
        for (idx, spec) in specs.into_iter().enumerate() {
            let regex = if spec.regex.is_empty() {
                None
            } else {
                let custom = idx >= custom_start;
                let built = RegexBuilder::new(&spec.regex)
                    .unicode(custom)
                    .size_limit(1 << 23)
                    .dfa_size_limit(1 << 23)
                    .build();
                match built {
                    Ok(r) => Some(r),
                    Err(e) => {
                        let line = extend_patterns
                            .iter()
                            .find(|p| p.name == spec.name)
                            .and_then(|p| p.line)
                            .unwrap_or(0);
                        return Err(InvalidRule {
                            line,
                            name: spec.name,
                            message: e
                                .to_string()
                                .lines()
                                .last()
                                .unwrap_or("")
                                .trim()
                                .to_string(),
                        });
                    }
                }
            };
            if let Some(s) = spec.scanner {
                scanners.push((s, idx));
            } else if spec.keywords.is_empty() {
                unkeyed.push(idx);
            }
            for kw in &spec.keywords {
                let w = kw.to_ascii_lowercase();
                let hit = KeywordRule {
                    rule: idx,
                    at_start: keyword_starts_token(&spec.regex, &w),
                    exact: spec
                        .case_sensitive
                        .then(|| kw.as_bytes().to_vec().into_boxed_slice()),
                };
                match words.iter().position(|x| *x == w) {
                    Some(p) => keyword_rules[p].push(hit),
                    None => {
                        words.push(w);
                        keyword_rules.push(vec![hit]);
                    }
                }
            }
            let has_groups = regex.as_ref().is_some_and(|r| r.captures_len() > 1);
            let needs_assign = spec.regex.contains("(?::=|=>");
            rules.push(CompiledRule {
                name: spec.name,
                family: spec.family,
                tier: spec.tier,
                check: spec.check,
                window: spec.window,
                regex,
                has_groups,
                needs_assign,
            });
        }
        let mut weights: BTreeMap<String, f64> = DEFAULT_WEIGHTS
            .iter()
            .map(|(f, w)| ((*f).to_string(), *w))
            .collect();
        for r in &rules {
            weights
                .entry(r.family.clone())
                .or_insert(DEFAULT_CUSTOM_WEIGHT);
        }
        weights.extend(weight_overrides);
        Ok(Classifier {
            rules,
            keywords: build_ac(&words),
            keyword_rules,
            unkeyed,
            scanners,
            weights,
            thresholds,
        })
    }

    /// The verdict of a score under this policy's thresholds.
    pub fn verdict(&self, score: f64) -> Verdict {
        let t = &self.thresholds;
        if score >= t.high {
            Verdict::High
        } else if score >= t.medium {
            Verdict::Medium
        } else if score >= t.low {
            Verdict::Low
        } else {
            Verdict::Safe
        }
    }

    /// The weight of a family (0 for a family no rule reports).
    pub fn weight(&self, family: &str) -> f64 {
        self.weights.get(family).copied().unwrap_or(0.0)
    }

    /// `(rule, family)` of every active rule, in precedence order.
    pub fn rules(&self) -> impl Iterator<Item = (&str, &str)> {
        self.rules
            .iter()
            .map(|r| (r.name.as_str(), r.family.as_str()))
    }

    /// Names of the built-in rules that each detect one credential format.
    pub fn credential_formats() -> Vec<String> {
        rules::credential_rule_names()
    }
}

/// A confirmed match before overlap resolution.
#[derive(Debug, Clone)]
struct Raw {
    rule: usize,
    /// Where the reported snippet starts.
    snippet_start: usize,
    /// The secret (redacted part).
    span: Range<usize>,
}

#[derive(Clone, Copy)]
struct Win {
    s: usize,
    e: usize,
    hard: bool,
}

fn floor_boundary(c: &str, mut i: usize) -> usize {
    i = i.min(c.len());
    while i > 0 && !c.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(c: &str, mut i: usize) -> usize {
    i = i.min(c.len());
    while i < c.len() && !c.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn find_sub(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let last_start = hay.len() - needle.len();
    let mut i = 0;
    while i <= last_start {
        let k = hay[i..=last_start].iter().position(|&b| b == first)?;
        i += k;
        if &hay[i..i + needle.len()] == needle {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// A byte that continues a token (`rules::BEGIN` requires anything else before a token).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// An `@` at `p` that can be inside an email address: a local-part byte before it and a domain
/// byte after it (what the `email_address` regex requires).
fn email_hit(bytes: &[u8], p: usize) -> bool {
    let before = p > 0 && {
        let b = bytes[p - 1];
        b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
    };
    let after = bytes
        .get(p + 1)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'-');
    before && after
}

/// Whether every match of `regex` puts `keyword` (lowercase) at the start of a token that
/// `rules::BEGIN` delimits: the regex is `BEGIN(?P<s>LITERAL...` and the literal begins with the
/// keyword. Then a hit preceded by a token byte can never start a match and is skipped.
fn keyword_starts_token(regex: &str, keyword: &str) -> bool {
    let Some(body) = regex
        .strip_prefix(rules::BEGIN)
        .and_then(|r| r.strip_prefix("(?P<s>"))
    else {
        return false;
    };
    let mut literal = String::new();
    let mut chars = body.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => match chars.next() {
                Some(e) if e.is_ascii_punctuation() => literal.push(e),
                _ => break,
            },
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '~' => literal.push(c),
            '?' | '*' | '{' => {
                // the quantifier makes the last literal character optional
                literal.pop();
                break;
            }
            _ => break,
        }
    }
    !keyword.is_empty()
        && literal
            .to_ascii_lowercase()
            .starts_with(&keyword.to_ascii_lowercase())
}

fn window_for(bytes: &[u8], p: usize, w: Window) -> Win {
    let n = bytes.len();
    let lo = p.saturating_sub(256);
    let s = memchr::memrchr(b'\n', &bytes[lo..p]).map_or(lo, |k| lo + k + 1);
    match w {
        Window::Line => {
            let hi = (p + 2048).min(n);
            match memchr::memchr(b'\n', &bytes[p..hi]) {
                Some(k) => Win {
                    s,
                    e: p + k,
                    hard: true,
                },
                None => Win {
                    s,
                    e: hi,
                    hard: hi == n,
                },
            }
        }
        Window::Forward(k) => {
            let e = (p + k).min(n);
            Win { s, e, hard: e == n }
        }
    }
}

/// Adds a keyword hit of `rule` at `p` to the rule's merged windows.
fn add_hit(
    cur: &mut [Option<Win>],
    wins: &mut [Vec<(usize, usize)>],
    bytes: &[u8],
    rule: usize,
    p: usize,
    w: Window,
) {
    let slack = match w {
        Window::Line => 1024,
        Window::Forward(k) => (k / 2).max(1),
    };
    if let Some(c) = cur[rule]
        && p < c.e
        && (c.hard || p + slack <= c.e)
    {
        return;
    }
    let nw = window_for(bytes, p, w);
    match &mut cur[rule] {
        // adjacent lines join into one window: one regex search instead of one per line
        Some(c) if nw.s <= c.e + 1 => {
            if nw.e >= c.e {
                c.e = nw.e;
                c.hard = nw.hard;
            }
        }
        slot => {
            if let Some(c) = slot.take() {
                wins[rule].push((c.s, c.e));
            }
            *slot = Some(nw);
        }
    }
}

fn group(c: &Captures<'_>, name: &str, base: usize) -> Option<Range<usize>> {
    c.name(name).map(|m| base + m.start()..base + m.end())
}

/// Keys whose values are not secrets even when they look random.
const BENIGN_KEY_PARTS: &[&str] = &[
    "hash",
    "sha",
    "digest",
    "checksum",
    "etag",
    "uuid",
    "fingerprint",
    "version",
    "url",
    "uri",
    "path",
    "file",
    "name",
    "type",
    "count",
    "length",
    "size",
    "format",
    "header",
    "prefix",
    "suffix",
    "field",
    "endpoint",
    "ttl",
    "expir",
    "limit",
    "kind",
    "mode",
    "tokenizer",
    "public",
    "pubkey",
    "policy",
    "reset",
    "input",
    "prompt",
    "label",
    "hint",
    "regex",
    "pattern",
    "rule",
    "strength",
    "salt",
    "encoder",
    "validator",
    "manager",
    "provider",
    "env",
    "min",
    "max",
    "id\"",
    "_id",
    "-id",
    ".id",
    "ids",
];

fn benign_key(key: &[u8]) -> bool {
    let k = key.to_ascii_lowercase();
    BENIGN_KEY_PARTS
        .iter()
        .any(|p| find_sub(&k, p.as_bytes()).is_some())
        || k.ends_with(b"id")
}

fn is_uuid(v: &[u8]) -> bool {
    v.len() == 36
        && v.iter().enumerate().all(|(i, &b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
}

const WEAK_PASSWORDS: &[&str] = &[
    "pass", "pw", "pwd", "passw0rd", "secret", "changeme", "xxx", "root", "toor", "guest", "user",
    "postgres", "mysql", "redis", "123", "1234", "12345", "123456", "pass123", "example",
];

fn value_is_code(v: &[u8]) -> bool {
    v.iter()
        .any(|b| matches!(b, b'(' | b')' | b'[' | b']' | b'{' | b'}'))
}

fn b64_decode(v: &[u8]) -> Option<Vec<u8>> {
    use base64::Engine;
    let trimmed: Vec<u8> = v.iter().copied().filter(|&b| b != b'=').collect();
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(&trimmed)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&trimmed))
        .ok()
}

/// Confirms a regex match and pushes the resulting finding(s).
fn verify(
    rule_idx: usize,
    r: &CompiledRule,
    bytes: &[u8],
    caps: &Captures<'_>,
    base: usize,
    k8s_done: &mut usize,
    out: &mut Vec<Raw>,
) {
    let Some(whole) = caps.get(0) else { return };
    let whole = base + whole.start()..base + whole.end();
    let secret = group(caps, "s", base)
        .or_else(|| group(caps, "s2", base))
        .or_else(|| group(caps, "secret", base));
    let span = secret.clone().unwrap_or_else(|| whole.clone());
    let v = &bytes[span.clone()];
    let key = group(caps, "k", base);
    let snippet_start = key.as_ref().map_or(span.start, |k| k.start);
    let push = |out: &mut Vec<Raw>, span: Range<usize>| {
        out.push(Raw {
            rule: rule_idx,
            snippet_start,
            span,
        })
    };
    match r.check {
        Check::None | Check::Redacted => push(out, span),
        Check::Token => {
            if !entropy::is_token_placeholder(v) {
                push(out, span);
            }
        }
        Check::Entropy(min) => {
            if key.as_ref().is_some_and(|k| benign_key(&bytes[k.clone()])) {
                return;
            }
            let letters = v.iter().any(u8::is_ascii_alphabetic);
            let digits = v.iter().any(u8::is_ascii_digit);
            let strong = digits || (entropy::classes(v) >= 3 && v.len() >= 20);
            if letters
                && strong
                && !is_uuid(v)
                && !entropy::is_value_placeholder(v)
                && !entropy::looks_like_identifier(v)
                && entropy::shannon(v) >= min
            {
                push(out, span);
            }
        }
        Check::Password => {
            if key.as_ref().is_some_and(|k| benign_key(&bytes[k.clone()])) {
                return;
            }
            let lower = v.to_ascii_lowercase();
            let weak = WEAK_PASSWORDS.iter().any(|w| lower == w.as_bytes());
            if v.len() >= 6
                && !weak
                && !value_is_code(v)
                && !entropy::is_value_placeholder(v)
                && !entropy::looks_like_identifier(v)
                && entropy::classes(v) >= 2
                && entropy::shannon(v) >= 2.0
            {
                push(out, span);
            }
        }
        Check::UrlPassword => {
            let user = group(caps, "u", base).map(|u| &bytes[u]);
            let lower = v.to_ascii_lowercase();
            let weak = WEAK_PASSWORDS.iter().any(|w| lower == w.as_bytes());
            if user != Some(v) && !weak && !value_is_code(v) && !entropy::is_value_placeholder(v) {
                push(out, span);
            }
        }
        Check::Email => {
            let (Some(u), Some(d)) = (group(caps, "u", base), group(caps, "d", base)) else {
                return;
            };
            if pii::email_is_reportable(&bytes[u], &bytes[d]) {
                push(out, span);
            }
        }
        Check::Jwt => {
            let mut parts = v.split(|&b| b == b'.');
            let header = parts.next().and_then(b64_decode);
            let payload = parts.next().and_then(b64_decode);
            let ok = header.is_some_and(|h| {
                find_sub(&h, b"\"alg\"").is_some() || find_sub(&h, b"\"typ\"").is_some()
            }) && payload.is_some_and(|p| p.first() == Some(&b'{'));
            if ok {
                push(out, span);
            }
        }
        Check::BasicAuth => {
            let Some(decoded) = b64_decode(v) else { return };
            let Ok(text) = std::str::from_utf8(&decoded) else {
                return;
            };
            let Some((user, pw)) = text.split_once(':') else {
                return;
            };
            let weak = WEAK_PASSWORDS.iter().any(|w| pw.eq_ignore_ascii_case(w));
            let printable = text.chars().all(|c| !c.is_control());
            if printable
                && !user.is_empty()
                && pw.len() >= 4
                && pw != user
                && !weak
                && !entropy::is_value_placeholder(pw.as_bytes())
            {
                push(out, span);
            }
        }
        Check::PrivateKey => {
            if let Some(end) = private_key_end(bytes, whole.end) {
                out.push(Raw {
                    rule: rule_idx,
                    snippet_start: whole.start,
                    span: whole.start..end,
                });
            }
        }
        Check::Putty => {
            let limit = (whole.end + 16 * 1024).min(bytes.len());
            let region = &bytes[whole.end..limit];
            if let Some(pl) = find_sub(region, b"Private-Lines:") {
                let end = match find_sub(region, b"Private-MAC:") {
                    Some(m) => region[m..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(limit, |k| whole.end + m + k),
                    None => (whole.end + pl + 2048).min(limit),
                };
                out.push(Raw {
                    rule: rule_idx,
                    snippet_start: whole.start,
                    span: whole.start..end,
                });
            }
        }
        Check::K8sSecret => k8s_values(rule_idx, bytes, whole.start, k8s_done, out),
    }
}

/// End of a private-key block starting after the header ending at `he`, if it has a real body.
/// The body never extends past the next `-----BEGIN`, so bodies are disjoint and the total work
/// stays linear even for a file made of headers.
fn private_key_end(bytes: &[u8], he: usize) -> Option<usize> {
    let limit = (he + 64 * 1024).min(bytes.len());
    let next_begin = find_sub(&bytes[he..limit], b"-----BEGIN").map_or(limit, |k| he + k);
    let region = &bytes[he..next_begin];
    let (body, end) = match find_sub(region, b"-----END") {
        Some(k) => {
            let after = he + k + 8;
            let close_limit = (after + 64).min(bytes.len());
            let close =
                find_sub(&bytes[after..close_limit], b"-----").map_or(after, |c| after + c + 5);
            (&region[..k], close)
        }
        None => {
            let tail = region.len().min(4096);
            (&region[..tail], he + tail)
        }
    };
    let mut count = 0usize;
    let mut i = 0;
    while i < body.len() {
        // JSON-escaped newlines (`\n`) inside service-account files
        if body[i] == b'\\' && i + 1 < body.len() {
            i += 2;
            continue;
        }
        if body[i].is_ascii_alphanumeric() || body[i] == b'+' || body[i] == b'/' {
            count += 1;
        }
        i += 1;
    }
    if count < 64 {
        return None;
    }
    let lowered = body.to_ascii_lowercase();
    let placeholder = find_sub(&lowered, b"redacted").is_some()
        || find_sub(&lowered, b"xxxx").is_some()
        || (count < 200
            && (find_sub(body, b"...").is_some()
                || find_sub(body, "\u{2026}".as_bytes()).is_some()));
    (!placeholder).then_some(end)
}

/// Each value under `data:` / `stringData:` of the YAML document holding a `kind: Secret`.
fn k8s_values(rule_idx: usize, bytes: &[u8], at: usize, done: &mut usize, out: &mut Vec<Raw>) {
    // a document already scanned adds nothing; never look back past it (keeps the scan linear)
    if at < *done {
        return;
    }
    let lo = at.saturating_sub(32 * 1024).max(*done);
    let doc_start = find_last_doc_sep(&bytes[lo..at]).map_or(lo, |k| lo + k);
    let hi = (at + 32 * 1024).min(bytes.len());
    let doc_end = find_sub(&bytes[at..hi], b"\n---").map_or(hi, |k| at + k);
    *done = doc_end;
    let mut in_data = false;
    let mut pos = doc_start;
    while pos < doc_end {
        let le = bytes[pos..doc_end]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(doc_end, |k| pos + k);
        let line = &bytes[pos..le];
        let indented = line.first().is_some_and(|&b| b == b' ' || b == b'\t');
        if !indented {
            let t = trim_ascii(line);
            in_data = t == b"data:" || t == b"stringData:";
        } else if in_data && let Some(colon) = line.iter().position(|&b| b == b':') {
            let key_start = pos
                + line
                    .iter()
                    .position(|&b| b != b' ' && b != b'\t')
                    .unwrap_or(0);
            let mut vs = pos + colon + 1;
            let mut ve = le;
            while vs < ve && matches!(bytes[vs], b' ' | b'\t' | b'"' | b'\'') {
                vs += 1;
            }
            while ve > vs && matches!(bytes[ve - 1], b' ' | b'\t' | b'\r' | b'"' | b'\'') {
                ve -= 1;
            }
            let v = &bytes[vs..ve];
            let block_scalar = v == b"|" || v == b">" || v == b"|-" || v == b">-";
            if v.len() >= 4
                && !block_scalar
                && !entropy::is_value_placeholder(v)
                && !value_is_code(v)
            {
                out.push(Raw {
                    rule: rule_idx,
                    snippet_start: key_start,
                    span: vs..ve,
                });
            }
        }
        pos = le + 1;
    }
}

fn find_last_doc_sep(hay: &[u8]) -> Option<usize> {
    hay.windows(4).rposition(|w| w == b"\n---").map(|k| k + 1)
}

fn trim_ascii(s: &[u8]) -> &[u8] {
    let a = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let b = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(a, |k| k + 1);
    &s[a..b]
}

/// Spans of PEM blocks (certificates, public keys; private ones too): binary hints stay quiet
/// there. A block ends at its END line or at the next BEGIN, so the work is linear.
fn pem_spans(content: &str) -> Vec<Range<usize>> {
    let bytes = content.as_bytes();
    let begins: Vec<usize> = memchr::memmem::find_iter(bytes, b"-----BEGIN ").collect();
    let mut out = Vec::with_capacity(begins.len());
    for (k, &at) in begins.iter().enumerate() {
        let limit = begins
            .get(k + 1)
            .copied()
            .unwrap_or(bytes.len())
            .min(at + 256 * 1024);
        let end = find_sub(&bytes[at + 11..limit], b"-----END ").map_or(limit, |e| {
            let e = at + 11 + e + 9;
            bytes[e..limit]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(limit, |j| e + j)
        });
        out.push(at..end);
    }
    out
}

/// All findings with their spans, overlap-resolved, in content order.
fn detect(content: &str, c: &Classifier) -> Vec<(Raw, u32)> {
    let bytes = content.as_bytes();
    let n_rules = c.rules.len();
    let mut cur: Vec<Option<Win>> = vec![None; n_rules];
    let mut wins: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n_rules];
    if let Some(ac) = &c.keywords {
        for m in ac.find_overlapping_iter(bytes) {
            let p = m.start();
            for k in &c.keyword_rules[m.pattern().as_usize()] {
                let r = k.rule;
                if k.exact.as_deref().is_some_and(|e| bytes[m.range()] != *e) {
                    continue;
                }
                // Hits that cannot start a match are dropped before any window is built; both
                // tests are implied by the rule's regex, so no finding is lost.
                if k.at_start && p > 0 && is_token_byte(bytes[p - 1]) {
                    continue;
                }
                if c.rules[r].check == Check::Email && !email_hit(bytes, p) {
                    continue;
                }
                add_hit(&mut cur, &mut wins, bytes, r, p, c.rules[r].window);
            }
        }
    }
    for (r, slot) in cur.iter_mut().enumerate() {
        if let Some(w) = slot.take() {
            wins[r].push((w.s, w.e));
        }
    }
    for &r in &c.unkeyed {
        if !bytes.is_empty() {
            wins[r].push((0, bytes.len()));
        }
    }
    let mut raws: Vec<Raw> = Vec::new();
    let mut k8s_done = 0usize;
    for (ri, rule) in c.rules.iter().enumerate() {
        let Some(re) = &rule.regex else { continue };
        for &(s, e) in &wins[ri] {
            let hay = &bytes[s..e];
            if rule.needs_assign && !hay.iter().any(|&b| b == b'=' || b == b':') {
                continue;
            }
            if rule.has_groups {
                // Resume after the secret, not after the whole match: the trailing context byte
                // a rule consumed may be the leading context of the next token.
                let mut at = 0;
                while at <= hay.len() {
                    let Some(caps) = re.captures_at(hay, at) else {
                        break;
                    };
                    let Some(m) = caps.get(0) else { break };
                    let next = caps.name("s").map_or(m.end(), |g| g.end());
                    verify(ri, rule, bytes, &caps, s, &mut k8s_done, &mut raws);
                    at = next.max(at + 1);
                }
            } else {
                for m in re.find_iter(hay) {
                    let span = s + m.start()..s + m.end();
                    let v = &bytes[span.clone()];
                    let keep = match rule.check {
                        Check::Token => !entropy::is_token_placeholder(v),
                        Check::PrivateKey => {
                            if let Some(end) = private_key_end(bytes, span.end) {
                                raws.push(Raw {
                                    rule: ri,
                                    snippet_start: span.start,
                                    span: span.start..end,
                                });
                            }
                            false
                        }
                        Check::Putty | Check::K8sSecret => {
                            if let Some(caps) = re.captures_at(hay, m.start()) {
                                verify(ri, rule, bytes, &caps, s, &mut k8s_done, &mut raws);
                            }
                            false
                        }
                        _ => true,
                    };
                    if keep {
                        raws.push(Raw {
                            rule: ri,
                            snippet_start: span.start,
                            span,
                        });
                    }
                }
            }
        }
    }
    // scanners
    let scanner_rule = |s: Scanner| c.scanners.iter().find(|(k, _)| *k == s).map(|(_, i)| *i);
    let want_numbers = [Scanner::Ssn, Scanner::Card, Scanner::Phone, Scanner::Iban]
        .iter()
        .any(|&s| scanner_rule(s).is_some());
    if want_numbers {
        pii::scan_numbers(bytes, |kind, span| {
            let s = match kind {
                pii::NumberKind::Ssn => Scanner::Ssn,
                pii::NumberKind::Card => Scanner::Card,
                pii::NumberKind::Phone => Scanner::Phone,
                pii::NumberKind::Iban => Scanner::Iban,
            };
            if let Some(ri) = scanner_rule(s) {
                raws.push(Raw {
                    rule: ri,
                    snippet_start: span.start,
                    span,
                });
            }
        });
    }
    let want_binary = [
        Scanner::Base64Blob,
        Scanner::Base64Wrapped,
        Scanner::HexBlob,
        Scanner::NonPrintable,
    ]
    .iter()
    .any(|&s| scanner_rule(s).is_some());
    if want_binary {
        let exclude = if memchr::memmem::find(bytes, b"-----BEGIN ").is_some() {
            pem_spans(content)
        } else {
            Vec::new()
        };
        binary::scan(bytes, &exclude, |kind, span| {
            let s = match kind {
                binary::BinaryKind::Base64Blob => Scanner::Base64Blob,
                binary::BinaryKind::Base64Wrapped => Scanner::Base64Wrapped,
                binary::BinaryKind::HexBlob => Scanner::HexBlob,
                binary::BinaryKind::NonPrintable => Scanner::NonPrintable,
            };
            if let Some(ri) = scanner_rule(s) {
                raws.push(Raw {
                    rule: ri,
                    snippet_start: span.start,
                    span,
                });
            }
        });
    }
    // snap to char boundaries, then resolve overlaps: lower tier, then earlier rule, wins
    for r in &mut raws {
        r.span = floor_boundary(content, r.span.start)..ceil_boundary(content, r.span.end);
        r.snippet_start = floor_boundary(content, r.snippet_start.min(r.span.start));
    }
    raws.sort_by_key(|r| (c.rules[r.rule].tier, r.rule, r.span.start));
    let mut kept: BTreeMap<usize, usize> = BTreeMap::new();
    let mut out: Vec<Raw> = Vec::new();
    for r in raws {
        if r.span.is_empty() {
            continue;
        }
        let overlaps = kept
            .range(..r.span.end)
            .next_back()
            .is_some_and(|(_, &e)| e > r.span.start);
        if overlaps {
            continue;
        }
        kept.insert(r.span.start, r.span.end);
        out.push(r);
    }
    out.sort_by_key(|r| r.span.start);
    // line numbers: newlines counted up to each finding, in order, once
    let (mut line, mut counted) = (1usize, 0usize);
    out.into_iter()
        .map(|r| {
            line += memchr::memchr_iter(b'\n', &bytes[counted..r.span.start]).count();
            counted = r.span.start;
            (r, u32::try_from(line).unwrap_or(u32::MAX))
        })
        .collect()
}

/// The reported snippet: at most 16 characters from `start`, cut before the second half of the
/// secret so a short secret is never shown whole.
fn snippet(content: &str, start: usize, span: &Range<usize>) -> String {
    let secret_half = span.start + (span.end - span.start) / 2;
    let limit = floor_boundary(content, secret_half.max(start));
    let text = content.get(start..limit).unwrap_or("");
    let cut: String = text.chars().take(SNIPPET_CHARS).collect();
    cut.replace('\n', " ")
}

/// Findings of `content` under `classifier`, each with the byte span of its secret.
pub fn findings(content: &str, classifier: &Classifier) -> Vec<Finding> {
    detect(content, classifier)
        .into_iter()
        .map(|(r, line)| {
            let rule = &classifier.rules[r.rule];
            Finding {
                kind: rule.family.clone(),
                pattern: rule.name.clone(),
                r#match: snippet(content, r.snippet_start, &r.span),
                line,
                span: r.span,
            }
        })
        .collect()
}

/// Size of the content as the original measured it: lines and the longest line in characters.
fn size_metrics(content: &str) -> (usize, usize) {
    if content.is_empty() {
        return (0, 0);
    }
    let (mut lines, mut max_len, mut start) = (0usize, 0usize, 0usize);
    let mut measure = |line: &str| {
        // a line no longer in bytes than the longest so far cannot be longer in characters
        if line.len() > max_len {
            max_len = max_len.max(line.chars().count());
        }
    };
    for nl in memchr::memchr_iter(b'\n', content.as_bytes()) {
        lines += 1;
        measure(content.get(start..nl).unwrap_or(""));
        start = nl + 1;
    }
    if start < content.len() {
        lines += 1;
        measure(content.get(start..).unwrap_or(""));
    }
    (lines, max_len)
}

/// The paper's per-family contribution: `w * min(1.5, 1 + 0.25 (n - 1))`.
pub fn family_contribution(weight: f64, distinct_matches: usize) -> f64 {
    if distinct_matches == 0 {
        return 0.0;
    }
    weight * (1.0 + 0.25 * (distinct_matches as f64 - 1.0)).min(1.5)
}

/// The distinct secrets of each family among `found` (findings of `content`).
fn per_family<'a>(content: &'a str, found: &'a [Finding]) -> BTreeMap<&'a str, HashSet<&'a str>> {
    let mut out: BTreeMap<&str, HashSet<&str>> = BTreeMap::new();
    for f in found {
        let text = content.get(f.span.clone()).unwrap_or("");
        out.entry(f.kind.as_str()).or_default().insert(text);
    }
    out
}

/// The paper's equation over a subset of the findings of `content`, without the size rules
/// (what an edit introduces is scored this way), clamped and rounded like [`risk_score`].
pub fn findings_score(content: &str, found: &[Finding], classifier: &Classifier) -> f64 {
    let score: f64 = per_family(content, found)
        .iter()
        .map(|(fam, set)| family_contribution(classifier.weight(fam), set.len()))
        .sum();
    (score.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0
}

/// Scores `content` (the paper's `rw.risk_score`). Pure: no I/O, no clock.
pub fn risk_score(content: &str, classifier: &Classifier) -> RiskReport {
    let detected = findings(content, classifier);
    let bytes = content.len();
    let (line_count, max_line_len) = size_metrics(content);
    let per_family = per_family(content, &detected);
    let mut score: f64 = per_family
        .iter()
        .map(|(fam, set)| family_contribution(classifier.weight(fam), set.len()))
        .sum();
    let size_rules: [(&str, usize, usize, f64, &str); 4] = [
        ("total_bytes", bytes, 100_000, 0.15, "split"),
        ("total_bytes", bytes, 500_000, 0.30, "split"),
        ("max_line_len", max_line_len, 2_000, 0.20, "escape"),
        ("line_count", line_count, 5_000, 0.10, "split"),
    ];
    let mut actions = Vec::new();
    let redact_targets: Vec<String> = per_family
        .keys()
        .filter(|f| **f != "binary_hint")
        .map(|f| (*f).to_string())
        .collect();
    if !redact_targets.is_empty() {
        actions.push(SuggestedAction {
            action: "redact".into(),
            targets: Some(redact_targets),
            reason: None,
        });
    }
    if per_family.contains_key("binary_hint") {
        actions.push(SuggestedAction {
            action: "split".into(),
            targets: None,
            reason: Some("binary_content_detected".into()),
        });
    }
    for (key, value, gt, add, action) in size_rules {
        if value > gt {
            score += add;
            actions.push(SuggestedAction {
                action: action.into(),
                targets: None,
                reason: Some(format!("{key}_{value}_exceeds_{gt}")),
            });
        }
    }
    let score = (score.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0;
    RiskReport {
        score,
        verdict: classifier.verdict(score),
        bytes,
        line_count,
        max_line_len,
        detected_patterns: detected,
        suggested_actions: actions,
    }
}

pub mod stream;

#[cfg(test)]
pub(crate) mod tests;
