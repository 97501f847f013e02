//! Editing a JSON client config in place: JSON with comments and trailing commas (VS Code and
//! Zed settings are JSONC) keeps every comment, every other key and their order, and the
//! file's indentation; only the one server entry is added or brought up to date. Built on
//! `jsonc-parser`'s concrete syntax tree, which holds every byte of the input.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

/// JSON with comments and trailing commas, nothing looser.
pub fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// A JSON value as the tree's input (object keys in the order given).
pub fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// The object under `path` (created where missing), or why it cannot be.
fn object_at(root: &CstObject, path: &[&str]) -> Result<CstObject, String> {
    let mut obj = root.clone();
    for key in path {
        obj = obj
            .object_value_or_create(key)
            .ok_or_else(|| format!("has a `{key}` that is not an object"))?;
    }
    Ok(obj)
}

/// `text` with the server `name` under the objects `path` holding `entry`'s keys (in that
/// order when the entry is new). An existing entry keeps the keys `entry` does not set and
/// its own `env` when it has one (a user's variables are theirs); a text already holding
/// the entry comes back unchanged, byte for byte.
pub fn with_server(
    text: Option<&str>,
    path: &[&str],
    name: &str,
    entry: &[(&str, Value)],
) -> Result<String, String> {
    let source = match text {
        Some(t) if !t.trim().is_empty() => t,
        _ => "{}\n",
    };
    let root =
        CstRootNode::parse(source, &options()).map_err(|e| format!("is not valid JSON ({e})"))?;
    let top = match root.value() {
        None => root.object_value_or_set(),
        Some(v) => v.as_object().ok_or("is not a JSON object")?,
    };
    let servers = object_at(&top, path)?;
    match servers.get(name) {
        Some(prop) => match prop.object_value() {
            Some(existing) => {
                for (key, value) in entry {
                    match existing.get(key) {
                        Some(_) if *key == "env" => {}
                        Some(p) => {
                            if p.value().and_then(|v| v.to_serde_value()).as_ref() != Some(value) {
                                p.set_value(input(value));
                            }
                        }
                        None => {
                            existing.append(key, input(value));
                        }
                    }
                }
            }
            None => prop.set_value(object(entry)),
        },
        None => {
            servers.append(name, object(entry));
        }
    }
    let mut out = root.to_string();
    if text.is_none_or(|t| t.trim().is_empty()) && !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

fn object(entry: &[(&str, Value)]) -> CstInputValue {
    CstInputValue::Object(
        entry
            .iter()
            .map(|(k, v)| (k.to_string(), input(v)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> Vec<(&'static str, Value)> {
        vec![
            ("command", json!("/opt/rw")),
            ("args", json!(["serve", "-w", "/p"])),
            ("env", json!({})),
        ]
    }

    #[test]
    fn a_new_file_gets_the_entry_in_order() {
        let out = with_server(None, &["mcpServers"], "rw", &entry()).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["mcpServers"]["rw"]["command"], "/opt/rw");
        let c = out.find("\"command\"").unwrap();
        assert!(
            c < out.find("\"args\"").unwrap() && out.ends_with('\n'),
            "{out}"
        );
    }

    #[test]
    fn comments_other_servers_and_key_order_survive() {
        let text = "// user settings\n{\n  \"zeta\": 1, // keep me\n  /* block */\n  \"servers\": {\n    \"other\": { \"command\": \"x\" },\n  },\n  \"alpha\": [1, 2],\n}\n";
        let out = with_server(Some(text), &["servers"], "rw", &entry()).unwrap();
        for kept in [
            "// user settings",
            "// keep me",
            "/* block */",
            "\"other\": { \"command\": \"x\" }",
        ] {
            assert!(out.contains(kept), "{kept} lost:\n{out}");
        }
        let z = out.find("\"zeta\"").unwrap();
        let s = out.find("\"servers\"").unwrap();
        let a = out.find("\"alpha\"").unwrap();
        assert!(z < s && s < a, "{out}");
        assert!(
            out.find("\"other\"").unwrap() < out.find("\"rw\"").unwrap(),
            "{out}"
        );
        // Everything outside the servers object is byte-identical.
        assert!(out.starts_with("// user settings\n{\n  \"zeta\": 1, // keep me\n  /* block */\n"));
        assert!(out.ends_with("  \"alpha\": [1, 2],\n}\n"), "{out}");
        assert_eq!(
            with_server(Some(&out), &["servers"], "rw", &entry()).unwrap(),
            out
        );
    }

    #[test]
    fn an_outdated_entry_is_updated_keeping_the_users_keys_and_env() {
        let text = "{\"mcpServers\": {\"rw\": {\n  \"command\": \"old\", // why\n  \"env\": {\"A\": \"1\"},\n  \"timeout\": 5\n}}}";
        let out = with_server(Some(text), &["mcpServers"], "rw", &entry()).unwrap();
        let v: Value = serde_json::from_str(&out.replace("// why", "")).unwrap();
        assert_eq!(v["mcpServers"]["rw"]["command"], "/opt/rw");
        assert_eq!(v["mcpServers"]["rw"]["args"], json!(["serve", "-w", "/p"]));
        assert_eq!(v["mcpServers"]["rw"]["env"], json!({"A": "1"}));
        assert_eq!(v["mcpServers"]["rw"]["timeout"], 5);
        assert!(out.contains("// why"), "{out}");
    }

    #[test]
    fn nested_paths_are_created_and_bad_shapes_refused() {
        let out = with_server(Some("{\"a\": 1}"), &["mcp", "servers"], "rw", &entry()).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["a"], 1);
        assert_eq!(v["mcp"]["servers"]["rw"]["command"], "/opt/rw");
        assert!(
            with_server(Some("[1]"), &["s"], "rw", &entry())
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(
            with_server(Some("{\"s\": 3}"), &["s"], "rw", &entry())
                .unwrap_err()
                .contains("`s` that is not an object")
        );
        assert!(
            with_server(Some("{ \"s\": { "), &["s"], "rw", &entry())
                .unwrap_err()
                .contains("is not valid JSON")
        );
    }
}
