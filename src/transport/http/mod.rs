//! The HTTP transports. `serve --transport http` hosts rmcp's Streamable HTTP tower service at
//! `/mcp` (and `/mcp/`) in axum, with stateful sessions (`Mcp-Session-Id`): each session gets
//! its own [`McpServer`] over one shared [`Service`], whose pipeline locks already make
//! concurrent writers safe. `serve --transport sse` is the legacy `GET /sse` +
//! `POST /messages/` pair ([`sse`]). Both sit behind the same layers, outermost first:
//! [`guard`] (one each of Host, Origin, Authorization and Mcp-Session-Id; Host and Origin
//! allowed; the bearer token), the shutdown [`Drain`], and the body front door ([`body`]:
//! also how long a body may take); Streamable HTTP adds the session layer ([`sessions`]: idle
//! expiry, the session cap, 404 for unknown sessions, 200 for `DELETE`), and the legacy pair
//! caps its sessions the same way. Connections are accepted by [`listen`], which bounds how
//! long a request head may take.

pub mod body;
pub mod guard;
pub mod listen;
pub mod sessions;
pub mod sse;

use crate::dispatch::Service;
use crate::mcp::McpServer;
use crate::transport::shutdown::Drain;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::Response;
use futures::StreamExt;
use guard::{Guard, Refusal, Token};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use sessions::{SessionLimits, Sessions};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How the HTTP server is set up (built by the command line).
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Host name or address to bind; a name is resolved and its first address used.
    pub host: String,
    /// Port; 0 picks a free one (the bound address is printed on stderr).
    pub port: u16,
    /// The legacy SSE pair instead of Streamable HTTP.
    pub legacy_sse: bool,
    /// Extra `Host` values to accept (`host` or `host:port`).
    pub allowed_hosts: Vec<String>,
    /// Extra `Origin` values to accept (`scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// Bearer token every request must carry.
    pub token: Option<Token>,
    /// Largest request body accepted (413 beyond).
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive once its head has (408 beyond).
    pub body_timeout: Duration,
    /// How long in-flight calls may run on after a shutdown signal.
    pub grace: Duration,
    /// How long a connection may take to send a request head (also: how long an idle
    /// keep-alive connection stays open).
    pub header_timeout: Duration,
    /// Session idle expiry and cap (Streamable HTTP; the legacy pair takes the cap).
    pub sessions: SessionLimits,
}

/// What the layers share.
#[derive(Clone)]
struct Shared {
    guard: Arc<Guard>,
    drain: Drain,
    body: body::Limits,
}

/// Resolve the bind address and refuse a non-loopback one without a token.
async fn bind_address(opts: &HttpOptions) -> Result<SocketAddr, String> {
    let mut addrs = tokio::net::lookup_host((opts.host.as_str(), opts.port))
        .await
        .map_err(|e| format!("cannot resolve --host {}: {e}", opts.host))?;
    let addr = addrs
        .next()
        .ok_or_else(|| format!("--host {} resolves to no address", opts.host))?;
    if !guard::is_loopback(addr.ip()) && opts.token.is_none() {
        return Err(format!(
            "refusing to listen on {addr}, which is not a loopback address, without a bearer \
             token: set --auth-token-file FILE or RW_AUTH_TOKEN (every request then needs \
             `Authorization: Bearer <token>`), or bind 127.0.0.1"
        ));
    }
    Ok(addr)
}

