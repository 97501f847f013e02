//! The keyword scan (`keywords.rs`, declared from there as its `tests`): the scan's own loop
//! over the DFA, the dense table and its two- and four-stream scans report what the reference
//! automaton reports, hit for hit and in order, over the generated corpus and keyword-dense text.

use super::*;
use crate::classify::testing::{Rng, corpus, corpus_inputs};
use crate::classify::{Classifier, compile, rules};

/// The built-in rules' keywords, lowercased, each once, in rule order.
fn builtin_keywords() -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for spec in rules::builtin() {
        for kw in &spec.keywords {
            let w = kw.to_ascii_lowercase();
            if !words.contains(&w) {
                words.push(w);
            }
        }
    }
    words
}

/// A keyword scan: reports each `(pattern, start, end)` of `input` to `hit`.
type Scan<'a> = &'a mut dyn FnMut(usize, usize, usize);

/// Asserts that two keyword scans report the same hits in the same order over every input;
/// returns how many hits were compared.
fn same_hits(
    inputs: &[Vec<u8>],
    want: impl Fn(&[u8], Scan<'_>),
    got: impl Fn(&[u8], Scan<'_>),
) -> usize {
    let mut total = 0;
    for input in inputs {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        want(input, &mut |p, s, e| a.push((p, s, e)));
        got(input, &mut |p, s, e| b.push((p, s, e)));
        assert_eq!(b, a, "input {:?}", String::from_utf8_lossy(input));
        total += b.len();
    }
    total
}

/// The scan's own loop over the keyword DFA (`keywords::keyword_hits`) reports exactly what the
/// overlapping iterator of an `AhoCorasick` over the same keywords reports, in the same order:
/// over the generated corpus, random text dense in keyword fragments, and edge cases (keywords
/// at both ends, nested and overlapping keywords, mixed case, non-ASCII bytes).
#[test]
fn keyword_scan_reports_what_the_overlapping_iterator_reports() {
    use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
    let words = builtin_keywords();
    let reference = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(&words)
        .unwrap();
    let kw = compile::build_ac(&words).unwrap();
    let dfa = &kw.reference_dfa();
    let mut inputs: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"password".to_vec(),
        b"PASSWORD passwd PassPhrase pass pwd".to_vec(),
        b"secret_access_key=x;aws_secret_key:".to_vec(),
        b"-----BEGIN RSA PRIVATE KEY-----".to_vec(),
        b"x\xc3\xa9token\xff\x00key\xe2\x80\xa6sk-ant-api".to_vec(),
        b"@@@:://://sv=Q~eyJeyJ".to_vec(),
    ];
    inputs.extend(corpus_inputs(0x18_0020, 400, 200_000, &[]));
    // random text built from keyword fragments, in random case, with separators between
    let mut rng = Rng(0x18_0021);
    for _ in 0..300 {
        let mut s = Vec::new();
        for _ in 0..(rng.next() % 40) {
            let w = words[(rng.next() % words.len() as u64) as usize].as_bytes();
            let (a, b) = (
                (rng.next() % (w.len() as u64 + 1)) as usize,
                (rng.next() % (w.len() as u64 + 1)) as usize,
            );
            for &c in &w[a.min(b)..] {
                s.push(if rng.next().is_multiple_of(2) {
                    c.to_ascii_uppercase()
                } else {
                    c
                });
            }
            let seps: [&[u8]; 5] = [b"", b" ", b"_", b"\xc3\xa9", b"="];
            s.extend_from_slice(seps[(rng.next() % 5) as usize]);
        }
        inputs.push(s);
    }
    let total = same_hits(
        &inputs,
        |input, hit| {
            for m in reference.find_overlapping_iter(input) {
                hit(m.pattern().as_usize(), m.start(), m.end());
            }
        },
        |input, hit| keyword_hits(dfa, input, hit),
    );
    assert!(total > 5_000, "only {total} hits compared");
}

/// The dense keyword table is the DFA of its keywords, transition by transition (a walk of
/// both automata in step over every byte from every pair of states reached): for the built-in
/// keywords, and for random sets of short words over a small alphabet, where keywords are
/// prefixes, suffixes and infixes of each other, come in both cases and hold bytes outside
/// ASCII, so failure states chain deep.
#[test]
fn the_keyword_table_is_the_dfa_of_its_keywords() {
    let kw = compile::build_ac(&builtin_keywords()).unwrap();
    let pairs = kw.table_is_the_dfa().unwrap();
    assert!(pairs > 500, "only {pairs} state pairs checked");
    let mut rng = Rng(0x18_0040);
    let alphabet: &[&[u8]] = &[b"a", b"b", b"A", b"-", b"\xc3\xa9", b"k", b"K"];
    for _ in 0..200 {
        let words: Vec<String> = (0..1 + rng.next() % 12)
            .map(|_| {
                let mut w = Vec::new();
                for _ in 0..1 + rng.next() % 6 {
                    w.extend_from_slice(alphabet[(rng.next() % alphabet.len() as u64) as usize]);
                }
                String::from_utf8(w).unwrap()
            })
            .collect();
        let kw = compile::build_ac(&words).unwrap();
        assert!(kw.has_table());
        if let Err(e) = kw.table_is_the_dfa() {
            panic!("keywords {words:?}: {e}");
        }
    }
    // an empty keyword (no rule has one) is left to the crate's DFA, not put in the table
    let with_empty = compile::build_ac(&["ab".to_string(), String::new()]).unwrap();
    assert!(!with_empty.has_table());
    let mut hits = Vec::new();
    with_empty.hits(b"xab", |p, s, e| hits.push((p, s, e)));
    assert!(hits.contains(&(0, 1, 3)), "{hits:?}");
}

/// The dense keyword table (`keywords::Keywords::hits`) reports what the loop over the DFA's
/// own transitions (`keywords::keyword_hits`, the routine it replaced) reports, hit for hit and
/// in the same order: over the corpus, random keyword-dense text, and every keyword placed at
/// each offset around the 8-byte blocks of the scan (so matches straddle block edges and end
/// on the last byte). The built-in keywords fit the table, so it is the path `detect` takes.
#[test]
fn keyword_table_reports_what_the_dfa_loop_reports() {
    let c = Classifier::default();
    let kw = c.keywords.as_ref().unwrap();
    assert!(
        kw.has_table(),
        "the built-in keywords no longer fit the dense table"
    );
    let dfa = kw.reference_dfa();
    let words = builtin_keywords();
    let mut inputs: Vec<Vec<u8>> = vec![Vec::new(), b"x".to_vec(), b"\xff\x00".to_vec()];
    for w in &words {
        for pad in 0..17 {
            let mut s = vec![b'.'; pad];
            s.extend(w.bytes().map(|b| b.to_ascii_uppercase()));
            inputs.push(s.clone());
            s.extend_from_slice(b" key=");
            s.extend(w.bytes());
            inputs.push(s);
        }
    }
    inputs.extend(corpus_inputs(0x18_0030, 200, 200_000, &[]));
    let mut rng = Rng(0x18_0031);
    for _ in 0..300 {
        let mut s = Vec::new();
        for _ in 0..(rng.next() % 40) {
            let w = words[(rng.next() % words.len() as u64) as usize].as_bytes();
            let a = (rng.next() % (w.len() as u64 + 1)) as usize;
            for &c in &w[a / 2..] {
                s.push(if rng.next().is_multiple_of(2) {
                    c.to_ascii_uppercase()
                } else {
                    c
                });
            }
            let seps: [&[u8]; 6] = [b"", b" ", b"_", b"\xc3\xa9", b"=", b"\x00\xff"];
            s.extend_from_slice(seps[(rng.next() % 6) as usize]);
        }
        inputs.push(s);
    }
    let total = same_hits(
        &inputs,
        |input, hit| keyword_hits(&dfa, input, hit),
        |input, hit| kw.hits(input, hit),
    );
    assert!(total > 20_000, "only {total} hits compared");
}

/// At least `len` bytes of the built-in rules' keywords drawn at random, each followed by
/// nothing, a space or `=`: text where keywords overlap and straddle any split.
fn keyword_dense(rng: &mut Rng, len: usize) -> Vec<u8> {
    let words: Vec<&str> = rules::builtin()
        .iter()
        .flat_map(|s| s.keywords.clone())
        .collect();
    let mut s = Vec::new();
    while s.len() < len {
        s.extend(words[(rng.next() % words.len() as u64) as usize].bytes());
        s.extend_from_slice([&b""[..], b" ", b"="][(rng.next() % 3) as usize]);
    }
    s
}

/// The keyword scan split into two interleaved streams (`Table::split_rows` with one split,
/// taken for drafts of 4 KB to 16 KB) finds the match rows of one stream over the whole input, for every split from
/// the longest keyword to half the input, on keyword-dense text where keywords straddle the
/// split, and on the corpus.
#[test]
fn the_two_stream_keyword_scan_is_the_single_stream_one() {
    let c = Classifier::default();
    let kw = c.keywords.as_ref().unwrap();
    let lead = kw.max_len();
    assert!(lead > 10, "{lead}");
    let mut rng = Rng(0x18_0033);
    let mut compared = 0;
    for _ in 0..40 {
        let s = keyword_dense(&mut rng, 300);
        let want = kw.hits_split(&s, None);
        for split in lead..=s.len() / 2 {
            assert_eq!(
                kw.hits_split(&s, Some(split)),
                want,
                "split {split} of {:?}",
                String::from_utf8_lossy(&s)
            );
            compared += 1;
        }
    }
    let mut r = corpus::Rng(0x18_0034);
    let big = corpus::mixed_source(&mut r, 50_000).into_bytes();
    let want = kw.hits_split(&big, None);
    for split in [lead, lead + 1, 4096, 20_001, big.len() / 2] {
        assert_eq!(kw.hits_split(&big, Some(split)), want, "split {split}");
    }
    assert!(
        compared > 3000 && want.len() > 500,
        "{compared} splits, {} rows",
        want.len()
    );
}

/// The four-stream keyword scan (drafts of 16 KB or more) finds the single stream's match
/// rows too: random splits on keyword-dense text, the tightest ones included, and the
/// quarters the scan itself takes on the corpus.
#[test]
fn the_four_stream_keyword_scan_is_the_single_stream_one() {
    let c = Classifier::default();
    let kw = c.keywords.as_ref().unwrap();
    let lead = kw.max_len() - 1;
    let mut rng = Rng(0x18_0035);
    let mut compared = 0;
    for _ in 0..200 {
        let s = keyword_dense(&mut rng, 400);
        let want = kw.hits_split(&s, None);
        let n = s.len();
        for _ in 0..30 {
            // the first part, then each later one at least as long as it less `lead`
            let first = lead + (rng.next() as usize) % (n / 4 - lead);
            let room = |at: usize| at + first - lead;
            let s1 = first;
            let s2 = room(s1) + (rng.next() as usize) % (n - room(s1) - 2 * (first - lead)).max(1);
            let s3 = room(s2) + (rng.next() as usize) % (n - room(s2) - (first - lead)).max(1);
            if s3 + first - lead > n || s2 >= s3 {
                continue;
            }
            assert_eq!(
                kw.hits_split4(&s, [s1, s2, s3]),
                want,
                "splits {:?} of {:?}",
                [s1, s2, s3],
                String::from_utf8_lossy(&s)
            );
            compared += 1;
        }
        // the tightest: every part as short as allowed
        let t = [lead, 2 * lead.max(1), 3 * lead.max(1)];
        if t[2] + lead <= n {
            assert_eq!(kw.hits_split4(&s, t), want, "splits {t:?}");
        }
    }
    let mut r = corpus::Rng(0x18_0036);
    let big = corpus::mixed_source(&mut r, 80_000).into_bytes();
    let n = big.len();
    let want = kw.hits_split(&big, None);
    assert_eq!(kw.hits_split4(&big, [n / 4, n / 2, 3 * n / 4]), want);
    let mut through_hits = Vec::new();
    kw.hits(&big, |pid, start, end| through_hits.push((pid, start, end)));
    let mut single = Vec::new();
    keyword_hits(&kw.reference_dfa(), &big, |pid, start, end| {
        single.push((pid, start, end))
    });
    assert_eq!(
        through_hits, single,
        "the scan the classifier takes at {n} bytes"
    );
    assert!(
        compared > 3000 && want.len() > 500,
        "{compared} splits, {} rows",
        want.len()
    );
}

/// A keyword set too large for the dense table falls back to the DFA's own transitions and
/// still reports every hit.
#[test]
fn a_keyword_set_too_large_for_the_table_falls_back_to_the_dfa() {
    let mut rng = Rng(0x18_0032);
    let words: Vec<String> = (0..3000)
        .map(|_| {
            (0..12)
                .map(|_| char::from(b'a' + (rng.next() % 26) as u8))
                .collect()
        })
        .collect();
    let kw = compile::build_ac(&words).unwrap();
    assert!(!kw.has_table());
    let text = format!("x {} y {}", words[7], words[2999].to_ascii_uppercase());
    let mut got = Vec::new();
    kw.hits(text.as_bytes(), |p, s, e| got.push((p, s, e)));
    assert_eq!(got, vec![(7, 2, 14), (2999, 17, 29)]);
}
