//! The legacy HTTP+SSE transport (MCP 2024-11-05), for clients that predate Streamable HTTP.
//! rmcp 3.11 no longer ships it, so it is built here on rmcp's sink/stream transport:
//!
//! - `GET /sse` opens a session: an event stream whose first event, `endpoint`, names the URL
//!   to post to (`/messages/?session_id=<id>`); every server message follows as a `message`
//!   event.
//! - `POST /messages/?session_id=<id>` delivers one client message to that session and is
//!   answered `202 Accepted`; the answer travels on the event stream.
//!
//! Each session runs its own [`McpServer`] over the shared [`Service`] (sharing one tool
//! list), wrapped in
//! [`Tracked`] so that shutdown waits for its calls. Closing the event stream ends the session.
//!
//! At most `--max-sessions` sessions are open at once; a `GET /sse` beyond gets 503
//! (`too_many_sessions`). Unlike Streamable HTTP, none is closed to make room: every legacy
//! session is an open event stream, the case in which a Streamable HTTP session is in use and
//! never evicted either. A client that goes away frees its place as soon as its connection
//! closes (the stream is dropped then).

use super::body;
use crate::dispatch::Service;
use crate::mcp::McpServer;
use crate::transport::shutdown::{Drain, Tracked};
use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::json;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Messages a session may have queued in either direction before the sender waits.
const QUEUE: usize = 64;

type Sessions = Arc<Mutex<HashMap<String, tokio::sync::mpsc::Sender<ClientJsonRpcMessage>>>>;

/// The legacy transport's state.
#[derive(Clone)]
pub struct Legacy {
    /// Each session's server is made from this one ([`McpServer::for_new_client`]).
    prototype: Arc<McpServer>,
    sessions: Sessions,
    drain: Drain,
    body: body::Limits,
    max_sessions: usize,
    closed: CancellationToken,
}

/// Removes a session from the table when its event stream is dropped.
struct SessionEnd {
    sessions: Sessions,
    id: String,
}

impl Drop for SessionEnd {
    fn drop(&mut self) {
        let mut map = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&self.id);
        tracing::debug!(session = self.id, "SSE session closed");
    }
}

impl Legacy {
    pub fn new(
        service: Arc<Service>,
        drain: Drain,
        body: body::Limits,
        max_sessions: usize,
        closed: CancellationToken,
    ) -> Legacy {
        Legacy {
            prototype: Arc::new(McpServer::new(service)),
            sessions: Arc::default(),
            drain,
            body,
            max_sessions,
            closed,
        }
    }

    pub fn router(self) -> Router {
        Router::new()
            .route("/sse", get(open_session))
            .route("/messages/", post(deliver))
            .route("/messages", post(deliver))
            .with_state(self)
    }
}

async fn open_session(State(legacy): State<Legacy>) -> Response {
    if legacy.drain.is_draining() {
        return super::draining_response();
    }
    let id = uuid::Uuid::now_v7().simple().to_string();
    let (to_server, from_client) = tokio::sync::mpsc::channel::<ClientJsonRpcMessage>(QUEUE);
    let (to_client, from_server) = futures::channel::mpsc::channel::<ServerJsonRpcMessage>(QUEUE);
    {
        // The table holds plain senders: one a panicking thread left behind is still usable.
        let mut map = legacy.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= legacy.max_sessions {
            tracing::warn!(
                max_sessions = legacy.max_sessions,
                "refused GET /sse: every session is open (503)"
            );
            let remedy = "close event streams no longer used";
            return super::sessions::too_many_sessions(legacy.max_sessions, remedy);
        }
        map.insert(id.clone(), to_server);
    }
    let server = Tracked::new(legacy.prototype.for_new_client(), legacy.drain.clone());
    let closed = legacy.closed.clone();
    let session = id.clone();
    tokio::spawn(async move {
        let transport = (
            to_client,
            tokio_stream::wrappers::ReceiverStream::new(from_client),
        );
        match server.serve(transport).await {
            Ok(running) => {
                let stop = running.cancellation_token();
                tokio::select! {
                    _ = running.waiting() => {}
                    () = closed.cancelled() => stop.cancel(),
                }
            }
            Err(e) => tracing::debug!(session, "SSE session ended before initialisation: {e}"),
        }
    });
    let end = SessionEnd {
        sessions: legacy.sessions.clone(),
        id: id.clone(),
    };
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/messages/?session_id={id}"));
    let messages = from_server.map(move |message| {
        let _open = &end;
        let data = serde_json::to_string(&message).unwrap_or_else(|e| {
            tracing::error!("cannot serialise a server message: {e}");
            String::from("{}")
        });
        Ok::<_, Infallible>(Event::default().event("message").data(data))
    });
    let closed = legacy.closed.clone();
    let stream = futures::stream::once(async move { Ok(endpoint) })
        .chain(messages)
        .take_until(async move { closed.cancelled().await });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn deliver(
    State(legacy): State<Legacy>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    incoming: Body,
) -> Response {
    if legacy.drain.is_draining() {
        return super::draining_response();
    }
    let Some(id) = query.get("session_id") else {
        return body::rpc_error(
            StatusCode::BAD_REQUEST,
            body::INVALID_REQUEST,
            "Bad Request: the session_id query parameter is required (GET /sse first)".into(),
            json!({"reason": "session_id_required"}),
        );
    };
    let sender = legacy
        .sessions
        .lock()
        .ok()
        .and_then(|map| map.get(id).cloned());
    let Some(sender) = sender else {
        return unknown_session();
    };
    let bytes = match body::read_message(&headers, incoming, legacy.body).await {
        Ok(checked) => checked.bytes,
        Err(refused) => return refused,
    };
    // read_message has checked that the bytes parse as exactly this type.
    let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) else {
        return body::rpc_error(
            StatusCode::BAD_REQUEST,
            body::INVALID_REQUEST,
            "Invalid Request".into(),
            json!({"reason": "invalid_request"}),
        );
    };
    if sender.send(message).await.is_err() {
        return unknown_session();
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}

fn unknown_session() -> Response {
    body::rpc_error(
        StatusCode::NOT_FOUND,
        body::INVALID_REQUEST,
        "Not Found: no such session (it ended or never existed); open a new one with GET /sse"
            .into(),
        json!({"reason": "session_not_found"}),
    )
}