/// Run the HTTP server until `stop` resolves, then drain: refuse new requests, give in-flight
/// calls up to `opts.grace` to finish and be answered, close every session and return.
pub async fn serve(
    service: Arc<Service>,
    opts: HttpOptions,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let addr = bind_address(&opts).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    let guard = Guard::new(
        bound,
        &opts.allowed_hosts,
        &opts.allowed_origins,
        opts.token.clone(),
    )?;
    let shared = Shared {
        guard: Arc::new(guard),
        drain: Drain::new(),
        body: body::Limits {
            max_bytes: opts.max_body_bytes,
            timeout: opts.body_timeout,
        },
    };
    let rmcp_config = StreamableHttpServerConfig::default()
        // Host and Origin are checked by our guard, against the bound port and the operator's
        // lists; rmcp's own default list would refuse hosts the operator allowed.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(opts.max_body_bytes);
    let sessions_closed = rmcp_config.cancellation_token.clone();
    let (router, path) = if opts.legacy_sse {
        let legacy = sse::Legacy::new(
            service,
            shared.drain.clone(),
            shared.body,
            opts.sessions.max,
            sessions_closed.clone(),
        );
        (legacy.router(), "/sse")
    } else {
        let prototype = McpServer::new(service);
        let factory = move || Ok(prototype.for_new_client());
        let sessions = Sessions::new(opts.sessions);
        sessions.spawn_reaper(sessions_closed.clone());
        let mcp = StreamableHttpService::new(factory, sessions.clone(), rmcp_config);
        // Layers run outermost (last added) first: guard (added below), in-flight tracking,
        // front door, sessions. `route_layer`: a request for another path is a plain 404.
        // `/mcp/` is served like `/mcp`, never redirected (a redirected POST loses its body).
        let router = Router::new()
            .route_service("/mcp", mcp.clone())
            .route_service("/mcp/", mcp)
            .route_layer(from_fn_with_state(sessions, sessions::gate))
            .route_layer(from_fn_with_state(shared.clone(), front_door))
            .route_layer(from_fn_with_state(shared.clone(), track_in_flight));
        (router, "/mcp")
    };
    let router = router.layer(from_fn_with_state(shared.clone(), check_guard));
    let auth = if shared.guard.has_token() {
        "bearer token required"
    } else {
        "no token (loopback only)"
    };
    tracing::info!(%bound, auth, "HTTP server started");
    // A parseable line for scripts and tests that bind port 0.
    eprintln!("resilient-write: listening on http://{bound}{path}");

    let drain = shared.drain.clone();
    let grace = opts.grace;
    let closer = sessions_closed.clone();
    tokio::spawn(async move {
        stop.await;
        drain.begin();
        if !drain.idle(grace).await {
            tracing::warn!(
                in_flight = drain.active(),
                "grace period over; closing sessions with calls still running"
            );
        }
        closer.cancel();
    });
    let started = shared.drain.clone();
    let server = listen::serve(listener, router, opts.header_timeout, async move {
        started.started().await;
    });
    // A client that never finishes its request must not hold the process past the grace
    // period: once sessions are closed, connections get one more second.
    let deadline = async move {
        sessions_closed.cancelled().await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    tokio::select! {
        () = server => Ok(()),
        () = deadline => {
            tracing::warn!("connections still open after shutdown; closing them");
            Ok(())
        }
    }
}

/// The answer to a refused request.
fn refusal_response(refusal: Refusal) -> Response {
    match refusal {
        Refusal::Duplicate(name) => {
            tracing::warn!(
                header = name,
                "refused a request with two {name} headers (400)"
            );
            body::rpc_error(
                StatusCode::BAD_REQUEST,
                body::INVALID_REQUEST,
                format!("Bad Request: more than one {name} header"),
                json!({"reason": "duplicate_header", "header": name}),
            )
        }
        Refusal::Host(host) => {
            tracing::warn!(host, "refused a request for a foreign Host (403)");
            body::rpc_error(
                StatusCode::FORBIDDEN,
                body::INVALID_REQUEST,
                "Forbidden: this Host is not allowed (DNS-rebinding defence); add it with \
                 --allowed-host"
                    .into(),
                json!({"reason": "host_not_allowed"}),
            )
        }
        Refusal::Origin(origin) => {
            tracing::warn!(origin, "refused a request from a foreign Origin (403)");
            body::rpc_error(
                StatusCode::FORBIDDEN,
                body::INVALID_REQUEST,
                "Forbidden: this Origin is not allowed; add it with --allowed-origin".into(),
                json!({"reason": "origin_not_allowed"}),
            )
        }
        Refusal::Token => {
            tracing::info!("refused a request without the right bearer token (401)");
            let mut r = body::rpc_error(
                StatusCode::UNAUTHORIZED,
                body::INVALID_REQUEST,
                "Unauthorized: send `Authorization: Bearer <token>`".into(),
                json!({"reason": "unauthorized"}),
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"resilient-write\""),
            );
            r
        }
    }
}

/// The request header naming a Streamable HTTP session.
const SESSION_ID: header::HeaderName = header::HeaderName::from_static("mcp-session-id");

/// The one value of a header that may appear at most once. Two values are refused rather
/// than one of them checked: which one a proxy or framework further along would use is
/// anyone's guess (two `Authorization` headers, the first valid, would otherwise pass the
/// check with one token and reach the next hop with the other).
fn single<'a>(
    headers: &'a header::HeaderMap,
    name: &header::HeaderName,
    shown: &'static str,
) -> Result<Option<&'a [u8]>, Refusal> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(Refusal::Duplicate(shown));
    }
    Ok(first.map(|v| v.as_bytes()))
}

/// Layer 1: no duplicated Host, Origin, Authorization or Mcp-Session-Id (before any check),
/// then Host, Origin, token.
async fn check_guard(State(shared): State<Shared>, req: Request, next: Next) -> Response {
    let h = req.headers();
    let checked = single(h, &header::HOST, "Host").and_then(|host| {
        let origin = single(h, &header::ORIGIN, "Origin")?;
        let authorization = single(h, &header::AUTHORIZATION, "Authorization")?;
        single(h, &SESSION_ID, "Mcp-Session-Id")?;
        let host = host.or_else(|| req.uri().authority().map(|a| a.as_str().as_bytes()));
        shared.guard.check(host, origin, authorization)
    });
    match checked {
        Ok(()) => next.run(req).await,
        Err(refusal) => refusal_response(refusal),
    }
}

/// The answer while the server drains.
pub(crate) fn draining_response() -> Response {
    body::rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        -32000,
        "the server is shutting down; retry against a new instance".into(),
        json!({"reason": "shutting_down"}),
    )
}

/// Layer 2: count each POST until its response stream ends (the answer was sent or the client
/// went away), and refuse new ones while draining.
async fn track_in_flight(State(shared): State<Shared>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let Some(in_flight) = shared.drain.enter() else {
        return draining_response();
    };
    let response = next.run(req).await;
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _held = &in_flight;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// Layer 3: content type, size limit, body timeout, JSON-RPC shape (see [`body`]); an
/// `initialize` is marked for the session layer.
async fn front_door(State(shared): State<Shared>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let (mut parts, incoming) = req.into_parts();
    match body::read_message(&parts.headers, incoming, shared.body).await {
        Ok(checked) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            if checked.initialize {
                parts.extensions.insert(sessions::Initialize);
            }
            next.run(Request::from_parts(parts, Body::from(checked.bytes)))
                .await
        }
        Err(refused) => refused,
    }
}
