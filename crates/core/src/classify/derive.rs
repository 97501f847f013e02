//! Capture groups derived from a match's span instead of a capture search (the backtracking
//! search for groups was the costliest part of scoring text full of matches): emails
//! (`email_matches`) and the rules `compile::Derive` names (generic assignments, URL userinfo,
//! prose, redacted prefixes). Each function gives the groups the capture search would give, or `None` when they do
//! not plainly follow from the span; then the capture search runs. Tests compare the two match
//! for match.

use std::ops::Range;

use super::compile::Derive;
use super::gates::{is_name_byte, is_space, is_token_byte, is_word_byte, skip_back};
use super::verify::Groups;

/// A byte of an email's local part in the `email_address` rule (`[A-Za-z0-9._%+\-]`).
fn is_local_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

/// The matches of the `email_address` rule's regex (`rules.rs`) in `hay`, as its captures would
/// give them, `(secret, index of the @)`, from plain searches: the backtracking search for the
/// capture groups was the costliest part of scoring ordinary text full of addresses. The groups
/// follow from the match: it opens with a context byte exactly when its first byte cannot be
/// in the local part (else `^` matched), ends with one exactly when its last byte cannot end
/// the domain (else `$` matched), and neither part can hold an `@`. The search resumes after
/// the secret, as for every rule with groups.
pub(super) fn email_matches(
    re: &super::compile::Regex,
    hay: &[u8],
    mut f: impl FnMut(Range<usize>, usize),
) {
    let mut at = 0;
    while at <= hay.len() {
        let Some(m) = re.find_at(hay, at) else {
            break;
        };
        let (ms, me) = (m.start(), m.end());
        let start = ms + usize::from(hay.get(ms).is_some_and(|&b| !is_local_byte(b)));
        let end = me
            - usize::from(me > ms && !(hay[me - 1].is_ascii_alphanumeric() || hay[me - 1] == b'-'));
        if start < end
            && let Some(k) = memchr::memchr(b'@', &hay[start..end])
        {
            f(start..end, start + k);
        }
        at = end.max(at + 1);
    }
}

/// A byte of the unquoted value of the generic assignment rule (`[A-Za-z0-9+/=_~\-]`).
fn is_assign_value_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'~' | b'-')
}

/// The groups of a match of the generic assignment rule (`rules::ASSIGNMENT_RULE`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Assignment {
    pub(super) whole: Range<usize>,
    /// Group `k`.
    pub(super) key: Range<usize>,
    /// Group `s` (quoted) or `s2`.
    pub(super) secret: Range<usize>,
    /// The value is quoted: the secret is group `s`.
    pub(super) quoted: bool,
}

/// The groups of the generic assignment rule's match `ms..me` in `hay`, as its capture search
/// would give them, when they follow from the span alone (`None` otherwise: then a capture
/// search runs). The rule is `(?P<k>NAME) SEP \s{0,4} (QUOTED | UNQUOTED)`:
/// - `k` holds only name bytes and every separator opens with a non-name byte, so `k` runs
///   from the match start to the first non-name byte;
/// - a quoted value ends the match with its closing quote (an unquoted one cannot end with a
///   quote) and holds no quote, so `s` runs from the last quote before the closing one;
/// - an unquoted value (`s2`) ends before the terminator (whitespace, `,`, `;`) or at the end;
///   it starts right after the name's `=` in `NAME=value`, else at the start of the run of
///   value bytes before its end, unless the run holds an `=` (a separator may end with one, so
///   the split is ambiguous) or follows `base64:` (an optional prefix inside the group): those
///   cases are left to the capture search.
pub(super) fn assignment_groups(hay: &[u8], ms: usize, me: usize) -> Option<Assignment> {
    let quote = |b: u8| matches!(b, b'"' | b'\'' | b'`');
    let kend = ms + hay.get(ms..me)?.iter().position(|&b| !is_name_byte(b))?;
    let last = *hay.get(me.checked_sub(1)?)?;
    if quote(last) {
        let q = kend + hay.get(kend..me - 1)?.iter().rposition(|&b| quote(b))?;
        return Some(Assignment {
            whole: ms..me,
            key: ms..kend,
            secret: q + 1..me - 1,
            quoted: true,
        });
    }
    let end = if is_space(last) || last == b',' || last == b';' {
        me - 1
    } else if is_assign_value_byte(last) && me == hay.len() {
        me
    } else {
        return None;
    };
    // `NAME=value`: an `=` after the name not followed by `=`, `>` or a space can only be the
    // `=` separator (`==` and `=>` need their second byte, the others open with `:`), with no
    // space after it, so the value starts right after it
    let next = hay.get(kend + 1).copied();
    if hay[kend] == b'='
        && next.is_some_and(|b| b != b'=' && b != b'>' && !is_space(b))
        && kend + 1 < end
    {
        return Some(Assignment {
            whole: ms..me,
            key: ms..kend,
            secret: kend + 1..end,
            quoted: false,
        });
    }
    let start = skip_back(hay, end, end.checked_sub(kend)?, is_assign_value_byte);
    let after_base64 = start >= 7 && hay[start - 7..start].eq_ignore_ascii_case(b"base64:");
    if start <= kend || start == end || after_base64 || hay[start..end].contains(&b'=') {
        return None;
    }
    Some(Assignment {
        whole: ms..me,
        key: ms..kend,
        secret: start..end,
        quoted: false,
    })
}

