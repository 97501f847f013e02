//! Vendor key prefixes that stand for a key with no key after them: the paper's incident (a
//! draft holding `Authorization: Bearer sk-ant-oat01-{REDACTED}` was silently rejected). A
//! prefix followed by a redaction marker (`{REDACTED}`, a run of `X`, four characters and an
//! ellipsis), a prefix named in prose (`tokens of this kind start with sk-ant-`, in Markdown or
//! in LaTeX with `_` written `\_`), and a JWT cut down to its header are each a finding of the
//! family `redacted_prefix`: reported, naming the vendor, weighing only enough for `low` (no
//! secret is left, but a filter may still reject the draft).
//!
//! A live token with the same prefix is the vendor rule's (a lower tier wins an overlap); the
//! generic rules leave a value that is a JWT header alone to the rule here ([`is_reduced_jwt`]),
//! so a cut-down JWT after `token=` or `Bearer` scores low, not medium.

use std::ops::Range;

use super::bytes::find_sub;
use super::entropy;
use super::spec::{BEGIN, Check, Gate, RuleSpec, Tier, rule, tok};

/// `(vendor, prefix, the prefix as LaTeX writes it in running text, named alone)`. A prefix
/// followed by a redaction marker is reported; one `named alone` also with nothing after it
/// but an optional version (`sk-ant-api03-`), in prose. Longer prefixes first: on overlap the
/// earlier rule wins. Not named alone: a prefix that is a word (`ASIA`), which prose uses for
/// other things (in quotes it is).
pub(crate) const REDACTABLE_PREFIXES: &[(&str, &str, &str, bool)] = &[
    ("anthropic", "sk-ant-", "", true),
    ("openai_project", "sk-proj-", "", true),
    ("openai_service_account", "sk-svcacct-", "", true),
    ("openai_admin", "sk-admin-", "", true),
    ("openrouter", "sk-or-v1-", "", true),
    ("stripe_live", "sk_live_", "sk\\_live\\_", true),
    ("stripe_test", "sk_test_", "sk\\_test\\_", true),
    ("stripe_restricted", "rk_live_", "rk\\_live\\_", true),
    ("stripe_restricted_test", "rk_test_", "rk\\_test\\_", true),
    ("stripe_webhook", "whsec_", "whsec\\_", true),
    ("openai", "sk-", "", true),
    (
        "github_fine_grained",
        "github_pat_",
        "github\\_pat\\_",
        true,
    ),
    ("github_classic", "ghp_", "ghp\\_", true),
    ("github_oauth", "gho_", "gho\\_", true),
    ("github_user_to_server", "ghu_", "ghu\\_", true),
    ("github_server_to_server", "ghs_", "ghs\\_", true),
    ("github_refresh", "ghr_", "ghr\\_", true),
    ("gitlab", "glpat-", "", true),
    ("gitlab_runner", "glrt-", "", true),
    ("gitlab_deploy", "gldt-", "", true),
    ("gitlab_trigger", "glptt-", "", true),
    ("gitlab_feed", "glft-", "", true),
    ("gitlab_oauth_app", "gloas-", "", true),
    ("slack_bot", "xoxb-", "", true),
    ("slack_user", "xoxp-", "", true),
    ("slack_app", "xapp-", "", true),
    ("slack_refresh", "xoxe-", "", true),
    ("slack_legacy", "xoxa-", "", true),
    ("slack_legacy_workspace", "xoxs-", "", true),
    ("slack_legacy_refresh", "xoxr-", "", true),
    ("aws_access_key", "AKIA", "", true),
    ("aws_temporary_key", "ASIA", "", false),
    ("google_api", "AIza", "", true),
    ("google_oauth_client", "GOCSPX-", "", true),
    ("google_oauth", "ya29.", "", true),
    ("huggingface", "hf_", "hf\\_", true),
    ("huggingface_org", "api_org_", "api\\_org\\_", true),
    ("npm", "npm_", "npm\\_", true),
    ("pypi", "pypi-", "", true),
    ("sendgrid", "SG.", "", true),
    ("groq", "gsk_", "gsk\\_", true),
    ("xai", "xai-", "", true),
    ("perplexity", "pplx-", "", true),
    ("replicate", "r8_", "r8\\_", true),
    ("langsmith", "lsv2_", "lsv2\\_", true),
    ("digitalocean", "dop_v1_", "dop\\_v1\\_", true),
    ("digitalocean_oauth", "doo_v1_", "doo\\_v1\\_", true),
    ("digitalocean_refresh", "dor_v1_", "dor\\_v1\\_", true),
    ("shopify", "shpat_", "shpat\\_", true),
    ("shopify_shared_secret", "shpss_", "shpss\\_", true),
    ("shopify_custom_app", "shpca_", "shpca\\_", true),
    ("shopify_private_app", "shppa_", "shppa\\_", true),
    ("linear", "lin_api_", "lin\\_api\\_", true),
    ("vault", "hvs.", "", true),
    ("vault_batch", "hvb.", "", true),
    ("grafana_service_account", "glsa_", "glsa\\_", true),
    ("grafana_cloud", "glc_", "glc\\_", true),
    ("dockerhub", "dckr_pat_", "dckr\\_pat\\_", true),
    ("sentry", "sntrys_", "sntrys\\_", true),
    ("sentry_user", "sntryu_", "sntryu\\_", true),
    ("newrelic", "NRAK-", "", true),
    ("postman", "PMAK-", "", true),
    ("pulumi", "pul-", "", true),
    ("doppler", "dp.pt.", "", true),
    ("databricks", "dapi", "", true),
    ("planetscale", "pscale_", "pscale\\_", true),
    ("flyio", "fo1_", "fo1\\_", true),
    ("artifactory", "AKCp", "", true),
    ("atlassian", "ATATT3", "", true),
    ("dynatrace", "dt0c01.", "", true),
    ("sonarqube_user", "squ_", "squ\\_", true),
    ("sonarqube_project", "sqp_", "sqp\\_", true),
    ("buildkite", "bkua_", "bkua\\_", true),
    ("circleci", "CCIPAT_", "CCIPAT\\_", true),
    ("brevo", "xkeysib-", "", true),
    ("onepassword", "ops_", "ops\\_", true),
    ("posthog", "phx_", "phx\\_", true),
    ("supabase", "sbp_", "sbp\\_", true),
    ("render", "rnd_", "rnd\\_", true),
    ("notion", "ntn_", "ntn\\_", true),
    ("figma", "figd_", "figd\\_", true),
    ("tavily", "tvly-", "", true),
    ("rubygems", "rubygems_", "rubygems\\_", true),
    ("age", "AGE-SECRET-KEY-1", "", true),
    ("square_access", "sq0atp-", "", true),
    ("square_oauth", "sq0csp-", "", true),
    ("jwt", "eyJ", "", true),
];

