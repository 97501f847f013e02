//! Capture groups derived from a match's span (`derive.rs`, declared from there as its
//! `tests`) are what the regex's capture search gives, match for match: emails, generic
//! assignments, URL userinfo, prose and redacted shapes, over the generated corpus and random
//! text dense in the bytes that matter.

use super::*;
use crate::classify::testing::{Rng, clf, corpus, corpus_inputs, splitmix64, synth};
use crate::classify::{Classifier, compile, prefixes, rules};

/// The regex of the rule `name`, which takes its groups from the match span (`derive`).
fn derived_rule<'c>(c: &'c Classifier, name: &str, derive: compile::Derive) -> &'c compile::Regex {
    let rule = c.rules.iter().find(|r| r.name == name).unwrap();
    assert_eq!(rule.derive, derive);
    let (re, _) = rule.regex.as_ref().unwrap().get().unwrap();
    re
}

/// Every match of `re` in `hay`, walked as the scan walks them: `check` gets the match's
/// capture groups and its span (the same as group 0's, asserted) and answers where the walk
/// resumes (it moves on by at least a byte).
fn each_match(
    re: &compile::Regex,
    hay: &[u8],
    mut check: impl FnMut(&compile::TestCaptures, std::ops::Range<usize>) -> usize,
) {
    let mut at = 0;
    while at <= hay.len() {
        let Some(caps) = re.captures_at(hay, at) else {
            assert!(re.find_at(hay, at).is_none());
            break;
        };
        let m = re.find_at(hay, at).unwrap();
        assert_eq!(m.range(), caps.get(0).unwrap().range());
        at = check(&caps, m.range()).max(at + 1);
    }
}

/// The `email_address` rule's secret and `@` taken from a plain search (`derive::email_matches`)
/// are what the regex's capture groups give, match for match: over the generated corpus,
/// random text dense in address bytes, and edge cases (an address at either end of the text,
/// context bytes, non-ASCII bytes, dots and hyphens at the edges, several `@`).
#[test]
fn email_groups_from_a_plain_search_are_the_captured_ones() {
    let c = Classifier::default();
    let rule = c.rules.iter().find(|r| r.name == "email_address").unwrap();
    let (re, _) = rule.regex.as_ref().unwrap().get().unwrap();
    let captured = |hay: &[u8]| {
        let mut out = Vec::new();
        let mut at = 0;
        while at <= hay.len() {
            let Some(caps) = re.captures_at(hay, at) else {
                break;
            };
            let (s, u, d) = (
                caps.name("s").unwrap(),
                caps.name("u").unwrap(),
                caps.name("d").unwrap(),
            );
            assert_eq!((u.start(), d.end()), (s.start(), s.end()));
            out.push((s.range(), u.end()));
            at = s.end().max(at + 1);
        }
        out
    };
    let mut inputs: Vec<Vec<u8>> = [
        &b"a@b.co"[..],
        b"a@b.co.",
        b"-a@b.co-x",
        b"x a.b+c@d-e.f.gh, y@z.io\n",
        b"\xc3\xa9a@b.co\xc3\xa9",
        b"a@@b.co a@b@c.de",
        b"me@host.c0m me@host.museum1 me@x.y.zz",
        b"(mail: first.last@sub.example-mail.org).",
        b"git@github.com:acme/widgets.git",
        b"%@a.bc _@a-.b-c.de",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    let mut r = corpus::Rng(0x18_0022);
    for _ in 0..400 {
        inputs.push(corpus::ordinary_line(&mut r).into_bytes());
    }
    inputs.push(corpus::mixed_source(&mut r, 100_000).into_bytes());
    let mut rng = Rng(0x18_0023);
    let alphabet = b"ab9.-_%+@@@ .x\n\xc3";
    for _ in 0..3000 {
        let len = (rng.next() % 40) as usize;
        inputs.push(
            (0..len)
                .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize])
                .collect(),
        );
    }
    let mut total = 0;
    for input in &inputs {
        let mut got = Vec::new();
        email_matches(re, input, |s, at| got.push((s, at)));
        assert_eq!(
            got,
            captured(input),
            "input {:?}",
            String::from_utf8_lossy(input)
        );
        total += got.len();
    }
    assert!(total > 150, "only {total} addresses compared");
}

