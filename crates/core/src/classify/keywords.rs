//! The keyword automaton of the L0 classifier: every rule's keywords in one ASCII
//! case-insensitive Aho-Corasick automaton, and the dense transition table the scan follows.
//!
//! The table is the automaton's DFA transitions, renumbered (made from the keywords' trie
//! alone; the crate's DFA is built only when the table does not fit): its bytes
//! grouped into classes (one per
//! keyword byte, the two cases of a letter together, and one for every byte of no keyword),
//! each state a row of `stride` (a power of two at least the number of classes) `u16` entries
//! holding half the next row's offset (rows start at multiples of the even stride, so halved
//! offsets address twice the states a `u16` could), the non-match states' rows first so that
//! one comparison tells a match state. Twice a halved offset plus a class indexes the table,
//! whose length is a constant: no bounds check and no special-state test per byte (the
//! aho-corasick DFA's
//! `next_state` costs a class lookup, an addition, a bounds check and a load, then a
//! comparison for special states and another for match states). Built once per classifier
//! from the keywords' classes and their trie: each state's row is its failure state's row
//! with its own trie edges written over it, and its matches are its own keywords' then its
//! failure state's, so no automaton is built for it.
//! A keyword set too large for it (custom policy rules can add any number) is scanned through
//! the DFA's own transitions ([`keyword_hits`], also the tests' reference).

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind};

/// Entries of the dense table's rows: every `u16` is half a row offset (rows start at multiples
/// of the stride, an even number), so 2,048 states of stride 64 fit.
const TABLE: usize = 1 << 17;
/// Entries of the dense table: twice a half row offset (a `u16`) plus a class (a `u8`) indexes
/// it, so the index needs no bounds check.
const ENTRIES: usize = TABLE + 256;
/// Drafts shorter than this are scanned in one stream.
const TWO_STREAMS_MIN: usize = 4096;
/// Drafts at least this long are scanned in four streams.
const FOUR_STREAMS_MIN: usize = 16 * 1024;

/// The keywords' dense table, or the DFA for a keyword set too large for it.
#[derive(Debug)]
pub(super) struct Keywords {
    /// Built only when the table does not fit: the table is made from the keywords' trie,
    /// and determinising the automaton cost more than the rest of compiling the built-in
    /// rules.
    dfa: Option<DFA>,
    table: Option<Table>,
    /// The keywords, for the tests' reference DFA.
    #[cfg(test)]
    words: Vec<String>,
}

struct Table {
    /// The class of each byte.
    class: [u8; 256],
    /// `trans[2 * row + class]`: the row of the next state, halved (a row is a state's index
    /// times the stride; every row and `start` and `first_match` are kept halved).
    trans: Box<[u16; ENTRIES]>,
    start: u16,
    /// Rows from here on are match states.
    first_match: u16,
    /// log2 of half the stride.
    half_shift: u32,
    /// The longest keyword, in bytes.
    max_len: usize,
    /// The matches of each match row, by `(row - first_match) >> half_shift`: a range of `pats`.
    matches: Vec<(u32, u32)>,
    /// `(pattern, length)` of the matches of the match rows, in the DFA's order.
    pats: Vec<(usize, usize)>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("stride", &(2usize << self.half_shift))
            .field("match_states", &self.matches.len())
            .finish()
    }
}

impl Keywords {
    /// The automaton of the keywords `words` (ASCII case-insensitive, every match, overlapping
    /// ones included): the dense table built from their trie, else the DFA. `None` when the
    /// automaton cannot be built.
    pub(super) fn new(words: &[String]) -> Option<Keywords> {
        let table = Table::build(words);
        let dfa = match table {
            Some(_) => None,
            None => Some(build_dfa(words)?),
        };
        Some(Keywords {
            dfa,
            table,
            #[cfg(test)]
            words: words.to_vec(),
        })
    }

    /// The DFA of the same keywords, which the tests compare the table with.
    #[cfg(test)]
    fn reference_dfa(&self) -> DFA {
        build_dfa(&self.words).unwrap()
    }

    /// Whether the dense table is in use (the tests check that the built-in keywords fit).
    #[cfg(test)]
    fn has_table(&self) -> bool {
        self.table.is_some()
    }

