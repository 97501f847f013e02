//! What every transport's front door does to a message before it is parsed. JSON cannot carry a lone UTF-16 surrogate (`"\ud800"`)
//! or raw bytes that are not UTF-8, and a JSON-RPC library that meets one drops the whole
//! message: the agent waits forever for an answer. This module rewrites each such unit, inside
//! a JSON string, into a sentinel that is valid JSON, so the message parses and the tool
//! refuses it with a typed `policy_violation`/`encoding` envelope naming the field
//! ([`crate::tools::parse_args`] looks for [`BAD_UNICODE_SENTINEL`]). Nothing is ever written
//! with a replacement character in place of what the agent sent.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use std::borrow::Cow;

/// What an unrepresentable unit becomes. Starts with NUL, which no JSON text decodes to by
/// accident in a tool argument that is meant to be written.
pub const BAD_UNICODE_SENTINEL: &str = "\u{0}\u{1}rw-bad-unicode\u{1}\u{0}";
const BAD_UNICODE_SENTINEL_JSON: &str = r"\u0000\u0001rw-bad-unicode\u0001\u0000";
const SENTINEL_JSON: &[u8] = BAD_UNICODE_SENTINEL_JSON.as_bytes();

fn hex4(b: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u16::from_str_radix(s, 16).ok()
}

/// Whether `line` has a `\u` escape of a UTF-16 surrogate (`\uD800` to `\uDFFF`): only such
/// an escape can be lone, so a line without one needs no rewriting. (An escaped backslash
/// followed by such text is a false alarm; it costs only the careful pass below.) Lines from
/// clients that escape every non-ASCII character (Python's `json.dumps` does by default) are
/// full of other `\u` escapes, and were copied byte by byte for nothing.
fn has_surrogate_escape(line: &[u8]) -> bool {
    // Lines without any `\u` are the common case: a substring search rejects them at memory
    // speed. From the first `\u` on, 32 starting positions are tested at a time over a
    // fixed-size window, in a loop the compiler vectorises (no `unsafe`): a line of nothing
    // but `\u00e9` escapes has one at every sixth byte, where a substring search stops and
    // restarts at each (a fifth of such a write's CPU).
    const STEP: usize = 32;
    fn escape_at(w: &[u8], k: usize) -> bool {
        let hex = w[k + 3] | 0x20;
        (w[k] == b'\\')
            & (w[k + 1] == b'u')
            & ((w[k + 2] | 0x20) == b'd')
            & ((hex == b'8') | (hex == b'9') | (b'a'..=b'f').contains(&hex))
    }
    let Some(mut at) = memchr::memmem::find(line, b"\\u") else {
        return false;
    };
    while let Some(window) = line.get(at..at + STEP + 3) {
        let Ok(window) = <&[u8; STEP + 3]>::try_from(window) else {
            break;
        };
        let mut hit = false;
        for k in 0..STEP {
            hit |= escape_at(window, k);
        }
        if hit {
            return true;
        }
        at += STEP;
    }
    let rest = line.get(at..).unwrap_or_default();
    (0..rest.len().saturating_sub(3)).any(|k| escape_at(rest, k))
}

/// Rewrite lone surrogate escapes and invalid UTF-8 in one JSON line. Borrowed when clean.
/// Always UTF-8, so the parse after it need not check that again.
pub fn sanitize_line(line: &[u8]) -> Cow<'_, str> {
    let has_escape_u = has_surrogate_escape(line);
    let text = std::str::from_utf8(line);
    let utf8_ok = text.is_ok();
    if let Ok(text) = text
        && !has_escape_u
    {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(line.len() + 16);
    if utf8_ok {
        out.extend_from_slice(line);
    } else {
        for chunk in line.utf8_chunks() {
            out.extend_from_slice(chunk.valid().as_bytes());
            if !chunk.invalid().is_empty() {
                out.extend_from_slice(SENTINEL_JSON);
            }
        }
    }
    if !has_escape_u {
        return Cow::Owned(utf8_string(out));
    }
    let src = out;
    let mut res = Vec::with_capacity(src.len() + 16);
    let mut i = 0;
    let mut in_string = false;
    while i < src.len() {
        let b = src[i];
        if !in_string {
            if b == b'"' {
                in_string = true;
            }
            res.push(b);
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                res.push(b);
                i += 1;
            }
            b'\\' if src.get(i + 1) == Some(&b'u') => {
                let Some(code) = hex4(&src[i + 2..]) else {
                    res.push(b);
                    i += 1;
                    continue;
                };
                if (0xD800..=0xDBFF).contains(&code) {
                    let low = (src.get(i + 6) == Some(&b'\\') && src.get(i + 7) == Some(&b'u'))
                        .then(|| src.get(i + 8..).and_then(hex4))
                        .flatten();
                    if low.is_some_and(|l| (0xDC00..=0xDFFF).contains(&l)) {
                        res.extend_from_slice(&src[i..i + 12]);
                        i += 12;
                    } else {
                        res.extend_from_slice(SENTINEL_JSON);
                        i += 6;
                    }
                } else if (0xDC00..=0xDFFF).contains(&code) {
                    res.extend_from_slice(SENTINEL_JSON);
                    i += 6;
                } else {
                    res.extend_from_slice(&src[i..i + 6]);
                    i += 6;
                }
            }
            b'\\' => {
                res.extend_from_slice(&src[i..(i + 2).min(src.len())]);
                i += 2;
            }
            _ => {
                res.push(b);
                i += 1;
            }
        }
    }
    Cow::Owned(utf8_string(res))
}