/// The generic assignment rule's groups derived from its match span
/// (`derive::assignment_groups`) are what its capture search gives, match for match, and the
/// scan resumes where it would: over the generated corpus, random assignments in many
/// syntaxes (quotes, brackets, type annotations, `base64:` values, `=` inside values,
/// terminators, non-ASCII bytes) and random text dense in those bytes. Nine in ten matches of
/// the corpus must take the derived path (else the optimisation is gone).
#[test]
fn assignment_groups_from_the_match_span_are_the_captured_ones() {
    let c = Classifier::default();
    let re = derived_rule(&c, rules::ASSIGNMENT_RULE, compile::Derive::Assignment);
    let mut inputs = corpus_inputs(
        0x18_0030,
        400,
        100_000,
        &[
            &b"api_key = \"abcdefghijklmnop1234\""[..],
            b"api_key==abcdefghijklmnop1234 ",
            b"api_key=abcdefghijklmnop=1234",
            b"token: string = abcdefghijklmnop1234;",
            b"token: string=abcdefghijklmnop1234,",
            b"secret_key=base64:abcdefghijklmnop1234\n",
            b"secret_key = BASE64:abcdefghijklmnopq\"",
            b"cfg[\"api_key\"] = 'abcdefghijklmnop1234'",
            b"x.token := `abcdefghijklmnop1234` y",
            b"auth_key => b'abcdefghijklmnop1234'",
            b"TOKEN=abcdefghijklmnop1234",
            b"my_token:\xc3\xa9abcdefghijklmnop1234 ",
        ],
    );
    let generated = inputs.len();
    let mut rng = Rng(0x18_0031);
    let pick = |rng: &mut Rng, xs: &[&'static str]| xs[(rng.next() % xs.len() as u64) as usize];
    let names = [
        "api_key",
        "token",
        "SECRET",
        "db.secret_value",
        "x-auth-key",
        "aws_access_key",
        "credentials",
        "my2key",
        "privateKey",
        "a",
        "",
    ];
    let seps = [
        "=",
        " = ",
        "==",
        ":",
        ": ",
        ":=",
        "=>",
        " => ",
        "\"]=",
        "']: ",
        ": string = ",
        ": &'static str =",
        ":  Vec<u8>=",
        "\t=\t",
        "= ",
        "::",
        " ",
    ];
    let values = [
        "\"", "'", "`", "b\"", "f'", "base64:", "BASE64:", "=", "==", "/", "+", "~", "-", "_", ":",
        " ", ",", ";", "\n", ".", "\u{e9}", "]",
    ];
    for _ in 0..20_000 {
        let mut s = String::new();
        for _ in 0..(1 + rng.next() % 3) {
            s.push_str(pick(&mut rng, &names));
            s.push_str(pick(&mut rng, &seps));
            for _ in 0..(rng.next() % 4) {
                s.push_str(pick(&mut rng, &values));
                let n = (4 + rng.next() % 36) as usize;
                s.push_str(&synth("", b"abcXYZ0189+/=_~-", n));
            }
            s.push_str(pick(&mut rng, &values));
        }
        inputs.push(s.into_bytes());
    }
    // (matches, derived) in the generated corpus, then in the random assignments
    let mut counts = [(0, 0), (0, 0)];
    for (i, input) in inputs.iter().enumerate() {
        let (total, derived) = &mut counts[usize::from(i >= generated)];
        let hay = input.as_slice();
        each_match(re, hay, |caps, whole| {
            *total += 1;
            if let Some(d) = assignment_groups(hay, whole.start, whole.end) {
                *derived += 1;
                let s = caps.name("s").map(|g| g.range());
                let s2 = caps.name("s2").map(|g| g.range());
                let want = Assignment {
                    whole: whole.clone(),
                    key: caps.name("k").unwrap().range(),
                    secret: s.clone().or(s2).unwrap(),
                    quoted: s.is_some(),
                };
                assert_eq!(d, want, "input {:?}", String::from_utf8_lossy(hay));
            }
            caps.name("s").map_or(whole.end, |g| g.end())
        });
    }
    let [
        (corpus_total, corpus_derived),
        (random_total, random_derived),
    ] = counts;
    assert!(
        corpus_total > 80 && corpus_derived * 10 > corpus_total * 9,
        "{corpus_derived} of {corpus_total} corpus matches derived"
    );
    assert!(
        random_total > 3000 && random_derived > 1000,
        "{random_derived} of {random_total} random matches derived"
    );
}

/// The URL userinfo rule's groups derived from its match span (`derive::userinfo_groups`)
/// are what its capture search gives, match for match: over the generated corpus and random
/// URLs whose users and passwords hold `:`, `@`, `/`, quotes and spaces. Every match of the
/// rule is derivable.
#[test]
fn userinfo_groups_from_the_match_span_are_the_captured_ones() {
    let c = Classifier::default();
    let re = derived_rule(&c, rules::USERINFO_RULE, compile::Derive::Userinfo);
    let mut inputs = corpus_inputs(
        0x18_0032,
        300,
        100_000,
        &[
            &b"postgres://app:s3cr3t@db.local/x"[..],
            b"x redis://:pw:with:colons@[::1]:6379",
            b"amqp://u@ser:p@ss@host.example",
            b"git+ssh://me:abc@@host ftp://a:b:c@d",
            b"https://user:\xc3\xa9pass@h.io",
        ],
    );
    let mut rng = Rng(0x18_0033);
    let pick = |rng: &mut Rng, xs: &[&'static str]| xs[(rng.next() % xs.len() as u64) as usize];
    let schemes = [
        "postgres",
        "mongodb+srv",
        "redis",
        "x",
        "a.b-c",
        "HTTPS",
        "1http",
        "",
    ];
    let parts = [
        ":", "@", "/", "//", "://", "\"", "'", " ", "<", "[", ".", "-", "\u{e9}",
    ];
    for _ in 0..8000 {
        let mut s = String::new();
        for _ in 0..(1 + rng.next() % 3) {
            s.push_str(pick(&mut rng, &schemes));
            s.push_str("://");
            // user, `:`, password, `@`, host, each with a random part now and then
            for sep in [":", "@", ""] {
                let n = (rng.next() % 10) as usize;
                s.push_str(&synth("", b"abXY09_%!.-[", n));
                if rng.next().is_multiple_of(3) {
                    s.push_str(pick(&mut rng, &parts));
                    let n = (rng.next() % 5) as usize;
                    s.push_str(&synth("", b"abXY09_%!.-[", n));
                }
                s.push_str(sep);
            }
            s.push(' ');
        }
        inputs.push(s.into_bytes());
    }
    let mut total = 0;
    for input in &inputs {
        let hay = input.as_slice();
        each_match(re, hay, |caps, m| {
            let want = (
                caps.name("u").unwrap().range(),
                caps.name("s").unwrap().range(),
            );
            let got = userinfo_groups(hay, m.start, m.end);
            assert_eq!(
                got,
                Some(want.clone()),
                "input {:?}",
                String::from_utf8_lossy(hay)
            );
            total += 1;
            want.1.end
        });
    }
    assert!(total > 2000, "only {total} matches compared");
}

/// The prose rule's groups derived from its match span (`derive::prose_groups`) are what its
/// capture search gives, match for match: over the generated corpus and random sentences that
/// name a credential (every name, `for ...` clauses, `is`/`was`/`=`/`:`, quotes, closing
/// punctuation, short values, tabs and line ends). Nine in ten matches must take the derived
/// path.
#[test]
fn prose_groups_from_the_match_span_are_the_captured_ones() {
    let c = Classifier::default();
    let re = derived_rule(&c, rules::PROSE_RULE, compile::Derive::Prose);
    let mut inputs = corpus_inputs(
        0x18_0034,
        300,
        100_000,
        &[
            &b"the password is hunter2hunter2."[..],
            b"Passwords: 'abc.def,ghi!' x",
            b"API key for the db was abcdefgh...\n",
            b"access-key = \"abcdefg\".. y",
            b"token:\tabcdefghijk)",
            b"secret abcdefg.,;",
            b"passcode is ab'cdefghij ",
        ],
    );
    let generated = inputs.len();
    let mut rng = Rng(0x18_0035);
    let pick = |rng: &mut Rng, xs: &[&'static str]| xs[(rng.next() % xs.len() as u64) as usize];
    let names = [
        "password",
        "Passwords",
        "passphrase",
        "passcode",
        "SECRET",
        "token",
        "api key",
        "api_key",
        "API-Key",
        "apikey",
        "access key",
        "accesskey",
        "passwordsx",
        "api",
    ];
    let clauses = ["", " for the db", " of prod", "\tto x.y-z", " on", " for"];
    let verbs = ["", " is", " was", " =", ":", " :", "\t:"];
    let gaps = [" ", "  ", "\t", " \"", " '", " `", "", "\n"];
    let tails = [
        "", ".", "...", ",", ")", "!?", "\"", "'.", "\"),", ":", " ", "\n", "x",
    ];
    for _ in 0..20_000 {
        let mut s = String::new();
        if rng.next().is_multiple_of(2) {
            s.push_str("so the ");
        }
        s.push_str(pick(&mut rng, &names));
        s.push_str(pick(&mut rng, &clauses));
        s.push_str(pick(&mut rng, &verbs));
        s.push_str(pick(&mut rng, &gaps));
        let n = (4 + rng.next() % 16) as usize;
        s.push_str(&synth("", b"abXY09.,;:!?)-_/", n));
        if rng.next().is_multiple_of(6) {
            // a quote inside or right after the value
            s.push_str(pick(&mut rng, &["'", "\"", "`"]));
            let n = (rng.next() % 4) as usize;
            s.push_str(&synth("", b"abXY09.)", n));
        }
        s.push_str(pick(&mut rng, &tails));
        s.push_str(pick(&mut rng, &tails));
        if rng.next().is_multiple_of(2) {
            s.push_str(" and more");
        }
        inputs.push(s.into_bytes());
    }
    let mut counts = [(0, 0), (0, 0)];
    for (i, input) in inputs.iter().enumerate() {
        let (total, derived) = &mut counts[usize::from(i >= generated)];
        let hay = input.as_slice();
        each_match(re, hay, |caps, m| {
            let want = (
                caps.name("k").unwrap().range(),
                caps.name("s").unwrap().range(),
            );
            *total += 1;
            if let Some(got) = prose_groups(hay, m.start, m.end) {
                *derived += 1;
                assert_eq!(got, want, "input {:?}", String::from_utf8_lossy(hay));
            }
            want.1.end
        });
    }
    let [
        (corpus_total, corpus_derived),
        (random_total, random_derived),
    ] = counts;
    assert!(
        corpus_total > 20 && corpus_derived * 10 > corpus_total * 9,
        "{corpus_derived} of {corpus_total} corpus matches derived"
    );
    assert!(
        random_total > 3000 && random_derived * 10 > random_total * 8,
        "{random_derived} of {random_total} random matches derived"
    );
}

/// Every redacted-prefix rule takes its secret from its match span (`derive::redacted_groups`),
/// and that is what its capture search gives (group `s`, `s2` or `secret`), match for match:
/// over random text made of the rule's prefixes (plain and LaTeX), versions, bodies, markers,
/// terminators and noise, for every rule.
#[test]
fn redacted_groups_from_the_match_span_are_the_captured_ones() {
    let c = clf();
    let mut next = splitmix64(0x43_0d21);
    let pick = |next: &mut dyn FnMut() -> u64, xs: &[&str]| {
        xs[(next() % xs.len() as u64) as usize].to_string()
    };
    let pieces = [
        "",
        " ",
        "`",
        "'",
        "\"",
        "*",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        "<",
        ">",
        "\\",
        "\\_",
        ".",
        "...",
        "\u{2026}",
        "\u{2022}\u{2022}\u{2022}",
        "-",
        "_",
        "\n",
        "X",
        "XXXX",
        "xxxxx",
        "***",
        "####",
        "{REDACTED}",
        "\\{REDACTED\\}",
        "[redacted]",
        "<hidden>",
        "(removed)",
        "REDACTED",
        "{{ redacted }}",
        "\\ldots",
        "api03-",
        "oat01",
        "v1_",
        "ab",
        "Ab9",
        "abcdef",
        "0123",
    ];
    let (mut total, mut alone) = (0usize, 0usize);
    for (i, (vendor, prefix, latex, _)) in prefixes::REDACTABLE_PREFIXES.iter().enumerate() {
        let name = format!("{vendor}_redacted_prefix");
        let rule = c.rules.iter().find(|r| r.name == name).unwrap();
        assert_eq!(rule.derive, Derive::Redacted(i), "{name}");
        let (re, _) = rule.regex.as_ref().unwrap().get().unwrap();
        for _ in 0..400 {
            let mut s = String::new();
            for _ in 0..3 {
                s.push_str(&pick(&mut next, &pieces));
                let p = if latex.is_empty() || next().is_multiple_of(2) {
                    *prefix
                } else {
                    *latex
                };
                s.push_str(p);
                for _ in 0..(next() % 3) {
                    s.push_str(&pick(&mut next, &pieces));
                }
            }
            let hay = s.as_bytes();
            each_match(re, hay, |caps, m| {
                let want = caps
                    .name("s")
                    .or_else(|| caps.name("s2"))
                    .or_else(|| caps.name("secret"))
                    .unwrap()
                    .range();
                let got = redacted_groups(hay, m.start, m.end, i);
                assert_eq!(got, Some(want.clone()), "{name}: {s:?}");
                total += 1;
                alone += usize::from(caps.name("s").is_none());
                want.end
            });
        }
    }
    assert!(
        total > 20_000 && alone > 5_000,
        "{total} matches, {alone} named alone"
    );
}
