//! The client's request serialiser: compact JSON, byte for byte what `serde_json::to_writer`
//! writes, with strings copied a run at a time. serde_json looks up every byte of a string in
//! its escape table and copies between escapes, which for a large `content` costs about as
//! much as the syscall floor's whole write (`docs/performance-log.md`). Here a
//! string is checked 32 bytes at a time (a loop the compiler vectorises, no `unsafe`) and
//! copied with one `extend_from_slice` per run between the bytes JSON must escape.

use serde_json::Value;

/// Bytes checked per step of the fast scan.
const LANES: usize = 32;

/// Appends `v` to `out` as compact JSON (as `serde_json::to_writer` would).
pub(crate) fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        // serde_json's own digits (writing into a Vec cannot fail).
        Value::Number(n) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
    }
}

/// Whether JSON needs `b` escaped inside a string (what serde_json escapes: control bytes,
/// the quote and the backslash; never `/`, DEL or anything outside ASCII).
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Appends `s` as a JSON string.
fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut run = 0; // start of the bytes not yet copied
    let mut i = 0;
    while i < bytes.len() {
        if let Some(chunk) = bytes.get(i..i + LANES) {
            let mut any = false;
            for &b in chunk {
                any |= needs_escape(b);
            }
            if !any {
                i += LANES;
                continue;
            }
        }
        // This chunk (or the tail) has a byte to escape: one byte at a time.
        let end = (i + LANES).min(bytes.len());
        while i < end {
            let b = bytes[i];
            if needs_escape(b) {
                out.extend_from_slice(&bytes[run..i]);
                escape(out, b);
                run = i + 1;
            }
            i += 1;
        }
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// The escape serde_json writes for `b`.
fn escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        write_value(&mut out, v);
        out
    }

    /// A string of `len` characters drawn by a small generator from a pool heavy in the
    /// bytes that need escaping, non-ASCII characters and plain text, so escapes land on
    /// every position of a 32-byte chunk and at its edges.
    fn drawn(seed: u64, len: usize) -> String {
        let pool: Vec<char> = "abcxyz019 /{}:,\"\\\n\r\t\u{8}\u{c}\u{0}\u{1}\u{1f}\u{7f}é€😀"
            .chars()
            .collect();
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly plain letters, so long clean runs alternate with escapes.
                if x.is_multiple_of(5) {
                    pool[(x >> 8) as usize % pool.len()]
                } else {
                    (b'a' + (x >> 16) as u8 % 26) as char
                }
            })
            .collect()
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        for len in [0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1000, 70_000] {
            for seed in 1..20u64 {
                let v = Value::String(drawn(seed * 7919 + len as u64, len));
                assert_eq!(
                    ours(&v),
                    serde_json::to_vec(&v).unwrap(),
                    "len {len} seed {seed}"
                );
            }
        }
        // Every byte below 0x80 alone, at each offset of a chunk and past its end.
        for b in 0u8..0x80 {
            for at in [0usize, 1, 30, 31, 32, 33, 64, 70] {
                let mut s = "q".repeat(80);
                s.replace_range(at..at + 1, &char::from(b).to_string());
                let v = Value::String(s);
                assert_eq!(ours(&v), serde_json::to_vec(&v).unwrap(), "{b:#x} at {at}");
            }
        }
    }

    #[test]
    fn every_kind_of_value_is_written_as_serde_json_writes_it() {
        let v = json!({
            "jsonrpc": "2.0",
            "id": 18_446_744_073_709_551_615u64,
            "method": "tools/call",
            "params": {
                "name": "rw_safe_write",
                "arguments": {
                    "content": drawn(3, 5000),
                    "mode": "create",
                    "neg": -12,
                    "float": 1.5e-7,
                    "big": 1e300,
                    "flags": [true, false, null, [], {}, [1, [2, {"k\n": "v\u{0}"}]]],
                    "ke\"y": "",
                }
            }
        });
        assert_eq!(ours(&v), serde_json::to_vec(&v).unwrap());
    }
}
