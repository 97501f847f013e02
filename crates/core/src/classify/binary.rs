//! Binary-content hints of the L0 classifier (family `binary_hint`): long base64 runs (on one
//! line, or wrapped at a fixed width such as 64 or 76 columns), long hex blobs, and dense
//! non-printable bytes. Hints suggest moving the payload to the scratchpad or splitting the write.
//!
//! Data URIs are judged by their media type: a binary one that is not an image (fonts,
//! archives, PDFs, `application/octet-stream`) is a `base64_blob` hint from [`DATA_URI_MIN`]
//! characters, as the type says it is opaque binary; an image (`data:image/png;base64,...`, the
//! icons and badges CSS and HTML inline) is content, not a filter risk, and is quiet, as is a
//! textual one (source maps' `application/json`, SVG, CSS, `text/*`). A long base64 run that
//! declares no media type is the plain [`BASE64_MIN`] hint.
//! Also quiet: OpenSSH public keys, public PEM blocks (certificates, public keys: passed in as
//! exclusions), digests (40/64/128 hex chars are far below the hex threshold), lockfile
//! integrity hashes (88 chars). One linear pass per shape.

use std::ops::Range;

/// Shortest base64 run worth a hint (the paper's "> 200 chars").
pub(crate) const BASE64_MIN: usize = 200;
/// Shortest hex run worth a hint (longer than a SHA-512 digest, 128).
pub(crate) const HEX_MIN: usize = 256;
/// Shortest payload of a binary data URI worth a hint: its media type already says it is
/// binary, so the bar is lower than for an anonymous run (about 75 bytes of payload).
pub(crate) const DATA_URI_MIN: usize = 100;
/// Non-printable bytes that make a dense run.
const NONPRINT_MIN: usize = 16;
/// Bytes tested at once for the absence of non-printables.
const NONPRINT_BLOCK: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryKind {
    Base64Blob,
    Base64Wrapped,
    HexBlob,
    NonPrintable,
}

/// The base64 alphabets (standard and URL-safe) as a table: one load per byte in the scans.
const B64: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'+' || c == b'/' || c == b'-' || c == b'_';
        b += 1;
    }
    t
};

fn is_b64(b: u8) -> bool {
    B64[usize::from(b)]
}

/// [`is_b64`] without the table: branch-free, so a fold of it over a fixed-size block
/// vectorises.
#[inline(always)]
fn is_b64_arith(c: u8) -> bool {
    ((c | 0x20).wrapping_sub(b'a') < 26)
        | (c.wrapping_sub(b'0') < 10)
        | (c == b'+')
        | (c == b'/')
        | (c == b'-')
        | (c == b'_')
}

/// Whether every byte of `t` is base64: 16 bytes per step, each block tested whole with vector
/// instructions (a wrapped-base64 line, 64 or 76 bytes, is four or five steps instead of a
/// load, a test and a branch per byte).
fn all_b64(t: &[u8]) -> bool {
    let (blocks, tail) = t.as_chunks::<16>();
    blocks
        .iter()
        .all(|b| b.iter().fold(true, |all, &c| all & is_b64_arith(c)))
        && tail.iter().all(|&c| is_b64(c))
}

/// The end of the run of base64 bytes of `s` from `i` (the first index from `i` that is not
/// base64, or the end): 16 bytes per step while a whole block is base64 (one vectorised test,
/// as in [`all_b64`]), then byte by byte. Payloads of data URIs and blobs run to kilobytes.
fn b64_run_end(s: &[u8], mut i: usize) -> usize {
    while let Some(b) = s.get(i..).and_then(|t| t.first_chunk::<16>())
        && b.iter().fold(true, |all, &c| all & is_b64_arith(c))
    {
        i += 16;
    }
    while i < s.len() && is_b64(s[i]) {
        i += 1;
    }
    i
}

/// The index of the last byte of `w` that is not base64. The last 16 bytes byte by byte (on
/// ordinary text a space or a punctuation mark is near), then whole 16-byte blocks backwards
/// with the vectorised test of [`all_b64`] until one holds such a byte (identifiers, paths and
/// payloads are long base64 stretches).
fn last_non_b64(w: &[u8]) -> Option<usize> {
    let (head, tail) = w.split_at(w.len().saturating_sub(16));
    if let Some(j) = tail.iter().rposition(|&c| !is_b64(c)) {
        return Some(head.len() + j);
    }
    let (rest, blocks) = head.as_rchunks::<16>();
    for (k, b) in blocks.iter().enumerate().rev() {
        if !b.iter().fold(true, |all, &c| all & is_b64_arith(c)) {
            return b
                .iter()
                .rposition(|&c| !is_b64(c))
                .map(|j| rest.len() + 16 * k + j);
        }
    }
    rest.iter().rposition(|&c| !is_b64(c))
}

