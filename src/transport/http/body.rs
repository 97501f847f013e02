//! The HTTP front door for JSON-RPC bodies, the counterpart of [`crate::wire`]. Before a POST
//! reaches rmcp it checks, in order: the content type (415), the size limit (413, also for
//! chunked bodies without a `Content-Length`), that the whole body arrives within the body
//! timeout (408, and the connection is closed: a client that stalls or trickles its body
//! holds a connection no longer than one that trickles its head), and that the body is JSON
//! (-32700 Parse error)
//! holding a JSON-RPC message (-32600 Invalid Request). rmcp itself would answer the last two
//! with a plain-text 415; JSON-RPC clients expect the standard error objects. Lone UTF-16
//! surrogates and invalid UTF-8 inside strings are rewritten to the sentinel exactly as on
//! stdio, so the tool refuses them with a typed `encoding` envelope instead of the message
//! being dropped.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{Value, json};
use std::time::Duration;

/// Default time a request's body has to arrive, counted from the end of its head. 60 s
/// carries the default 90.5 MB body cap at 1.5 MB/s.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// How large a body may be and how long it may take to arrive.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest body accepted (413 beyond).
    pub max_bytes: usize,
    /// Longest time the whole body may take (408 beyond).
    pub timeout: Duration,
}

/// JSON-RPC: the body is not JSON.
pub const PARSE_ERROR: i32 = -32700;
/// JSON-RPC: the JSON is not a valid request object.
pub const INVALID_REQUEST: i32 = -32600;

/// A JSON-RPC error object with `id: null`, sent as an HTTP error. Every refusal of the HTTP
/// layer (400, 401, 403, 404, 408, 413, 415, 503) uses this shape so that a client can always parse it.
pub fn rpc_error(status: StatusCode, code: i32, message: String, data: Value) -> Response {
    rpc_error_with_id(status, Value::Null, code, message, data)
}

fn rpc_error_with_id(
    status: StatusCode,
    id: Value,
    code: i32,
    message: String,
    data: Value,
) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message, "data": data},
    });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn too_large(limit: usize, received: Option<u64>) -> Response {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        INVALID_REQUEST,
        format!(
            "request body exceeds the server's limit of {limit} bytes (--max-body-bytes); \
             nothing was applied. Send large files in pieces with rw_chunk_append and \
             rw_chunk_compose; text that JSON escaping inflates (control characters, \\u \
             escapes) is smaller sent with encoding=base64"
        ),
        json!({"limit_bytes": limit, "content_length": received, "reason": "body_too_large"}),
    )
}

/// 408 for a body that did not arrive in time. `Connection: close`: the rest of the body is
/// not waited for.
fn too_slow(timeout: Duration) -> Response {
    let secs = timeout.as_secs();
    let mut r = rpc_error(
        StatusCode::REQUEST_TIMEOUT,
        INVALID_REQUEST,
        format!(
            "the request body did not arrive within {secs} s (--body-timeout-secs); nothing \
             was applied. Send the whole body at once; large files go in pieces with \
             rw_chunk_append"
        ),
        json!({"timeout_secs": secs, "reason": "body_timeout"}),
    );
    r.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    r
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case("application/json")
        })
}

/// A POST body that passed the checks.
#[derive(Debug)]
pub struct Checked {
    /// The (sanitised) bytes to hand on.
    pub bytes: Bytes,
    /// The message is an `initialize` request.
    pub initialize: bool,
}

