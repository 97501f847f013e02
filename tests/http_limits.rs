//! The HTTP server's limits on what one client may hold or smuggle, over raw sockets against a
//! spawned server: a request body that stalls or trickles is dropped with 408 after
//! `--body-timeout-secs`, the legacy SSE transport caps its sessions at `--max-sessions`, and
//! a request carrying two `Authorization` (or `Mcp-Session-Id`) headers is refused with 400
//! whichever of them is valid.

mod common;

use common::Workspace;
use common::http::{ACCEPT, EventStream, HttpServer, JSON, Reply, closed, generated_token};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The head of a `tools/call` POST on `session` announcing `body_len` bytes of body.
fn call_head(srv: &HttpServer, session: &str, body_len: usize) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Session-Id: {session}\r\n\
         Content-Length: {body_len}\r\n\r\n",
        srv.host()
    )
}

/// A `tools/call` of `rw_safe_write` creating `path`.
fn write_call(path: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "rw_safe_write", "arguments": {"path": path, "content": "should not land"}}})
    .to_string()
    .into_bytes()
}

/// Read what the server sends on `conn` until it closes it (at most `within`).
fn read_until_closed(conn: &mut TcpStream, within: Duration) -> Vec<u8> {
    conn.set_read_timeout(Some(within)).unwrap();
    let mut raw = Vec::new();
    let _ = conn.read_to_end(&mut raw);
    raw
}

fn assert_body_timeout(raw: &[u8]) {
    let r = Reply::parse(raw);
    assert_eq!(r.status, 408, "{}", r.text());
    assert_eq!(r.header("connection"), Some("close"));
    let v = r.json();
    assert_eq!(v["error"]["data"]["reason"], "body_timeout", "{v}");
    assert_eq!(v["error"]["data"]["timeout_secs"], 1);
}

#[test]
fn a_body_that_stalls_after_the_head_gets_408_and_is_dropped_while_others_are_served() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--body-timeout-secs", "1"], &[]);
    let mut s = srv.session();
    let body = write_call("stalled.txt");
    let mut conn = TcpStream::connect(srv.addr).unwrap();
    let started = Instant::now();
    conn.write_all(call_head(&srv, &s.id, body.len()).as_bytes())
        .unwrap();
    conn.write_all(&body[..body.len() / 2]).unwrap();
    // The normal client is served while the stalled one waits.
    s.ok(
        "rw_safe_write",
        json!({"path": "normal.txt", "content": "served"}),
    );
    let raw = read_until_closed(&mut conn, Duration::from_secs(20));
    let waited = started.elapsed();
    assert_body_timeout(&raw);
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(10),
        "dropped after {waited:?}"
    );
    assert!(closed(&mut conn), "the connection is closed after the 408");
    assert!(!ws.path("stalled.txt").exists(), "nothing was applied");
    assert_eq!(
        std::fs::read_to_string(ws.path("normal.txt")).unwrap(),
        "served"
    );
    // Headers and no body at all: the same.
    let mut silent = TcpStream::connect(srv.addr).unwrap();
    silent
        .write_all(call_head(&srv, &s.id, body.len()).as_bytes())
        .unwrap();
    assert_body_timeout(&read_until_closed(&mut silent, Duration::from_secs(20)));
    // The session is still usable.
    s.ok(
        "rw_safe_write",
        json!({"path": "after.txt", "content": "a"}),
    );
}

#[test]
fn a_trickled_body_is_cut_off_at_the_body_timeout() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &["--body-timeout-secs", "1"], &[]);
    let s = srv.session();
    let body = write_call("trickled.txt");
    let mut conn = TcpStream::connect(srv.addr).unwrap();
    conn.write_all(call_head(&srv, &s.id, body.len()).as_bytes())
        .unwrap();
    let started = Instant::now();
    // One byte every 50 ms (the whole body would take seconds), watching for an answer.
    conn.set_nonblocking(true).unwrap();
    let mut got = Vec::new();
    let mut sent = 0;
    let mut buf = [0u8; 4096];
    while sent < body.len() - 1 && started.elapsed() < Duration::from_secs(20) {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
        if conn.write_all(&body[sent..=sent]).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let cut_after = started.elapsed();
    conn.set_nonblocking(false).unwrap();
    assert!(
        sent < body.len() - 1,
        "the whole body was taken at a trickle ({sent} bytes in {cut_after:?})"
    );
    assert!(
        cut_after >= Duration::from_millis(900) && cut_after < Duration::from_secs(10),
        "cut off after {cut_after:?}, {sent} bytes in"
    );
    // The 408 comes before the close. A byte sent after the server stopped reading makes its
    // close a reset, which may overtake the answer: then the connection is at least closed.
    got.extend(read_until_closed(&mut conn, Duration::from_secs(5)));
    if !got.is_empty() {
        assert_body_timeout(&got);
    }
    assert!(closed(&mut conn));
    assert!(!ws.path("trickled.txt").exists(), "nothing was applied");
}