fn overlaps(r: &Range<usize>, ex: &[Range<usize>]) -> bool {
    ex.iter().any(|e| e.start < r.end && r.start < e.end)
}

/// Looks like encoded binary rather than a word, a path or a digest.
fn dense_base64(t: impl Iterator<Item = u8>) -> bool {
    let mut counts = [0u32; 256];
    for b in t {
        counts[usize::from(b)] += 1;
    }
    let any = |r: std::ops::RangeInclusive<u8>| r.into_iter().any(|b| counts[usize::from(b)] > 0);
    any(b'A'..=b'Z')
        && any(b'a'..=b'z')
        && any(b'0'..=b'9')
        && super::entropy::shannon_of(&counts) >= 4.5
}

fn hex_blob(t: &[u8]) -> bool {
    t.len() >= HEX_MIN
        && t.iter().all(u8::is_ascii_hexdigit)
        && t.iter().any(u8::is_ascii_digit)
        && t.iter().any(u8::is_ascii_alphabetic)
}

fn benign_prefix(s: &[u8], start: usize) -> bool {
    let before = &s[start.saturating_sub(32)..start];
    let b = before.to_ascii_lowercase();
    b.ends_with(b"base64,")
        || b.ends_with(b"ssh-rsa ")
        || b.ends_with(b"ssh-ed25519 ")
        || b.ends_with(b"ssh-dss ")
        || b.windows(6).any(|w| w == b"ecdsa-") && b.ends_with(b" ")
        || b.ends_with(b"sk-ssh-ed25519@openssh.com ")
        || image_output(&b)
}

/// A notebook's image output (`"image/png": "iVBOR...`): the base64 of an image under its media
/// type, content like an image data URI.
fn image_output(before: &[u8]) -> bool {
    let Some(q) = before.windows(7).rposition(|w| w == b"\"image/") else {
        return false;
    };
    let rest = &before[q + 7..];
    let name = rest
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
        .count();
    let tail: Vec<u8> = rest[name..]
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    name > 0 && tail == b"\":\""
}

/// Whether a data URI's media type (what follows `data:`, before `;base64,`) names opaque
/// binary content: anything but an image (`image/*`: content a page shows) and text
/// (`text/*`, JSON, XML, SVG, JavaScript, CSS, HTML), and not the default (`data:;base64,` is
/// `text/plain`).
fn binary_media_type(mime: &[u8]) -> bool {
    // JSON escapes the slash (`image\/png`)
    let m: Vec<u8> = mime
        .iter()
        .filter(|&&b| b != b'\\')
        .map(u8::to_ascii_lowercase)
        .collect();
    let m = m.split(|&b| b == b';').next().unwrap_or(&[]);
    let has = |w: &[u8]| m.windows(w.len()).any(|x| x == w);
    !m.is_empty()
        && !m.starts_with(b"text/")
        && !m.starts_with(b"image/")
        && ![
            &b"json"[..],
            b"xml",
            b"svg",
            b"javascript",
            b"ecmascript",
            b"css",
            b"html",
        ]
        .iter()
        .any(|w| has(w))
}

/// Binary data URIs (`data:<binary type>;base64,<payload>`): the payload's span, when it has
/// at least [`DATA_URI_MIN`] base64 characters that look like encoded binary.
fn data_uris(s: &[u8], exclude: &[Range<usize>], emit: &mut impl FnMut(BinaryKind, Range<usize>)) {
    for at in memchr::memmem::find_iter(s, b";base64,") {
        let head = &s[at.saturating_sub(100)..at];
        let Some(d) = head
            .windows(5)
            .rposition(|w| w.eq_ignore_ascii_case(b"data:"))
        else {
            continue;
        };
        let mime = &head[d + 5..];
        if mime
            .iter()
            .any(|b| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'('))
        {
            continue;
        }
        let start = at + 8;
        let i = b64_run_end(s, start);
        let mut end = i;
        while end < s.len() && end - i < 2 && s[end] == b'=' {
            end += 1;
        }
        let r = start..end;
        if i - start >= DATA_URI_MIN
            && binary_media_type(mime)
            && !overlaps(&r, exclude)
            && dense_base64(s[start..i].iter().copied())
        {
            emit(BinaryKind::Base64Blob, r);
        }
    }
}

