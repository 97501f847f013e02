//! A scripted model endpoint on loopback for driving real agent clients offline.
//!
//! It speaks the three wire formats the clients use: the Anthropic Messages API with SSE
//! streaming (Claude Code, `ANTHROPIC_BASE_URL`), the Gemini API (Gemini CLI,
//! `GOOGLE_GEMINI_BASE_URL`: `models/<m>:streamGenerateContent?alt=sse`) and the OpenAI Responses
//! API (Codex CLI, a `model_providers` entry with `wire_api = "responses"`).
//!
//! A main turn (a request that offers tools) is answered with the k-th scripted [`Call`],
//! where k is the number of tool calls already in the conversation the client sends back:
//! stateless, so a retried request gets the same answer. Once the script is spent the model
//! says `done` and ends the turn. Side requests (titles, routing, token counts) get a harmless
//! answer: a short text, a JSON value fitting the schema asked for, or a count. Every request
//! is recorded with the time it arrived and was answered, so a test reads the tool results the
//! client sent back ([`ScriptedModel::result`]) and a benchmark the time between turns.
//!
//! HTTP/1.1 over `std::net`, one request per connection (`Connection: close`): enough for the
//! clients' HTTP stacks (undici, reqwest), and nothing to configure.

use serde_json::{Map, Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The text of the final answer once the script is spent.
pub const DONE: &str = "done";

/// One scripted tool call: the tool as the client presents it, and its arguments.
#[derive(Debug, Clone)]
pub struct Call {
    /// Codex groups an MCP server's tools in a namespace (`mcp__<server>`); `None` elsewhere.
    pub namespace: Option<String>,
    pub name: String,
    pub args: Value,
}

impl Call {
    pub fn new(name: impl Into<String>, args: Value) -> Call {
        Call {
            namespace: None,
            name: name.into(),
            args,
        }
    }

    /// How the call is shown in messages: `namespace.name` or `name`.
    pub fn shown(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The wire format of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    Gemini,
    Responses,
    Unknown,
}

/// What a request was, as the model answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// A main turn answered with scripted call `k` (0-based).
    Call(usize),
    /// A main turn after the script: the final text.
    Done,
    /// A side request (title, routing, token count, ...).
    Side,
    /// Not a path the model knows: 404.
    NotFound,
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub wire: Wire,
    pub method: String,
    pub path: String,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
    pub answered: Answered,
    pub arrived: Instant,
    pub sent: Instant,
}

/// A tool result the client sent back for a scripted call.
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// Everything the client put in the result, as text (JSON results as their JSON text).
    pub text: String,
    /// The client flagged it as an error (Anthropic `is_error`; Gemini and Codex carry errors
    /// in the text).
    pub is_error: bool,
}

impl ToolResult {
    /// The first JSON object in the text (an MCP tool's result, unwrapped from the client's
    /// framing such as Gemini's `<untrusted_context>`).
    pub fn json(&self) -> Option<Value> {
        first_json_object(&self.text)
    }
}

/// A tool as the client offered it in a main turn.
#[derive(Debug, Clone)]
pub struct Offered {
    pub namespace: Option<String>,
    pub name: String,
    /// The input schema sent to the model (`Null` when the client sent none, as for a tool
    /// whose schema is deferred).
    pub schema: Value,
}

struct Shared {
    script: Vec<Call>,
    log: Mutex<Vec<Exchange>>,
    stop: AtomicBool,
}

