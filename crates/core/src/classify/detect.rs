//! Scanning a draft for findings: one overlapping pass of the keyword automaton opens bounded,
//! merged windows per rule, each rule's regex runs only on its windows (rules without keywords on
//! the whole draft), the PII-number and binary-hint scanners run once, and overlapping matches are
//! resolved (lower tier, then earlier rule, wins) before line numbers and snippets are added.
//! Capture groups come from a capture search, except where they follow from the span of a
//! plain search (`email_matches`; `compile::Derive`: generic assignments, URL userinfo, prose):
//! there the backtracking search runs only when the split is ambiguous.

use std::collections::BTreeMap;
use std::ops::Range;

use super::compile::{Classifier, Derive, KeywordRule};
use super::rules::{Check, GATE_NAME_HEAD, GATE_NAME_TAIL, Gate, Scanner, Window};
use super::verify::{Groups, Raw, find_sub, private_key_end, verify};
use super::{EXAMPLE_FAMILY, Finding, SNIPPET_CHARS, binary, entropy, pii, tokens};

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
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `\s` without Unicode.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The first index from `i` (at most `max` bytes on) whose byte fails `keep`.
fn skip_fwd(bytes: &[u8], mut i: usize, max: usize, keep: impl Fn(u8) -> bool) -> usize {
    let lim = i.saturating_add(max).min(bytes.len());
    while i < lim && keep(bytes[i]) {
        i += 1;
    }
    i
}

/// The last index down from `i` (at most `max` bytes back) such that every byte in it..i passes
/// `keep`.
fn skip_back(bytes: &[u8], mut i: usize, max: usize, keep: impl Fn(u8) -> bool) -> usize {
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
    }
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
fn derived_groups(derive: Derive, hay: &[u8], ms: usize, me: usize) -> Option<(Groups, usize)> {
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
    }
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

/// All findings with their spans, overlap-resolved, in content order.
///
/// A draft of at least `c.split_min` bytes is scanned on two threads: on a scoped thread
/// spawned for the call, the scanners (numbers, Discord tokens, binary hints) and the rules
/// whose keyword is a plain literal (`@` wakes the email rule, `://` the URL userinfo rule:
/// [`literal_keyed_raws`] finds their hits without the keyword scan); on the calling one, the
/// keyword scan and every other rule. Their matches are concatenated, and the resolution sorts
/// them by tier, rule and position, each rule's in the order one thread gives them: the same
/// findings either way. A thread spawned for the call, not a pool's: a freshly spawned thread
/// is placed on an idle CPU, while a woken pool thread may be kept on the waker's (as this
/// machine's scheduler does), and the spawn costs about 45 us against the 0.3 ms or more of
/// work it takes over. When the spawn fails, the calling thread does that work too.
fn detect(content: &str, c: &Classifier) -> Vec<(Raw, u32)> {
    let bytes = content.as_bytes();
    let raws = if content.len() >= c.split_min {
        std::thread::scope(|s| {
            let other = || {
                let mut raws = literal_keyed_raws(bytes, c);
                raws.extend(scanner_raws(content, c));
                raws
            };
            let spawned = spawn_scoped(s, other);
            let mut raws = keyed_raws(bytes, c, true);
            let scanned = match spawned {
                Ok(h) => {
                    #[cfg(test)]
                    SPLIT_CALLS.with(|n| n.set(n.get() + 1));
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                }
                Err(_) => other(),
            };
            raws.extend(scanned);
            raws
        })
    } else {
        let mut raws = keyed_raws(bytes, c, false);
        raws.extend(scanner_raws(content, c));
        raws
    };
    resolve(content, c, raws)
}

#[cfg(test)]
thread_local! {
    /// Calls of [`detect`] on this thread that ran their scanners on a second one.
    pub(super) static SPLIT_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The second thread's spawn fails (the fallback's test).
    pub(super) static FAIL_SPAWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Spawns the scanners' thread of [`detect`].
fn spawn_scoped<'scope, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::io::Result<std::thread::ScopedJoinHandle<'scope, T>> {
    #[cfg(test)]
    if FAIL_SPAWN.with(std::cell::Cell::get) {
        return Err(std::io::Error::other("the test refuses the spawn"));
    }
    std::thread::Builder::new()
        .name("l0-scanners".into())
        .spawn_scoped(s, f)
}

