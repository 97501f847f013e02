//! Confirming a regex match before it becomes a finding: the check each rule names (entropy and
//! benign-key gates for generic secrets, weak-password and placeholder lists, reportable email
//! domains, decodable JWT headers and Basic credentials, a real private-key body, PuTTY and
//! Kubernetes `Secret` blocks). A confirmed match is a [`Raw`]: the rule, where its snippet starts
//! and the span of the secret.

use std::ops::Range;

use super::bytes::find_sub;
use super::compile::{CompiledRule, Locations, Slots};
use super::gates::{is_name_byte, skip_back};
use super::keys::{benign_key, is_live_uuid, is_uuid, platform_uuid_key, secret_key};
use super::spec::Check;
use super::vendors::names_uuid_platform;
use super::{entropy, pii, prefixes};

/// A confirmed match before overlap resolution.
#[derive(Debug, Clone)]
pub(super) struct Raw {
    pub(super) rule: usize,
    /// Where the reported snippet starts.
    pub(super) snippet_start: usize,
    /// The secret (redacted part).
    pub(super) span: Range<usize>,
    /// A vendor's documentation example rather than a live secret (reported as `example_key`).
    pub(super) example: bool,
}

/// The groups of one match that the checks read, as byte ranges of the content.
pub(super) struct Groups {
    pub(super) whole: Range<usize>,
    /// The secret: group `s`, else `s2`, else `secret`.
    pub(super) secret: Option<Range<usize>>,
    pub(super) key: Option<Range<usize>>,
    pub(super) user: Option<Range<usize>>,
    pub(super) domain: Option<Range<usize>>,
}

impl Groups {
    /// The groups of the match in `locs` (of a search of a window starting at `base`); `None`
    /// when `locs` holds no match.
    pub(super) fn of(locs: &Locations, slots: Slots, base: usize) -> Option<Groups> {
        let at = |i: Option<usize>| i.and_then(|i| locs.get(i)).map(|(s, e)| base + s..base + e);
        Some(Groups {
            whole: at(Some(0))?,
            secret: at(slots.s)
                .or_else(|| at(slots.s2))
                .or_else(|| at(slots.secret)),
            key: at(slots.k),
            user: at(slots.u),
            domain: at(slots.d),
        })
    }
}

const WEAK_PASSWORDS: &[&str] = &[
    "pass", "pw", "pwd", "passw0rd", "secret", "changeme", "xxx", "root", "toor", "guest", "user",
    "postgres", "mysql", "redis", "123", "1234", "12345", "123456", "pass123", "example",
];