    /// Checks the dense table against the DFA of the same keywords, transition by
    /// transition: from the pair of start states, every byte must lead both to a match state
    /// or both to a non-match one, with the same patterns in the same order, and every pair so
    /// reached is checked in turn. Returns the number of pairs checked, or what differed.
    #[cfg(test)]
    fn table_is_the_dfa(&self) -> Result<usize, String> {
        let t = self.table.as_ref().ok_or("no table")?;
        let dfa = self.reference_dfa();
        let patterns = |row: u16| -> Vec<(usize, usize)> {
            if row < t.first_match {
                return Vec::new();
            }
            let (a, b) = t.matches[usize::from((row - t.first_match) >> t.half_shift)];
            t.pats[a as usize..b as usize].to_vec()
        };
        let dfa_patterns = |sid: StateID| -> Vec<(usize, usize)> {
            if !dfa.is_match(sid) {
                return Vec::new();
            }
            (0..dfa.match_len(sid))
                .map(|k| {
                    let pid = dfa.match_pattern(sid, k);
                    (pid.as_usize(), dfa.pattern_len(pid))
                })
                .collect()
        };
        let first = (
            t.start,
            dfa.start_state(Anchored::No).map_err(|e| e.to_string())?,
        );
        let mut seen = std::collections::HashSet::from([first]);
        let mut todo = vec![first];
        while let Some((row, sid)) = todo.pop() {
            for b in 0..=255u8 {
                let next = (
                    t.trans[2 * usize::from(row) + usize::from(t.class[usize::from(b)])],
                    dfa.next_state(Anchored::No, sid, b),
                );
                if patterns(next.0) != dfa_patterns(next.1) {
                    return Err(format!(
                        "byte {b:#04x} from row {row} / state {sid:?}: table {:?}, DFA {:?}",
                        patterns(next.0),
                        dfa_patterns(next.1)
                    ));
                }
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        Ok(seen.len())
    }

    /// The hits of `bytes` scanned as two streams split at `split` (the tests try every split
    /// where keywords straddle it), or as one stream for `None`.
    #[cfg(test)]
    fn hits_split(&self, bytes: &[u8], split: Option<usize>) -> Vec<(u16, usize)> {
        let t = self.table.as_ref().unwrap();
        let mut rows = Vec::new();
        match split {
            Some(at) => t.split_rows(bytes, [at], &mut rows),
            None => t.run(bytes, t.start, 0, &mut rows),
        }
        rows
    }

    /// The hits of `bytes` scanned as four streams split at `splits`.
    #[cfg(test)]
    fn hits_split4(&self, bytes: &[u8], splits: [usize; 3]) -> Vec<(u16, usize)> {
        let t = self.table.as_ref().unwrap();
        let mut rows = Vec::new();
        t.split_rows(bytes, splits, &mut rows);
        rows
    }

    /// The longest keyword (the tests' bound for a split).
    #[cfg(test)]
    fn max_len(&self) -> usize {
        self.table.as_ref().map_or(0, |t| t.max_len)
    }

    /// Every occurrence of every keyword in `bytes`, overlapping ones included, as
    /// `(pattern, start, end)`, in the order of `AhoCorasick::find_overlapping_iter` (by end,
    /// then longest first): what [`keyword_hits`] reports, through the table.
    pub(super) fn hits(&self, bytes: &[u8], mut f: impl FnMut(usize, usize, usize)) {
        let Some(t) = &self.table else {
            if let Some(dfa) = &self.dfa {
                keyword_hits(dfa, bytes, f);
            }
            return;
        };
        let mut rows = Vec::new();
        t.match_rows(bytes, &mut rows);
        for (row, end) in rows {
            let Some(&(a, b)) = t
                .matches
                .get(usize::from(row - t.first_match) >> t.half_shift)
            else {
                continue;
            };
            for &(pid, len) in t.pats.get(a as usize..b as usize).unwrap_or(&[]) {
                f(pid, end - len, end);
            }
        }
    }
}

/// A node of the keywords' trie while [`Table::build`] numbers the states.
struct Node {
    /// The length of its prefix.
    depth: usize,
    /// The sorted, folded keywords that start with its prefix.
    words: std::ops::Range<usize>,
    /// The node of its failure state.
    fail: usize,
    /// Its matches, as `(pattern, length)`: the keywords its prefix is (by pattern), then
    /// its failure state's matches.
    matches: Vec<(usize, usize)>,
}

impl Table {
    /// The table of the unanchored states of the standard Aho-Corasick automaton of `words`
    /// (ASCII case-insensitive, pattern `i` the `i`th word), or `None` when they do not fit
    /// in it (or a word is empty). Built from the words' trie alone: the automaton itself is
    /// not built (its NFA cost two fifths of compiling the classifier); the tests walk the
    /// table and the crate's DFA of the same words in step.
    fn build(words: &[String]) -> Option<Table> {
        if words.iter().any(String::is_empty) {
            return None;
        }
        // byte classes from the keywords, without probing the automaton for every byte: a byte
        // in no keyword takes every state where the start state does (no trie edge anywhere:
        // the failure links end at the start), so all such bytes share one class; an ASCII
        // letter shares its class with its other case (the automaton folds them)
        let mut used = [false; 256];
        for w in words {
            for b in w.bytes() {
                used[usize::from(b.to_ascii_lowercase())] = true;
            }
        }
        let mut class = [0u8; 256];
        let mut reps: Vec<u8> = Vec::new();
        let mut other: Option<u8> = None;
        for b in 0..=255u8 {
            let folded = b.to_ascii_lowercase();
            class[usize::from(b)] = if folded != b {
                class[usize::from(folded)]
            } else if used[usize::from(b)] {
                reps.push(b);
                u8::try_from(reps.len() - 1).ok()?
            } else {
                match other {
                    Some(c) => c,
                    None => {
                        reps.push(b);
                        let c = u8::try_from(reps.len() - 1).ok()?;
                        other = Some(c);
                        c
                    }
                }
            };
        }
        // (uppercase letters come before their lowercase partners: fill them now)
        for b in b'A'..=b'Z' {
            class[usize::from(b)] = class[usize::from(b.to_ascii_lowercase())];
        }
        // The states are the trie's nodes, the prefixes of the (folded) keywords, breadth
        // first. A node's children are the bytes that extend its prefix within some keyword;
        // every other class leads where it leads from the node's failure state (the node of
        // its longest proper suffix that is a prefix), which is shallower, so its row is
        // complete. A node's matches are the keywords its prefix is, by pattern, then its
        // failure state's matches (shallower, so complete too): the order of the crate's
        // automaton, which reports them in the same order.
        let mut folded: Vec<(Vec<u8>, usize)> = words
            .iter()
            .enumerate()
            .map(|(p, w)| (w.bytes().map(|b| b.to_ascii_lowercase()).collect(), p))
            .collect();
        folded.sort_unstable();
        let classes = reps.len();
        let mut nodes = vec![Node {
            depth: 0,
            words: 0..folded.len(),
            fail: 0,
            matches: Vec::new(),
        }];
        // `next[s * classes + c]`: the node the `s`th node goes to on class `c`
        let mut next: Vec<u32> = Vec::new();
        let mut k = 0;
        while k < nodes.len() {
            let (depth, fail) = (nodes[k].depth, nodes[k].fail);
            let (mut i, hi) = (nodes[k].words.start, nodes[k].words.end);
            // the failure state's row (the start state's: every class back to it), then this
            // node's own edges over it; what an edge's class led to before is the child's
            // failure state
            let row = next.len();
            if k == 0 {
                next.resize(row + classes, 0);
            } else {
                next.extend_from_within(fail * classes..(fail + 1) * classes);
            }
            // the keywords with this prefix, sorted: the prefix itself (if a keyword, once per
            // pattern) first, then the longer ones grouped by their next byte
            let mut matches = Vec::new();
            while i < hi && folded[i].0.len() == depth {
                matches.push((folded[i].1, depth));
                i += 1;
            }
            if k > 0 {
                matches.extend_from_slice(&nodes[fail].matches);
            }
            nodes[k].matches = matches;
            while i < hi {
                let b = folded[i].0[depth];
                let mut j = i + 1;
                while j < hi && folded[j].0[depth] == b {
                    j += 1;
                }
                let at = row + usize::from(class[usize::from(b)]);
                let child_fail = next[at] as usize;
                next[at] = u32::try_from(nodes.len()).ok()?;
                nodes.push(Node {
                    depth: depth + 1,
                    words: i..j,
                    fail: child_fail,
                    matches: Vec::new(),
                });
                i = j;
            }
            k += 1;
        }
        let n = nodes.len();
        let shift = reps.len().next_power_of_two().trailing_zeros();
        if n << shift > TABLE {
            return None;
        }
        // rows: non-match states first, then match states
        let mut order: Vec<usize> = (0..n).filter(|&s| nodes[s].matches.is_empty()).collect();
        let first = order.len();
        order.extend((0..n).filter(|&s| !nodes[s].matches.is_empty()));
        let mut row = vec![0u16; n];
        for (pos, &s) in order.iter().enumerate() {
            row[s] = u16::try_from((pos << shift) >> 1).ok()?;
        }
        let mut trans: Box<[u16; ENTRIES]> =
            vec![0u16; ENTRIES].into_boxed_slice().try_into().ok()?;
        for (s, &r) in row.iter().enumerate() {
            for c in 0..classes {
                let to = next[s * classes + c] as usize;
                trans[2 * usize::from(r) + c] = row[to];
            }
        }
        let mut matches = Vec::with_capacity(n - first);
        let mut pats = Vec::new();
        for &s in &order[first..] {
            let a = u32::try_from(pats.len()).ok()?;
            pats.extend_from_slice(&nodes[s].matches);
            matches.push((a, u32::try_from(pats.len()).ok()?));
        }
        let max_len = words.iter().map(String::len).max().unwrap_or(0);
        Some(Table {
            class,
            trans,
            start: row[0],
            first_match: u16::try_from((first << shift) >> 1).ok()?,
            half_shift: shift.checked_sub(1)?,
            max_len,
            matches,
            pats,
        })
    }

    /// Every match row the scan enters over `bytes`, with the end of its matches, in order.
    /// Each byte's transition is a load whose address is the previous transition's result, so
    /// one scan waits on that chain of loads; a long draft is scanned as two or four parts at
    /// once ([`Table::split_rows`]), independent chains the processor overlaps.
    fn match_rows(&self, bytes: &[u8], out: &mut Vec<(u16, usize)>) {
        let n = bytes.len();
        if n >= FOUR_STREAMS_MIN && self.max_len <= n / 4 {
            self.split_rows(bytes, [n / 4, n / 2, 3 * n / 4], out);
        } else if n >= TWO_STREAMS_MIN && self.max_len <= n / 2 {
            self.split_rows(bytes, [n / 2], out);
        } else {
            self.run(bytes, self.start, 0, out);
        }
    }

    /// [`Table::match_rows`] in `N + 1` interleaved streams, split at `splits` (increasing):
    /// the first over `..splits[0]`, each other from the longest keyword less one byte before
    /// its split to the next split (or the end). An Aho-Corasick state is the longest keyword
    /// prefix ending at the position, never longer than the longest keyword, so from its split
    /// on a stream is in the state a single scan would be; its matches ending at or before its
    /// split are the stream before's and dropped. The lists, concatenated, are the single
    /// scan's. Each split must be at least the longest keyword less one, and each later part
    /// at least as long as the first less that (the interleaved loop runs the first part's
    /// length in every stream).
    #[inline(never)]
    fn split_rows<const N: usize>(
        &self,
        bytes: &[u8],
        splits: [usize; N],
        out: &mut Vec<(u16, usize)>,
    ) {
        let lead = self.max_len.max(1) - 1;
        let first = splits[0];
        debug_assert!(
            (0..N).all(|i| {
                let end = splits.get(i + 1).copied().unwrap_or(bytes.len());
                splits[i] >= lead && splits[i] - lead + first <= end
            }),
            "splits {splits:?} of {} bytes",
            bytes.len()
        );
        // stream `i + 1` starts at `from[i]`; every stream runs `first` bytes interleaved
        let from = splits.map(|s| s - lead);
        let ends: [usize; N] =
            std::array::from_fn(|i| splits.get(i + 1).copied().unwrap_or(bytes.len()));
        let mut rest: [Vec<(u16, usize)>; N] = std::array::from_fn(|_| Vec::new());
        let mut rows = [self.start; N];
        let mut row0 = self.start;
        let (blocks0, _) = bytes[..first].as_chunks::<8>();
        let others: [&[[u8; 8]]; N] =
            std::array::from_fn(|i| bytes[from[i]..from[i] + first].as_chunks::<8>().0);
        let mut base = 0;
        for (j, x) in blocks0.iter().enumerate() {
            for k in 0..8 {
                self.step(&mut row0, x[k], base + k + 1, out);
                for i in 0..N {
                    self.step(
                        &mut rows[i],
                        others[i][j][k],
                        from[i] + base + k + 1,
                        &mut rest[i],
                    );
                }
            }
            base += 8;
        }
        self.run(&bytes[base..first], row0, base, out);
        for i in 0..N {
            self.run(
                &bytes[from[i] + base..ends[i]],
                rows[i],
                from[i] + base,
                &mut rest[i],
            );
            let split = splits[i];
            out.extend(rest[i].drain(..).filter(|&(_, end)| end > split));
        }
    }

    /// One stream from row `row` over `bytes`, which start at `at` in the draft. Eight bytes
    /// per iteration of the outer loop, the position counted once per block.
    fn run(&self, bytes: &[u8], mut row: u16, at: usize, out: &mut Vec<(u16, usize)>) {
        let (blocks, tail) = bytes.as_chunks::<8>();
        let mut base = at;
        for block in blocks {
            for (k, &b) in block.iter().enumerate() {
                self.step(&mut row, b, base + k + 1, out);
            }
            base += 8;
        }
        for (k, &b) in tail.iter().enumerate() {
            self.step(&mut row, b, base + k + 1, out);
        }
    }

    #[inline(always)]
    fn step(&self, row: &mut u16, b: u8, end: usize, out: &mut Vec<(u16, usize)>) {
        // below `ENTRIES` whatever the values, so the compiler drops the bounds check; the
        // table is built so that a row plus a class stays below `TABLE`
        *row = self.trans[2 * usize::from(*row) + usize::from(self.class[usize::from(b)])];
        if *row >= self.first_match {
            push_row(out, *row, end);
        }
    }
}

/// Records a match row: out of line, as match rows are rare next to bytes, so that the scan's
/// loop keeps its pointers and rows in registers instead of the stack.
#[cold]
#[inline(never)]
fn push_row(out: &mut Vec<(u16, usize)>, row: u16, end: usize) {
    out.push((row, end));
}

/// The DFA of `words`: a full DFA, one transition per byte for the overlapping scan. No
/// prefilter: nearly every letter starts a keyword, and without one the start state is not
/// special, so the scan's loop tests one comparison per byte.
fn build_dfa(words: &[String]) -> Option<DFA> {
    DFA::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .prefilter(false)
        .build(words)
        .ok()
}

/// Every occurrence of every keyword of `dfa` in `bytes`, overlapping ones included, as
/// `(pattern, start, end)`: what `AhoCorasick::find_overlapping_iter` reports, in its order (by
/// end, then longest first). The DFA's transitions are followed by [`match_states`], whose loop
/// does nothing but that (the iterator's per-byte bookkeeping would double its cost),
/// and the hits are expanded afterwards. The scan goes through the DFA's dense table instead
/// ([`Keywords::hits`]); this is the fallback for keyword sets too large for the table
/// and the reference of the table's test.
fn keyword_hits(dfa: &DFA, bytes: &[u8], mut f: impl FnMut(usize, usize, usize)) {
    let mut states = Vec::new();
    match_states(dfa, bytes, &mut states);
    for (sid, end) in states {
        for k in 0..dfa.match_len(sid) {
            let pid = dfa.match_pattern(sid, k);
            f(pid.as_usize(), end - dfa.pattern_len(pid), end);
        }
    }
}

/// Every match state `dfa` enters over `bytes`, with the end of its matches. Its own function,
/// with nothing else in the loop: so the state, the position and the DFA's tables stay in
/// registers (with the hit handling inlined into the loop, they were spilled to the stack).
/// Eight bytes per iteration of the outer loop, the inner one unrolled: the position is
/// counted once per block, so a byte costs its transition and one comparison (the
/// instruction counts: `docs/performance-log.md`, L0 speed).
#[inline(never)]
fn match_states(dfa: &DFA, bytes: &[u8], out: &mut Vec<(StateID, usize)>) {
    let Ok(mut sid) = dfa.start_state(Anchored::No) else {
        return;
    };
    let (blocks, tail) = bytes.as_chunks::<8>();
    let mut base = 0;
    for block in blocks {
        for (k, &b) in block.iter().enumerate() {
            if !step(dfa, &mut sid, b, base + k + 1, out) {
                return;
            }
        }
        base += 8;
    }
    for (k, &b) in tail.iter().enumerate() {
        if !step(dfa, &mut sid, b, base + k + 1, out) {
            return;
        }
    }
}

/// One transition of [`match_states`] on `b`, recording a match state as ending at `end`;
/// `false` at the dead state (nothing more can match).
#[inline(always)]
fn step(dfa: &DFA, sid: &mut StateID, b: u8, end: usize, out: &mut Vec<(StateID, usize)>) -> bool {
    *sid = dfa.next_state(Anchored::No, *sid, b);
    if dfa.is_special(*sid) {
        if dfa.is_dead(*sid) {
            return false;
        }
        if dfa.is_match(*sid) {
            out.push((*sid, end));
        }
    }
    true
}

#[cfg(test)]
#[path = "tests_keywords.rs"]
mod tests;
