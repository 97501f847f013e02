//! Test support for the classifier's tests, shared by the tests beside each module (`compile`,
//! `detect`, `derive`, `gates`, `keywords`, `score`, ...) and the behaviour tests declared in
//! `mod.rs` (`tests_*.rs`, which go through the public API only). Secret-shaped strings are
//! generated from a seeded PRNG at run time (prefix + random body), never written out.

use std::sync::OnceLock;

use super::{Classifier, RiskReport, Verdict, risk_score};

/// The evaluation corpus of the examples (`examples/l0_corpus`), for tests over many syntaxes.
#[path = "../../../../examples/l0_corpus/mod.rs"]
pub(in crate::classify) mod corpus;

/// The corpus's alphabets and its PRNG (splitmix64): one copy for every test.
pub(crate) use corpus::{ALNUM, B64, DIGITS, HEX, LOWER_ALNUM, Rng, UPPER_ALNUM, URLSAFE};

/// splitmix64 from `seed`, as a closure: the [`Rng`]'s sequence, for the comparisons of the
/// modules' own tests.
pub(crate) fn splitmix64(seed: u64) -> impl FnMut() -> u64 {
    let mut r = Rng(seed);
    move || r.next()
}

/// `len` bytes drawn from `alphabet` with `next` (a [`splitmix64`]).
pub(crate) fn draw(next: &mut impl FnMut() -> u64, alphabet: &[u8], len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
        .collect()
}

/// `prefix` and `n` characters of `set`, the same for the same arguments.
pub(crate) fn synth(prefix: &str, set: &[u8], n: usize) -> String {
    let mut r = Rng(prefix.len() as u64 * 7919 + n as u64);
    format!("{prefix}{}", r.chars(set, n))
}

/// The default classifier, built once.
pub(crate) fn clf() -> &'static Classifier {
    static C: OnceLock<Classifier> = OnceLock::new();
    C.get_or_init(Classifier::default)
}

/// `s` scored by the default classifier.
pub(crate) fn score(s: &str) -> RiskReport {
    risk_score(s, clf())
}

/// The rules found in `s`, in report order.
pub(crate) fn patterns(s: &str) -> Vec<String> {
    score(s)
        .detected_patterns
        .into_iter()
        .map(|f| f.pattern)
        .collect()
}

/// A PEM block of `kind` with a generated body of `body_chars` base64 characters.
pub(crate) fn pem(kind: &str, body_chars: usize) -> String {
    let body = synth("", B64, body_chars);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect();
    format!(
        "-----BEGIN {kind}-----\n{}\n-----END {kind}-----\n",
        lines.join("\n")
    )
}

/// A draft with a token, a redacted prefix, a password, a private key and an email.
pub(crate) fn mixed_draft() -> String {
    format!(
        "const key = \"{}\";\nAuthorization: Bearer sk-ant-oat01-{{REDACTED}}\npassword = \"{}\"\n{}email: jane@acme-mail.io\n",
        synth("ghp_", ALNUM, 36),
        synth("", ALNUM, 14),
        pem("RSA PRIVATE KEY", 300)
    )
}

/// Inputs from the generated evaluation corpus: `per_case` of every credential case (each in
/// its syntaxes), then `lines` ordinary lines.
pub(crate) fn case_and_line_inputs(r: &mut Rng, per_case: usize, lines: usize) -> Vec<String> {
    let mut inputs = Vec::new();
    for (_, g) in corpus::credential_cases() {
        for _ in 0..per_case {
            inputs.push(g(r));
        }
    }
    for _ in 0..lines {
        inputs.push(corpus::ordinary_line(r));
    }
    inputs
}

/// The equivalence tests' common inputs: `fixed`, then `lines` ordinary lines, one of each
/// generated credential, and `mixed` bytes of mixed source, all from the corpus generator
/// seeded with `seed`.
pub(crate) fn corpus_inputs(
    seed: u64,
    lines: usize,
    mixed: usize,
    fixed: &[&[u8]],
) -> Vec<Vec<u8>> {
    let mut inputs: Vec<Vec<u8>> = fixed.iter().map(|s| s.to_vec()).collect();
    let mut r = Rng(seed);
    for _ in 0..lines {
        inputs.push(corpus::ordinary_line(&mut r).into_bytes());
    }
    for (_, g) in corpus::credential_cases() {
        inputs.push(g(&mut r).into_bytes());
    }
    inputs.push(corpus::mixed_source(&mut r, mixed).into_bytes());
    inputs
}

/// A Luhn-valid number of `len` digits: `prefix`, digits from `digit` (each below 10), and the
/// check digit.
pub(crate) fn luhn_number(prefix: &str, len: usize, mut digit: impl FnMut() -> u8) -> String {
    let mut digits: Vec<u8> = prefix.bytes().map(|b| b - b'0').collect();
    while digits.len() < len - 1 {
        digits.push(digit());
    }
    let check = (0..10)
        .find(|c| {
            let mut d = digits.clone();
            d.push(*c);
            super::pii::luhn(&d)
        })
        .unwrap_or(0);
    digits.push(check);
    digits.iter().map(|d| (d + b'0') as char).collect()
}

/// `text` scores below `medium`.
pub(crate) fn assert_below_medium(text: &str) {
    let r = score(text);
    assert!(
        r.verdict < Verdict::Medium,
        "{text:?}: {:?}",
        r.detected_patterns
    );
}

/// `bytes` in standard base64.
pub(crate) fn b64(bytes: impl AsRef<[u8]>) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `bytes` in unpadded URL-safe base64.
pub(crate) fn b64url(bytes: impl AsRef<[u8]>) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
