//! Personal data detectors of the L0 classifier: emails (outside reserved example domains),
//! US SSNs of a valid shape (dashes, spaces or dots), phone numbers, Luhn-checked payment card numbers and
//! checksum-checked IBANs.
//!
//! The digit-led detectors run as one hand-written linear scan over candidate digit runs (no
//! regex over every digit of a source file), so their cost is proportional to the input.

use std::ops::Range;

/// What a digit-led candidate turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumberKind {
    Ssn,
    Card,
    Phone,
    Iban,
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() | (b == b'_')
}

/// Bytes whose candidate starts are found at once.
const CHUNK: usize = 64;

/// A digit, branch-free (so that a loop of it over an array vectorises).
#[inline(always)]
fn digit(b: u8) -> bool {
    b.wrapping_sub(b'0') < 10
}

/// A capital, branch-free.
#[inline(always)]
fn upper(b: u8) -> bool {
    b.wrapping_sub(b'A') < 26
}

/// The candidate starts of a chunk from its bytes (`w[0]` the byte before the chunk, then the
/// chunk's [`CHUNK`] bytes, then the byte after it): `0x80` in `out` where [`may_start`] holds,
/// 0 elsewhere. One element-wise loop over fixed-size arrays, each byte tested with its
/// neighbours straight from the three overlapping views of `w`, which the compiler turns into
/// vector instructions (SSE2 on x86-64: 16 bytes per instruction) without `unsafe`. (Byte
/// classes computed once into an array and read back at three offsets cost more: packing the
/// classes into bits and unpacking them again; `docs/performance-log.md`, L0 speed.)
#[inline(always)]
fn chunk_starts(w: &[u8; CHUNK + 2], out: &mut [u8; CHUNK]) {
    for (i, o) in out.iter_mut().enumerate() {
        let (p, x, n) = (w[i], w[i + 1], w[i + 2]);
        let word = digit(p) | ((p | 0x20).wrapping_sub(b'a') < 26) | (p == b'_');
        let open = (x == b'+') | (x == b'(');
        let start = digit(x) | (open & digit(n)) | (upper(x) & upper(n));
        *o = u8::from(!word & start) << 7;
    }
}

/// The `k`th eight flags of `out` as a `u64`, one per byte (little-endian lanes).
#[inline(always)]
fn lanes(out: &[u8; CHUNK], k: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&out[8 * k..8 * k + 8]);
    u64::from_le_bytes(a)
}

/// Calls `f` with each index where a candidate may start ([`may_start`]: a digit, a `+` or `(`
/// before a digit, or two capitals, not inside a word), in order. A chunk of [`CHUNK`] bytes
/// at a time: the starts from each byte and its neighbours ([`chunk_starts`], vectorised), one
/// test of all its flags (a chunk without a candidate goes no further), and one
/// `trailing_zeros` per candidate.
#[inline(never)]
fn for_each_candidate(s: &[u8], mut f: impl FnMut(usize)) {
    let n = s.len();
    let mut out = [0u8; CHUNK];
    // the byte before the chunk, the chunk and the byte after it, copied only at the text's
    // ends, which read as spaces (neither word bytes nor candidates)
    let mut pad;
    let mut base = 0;
    while base < n {
        let w: &[u8; CHUNK + 2] = match base
            .checked_sub(1)
            .and_then(|from| s.get(from..from + CHUNK + 2))
            .and_then(|w| <&[u8; CHUNK + 2]>::try_from(w).ok())
        {
            Some(w) => w,
            None => {
                pad = [b' '; CHUNK + 2];
                // `pad[k]` is the byte at `base - 1 + k`
                let from = base.saturating_sub(1);
                let to = n.min(base + CHUNK + 1);
                let at = from + 1 - base;
                pad[at..at + (to - from)].copy_from_slice(&s[from..to]);
                &pad
            }
        };
        // lanes past the end hold spaces: never a candidate
        chunk_starts(w, &mut out);
        if (0..CHUNK / 8).fold(0, |any, k| any | lanes(&out, k)) != 0 {
            for k in 0..CHUNK / 8 {
                let mut mask = lanes(&out, k);
                while mask != 0 {
                    f(base + 8 * k + (mask.trailing_zeros() / 8) as usize);
                    mask &= mask - 1;
                }
            }
        }
        base += CHUNK;
    }
}