/// Shortest and longest width of a wrapped-base64 line.
const WRAP_MIN: usize = 40;
const WRAP_MAX: usize = 120;

/// A run of wrapped-base64 lines: (start, end, width, lines).
type Wrapped = Option<(usize, usize, usize, usize)>;

/// Emits the block `blk` when it is wrapped base64: at least three lines, at least
/// [`BASE64_MIN`] characters, outside `exclude`, no benign prefix, dense.
fn finish_wrapped(
    s: &[u8],
    exclude: &[Range<usize>],
    blk: Wrapped,
    emit: &mut impl FnMut(BinaryKind, Range<usize>),
) {
    if let Some((bs, be, width, lines)) = blk
        && lines >= 3
        && width * (lines - 1) >= BASE64_MIN
    {
        let r = bs..be;
        if !overlaps(&r, exclude)
            && !benign_prefix(s, bs)
            && dense_base64(s[bs..be].iter().copied().filter(|b| is_b64(*b)))
        {
            emit(BinaryKind::Base64Wrapped, r);
        }
    }
}

/// The next state of the wrapped-base64 scan after the line `a..b` (its text without the
/// indentation and the trailing `=`, spaces and CR) ending at `line_end`.
fn wrapped_line(
    s: &[u8],
    exclude: &[Range<usize>],
    block: Wrapped,
    (a, b, line_end): (usize, usize, usize),
    emit: &mut impl FnMut(BinaryKind, Range<usize>),
) -> Wrapped {
    let w = b - a;
    let qualifies = (WRAP_MIN..=WRAP_MAX).contains(&w) && all_b64(&s[a..b]);
    match (block, qualifies) {
        (Some((bs, _, width, lines)), true) if w == width => Some((bs, line_end, width, lines + 1)),
        (Some((bs, _, width, lines)), true) if w < width => {
            finish_wrapped(s, exclude, Some((bs, line_end, width, lines + 1)), emit);
            None
        }
        (prev, true) => {
            finish_wrapped(s, exclude, prev, emit);
            Some((a, line_end, w, 1))
        }
        (prev, false) => {
            finish_wrapped(s, exclude, prev, emit);
            None
        }
    }
}

/// The text of the line `pos..line_end` without its indentation (up to 8 spaces or tabs) and
/// its trailing CR, `=` and spaces.
fn line_text(s: &[u8], pos: usize, line_end: usize) -> (usize, usize) {
    let mut a = pos;
    while a < line_end && (s[a] == b' ' || s[a] == b'\t') && a - pos < 8 {
        a += 1;
    }
    let mut b = line_end;
    while b > a && (s[b - 1] == b'\r' || s[b - 1] == b'=' || s[b - 1] == b' ') {
        b -= 1;
    }
    (a, b)
}

/// Wrapped base64: at least three lines of one width between [`WRAP_MIN`] and [`WRAP_MAX`]
/// (the last may be shorter), at least [`BASE64_MIN`] characters. A line shorter than
/// [`WRAP_MIN`] bytes never qualifies and ends any block, so when the next [`WRAP_MIN`] bytes
/// hold a newline, every line ending there is skipped at once (one `memrchr` instead of a
/// `memchr` and the indentation and trailing loops per line: most lines of source are short).
fn wrapped(s: &[u8], exclude: &[Range<usize>], emit: &mut impl FnMut(BinaryKind, Range<usize>)) {
    let n = s.len();
    let mut block: Wrapped = None;
    let mut pos = 0;
    while pos < n {
        let lim = n.min(pos + WRAP_MIN);
        if let Some(q) = memchr::memrchr(b'\n', &s[pos..lim]) {
            finish_wrapped(s, exclude, block.take(), emit);
            pos += q + 1;
            continue;
        }
        if n - pos < WRAP_MIN {
            // the last line, unterminated and shorter than WRAP_MIN
            finish_wrapped(s, exclude, block.take(), emit);
            break;
        }
        let line_end = memchr::memchr(b'\n', &s[lim..]).map_or(n, |k| lim + k);
        let (a, b) = line_text(s, pos, line_end);
        block = wrapped_line(s, exclude, block, (a, b, line_end), emit);
        pos = line_end + 1;
    }
    finish_wrapped(s, exclude, block, emit);
}

