//! Scoring a document too large to hold in memory at once (a chunk session being composed),
//! fed as consecutive pieces.
//!
//! Each piece is scored together with the tail of what came before it (`OVERLAP` bytes), so a
//! secret split across a chunk boundary is still found whole. A finding seen again in the
//! overlap is recognised by its rule and text and counted once. The score is the paper's
//! equation over all distinct findings, like [`super::findings_score`]: the size rules are
//! left out, because they exist to tell an agent to split a draft, and a composed document is
//! the split path's result.

use super::{Classifier, Finding, Verdict, family_contribution};
use std::collections::{BTreeMap, HashSet};

/// Bytes of the previous text rescanned with each piece: longer than any single-line secret
/// and than a 4096-bit RSA private key block.
const OVERLAP: usize = 16 * 1024;

/// Accumulates findings over a stream of pieces.
pub struct StreamScorer<'c> {
    classifier: &'c Classifier,
    /// The end of the text seen so far, rescanned with the next piece.
    carry: String,
    /// Trailing bytes of an incomplete UTF-8 sequence, completed by the next piece.
    pending: Vec<u8>,
    /// Newlines in the document before `carry` starts.
    lines_before: u32,
    seen: HashSet<(String, String)>,
    per_family: BTreeMap<String, HashSet<String>>,
    found: Vec<Finding>,
}

/// The outcome of a streamed score.
pub struct StreamReport {
    pub score: f64,
    pub verdict: Verdict,
    /// Distinct findings, with lines counted from the start of the document.
    pub findings: Vec<Finding>,
}

impl<'c> StreamScorer<'c> {
    pub fn new(classifier: &'c Classifier) -> Self {
        StreamScorer {
            classifier,
            carry: String::new(),
            pending: Vec::new(),
            lines_before: 0,
            seen: HashSet::new(),
            per_family: BTreeMap::new(),
            found: Vec::new(),
        }
    }

    /// Score the next piece of the document. Invalid UTF-8 is scored as replacement
    /// characters (which the binary hints notice), as for a single write.
    pub fn feed(&mut self, bytes: &[u8]) {
        let mut buf = std::mem::take(&mut self.pending);
        buf.extend_from_slice(bytes);
        let complete = match std::str::from_utf8(&buf) {
            Ok(_) => buf.len(),
            // An incomplete sequence at the very end waits for the next piece.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => buf.len(),
        };
        self.pending = buf.split_off(complete);
        let piece = String::from_utf8_lossy(&buf);
        self.scan(&piece);
    }

    fn scan(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        let window = std::mem::take(&mut self.carry) + piece;
        for f in super::findings(&window, self.classifier) {
            let text = window.get(f.span.clone()).unwrap_or("").to_string();
            if !self.seen.insert((f.pattern.clone(), text.clone())) {
                continue;
            }
            self.per_family
                .entry(f.kind.clone())
                .or_default()
                .insert(text);
            self.found.push(Finding {
                line: f.line.saturating_add(self.lines_before),
                ..f
            });
        }
        let mut cut = window.len().saturating_sub(OVERLAP);
        while !window.is_char_boundary(cut) {
            cut += 1;
        }
        let dropped = bytecount_newlines(&window.as_bytes()[..cut]);
        self.lines_before = self.lines_before.saturating_add(dropped);
        self.carry = window[cut..].to_string();
    }

    /// The score, verdict and findings of everything fed.
    pub fn finish(mut self) -> StreamReport {
        if !self.pending.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            self.scan(&rest);
        }
        let score: f64 = self
            .per_family
            .iter()
            .map(|(fam, set)| family_contribution(self.classifier.weight(fam), set.len()))
            .sum();
        let score = (score.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0;
        StreamReport {
            score,
            verdict: self.classifier.verdict(score),
            findings: self.found,
        }
    }
}

fn bytecount_newlines(b: &[u8]) -> u32 {
    u32::try_from(b.iter().filter(|&&c| c == b'\n').count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{findings_score, risk_score};

    fn key() -> String {
        crate::classify::testing::synth("ghp_", crate::classify::testing::ALNUM, 36)
    }

    fn score_whole(doc: &str, c: &Classifier) -> f64 {
        findings_score(doc, &super::super::findings(doc, c), c)
    }

    #[test]
    fn a_secret_split_across_pieces_is_found_once_with_its_document_line() {
        let c = Classifier::default();
        let doc = format!("line one\nline two\nconst T = \"{}\";\nend\n", key());
        let split = doc.find("gh").unwrap_or(0) + 10;
        let mut s = StreamScorer::new(&c);
        s.feed(&doc.as_bytes()[..split]);
        s.feed(&doc.as_bytes()[split..]);
        let r = s.finish();
        assert_eq!(r.findings.len(), 1, "{:?}", r.findings);
        assert_eq!(r.findings[0].line, 3);
        assert_eq!(r.score, score_whole(&doc, &c));
        assert!(r.verdict >= Verdict::Medium);
    }

    #[test]
    fn a_secret_repeated_in_the_overlap_counts_once_and_lines_keep_counting() {
        let c = Classifier::default();
        let filler = "let x = 1;\n".repeat(3000); // 33 KB: beyond the overlap
        let piece = format!("const T = \"{}\";\n", key());
        let mut s = StreamScorer::new(&c);
        s.feed(filler.as_bytes());
        s.feed(piece.as_bytes());
        s.feed(filler.as_bytes());
        s.feed(piece.as_bytes());
        let r = s.finish();
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].line, 3001);
    }

    #[test]
    fn utf8_split_inside_a_character_is_not_a_binary_hint() {
        let c = Classifier::default();
        let doc = "héllo wörld ".repeat(200);
        let bytes = doc.as_bytes();
        let mut s = StreamScorer::new(&c);
        for part in bytes.chunks(7) {
            s.feed(part);
        }
        let r = s.finish();
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        assert_eq!(risk_score(&doc, &c).detected_patterns.len(), 0);
    }
}
