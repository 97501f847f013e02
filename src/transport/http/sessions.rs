//! Streamable HTTP sessions: rmcp's in-memory [`LocalSessionManager`] plus what a long-running
//! server needs and rmcp leaves to its host.
//!
//! - **Idle expiry.** A session with no request in flight, no open stream and no request for
//!   [`SessionLimits::idle`] is closed (its server and tasks are dropped); later requests
//!   carrying its id get 404, so the client initializes again, as the MCP spec prescribes.
//!   A session whose client keeps a `GET` event stream open, or that has a call running, is in
//!   use and never expires. rmcp's own keep-alive is off: it counts only messages, so it would
//!   close a session whose client listens on an open stream, and one whose call runs long.
//! - **A cap** of [`SessionLimits::max`] live sessions. At the cap, an `initialize` closes the
//!   longest-idle session to make room (its client gets 404 and initializes again); when every
//!   session is in use, the `initialize` gets 503. Clients that vanish without `DELETE` (most
//!   do when killed) thus never lock others out.
//! - **Status codes rmcp does not give:** `DELETE` of a live session answers 200 (rmcp: 202,
//!   which the Python SDK reports as a failure), and any request naming an unknown or expired
//!   session answers 404 with a JSON-RPC error body.
//!
//! [`gate`] is the axum layer in front of rmcp; [`Sessions`] is the [`SessionManager`] rmcp
//! calls, which keeps the table in step when rmcp creates or closes a session.

use super::body;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, ServerSseMessage, SessionId, SessionManager,
};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Default idle time after which a session is closed.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30 * 60);
/// Default number of live sessions. An idle session holds about 60 KB (its client state and
/// a worker task), so the cap bounds what forgotten sessions can hold to a few tens of MB.
pub const DEFAULT_MAX: usize = 256;

/// The request header naming the session.
const SESSION_HEADER: &str = "mcp-session-id";

/// How long sessions live and how many there may be.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    pub idle: Duration,
    pub max: usize,
}

impl Default for SessionLimits {
    fn default() -> SessionLimits {
        SessionLimits {
            idle: DEFAULT_IDLE,
            max: DEFAULT_MAX,
        }
    }
}

/// Marks a POST whose message is an `initialize` request (set by the body front door).
#[derive(Debug, Clone, Copy)]
pub struct Initialize;

struct Entry {
    /// When the last request started or ended.
    last_active: Instant,
    /// Requests in flight and open streams.
    busy: usize,
}

#[derive(Default)]
struct Table {
    live: HashMap<SessionId, Entry>,
    /// `initialize` requests admitted and not yet answered (each may add a session).
    reserved: usize,
}

/// The session manager: rmcp's local one, and the table of live sessions.
pub struct Sessions {
    inner: LocalSessionManager,
    table: Mutex<Table>,
    limits: SessionLimits,
}

impl Sessions {
    pub fn new(limits: SessionLimits) -> Arc<Sessions> {
        let mut inner = LocalSessionManager::default();
        // Expiry is ours (see the module documentation).
        inner.session_config.keep_alive = None;
        Arc::new(Sessions {
            inner,
            table: Mutex::new(Table::default()),
            limits,
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // The table holds plain counters: one a panicking thread left behind is still usable.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Live sessions now.
    #[cfg(test)]
    fn live(&self) -> usize {
        self.table().live.len()
    }

    /// Mark the session in use until the returned guard is dropped; `None` when no such
    /// session is live.
    fn enter(self: &Arc<Self>, id: &str) -> Option<InUse> {
        let mut table = self.table();
        let id = table.live.get_key_value(id)?.0.clone();
        let entry = table.live.get_mut(&id)?;
        entry.busy += 1;
        entry.last_active = Instant::now();
        Some(InUse {
            sessions: self.clone(),
            id,
        })
    }

    /// Admit one `initialize`: room for the session it may create, after closing the
    /// longest-idle session when the cap is reached. `None` when every session is in use.
    async fn admit(self: &Arc<Self>) -> Option<Reservation> {
        let victim = {
            let mut table = self.table();
            let victim = if table.live.len() + table.reserved >= self.limits.max {
                let oldest = table
                    .live
                    .iter()
                    .filter(|(_, e)| e.busy == 0)
                    .min_by_key(|(_, e)| e.last_active)
                    .map(|(id, _)| id.clone())?;
                table.live.remove(&oldest);
                Some(oldest)
            } else {
                None
            };
            table.reserved += 1;
            victim
        };
        let reservation = Reservation {
            sessions: self.clone(),
        };
        if let Some(id) = victim {
            tracing::info!(
                session = %id,
                max_sessions = self.limits.max,
                "session limit reached: closed the longest-idle session for a new one"
            );
            self.close_inner(&id).await;
        }
        Some(reservation)
    }

    /// Take the sessions idle for longer than the limit out of the table.
    fn take_expired(&self) -> Vec<SessionId> {
        let idle = self.limits.idle;
        let mut table = self.table();
        let expired: Vec<SessionId> = table
            .live
            .iter()
            .filter(|(_, e)| e.busy == 0 && e.last_active.elapsed() >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            table.live.remove(id);
        }
        expired
    }

    async fn close_inner(&self, id: &SessionId) {
        if let Err(e) = self.inner.close_session(id).await {
            tracing::warn!(session = %id, "closing a session failed: {e}");
        }
    }

    /// Close idle sessions every so often until `stop` is cancelled.
    pub fn spawn_reaper(self: &Arc<Self>, stop: CancellationToken) {
        let sessions = self.clone();
        let every =
            (self.limits.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = stop.cancelled() => return,
                }
                for id in sessions.take_expired() {
                    tracing::info!(session = %id, "closed a session idle for longer than --session-idle-secs");
                    sessions.close_inner(&id).await;
                }
            }
        });
    }
}