/// [`wrapped`] as it was, one `memchr` per line: the reference of its test.
#[cfg(test)]
fn wrapped_by_line(
    s: &[u8],
    exclude: &[Range<usize>],
    emit: &mut impl FnMut(BinaryKind, Range<usize>),
) {
    let n = s.len();
    let mut block: Wrapped = None;
    let mut pos = 0;
    while pos < n {
        let line_end = memchr::memchr(b'\n', &s[pos..]).map_or(n, |k| pos + k);
        let (a, b) = line_text(s, pos, line_end);
        block = wrapped_line(s, exclude, block, (a, b, line_end), emit);
        pos = line_end + 1;
    }
    finish_wrapped(s, exclude, block, emit);
}

/// A byte that starts a non-printable character: a control other than tab, newline, CR and
/// ESC, DEL, or the lead byte of U+FFFD. Branch-free, so a fold of it over a block vectorises.
#[inline(always)]
fn is_nonprint_start(c: u8) -> bool {
    ((c < 0x20) & (c != b'\t') & (c != b'\n') & (c != b'\r') & (c != 0x1b))
        | (c == 0x7f)
        | (c == 0xEF)
}

/// A superset of [`is_nonprint_start`] in fewer vector operations (two range tests, no test per
/// excluded control: CR and ESC pass it): the non-printable scan skips a block that has none
/// of these bytes without the exact test, and source text almost never has one.
#[inline(always)]
fn maybe_nonprint(c: u8) -> bool {
    (c < b'\t') | (c.wrapping_sub(0x0b) < 0x20 - 0x0b) | (c == 0x7f) | (c == 0xEF)
}