/// Scans `s` for SSNs, card numbers, phone numbers and IBANs, calling `emit` with each span.
pub(crate) fn scan_numbers(s: &[u8], mut emit: impl FnMut(NumberKind, Range<usize>)) {
    // `next`: the first byte not yet consumed by a number
    let mut next = 0;
    for_each_candidate(s, |i| {
        if i >= next {
            next = scan_at(s, i, &mut emit);
        }
    });
}

/// Whether a candidate can start at `c` (between `p` and `x`): a digit, a `+` or `(` before a
/// digit, or two capitals (an IBAN's country code), not inside a word. What [`for_each_candidate`]
/// computes a chunk at a time, byte by byte (the reference of the tests).
#[cfg(test)]
fn may_start(p: u8, c: u8, x: u8) -> bool {
    !is_word(p)
        & (c.is_ascii_digit()
            | (((c == b'+') | (c == b'(')) & x.is_ascii_digit())
            | (c.is_ascii_uppercase() & x.is_ascii_uppercase()))
}

/// Tries a number or an IBAN starting at `i` (a candidate); returns where the scan resumes.
fn scan_at(s: &[u8], i: usize, emit: &mut impl FnMut(NumberKind, Range<usize>)) -> usize {
    let n = s.len();
    let b = s[i];
    let prev = if i == 0 { b' ' } else { s[i - 1] };
    if is_word(prev) {
        return i + 1;
    }
    let starts_number = b.is_ascii_digit()
        || ((b == b'+' || b == b'(') && s.get(i + 1).is_some_and(u8::is_ascii_digit));
    if starts_number && !matches!(prev, b'.' | b'-' | b'/') {
        // extend over digits and single separators
        let mut j = i + 1;
        let mut digits = usize::from(b.is_ascii_digit());
        while j < n {
            let c = s[j];
            if c.is_ascii_digit() {
                digits += 1;
                j += 1;
            } else if matches!(c, b' ' | b'-' | b'.' | b')' | b'(')
                && j + 1 < n
                && (s[j + 1].is_ascii_digit() || (c == b')' && s[j + 1] == b' '))
                && digits < 24
            {
                j += 1;
            } else {
                break;
            }
        }
        // trailing separators are not part of the number
        while j > i && !s[j - 1].is_ascii_digit() {
            j -= 1;
        }
        let followed_by_word =
            j < n && (is_word(s[j]) || (s[j] == b'.' && j + 1 < n && s[j + 1].is_ascii_digit()));
        if !followed_by_word
            && (9..=19).contains(&digits)
            && let Some(kind) = classify_number(&s[i..j])
            && (kind != NumberKind::Card || !is_code_literal(s, i, j))
        {
            emit(kind, i..j);
        }
        return j.max(i + 1);
    }
    // IBAN: two capitals and two digits at a word start
    if b.is_ascii_uppercase()
        && i + 4 < n
        && let Some(end) = iban_at(s, i)
    {
        emit(NumberKind::Iban, i..end);
        return end;
    }
    i + 1
}

fn classify_number(t: &[u8]) -> Option<NumberKind> {
    // on the stack: the scan only classifies numbers of 9-19 digits (a longer `t` is no number)
    let mut buf = [0u8; 19];
    let mut n = 0;
    for &b in t {
        if b.is_ascii_digit() {
            if n == buf.len() {
                return None;
            }
            buf[n] = b - b'0';
            n += 1;
        }
    }
    let digits = &buf[..n];
    let mut seps = t.iter().copied().filter(|b| !b.is_ascii_digit()).peekable();
    let uniform_seps = match seps.peek().copied() {
        None => true,
        Some(first) => matches!(first, b' ' | b'-') && seps.all(|c| c == first),
    };
    // SSN: ddd-dd-dddd exactly, or with spaces or dots in both places (`123 45 6789` in a table,
    // `123.45.6789` in a form): one separator, the widths 3-2-4 and a valid area, group and serial
    if t.len() == 11 && t[3] == t[6] && matches!(t[3], b'-' | b' ' | b'.') && digits.len() == 9 {
        return valid_ssn(digits).then_some(NumberKind::Ssn);
    }
    // card: 13-19 digits, separators all spaces or all dashes (or none), Luhn, known IIN
    if (13..=19).contains(&digits.len())
        && uniform_seps
        && t[0].is_ascii_digit()
        && luhn(digits)
        && known_iin(digits)
        && !all_same(digits)
    {
        return Some(NumberKind::Card);
    }
    // phone: E.164 with separators, or NANP shapes
    if is_phone(t, digits) {
        return Some(NumberKind::Phone);
    }
    None
}