/// The endpoint; stops when dropped.
pub struct ScriptedModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl ScriptedModel {
    /// Listen on 127.0.0.1 (a free port) and answer with `script`.
    pub fn start(script: Vec<Call>) -> ScriptedModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            script,
            log: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let s = s.clone();
                std::thread::spawn(move || serve(stream, &s));
            }
        });
        ScriptedModel { addr, shared }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The scripted calls.
    pub fn script(&self) -> &[Call] {
        &self.shared.script
    }

    /// Every request so far, in arrival order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.shared.log.lock().unwrap().clone()
    }

    /// The main-turn requests (those offering tools), in arrival order.
    pub fn turns(&self) -> Vec<Exchange> {
        self.exchanges()
            .into_iter()
            .filter(|e| matches!(e.answered, Answered::Call(_) | Answered::Done))
            .collect()
    }

    /// The result the client sent back for scripted call `k`, from the latest request that
    /// carries it.
    pub fn result(&self, k: usize) -> Option<ToolResult> {
        let id = call_id(k);
        self.turns()
            .iter()
            .rev()
            .find_map(|e| tool_result(e.wire, &e.body, &id))
    }

    /// The tools offered in the last main turn.
    pub fn offered(&self) -> Vec<Offered> {
        self.turns()
            .last()
            .map(|e| offered(e.wire, &e.body))
            .unwrap_or_default()
    }

    /// A one-line-per-request summary, for failure messages.
    pub fn summary(&self) -> String {
        self.exchanges()
            .iter()
            .map(|e| format!("{} {} -> {:?}", e.method, e.path, e.answered))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn call_id(k: usize) -> String {
    format!("call_rw_{k:03}")
}

/// Read one request, answer it, record it.
fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let Some((method, path, body)) = read_request(&mut reader) else {
        return;
    };
    let arrived = Instant::now();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (wire, answered, status, content_type, payload) = answer(&path, &body, &shared.script);
    let mut out = stream;
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-cache\r\nConnection: close\r\n\r\n",
        payload.len()
    );
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(payload.as_bytes());
    let _ = out.flush();
    let sent = Instant::now();
    shared.log.lock().unwrap().push(Exchange {
        wire,
        method,
        path,
        body,
        answered,
        arrived,
        sent,
    });
}

/// Method, path and body of one HTTP/1.1 request (`Content-Length` or chunked).
fn read_request(r: &mut impl BufRead) -> Option<(String, String, Vec<u8>)> {
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let v = v.trim();
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.parse().ok()?,
                "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
                _ => {}
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            if n == 0 {
                let mut end = String::new();
                r.read_line(&mut end).ok()?;
                break;
            }
            let mut chunk = vec![0; n];
            r.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk);
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf).ok()?;
        }
    } else {
        body.resize(length, 0);
        r.read_exact(&mut body).ok()?;
    }
    Some((method, path, body))
}

type Reply = (Wire, Answered, &'static str, &'static str, String);

const SSE: &str = "text/event-stream";
const JSON: &str = "application/json";
const OK: &str = "200 OK";

fn answer(path: &str, body: &Value, script: &[Call]) -> Reply {
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if path.starts_with("/v1/messages/count_tokens") {
        let n = body.to_string().len() / 4;
        return side(
            Wire::Anthropic,
            JSON,
            json!({"input_tokens": n}).to_string(),
        );
    }
    if path.starts_with("/v1/messages") {
        let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
        if !has_tools {
            let text = side_text(body.pointer("/output_config/format/schema"));
            return side(Wire::Anthropic, if stream { SSE } else { JSON }, {
                anthropic(body, &Turn::Text(text), stream)
            });
        }
        let k = count(body.get("messages"), "assistant", |c| {
            c["type"] == "tool_use"
        });
        let turn = turn(script, k);
        return main(Wire::Anthropic, &turn, if stream { SSE } else { JSON }, {
            anthropic(body, &turn, stream)
        });
    }
    if path.contains(":countTokens") {
        let n = body.to_string().len() / 4;
        return side(Wire::Gemini, JSON, json!({"totalTokens": n}).to_string());
    }
    if path.contains(":streamGenerateContent") || path.contains(":generateContent") {
        let stream = path.contains(":streamGenerateContent");
        let framed = |v: Value| {
            if stream {
                format!("data: {v}\r\n\r\n")
            } else {
                v.to_string()
            }
        };
        if !has_tools {
            let schema = body
                .pointer("/generationConfig/responseJsonSchema")
                .or_else(|| body.pointer("/generationConfig/responseSchema"));
            let text = side_text(schema);
            return side(
                Wire::Gemini,
                if stream { SSE } else { JSON },
                framed(gemini(&Turn::Text(text))),
            );
        }
        let k = count(body.get("contents"), "model", |p| {
            p.get("functionCall").is_some()
        });
        let turn = turn(script, k);
        return main(
            Wire::Gemini,
            &turn,
            if stream { SSE } else { JSON },
            framed(gemini(&turn)),
        );
    }
    if path.starts_with("/v1/responses") {
        if !has_tools {
            return side(Wire::Responses, SSE, responses(&Turn::Text(DONE.into())));
        }
        let k = body
            .get("input")
            .and_then(Value::as_array)
            .map_or(0, |items| {
                items
                    .iter()
                    .filter(|i| i["type"] == "function_call")
                    .count()
            });
        let turn = turn(script, k);
        return main(Wire::Responses, &turn, SSE, responses(&turn));
    }
    (
        Wire::Unknown,
        Answered::NotFound,
        "404 Not Found",
        JSON,
        json!({"error": {"message": format!("the scripted model does not serve {path}")}})
            .to_string(),
    )
}

