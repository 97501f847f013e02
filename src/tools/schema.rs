//! The JSON Schemas the tools publish, derived from the Rust types a handler accepts
//! ([`schema`], the deserialising side) and returns ([`result_schema`], the serialising side).
//!
//! What schemars writes is valid JSON Schema 2020-12, but several of its habits trip clients
//! that check tool lists strictly (MCP Inspector warns on each, some function-calling front ends
//! refuse the tool): `format: "uint64"`, `"int32"`, `"double"` (formats JSON Schema does not
//! define), nullable unions (`type: ["string", "null"]`, `anyOf: [X, {type: null}]`) for
//! `Option` fields, and the boolean schema `true` for "any value". [`PlainSchema`] rewrites
//! them into the plainest equivalent every client reads: an unsigned integer is `integer` with
//! `minimum: 0`, an `Option` field is a property that is not required (a client may still send
//! `null` for it: serde reads `null` as `None`), and "any value" is `{}`.
//!
//! Result fields follow the same rule: a result never carries `null`; a value that is not
//! there is left out (`skip_serializing_if`), which the tests hold every result type to.

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

/// The formats JSON Schema 2020-12 defines (validation vocabulary, section 7.3). Any other
/// `format` is dropped from published schemas.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The published input schema of `T` (how it is deserialised). A model is sent it on every
/// turn, so an argument says only its own words: the doc comment of the argument's type
/// (`RejectAt`: "The verdict at which ...") is left out, the field's own description or the
/// tool's says what matters.
pub fn schema<T: JsonSchema>() -> Value {
    published::<T>(SchemaSettings::draft2020_12(), false)
}

/// The published output schema of `T` (how it is serialised: a field always written is
/// required, one skipped when empty is not).
pub fn result_schema<T: JsonSchema>() -> Value {
    published::<T>(SchemaSettings::draft2020_12().for_serialize(), true)
}

/// A container transform (`#[schemars(transform = describe(..))]`) that describes `property`
/// in a tool's own words: for an argument a flattened struct owns (`classify`, `content`),
/// whose meaning differs from tool to tool.
pub fn describe(property: &'static str, text: &'static str) -> impl FnMut(&mut Schema) {
    move |schema: &mut Schema| {
        let found = schema
            .get_mut("properties")
            .and_then(|p| p.get_mut(property))
            .and_then(Value::as_object_mut);
        if let Some(p) = found {
            p.insert("description".into(), text.into());
        }
    }
}

fn published<T: JsonSchema>(settings: SchemaSettings, type_docs: bool) -> Value {
    #[cfg(test)]
    if tests::AS_GENERATED.get() {
        return settings
            .into_generator()
            .into_root_schema_for::<T>()
            .to_value();
    }
    let root = settings
        .with_transform(PlainSchema)
        .into_generator()
        .into_root_schema_for::<T>();
    let mut v = root.to_value();
    if let Value::Object(m) = &mut v {
        // Some clients reject a `$schema` they do not know; the dialect is 2020-12 either way.
        m.remove("$schema");
        if !type_docs && let Some(Value::Object(defs)) = m.get_mut("$defs") {
            for def in defs.values_mut().filter_map(Value::as_object_mut) {
                def.remove("description");
                def.remove("title");
            }
        }
    }
    objects_for_boolean_subschemas(&mut v);
    compact(&mut v);
    v
}

/// `v` (a result's JSON Schema) reduced to the names and types of its fields: every schema
/// node loses `description`, `title`, `examples`, `default`, numeric bounds and `required`,
/// and a property holding an array of objects keeps `{"type": "array", "items": {"type":
/// "object"}}` without the items' own properties (the tool's description names those).
/// Names, types, enums and the top-level structure stay: every result still validates,
/// against a looser schema. A property that is itself named `description`, `title`,
/// `default` or `required` is kept (only schema keywords are removed).
pub fn terse(v: &mut Value) {
    strip_prose(v);
    let Some(Value::Object(props)) = v.get_mut("properties") else {
        return;
    };
    for prop in props.values_mut() {
        if let Some(items) = prop.get_mut("items")
            && items.get("properties").is_some()
        {
            *items = serde_json::json!({"type": "object"});
        }
    }
}