/// Bytes a card-number search looks at on either side of a candidate, within its line.
const CARD_CONTEXT: usize = 160;

/// Whether an ungrouped card-shaped number at `i..j` is an integer literal in code: a constant,
/// a table row, a call argument. Such numbers pass Luhn and an issuer length one time in a
/// few hundred, and source trees hold thousands (`const X: u64 = ...;`, `(a, b),` in ryu's and
/// serde_json's tables). A literal is delimited by code punctuation on both sides: an opening
/// bracket, `,` + space, `=` or an operator (or the line start) before it, and a bracket,
/// `,`, `;`, a comparison or an operator (or the line end) after it, not both ends bare. A card
/// as people write it is grouped, quoted, in prose or a log line (a word before or after it),
/// a value after `:` (JSON, YAML), a CSV field (`,` with no space), or near a word that names
/// a card: all of those stay cards.
fn is_code_literal(s: &[u8], i: usize, j: usize) -> bool {
    if !s[i..j].iter().all(u8::is_ascii_digit) || (i > 0 && s[i - 1] == b',') {
        return false;
    }
    let from = i.saturating_sub(CARD_CONTEXT);
    let to = (j + CARD_CONTEXT).min(s.len());
    let start = s[from..i]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(from, |k| from + k + 1);
    let end = s[j..to]
        .iter()
        .position(|&b| matches!(b, b'\n' | b'\r'))
        .map_or(to, |k| j + k);
    let prev = s[start..i]
        .iter()
        .rev()
        .find(|b| !matches!(b, b' ' | b'\t'));
    let next = s[j..end].iter().find(|b| !matches!(b, b' ' | b'\t'));
    let operator = |b: u8| {
        matches!(
            b,
            b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'<' | b'>'
        )
    };
    let before = prev.is_none_or(|&b| matches!(b, b'(' | b'[' | b'{' | b',' | b'=') || operator(b));
    let after = next.is_none_or(|&b| {
        matches!(b, b')' | b']' | b'}' | b'{' | b',' | b';' | b'=' | b'!') || operator(b)
    });
    before && after && (prev.is_some() || next.is_some()) && !names_a_card(&s[start..end])
}

/// A word on the line that names a payment card (`card`, `credit`, `visa`, `pan`, `cc`...).
fn names_a_card(line: &[u8]) -> bool {
    let lower = line.to_ascii_lowercase();
    let has = |w: &[u8]| lower.windows(w.len()).any(|x| x == w);
    let word = |w: &[u8]| {
        lower.windows(w.len()).enumerate().any(|(k, x)| {
            x == w
                && (k == 0 || !lower[k - 1].is_ascii_alphabetic())
                && lower
                    .get(k + w.len())
                    .is_none_or(|b| !b.is_ascii_alphabetic())
        })
    };
    [
        &b"card"[..],
        b"credit",
        b"visa",
        b"amex",
        b"mastercard",
        b"payment",
    ]
    .iter()
    .any(|w| has(w))
        || word(b"pan")
        || word(b"cc")
}

fn all_same(d: &[u8]) -> bool {
    d.iter().all(|&x| x == d[0])
}

fn valid_ssn(d: &[u8]) -> bool {
    let area = u32::from(d[0]) * 100 + u32::from(d[1]) * 10 + u32::from(d[2]);
    let group = u32::from(d[3]) * 10 + u32::from(d[4]);
    let serial = d[5..].iter().fold(0u32, |a, &x| a * 10 + u32::from(x));
    let placeholder =
        d == [1, 2, 3, 4, 5, 6, 7, 8, 9] || d == [0, 7, 8, 0, 5, 1, 1, 2, 0] || all_same(d);
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0 && !placeholder
}

