//! The keyword gates of the L0 scan: the tests of the bytes around a keyword hit that every
//! match of its rule implies ([`Gate`]), run before a window is opened around the hit, and the
//! byte classes they and the derived captures share. A hit that fails its gate cannot be inside
//! a match, so dropping it loses no finding.

use super::spec::{GATE_NAME_HEAD, GATE_NAME_TAIL, Gate};

/// A byte that continues a token (`spec::BEGIN` requires anything else before a token).
pub(super) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// An `@` at `p` that can be inside an email address: a local-part byte before it and a domain
/// byte after it (what the `email_address` regex requires).
pub(super) fn email_hit(bytes: &[u8], p: usize) -> bool {
    let before = p > 0 && {
        let b = bytes[p - 1];
        b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
    };
    let after = bytes
        .get(p + 1)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'-');
    before && after
}

/// The bytes of a key name in the generic rules (`[a-z0-9_.\-]`, any case), as a table: the
/// keyword gates skip over names byte by byte, one load each.
const NAME_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'-';
        b += 1;
    }
    t
};

/// A byte of a key name in the generic rules (`[a-z0-9_.\-]`, any case).
pub(super) fn is_name_byte(b: u8) -> bool {
    NAME_BYTES[usize::from(b)]
}

/// A byte of a word for `\b` (ASCII, as the rules are compiled without Unicode).
pub(super) fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `\s` without Unicode.
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The first index from `i` (at most `max` bytes on) whose byte fails `keep`.
pub(super) fn skip_fwd(bytes: &[u8], mut i: usize, max: usize, keep: impl Fn(u8) -> bool) -> usize {
    let lim = i.saturating_add(max).min(bytes.len());
    while i < lim && keep(bytes[i]) {
        i += 1;
    }
    i
}

/// The last index down from `i` (at most `max` bytes back) such that every byte in it..i passes
/// `keep`.
pub(super) fn skip_back(
    bytes: &[u8],
    mut i: usize,
    max: usize,
    keep: impl Fn(u8) -> bool,
) -> usize {
    let lim = i.saturating_sub(max);
    while i > lim && keep(bytes[i - 1]) {
        i -= 1;
    }
    i
}