fn strip_prose(v: &mut Value) {
    let Value::Object(node) = v else { return };
    node.remove("description");
    node.remove("title");
    node.remove("examples");
    // A result has no defaults; which fields are always there the result itself shows.
    node.remove("default");
    node.remove("required");
    // Bounds of counts and sizes (`minimum: 0` of unsigned fields) say nothing a result's
    // reader needs.
    node.remove("minimum");
    node.remove("maximum");
    for (key, child) in node.iter_mut() {
        match key.as_str() {
            // Maps of name -> schema.
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                if let Value::Object(m) = child {
                    for schema in m.values_mut() {
                        strip_prose(schema);
                    }
                }
            }
            // Lists of schemas.
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(a) = child {
                    for schema in a {
                        strip_prose(schema);
                    }
                }
            }
            // One schema.
            "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains" => {
                strip_prose(child)
            }
            _ => {}
        }
    }
}

/// Every tool's schemas are sent to an agent's context on every listing (SPEC: issue 20's
/// token budget), so what carries no meaning for it goes, with nothing it could act on:
/// - the root's `title` (the Rust type's name) and `description` ("Arguments of `x`"): the
///   tool's own name and description say it;
/// - `$defs` used once are written in place (their `$ref` and name cost more than they
///   save), the place's own words winning over the definition's;
/// - a `oneOf` of string constants (how schemars writes a documented enum) becomes the plain
///   `enum` of those strings: the field's description names the values and what they do.
pub fn compact(v: &mut Value) {
    let Value::Object(root) = v else { return };
    root.remove("title");
    root.remove("description");
    let defs = match root.remove("$defs") {
        Some(Value::Object(d)) => d,
        _ => Map::new(),
    };
    let mut uses = std::collections::HashMap::new();
    count_refs(v, &mut uses);
    count_refs(&Value::Object(defs.clone()), &mut uses);
    let mut kept = Map::new();
    for (name, def) in &defs {
        let once = uses.get(&format!("#/$defs/{name}")).copied().unwrap_or(0) <= 1;
        let recursive = {
            let mut inner = std::collections::HashMap::new();
            count_refs(def, &mut inner);
            inner.contains_key(&format!("#/$defs/{name}"))
        };
        if !once || recursive {
            kept.insert(name.clone(), def.clone());
        }
    }
    inline_refs(v, &defs, &kept, 0);
    let mut kept_done = Map::new();
    for (name, mut def) in kept.clone() {
        inline_refs(&mut def, &defs, &kept, 0);
        kept_done.insert(name, def);
    }
    enums_for_const_unions(v);
    drop_open_object_markers(v);
    for def in kept_done.values_mut() {
        enums_for_const_unions(def);
        drop_open_object_markers(def);
    }
    if let Value::Object(root) = v
        && !kept_done.is_empty()
    {
        root.insert("$defs".into(), Value::Object(kept_done));
    }
}

/// `"additionalProperties": true` says what an object schema means without it (any other
/// key is allowed): it goes, wherever it stands.
fn drop_open_object_markers(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("additionalProperties") == Some(&Value::Bool(true)) {
                m.remove("additionalProperties");
            }
            m.values_mut().for_each(drop_open_object_markers);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_open_object_markers),
        _ => {}
    }
}

fn count_refs(v: &Value, out: &mut std::collections::HashMap<String, usize>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                *out.entry(r.clone()).or_insert(0) += 1;
            }
            m.values().for_each(|s| count_refs(s, out));
        }
        Value::Array(list) => list.iter().for_each(|s| count_refs(s, out)),
        _ => {}
    }
}

