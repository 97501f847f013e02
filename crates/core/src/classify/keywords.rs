//! The keyword automaton of the L0 classifier: every rule's keywords in one ASCII
//! case-insensitive Aho-Corasick DFA, and the dense transition table the scan follows.
//!
//! The table is the DFA's own transitions, renumbered: its bytes grouped into classes (bytes
//! no state tells apart share one), each state a row of `stride` (a power of two at least the
//! number of classes) `u16` entries holding the next row's offset, the non-match states'
//! rows first so that one comparison tells a match state. With at most 65,536 entries a `u16`
//! indexes the table, whose length is a constant: no bounds check and no special-state test
//! per byte (the aho-corasick DFA's `next_state` costs a class lookup, an addition, a bounds
//! check and a load, then a comparison for special states and another for match states).
//! A keyword set too large for it (custom policy rules can add any number) is scanned through
//! the DFA's own transitions ([`super::detect::keyword_hits`], also the tests' reference).

use aho_corasick::Anchored;
use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;

/// Entries of the dense table: every `u16` indexes it.
const TABLE: usize = 1 << 16;

/// The keyword DFA and, when it fits, its dense table.
#[derive(Debug)]
pub(super) struct Keywords {
    pub(super) dfa: DFA,
    table: Option<Table>,
}

struct Table {
    /// The class of each byte.
    class: [u8; 256],
    /// `trans[row + class]`: the row of the next state (a row is a state's index times the
    /// stride).
    trans: Box<[u16; TABLE]>,
    start: u16,
    /// Rows from here on are match states.
    first_match: u16,
    /// log2 of the stride.
    shift: u32,
    /// The matches of each match row, by `(row - first_match) >> shift`: a range of `pats`.
    matches: Vec<(u32, u32)>,
    /// `(pattern, length)` of the matches of the match rows, in the DFA's order.
    pats: Vec<(usize, usize)>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("stride", &(1usize << self.shift))
            .field("match_states", &self.matches.len())
            .finish()
    }
}

impl Keywords {
    pub(super) fn new(dfa: DFA) -> Keywords {
        let table = Table::build(&dfa);
        Keywords { dfa, table }
    }

    /// Whether the dense table is in use (the tests check that the built-in keywords fit).
    #[cfg(test)]
    pub(super) fn has_table(&self) -> bool {
        self.table.is_some()
    }

    /// Every occurrence of every keyword in `bytes`, overlapping ones included, as
    /// `(pattern, start, end)`, in the order of `AhoCorasick::find_overlapping_iter` (by end,
    /// then longest first): what [`super::detect::keyword_hits`] reports, through the table.
    pub(super) fn hits(&self, bytes: &[u8], mut f: impl FnMut(usize, usize, usize)) {
        let Some(t) = &self.table else {
            super::detect::keyword_hits(&self.dfa, bytes, f);
            return;
        };
        let mut rows = Vec::new();
        t.match_rows(bytes, &mut rows);
        for (row, end) in rows {
            let Some(&(a, b)) = t.matches.get(usize::from(row - t.first_match) >> t.shift) else {
                continue;
            };
            for &(pid, len) in t.pats.get(a as usize..b as usize).unwrap_or(&[]) {
                f(pid, end - len, end);
            }
        }
    }
}

impl Table {
    /// The table of `dfa`'s unanchored states, or `None` when they do not fit in it (or
    /// when the dead state is reachable, which a standard unanchored automaton never does).
    fn build(dfa: &DFA) -> Option<Table> {
        let start = dfa.start_state(Anchored::No).ok()?;
        // the reachable states, breadth first; `index[sid]` is a state's position in `states`
        let mut states = vec![start];
        let mut index: Vec<u32> = Vec::new();
        let slot = |index: &mut Vec<u32>, sid: StateID| -> usize {
            let i = sid.as_usize();
            if i >= index.len() {
                index.resize(i + 1, u32::MAX);
            }
            i
        };
        let i = slot(&mut index, start);
        index[i] = 0;
        let mut next = Vec::new();
        let mut k = 0;
        while k < states.len() {
            let s = states[k];
            for b in 0..=255u8 {
                let t = dfa.next_state(Anchored::No, s, b);
                if dfa.is_dead(t) {
                    return None;
                }
                let i = slot(&mut index, t);
                if index[i] == u32::MAX {
                    index[i] = u32::try_from(states.len()).ok()?;
                    states.push(t);
                }
                next.push(index[i]);
            }
            k += 1;
        }
        let n = states.len();
        // byte classes: bytes whose columns of `next` (their transitions from every state)
        // are equal share one
        let mut class = [0u8; 256];
        let mut reps: Vec<u8> = Vec::new();
        let mut seen: std::collections::HashMap<Vec<u32>, u8> = std::collections::HashMap::new();
        for b in 0..=255u8 {
            let col: Vec<u32> = (0..n).map(|s| next[s * 256 + usize::from(b)]).collect();
            let c = match seen.get(&col) {
                Some(&c) => c,
                None => {
                    let c = u8::try_from(reps.len()).ok()?;
                    reps.push(b);
                    seen.insert(col, c);
                    c
                }
            };
            class[usize::from(b)] = c;
        }
        let shift = reps.len().next_power_of_two().trailing_zeros();
        if n << shift > TABLE {
            return None;
        }
        // rows: non-match states first, then match states
        let mut order: Vec<usize> = (0..n).filter(|&s| !dfa.is_match(states[s])).collect();
        let first = order.len();
        order.extend((0..n).filter(|&s| dfa.is_match(states[s])));
        let mut row = vec![0u16; n];
        for (pos, &s) in order.iter().enumerate() {
            row[s] = u16::try_from(pos << shift).ok()?;
        }
        let mut trans: Box<[u16; TABLE]> = vec![0u16; TABLE].into_boxed_slice().try_into().ok()?;
        for (s, &r) in row.iter().enumerate() {
            for (c, &b) in reps.iter().enumerate() {
                let to = next[s * 256 + usize::from(b)] as usize;
                trans[usize::from(r) + c] = row[to];
            }
        }
        let mut matches = Vec::with_capacity(n - first);
        let mut pats = Vec::new();
        for &s in &order[first..] {
            let sid = states[s];
            let a = u32::try_from(pats.len()).ok()?;
            for k in 0..dfa.match_len(sid) {
                let pid = dfa.match_pattern(sid, k);
                pats.push((pid.as_usize(), dfa.pattern_len(pid)));
            }
            matches.push((a, u32::try_from(pats.len()).ok()?));
        }
        Some(Table {
            class,
            trans,
            start: row[0],
            first_match: u16::try_from(first << shift).ok()?,
            shift,
            matches,
            pats,
        })
    }

    /// Every match row the scan enters over `bytes`, with the end of its matches. Its own
    /// function, so the row, the position and the tables stay in registers; eight bytes per
    /// iteration of the outer loop, the position counted once per block.
    #[inline(never)]
    fn match_rows(&self, bytes: &[u8], out: &mut Vec<(u16, usize)>) {
        let mut row = self.start;
        let (blocks, tail) = bytes.as_chunks::<8>();
        let mut base = 0;
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
        // the sum stays below `TABLE`: a row is at most `TABLE - stride`, a class below the stride
        *row = self.trans[usize::from(row.wrapping_add(u16::from(self.class[usize::from(b)])))];
        if *row >= self.first_match {
            out.push((*row, end));
        }
    }
}