/// A redaction marker after a prefix (and up to 24 token characters): a braced, bracketed or
/// angled word of redaction (`{REDACTED}`, `\{REDACTED\}` in LaTeX, `{{ redacted }}`,
/// `[MASKED]`, `<hidden>`, `(removed)`), the bare word in capitals (in lower case it is the
/// word of a rule's name in a placeholder: `{REDACTED:npm_redacted_prefix}`), runs of `X`,
/// `x`, `*`, `#`, bullets, and an ellipsis (`...`, `…`, LaTeX's `\ldots`).
const MARKER: &str = concat!(
    r"(?:\\?\{\{?[ \t]?(?i:redacted|masked|hidden|removed|omitted|filtered|elided|truncated)[^}\n]{0,40}\\?\}\}?",
    r"|\[(?i:redacted|masked|hidden|removed|omitted|filtered|elided|truncated)[^\]\n]{0,30}\]",
    r"|<(?i:redacted|masked|hidden|removed|omitted|filtered|elided|truncated)[^>\n]{0,30}>",
    r"|\((?i:redacted|masked|hidden|removed|omitted)\)",
    r"|REDACTED|X{4,}|x{4,}|\*{3,}|#{4,}|\.{3}|\xE2\x80\xA6|(?:\xE2\x80\xA2){3,}|(?:\xE2\x97\x8F){3,}",
    r"|\\(?:ldots|dots|textellipsis))"
);

/// A version a prefix named alone may carry (`api03-` after `sk-ant-`).
const VERSION: &str = r"(?:[A-Za-z]{2,8}[0-9]{1,3}[-_]?)?";

/// What ends a prefix named alone: no token byte. A prefix ending in `-` is not named alone at
/// the end of a line, where hyphenation breaks words (`pul-` of `pulled`).
fn alone_end(prefix: &str) -> &'static str {
    if prefix.ends_with('-') {
        // not `$` either: a window ends at the end of its line
        r"[^A-Za-z0-9_\-\n\r]"
    } else {
        r"(?:[^A-Za-z0-9_\-]|$)"
    }
}

/// The rule of one vendor's prefix: `PREFIX BODY MARKER` (group `s`) or, for a prefix named
/// alone, `PREFIX VERSION` before a non-token byte (group `s2`).
fn redacted_prefix(
    vendor: &str,
    prefix: &'static str,
    latex: &'static str,
    alone: bool,
) -> RuleSpec {
    let esc = if latex.is_empty() {
        regex::escape(prefix)
    } else {
        format!("(?:{}|{})", regex::escape(prefix), regex::escape(latex))
    };
    // a LaTeX body escapes its `_` too (`lsv2\_pt\_[REDACTED]`)
    let body = if prefix == "eyJ" {
        "[A-Za-z0-9_-]{0,60}?"
    } else {
        r"(?:[A-Za-z0-9_-]|\\_){0,24}?"
    };
    let marked = format!("(?P<s>{esc}{body}{MARKER})");
    let re = if alone {
        format!(
            "{BEGIN}(?:{marked}|(?P<s2>{esc}{VERSION}){})",
            alone_end(prefix)
        )
    } else if prefix.bytes().any(|b| b.is_ascii_uppercase()) {
        // a prefix that is also a word in capitals (`ASIA`) is named alone only in quotes
        format!("(?:{BEGIN}{marked}|[`'\"](?P<secret>{esc})[`'\"*])")
    } else {
        // a lowercase word only with a marker after it
        format!("{BEGIN}{marked}")
    };
    let mut keywords = vec![prefix];
    if !latex.is_empty() {
        keywords.push(latex);
    }
    rule(
        &format!("{vendor}_redacted_prefix"),
        "redacted_prefix",
        &keywords,
        &re,
    )
    .check(Check::Redacted)
    .tier(Tier::Redacted)
    .gate(Gate::TokenStart)
    .cs()
}