/// Scans for binary hints outside `exclude`, calling `emit` with each span.
pub(crate) fn scan(
    s: &[u8],
    exclude: &[Range<usize>],
    mut emit: impl FnMut(BinaryKind, Range<usize>),
) {
    let n = s.len();
    // 0. data URIs, judged by their media type (the runs below skip every `base64,` payload)
    data_uris(s, exclude, &mut emit);
    // 1. single-line runs. Only runs of BASE64_MIN bytes matter, so test the last byte of the
    // candidate window first and scan it backwards: a non-base64 byte at `k` rules out every run
    // through `k`, and the search jumps past it (sublinear on ordinary text, where spaces and
    // punctuation are never far apart). `i` is always 0 or just after a non-base64 byte, so a
    // window that is all base64 starts a run exactly at `i`.
    let mut i = 0;
    while i + BASE64_MIN <= n {
        if let Some(k) = last_non_b64(&s[i..i + BASE64_MIN]) {
            i += k + 1;
            continue;
        }
        let start = i;
        i = b64_run_end(s, i + BASE64_MIN);
        let mut end = i;
        while end < n && end - i < 2 && s[end] == b'=' {
            end += 1;
        }
        let len = i - start;
        if len >= BASE64_MIN {
            let r = start..end;
            let t = &s[start..i];
            if !overlaps(&r, exclude) && !benign_prefix(s, start) {
                if hex_blob(t) {
                    emit(BinaryKind::HexBlob, r);
                } else if dense_base64(t.iter().copied()) {
                    emit(BinaryKind::Base64Blob, r);
                }
            }
        }
        i = end.max(i);
    }
    // 2. wrapped base64: >= 3 lines of one width (the last may be shorter), >= BASE64_MIN chars
    wrapped(s, exclude, &mut emit);
    // 3. dense non-printables (controls other than tab, newline, CR and ESC; U+FFFD). Blocks
    // without any candidate byte are skipped by a branch-free test the compiler vectorises.
    let mut i = 0;
    let mut seg_start = 0;
    let mut count = 0;
    let mut last = 0;
    while i < n {
        if i % NONPRINT_BLOCK == 0
            && let Some(block) = s.get(i..i + NONPRINT_BLOCK)
            && (!block.iter().fold(false, |acc, &c| acc | maybe_nonprint(c))
                || !block
                    .iter()
                    .fold(false, |acc, &c| acc | is_nonprint_start(c)))
        {
            i += NONPRINT_BLOCK;
            continue;
        }
        let c = s[i];
        let (is_np, width) =
            if (c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r' | 0x1b)) || c == 0x7f {
                (true, 1)
            } else if c == 0xEF && i + 2 < n && s[i + 1] == 0xBF && s[i + 2] == 0xBD {
                (true, 3)
            } else {
                (false, 1)
            };
        if is_np {
            if count == 0 || i - last > 4 {
                if count >= NONPRINT_MIN {
                    emit(BinaryKind::NonPrintable, seg_start..last + 1);
                }
                seg_start = i;
                count = 0;
            }
            count += 1;
            last = i + width - 1;
        }
        i += width;
    }
    if count >= NONPRINT_MIN {
        emit(BinaryKind::NonPrintable, seg_start..last + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::testing::draw;

    #[test]
    fn the_quick_non_printable_test_covers_the_exact_one() {
        let mut passed = 0;
        for c in 0..=255u8 {
            assert!(!is_nonprint_start(c) || maybe_nonprint(c), "byte {c:#04x}");
            passed += usize::from(!maybe_nonprint(c));
        }
        // it must let the bytes of ordinary text through, or it saves nothing
        assert!(
            [b'\t', b'\n', b' ', b'a', b'~', 0x80, 0xc3]
                .iter()
                .all(|&c| !maybe_nonprint(c)),
            "{passed} bytes pass"
        );
    }

    #[test]
    fn the_arithmetic_base64_test_is_the_table_for_every_byte() {
        for c in 0..=255u8 {
            assert_eq!(is_b64_arith(c), is_b64(c), "byte {c:#04x}");
        }
    }

    /// The wrapped-base64 scan that skips the short lines of each [`WRAP_MIN`]-byte window
    /// reports what the scan of every line did: over the corpus and random text of lines of
    /// every width around the bounds (39 to 41, 119 to 121 bytes), base64 blocks with and
    /// without indentation, `=` padding and CRLF, and unterminated last lines.
    #[test]
    fn the_wrapped_scan_reports_what_the_line_by_line_scan_reports() {
        type Scan = fn(&[u8], &[Range<usize>], &mut Vec<(BinaryKind, Range<usize>)>);
        let fast: Scan = |s, e, out| wrapped(s, e, &mut |k, r| out.push((k, r)));
        let slow: Scan = |s, e, out| wrapped_by_line(s, e, &mut |k, r| out.push((k, r)));
        let run = |s: &[u8], f: Scan| {
            let mut out = Vec::new();
            f(s, &[], &mut out);
            out
        };
        let mut next = crate::classify::testing::splitmix64(0x18_0040);
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut inputs: Vec<Vec<u8>> =
            vec![Vec::new(), b"\n".to_vec(), vec![b'A'; 40], vec![b'A'; 39]];
        // blocks whose last line is exactly as wide as the others, unterminated or not
        for width in [39, 40, 41, 64, 76, 119, 120, 121] {
            for lines in 3..9 {
                for end in [&b""[..], b"\n", b"\r\n", b"==", b"=\n"] {
                    let line = draw(&mut next, alphabet, width);
                    let mut t = b"x\n".to_vec();
                    for l in 0..lines {
                        t.extend_from_slice(&line);
                        t.extend_from_slice(if l + 1 == lines { end } else { b"\n" });
                    }
                    inputs.push(t);
                }
            }
        }
        let mut r = crate::classify::testing::corpus::Rng(0x18_0041);
        inputs.push(crate::classify::testing::corpus::mixed_source(&mut r, 100_000).into_bytes());
        let mut hits = 0;
        for _ in 0..3000 {
            let mut t = Vec::new();
            for _ in 0..(next() % 12) {
                let width = [39, 40, 41, 64, 76, 119, 120, 121, 3, 0, 200][(next() % 11) as usize];
                let lines = next() % 7;
                let indent = b"  \t"[..(next() % 4) as usize].to_vec();
                for l in 0..lines {
                    t.extend_from_slice(&indent);
                    let w = if l + 1 == lines {
                        width - (next() % 3).min(width)
                    } else {
                        width
                    };
                    for _ in 0..w {
                        t.push(alphabet[(next() % alphabet.len() as u64) as usize]);
                    }
                    if next().is_multiple_of(5) {
                        t.extend_from_slice(b"==");
                    }
                    if next().is_multiple_of(6) {
                        t.push(b'\r');
                    }
                    if next().is_multiple_of(9) && !t.is_empty() {
                        let k = (next() % t.len() as u64) as usize;
                        t[k] = b" .\n"[(next() % 3) as usize];
                    }
                    t.push(b'\n');
                }
            }
            if next().is_multiple_of(2) {
                t.pop();
            }
            inputs.push(t);
        }
        for t in &inputs {
            let want = run(t, slow);
            assert_eq!(run(t, fast), want, "input {:?}", String::from_utf8_lossy(t));
            hits += want.len();
        }
        assert!(hits > 300, "only {hits} wrapped blocks compared");
    }

    /// [`b64_run_end`] finds the end that the byte-by-byte loop it replaced found, from every
    /// start, on runs of every length around the 16-byte blocks with one odd byte anywhere.
    #[test]
    fn the_base64_run_end_is_the_bytewise_one() {
        let bytewise = |s: &[u8], mut i: usize| {
            while i < s.len() && is_b64(s[i]) {
                i += 1;
            }
            i
        };
        let mut next = crate::classify::testing::splitmix64(0x18_0060);
        let alphabet = b"ABCXYZabcxyz0189+/-_";
        let mut compared = 0;
        for _ in 0..3000 {
            let len = (next() % 90) as usize;
            let mut t = draw(&mut next, alphabet, len);
            if len > 0 && !next().is_multiple_of(3) {
                t[(next() % len as u64) as usize] = (next() % 256) as u8;
            }
            for i in 0..=len {
                assert_eq!(b64_run_end(&t, i), bytewise(&t, i), "input {t:?} from {i}");
                compared += 1;
            }
        }
        assert!(compared > 100_000, "{compared}");
    }

    /// [`last_non_b64`] finds what the backward byte-by-byte search it replaced found, on
    /// windows of every length (the scan's are 200 bytes) with odd bytes anywhere, at block
    /// edges included.
    #[test]
    fn the_last_non_base64_byte_is_the_bytewise_one() {
        let mut next = crate::classify::testing::splitmix64(0x18_0070);
        let alphabet = b"ABCXYZabcxyz0189+/-_";
        let mut found = 0;
        for round in 0..20_000 {
            let len = if round % 2 == 0 {
                200
            } else {
                (next() % 240) as usize
            };
            let mut t = draw(&mut next, alphabet, len);
            for _ in 0..(next() % 3) {
                if len > 0 {
                    t[(next() % len as u64) as usize] = b" .\n\xff\x00=\""[(next() % 7) as usize];
                }
            }
            let want = t.iter().rposition(|&c| !is_b64(c));
            assert_eq!(last_non_b64(&t), want, "input {t:?}");
            found += usize::from(want.is_some());
        }
        assert!(found > 5000, "{found}");
    }

    #[test]
    fn all_b64_agrees_with_the_bytewise_test_on_random_input() {
        // reproducible input; base64 bytes dominate so that long all-base64 slices
        // (several blocks) occur, with one odd byte planted anywhere in some of them
        let mut next = crate::classify::testing::splitmix64(0xB64);
        let alphabet = b"ABCXYZabcxyz0189+/-_";
        let (mut yes, mut no) = (0, 0);
        for _ in 0..5000 {
            let len = (next() % 130) as usize;
            let mut t = draw(&mut next, alphabet, len);
            if len > 0 && next().is_multiple_of(2) {
                t[(next() % len as u64) as usize] = (next() % 256) as u8;
            }
            let want = t.iter().all(|&c| is_b64(c));
            assert_eq!(all_b64(&t), want, "input {t:?}");
            if want { yes += 1 } else { no += 1 }
        }
        assert!(yes > 1000 && no > 1000, "{yes} all-base64, {no} not");
    }

    /// Images are content wherever their base64 stands: in a data URI (also with JSON's
    /// escaped slash) and under a notebook's image media type; a long base64 run that declares
    /// no media type, and a binary data URI that is no image, are still hints.
    #[test]
    fn images_are_quiet_and_opaque_base64_is_still_a_hint() {
        let mut next = crate::classify::testing::splitmix64(0x43_0001);
        let table = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let payload: String = (0..400)
            .map(|_| table[(next() % 64) as usize] as char)
            .collect();
        let kinds = |s: &str| {
            let mut out = Vec::new();
            scan(s.as_bytes(), &[], |k, _| out.push(k));
            out
        };
        for quiet in [
            format!("<img src=\"data:image/png;base64,{payload}\">"),
            format!(".x {{ background: url(data:image/webp;base64,{payload}); }}"),
            format!("{{\"src\": \"data:image\\/jpeg;base64,{payload}\"}}"),
            format!("   \"image/png\": \"{payload}\",\n"),
            format!("\"image/jpeg\":\"{payload}\""),
        ] {
            assert!(kinds(&quiet).is_empty(), "{quiet:.80}: {:?}", kinds(&quiet));
        }
        for hint in [
            format!("payload = \"{payload}\""),
            format!("<a href=\"data:application/zip;base64,{payload}\">"),
            format!("\"text/plain\": \"{payload}\""),
        ] {
            assert_eq!(kinds(&hint), [BinaryKind::Base64Blob], "{hint:.80}");
        }
    }
}