/// The Luhn checksum of payment card numbers.
pub(crate) fn luhn(d: &[u8]) -> bool {
    let mut sum = 0u32;
    for (k, &x) in d.iter().rev().enumerate() {
        let mut v = u32::from(x);
        if k % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum.is_multiple_of(10)
}

/// An issuer range and a length its cards have: Visa 13, 16 or 19 digits, Mastercard 16, Amex
/// 15, Discover and JCB 16-19, Diners 14-19. Integer constants in code (magic numbers, float
/// tables) pass Luhn one time in ten; most of them have 17-19 digits under a Mastercard or Visa
/// prefix, which no card has.
fn known_iin(d: &[u8]) -> bool {
    let len = d.len();
    let two = d[0] * 10 + d[1];
    let three = u32::from(two) * 10 + u32::from(d[2]);
    let four = three * 10 + u32::from(d[3]);
    let visa = d[0] == 4 && matches!(len, 13 | 16 | 19);
    let mastercard = ((51..=55).contains(&two) || (2221..=2720).contains(&four)) && len == 16;
    let amex = (two == 34 || two == 37) && len == 15;
    let discover = (four == 6011 || two == 65) && (16..=19).contains(&len);
    let jcb = two == 35 && (16..=19).contains(&len);
    let diners =
        (two == 36 || two == 38 || (300..=305).contains(&three)) && (14..=19).contains(&len);
    visa || mastercard || amex || discover || jcb || diners
}

fn is_phone(t: &[u8], digits: &[u8]) -> bool {
    let seps = || t[1..].iter().filter(|b| !b.is_ascii_digit());
    if t[0] == b'+' {
        // a signed decimal (`+35236450.6` in a doctest, `+1234567.89` in a ledger) has one `.`
        // and no other separator; a number written with dots has a dot between every group
        let decimal = seps().eq([&b'.']);
        return (8..=15).contains(&digits.len())
            && seps().next().is_some()
            && !decimal
            && !all_same(digits);
    }
    // NANP: (ddd) ddd-dddd, ddd-ddd-dddd, ddd.ddd.dddd
    if digits.len() != 10 {
        return false;
    }
    let shape_ok = match t.len() {
        12 => (t[3] == b'-' && t[7] == b'-') || (t[3] == b'.' && t[7] == b'.'),
        14 => t[0] == b'(' && t[4] == b')' && t[5] == b' ' && t[9] == b'-',
        _ => false,
    };
    // fictional 555-01xx numbers are documentation
    let fictional = digits[3..6] == [5, 5, 5] && digits[6] == 0 && digits[7] == 1;
    shape_ok && digits[0] >= 2 && digits[3] >= 2 && !fictional
}

/// IBAN lengths per country (a subset covering SEPA and common others).
fn iban_len(cc: &[u8]) -> Option<usize> {
    Some(match cc {
        b"AD" => 24,
        b"AE" => 23,
        b"AT" => 20,
        b"BE" => 16,
        b"BG" => 22,
        b"BH" => 22,
        b"BR" => 29,
        b"CH" => 21,
        b"CY" => 28,
        b"CZ" => 24,
        b"DE" => 22,
        b"DK" => 18,
        b"EE" => 20,
        b"ES" => 24,
        b"FI" => 18,
        b"FR" => 27,
        b"GB" => 22,
        b"GI" => 23,
        b"GR" => 27,
        b"HR" => 21,
        b"HU" => 28,
        b"IE" => 22,
        b"IL" => 23,
        b"IS" => 26,
        b"IT" => 27,
        b"KW" => 30,
        b"LI" => 21,
        b"LT" => 20,
        b"LU" => 20,
        b"LV" => 21,
        b"MC" => 27,
        b"MT" => 31,
        b"NL" => 18,
        b"NO" => 15,
        b"PL" => 28,
        b"PT" => 25,
        b"QA" => 29,
        b"RO" => 24,
        b"SA" => 24,
        b"SE" => 24,
        b"SI" => 19,
        b"SK" => 24,
        b"SM" => 27,
        b"TR" => 26,
        _ => return None,
    })
}

/// If an IBAN (compact or grouped by four with single spaces) starts at `i`, its end.
fn iban_at(s: &[u8], i: usize) -> Option<usize> {
    if !(s[i + 1].is_ascii_uppercase() && s[i + 2].is_ascii_digit() && s[i + 3].is_ascii_digit()) {
        return None;
    }
    let want = iban_len(&s[i..i + 2])?;
    let mut chars: Vec<u8> = Vec::with_capacity(34);
    let mut j = i;
    while j < s.len() && chars.len() < want {
        let c = s[j];
        if c.is_ascii_uppercase() || c.is_ascii_digit() {
            chars.push(c);
            j += 1;
        } else if c == b' '
            && chars.len().is_multiple_of(4)
            && j + 1 < s.len()
            && s[j + 1].is_ascii_alphanumeric()
        {
            j += 1;
        } else {
            break;
        }
    }
    if chars.len() != want || (j < s.len() && is_word(s[j])) {
        return None;
    }
    iban_checksum_ok(&chars).then_some(j)
}

/// ISO 13616 mod-97 check.
pub(crate) fn iban_checksum_ok(chars: &[u8]) -> bool {
    let rotated = chars[4..].iter().chain(chars[..4].iter());
    let mut rem: u32 = 0;
    for &c in rotated {
        let v = if c.is_ascii_digit() {
            u32::from(c - b'0')
        } else {
            u32::from(c - b'A') + 10
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

/// Whether `s` ends with `suffix`, ASCII case-insensitively.
fn ends_with_ci(s: &[u8], suffix: &[u8]) -> bool {
    s.len() >= suffix.len() && s[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// Whether `s` starts with `prefix`, ASCII case-insensitively.
fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.get(..prefix.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(prefix))
}

/// Domains reserved for documentation and local use (RFC 2606, RFC 6761): an address there,
/// or at a subdomain, is never a real person's.
const RESERVED_DOMAINS: [&[u8]; 4] = [b"example.com", b"example.org", b"example.net", b"localhost"];

/// Reserved top-level domains (RFC 2606, RFC 6761, RFC 6762, ICANN's `.internal`).
const RESERVED_TLDS: [&[u8]; 6] = [
    b".example",
    b".test",
    b".invalid",
    b".localhost",
    b".local",
    b".internal",
];

/// File names that look like an address's domain (`icon@2x.png`).
const FILE_EXTENSIONS: [&[u8]; 11] = [
    b".png", b".jpg", b".jpeg", b".gif", b".svg", b".webp", b".js", b".ts", b".css", b".py", b".rs",
];

/// Reserved or non-personal email domains (RFC 2606 / 6761, noreply forwarders) and file-like
/// "domains" (`icon@2x.png`). Compared case-insensitively in place: lowercased copies of the
/// address and a joined suffix per reserved domain were allocations on every address.
pub(crate) fn email_is_reportable(local: &[u8], domain: &[u8]) -> bool {
    let d = domain;
    // the domain itself or a subdomain of it
    if RESERVED_DOMAINS
        .iter()
        .any(|r| ends_with_ci(d, r) && (d.len() == r.len() || d[d.len() - r.len() - 1] == b'.'))
    {
        return false;
    }
    if RESERVED_TLDS.iter().any(|t| ends_with_ci(d, t)) {
        return false;
    }
    if ends_with_ci(d, b"noreply.github.com")
        || starts_with_ci(local, b"noreply")
        || starts_with_ci(local, b"no-reply")
        || local.eq_ignore_ascii_case(b"git")
    {
        return false;
    }
    if FILE_EXTENSIONS.iter().any(|e| ends_with_ci(d, e))
        || d.first().is_some_and(u8::is_ascii_digit)
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::testing::{draw, splitmix64};

    fn kinds(s: &str) -> Vec<NumberKind> {
        let mut v = Vec::new();
        scan_numbers(s.as_bytes(), |k, _| v.push(k));
        v
    }

    #[test]
    fn luhn_accepts_the_standard_test_number_shape() {
        // 7992739871 + check digit 3 is the textbook Luhn example.
        assert!(luhn(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1, 3]));
        assert!(!luhn(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1, 4]));
    }

    #[test]
    fn ssn_with_invalid_area_is_not_reported() {
        assert!(kinds("id 666-12-3456 here").is_empty());
        assert!(kinds("id 000-12-3456 here").is_empty());
        assert!(kinds("id 912-12-3456 here").is_empty());
    }

    #[test]
    fn valid_shape_ssn_is_reported() {
        assert_eq!(kinds("ssn: 219-45-7731\n"), vec![NumberKind::Ssn]);
    }

    #[test]
    fn dates_versions_and_ip_addresses_are_not_numbers_of_interest() {
        assert!(kinds("2024-01-15 1.2.3 192.168.100.200 10:30").is_empty());
    }

    #[test]
    fn a_signed_decimal_is_not_an_international_phone() {
        assert!(kinds("Decimal('+35236450.6')").is_empty());
        assert!(kinds("delta +1234567.89 EUR").is_empty());
        // dots between every group, or a dot beside other separators, stay a phone
        assert_eq!(kinds("tel +33.1.42.68.53.00"), vec![NumberKind::Phone]);
        assert_eq!(kinds("tel +44 20.7946.0018"), vec![NumberKind::Phone]);
        assert_eq!(kinds("tel +44 20 7946 0018"), vec![NumberKind::Phone]);
    }

    #[test]
    fn nanp_phone_is_reported_but_fictional_555_is_not() {
        assert_eq!(kinds("call (415) 867-2309 now"), vec![NumberKind::Phone]);
        assert!(kinds("call 415-555-0134 now").is_empty());
    }

    #[test]
    fn iban_checksum_rejects_a_changed_digit() {
        // GB82 WEST 1234 5698 7654 32 is the ISO 13616 documentation example.
        let good: Vec<u8> = b"GB82WEST12345698765432".to_vec();
        assert!(iban_checksum_ok(&good));
        let mut bad = good.clone();
        bad[10] = b'9';
        assert!(!iban_checksum_ok(&bad));
    }

    /// The scan as it was before the block bitmask: every byte in turn. The reference the fast
    /// scan must agree with.
    fn scan_bytewise(s: &[u8]) -> Vec<(NumberKind, Range<usize>)> {
        let mut out = Vec::new();
        let mut emit = |k, r| out.push((k, r));
        let mut i = 0;
        while i < s.len() {
            let prev_ok = i == 0 || !is_word(s[i - 1]);
            let b = s[i];
            let candidate = b.is_ascii_digit() || b == b'+' || b == b'(' || b.is_ascii_uppercase();
            i = if prev_ok && candidate {
                scan_at(s, i, &mut emit)
            } else {
                i + 1
            };
        }
        out
    }

    #[test]
    fn block_scan_agrees_with_the_bytewise_scan_on_random_input() {
        let mut next = splitmix64(0x5EED);
        // digits dominate so that numbers of 9-19 digits (and valid ones) occur often
        let alphabet = b"0123456789012345678901234567890123456789 -.()+/_aZGBDE\n";
        let (mut total, mut found) = (0, 0);
        for round in 0..400 {
            let len = 1 + (next() % 300) as usize;
            let mut s = draw(&mut next, alphabet, len);
            if round % 2 == 0 {
                // plant known-valid shapes at random places, across block edges too
                let at = (next() % len as u64) as usize;
                let plant: &[u8] = [
                    &b" 219-45-7731 "[..],
                    b" 4111 1111 1111 1111 ",
                    b" GB82WEST12345698765432 ",
                    b" (415) 867-2309 ",
                    b" +44 20 7946 0958 ",
                ][(next() % 5) as usize];
                s.splice(at..at, plant.iter().copied());
            }
            let mut fast = Vec::new();
            scan_numbers(&s, |k, r| fast.push((k, r)));
            assert_eq!(
                fast,
                scan_bytewise(&s),
                "input {:?}",
                String::from_utf8_lossy(&s)
            );
            total += 1;
            found += usize::from(!fast.is_empty());
        }
        // the generator must exercise the detectors, or the comparison proves little
        assert!(
            found > total / 8,
            "only {found} of {total} inputs had a finding"
        );
    }

    #[test]
    fn chunk_candidates_agree_with_may_start_byte_by_byte() {
        let mut next = splitmix64(0x1A4E);
        // every class boundary of the byte classes, non-ASCII bytes and UTF-8 included
        let alphabet: Vec<u8> = b"/09:@AZ[`az{_+()-. \n\t\x7f\x80\xaf\xc3\xff"
            .iter()
            .copied()
            .chain("é€".bytes())
            .collect();
        // every length across three chunks: one candidate at the start, or short patterns in
        // every phase, so that every chunk edge sees a candidate after a space, a digit after
        // a word byte (no candidate), and a pair of capitals across it
        let mut inputs: Vec<Vec<u8>> = (0..=3 * CHUNK + 2).map(|len| vec![b'7'; len]).collect();
        for pattern in [&b" 7"[..], b"7 ", b"7a", b" AB", b"AB ", b"B A"] {
            inputs
                .extend((0..=3 * CHUNK + 2).map(|len| pattern.repeat(len / 2 + 1)[..len].to_vec()));
        }
        inputs.push(b"A".to_vec());
        inputs.push(b"AB".to_vec());
        inputs.push(b"_1".to_vec());
        for _ in 0..3000 {
            let len = (next() % (3 * CHUNK as u64 + 10)) as usize;
            inputs.push(
                (0..len)
                    .map(|_| {
                        if next().is_multiple_of(4) {
                            (next() % 256) as u8
                        } else {
                            alphabet[(next() % alphabet.len() as u64) as usize]
                        }
                    })
                    .collect(),
            );
        }
        for s in inputs {
            let at = |j: Option<usize>| j.and_then(|j| s.get(j)).copied().unwrap_or(b' ');
            let want: Vec<usize> = (0..s.len())
                .filter(|&i| may_start(at(i.checked_sub(1)), s[i], at(Some(i + 1))))
                .collect();
            let mut got = Vec::new();
            for_each_candidate(&s, |i| got.push(i));
            assert_eq!(got, want, "input {s:?}");
        }
    }

    /// [`email_is_reportable`] as it was, on lowercased copies: the reference of the test below.
    fn email_is_reportable_lowercased(local: &[u8], domain: &[u8]) -> bool {
        let d = domain.to_ascii_lowercase();
        let l = local.to_ascii_lowercase();
        if RESERVED_DOMAINS
            .iter()
            .any(|r| d == *r || d.ends_with(&[b".", *r].concat()))
        {
            return false;
        }
        if RESERVED_TLDS.iter().any(|t| d.ends_with(t)) {
            return false;
        }
        if d.ends_with(b"noreply.github.com")
            || l.starts_with(b"noreply")
            || l.starts_with(b"no-reply")
            || l == b"git"
        {
            return false;
        }
        if FILE_EXTENSIONS.iter().any(|e| d.ends_with(e))
            || d.first().is_some_and(u8::is_ascii_digit)
        {
            return false;
        }
        true
    }

    #[test]
    fn email_reportability_agrees_with_the_lowercasing_reference() {
        let mut next = splitmix64(0xE4A1);
        let parts: [&[u8]; 18] = [
            b"example.com",
            b"EXAMPLE.org",
            b"example.net",
            b"localhost",
            b"mail.",
            b"xexample.com",
            b".Test",
            b".invalid",
            b".local",
            b".internal",
            b"noreply.github.com",
            b"No-Reply",
            b"git",
            b".PNG",
            b".rs",
            b"2x",
            b"acme",
            b".io",
        ];
        let pick = |next: &mut dyn FnMut() -> u64| {
            let n = (next() % 4) as usize;
            (0..n)
                .flat_map(|_| {
                    parts[(next() % parts.len() as u64) as usize]
                        .iter()
                        .copied()
                })
                .collect::<Vec<u8>>()
        };
        let (mut kept, mut dropped) = (0, 0);
        for _ in 0..20_000 {
            let local = pick(&mut next);
            let domain = pick(&mut next);
            let want = email_is_reportable_lowercased(&local, &domain);
            assert_eq!(
                email_is_reportable(&local, &domain),
                want,
                "{:?}@{:?}",
                String::from_utf8_lossy(&local),
                String::from_utf8_lossy(&domain)
            );
            if want { kept += 1 } else { dropped += 1 }
        }
        assert!(
            kept > 1000 && dropped > 1000,
            "{kept} kept, {dropped} dropped"
        );
    }

    #[test]
    fn reserved_example_domains_are_not_reportable() {
        assert!(!email_is_reportable(b"alice", b"example.com"));
        assert!(!email_is_reportable(b"bob", b"mail.example"));
        assert!(!email_is_reportable(b"icon", b"2x.png"));
        assert!(email_is_reportable(b"alice", b"acme-corp.io"));
    }
}