/// The index in [`REDACTABLE_PREFIXES`] of the prefix whose rule is named `name`.
pub(super) fn redactable_index(name: &str) -> Option<usize> {
    let vendor = name.strip_suffix("_redacted_prefix")?;
    REDACTABLE_PREFIXES.iter().position(|(v, ..)| *v == vendor)
}

/// The rules of this module, in precedence order: a JWT's header alone, then the prefixes.
pub(super) fn rules() -> Vec<RuleSpec> {
    let mut v = vec![
        rule(
            "jwt_header_only",
            "redacted_prefix",
            &["eyJ"],
            &tok("eyJ[A-Za-z0-9_\\-]{12,800}"),
        )
        .check(Check::JwtHeader)
        .tier(Tier::Redacted)
        .cs(),
    ];
    for (vendor, prefix, latex, alone) in REDACTABLE_PREFIXES {
        v.push(redacted_prefix(vendor, prefix, latex, *alone));
    }
    v
}

/// base64url (or standard base64) without padding, decoded; `None` when it is not.
fn b64_decode(v: &[u8]) -> Option<Vec<u8>> {
    use base64::Engine;
    let trimmed = v
        .strip_suffix(b"==")
        .or_else(|| v.strip_suffix(b"="))
        .unwrap_or(v);
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(trimmed)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(trimmed))
        .ok()
}

/// A JOSE header: base64url of a JSON object naming its algorithm or its type (`"alg"`,
/// `"typ"`: RFC 7515), whole or cut (a header truncated at any length: its decodable part).
pub(super) fn is_jwt_header(segment: &[u8]) -> bool {
    let whole = segment.len() / 4 * 4;
    segment.starts_with(b"eyJ")
        && b64_decode(&segment[..whole]).is_some_and(|h| {
            h.starts_with(b"{\"")
                && (find_sub(&h, b"\"alg\"").is_some() || find_sub(&h, b"\"typ\"").is_some())
        })
}

/// A JWT claims set: base64url of a JSON object.
fn is_json_segment(segment: &[u8]) -> bool {
    segment.starts_with(b"eyJ") && b64_decode(segment).is_some_and(|h| h.first() == Some(&b'{'))
}

/// Words that stand in for a cut segment (`.<payload>.<signature>`, `.REDACTED`).
const CUT_WORDS: &[&[u8]] = &[
    b"redacted",
    b"removed",
    b"omitted",
    b"hidden",
    b"masked",
    b"payload",
    b"signature",
    b"sig",
    b"claims",
    b"truncated",
    b"snip",
];

/// A segment after a JWT's header that holds no secret: empty (the dot followed by a marker or
/// by nothing), a placeholder, or a word that stands in for the cut part.
fn is_cut_segment(segment: &[u8]) -> bool {
    segment.is_empty()
        || entropy::is_token_placeholder(segment)
        || CUT_WORDS.iter().any(|w| segment.eq_ignore_ascii_case(w))
}

/// Whether the JWT whose header ends at `at` in `bytes` was cut down to its header (and at most
/// its claims): nothing but cut segments follow, so no signature is left. A segment is the run
/// of base64url bytes after a dot.
pub(super) fn cut_after_header(bytes: &[u8], mut at: usize) -> bool {
    let token = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-';
    let mut claims_seen = false;
    while bytes.get(at) == Some(&b'.') {
        let start = at + 1;
        let end = start + bytes[start..].iter().take_while(|b| token(b)).count();
        let segment = &bytes[start..end];
        if is_cut_segment(segment) {
            return true;
        }
        if claims_seen || !is_json_segment(segment) {
            return false;
        }
        claims_seen = true;
        at = end;
    }
    true
}

/// A value a generic rule matched at `span` (after `token=`, `Bearer`) that is a JWT cut down
/// to its header: the rule here reports it, as `low`.
pub(super) fn is_reduced_jwt(bytes: &[u8], span: Range<usize>) -> bool {
    let v = &bytes[span.clone()];
    if !v.starts_with(b"eyJ") {
        return false;
    }
    let header_end = span.start + v.iter().position(|&b| b == b'.').unwrap_or(v.len());
    is_jwt_header(&bytes[span.start..header_end]) && cut_after_header(bytes, header_end)
}
