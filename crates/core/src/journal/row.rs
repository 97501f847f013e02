//! The write side of a journal row: [`JournalRow`], serialised as one line with sorted keys
//! (the original's `json.dumps(..., sort_keys=True)`), and the ids and times rows carry.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A parsed journal row.
pub type Row = Map<String, Value>;

/// One journal row. Serialised with sorted keys ([`JournalRow::to_line`]).
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRow {
    pub journal_id: String,
    pub ts: String,
    pub path: String,
    pub sha256: String,
    pub prev_sha256: Option<String>,
    pub bytes: u64,
    pub mode: String,
    pub caller: String,
    pub tool: String,
    /// Optional fields: session, tx_id, idempotency_key, request_sha256, replacements, ...
    pub extra: BTreeMap<String, Value>,
}

impl JournalRow {
    /// The row as one line of JSON with sorted keys, newline-terminated. The fields are
    /// serialised where they are (`Line`), not cloned into a map of `Value`s first; a field
    /// of `extra` with a fixed field's name gives way to the fixed one.
    pub fn to_line(&self) -> String {
        // A row is a few hundred bytes: one allocation for the line, not a doubling series.
        let mut line = Vec::with_capacity(384);
        // Strings, numbers and Values serialise infallibly, into valid UTF-8.
        let _ = serde_json::to_writer(&mut line, &Line(self));
        line.push(b'\n');
        String::from_utf8(line).unwrap_or_default()
    }
}

/// A [`JournalRow`] as one JSON object with sorted keys: its fixed fields (in key order)
/// merged with `extra` (a `BTreeMap`, so in key order too), as a `BTreeMap` of all of them
/// would give it.
struct Line<'a>(&'a JournalRow);

/// One fixed field of a [`JournalRow`], borrowed.
enum Field<'a> {
    Str(&'a str),
    U64(u64),
    Null,
}

impl serde::Serialize for Field<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Field::Str(v) => s.serialize_str(v),
            Field::U64(n) => s.serialize_u64(*n),
            Field::Null => s.serialize_unit(),
        }
    }
}

impl serde::Serialize for Line<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = self.0;
        // sorted by key (byte order, as `str` compares)
        let fixed = [
            ("bytes", Field::U64(r.bytes)),
            ("caller", Field::Str(&r.caller)),
            ("journal_id", Field::Str(&r.journal_id)),
            ("mode", Field::Str(&r.mode)),
            ("path", Field::Str(&r.path)),
            (
                "prev_sha256",
                r.prev_sha256.as_deref().map_or(Field::Null, Field::Str),
            ),
            ("sha256", Field::Str(&r.sha256)),
            ("tool", Field::Str(&r.tool)),
            ("ts", Field::Str(&r.ts)),
        ];
        let mut map = s.serialize_map(None)?;
        let mut extra = r.extra.iter().peekable();
        for (key, value) in &fixed {
            while let Some((k, v)) = extra.next_if(|(k, _)| k.as_str() < *key) {
                map.serialize_entry(k, v)?;
            }
            // a field of `extra` named like a fixed one gives way to it
            let _ = extra.next_if(|(k, _)| k.as_str() == *key);
            map.serialize_entry(key, value)?;
        }
        for (k, v) in extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The forms a string value takes inside a journal line, quotes included: as serde_json
/// writes it, and (when it is not ASCII) as Python's `json.dumps` writes it by default
/// (`ensure_ascii`), since the original's rows share the journal. Independent of the
/// separator style (`"k":"v"` or `"k": "v"`), so every row whose field equals `value`
/// contains one of them.
pub fn json_string_forms(value: &str) -> Vec<String> {
    let ours = Value::from(value).to_string();
    if value.is_ascii() {
        return vec![ours];
    }
    let mut ascii = String::with_capacity(ours.len() + 16);
    for c in ours.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    vec![ours, ascii]
}

/// A fresh time-ordered journal id (UUID v7: milliseconds, then a counter and random bits
/// from a generator seeded once per thread by the OS, not a `getrandom` call per id).
pub fn new_journal_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// RFC 3339 UTC timestamp with microseconds, as journal rows carry.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
