//! Scanning a draft for findings: one overlapping pass of the keyword automaton opens bounded,
//! merged windows per rule, each rule's regex runs only on its windows (rules without keywords on
//! the whole draft), the PII-number and binary-hint scanners run once, and overlapping matches are
//! resolved (lower tier, then earlier rule, wins) before line numbers and snippets are added.
//! Capture groups come from a capture search, except where they follow from the span of a
//! plain search (`derive`: emails, generic assignments, URL userinfo, prose): there the
//! backtracking search runs only when the split is ambiguous. A keyword hit opens a window
//! only when it passes its rule's gate (`gates`).

use std::collections::BTreeMap;
use std::ops::Range;

use super::bytes::find_sub;
use super::compile::{Classifier, Derive, KeywordRule};
use super::derive::{derived_groups, email_matches};
use super::gates::{email_hit, gate_passes, is_token_byte};
use super::spec::{Check, Scanner, Window};
use super::verify::{Groups, Raw, private_key_end, verify};
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
/// scheduler may do), and the spawn costs a small fraction of the work it takes over
/// (figures: `docs/performance-log.md`, L0 speed). When the spawn fails, the calling thread does that work too.
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
    static SPLIT_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The second thread's spawn fails (the fallback's test).
    static FAIL_SPAWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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
                // would be computed for every hit, though most of its rules stop at their first
                // test. The same values either way.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::testing::{ALNUM, case_and_line_inputs, corpus, patterns, score, synth};
    use crate::classify::{SPLIT_MIN, Verdict, rules};

    #[test]
    fn findings_on_later_lines_get_their_own_line_numbers() {
        let key = synth("ghp_", ALNUM, 36);
        let s = format!(
            "x\n\n{key}\ny\nkey2 = {key}x\n\n\n{}\n",
            synth("glpat-", ALNUM, 20)
        );
        let lines: Vec<u32> = score(&s).detected_patterns.iter().map(|f| f.line).collect();
        assert_eq!(lines, vec![3, 8]);
    }

    #[test]
    fn match_is_at_most_16_chars_and_never_the_whole_secret() {
        let pw = synth("", ALNUM, 10);
        let r = score(&format!(
            "password = \"{pw}\"\n{}\n",
            synth("ghp_", ALNUM, 36)
        ));
        for f in &r.detected_patterns {
            assert!(f.r#match.chars().count() <= 16, "{f:?}");
        }
        assert!(!r.detected_patterns[0].r#match.contains(&pw));
    }

    #[test]
    fn line_numbers_are_one_based() {
        let r = score(&format!("a\nb\n{}\n", synth("ghp_", ALNUM, 36)));
        assert_eq!(r.detected_patterns[0].line, 3);
    }

    #[test]
    fn pathological_equals_run_is_linear_enough() {
        let s = "=".repeat(200_000);
        let r = score(&s);
        assert!(r.detected_patterns.is_empty());
    }

    #[test]
    fn tokens_separated_by_one_byte_are_both_found() {
        let s = format!(
            "{} {}\n{}",
            synth("ghp_", ALNUM, 36),
            synth("gho_", ALNUM, 36),
            synth("ghu_", ALNUM, 36)
        );
        assert_eq!(
            patterns(&s),
            vec![
                "github_classic_pat",
                "github_oauth_token",
                "github_user_to_server_token"
            ]
        );
    }

    #[test]
    fn many_pem_headers_without_bodies_are_linear_and_only_redacted_shapes() {
        let s = "-----BEGIN PRIVATE KEY-----\n".repeat(2000);
        let p = patterns(&s);
        assert_eq!(p.len(), 2000);
        assert!(p.iter().all(|r| r == "private_key_redacted"), "{p:?}");
        assert_eq!(score(&s).verdict, Verdict::Low);
    }

    #[test]
    fn unquoted_env_password_is_found_when_the_next_line_also_has_a_keyword() {
        let s = format!(
            "SMTP_PASSWORD={}\nSMTP_TOKEN_TTL=3600\n",
            synth("", ALNUM, 14)
        );
        assert_eq!(patterns(&s), vec!["password_assignment"]);
    }

    /// A draft scanned on two threads (the scanners and the rules keyed by a plain literal, `@`
    /// and `://`, on the second) has the findings, spans and lines it has on one: over the generated corpus, with
    /// every input split (the threshold at 0), and over long mixed source at the default one.
    /// Addresses are written around the windows' limits: at a draft's ends, on adjacent lines (one
    /// merged window), 256 bytes and more into a long line.
    #[test]
    fn two_threads_find_what_one_finds() {
        let one = Classifier::default().on_one_thread();
        let every = Classifier::default().split_from(0);
        let default = Classifier::default();
        let mut r = corpus::Rng(0x18_2a11);
        let mut inputs = case_and_line_inputs(&mut r, 6, 1500);
        for _ in 0..200 {
            let (n, m, k) = (1 + r.below(12), r.below(600), r.below(99));
            let user = r.chars(b"abcdefghij.", n);
            let pad = r.chars(b"ab c=\"", m);
            inputs.push(format!("{user}@example.dev"));
            inputs.push(format!(
                "{pad}redis://{user}:{pad}x{k}@h{k}/\nhttps://{user}:p{k}@h"
            ));
            inputs.push(format!("{pad} {user}@corp-{k}.io\nto: x{user}@b.co {pad}@"));
        }
        let splits_before = SPLIT_CALLS.with(std::cell::Cell::get);
        let (mut compared, mut emails, mut urls) = (0, 0, 0);
        for input in &inputs {
            let want = findings(input, &one);
            assert_eq!(findings(input, &every), want, "{input:?}");
            compared += want.len();
            emails += want.iter().filter(|f| f.pattern == "email_address").count();
            urls += want.iter().filter(|f| f.pattern == "url_password").count();
        }
        let long = corpus::mixed_source(&mut r, 300_000);
        let want = findings(&long, &one);
        assert_eq!(findings(&long, &default), want);
        emails += want.iter().filter(|f| f.pattern == "email_address").count();
        compared += want.len();
        assert!(
            compared > 1000 && emails > 300 && urls > 100,
            "{compared} findings, {emails} emails, {urls} URL passwords"
        );
        // every input went through the second thread, the long one at the default threshold too
        let splits = SPLIT_CALLS.with(std::cell::Cell::get) - splits_before;
        assert_eq!(splits, inputs.len() + 1);
    }

    /// Below the threshold, and with `on_one_thread`, no thread is spawned; when the spawn fails,
    /// the calling thread runs the scanners itself and finds the same; `split_from` moves the
    /// threshold.
    #[test]
    fn short_drafts_stay_on_one_thread_and_a_failed_spawn_loses_nothing() {
        let calls = || SPLIT_CALLS.with(std::cell::Cell::get);
        let default = Classifier::default();
        let mut r = corpus::Rng(0x18_2a12);
        let short = corpus::mixed_source(&mut r, SPLIT_MIN / 2);
        let mut long = corpus::mixed_source(&mut r, SPLIT_MIN * 2);
        // an opaque base64 blob for the scanners (the corpus's data URIs are images: quiet)
        long.push_str(&format!("blob = \"{}\"\n", r.chars(corpus::B64, 400)));
        assert!(short.len() < SPLIT_MIN && long.len() >= SPLIT_MIN);
        let before = calls();
        findings(&short, &default);
        findings(&long, &default.clone().on_one_thread());
        assert_eq!(calls(), before);
        let want = findings(&long, &default);
        assert_eq!(calls(), before + 1);
        assert!(want.iter().any(|f| f.pattern == "email_address"));
        // and a finding of a scanner (the second thread's other work)
        let scanners: Vec<String> = rules::builtin()
            .into_iter()
            .filter(|r| r.scanner.is_some())
            .map(|r| r.name)
            .collect();
        assert!(
            want.iter().any(|f| scanners.contains(&f.pattern)),
            "{want:?}"
        );
        FAIL_SPAWN.with(|f| f.set(true));
        let got = findings(&long, &default);
        FAIL_SPAWN.with(|f| f.set(false));
        assert_eq!(calls(), before + 1);
        assert_eq!(got, want);
        // `split_from` moves the threshold both ways; `usize::MAX` is one thread
        assert_eq!(
            findings(&short, &default.clone().split_from(short.len())),
            findings(&short, &default)
        );
        assert_eq!(calls(), before + 2);
        findings(&long, &default.clone().split_from(long.len() + 1));
        assert_eq!(calls(), before + 2);
        assert!(default.clone().split_from(usize::MAX).is_on_one_thread());
        assert!(!default.is_on_one_thread());
    }
}