/// A request in flight or a stream open on a session.
struct InUse {
    sessions: Arc<Sessions>,
    id: SessionId,
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut table = self.sessions.table();
        if let Some(entry) = table.live.get_mut(&self.id) {
            entry.busy = entry.busy.saturating_sub(1);
            entry.last_active = Instant::now();
        }
    }
}

/// Room held for one `initialize` until it is answered.
struct Reservation {
    sessions: Arc<Sessions>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut table = self.sessions.table();
        table.reserved = table.reserved.saturating_sub(1);
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.table().live.insert(
            id.clone(),
            Entry {
                last_active: Instant::now(),
                busy: 0,
            },
        );
        tracing::debug!(session = %id, "session opened");
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if !self.table().live.contains_key(id) {
            return Ok(false);
        }
        self.inner.has_session(id).await
    }

    /// rmcp calls this for `DELETE` and when a session's server ends.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        if self.table().live.remove(id).is_some() {
            tracing::debug!(session = %id, "session closed");
        }
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// 404 for a session id that names no live session.
fn unknown_session() -> Response {
    body::rpc_error(
        StatusCode::NOT_FOUND,
        -32001,
        "Not Found: no such session (it expired, was deleted or never existed); send \
         initialize without Mcp-Session-Id to start a new one"
            .into(),
        json!({"reason": "session_not_found"}),
    )
}

/// 503 for a new session while `max` are in use; `remedy` says how a client frees one.
pub(super) fn too_many_sessions(max: usize, remedy: &str) -> Response {
    body::rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        -32000,
        format!("all {max} sessions are in use (--max-sessions); retry later, or {remedy}"),
        json!({"reason": "too_many_sessions", "max_sessions": max}),
    )
}

/// The session layer, between the body front door and rmcp (see the module documentation).
pub async fn gate(State(sessions): State<Arc<Sessions>>, req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(id) = id else {
        if req.extensions().get::<Initialize>().is_none() {
            // rmcp answers: 400 for a missing session id, or a stateless request.
            return next.run(req).await;
        }
        let Some(reservation) = sessions.admit().await else {
            tracing::warn!(
                max_sessions = sessions.limits.max,
                "refused an initialize: every session is in use (503)"
            );
            return too_many_sessions(sessions.limits.max, "end sessions with DELETE when done");
        };
        let response = next.run(req).await;
        drop(reservation);
        return response;
    };
    let Some(in_use) = sessions.enter(&id) else {
        return unknown_session();
    };
    let delete = req.method() == Method::DELETE;
    let response = next.run(req).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        // Closed. 200 is what the reference SDKs answer and what their clients accept.
        return StatusCode::OK.into_response();
    }
    // In use until the response (an event stream, for GET and most POSTs) ends.
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _held = &in_use;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(idle_ms: u64, max: usize) -> Arc<Sessions> {
        Sessions::new(SessionLimits {
            idle: Duration::from_millis(idle_ms),
            max,
        })
    }

    #[tokio::test]
    async fn a_session_in_use_does_not_expire_and_an_idle_one_does() {
        let s = sessions(20, 10);
        let (a, _ta) = s.create_session().await.unwrap();
        let (b, _tb) = s.create_session().await.unwrap();
        let held = s.enter(&a).expect("live");
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(s.take_expired(), vec![b.clone()]);
        assert!(!s.has_session(&b).await.unwrap());
        assert!(s.enter(&b).is_none());
        drop(held);
        assert!(s.take_expired().is_empty(), "just used");
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(s.take_expired(), vec![a]);
        assert_eq!(s.live(), 0);
    }

    #[tokio::test]
    async fn at_the_cap_the_longest_idle_session_makes_room_unless_all_are_in_use() {
        let s = sessions(60_000, 2);
        let (a, _ta) = s.create_session().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let (b, _tb) = s.create_session().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(s.enter(&a)); // a was used after b
        let room = s.admit().await.expect("room");
        assert!(s.enter(&b).is_none(), "b was the longest idle");
        let (c, _tc) = s.create_session().await.unwrap();
        drop(room);
        assert_eq!(s.live(), 2);
        let _a = s.enter(&a).unwrap();
        let _c = s.enter(&c).unwrap();
        assert!(s.admit().await.is_none(), "every session is in use");
        assert_eq!(s.live(), 2);
    }

    #[tokio::test]
    async fn an_admitted_initialize_holds_its_room_until_answered() {
        let s = sessions(60_000, 1);
        let first = s.admit().await.expect("room");
        assert!(s.admit().await.is_none(), "the one place is reserved");
        drop(first);
        assert!(s.admit().await.is_some());
    }
}
