//! Argument problems an agent can act on. Before a tool's arguments are deserialised they are
//! checked against the tool's published input schema (the same [`mod@super::schema`] clients are
//! shown): a missing required argument, one of the wrong type, or one the tool does not take
//! becomes [`Failure::BadArgument`], whose message names the argument, the type the schema
//! expects and an example value generated from the schema, e.g.
//! ``argument `path`: expected a string (e.g. "src/main.rs"), got a number (42)``.
//!
//! The check is deliberately narrower than the schema: it reports only what serde would also
//! refuse (so it never turns a call that worked into a failure), and leaves value-level rules
//! (an index of 0, a malformed hash, an unknown enum value) to the tools, whose own envelopes
//! say more. Whatever it lets through still goes to serde, whose message is the fallback.

use resilient_write_core::envelope::Failure;
use schemars::JsonSchema;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The published input schema of `T`, generated once per type.
pub fn cached_schema<T: JsonSchema>() -> Arc<Value> {
    static CACHE: Mutex<Option<HashMap<Cow<'static, str>, Arc<Value>>>> = Mutex::new(None);
    let id = T::schema_id();
    let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    map.entry(id)
        .or_insert_with(|| Arc::new(super::schema::<T>()))
        .clone()
}

/// The first problem with `args` against the input schema `root`, if any.
pub fn check(root: &Value, args: &Value) -> Option<Failure> {
    check_value(root, root, args, "")
}

/// How a problem is reported: the argument (dotted path), what is wrong, what was expected.
fn bad(
    argument: &str,
    problem: &'static str,
    expected: Option<String>,
    example: Option<Value>,
    message: String,
) -> Failure {
    Failure::BadArgument {
        argument: argument.to_string(),
        problem,
        expected,
        example,
        message,
    }
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

/// Follow `$ref`s (`#/$defs/Name`) to the schema they name.
fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..16 {
        let Some(r) = schema.get("$ref").and_then(Value::as_str) else {
            return schema;
        };
        let Some(target) = r
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
        else {
            return schema;
        };
        schema = target;
    }
    schema
}

/// The branches of a union (`anyOf`/`oneOf`), if `schema` is one.
fn branches(schema: &Value) -> Option<&Vec<Value>> {
    schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
}

/// The properties an object schema declares, its own and those of `allOf` parts.
fn properties<'a>(root: &'a Value, schema: &'a Value) -> Vec<(&'a str, &'a Value)> {
    let mut out = Vec::new();
    if let Some(Value::Object(p)) = schema.get("properties") {
        out.extend(p.iter().map(|(k, v)| (k.as_str(), v)));
    }
    for part in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.extend(properties(root, resolve(root, part)));
    }
    out
}

fn required<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a str> {
    let mut out: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for part in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.extend(required(root, resolve(root, part)));
    }
    out
}

/// Whether the object schema refuses properties it does not declare.
fn closed(schema: &Value) -> bool {
    schema.get("additionalProperties") == Some(&Value::Bool(false))
        || schema.get("unevaluatedProperties") == Some(&Value::Bool(false))
}

fn check_value(root: &Value, schema: &Value, value: &Value, at: &str) -> Option<Failure> {
    let schema = resolve(root, schema);
    if let Some(list) = branches(schema) {
        if list
            .iter()
            .any(|b| check_value(root, b, value, at).is_none())
        {
            return None;
        }
        if at.is_empty() {
            return None; // the arguments object itself: leave it to serde
        }
        return Some(wrong_type(root, schema, value, at));
    }
    if !type_matches(schema, value) {
        if at.is_empty() {
            return Some(bad(
                "arguments",
                "wrong_type",
                Some("an object".into()),
                Some(json!({})),
                format!("the arguments must be an object, got {}", describe(value)),
            ));
        }
        return Some(wrong_type(root, schema, value, at));
    }
    match value {
        Value::Object(given) if schema.get("type") == Some(&json!("object")) => {
            check_object(root, schema, given, at)
        }
        Value::Array(items) => {
            let item_schema = schema.get("items")?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, v)| check_value(root, item_schema, v, &format!("{at}[{i}]")))
        }
        _ => None,
    }
}