fn side(wire: Wire, content_type: &'static str, payload: String) -> Reply {
    (wire, Answered::Side, OK, content_type, payload)
}

fn main(wire: Wire, turn: &Turn, content_type: &'static str, payload: String) -> Reply {
    let answered = match turn {
        Turn::Call(k, _) => Answered::Call(*k),
        Turn::Text(_) => Answered::Done,
    };
    (wire, answered, OK, content_type, payload)
}

/// What the model says in one answer.
enum Turn {
    Call(usize, Call),
    Text(String),
}

fn turn(script: &[Call], k: usize) -> Turn {
    match script.get(k) {
        Some(c) => Turn::Call(k, c.clone()),
        None => Turn::Text(DONE.into()),
    }
}

/// Items of `role` in a conversation (`messages` or `contents`) whose content blocks or parts
/// satisfy `is_call`, counted.
fn count(list: Option<&Value>, role: &str, is_call: impl Fn(&Value) -> bool) -> usize {
    let Some(items) = list.and_then(Value::as_array) else {
        return 0;
    };
    items
        .iter()
        .filter(|m| m["role"] == role)
        .flat_map(|m| {
            m.get("content")
                .or_else(|| m.get("parts"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter(|c| is_call(c))
        .count()
}

/// A side request's text: a JSON value fitting `schema` when one is asked for.
fn side_text(schema: Option<&Value>) -> String {
    match schema {
        Some(s) => instance(s).to_string(),
        None => "ok".into(),
    }
}

/// A small value that fits a JSON schema (first enum value, empty strings, 1 for numbers).
/// A "who speaks next" check is told the user does, so the client ends its turn.
fn instance(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("object")
        .to_ascii_lowercase();
    match kind.as_str() {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    let value = if k == "next_speaker" {
                        json!("user")
                    } else {
                        instance(v)
                    };
                    out.insert(k.clone(), value);
                }
            }
            Value::Object(out)
        }
        "array" => json!([]),
        "string" => json!(""),
        "integer" | "number" => json!(1),
        "boolean" => json!(false),
        _ => Value::Null,
    }
}

/// An Anthropic Messages answer: SSE events when `stream`, else one message object.
fn anthropic(body: &Value, turn: &Turn, stream: bool) -> String {
    let model = body["model"].as_str().unwrap_or("scripted");
    let (block, stop) = match turn {
        Turn::Call(k, c) => (
            json!({"type": "tool_use", "id": call_id(*k), "name": c.name, "input": c.args}),
            "tool_use",
        ),
        Turn::Text(t) => (json!({"type": "text", "text": t}), "end_turn"),
    };
    let usage = json!({"input_tokens": 1, "output_tokens": 1});
    if !stream {
        return json!({"id": "msg_scripted", "type": "message", "role": "assistant",
            "model": model, "content": [block], "stop_reason": stop, "stop_sequence": null,
            "usage": usage})
        .to_string();
    }
    let (start, delta) = match turn {
        Turn::Call(k, c) => (
            json!({"type": "tool_use", "id": call_id(*k), "name": c.name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": c.args.to_string()}),
        ),
        Turn::Text(t) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": t}),
        ),
    };
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message",
                "role": "assistant", "model": model, "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": usage}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": 1}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// A Gemini `GenerateContentResponse`.
fn gemini(turn: &Turn) -> Value {
    let part = match turn {
        Turn::Call(k, c) => {
            json!({"functionCall": {"name": c.name, "args": c.args, "id": call_id(*k)}})
        }
        Turn::Text(t) => json!({"text": t}),
    };
    json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP",
            "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "scripted",
    })
}