/// Whether a keyword hit at `start..end` passes `gate` (see [`Gate`]): a test every match of the
/// rule implies, so a hit that fails it cannot be inside a match.
pub(super) fn gate_passes(bytes: &[u8], start: usize, end: usize, gate: Gate) -> bool {
    let at = |i: usize| bytes.get(i).copied();
    let quote = |b: u8| matches!(b, b'"' | b'\'' | b'`');
    match gate {
        Gate::None => true,
        Gate::Assign => {
            let mut i = skip_fwd(bytes, end, GATE_NAME_TAIL, is_name_byte);
            if at(i).is_some_and(quote) {
                i += 1;
            }
            if at(i) == Some(b']') {
                i += 1;
            }
            i = skip_fwd(bytes, i, 4, is_space);
            matches!(at(i), Some(b'=' | b':'))
                // R's `<-`, make's `?=`
                || (matches!(at(i), Some(b'<')) && at(i + 1) == Some(b'-'))
                || (matches!(at(i), Some(b'?')) && at(i + 1) == Some(b'='))
                || {
                // Go's typed declaration: `token string = "..."`
                let typed = [&b"string"[..], b"[]byte"]
                    .iter()
                    .find(|t| bytes.get(i..i + t.len()) == Some(**t))
                    .map_or(i, |t| i + t.len());
                typed > i && at(skip_fwd(bytes, typed, 4, is_space)) == Some(b'=')
            }
        }
        // the bytes after the keyword first: they fail far more often than those before it
        Gate::CallPair => {
            let after = skip_fwd(bytes, end, GATE_NAME_TAIL, is_name_byte);
            at(after).is_some_and(quote) && {
                let before = skip_back(bytes, start, GATE_NAME_HEAD, is_name_byte);
                before > 0 && quote(bytes[before - 1])
            }
        }
        Gate::CliFlag => {
            let flag = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
            let after = skip_fwd(bytes, end, GATE_NAME_TAIL, flag);
            matches!(at(after), Some(b'=' | b' ' | b'\t')) && {
                let before = skip_back(bytes, start, GATE_NAME_HEAD, flag);
                bytes[before..start].windows(2).any(|w| w == b"--")
            }
        }
        Gate::Word => {
            let mut i = end;
            if at(i).is_some_and(|b| b == b's' || b == b'S') {
                i += 1;
            }
            let word_before = start > 0 && is_word_byte(bytes[start - 1]);
            let word_after = at(i).is_some_and(is_word_byte);
            !word_before && !word_after
        }
        Gate::Userinfo => {
            let lim = end.saturating_add(200).min(bytes.len());
            bytes[end..lim].iter().find(|&&b| {
                b == b'@' || is_space(b) || matches!(b, b'/' | b'"' | b'\'' | b'<' | b'>')
            }) == Some(&b'@')
        }
        Gate::SpaceOrQuote => at(end).is_some_and(|b| is_space(b) || quote(b)),
        Gate::TokenStart => start == 0 || !is_token_byte(bytes[start - 1]),
        Gate::UuidAfter => {
            (start == 0 || !is_token_byte(bytes[start - 1]))
                && bytes.get(end..end + 36).is_some_and(|u| {
                    u.iter().enumerate().all(|(i, &b)| {
                        if matches!(i, 8 | 13 | 18 | 23) {
                            b == b'-'
                        } else {
                            b.is_ascii_hexdigit()
                        }
                    })
                })
        }
        Gate::RunAfter(n) => {
            (start == 0 || !is_token_byte(bytes[start - 1]))
                && bytes
                    .get(end..end + n)
                    .is_some_and(|run| run.iter().all(u8::is_ascii_alphanumeric))
        }
        Gate::ByteAt(k, b) => {
            (start == 0 || !is_token_byte(bytes[start - 1])) && at(end + k) == Some(b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::testing::{case_and_line_inputs, corpus};
    use crate::classify::{Classifier, findings, spec};

    /// The keyword gates (`spec::Gate`) only drop hits that cannot be inside a match: over
    /// the generated evaluation corpus (every credential case in its syntaxes, and mixed
    /// source with ordinary code around them) the findings are the same with and without them.
    #[test]
    fn keyword_gates_lose_no_finding() {
        let with = Classifier::default();
        let mut without = with.clone();
        without.gates = false;
        let mut r = corpus::Rng(0x18_0019);
        let mut inputs = case_and_line_inputs(&mut r, 8, 3000);
        inputs.push(corpus::mixed_source(&mut r, 400_000));
        let mut compared = 0;
        for input in &inputs {
            let a = findings(input, &with);
            let b = findings(input, &without);
            assert_eq!(a, b, "gates changed the findings of {input:?}");
            compared += b.len();
        }
        assert!(compared > 500, "only {compared} findings compared");
    }

    /// The gates' table of key-name bytes is the class the generic rules write as `[a-z0-9_.\-]`
    /// (compiled case-insensitively), for every byte.
    #[test]
    fn the_name_byte_table_is_the_rules_name_class() {
        let class = regex::bytes::Regex::new(r"(?i-u)^[a-z0-9_.\-]$").unwrap();
        for c in 0..=255u8 {
            assert_eq!(is_name_byte(c), class.is_match(&[c]), "byte {c:#04x}");
        }
    }

    #[test]
    fn keyword_gates_drop_hits_that_cannot_match() {
        use super::gate_passes;
        use spec::Gate;
        let hit = |text: &str, kw: &str, gate: Gate| {
            let at = text
                .find(kw)
                .unwrap_or_else(|| panic!("{kw} not in {text}"));
            gate_passes(text.as_bytes(), at, at + kw.len(), gate)
        };
        assert!(hit("db_password_hash = x", "password", Gate::Assign));
        assert!(hit("\"apiToken\": \"x\"", "Token", Gate::Assign));
        assert!(hit("keys[\"secret\"] = x", "secret", Gate::Assign));
        assert!(!hit("fn token(&self) -> Token", "token", Gate::Assign));
        assert!(!hit("// the secret sauce", "secret", Gate::Assign));
        assert!(hit(
            "set(\"db.password\", \"x\")",
            "password",
            Gate::CallPair
        ));
        assert!(!hit("check_password(user, pw)", "password", Gate::CallPair));
        assert!(hit("run --db-password=x", "password", Gate::CliFlag));
        assert!(hit("run --token x", "token", Gate::CliFlag));
        assert!(!hit("let password = x", "password", Gate::CliFlag));
        assert!(hit("the passwords are", "password", Gate::Word));
        assert!(!hit("password_hash", "password", Gate::Word));
        assert!(!hit("mypassword is", "password", Gate::Word));
        assert!(hit("https://u:p@host", "://", Gate::Userinfo));
        assert!(!hit("https://host/a@b", "://", Gate::Userinfo));
        assert!(hit("Authorization: Basic x", "Basic", Gate::SpaceOrQuote));
        assert!(!hit("BasicAuth", "Basic", Gate::SpaceOrQuote));
        assert!(hit("x EAAAb", "EAAA", Gate::TokenStart));
        assert!(!hit("AAEAAAb", "EAAA", Gate::TokenStart));
    }
}
