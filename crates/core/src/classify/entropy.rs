//! Character statistics the L0 rules use to tell a live secret from a placeholder or an
//! identifier: Shannon entropy, distinct characters, and the placeholder vocabulary of
//! documentation (`YOUR_TOKEN_HERE`, `<api-key>`, `${SECRET}`, `{REDACTED:...}`).

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

/// Shannon entropy in bits per byte.
pub(crate) fn shannon(s: &[u8]) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    // the histogram and a bitmap of the bytes present: the sum visits only those, in the
    // same ascending order as [`shannon_of`] (so the same float), not all 256 counts
    let mut counts = [0u32; 256];
    let mut present = [0u64; 4];
    for &b in s {
        counts[usize::from(b)] += 1;
        present[usize::from(b >> 6)] |= 1 << (b & 63);
    }
    let n = s.len() as f64;
    present
        .iter()
        .enumerate()
        .flat_map(|(k, &word)| {
            let mut w = word;
            std::iter::from_fn(move || {
                let bit = w.trailing_zeros() as usize;
                w &= w.wrapping_sub(1);
                (bit < 64).then_some(64 * k + bit)
            })
        })
        .map(|b| {
            let p = f64::from(counts[b]) / n;
            -p * p.log2()
        })
        .sum()
}

/// Shannon entropy in bits per byte of a byte histogram.
pub(crate) fn shannon_of(counts: &[u32; 256]) -> f64 {
    // an integer sum (vectorised), exact in `f64` as the float sum of the counts was
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let n = total as f64;
    if n == 0.0 {
        return 0.0;
    }
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Number of distinct bytes.
pub(crate) fn distinct(s: &[u8]) -> usize {
    let mut seen = [false; 256];
    let mut n = 0;
    for &b in s {
        if !seen[b as usize] {
            seen[b as usize] = true;
            n += 1;
        }
    }
    n
}

/// Markers that make a vendor-shaped token a placeholder. Kept narrow: random token bodies must
/// not trip it (a 4-letter word appears in a random 36-char body with probability ~1e-5).
const TOKEN_MARKERS: &[&[u8]] = &[
    b"example",
    b"redacted",
    b"xxxx",
    b"your",
    b"placeholder",
    b"****",
    b"...",
    // an ellipsis, bullets and dots as masks
    "\u{2026}".as_bytes(),
    "\u{2022}\u{2022}".as_bytes(),
    "\u{25cf}\u{25cf}".as_bytes(),
    b"<",
    b">",
    b"${",
    b"{{",
    b"dummy",
    b"fake",
    b"sample",
    b"0000000",
    b"1234567",
    b"abcdef",
];

/// Extra markers for free-form values (generic assignments, passwords, URLs).
const VALUE_MARKERS: &[&[u8]] = &[
    b"changeme",
    b"change_me",
    b"change-me",
    b"replace",
    b"insert",
    b"here",
    b"password",
    b"passwd",
    b"secret",
    b"token",
    b"todo",
    b"null",
    b"none",
    b"undefined",
    b"test",
    b"demo",
    b"foobar",
    b"hunter2",
    b"letmein",
    b"qwerty",
    b"admin",
    b"s3cr3t",
    b"p@ss",
];

/// One case-insensitive automaton per marker list: one pass over a value instead of one per
/// marker. `None` only if the automaton cannot be built (it always can: short literals), and then
/// the markers are searched one by one.
fn markers(list: &'static [&'static [u8]]) -> Option<AhoCorasick> {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(list)
        .ok()
}

static TOKEN_MARKERS_AC: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| markers(TOKEN_MARKERS));
static VALUE_MARKERS_AC: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| markers(VALUE_MARKERS));

fn contains_marker(hay: &[u8], ac: &Option<AhoCorasick>, list: &[&[u8]]) -> bool {
    match ac {
        Some(ac) => ac.is_match(hay),
        None => list
            .iter()
            .any(|m| hay.windows(m.len()).any(|w| w.eq_ignore_ascii_case(m))),
    }
}

/// A vendor-prefixed token whose body is a placeholder (or a redaction) rather than a secret.
pub(crate) fn is_token_placeholder(body: &[u8]) -> bool {
    if contains_marker(body, &TOKEN_MARKERS_AC, TOKEN_MARKERS) {
        return true;
    }
    let need = (body.len() / 3).clamp(1, 8);
    distinct(body) < need
}

/// A vendor's documentation example (`AKIAIOSFODNN7EXAMPLE`, the AWS example secret key): the
/// body says `example` and, that word taken out, is still shaped like a secret (no other
/// placeholder marker, enough distinct characters). Reported as an example (low), never dropped,
/// so redaction replaces it too; `YOUR_EXAMPLE_KEY_HERE` stays a placeholder.
pub(crate) fn is_documentation_example(body: &[u8]) -> bool {
    // without an `x` there is no `example`: most bodies go no further (no allocation)
    if memchr::memchr2(b'x', b'X', body).is_none() {
        return false;
    }
    names_example(body)
}

