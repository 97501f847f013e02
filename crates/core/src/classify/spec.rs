//! What a rule of the L0 classifier is: its literal keywords, its regex, the check that
//! confirms a match ([`Check`]), the span its regex runs on ([`Window`]), its precedence
//! ([`Tier`]), the gate a keyword hit must pass before the rule wakes ([`Gate`]), or the
//! hand-written scanner that replaces the regex ([`Scanner`]); and the builders the rule
//! tables use ([`rule`], [`tok`]). The tables themselves are `rules` (and the `vendors` and
//! `prefixes` it gathers); `compile` turns them into the classifier.

/// How a match is confirmed after the regex matched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Check {
    /// Nothing beyond the regex.
    None,
    /// Vendor token: not a placeholder body.
    Token,
    /// Generic assignment: not a placeholder, not an identifier, entropy >= the given bits.
    Entropy(f64),
    /// Password literal: not a placeholder, two character classes at least.
    Password,
    /// Three base64url segments whose header decodes to JSON with `alg`.
    Jwt,
    /// Five base64url segments (JWE compact form) whose header decodes to JSON with `alg` or `enc`.
    Jwe,
    /// A private-key header followed by a body; the span grows to the END line.
    PrivateKey,
    /// PuTTY key file: needs `Private-Lines:`; the span grows to `Private-MAC:`.
    Putty,
    /// base64 of `user:password`.
    BasicAuth,
    /// URL credential: password differs from user and is not a placeholder.
    UrlPassword,
    /// Email outside reserved domains.
    Email,
    /// `kind: Secret` manifest: each value under `data:`/`stringData:` is a finding.
    K8sSecret,
    /// Redacted vendor prefix (always reported).
    Redacted,
    /// A credential named in prose (`the password is ...`): letters and digits, no code, no path.
    Prose,
    /// A private-key header without a real body (the body removed or elided): a redacted shape.
    PemRedacted,
    /// A JWT cut down to its header (`prefixes::cut_after_header`): a redacted shape.
    JwtHeader,
    /// A credential value (an HTTP header's, a bearer token, npm auth): as `Entropy`, and a UUID
    /// that is not a placeholder passes too (many services issue UUIDs as keys).
    Credential(f64),
    /// A vendor token whose prefix is short or a word (`ser.`, `cio`): not a placeholder, and
    /// the body after the first n bytes not an identifier (`ser.serializeStructVariant`).
    Opaque(usize),
    /// A UUID beside a platform's key name (`HEROKU_API_KEY`): the key names a secret and no
    /// identifier (`HEROKU_APP_ID`), the UUID is not a placeholder.
    PlatformUuid,
}

/// Where a rule's regex runs around a keyword hit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Window {
    /// The line of the hit (bounded on very long lines).
    Line,
    /// From the line start to this many bytes after the hit (multi-line shapes).
    Forward(usize),
}

/// Precedence when findings overlap: a lower tier wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tier {
    Vendor = 0,
    Structural = 1,
    Redacted = 2,
    Generic = 3,
    Pii = 4,
    Hint = 5,
}