/// Times [`utf8_string`] met bytes that were not UTF-8 (the tests check it never does).
#[cfg(test)]
static UTF8_FALLBACKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The rewritten line as a `String`: UTF-8 by construction (valid input copied in order, with
/// ASCII replacing ASCII escapes and invalid bytes), so the check cannot fail; should it,
/// the bytes are kept as far as they are valid and the rest becomes the sentinel, never a
/// replacement character.
fn utf8_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| {
        #[cfg(test)]
        UTF8_FALLBACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut out = String::new();
        for chunk in e.as_bytes().utf8_chunks() {
            out.push_str(chunk.valid());
            if !chunk.invalid().is_empty() {
                out.push_str(BAD_UNICODE_SENTINEL_JSON);
            }
        }
        out
    })
}

/// Argument key that marks a request the front door cut short because it was over the message
/// cap; `tools::parse_args` turns it into `quota_exceeded`/`size_limit`.
pub const OVERSIZE_KEY: &str = "__rw_oversize_bytes";
/// The cap that was exceeded, beside [`OVERSIZE_KEY`].
pub const OVERSIZE_LIMIT_KEY: &str = "__rw_oversize_limit";

/// How much of an oversized line's start and end is kept to find its `id` and tool name.
pub(crate) const KEEP: usize = 64 * 1024;

/// The first (or, with `last`, the last) `"key": value` in `hay` whose value is a whole JSON
/// number or string, as JSON text.
fn find_scalar(hay: &[u8], key: &str, last: bool) -> Option<String> {
    let text = String::from_utf8_lossy(hay);
    let needle = format!("\"{key}\"");
    let mut found = None;
    let mut from = 0;
    while let Some(pos) = text[from..].find(&needle) {
        let at = from + pos + needle.len();
        from = at;
        let rest = text[at..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        // The value as JSON parses it (escapes included), re-serialised: never a fragment.
        let value = match serde_json::Deserializer::from_str(rest)
            .into_iter::<serde_json::Value>()
            .next()
        {
            Some(Ok(v @ (serde_json::Value::String(_) | serde_json::Value::Number(_)))) => {
                Some(v.to_string())
            }
            _ => None,
        };
        if value.is_some() {
            found = value;
            if !last {
                break;
            }
        }
    }
    found
}

/// A small request standing in for one that was over the cap: same id and tool, arguments
/// replaced by the [`OVERSIZE_KEY`] marker. `None` when no id can be found (then nothing can
/// be answered and the line is dropped with a log).
pub(crate) fn oversize_stand_in(
    head: &[u8],
    tail: &[u8],
    bytes: usize,
    limit: usize,
) -> Option<Vec<u8>> {
    // Clients put `id` before `params` (head) or after it (tail); in the tail the real one is
    // the last, in the head the first.
    let head_id = head
        .windows(8)
        .position(|w| w == b"\"params\"")
        .and_then(|p| find_scalar(&head[..p], "id", false));
    let id = head_id.or_else(|| find_scalar(tail, "id", true))?;
    let name = find_scalar(head, "name", false).unwrap_or_else(|| "\"rw_safe_write\"".into());
    let msg = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":{name},\"arguments\":{{\"{OVERSIZE_KEY}\":{bytes},\"{OVERSIZE_LIMIT_KEY}\":{limit}}}}}}}\n"
    );
    Some(msg.into_bytes())
}