/// Replace each `$ref` to a definition not in `kept` by the definition, merged under the
/// referring schema's own keys.
fn inline_refs(v: &mut Value, defs: &Map<String, Value>, kept: &Map<String, Value>, depth: u32) {
    match v {
        Value::Object(m) => {
            let target = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .filter(|name| !kept.contains_key(*name))
                .and_then(|name| defs.get(name))
                .cloned();
            if let (Some(Value::Object(def)), true) = (target, depth < 32) {
                m.remove("$ref");
                for (k, val) in def {
                    m.entry(k).or_insert(val);
                }
            }
            for sub in m.values_mut() {
                inline_refs(sub, defs, kept, depth + 1);
            }
        }
        Value::Array(list) => {
            for sub in list {
                inline_refs(sub, defs, kept, depth + 1);
            }
        }
        _ => {}
    }
}

/// `{"oneOf": [{"const": "a", "type": "string", ...}, ...]}` → `{"type": "string", "enum":
/// ["a", ...]}`.
fn enums_for_const_unions(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let consts: Option<Vec<Value>> = ["oneOf", "anyOf"].iter().find_map(|k| {
                let list = m.get(*k)?.as_array()?;
                list.iter()
                    .map(|b| b.get("const").filter(|c| c.is_string()).cloned())
                    .collect::<Option<Vec<_>>>()
                    .filter(|c| !c.is_empty())
            });
            if let Some(values) = consts {
                m.remove("oneOf");
                m.remove("anyOf");
                m.insert("type".into(), json!("string"));
                m.insert("enum".into(), Value::Array(values));
            }
            m.values_mut().for_each(enums_for_const_unions);
        }
        Value::Array(list) => list.iter_mut().for_each(enums_for_const_unions),
        _ => {}
    }
}

/// Rewrites a schema and its subschemas into the plain form described in the module comment.
#[derive(Debug, Clone, Copy)]
pub struct PlainSchema;