/// Whether a hit `p..end` of a keyword of `k.rule` can be inside a match of the rule, so that
/// it opens (or extends) one of the rule's windows. Every test is implied by the rule's regex,
/// so a hit that fails one loses no finding.
#[inline(always)]
fn hit_wakes(bytes: &[u8], c: &Classifier, k: &KeywordRule, p: usize, end: usize) -> bool {
    let rule = &c.rules[k.rule];
    if k.exact.as_deref().is_some_and(|e| bytes[p..end] != *e) {
        return false;
    }
    if k.at_start && p > 0 && is_token_byte(bytes[p - 1]) {
        return false;
    }
    if rule.check == Check::Email && !email_hit(bytes, p) {
        return false;
    }
    !c.gates || gate_passes(bytes, p, end, rule.gate)
}

/// The matches of the rules whose only keyword is a plain literal
/// ([`Classifier::literal_keyed`]), their hits found by `memchr` or `memmem`: the same hits, in
/// the same order, as the keyword scan gives them, so the same windows and matches. Run beside
/// the keyword scan on a long draft.
fn literal_keyed_raws(bytes: &[u8], c: &Classifier) -> Vec<Raw> {
    let mut raws = Vec::new();
    let mut k8s_done = 0usize;
    for (lit, k) in &c.literal_keyed {
        let mut cur = [None];
        let mut wins = [Vec::new()];
        let window = c.rules[k.rule].window;
        let mut hit = |p: usize| {
            if hit_wakes(bytes, c, k, p, p + lit.len()) {
                add_hit(&mut cur, &mut wins, bytes, 0, p, window);
            }
        };
        match **lit {
            [b] => memchr::memchr_iter(b, bytes).for_each(&mut hit),
            _ => memchr::memmem::find_iter(bytes, lit).for_each(&mut hit),
        }
        let [mut wins] = wins;
        if let [Some(w)] = cur {
            wins.push((w.s, w.e));
        }
        search_rule(bytes, c, k.rule, &wins, &mut k8s_done, &mut raws);
    }
    raws
}

/// The matches of the keyword rules (and of the rules without keywords): the keyword scan
/// opens each rule's windows, its regex runs on them, and `verify` confirms each match. With
/// `skip_literal_keyed`, the rules [`literal_keyed_raws`] runs are left out.
fn keyed_raws(bytes: &[u8], c: &Classifier, skip_literal_keyed: bool) -> Vec<Raw> {
    let n_rules = c.rules.len();
    let mut cur: Vec<Option<Win>> = vec![None; n_rules];
    let mut wins: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n_rules];
    if let Some(kw) = &c.keywords {
        kw.hits(bytes, |pid, hit_start, hit_end| {
            for k in &c.keyword_rules[pid] {
                // Opaque to the optimiser, so that the bounds the gates and windows derive from
                // the hit are computed where a rule needs them: hoisted out of this loop, they
                // were computed for every hit (a third of the handler's instructions), though
                // most of its rules stop at their first test. The same values either way.
                let (p, end) = std::hint::black_box((hit_start, hit_end));
                let r = k.rule;
                if skip_literal_keyed && c.rules[r].literal_key {
                    continue;
                }
                if hit_wakes(bytes, c, k, p, end) {
                    add_hit(&mut cur, &mut wins, bytes, r, p, c.rules[r].window);
                }
            }
        });
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
        if wins[ri].is_empty() || (skip_literal_keyed && rule.literal_key) {
            continue;
        }
        search_rule(bytes, c, ri, &wins[ri], &mut k8s_done, &mut raws);
    }
    raws
}