/// Parses one client message (after [`sanitize_line`]), for both transports (the HTTP
/// front door checks a body with it before rmcp's service takes it). A `tools/call`'s
/// arguments (a megabyte of file content, say) are taken out of the parsed JSON while
/// rmcp's types are built from the rest, and put back after: rmcp's message enum buffers
/// what it parses and clones it as it tries its variants (three copies of a 1 MB
/// `content`, a seventh of such a write's CPU), so only the small rest goes through that.
/// Anything else is parsed by rmcp as it is. A `tools/call` request is built from its parts
/// (`tools_call`) when they fit.
pub fn parse_message(text: &str) -> serde_json::Result<ClientJsonRpcMessage> {
    let mut value: serde_json::Value = serde_json::from_str(text)?;
    let call = value.get("method").and_then(serde_json::Value::as_str) == Some("tools/call");
    let arguments = value
        .get_mut("params")
        .and_then(|p| p.get_mut("arguments"))
        .filter(|a| call && a.is_object())
        .map(serde_json::Value::take);
    let mut message: ClientJsonRpcMessage = match call.then(|| tools_call(&value)).flatten() {
        Some(message) => message,
        None => serde_json::from_value(value)?,
    };
    if let Some(serde_json::Value::Object(arguments)) = arguments {
        match &mut message {
            ClientJsonRpcMessage::Request(r) => match &mut r.request {
                ClientRequest::CallToolRequest(call) => {
                    call.params.arguments = Some(arguments);
                }
                _ => return serde_json::from_str(text),
            },
            _ => return serde_json::from_str(text),
        }
    }
    Ok(message)
}

