//! Reading the journal: backwards from the end in growing blocks (a tail costs what it
//! returns), filtered by a value searched in the raw bytes before any line is parsed, or
//! forwards from an offset (gc, analytics); `doctor`'s line-by-line check.

use super::{Journal, Row};
use aho_corasick::AhoCorasick;
use serde_json::{Map, Value};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

/// What a line-by-line read of the whole journal found (`doctor`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LineCheck {
    /// Lines that parsed as rows.
    pub rows: usize,
    /// 1-based numbers of complete lines that are not JSON objects (readers skip them).
    pub corrupt: Vec<usize>,
    /// 1-based number of a last line without its newline: an append that never finished,
    /// which [`Journal::repair`] cuts off.
    pub torn_tail: Option<usize>,
    pub bytes: u64,
}

/// What reading the journal found besides rows.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines that were not JSON objects (skipped). A filtered read only parses, and so only
    /// counts, the lines that contain the value it looks for.
    pub corrupt_lines: usize,
}

/// First and largest block [`Journal::scan_back`] reads: small first, so a short tail costs
/// little; doubling, so a long scan makes few system calls.
pub(super) const FIRST_BLOCK: usize = 64 * 1024;
pub(super) const MAX_BLOCK: usize = 4 * 1024 * 1024;

impl Journal {
    /// The last `n` rows for which `keep` holds, oldest first. Reads backwards from the end.
    pub fn tail(
        &self,
        n: usize,
        keep: impl FnMut(&Map<String, Value>) -> bool,
    ) -> io::Result<(Vec<Map<String, Value>>, ReadStats)> {
        self.tail_containing(n, &[], keep)
    }

    /// Like [`Journal::tail`], parsing only the lines that contain one of `needles` (none:
    /// every line). A row `keep` accepts must contain one of them (see
    /// [`super::row::json_string_forms`]); `keep` still decides.
    pub fn tail_containing(
        &self,
        n: usize,
        needles: &[String],
        mut keep: impl FnMut(&Map<String, Value>) -> bool,
    ) -> io::Result<(Vec<Map<String, Value>>, ReadStats)> {
        let mut stats = ReadStats::default();
        let mut out = Vec::new();
        if n == 0 {
            return Ok((out, stats));
        }
        let torn = self.scan_back(needles, |line| {
            match serde_json::from_slice::<Map<String, Value>>(line) {
                Ok(row) => {
                    if keep(&row) {
                        out.push(row);
                    }
                }
                Err(_) => stats.corrupt_lines += 1,
            }
            out.len() < n
        })?;
        if torn {
            // No trailing newline: a torn row being written or left by a crash.
            stats.corrupt_lines += 1;
        }
        out.reverse();
        Ok((out, stats))
    }