/// The matches of rule `ri` in its windows `wins` (merged, in order): its regex over each, each
/// match confirmed by `verify`, pushed to `raws`.
fn search_rule(
    bytes: &[u8],
    c: &Classifier,
    ri: usize,
    wins: &[(usize, usize)],
    k8s_done: &mut usize,
    raws: &mut Vec<Raw>,
) {
    let rule = &c.rules[ri];
    // compiled on first use: only rules something woke up
    let Some((re, slots)) = rule.regex.as_ref().and_then(|r| r.get()) else {
        return;
    };
    // the capture groups of this rule's searches, reused match after match (a `Captures`
    // per search was an allocation each, and its groups were looked up by name)
    let mut locs = re.capture_locations();
    for &(s, e) in wins {
        let hay = &bytes[s..e];
        if rule.needs_assign && !hay.iter().any(|&b| b == b'=' || b == b':') {
            continue;
        }
        if rule.check == Check::Email {
            email_matches(re, hay, |secret, at| {
                if pii::email_is_reportable(&hay[secret.start..at], &hay[at + 1..secret.end]) {
                    raws.push(Raw {
                        rule: ri,
                        snippet_start: s + secret.start,
                        span: s + secret.start..s + secret.end,
                        example: false,
                    });
                }
            });
        } else if slots.any {
            // Resume after the secret, not after the whole match: the trailing context byte
            // a rule consumed may be the leading context of the next token.
            let mut at = 0;
            while at <= hay.len() {
                // the groups of a rule that can derive them from a plain search's span,
                // else (or when they do not follow from it) from a capture search
                let derived = if rule.derive == Derive::Captures {
                    None
                } else {
                    let Some(m) = re.find_at(hay, at) else {
                        break;
                    };
                    derived_groups(rule.derive, hay, m.start(), m.end())
                };
                let (g, next) = match derived {
                    Some((g, next)) => {
                        let shift = |r: Range<usize>| s + r.start..s + r.end;
                        let g = Groups {
                            whole: shift(g.whole),
                            secret: g.secret.map(shift),
                            key: g.key.map(shift),
                            user: g.user.map(shift),
                            domain: g.domain.map(shift),
                        };
                        (g, next)
                    }
                    None => {
                        if re.captures_read_at(&mut locs, hay, at).is_none() {
                            break;
                        }
                        let Some(g) = Groups::of(&locs, slots, s) else {
                            break;
                        };
                        let next = slots
                            .s
                            .and_then(|i| locs.get(i))
                            .map_or(g.whole.end - s, |(_, e)| e);
                        (g, next)
                    }
                };
                verify(ri, rule, bytes, &g, k8s_done, raws);
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
                                example: false,
                            });
                        }
                        false
                    }
                    Check::PemRedacted => private_key_end(bytes, span.end).is_none(),
                    Check::Putty | Check::K8sSecret => {
                        if re.captures_read_at(&mut locs, hay, m.start()).is_some()
                            && let Some(g) = Groups::of(&locs, slots, s)
                        {
                            verify(ri, rule, bytes, &g, k8s_done, raws);
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
                        example: false,
                    });
                }
            }
        }
    }
}

/// The matches of the hand-written scanners: PII numbers, Discord bot tokens, binary hints
/// (quiet inside PEM blocks).
fn scanner_raws(content: &str, c: &Classifier) -> Vec<Raw> {
    let bytes = content.as_bytes();
    let mut raws: Vec<Raw> = Vec::new();
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
                    example: false,
                });
            }
        });
    }
    if let Some(ri) = scanner_rule(Scanner::DiscordBot) {
        tokens::scan_discord(bytes, |span| {
            raws.push(Raw {
                rule: ri,
                snippet_start: span.start,
                span,
                example: false,
            });
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
                    example: false,
                });
            }
        });
    }
    raws
}

/// The matches `raws` snapped to char boundaries, overlap-resolved (lower tier, then earlier
/// rule, wins), in content order, each with its line.
fn resolve(content: &str, c: &Classifier, mut raws: Vec<Raw>) -> Vec<(Raw, u32)> {
    let bytes = content.as_bytes();
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
        .filter(|(r, _)| !r.example || classifier.report_examples)
        .map(|(r, line)| {
            let rule = &classifier.rules[r.rule];
            Finding {
                kind: if r.example {
                    EXAMPLE_FAMILY.to_string()
                } else {
                    rule.family.clone()
                },
                pattern: rule.name.clone(),
                r#match: snippet(content, r.snippet_start, &r.span),
                line,
                span: r.span,
            }
        })
        .collect()
}