/// A `tools/call` request (`value` has that method) built from its parts: `jsonrpc` and `id`
/// by their own types, the rest by rmcp's `CallToolRequest`, whose `_meta` goes to the
/// request's extensions as it does through rmcp's message enum. That enum tries each of the
/// thirteen client requests listed before `tools/call` in turn, each failing with a formatted
/// error: a large share of a small call's work (`docs/performance-log.md`). Every earlier request has
/// another method, so none of them can be what the enum yields for this one: the message is
/// the one rmcp builds (a test compares the two). `None` when the parts do not fit (no `id`,
/// a `result` or `error` beside the method, a field of the wrong type): rmcp then parses it
/// and reports what is wrong, as before.
fn tools_call(value: &serde_json::Value) -> Option<ClientJsonRpcMessage> {
    use rmcp::model::{CallToolRequest, JsonRpcRequest, JsonRpcVersion2_0, RequestId};
    use serde::Deserialize;
    let object = value.as_object()?;
    if object.contains_key("result") || object.contains_key("error") {
        return None;
    }
    let jsonrpc = JsonRpcVersion2_0::deserialize(object.get("jsonrpc")?).ok()?;
    let id = RequestId::deserialize(object.get("id")?).ok()?;
    let request = CallToolRequest::deserialize(value).ok()?;
    let mut message = JsonRpcRequest::new(id, ClientRequest::CallToolRequest(request));
    message.jsonrpc = jsonrpc;
    Some(ClientJsonRpcMessage::Request(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &[u8]) -> String {
        sanitize_line(x).into_owned()
    }

    fn borrowed(line: &[u8]) -> bool {
        matches!(sanitize_line(line), Cow::Borrowed(t) if t.as_bytes() == line)
    }

    #[test]
    fn clean_lines_are_borrowed_unchanged() {
        assert!(borrowed("{\"a\":\"caf\u{e9} \\u00e9\"}".as_bytes()));
        // Escapes of everything outside ASCII (Python's json.dumps writes them) but no
        // surrogate, upper or lower case: nothing to rewrite.
        assert!(borrowed(br#"{"a":"\u00e9\u20AC\u0041\uD7FF\uE000\uffff"}"#));
        // A pair is looked at (it has surrogate escapes) and left as it is.
        let pair = br#"{"a":"\u00e9 \ud83d\ude00 \uD83D\uDE00"}"#;
        assert_eq!(sanitize_line(pair).as_bytes(), &pair[..]);
    }

    #[test]
    fn a_surrogate_escape_is_found_at_every_offset() {
        for at in 0..90 {
            let mut line = vec![b'a'; 100];
            line[at..at + 6].copy_from_slice(br"\uDa00");
            assert!(has_surrogate_escape(&line), "at {at}");
            line[at + 2] = b'c';
            assert!(!has_surrogate_escape(&line), "at {at}");
        }
        assert!(!has_surrogate_escape(br"\ud"), "cut short");
        assert!(has_surrogate_escape(br"\ud8"));
    }

    #[test]
    fn only_surrogate_escapes_send_a_line_to_the_rewrite() {
        assert!(!has_surrogate_escape(
            br#"{"a":"\u00e9 \uD7FF \uE000 \u0064800"}"#
        ));
        for esc in [r"\ud800", r"\uDBFF", r"\udc00", r"\uDfFf", r"\uD9a0"] {
            let line = format!(r#"{{"a":"x{esc}y"}}"#);
            assert!(has_surrogate_escape(line.as_bytes()), "{esc}");
        }
    }

    #[test]
    fn lone_high_and_low_surrogates_become_the_sentinel() {
        let out = s(br#"{"content":"x\ud800y\udc00"}"#);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["content"].as_str().unwrap(),
            format!("x{BAD_UNICODE_SENTINEL}y{BAD_UNICODE_SENTINEL}")
        );
    }

    #[test]
    fn escaped_backslash_before_u_is_not_an_escape() {
        let line = br#"{"a":"\\ud800"}"#;
        let v: serde_json::Value = serde_json::from_str(&sanitize_line(line)).unwrap();
        assert_eq!(v["a"], "\\ud800");
    }

    #[test]
    fn oversize_stand_in_keeps_the_id_from_head_or_tail() {
        let head = br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"rw_safe_write","arguments":{"content":"xxxx"#;
        let out = oversize_stand_in(head, b"xxxx\"}}}", 1000, 10).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["id"], 42);
        assert_eq!(v["params"]["name"], "rw_safe_write");
        assert_eq!(v["params"]["arguments"][OVERSIZE_KEY], 1000);
        let head = br#"{"method":"tools/call","params":{"name":"rw.safe_write","arguments":{"content":"id:"#;
        let tail = br#"yyy"}},"jsonrpc":"2.0","id":"abc"}"#;
        let v: serde_json::Value =
            serde_json::from_slice(&oversize_stand_in(head, tail, 7, 1).unwrap()).unwrap();
        assert_eq!(v["id"], "abc");
    }

    #[test]
    fn invalid_utf8_bytes_inside_strings_become_the_sentinel() {
        let out = s(b"{\"a\":\"x\xff\xfey\"}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let a = v["a"].as_str().unwrap();
        assert!(a.starts_with(&format!("x{BAD_UNICODE_SENTINEL}")), "{a:?}");
        assert!(a.ends_with('y'));
    }
}

/// Property tests of the front door over any input: short in `cargo test`, long with
/// `PROPTEST_CASES=100000 cargo test --release --lib wire::props`.
#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<String>().prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A JSON string literal whose escapes are random `\uXXXX` units (lone surrogates included)
    /// between plain characters.
    fn string_with_escapes() -> impl Strategy<Value = Vec<u8>> {
        let unit = prop_oneof![
            any::<u16>().prop_map(|u| format!("\\u{u:04x}")),
            "[a-z ]{0,3}",
            Just("\\\\".to_string()),
            Just("\\\"".to_string()),
        ];
        prop::collection::vec(unit, 0..20)
            .prop_map(|v| format!("{{\"content\":\"{}\"}}", v.concat()).into_bytes())
    }

    proptest! {
        #[test]
        fn any_bytes_come_out_as_utf8(line in prop::collection::vec(any::<u8>(), 0..300)) {
            let out = sanitize_line(&line);
            prop_assert!(std::str::from_utf8(out.as_bytes()).is_ok());
            // ...by construction, not by the last-resort repair.
            prop_assert_eq!(UTF8_FALLBACKS.load(std::sync::atomic::Ordering::Relaxed), 0);
        }

        #[test]
        fn json_that_serde_writes_passes_unchanged(v in json_value()) {
            let line = serde_json::to_vec(&v).unwrap();
            let out = sanitize_line(&line);
            prop_assert_eq!(out.as_bytes(), &line[..]);
        }

        #[test]
        fn any_escapes_in_a_string_still_parse(line in string_with_escapes()) {
            let out = sanitize_line(&line);
            let parsed = serde_json::from_str::<serde_json::Value>(&out);
            prop_assert!(parsed.is_ok(), "{}", out);
        }

        #[test]
        fn an_oversize_stand_in_is_always_valid_json(
            head in prop::collection::vec(any::<u8>(), 0..200),
            id in prop_oneof![any::<i64>().prop_map(|i| i.to_string()), any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap())],
            tail in prop::collection::vec(any::<u8>(), 0..200),
        ) {
            let mut h = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"params\":{{\"name\":\"rw_safe_write\",\"arguments\":{{\"content\":\"").into_bytes();
            h.extend_from_slice(&head);
            if let Some(out) = oversize_stand_in(&h, &tail, 1 << 30, 1 << 20) {
                let v: Result<serde_json::Value, _> = serde_json::from_slice(&out);
                prop_assert!(v.is_ok(), "{}", String::from_utf8_lossy(&out));
            }
            if let Some(out) = oversize_stand_in(&head, &tail, 1 << 30, 1 << 20) {
                let v: Result<serde_json::Value, _> = serde_json::from_slice(&out);
                prop_assert!(v.is_ok(), "{}", String::from_utf8_lossy(&out));
            }
        }
    }

    #[test]
    fn parse_gives_what_rmcp_alone_would() {
        let big = "y".repeat(100_000);
        let messages = [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"rw_safe_write","arguments":{{"path":"a","content":"{big}"}},"_meta":{{"progressToken":"p-9"}}}}}}"#
            ),
            r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"rw_read"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p","arguments":{"k":"v"}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#.into(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
            r#"{"jsonrpc":"2.0","id":5,"result":{"roots":[]}}"#.into(),
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#.into(),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"a":1}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x","arguments":{"a":1}},"extra":true}"#.into(),
            // built from its parts (`tools_call`) or left to rmcp: the same message either way
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2.5,-3,null,{"b":"c"}]},"_meta":{"progressToken":42,"k":{"n":1.5}}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"x","arguments":null}}"#.into(),
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"x","requestState":"s","inputResponses":{},"other":1}}"#.into(),
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"x","_meta":null}}"#.into(),
            r#"{"jsonrpc":"2.0","id":-13,"method":"tools/call","params":{"name":"x","_meta":{}}}"#.into(),
            r#"{"id":14,"method":"tools/call","params":{"name":"x"}}"#.into(),
            r#"{"jsonrpc":"1.0","id":15,"method":"tools/call","params":{"name":"x"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}"#.into(),
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"x"},"result":{}}"#.into(),
            r#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"x"},"error":{"code":1,"message":"m"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":18,"method":"tools/call"}"#.into(),
            r#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":7}}"#.into(),
            r#"{"jsonrpc":"2.0","id":20,"method":"tools/call","params":[]}"#.into(),
        ];
        for m in &messages {
            let ours = parse_message(m).map(|v| serde_json::to_value(v).unwrap());
            let theirs = serde_json::from_slice::<ClientJsonRpcMessage>(m.as_bytes())
                .map(|v| serde_json::to_value(v).unwrap());
            match (ours, theirs) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", &m[..m.len().min(200)]),
                (Err(a), Err(b)) => assert_eq!(a.classify(), b.classify(), "{a} / {b}"),
                (a, b) => panic!("{}: {a:?} / {b:?}", &m[..m.len().min(200)]),
            }
        }
        let first = serde_json::to_value(parse_message(&messages[0]).unwrap()).unwrap();
        assert_eq!(first["params"]["arguments"]["content"], big.as_str());
        assert_eq!(first["params"]["_meta"]["progressToken"], "p-9");
        // the well-formed calls take the short way, with the progress token where rmcp's
        // progress reporting reads it
        let built = |i: usize| tools_call(&serde_json::from_str(&messages[i]).unwrap());
        for i in [0, 1, 2, 9, 10, 11, 12, 13, 14] {
            assert!(
                built(i).is_some(),
                "{}",
                &messages[i][..messages[i].len().min(120)]
            );
        }
        for i in [7, 8, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24] {
            assert!(built(i).is_none(), "{}", messages[i]);
        }
        let Some(ClientJsonRpcMessage::Request(r)) = built(10) else {
            panic!("not a request");
        };
        let ClientRequest::CallToolRequest(call) = r.request else {
            panic!("not a tools/call");
        };
        let meta = call.extensions.get::<rmcp::model::RequestMetaObject>();
        assert_eq!(
            meta.and_then(|m| m.get_progress_token()),
            Some(rmcp::model::ProgressToken(
                rmcp::model::NumberOrString::Number(42)
            ))
        );
    }
}