fn check_object(
    root: &Value,
    schema: &Value,
    given: &Map<String, Value>,
    at: &str,
) -> Option<Failure> {
    let props = properties(root, schema);
    let required = required(root, schema);
    if closed(schema) {
        let names: Vec<&str> = props.iter().map(|(k, _)| *k).collect();
        if let Some(unknown) = given.keys().find(|k| !names.contains(&k.as_str())) {
            let argument = join(at, unknown);
            let near = nearest(unknown, &names);
            let hint = match near.and_then(|n| props.iter().find(|(k, _)| *k == n)) {
                Some((n, s)) => {
                    let s = resolve(root, s);
                    format!(
                        "; did you mean `{}` ({}, e.g. {})?",
                        join(at, n),
                        expected(root, s),
                        example(root, s, n)
                    )
                }
                None => String::new(),
            };
            return Some(bad(
                &argument,
                "unknown",
                None,
                None,
                format!(
                    "argument `{argument}` is not one this tool takes{hint} Accepted: {}",
                    names.join(", ")
                ),
            ));
        }
    }
    for name in &required {
        if !given.contains_key(*name) {
            let argument = join(at, name);
            let Some((_, s)) = props.iter().find(|(k, _)| k == name) else {
                continue;
            };
            let s = resolve(root, s);
            let (exp, ex) = (expected(root, s), example(root, s, name));
            return Some(bad(
                &argument,
                "missing",
                Some(exp.clone()),
                Some(ex.clone()),
                format!("argument `{argument}` is missing: expected {exp} (e.g. {ex})"),
            ));
        }
    }
    for (name, v) in given {
        let Some((_, s)) = props.iter().find(|(k, _)| k == name) else {
            continue;
        };
        // serde reads null as "not given" for an optional argument.
        if v.is_null() && !required.contains(&name.as_str()) {
            continue;
        }
        if let Some(f) = check_value(root, s, v, &join(at, name)) {
            return Some(f);
        }
    }
    None
}

fn wrong_type(root: &Value, schema: &Value, value: &Value, at: &str) -> Failure {
    let name = at.rsplit(['.', '[']).next().unwrap_or(at);
    let (exp, ex) = (expected(root, schema), example(root, schema, name));
    bad(
        at,
        "wrong_type",
        Some(exp.clone()),
        Some(ex.clone()),
        format!(
            "argument `{at}`: expected {exp} (e.g. {ex}), got {}",
            describe(value)
        ),
    )
}

/// Whether `value` has the schema's `type` (and, for an unsigned integer, is not negative).
/// A schema without `type` accepts anything here.
fn type_matches(schema: &Value, value: &Value) -> bool {
    let ok = |t: &str| match t {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    };
    let typed = match schema.get("type") {
        Some(Value::String(t)) => ok(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(ok),
        _ => true,
    };
    // Only the unsigned case (schema.rs writes `minimum: 0` for it), which serde refuses too;
    // other minimums are the tools' to explain.
    let unsigned_ok =
        !(schema.get("minimum") == Some(&json!(0)) && value.as_i64().is_some_and(|n| n < 0));
    typed && unsigned_ok
}

/// The schema's type in words: "a string", "an integer >= 0", "one of \"a\", \"b\"".
fn expected(root: &Value, schema: &Value) -> String {
    let schema = resolve(root, schema);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let shown: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", shown.join(", "));
    }
    if let Some(c) = schema.get("const") {
        return format!("the value {c}");
    }
    if let Some(list) = branches(schema) {
        let shown: Vec<String> = list.iter().map(|b| expected(root, b)).collect();
        return shown.join(" or ");
    }
    let min = schema.get("minimum").and_then(Value::as_i64);
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => "a string".into(),
        Some("integer") => match min {
            Some(m) => format!("an integer >= {m}"),
            None => "an integer".into(),
        },
        Some("number") => "a number".into(),
        Some("boolean") => "true or false".into(),
        Some("array") => match schema.get("items") {
            Some(items) => format!("an array of {}", plural(&expected(root, items))),
            None => "an array".into(),
        },
        Some("object") => "an object".into(),
        _ => "a JSON value".into(),
    }
}

