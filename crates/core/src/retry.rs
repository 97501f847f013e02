//! L3's retry budget, counted for real: the server remembers failed calls (tool + a hash of
//! the arguments) in memory. Each identical retry of a failed call leaves one retry fewer, and
//! once none is left the call is refused at once with `blocked` / `abort` /
//! `retry_budget_exhausted`, before touching anything. A success forgets the call. Failures that
//! can never succeed by retrying (a content-filter refusal, malformed arguments) leave no
//! retries at all.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;

/// Distinct failing calls remembered at most; the oldest are forgotten beyond this.
const MAX_TRACKED: usize = 10_000;

/// Strings longer than this enter a call's [`RetryBudgets::sketch`] by their length and their
/// ends only.
const SKETCH_WHOLE: usize = 1024;

#[derive(Debug, Default)]
struct Tracked {
    /// key -> (retries left, when last failed, sketch)
    remaining: HashMap<String, (u32, u64, String)>,
    /// sketch -> how many remembered keys have it
    sketches: HashMap<String, usize>,
}

impl Tracked {
    fn forget(&mut self, key: &str) {
        if let Some((_, _, sketch)) = self.remaining.remove(key)
            && let Some(n) = self.sketches.get_mut(&sketch)
        {
            *n -= 1;
            if *n == 0 {
                self.sketches.remove(&sketch);
            }
        }
    }
}

/// The budgets of the calls that failed. Besides each call's key (a hash of all its
/// arguments) they keep its sketch (a hash of the arguments with long strings cut to their
/// ends, [`RetryBudgets::sketch`]): equal calls have equal sketches, so a call whose sketch no
/// failure has can be neither refused nor forgiven, and its key (a hash of a whole file's
/// content) is computed only if it fails.
#[derive(Debug)]
pub struct RetryBudgets {
    start: u32,
    tracked: Mutex<Tracked>,
    clock: std::sync::atomic::AtomicU64,
}