/// A doc comment's line breaks are where the source wrapped it, not the text's: one line
/// each, paragraphs (blank lines) kept.
fn unwrap_description(obj: &mut Map<String, Value>) {
    if let Some(Value::String(text)) = obj.get_mut("description")
        && text.contains('\n')
    {
        *text = text
            .split("\n\n")
            .map(|para| {
                para.split('\n')
                    .map(str::trim)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect::<Vec<_>>()
            .join("\n\n");
    }
}

impl Transform for PlainSchema {
    fn transform(&mut self, schema: &mut Schema) {
        // Children first, so a union collapsed below brings in an already plain branch.
        transform_subschemas(self, schema);
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        plain_format(obj);
        unwrap_description(obj);
        obj.remove("nullable");
        if obj.get("default") == Some(&Value::Null) {
            obj.remove("default");
        }
        if let Some(Value::Array(types)) = obj.get_mut("type") {
            types.retain(|t| t != "null");
            match types.len() {
                0 => {
                    obj.remove("type");
                }
                1 => {
                    let only = types.remove(0);
                    obj.insert("type".into(), only);
                }
                _ => {}
            }
        }
        if let Some(Value::Array(values)) = obj.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        for union in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = obj.get_mut(union) else {
                continue;
            };
            branches.retain(|b| !is_null_schema(b));
            if branches.len() == 1 {
                let only = branches.remove(0);
                obj.remove(union);
                if let Value::Object(branch) = only {
                    // The field's own words (description, default) win over the branch's.
                    for (k, v) in branch {
                        obj.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
}

/// Drop a `format` JSON Schema does not define; an unsigned one (`uint`, `uint64`, ...) says
/// `minimum: 0` instead.
fn plain_format(obj: &mut Map<String, Value>) {
    let Some(format) = obj.get("format").and_then(Value::as_str) else {
        return;
    };
    if STANDARD_FORMATS.contains(&format) {
        return;
    }
    let unsigned = format.starts_with("uint");
    obj.remove("format");
    if unsigned {
        obj.entry("minimum").or_insert(json!(0));
    }
}

/// `{type: "null"}` or `{const: null}`: the branch schemars adds to make a union nullable.
fn is_null_schema(v: &Value) -> bool {
    let Value::Object(m) = v else { return false };
    m.get("type") == Some(&json!("null")) || m.get("const") == Some(&Value::Null)
}

/// schemars writes "any value" (`serde_json::Value` fields) as the boolean schema `true`. That
/// is valid JSON Schema, but the MCP TypeScript SDK (and the conformance suite's `tools-list`
/// check) require every property schema to be an object, so clients built on it refuse the
/// whole tool list. Write `{}` (and `{"not": {}}` for `false`) instead: same meaning.
fn objects_for_boolean_subschemas(v: &mut Value) {
    fn as_object(s: &mut Value) {
        if let Value::Bool(b) = *s {
            *s = if b {
                Value::Object(Map::new())
            } else {
                json!({"not": {}})
            };
        }
    }
    // Only schema positions are touched: `default`, `examples` or `const` values stay as they are.
    let Value::Object(m) = v else { return };
    for (key, sub) in m.iter_mut() {
        let subschemas: Vec<&mut Value> = match (key.as_str(), sub) {
            ("properties" | "patternProperties" | "$defs" | "definitions", Value::Object(map)) => {
                map.values_mut().collect()
            }
            ("prefixItems" | "anyOf" | "oneOf" | "allOf", Value::Array(list)) => {
                list.iter_mut().collect()
            }
            ("items" | "additionalItems" | "contains" | "not" | "additionalProperties", s) => {
                vec![s]
            }
            _ => Vec::new(),
        };
        for s in subschemas {
            if key != "additionalProperties" {
                as_object(s);
            }
            objects_for_boolean_subschemas(s);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Makes [`published`] return schemars' schema untouched, so that a test can see
        /// which result fields serde would write as `null`.
        pub(in crate::tools) static AS_GENERATED: Cell<bool> = const { Cell::new(false) };
    }

    /// Fields of the object schemas in `v` that are always written (required) yet may be
    /// `null`, with their paths.
    pub(in crate::tools) fn required_nullable(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let (Some(Value::Object(props)), Some(Value::Array(req))) =
                    (m.get("properties"), m.get("required"))
                {
                    for name in req.iter().filter_map(Value::as_str) {
                        if props.get(name).is_some_and(admits_null) {
                            out.push(format!("{path}/{name}"));
                        }
                    }
                }
                for (k, sub) in m {
                    required_nullable(sub, &format!("{path}/{k}"), out);
                }
            }
            Value::Array(list) => {
                for (i, s) in list.iter().enumerate() {
                    required_nullable(s, &format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    fn admits_null(s: &Value) -> bool {
        match s.get("type") {
            Some(Value::Array(t)) if t.iter().any(|t| t == "null") => return true,
            Some(t) if t == "null" => return true,
            _ => {}
        }
        ["anyOf", "oneOf"].iter().any(|k| {
            s.get(*k)
                .and_then(Value::as_array)
                .is_some_and(|b| b.iter().any(is_null_schema))
        })
    }

    #[test]
    fn boolean_subschemas_become_equivalent_objects_and_values_stay() {
        let mut v = json!({
            "properties": {"data": true, "never": false, "d": {"default": true}},
            "items": true,
            "additionalProperties": false
        });
        objects_for_boolean_subschemas(&mut v);
        assert_eq!(
            v,
            json!({
                "properties": {"data": {}, "never": {"not": {}}, "d": {"default": true}},
                "items": {},
                "additionalProperties": false
            })
        );
    }

    fn plain(v: Value) -> Value {
        let mut s = Schema::try_from(v).unwrap();
        PlainSchema.transform(&mut s);
        s.to_value()
    }

    #[test]
    fn descriptions_lose_the_sources_line_wrapping_but_keep_paragraphs() {
        let v = plain(
            json!({"type": "string", "description": "One line\nwrapped here.\n\nA new\n paragraph."}),
        );
        assert_eq!(
            v["description"],
            "One line wrapped here.\n\nA new paragraph."
        );
    }

    #[test]
    fn terse_keeps_names_and_types_even_of_a_property_named_description_or_required() {
        let mut v = json!({
            "type": "object", "description": "A result.",
            "properties": {
                "description": {"type": "string", "description": "The text."},
                "n": {"type": "integer", "minimum": 0, "title": "N", "default": 0},
                "required": {"type": "boolean"},
                "list": {"type": "array", "items": {"type": "object", "description": "x",
                         "properties": {"k": {"enum": ["a", "b"], "description": "k"}}}},
                "names": {"type": "array", "items": {"type": "string", "description": "A name."}},
                "inner": {"type": "object", "properties": {"k": {"enum": ["a"], "title": "K"}}}
            },
            "required": ["description", "n"]
        });
        terse(&mut v);
        assert_eq!(
            v,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "n": {"type": "integer"},
                    "required": {"type": "boolean"},
                    "list": {"type": "array", "items": {"type": "object"}},
                    "names": {"type": "array", "items": {"type": "string"}},
                    "inner": {"type": "object", "properties": {"k": {"enum": ["a"]}}}
                }
            })
        );
    }

    #[test]
    fn compact_drops_additional_properties_true_and_keeps_false() {
        let mut v = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "arguments": {"type": "object", "additionalProperties": true},
                "additionalProperties": {"type": "string"},
            }
        });
        compact(&mut v);
        assert_eq!(
            v,
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "arguments": {"type": "object"},
                    "additionalProperties": {"type": "string"},
                }
            })
        );
    }

    #[test]
    fn compact_inlines_single_use_defs_and_turns_const_unions_into_enums() {
        let mut v = json!({
            "title": "Args", "description": "Arguments of x.", "type": "object",
            "properties": {
                "mode": {"$ref": "#/$defs/Mode", "description": "create or append"},
                "list": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                "again": {"$ref": "#/$defs/Item"}
            },
            "$defs": {
                "Mode": {"description": "How.", "oneOf": [
                    {"const": "create", "type": "string", "description": "c"},
                    {"const": "append", "type": "string", "description": "a"}]},
                "Item": {"type": "object", "properties": {"n": {"type": "integer"}}}
            }
        });
        compact(&mut v);
        assert_eq!(
            v,
            json!({
                "type": "object",
                "properties": {
                    "mode": {"description": "create or append", "type": "string",
                             "enum": ["create", "append"]},
                    "list": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                    "again": {"$ref": "#/$defs/Item"}
                },
                "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}}}
            })
        );
    }

    #[test]
    fn unsigned_formats_become_a_minimum_and_other_unknown_formats_go() {
        assert_eq!(
            plain(json!({"type": "integer", "format": "uint64"})),
            json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(
            plain(json!({"type": "integer", "format": "uint32", "minimum": 1})),
            json!({"type": "integer", "minimum": 1})
        );
        assert_eq!(
            plain(json!({"type": "number", "format": "double"})),
            json!({"type": "number"})
        );
        assert_eq!(
            plain(json!({"type": "string", "format": "date-time"})),
            json!({"type": "string", "format": "date-time"})
        );
    }

    #[test]
    fn nullable_unions_become_the_plain_type_keeping_the_fields_words() {
        assert_eq!(
            plain(json!({"type": ["string", "null"], "default": null, "description": "d"})),
            json!({"type": "string", "description": "d"})
        );
        assert_eq!(
            plain(json!({
                "anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}],
                "description": "d"
            })),
            json!({"$ref": "#/$defs/Mode", "description": "d"})
        );
        assert_eq!(
            plain(json!({"type": ["string", "null"], "enum": ["a", null], "nullable": true})),
            json!({"type": "string", "enum": ["a"]})
        );
        assert_eq!(
            plain(json!({"properties": {"n": {"type": ["integer", "null"], "format": "uint"}}})),
            json!({"properties": {"n": {"type": "integer", "minimum": 0}}})
        );
    }
}