/// A test of the bytes around a keyword hit that every match of the rule implies, run before a
/// window is opened: a hit that fails it cannot be inside a match, so dropping it loses nothing
/// and spares a regex search over its line. The bounds are the regexes' own, with slack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// No test beyond the keyword.
    None,
    /// A key name (`key = value`): after the keyword, at most [`GATE_NAME_TAIL`] name bytes,
    /// an optional quote and `]`, at most 4 spaces, then `=` or `:`.
    Assign,
    /// A quoted call argument (`("password", "...")`): a quote after at most
    /// [`GATE_NAME_TAIL`] name bytes, and one before at most [`GATE_NAME_HEAD`] name bytes.
    CallPair,
    /// A command-line flag (`--db-password=...`): `--` within [`GATE_NAME_HEAD`] flag bytes
    /// before the keyword; `=`, a space or a tab after at most [`GATE_NAME_TAIL`] flag bytes.
    CliFlag,
    /// A whole word (`\bsecret\b`, `\bpasswords?\b`): no word byte before the keyword, and
    /// none after it but an optional plural `s`.
    Word,
    /// A scheme separator `://` followed by userinfo: an `@` before any space, `/`, quote or
    /// angle bracket.
    Userinfo,
    /// A scheme word followed by a space or a quote (`Basic dXN...`, `Bearer ...`).
    SpaceOrQuote,
    /// The keyword starts a token: no token byte (`[A-Za-z0-9_-]`) before it (for a rule whose
    /// regex opens with an alternation, which `keyword_starts_token` cannot see through).
    TokenStart,
    /// The keyword starts a token and a UUID follows it (`sdk-` + UUID).
    UuidAfter,
    /// The keyword starts a token and the byte `.1` lies `.0` bytes after it (Airtable's `pat`,
    /// 14 characters, `.`).
    ByteAt(usize, u8),
    /// The keyword starts a token and this many letters or digits follow it (a token body
    /// after a prefix that ordinary text holds: `secret_`, `sk-`, `cio`).
    RunAfter(usize),
}

/// Name bytes a key may carry after its keyword (`secret_key_base`: `_key_base`); the regexes
/// allow at most 21.
pub(crate) const GATE_NAME_TAIL: usize = 24;
/// Name bytes a key may carry before its keyword; the regexes allow at most 40.
pub(crate) const GATE_NAME_HEAD: usize = 44;

/// Detectors that are not regexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scanner {
    Ssn,
    Card,
    Phone,
    Iban,
    Base64Blob,
    Base64Wrapped,
    HexBlob,
    NonPrintable,
    DiscordBot,
}

#[derive(Debug, Clone)]
pub(crate) struct RuleSpec {
    pub name: String,
    pub family: String,
    /// Literal keywords (ASCII case-insensitive unless `case_sensitive`).
    pub keywords: Vec<&'static str>,
    pub case_sensitive: bool,
    /// Empty for scanners; empty keywords with a regex = run on the whole content.
    pub regex: String,
    pub check: Check,
    pub window: Window,
    pub tier: Tier,
    pub scanner: Option<Scanner>,
    /// What a keyword hit must have around it to wake the rule.
    pub gate: Gate,
}

pub(super) fn rule(name: &str, family: &str, keywords: &[&'static str], regex: &str) -> RuleSpec {
    RuleSpec {
        name: name.to_string(),
        family: family.to_string(),
        keywords: keywords.to_vec(),
        case_sensitive: false,
        regex: regex.to_string(),
        check: Check::Token,
        window: Window::Line,
        tier: Tier::Vendor,
        scanner: None,
        gate: Gate::None,
    }
}

impl RuleSpec {
    pub(super) fn check(mut self, c: Check) -> Self {
        self.check = c;
        self
    }
    pub(super) fn tier(mut self, t: Tier) -> Self {
        self.tier = t;
        self
    }
    pub(super) fn window(mut self, w: Window) -> Self {
        self.window = w;
        self
    }
    pub(super) fn gate(mut self, g: Gate) -> Self {
        self.gate = g;
        self
    }
    pub(super) fn cs(mut self) -> Self {
        self.case_sensitive = true;
        self
    }
}

pub(super) fn scanner(name: &str, family: &str, s: Scanner, tier: Tier) -> RuleSpec {
    RuleSpec {
        name: name.to_string(),
        family: family.to_string(),
        keywords: Vec::new(),
        case_sensitive: false,
        regex: String::new(),
        check: Check::None,
        window: Window::Line,
        tier,
        scanner: Some(s),
        gate: Gate::None,
    }
}

/// Token bodies end at a non-token byte (or the end).
pub(crate) const END: &str = r"(?:[^A-Za-z0-9_\-]|$)";
/// Tokens start at a non-token byte (or the start).
pub(crate) const BEGIN: &str = r"(?:^|[^A-Za-z0-9_\-])";

pub(super) fn tok(body: &str) -> String {
    format!("{BEGIN}(?P<s>{body}){END}")
}