/// The groups (in `hay`) of the match `ms..me` of a rule that derives them, and where the
/// search resumes (after group `s`, else after the match): `None` when they do not follow
/// from the span.
pub(super) fn derived_groups(
    derive: Derive,
    hay: &[u8],
    ms: usize,
    me: usize,
) -> Option<(Groups, usize)> {
    match derive {
        Derive::Captures => None,
        Derive::Assignment => assignment_groups(hay, ms, me).map(|d| {
            let next = if d.quoted { d.secret.end } else { d.whole.end };
            let g = Groups {
                whole: d.whole,
                secret: Some(d.secret),
                key: Some(d.key),
                user: None,
                domain: None,
            };
            (g, next)
        }),
        Derive::Userinfo => userinfo_groups(hay, ms, me)
            .map(|(user, secret)| whole_match(ms..me, secret, None, Some(user))),
        Derive::Prose => prose_groups(hay, ms, me)
            .map(|(key, secret)| whole_match(ms..me, secret, Some(key), None)),
        Derive::Redacted(i) => {
            redacted_groups(hay, ms, me, i).map(|secret| whole_match(ms..me, secret, None, None))
        }
    }
}

/// `[A-Za-z]{2,8}[0-9]{1,3}[-_]?` or nothing: the version a prefix named alone may carry
/// (`prefixes::VERSION`).
fn is_version(v: &[u8]) -> bool {
    if v.is_empty() {
        return true;
    }
    let v = v
        .strip_suffix(b"-")
        .or_else(|| v.strip_suffix(b"_"))
        .unwrap_or(v);
    let letters = v.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let digits = v[letters..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    (2..=8).contains(&letters) && (1..=3).contains(&digits) && letters + digits == v.len()
}

/// The secret of the match `ms..me` of the redacted-prefix rule of
/// `prefixes::REDACTABLE_PREFIXES[i]`, as its capture search would give it (group `s`, `s2` or
/// `secret`): the match without the context byte `BEGIN` (or the quoted form's opening quote)
/// took before the prefix, and, when it is `PREFIX VERSION` and one non-token byte (a prefix
/// named alone, or the quoted form's closing quote), without that byte. A match with a marker
/// (`PREFIX BODY MARKER`) never has that shape: a marker that ends with a non-token byte holds
/// another non-token byte before it (`{REDACTED}`, `...`, `***`, `…`).
pub(super) fn redacted_groups(hay: &[u8], ms: usize, me: usize, i: usize) -> Option<Range<usize>> {
    let (_, prefix, latex, _) = super::prefixes::REDACTABLE_PREFIXES.get(i)?;
    let m = hay.get(ms..me)?;
    let start = usize::from(!is_token_byte(*m.first()?));
    let rest = &m[start..];
    let p = [prefix.as_bytes(), latex.as_bytes()]
        .into_iter()
        .filter(|p| !p.is_empty() && rest.starts_with(p))
        .max_by_key(|p| p.len())?;
    let tail = &rest[p.len()..];
    let alone = tail
        .split_last()
        .is_some_and(|(&last, version)| !is_token_byte(last) && is_version(version));
    Some(ms + start..me - usize::from(alone))
}

/// Groups whose whole is the match, the search resuming after the secret.
fn whole_match(
    whole: Range<usize>,
    secret: Range<usize>,
    key: Option<Range<usize>>,
    user: Option<Range<usize>>,
) -> (Groups, usize) {
    let next = secret.end;
    let g = Groups {
        whole,
        secret: Some(secret),
        key,
        user,
        domain: None,
    };
    (g, next)
}

/// Groups `k` and `s` of the prose rule's match `ms..me` in `hay` (`NAME [for X] [is|was|=|:]
/// [ \t]+ ["'`]? (?P<s>[^\s"'`]{8,128}?) ["'`]? [.,;:!?)]* (\s|$)`), as its capture search
/// would give them, or `None` when they do not plainly follow (then a capture search runs):
/// - `k` is the first of the rule's names (`passwords?` greedy) that starts the match and ends
///   at a word boundary;
/// - the tail after `s` holds no whitespace up to the match's last byte (a whitespace, or the
///   end of the text), and `s` holds none, so `s` lies in the last whitespace-free stretch of
///   the match, right after its space or tab and an optional quote;
/// - `s` is lazy: it ends at the first place, at least 8 bytes on, from which the rest is an
///   optional quote and closing punctuation.
pub(super) fn prose_groups(
    hay: &[u8],
    ms: usize,
    me: usize,
) -> Option<(Range<usize>, Range<usize>)> {
    let quote = |b: u8| matches!(b, b'"' | b'\'' | b'`');
    let punct = |b: u8| matches!(b, b'.' | b',' | b';' | b':' | b'!' | b'?' | b')');
    let m = hay.get(ms..me)?;
    let lower = |i: usize| m.get(i).map(u8::to_ascii_lowercase);
    let has = |at: usize, w: &[u8]| {
        m.get(at..at + w.len())
            .is_some_and(|x| x.eq_ignore_ascii_case(w))
    };
    let boundary = |at: usize| !hay.get(ms + at).copied().is_some_and(is_word_byte);
    // the name, tried in the rule's order
    let sep = |at: usize| usize::from(matches!(m.get(at), Some(b' ' | b'_' | b'-')));
    let klen = if has(0, b"password") {
        if lower(8) == Some(b's') && boundary(9) {
            9
        } else {
            8
        }
    } else if has(0, b"passphrase") {
        10
    } else if has(0, b"passcode") {
        8
    } else if has(0, b"secret") {
        6
    } else if has(0, b"token") {
        5
    } else if has(0, b"api") && has(3 + sep(3), b"key") {
        6 + sep(3)
    } else if has(0, b"access") && has(6 + sep(6), b"key") {
        9 + sep(6)
    } else {
        return None;
    };
    if !boundary(klen) || klen > m.len() {
        return None;
    }
    // the end of the tail: the final whitespace, or the end of the text
    let last = *m.last()?;
    let end = if is_space(last) {
        m.len() - 1
    } else if me == hay.len() {
        m.len()
    } else {
        return None;
    };
    let ws = klen + m.get(klen..end)?.iter().rposition(|&b| is_space(b))?;
    if !matches!(m[ws], b' ' | b'\t') {
        return None;
    }
    let start = ws + 1 + usize::from(m.get(ws + 1).copied().is_some_and(quote));
    // the closing punctuation run, and an optional quote before it
    let mut p = end;
    while p > start && punct(m[p - 1]) {
        p -= 1;
    }
    let q = if p > start && quote(m[p - 1]) {
        p - 1
    } else {
        p
    };
    let s_end = q.max(start + 8);
    if s_end > end || s_end - start > 128 || m[start..s_end].iter().any(|&b| quote(b)) {
        return None;
    }
    Some((ms..ms + klen, ms + start..ms + s_end))
}

/// Groups `u` and `s` of the URL userinfo rule's match `ms..me` in `hay`
/// (`SCHEME://(?P<u>USER):(?P<s>PASSWORD)@X`), as its capture search would give them: the
/// scheme holds no `:`, so the first `:` of the match opens `://`; the user holds no `:`, so it
/// ends at the next one; the match ends with `@` and one host byte, so the password ends two
/// bytes before the end.
pub(super) fn userinfo_groups(
    hay: &[u8],
    ms: usize,
    me: usize,
) -> Option<(Range<usize>, Range<usize>)> {
    let m = hay.get(ms..me)?;
    let p = m.iter().position(|&b| b == b':')?;
    if m.get(p..p + 3)? != b"://" {
        return None;
    }
    let user_start = p + 3;
    let q = user_start + m.get(user_start..)?.iter().position(|&b| b == b':')?;
    let end = m.len().checked_sub(2)?;
    if m[end] != b'@' || q + 1 > end {
        return None;
    }
    Some((ms + user_start..ms + q, ms + q + 1..ms + end))
}

#[cfg(test)]
#[path = "tests_derive.rs"]
mod tests;
