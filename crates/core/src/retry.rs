//! L3's retry budget, counted for real: the server remembers failed calls (tool + a hash of
//! the arguments) in memory. Each identical retry of a failed call leaves one retry fewer, and
//! once none is left the call is refused at once with `blocked` / `abort` /
//! `retry_budget_exhausted`, before touching anything. A success forgets the call. Failures that
//! can never succeed by retrying (a content-filter refusal, malformed arguments) leave no
//! retries at all.

use crate::hash::sha256_hex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

/// Distinct failing calls remembered at most; the oldest are forgotten beyond this.
const MAX_TRACKED: usize = 10_000;

#[derive(Debug)]
pub struct RetryBudgets {
    start: u32,
    remaining: Mutex<HashMap<String, (u32, u64)>>,
    clock: std::sync::atomic::AtomicU64,
}

impl RetryBudgets {
    /// Budgets that start at `start` retries (the policy's `retry_budget.default`).
    pub fn new(start: u32) -> RetryBudgets {
        RetryBudgets {
            start,
            remaining: Mutex::new(HashMap::new()),
            clock: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The identity of a call: its tool and its canonical arguments.
    pub fn key(tool: &str, args: &Value) -> String {
        sha256_hex(format!("{tool}\0{}", canonical_json(args)).as_bytes())
    }

    /// Whether no call has a failure counted (then no call can be refused, and a success has
    /// nothing to reset: the caller may skip computing the key, a hash of all arguments).
    pub fn is_empty(&self) -> bool {
        self.remaining
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// `Some(())` when the call has no retries left and must be refused unattempted.
    pub fn exhausted(&self, key: &str) -> bool {
        let map = self.remaining.lock().unwrap_or_else(|p| p.into_inner());
        matches!(map.get(key), Some((0, _)))
    }

    /// Record a failure of the call; returns the retries left for the envelope.
    pub fn on_failure(&self, key: &str, retriable: bool) -> u32 {
        let tick = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = self.remaining.lock().unwrap_or_else(|p| p.into_inner());
        let left = if retriable {
            match map.get(key) {
                Some((n, _)) => n.saturating_sub(1),
                None => self.start.saturating_sub(1),
            }
        } else {
            0
        };
        if map.len() >= MAX_TRACKED && !map.contains_key(key) {
            // Forget the oldest entry.
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(key.to_string(), (left, tick));
        left
    }

    /// A success forgets the call's failures.
    pub fn on_success(&self, key: &str) {
        let mut map = self.remaining.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(key);
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
    use serde_json::json;

    #[test]
    fn budget_counts_down_on_identical_failures_and_then_refuses() {
        let b = RetryBudgets::new(3);
        let k = RetryBudgets::key("safe_write", &json!({"path": "a"}));
        assert!(!b.exhausted(&k));
        assert_eq!(b.on_failure(&k, true), 2);
        assert_eq!(b.on_failure(&k, true), 1);
        assert_eq!(b.on_failure(&k, true), 0);
        assert!(b.exhausted(&k));
    }

    #[test]
    fn different_arguments_have_their_own_budget_and_success_resets() {
        let b = RetryBudgets::new(3);
        let k1 = RetryBudgets::key("t", &json!({"a": 1, "b": 2}));
        let k2 = RetryBudgets::key("t", &json!({"a": 2}));
        assert_eq!(k1, RetryBudgets::key("t", &json!({"b": 2, "a": 1})));
        b.on_failure(&k1, true);
        assert_eq!(b.on_failure(&k2, true), 2);
        b.on_success(&k1);
        assert_eq!(b.on_failure(&k1, true), 2);
    }

    #[test]
    fn non_retriable_failure_leaves_no_retries() {
        let b = RetryBudgets::new(3);
        let k = RetryBudgets::key("t", &json!({}));
        assert_eq!(b.on_failure(&k, false), 0);
        assert!(b.exhausted(&k));
    }
}