/// `GET /sse`: the status, and the open event stream when it is 200 (else the body).
fn open_sse(srv: &HttpServer) -> (u16, Option<EventStream>, String) {
    let mut stream = EventStream::open(srv);
    let status = stream.status();
    if status == 200 {
        return (status, Some(stream), String::new());
    }
    // A refusal is a short body with Content-Length: read it.
    let len: usize = stream
        .head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    stream.reader.read_exact(&mut body).unwrap();
    (status, None, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn legacy_sse_sessions_are_capped_and_a_closed_stream_frees_its_place() {
    let ws = Workspace::new();
    let srv = HttpServer::spawn(
        &ws,
        &["--transport", "sse", "--port", "0", "--max-sessions", "2"],
        &[],
        "/sse",
    );
    let mut streams = Vec::new();
    for _ in 0..2 {
        let (status, stream, body) = open_sse(&srv);
        assert_eq!(status, 200, "{body}");
        let mut stream = stream.unwrap();
        let (name, endpoint) = stream.next();
        assert_eq!(name, "endpoint");
        streams.push((stream, endpoint));
    }
    let (status, stream, body) = open_sse(&srv);
    assert_eq!(status, 503, "{body}");
    assert!(stream.is_none());
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["data"]["reason"], "too_many_sessions", "{v}");
    assert_eq!(v["error"]["data"]["max_sessions"], 2);
    // The open sessions are served as before.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "sse-cap", "version": "0"}}});
    let (stream, endpoint) = &mut streams[1];
    let r = srv.send("POST", endpoint, &[JSON], init.to_string().as_bytes());
    assert_eq!(r.status, 202, "{}", r.text());
    let (_, data) = stream.next();
    let v: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(v["result"]["serverInfo"]["name"], "resilient-write");
    // A client that goes away frees its place.
    let (gone, gone_endpoint) = streams.remove(0);
    drop(gone);
    let start = Instant::now();
    let (status, reopened, body) = loop {
        let opened = open_sse(&srv);
        if opened.0 != 503 || start.elapsed() > Duration::from_secs(40) {
            break opened;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(status, 200, "after {:?}: {body}", start.elapsed());
    eprintln!(
        "a closed SSE stream's place was free after {:?}",
        start.elapsed()
    );
    assert!(reopened.is_some());
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    assert_eq!(
        srv.send("POST", &gone_endpoint, &[JSON], ping.as_bytes())
            .status,
        404,
        "the closed session is gone"
    );
}

#[test]
fn two_authorization_headers_are_refused_with_400_whichever_is_valid() {
    let ws = Workspace::new();
    let token = generated_token();
    let srv = HttpServer::start(&ws, &[], &[("RW_AUTH_TOKEN", &token)]);
    let mut s = srv.session();
    let valid = format!("Bearer {token}");
    let invalid = format!("Bearer {}x", &token[..token.len() - 1]);
    let session = ("Mcp-Session-Id", s.id.as_str());
    for (first, second) in [(&valid, &invalid), (&invalid, &valid), (&valid, &valid)] {
        let headers = [
            ACCEPT,
            JSON,
            session,
            ("Authorization", first.as_str()),
            ("Authorization", second.as_str()),
        ];
        let r = srv.send("POST", "/mcp", &headers, &write_call("dup.txt"));
        assert_eq!(r.status, 400, "{}", r.text());
        let v = r.json();
        assert_eq!(v["error"]["data"]["reason"], "duplicate_header", "{v}");
        assert_eq!(v["error"]["data"]["header"], "Authorization");
        assert!(
            r.header("www-authenticate").is_none(),
            "refused before the token check"
        );
        // Not an initialize either: no session is opened with two tokens.
        let headers = [
            ACCEPT,
            JSON,
            ("Authorization", first.as_str()),
            ("Authorization", second.as_str()),
        ];
        let init = common::http::initialize_message().to_string();
        let r = srv.send("POST", "/mcp", &headers, init.as_bytes());
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.header("mcp-session-id").is_none());
    }
    assert!(!ws.path("dup.txt").exists(), "nothing was applied");
    // One valid header alone is served; the token never shows in the log.
    s.ok("rw_safe_write", json!({"path": "one.txt", "content": "1"}));
    assert!(!srv.log().contains(&token));
}

#[test]
fn two_authorization_headers_are_refused_without_a_token_and_two_session_ids_too() {
    let ws = Workspace::new();
    let srv = HttpServer::start(&ws, &[], &[]);
    let mut s = srv.session();
    let other = srv.session();
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string();
    let auth = [
        ACCEPT,
        JSON,
        ("Mcp-Session-Id", s.id.as_str()),
        ("Authorization", "Bearer a"),
        ("Authorization", "Bearer b"),
    ];
    let r = srv.send("POST", "/mcp", &auth, ping.as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["data"]["header"], "Authorization");
    // Two sessions named: which one the call would act in is not guessed.
    for (a, b) in [(&s.id, &other.id), (&s.id, &s.id)] {
        let ids = [
            ACCEPT,
            JSON,
            ("Mcp-Session-Id", a.as_str()),
            ("Mcp-Session-Id", b.as_str()),
        ];
        let r = srv.send("POST", "/mcp", &ids, &write_call("two.txt"));
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.json()["error"]["data"]["header"], "Mcp-Session-Id");
    }
    assert!(!ws.path("two.txt").exists());
    s.ok("rw_safe_write", json!({"path": "one.txt", "content": "1"}));
}