/// An OpenAI Responses stream: created, the one output item, completed.
fn responses(turn: &Turn) -> String {
    let item = match turn {
        Turn::Call(k, c) => {
            let mut item = json!({"type": "function_call", "id": format!("fc_{k:03}"),
                "call_id": call_id(*k), "name": c.name, "arguments": c.args.to_string()});
            if let Some(ns) = &c.namespace {
                item["namespace"] = json!(ns);
            }
            item
        }
        Turn::Text(t) => json!({"type": "message", "role": "assistant", "id": "msg_scripted",
            "content": [{"type": "output_text", "text": t}]}),
    };
    let usage = json!({"input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
        "output_tokens_details": null, "total_tokens": 2});
    [
        json!({"type": "response.created", "response": {"id": "resp_scripted"}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": "resp_scripted", "usage": usage}}),
    ]
    .iter()
    .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
    .collect()
}

/// The result for call `id` in a request body, if it carries one.
fn tool_result(wire: Wire, body: &Value, id: &str) -> Option<ToolResult> {
    let text_of = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => p.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    };
    match wire {
        Wire::Anthropic => body["messages"]
            .as_array()?
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .find(|c| c["type"] == "tool_result" && c["tool_use_id"] == id)
            .map(|c| ToolResult {
                text: text_of(&c["content"]),
                is_error: c["is_error"] == true,
            }),
        Wire::Gemini => body["contents"]
            .as_array()?
            .iter()
            .filter_map(|m| m["parts"].as_array())
            .flatten()
            .filter_map(|p| p.get("functionResponse"))
            .find(|r| r["id"] == id)
            .map(|r| {
                let response = &r["response"];
                let is_error = response.get("error").is_some();
                let text = response
                    .get("output")
                    .or_else(|| response.get("error"))
                    .map_or_else(|| response.to_string(), text_of);
                ToolResult { text, is_error }
            }),
        Wire::Responses => body["input"]
            .as_array()?
            .iter()
            .find(|i| i["type"] == "function_call_output" && i["call_id"] == id)
            .map(|i| {
                let output = &i["output"];
                let text = match output.get("content") {
                    Some(c) => text_of(c),
                    None => text_of(output),
                };
                ToolResult {
                    text,
                    is_error: output.get("success") == Some(&json!(false)),
                }
            }),
        Wire::Unknown => None,
    }
}

/// The tools a main-turn request offers.
fn offered(wire: Wire, body: &Value) -> Vec<Offered> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    match wire {
        Wire::Anthropic => tools
            .iter()
            .filter_map(|t| {
                Some(Offered {
                    namespace: None,
                    name: t["name"].as_str()?.to_string(),
                    schema: t.get("input_schema").cloned().unwrap_or(Value::Null),
                })
            })
            .collect(),
        Wire::Gemini => tools
            .iter()
            .filter_map(|t| t["functionDeclarations"].as_array())
            .flatten()
            .filter_map(|d| {
                Some(Offered {
                    namespace: None,
                    name: d["name"].as_str()?.to_string(),
                    schema: d
                        .get("parametersJsonSchema")
                        .or_else(|| d.get("parameters"))
                        .cloned()
                        .unwrap_or(Value::Null),
                })
            })
            .collect(),
        Wire::Responses => {
            let mut out = Vec::new();
            for t in &tools {
                let ns = (t["type"] == "namespace").then(|| t["name"].as_str().map(String::from));
                let inner = match &ns {
                    Some(_) => t["tools"].as_array().cloned().unwrap_or_default(),
                    None => vec![t.clone()],
                };
                for f in inner {
                    if let Some(name) = f["name"].as_str() {
                        out.push(Offered {
                            namespace: ns.clone().flatten(),
                            name: name.to_string(),
                            schema: f.get("parameters").cloned().unwrap_or(Value::Null),
                        });
                    }
                }
            }
            out
        }
        Wire::Unknown => Vec::new(),
    }
}

/// The first balanced `{...}` in `text` that parses as JSON.
fn first_json_object(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    let mut start = 0;
    while let Some(off) = text[start..].find('{') {
        let open = start + off;
        let (mut depth, mut in_str, mut escaped) = (0i32, false, false);
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            if in_str {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_str = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        if let Ok(v @ Value::Object(_)) = serde_json::from_str(&text[open..=i]) {
                            return Some(v);
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
        start = open + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_fits_the_router_and_next_speaker_schemas() {
        let router = json!({"type": "OBJECT", "properties": {
            "complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}}});
        assert_eq!(
            instance(&router),
            json!({"complexity_reasoning": "", "complexity_score": 1})
        );
        let next = json!({"type": "object", "properties": {"reasoning": {"type": "string"},
            "next_speaker": {"type": "string", "enum": ["model", "user"]}}});
        assert_eq!(instance(&next)["next_speaker"], "user");
    }

    #[test]
    fn first_json_object_skips_framing_and_braces_in_strings() {
        let t = "<untrusted_context>\n{\"ok\": true, \"s\": \"a}b{\"}\n</untrusted_context>";
        assert_eq!(first_json_object(t), Some(json!({"ok": true, "s": "a}b{"})));
        assert_eq!(first_json_object("no json {here"), None);
    }
}