/// Read and check a POST body.
pub async fn read_message(
    headers: &HeaderMap,
    body: Body,
    limits: Limits,
) -> Result<Checked, Response> {
    let limit = limits.max_bytes;
    if !is_json(headers) {
        let got = headers
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        return Err(rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "Content-Type must be application/json".into(),
            json!({"content_type": got, "reason": "unsupported_media_type"}),
        ));
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit, declared));
    }
    let read = tokio::time::timeout(limits.timeout, Limited::new(body, limit).collect());
    let bytes = match read.await {
        Err(_elapsed) => {
            tracing::info!(
                timeout_secs = limits.timeout.as_secs(),
                "dropped a request whose body did not arrive in time (408)"
            );
            return Err(too_slow(limits.timeout));
        }
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<LengthLimitError>() => return Err(too_large(limit, declared)),
        Ok(Err(e)) => {
            tracing::debug!("request body read failed: {e}");
            return Err(rpc_error(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "the request body could not be read".into(),
                json!({"reason": "body_read_failed"}),
            ));
        }
    };
    let (bytes, parsed) = match crate::wire::sanitize_line(&bytes) {
        std::borrow::Cow::Borrowed(text) => {
            let parsed = crate::wire::parse_message(text);
            (bytes.clone(), parsed)
        }
        std::borrow::Cow::Owned(clean) => {
            let parsed = crate::wire::parse_message(&clean);
            (Bytes::from(clean), parsed)
        }
    };
    match parsed {
        Ok(message) => {
            let initialize = matches!(
                &message,
                ClientJsonRpcMessage::Request(r)
                    if matches!(r.request, ClientRequest::InitializeRequest(_))
            );
            Ok(Checked { bytes, initialize })
        }
        Err(e) => Err(not_a_message(&bytes, &e)),
    }
}

/// -32700 for a body that is not JSON, -32600 (with the request's id when it has one) for
/// JSON that is not a JSON-RPC message.
fn not_a_message(bytes: &[u8], e: &serde_json::Error) -> Response {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => rpc_error(
            StatusCode::BAD_REQUEST,
            PARSE_ERROR,
            format!("Parse error: the body is not JSON ({e})"),
            json!({"reason": "parse_error"}),
        ),
        Category::Data => {
            let id = serde_json::from_slice::<Value>(bytes)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .filter(|id| id.is_string() || id.is_number())
                .unwrap_or(Value::Null);
            rpc_error_with_id(
                StatusCode::BAD_REQUEST,
                id,
                INVALID_REQUEST,
                format!("Invalid Request: not a JSON-RPC 2.0 message ({e})"),
                json!({"reason": "invalid_request"}),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(ct: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, ct.parse().unwrap());
        h
    }

    fn limits(max_bytes: usize) -> Limits {
        Limits {
            max_bytes,
            timeout: DEFAULT_BODY_TIMEOUT,
        }
    }

    async fn status_and_code(ct: &str, body: &'static str, limit: usize) -> (StatusCode, i64) {
        let r = read_message(&headers(ct), Body::from(body), limits(limit))
            .await
            .expect_err("refused");
        let status = r.status();
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        (status, v["error"]["code"].as_i64().unwrap())
    }

    #[tokio::test]
    async fn each_bad_body_gets_its_status_and_jsonrpc_code() {
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(
            status_and_code("text/plain", ping, 1000).await,
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, -32600)
        );
        assert_eq!(
            status_and_code("application/json", ping, 10).await,
            (StatusCode::PAYLOAD_TOO_LARGE, -32600)
        );
        assert_eq!(
            status_and_code("application/json", "{\"jsonrpc\":", 1000).await,
            (StatusCode::BAD_REQUEST, -32700)
        );
        assert_eq!(
            status_and_code("application/json", r#"{"jsonrpc":"1.0","id":3}"#, 1000).await,
            (StatusCode::BAD_REQUEST, -32600)
        );
        let json_utf8 = headers("application/json; charset=utf-8");
        let ok = read_message(&json_utf8, Body::from(ping), limits(1000))
            .await
            .unwrap();
        assert_eq!(ok.bytes, Bytes::from(ping));
        assert!(!ok.initialize);
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"t","version":"0"}}}"#;
        let ok = read_message(&json_utf8, Body::from(init), limits(1000))
            .await
            .unwrap();
        assert!(ok.initialize);
    }

    #[tokio::test]
    async fn a_body_that_stalls_gets_408_and_closes_the_connection() {
        use futures::StreamExt;
        let first: Result<Bytes, std::io::Error> = Ok(Bytes::from_static(b"{\"jsonrpc\":"));
        let stalled = futures::stream::iter([first]).chain(futures::stream::pending());
        let quick = Limits {
            max_bytes: 1000,
            timeout: Duration::from_millis(50),
        };
        let r = read_message(
            &headers("application/json"),
            Body::from_stream(stalled),
            quick,
        )
        .await
        .expect_err("refused");
        assert_eq!(r.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(r.headers()[header::CONNECTION], "close");
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["error"]["data"]["reason"], "body_timeout");
        assert_eq!(v["error"]["code"], INVALID_REQUEST);
    }
}