impl RetryBudgets {
    /// Budgets that start at `start` retries (the policy's `retry_budget.default`).
    pub fn new(start: u32) -> RetryBudgets {
        RetryBudgets {
            start,
            tracked: Mutex::new(Tracked::default()),
            clock: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tracked> {
        self.tracked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The identity of a call: its tool and its canonical arguments.
    pub fn key(tool: &str, args: &Value) -> String {
        canonical_sha256(tool, args, None)
    }

    /// A cheap stand-in for [`RetryBudgets::key`]: the same hash with every string longer
    /// than 1 KiB replaced by its length and its first and last 64 bytes. Calls with equal
    /// keys have equal sketches; a megabyte of content costs a few hundred bytes of hashing.
    pub fn sketch(tool: &str, args: &Value) -> String {
        let mut h = HashSink::new(tool);
        let _ = Canonical {
            value: args,
            skip: None,
            sketch: true,
        }
        .serialize(&mut serde_json::Serializer::new(&mut h));
        h.finish()
    }

    /// Whether some remembered failure has this `sketch`: only then can a call be refused or
    /// forgiven, and its key is worth computing before it runs.
    pub fn may_hold(&self, sketch: &str) -> bool {
        self.lock().sketches.contains_key(sketch)
    }

    /// Whether no call has a failure counted (then no call can be refused, and a success has
    /// nothing to reset: the caller may skip computing the key, a hash of all arguments).
    pub fn is_empty(&self) -> bool {
        self.lock().remaining.is_empty()
    }

    /// `Some(())` when the call has no retries left and must be refused unattempted.
    pub fn exhausted(&self, key: &str) -> bool {
        matches!(self.lock().remaining.get(key), Some((0, _, _)))
    }

    /// Record a failure of the call (`key`, with its `sketch`); returns the retries left for
    /// the envelope.
    pub fn on_failure(&self, key: &str, sketch: &str, retriable: bool) -> u32 {
        let tick = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut t = self.lock();
        let left = if retriable {
            match t.remaining.get(key) {
                Some((n, _, _)) => n.saturating_sub(1),
                None => self.start.saturating_sub(1),
            }
        } else {
            0
        };
        if t.remaining.len() >= MAX_TRACKED && !t.remaining.contains_key(key) {
            // Forget the oldest entry.
            if let Some(oldest) = t
                .remaining
                .iter()
                .min_by_key(|(_, (_, t, _))| *t)
                .map(|(k, _)| k.clone())
            {
                t.forget(&oldest);
            }
        }
        t.forget(key);
        *t.sketches.entry(sketch.to_string()).or_default() += 1;
        t.remaining
            .insert(key.to_string(), (left, tick, sketch.to_string()));
        left
    }

    /// A success forgets the call's failures.
    pub fn on_success(&self, key: &str) {
        self.lock().forget(key);
    }
}

/// Lowercase hex SHA-256 of `tool`, a NUL and the canonical JSON of `args` (the text
/// [`canonical_json`] returns), with the top-level argument `skip` left out. The text is
/// written straight into the hash: no sorted copy of the arguments, no string of them.
pub fn canonical_sha256(tool: &str, args: &Value, skip: Option<&str>) -> String {
    let mut h = HashSink::new(tool);
    let _ = Canonical {
        value: args,
        skip,
        sketch: false,
    }
    .serialize(&mut serde_json::Serializer::new(&mut h));
    h.finish()
}

/// A writer that hashes what is written to it.
struct HashSink(Sha256);

impl HashSink {
    fn new(tool: &str) -> HashSink {
        let mut h = Sha256::new();
        h.update(tool.as_bytes());
        h.update([0u8]);
        HashSink(h)
    }

    fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

impl std::io::Write for HashSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `value` serialised with object keys in sorted order at every level (what [`canonical_json`]
/// returns), without the top-level key `skip`; with `sketch`, long strings as their length
/// and ends ([`RetryBudgets::sketch`]).
struct Canonical<'a> {
    value: &'a Value,
    skip: Option<&'a str>,
    sketch: bool,
}

impl Canonical<'_> {
    fn nested<'b>(&self, value: &'b Value) -> Canonical<'b> {
        Canonical {
            value,
            skip: None,
            sketch: self.sketch,
        }
    }
}

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Object(m) => {
                let mut keys: Vec<&String> =
                    m.keys().filter(|k| Some(k.as_str()) != self.skip).collect();
                keys.sort();
                let mut map = s.serialize_map(Some(keys.len()))?;
                for k in keys {
                    map.serialize_entry(k, &self.nested(&m[k]))?;
                }
                map.end()
            }
            Value::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(&self.nested(v))?;
                }
                seq.end()
            }
            Value::String(text) if self.sketch && text.len() > SKETCH_WHOLE => {
                let b = text.as_bytes();
                let (head, tail) = (&b[..64], &b[b.len() - 64..]);
                (b.len(), head, tail).serialize(s)
            }
            other => other.serialize(s),
        }
    }
}