/// A path or a URL (`/usr/lib`, `./x`, `~/.ssh`, `https://...`), not a secret.
/// A base64 value may start with `/` too: a path has no capitals, or several `/` and no `+`/`=`.
fn is_path_or_url(v: &[u8]) -> bool {
    if find_sub(v, b"://").is_some() {
        return true;
    }
    // a Windows path, or an object key ending in a file extension (`app/build-17.war`)
    let drive = v.len() > 2 && v[0].is_ascii_alphabetic() && v[1] == b':' && v[2] == b'\\';
    let file_key = v.contains(&b'/')
        && v.rsplit(|&b| b == b'.').next().is_some_and(|ext| {
            (1..=4).contains(&ext.len())
                && ext
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
        && v.contains(&b'.');
    // a directory (`dist/`, `build/Release/`, `out/v1.2/`); base64 that happens to end with
    // `/` has capitals and digits both
    let directory = v.ends_with(b"/")
        && !(v.iter().any(u8::is_ascii_uppercase) && v.iter().any(u8::is_ascii_digit));
    if drive || file_key || directory {
        return true;
    }
    let rooted = [&b"/"[..], b"./", b"../", b"~/"]
        .iter()
        .any(|p| v.starts_with(p));
    let slashes = v.iter().filter(|&&b| b == b'/').count();
    rooted
        && (!v.iter().any(u8::is_ascii_uppercase)
            || (slashes >= 3 && !v.iter().any(|&b| b == b'+' || b == b'=')))
}

/// The entropy a value must reach: a hex value draws from 16 symbols, so its ceiling is 4 bits
/// and a random 32-digit one often lands near 3.6; it is held to 3.0 instead.
fn entropy_floor(v: &[u8], min: f64) -> f64 {
    if v.len() >= 24 && v.iter().all(u8::is_ascii_hexdigit) {
        min.min(3.0)
    } else {
        min
    }
}

fn value_is_code(v: &[u8]) -> bool {
    v.iter()
        .any(|b| matches!(b, b'(' | b')' | b'[' | b']' | b'{' | b'}'))
        || find_sub(v, b"::").is_some()
        // the rest of a path (`onepass::Builder` read as `pass` `:` `:Builder`)
        || v.first() == Some(&b':')
        || is_numeric_literal(v)
}

/// A value followed by `=` (not `==` or `=>`) is the type of a declaration, not its value
/// (`PrivateKeyExportable: X509CertificateTemplatePrivateKeyFlag = 16i32;`).
fn is_type_annotation(bytes: &[u8], end: usize) -> bool {
    let rest = &bytes[end.min(bytes.len())..];
    let at = rest
        .iter()
        .take(8)
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(rest.len());
    rest.get(at) == Some(&b'=') && !matches!(rest.get(at + 1), Some(b'=' | b'>'))
}

/// An integer literal with a type suffix or a radix prefix and at most 64 bits (`16384u32`,
/// `0xC000006B_u32`, `0x1F`, `42UL`): the value of a constant whose name holds `PASSWORD` or `KEY` in an
/// API binding, never a credential. Plain digit runs are left to the other checks.
pub(super) fn is_numeric_literal(v: &[u8]) -> bool {
    const SUFFIXES: &[&[u8]] = &[
        b"u128", b"i128", b"usize", b"isize", b"u16", b"u32", b"u64", b"i16", b"i32", b"i64",
        b"f32", b"f64", b"u8", b"i8", b"ull", b"ul", b"ll", b"u", b"l",
    ];
    let lower = v.to_ascii_lowercase();
    let (digits, radix): (&[u8], fn(&u8) -> bool) = match lower.get(..2) {
        Some(b"0x") => (&lower[2..], u8::is_ascii_hexdigit),
        Some(b"0b") | Some(b"0o") => (&lower[2..], u8::is_ascii_digit),
        _ => (&lower[..], u8::is_ascii_digit),
    };
    let prefixed = digits.len() < lower.len();
    // the longest suffix first: `u32` before `u`
    let (body, suffixed) = SUFFIXES
        .iter()
        .find(|s| digits.len() > s.len() && digits.ends_with(s))
        .map_or((digits, false), |s| {
            (&digits[..digits.len() - s.len()], true)
        });
    let body = body.strip_suffix(b"_").unwrap_or(body);
    // a prefix alone marks a literal only up to 64 bits: `0x` + 64 hex digits is an Ethereum
    // private key as `.env` files hold it
    (suffixed || (prefixed && body.len() <= 16))
        && body.first().is_some_and(radix)
        && body.iter().all(|b| radix(b) || *b == b'_')
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
pub(super) fn verify(
    rule_idx: usize,
    r: &CompiledRule,
    bytes: &[u8],
    g: &Groups,
    k8s_done: &mut usize,
    out: &mut Vec<Raw>,
) {
    let whole = g.whole.clone();
    let span = g.secret.clone().unwrap_or_else(|| whole.clone());
    let v = &bytes[span.clone()];
    let key = g.key.clone();
    let snippet_start = key.as_ref().map_or(span.start, |k| k.start);
    let push_as = |out: &mut Vec<Raw>, span: Range<usize>, example: bool| {
        out.push(Raw {
            rule: rule_idx,
            snippet_start,
            span,
            example,
        })
    };
    let push = |out: &mut Vec<Raw>, span: Range<usize>| push_as(out, span, false);
    match r.check {
        Check::None | Check::Redacted => push(out, span),
        Check::PemRedacted => {
            if private_key_end(bytes, whole.end).is_none() {
                push(out, whole);
            }
        }
        Check::Prose => {
            // the whole name the word ends (`X-CSRF-Token: ...`) may say it is no secret
            if let Some(k) = &key {
                let start = skip_back(bytes, k.start, 64, is_name_byte);
                if benign_key(&bytes[start..k.end]) {
                    return;
                }
            }
            let letters = v.iter().any(u8::is_ascii_alphabetic);
            let digits = v.iter().any(u8::is_ascii_digit);
            let classes = entropy::classes(v);
            if letters
                && digits
                && (classes >= 3 || v.len() >= 16)
                && !is_path_or_url(v)
                && !value_is_code(v)
                && !is_uuid(v)
                && !v.starts_with(b"0x")
                && !entropy::is_value_placeholder(v)
                && !entropy::looks_like_identifier(v)
                && entropy::shannon(v) >= 3.0
            {
                push(out, span);
            }
        }
        Check::Token => {
            if !entropy::is_token_placeholder(v) {
                push(out, span);
            } else if entropy::is_documentation_example(v) {
                push_as(out, span, true);
            }
        }
        Check::Opaque(n) => {
            let body = v.get(n..).unwrap_or_default();
            if !entropy::is_token_placeholder(v) && !entropy::looks_like_identifier(body) {
                push(out, span);
            }
        }
        // the platform named in the key or, nested, on the parent key the match holds
        Check::PlatformUuid => {
            if key.is_some_and(|k| secret_key(&bytes[k]))
                && names_uuid_platform(&bytes[whole.clone()])
                && is_live_uuid(v)
            {
                push(out, span);
            }
        }
        Check::JwtHeader => {
            if prefixes::is_jwt_header(v) && prefixes::cut_after_header(bytes, span.end) {
                push(out, span);
            }
        }
        Check::Entropy(min) | Check::Credential(min) => {
            if key.as_ref().is_some_and(|k| benign_key(&bytes[k.clone()]))
                || is_type_annotation(bytes, span.end)
                || prefixes::is_reduced_jwt(bytes, span.clone())
            {
                return;
            }
            if matches!(r.check, Check::Credential(_)) && is_uuid(v) {
                if is_live_uuid(v) {
                    push(out, span);
                }
                return;
            }
            let letters = v.iter().any(u8::is_ascii_alphabetic);
            let digits = v.iter().any(u8::is_ascii_digit);
            let strong = digits || (entropy::classes(v) >= 3 && v.len() >= 20);
            if letters
                && strong
                && !is_uuid(v)
                && !is_path_or_url(v)
                && !v.iter().any(|b| matches!(b, b'{' | b'}' | b'[' | b']' | b'\\'))
                && !v.starts_with(b"arn:")
                && find_sub(v, b"::").is_none()
                && !is_numeric_literal(v)
                // a digitless value with `/` or `.` is a namespace or a path, not a key
                && (digits || !v.iter().any(|&b| b == b'/' || b == b'.'))
                && !entropy::looks_like_identifier(v)
                && entropy::shannon(v) >= entropy_floor(v, min)
            {
                if !entropy::is_value_placeholder(v) {
                    push(out, span);
                } else if entropy::is_documentation_example(v) {
                    push_as(out, span, true);
                }
            }
        }
        Check::Password => {
            if key.as_ref().is_some_and(|k| benign_key(&bytes[k.clone()]))
                || is_type_annotation(bytes, span.end)
            {
                return;
            }
            // a UUID where only a password can stand (netrc, JDBC, ODBC, SQL), or beside a
            // platform's key name
            if is_uuid(v) {
                let expected = key
                    .as_ref()
                    .is_none_or(|k| platform_uuid_key(&bytes[k.clone()]));
                if expected && is_live_uuid(v) {
                    push(out, span);
                }
                return;
            }
            let lower = v.to_ascii_lowercase();
            let weak = WEAK_PASSWORDS.iter().any(|w| lower == w.as_bytes());
            if v.len() >= 6
                && !weak
                && !value_is_code(v)
                && !is_uuid(v)
                && !is_path_or_url(v)
                && !entropy::is_value_placeholder(v)
                && !entropy::looks_like_identifier(v)
                && entropy::classes(v) >= 2
                && entropy::shannon(v) >= 2.0
            {
                push(out, span);
            }
        }
        Check::UrlPassword => {
            let user = g.user.clone().map(|u| &bytes[u]);
            let lower = v.to_ascii_lowercase();
            let weak = WEAK_PASSWORDS.iter().any(|w| lower == w.as_bytes());
            if user != Some(v) && !weak && !value_is_code(v) && !entropy::is_value_placeholder(v) {
                push(out, span);
            }
        }
        Check::Email => {
            let (Some(u), Some(d)) = (g.user.clone(), g.domain.clone()) else {
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
        Check::Jwe => {
            let header = v.split(|&b| b == b'.').next().and_then(b64_decode);
            let ok = header.is_some_and(|h| {
                h.first() == Some(&b'{')
                    && (find_sub(&h, b"\"alg\"").is_some() || find_sub(&h, b"\"enc\"").is_some())
            });
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
                    example: false,
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
                    example: false,
                });
            }
        }
        Check::K8sSecret => k8s_values(rule_idx, bytes, whole.start, k8s_done, out),
    }
}

/// End of a private-key block starting after the header ending at `he`, if it has a real body.
/// The body never extends past the next `-----BEGIN`, so bodies are disjoint and the total work
/// stays linear even for a file made of headers.
pub(super) fn private_key_end(bytes: &[u8], he: usize) -> Option<usize> {
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
                    example: false,
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