/// "a string" → "strings", for "an array of strings".
fn plural(one: &str) -> String {
    let bare = one
        .strip_prefix("an ")
        .or_else(|| one.strip_prefix("a "))
        .unwrap_or(one);
    match bare.split_once(' ') {
        Some((head, rest)) => format!("{head}s {rest}"),
        None => format!("{bare}s"),
    }
}

/// An example value for argument `name` with `schema`: the schema's own example, enum value or
/// default when it has one, else a value of its type (a string chosen by the argument's name).
pub fn example(root: &Value, schema: &Value, name: &str) -> Value {
    let schema = resolve(root, schema);
    if let Some(v) = schema
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return v.clone();
    }
    if let Some(v) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return v.clone();
    }
    if let Some(v) = schema.get("const") {
        return v.clone();
    }
    if let Some(list) = branches(schema)
        && let Some(first) = list.first()
    {
        return example(root, first, name);
    }
    if let Some(v) = schema.get("default")
        && !v.is_null()
    {
        return v.clone();
    }
    let min = schema.get("minimum").and_then(Value::as_i64);
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => json!(example_string(name)),
        Some("integer") => json!(min.map_or(1, |m| m.max(1))),
        Some("number") => json!(0.5),
        Some("boolean") => json!(true),
        Some("array") => match schema.get("items") {
            Some(items) => json!([example(root, items, name.trim_end_matches('s'))]),
            None => json!([]),
        },
        Some("object") => {
            let props = properties(root, schema);
            let mut m = Map::new();
            for r in required(root, schema) {
                if let Some((_, s)) = props.iter().find(|(k, _)| *k == r) {
                    m.insert(r.to_string(), example(root, s, r));
                }
            }
            Value::Object(m)
        }
        _ => json!("..."),
    }
}

/// A plausible string for an argument called `name`.
fn example_string(name: &str) -> String {
    let n = name.to_ascii_lowercase();
    if n.contains("sha256") {
        // SHA-256 of the empty string: a real digest, valid wherever one is expected.
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".into()
    } else if n == "path" || n.ends_with("_path") || n == "paths" || n == "file" {
        "src/main.rs".into()
    } else if n.contains("content") || n.contains("draft") || n == "text" {
        "fn main() {}\n".into()
    } else if n.contains("old_string") {
        "foo".into()
    } else if n.contains("new_string") {
        "bar".into()
    } else if n.contains("idempotency_key") {
        "write-main-1".into()
    } else if n.contains("session") {
        "report".into()
    } else if n.contains("tx_id") || n.ends_with("_id") {
        "0193f1c2-7a4e-7c1d-9b2a-3f5e6d7c8b9a".into()
    } else if n == "name" || n.ends_with("_name") {
        "step-1".into()
    } else if n.contains("since") || n.contains("ts") {
        "2026-12-04T12:00:00Z".into()
    } else {
        "text".into()
    }
}

/// A JSON value in a few words, without echoing strings (they may be long or secret).
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) if n.is_f64() => format!("a number ({n})"),
        Value::Number(n) => format!("an integer ({n})"),
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// The name in `names` closest to `given` (edit distance at most a third of its length, or
/// one contains the other).
fn nearest<'a>(given: &str, names: &[&'a str]) -> Option<&'a str> {
    let given = given.to_ascii_lowercase();
    names
        .iter()
        .map(|n| (*n, distance(&given, n)))
        .filter(|(n, d)| *d <= (n.len() / 3).max(1) || n.contains(&given) || given.contains(n))
        .min_by_key(|(_, d)| *d)
        .map(|(n, _)| n)
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_finds_typos_and_nothing_for_strangers() {
        let names = ["path", "content", "mode", "expected_prev_sha256"];
        assert_eq!(nearest("pth", &names), Some("path"));
        assert_eq!(nearest("contents", &names), Some("content"));
        assert_eq!(
            nearest("expected_sha256", &names),
            Some("expected_prev_sha256")
        );
        assert_eq!(nearest("zzzzzz", &names), None);
    }

    #[test]
    fn plurals_read_naturally() {
        assert_eq!(plural("a string"), "strings");
        assert_eq!(plural("an object"), "objects");
        assert_eq!(plural("an integer >= 0"), "integers >= 0");
    }
}