    /// Read every line, noting which do not parse; `progress(bytes_read, total)` is called as
    /// it goes. A missing journal is empty.
    pub fn check_lines(&self, mut progress: impl FnMut(u64, u64)) -> io::Result<LineCheck> {
        use std::io::BufRead;
        let mut check = LineCheck::default();
        let file = match crate::util::statefile::open_read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(check),
            Err(e) => return Err(e),
        };
        let total = file.metadata()?.len();
        let mut reader = io::BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        let mut number = 0;
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line)?;
            if n == 0 {
                break;
            }
            number += 1;
            check.bytes += n as u64;
            if line.last() != Some(&b'\n') {
                check.torn_tail = Some(number);
            } else if line.iter().all(u8::is_ascii_whitespace) {
                // Blank lines are skipped by every reader and are not damage.
            } else if serde_json::from_slice::<Map<String, Value>>(&line).is_ok() {
                check.rows += 1;
            } else {
                check.corrupt.push(number);
            }
            if number % 4096 == 0 {
                progress(check.bytes, total);
            }
        }
        progress(check.bytes, total);
        Ok(check)
    }

    /// Hand complete lines to `visit`, newest first, until it returns false. With `needles`,
    /// only lines containing one of them (a substring search over raw bytes; nothing else is
    /// parsed or copied), and possibly a few more: several needles that share a long suffix
    /// (a file's relative and absolute path, `"src/a.rs"` and `"/w/src/a.rs"`) are searched
    /// for by that suffix, one SIMD substring search instead of a multi-pattern automaton, so
    /// `visit` must check what it gets. Blank lines are skipped. Returns whether the journal
    /// ends in a torn line (no trailing newline), which is never visited.
    pub fn scan_back(
        &self,
        needles: &[String],
        mut visit: impl FnMut(&[u8]) -> bool,
    ) -> io::Result<bool> {
        fn one(n: &[u8]) -> Option<Needles<'_>> {
            Some(Needles::One(Box::new(memchr::memmem::Finder::new(n))))
        }
        let finder = match needles {
            [] => None,
            // one needle (any ASCII value): memchr's SIMD substring search
            [n] => one(n.as_bytes()),
            _ => match shared_suffix(needles) {
                Some(suffix) => one(suffix),
                None => Some(Needles::Many(
                    AhoCorasick::new(needles).map_err(io::Error::other)?,
                )),
            },
        };
        let file = match crate::util::statefile::open_read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let mut pos = file.metadata()?.len();
        let mut torn = false;
        let mut first = true;
        let mut block = FIRST_BLOCK;
        // The head of the later block: a line that starts in an earlier block.
        let mut carry: Vec<u8> = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        while pos > 0 {
            let start = pos.saturating_sub(block as u64);
            block = (block * 2).min(MAX_BLOCK);
            let len = (pos - start) as usize;
            // The buffer only grows (zeroing it once, not per block).
            let need = len + carry.len();
            if buf.len() < need {
                buf.resize(need, 0);
            }
            file.read_exact_at(&mut buf[..len], start)?;
            buf[len..need].copy_from_slice(&carry);
            let data = &buf[..need];
            // Lines that begin before `start` are carried back whole to the next block.
            let from = if start > 0 {
                match memchr::memchr(b'\n', data) {
                    Some(p) => p + 1,
                    None => {
                        carry = data.to_vec();
                        pos = start;
                        continue;
                    }
                }
            } else {
                0
            };
            let mut body = &data[from..];
            if first {
                first = false;
                if let Some(cut) = body.iter().rposition(|&b| b == b'\n') {
                    torn = cut + 1 != body.len();
                    body = &body[..cut + 1];
                } else {
                    torn = !body.is_empty();
                    body = &[];
                }
            }
            if !visit_block(body, finder.as_ref(), &mut visit) {
                return Ok(torn);
            }
            carry.clear();
            carry.extend_from_slice(&data[..from]);
            pos = start;
        }
        Ok(torn)
    }

    /// Every row from byte `offset` to the end, with the offset just past the last full line.
    /// Used to keep in-memory indexes (idempotency keys) current without rereading.
    pub fn read_from(&self, offset: u64) -> io::Result<(Vec<Row>, u64, ReadStats)> {
        let mut stats = ReadStats::default();
        let mut file = match crate::util::statefile::open_read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0, stats)),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        let offset = if offset > len { 0 } else { offset };
        file.seek(SeekFrom::Start(offset))?;
        let mut data = Vec::with_capacity((len - offset) as usize);
        file.read_to_end(&mut data)?;
        let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let mut rows = Vec::new();
        for line in data[..complete].split(|&b| b == b'\n') {
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            match serde_json::from_slice::<Map<String, Value>>(line) {
                Ok(r) => rows.push(r),
                Err(_) => stats.corrupt_lines += 1,
            }
        }
        Ok((rows, offset + complete as u64, stats))
    }
}

/// The longest suffix all `needles` share, when it is at least half as long as the shortest
/// of them (a suffix that short would match too many lines to filter well).
pub(super) fn shared_suffix(needles: &[String]) -> Option<&[u8]> {
    let first = needles.first()?.as_bytes();
    let mut len = first.len();
    for n in &needles[1..] {
        let n = n.as_bytes();
        let common = first
            .iter()
            .rev()
            .zip(n.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        len = len.min(common);
    }
    let shortest = needles.iter().map(String::len).min().unwrap_or(0);
    (len > 0 && len * 2 >= shortest).then(|| &first[first.len() - len..])
}

/// What `scan_back` looks for: one value's string form, or several.
enum Needles<'n> {
    One(Box<memchr::memmem::Finder<'n>>),
    Many(AhoCorasick),
}

impl Needles<'_> {
    /// Where matches start in `hay`, in order.
    fn starts(&self, hay: &[u8]) -> Vec<usize> {
        match self {
            Needles::One(f) => f.find_iter(hay).collect(),
            Needles::Many(ac) => ac.find_iter(hay).map(|m| m.start()).collect(),
        }
    }
}

/// Visit the lines of `body` (complete lines, each ending in a newline) newest first; with
/// `finder`, only those containing a match. Returns false when `visit` asked to stop.
fn visit_block(
    body: &[u8],
    finder: Option<&Needles<'_>>,
    visit: &mut impl FnMut(&[u8]) -> bool,
) -> bool {
    let mut visit_line = |line: &[u8]| {
        if line.iter().all(u8::is_ascii_whitespace) {
            true
        } else {
            visit(line)
        }
    };
    match finder {
        None => {
            let Some(body) = body.strip_suffix(b"\n") else {
                return true;
            };
            body.rsplit(|&b| b == b'\n').all(visit_line)
        }
        Some(finder) => {
            let hits = finder.starts(body);
            let mut line_end = usize::MAX;
            for &h in hits.iter().rev() {
                if h >= line_end {
                    continue; // another match in a line already visited
                }
                let start = memchr::memrchr(b'\n', &body[..h]).map_or(0, |p| p + 1);
                let Some(end) = memchr::memchr(b'\n', &body[h..]).map(|p| h + p) else {
                    continue;
                };
                line_end = start;
                if !visit_line(&body[start..end]) {
                    return false;
                }
            }
            true
        }
    }
}