/// JSON with object keys sorted at every level, so equal arguments hash equally whatever the
/// client's key order.
pub fn canonical_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;
    use serde_json::json;

    #[test]
    fn budget_counts_down_on_identical_failures_and_then_refuses() {
        let b = RetryBudgets::new(3);
        let k = RetryBudgets::key("safe_write", &json!({"path": "a"}));
        assert!(!b.exhausted(&k));
        assert_eq!(b.on_failure(&k, "s", true), 2);
        assert_eq!(b.on_failure(&k, "s", true), 1);
        assert_eq!(b.on_failure(&k, "s", true), 0);
        assert!(b.exhausted(&k));
    }

    #[test]
    fn different_arguments_have_their_own_budget_and_success_resets() {
        let b = RetryBudgets::new(3);
        let k1 = RetryBudgets::key("t", &json!({"a": 1, "b": 2}));
        let k2 = RetryBudgets::key("t", &json!({"a": 2}));
        assert_eq!(k1, RetryBudgets::key("t", &json!({"b": 2, "a": 1})));
        b.on_failure(&k1, "s1", true);
        assert_eq!(b.on_failure(&k2, "s2", true), 2);
        b.on_success(&k1);
        assert_eq!(b.on_failure(&k1, "s1", true), 2);
    }

    #[test]
    fn non_retriable_failure_leaves_no_retries() {
        let b = RetryBudgets::new(3);
        let k = RetryBudgets::key("t", &json!({}));
        assert_eq!(b.on_failure(&k, "s", false), 0);
        assert!(b.exhausted(&k));
    }

    /// Arguments of every shape: nested objects built in unsorted order, arrays, escapes,
    /// non-ASCII text, numbers, null, and strings on either side of the sketch's cut.
    fn shapes() -> Vec<Value> {
        let long = |n: usize, fill: char| {
            let mut s = String::from("head \"quoted\"\n\u{e9}");
            s.extend(std::iter::repeat_n(fill, n));
            s.push_str("tail\t");
            s
        };
        let mut unsorted = serde_json::Map::new();
        unsorted.insert("zeta".into(), json!(1));
        unsorted.insert("alpha".into(), json!({"y": [1, 2.5, null], "b": true}));
        vec![
            json!({}),
            json!({"path": "a", "content": "x"}),
            Value::Object(unsorted),
            json!({"edits": [{"old_string": "a\u{0}b", "new_string": "\u{1F600}"}], "count": -1}),
            json!({"content": long(SKETCH_WHOLE - 40, 'x')}),
            json!({"content": long(SKETCH_WHOLE, 'x'), "mode": "overwrite"}),
            json!({"content": long(100_000, 'y'), "idempotency_key": "k-1"}),
            json!(["not", "an", "object"]),
            json!("bare"),
        ]
    }

    #[test]
    fn the_streamed_hash_is_the_hash_of_the_canonical_text() {
        for v in shapes() {
            let text = format!("safe_write\0{}", canonical_json(&v));
            assert_eq!(
                canonical_sha256("safe_write", &v, None),
                sha256_hex(text.as_bytes()),
                "{v}"
            );
            // skipping a top-level key is hashing the arguments without it
            let mut without = v.clone();
            if let Value::Object(m) = &mut without {
                m.remove("idempotency_key");
            }
            assert_eq!(
                canonical_sha256("t", &v, Some("idempotency_key")),
                sha256_hex(format!("t\0{}", canonical_json(&without)).as_bytes()),
                "{v}"
            );
        }
    }

    #[test]
    fn equal_calls_have_equal_sketches_and_only_long_strings_are_cut() {
        let mut a = serde_json::Map::new();
        a.insert("path".into(), json!("f.txt"));
        a.insert("content".into(), json!("z".repeat(5000)));
        let b = json!({"content": "z".repeat(5000), "path": "f.txt"});
        assert_eq!(
            RetryBudgets::sketch("t", &Value::Object(a)),
            RetryBudgets::sketch("t", &b)
        );
        // a difference in the middle of a long string: other keys, one sketch
        let mut middle = "z".repeat(5000);
        middle.replace_range(2500..2501, "!");
        let c = json!({"content": middle, "path": "f.txt"});
        assert_ne!(RetryBudgets::key("t", &b), RetryBudgets::key("t", &c));
        assert_eq!(RetryBudgets::sketch("t", &b), RetryBudgets::sketch("t", &c));
        // ends, length, a short string, the tool: each changes the sketch
        for other in [
            json!({"content": format!("!{}", "z".repeat(4999)), "path": "f.txt"}),
            json!({"content": "z".repeat(5001), "path": "f.txt"}),
            json!({"content": "z".repeat(5000), "path": "g.txt"}),
        ] {
            assert_ne!(
                RetryBudgets::sketch("t", &b),
                RetryBudgets::sketch("t", &other)
            );
        }
        assert_ne!(RetryBudgets::sketch("t", &b), RetryBudgets::sketch("u", &b));
        // short strings are whole: the sketch of small arguments is their key
        let small = json!({"path": "f.txt", "content": "abc"});
        assert_eq!(
            RetryBudgets::sketch("t", &small),
            RetryBudgets::key("t", &small)
        );
    }

    #[test]
    fn a_sketch_is_held_while_a_failure_with_it_is_remembered() {
        let b = RetryBudgets::new(3);
        let (k1, k2) = ("key-1", "key-2");
        assert!(!b.may_hold("s"));
        b.on_failure(k1, "s", true);
        b.on_failure(k2, "s", true);
        b.on_failure(k1, "s", true);
        assert!(b.may_hold("s") && !b.may_hold("other"));
        b.on_success(k1);
        assert!(b.may_hold("s"), "k2 still has it");
        b.on_success(k2);
        assert!(!b.may_hold("s") && b.is_empty());
        // the oldest failure forgotten past the cap takes its sketch along
        let many = RetryBudgets::new(3);
        many.on_failure("first", "first-sketch", true);
        for i in 0..MAX_TRACKED {
            many.on_failure(&format!("k{i}"), "bulk", true);
        }
        assert!(!many.may_hold("first-sketch") && many.may_hold("bulk"));
        assert!(!many.exhausted("first"));
    }
}