/// Whether `body` holds `example` (any case) around at least 8 other bytes that are not a
/// placeholder: [`is_documentation_example`] without its quick test for an `x`.
fn names_example(body: &[u8]) -> bool {
    const WORD: &[u8] = b"example";
    let lower = body.to_ascii_lowercase();
    let mut rest = Vec::with_capacity(body.len());
    let mut i = 0;
    let mut found = false;
    while i < body.len() {
        if lower[i..].starts_with(WORD) {
            found = true;
            i += WORD.len();
        } else {
            rest.push(body[i]);
            i += 1;
        }
    }
    found && rest.len() >= 8 && !is_token_placeholder(&rest)
}

/// A variable reference in place of a value: `$NAME`, `${NAME}`, `$(cmd)`, `%NAME%`, `%s`.
/// A password that merely starts with `$` or `%` (`$u#&u8...`) is not one.
fn is_reference(v: &[u8]) -> bool {
    let word = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'>' | b':');
    match v.first() {
        Some(b'$') => v.len() == 1 || matches!(v[1], b'{' | b'(') || v[1..].iter().all(word),
        Some(b'%') => v.len() <= 3 || matches!(v[1], b'(' | b'{') || v.ends_with(b"%"),
        _ => false,
    }
}

/// A template expression (`%(name)s`, `$(cmd)`, `#{name}`, `{% tag %}`): an opener followed by
/// a name and its closer. Random symbols in a secret (`...%(nxdr6+...`) are not one.
fn has_template(v: &[u8]) -> bool {
    // every opener holds a `%`, a `$` or a `{` (one pass over the value instead of four on
    // most)
    memchr::memchr3(b'%', b'$', b'{', v).is_some() && has_template_opener(v)
}

/// [`has_template`] without its quick test: each opener searched for.
fn has_template_opener(v: &[u8]) -> bool {
    const OPENERS: &[(&[u8], u8)] = &[(b"%(", b')'), (b"$(", b')'), (b"#{", b'}'), (b"{%", b'%')];
    OPENERS.iter().any(|(open, close)| {
        v.windows(open.len()).enumerate().any(|(i, w)| {
            w == *open && {
                let rest = &v[i + open.len()..];
                let name = rest
                    .iter()
                    .take_while(|b| {
                        b.is_ascii_alphanumeric() || matches!(b, b'_' | b' ' | b'.' | b'-')
                    })
                    .count();
                rest.get(name) == Some(close)
            }
        })
    })
}

/// A free-form value (assignment, password, URL credential) that is a placeholder.
pub(crate) fn is_value_placeholder(v: &[u8]) -> bool {
    if v.is_empty() || is_reference(v) || has_template(v) {
        return true;
    }
    // `@Value`, `&str`, `*ptr`: a decorator, a reference or a pointer, not a password that
    // happens to start with a symbol
    if matches!(v[0], b'@' | b'&' | b'*')
        && (v.len() == 1 || looks_like_identifier(&v[1..]) || v[1..].iter().all(|&b| b == v[0]))
    {
        return true;
    }
    if is_token_placeholder(v) || contains_marker(v, &VALUE_MARKERS_AC, VALUE_MARKERS) {
        return true;
    }
    false
}

/// An identifier or a dotted path (`settings.api_key`, `API_TOKEN_ENV`, `getToken`): code, not a
/// secret.
pub(crate) fn looks_like_identifier(v: &[u8]) -> bool {
    let no_digit = !v.iter().any(u8::is_ascii_digit);
    let ident_chars = v
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    if !ident_chars {
        return false;
    }
    if !no_digit {
        // `pkcs8_priv_key_info_st`, `MAX_RETRY_2`: snake-case words, each of one case
        let parts: Vec<&[u8]> = v.split(|&b| b == b'_' || b == b'-').collect();
        return parts.len() >= 2
            && !v.contains(&b'.')
            && parts.iter().all(|p| {
                p.iter().all(|b| !b.is_ascii_uppercase())
                    || p.iter().all(|b| !b.is_ascii_lowercase())
            });
    }
    // snake/kebab/dotted names of words, each a single-case word or camelCase (capitals only
    // at word starts): `X-Request-Id`, `settings.apiKey`; a part of random capitals
    // (`CWxRxTBxUuIqyK-QVzQ`, base64url) is no word
    v.split(|&b| matches!(b, b'_' | b'.' | b'-')).all(|p| {
        let uppers = p.iter().filter(|b| b.is_ascii_uppercase()).count();
        let single_case = uppers == 0 || p.iter().all(|b| !b.is_ascii_lowercase());
        let camel = uppers * 4 <= p.len()
            && !p
                .windows(2)
                .any(|w| w[0].is_ascii_uppercase() && w[1].is_ascii_uppercase());
        single_case || camel
    })
}

/// Counts of character classes: lower, upper, digit, other.
pub(crate) fn classes(v: &[u8]) -> usize {
    let lower = v.iter().any(u8::is_ascii_lowercase) as usize;
    let upper = v.iter().any(u8::is_ascii_uppercase) as usize;
    let digit = v.iter().any(u8::is_ascii_digit) as usize;
    let other = v.iter().any(|b| !b.is_ascii_alphanumeric()) as usize;
    lower + upper + digit + other
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`shannon`] over the bytes present gives exactly the float of [`shannon_of`] over the
    /// whole histogram, which it replaced (same terms, same order): on random strings of every
    /// length and alphabet, bytes at the bitmap's word edges (63, 64, 127, 128, 255) included.
    #[test]
    fn entropy_over_the_bytes_present_is_the_histogram_one() {
        let mut next = crate::classify::testing::splitmix64(0x18_0090);
        let alphabets: [&[u8]; 4] = [
            b"ab",
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            &[0, 1, 63, 64, 65, 127, 128, 129, 191, 192, 254, 255],
            b"0123456789abcdef",
        ];
        for round in 0..20_000 {
            let len = (next() % 120) as usize;
            let s: Vec<u8> = if round % 5 == 4 {
                (0..len).map(|_| (next() % 256) as u8).collect()
            } else {
                let a = alphabets[round % 4];
                (0..len)
                    .map(|_| a[(next() % a.len() as u64) as usize])
                    .collect()
            };
            let mut counts = [0u32; 256];
            for &b in &s {
                counts[usize::from(b)] += 1;
            }
            let want = if s.is_empty() {
                0.0
            } else {
                shannon_of(&counts)
            };
            assert_eq!(shannon(&s).to_bits(), want.to_bits(), "input {s:?}");
        }
    }

    #[test]
    fn the_example_test_without_an_x_is_the_full_one() {
        let mut next = crate::classify::testing::splitmix64(0x18_00a0);
        let parts: [&[u8]; 8] = [
            b"EXAMPLE",
            b"example",
            b"ExAmPlE",
            b"exampl",
            b"x",
            b"q8Zr2L",
            b"mX0pT4vB7",
            b"_",
        ];
        let mut yes = 0;
        for _ in 0..20_000 {
            let body: Vec<u8> = (0..next() % 6)
                .flat_map(|_| parts[(next() % 8) as usize].iter().copied())
                .collect();
            let want = super::names_example(&body);
            assert_eq!(
                is_documentation_example(&body),
                want,
                "{:?}",
                String::from_utf8_lossy(&body)
            );
            yes += usize::from(want);
        }
        assert!(yes > 500, "{yes}");
    }

    #[test]
    fn the_template_test_agrees_with_every_opener_searched() {
        let mut next = crate::classify::testing::splitmix64(0x7E3A);
        let alphabet = b"%$#{}()a_ .-Zx9";
        let mut yes = 0;
        for _ in 0..20_000 {
            let len = (next() % 12) as usize;
            let v = crate::classify::testing::draw(&mut next, alphabet, len);
            let want = has_template_opener(&v);
            assert_eq!(has_template(&v), want, "{:?}", String::from_utf8_lossy(&v));
            yes += usize::from(want);
        }
        // every opener must occur in the generated values, or the comparison proves little
        for t in [&b"%(a)s"[..], b"$(cmd)", b"#{name}", b"{% tag %"] {
            assert!(has_template(t), "{:?}", String::from_utf8_lossy(t));
        }
        assert!(yes > 100, "{yes}");
    }

    #[test]
    fn entropy_of_constant_is_zero_and_of_two_symbols_is_one() {
        assert_eq!(shannon(b"aaaa"), 0.0);
        assert!((shannon(b"abab") - 1.0).abs() < 1e-9);
    }

    #[test]
    fn your_token_here_is_a_placeholder() {
        assert!(is_value_placeholder(b"YOUR_TOKEN_HERE"));
        assert!(is_value_placeholder(b"<api-key>"));
        assert!(is_value_placeholder(b"${API_KEY}"));
        assert!(is_value_placeholder(b"{REDACTED:generic_secret}"));
    }

    #[test]
    fn vendor_documentation_examples_are_told_from_placeholders() {
        assert!(is_documentation_example(b"AKIAIOSFODNN7EXAMPLE"));
        assert!(is_documentation_example(
            b"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        ));
        assert!(!is_documentation_example(b"YOUR_EXAMPLE_KEY_HERE"));
        assert!(!is_documentation_example(b"example_xxxxxxxxxxxx"));
        assert!(!is_documentation_example(b"q8Zr2LmX0pT4vB7nK1sD"));
    }

    #[test]
    fn dotted_config_path_is_an_identifier() {
        assert!(looks_like_identifier(b"settings.api_key"));
        assert!(looks_like_identifier(b"API_TOKEN_ENV"));
        assert!(!looks_like_identifier(b"q8Zr2LmX0pT4vB7nK1sD"));
    }
}
