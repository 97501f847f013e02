//! The accept loop: each connection is served by hyper's HTTP/1 connection with a timer, so
//! that a connection has [`header_timeout`](serve) to deliver a request's head (request line
//! and headers), counted from when it opens or its previous response ends. A client trickling
//! its headers a byte at a time, or opening connections and sending nothing, is cut off then;
//! so is a keep-alive connection left idle. `axum::serve` has no such setting (hyper applies
//! none without a timer), which is why this loop replaces it.
//!
//! Shutdown mirrors `axum::serve`'s: when `stop` resolves the listener closes, each connection
//! finishes the request it is serving and then closes, and [`serve`] returns once all have.

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// Default time a connection has to send a request head.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// Serve `router` on `listener` until `stop` resolves and the open connections have ended.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    stop: impl Future<Output = ()>,
) {
    let (stopping, stop_rx) = tokio::sync::watch::channel(());
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        // Reap the connections that have ended, so the set holds only open ones.
        while connections.try_join_next().is_some() {}
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Per-connection failures (reset before accept) need nothing; running out of
                // file descriptors does: wait a little instead of spinning.
                tracing::warn!("accepting a connection failed: {e}");
                if !is_per_connection(&e) {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let mut stop_rx = stop_rx.clone();
        connections.spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(conn);
            let ended = tokio::select! {
                r = conn.as_mut() => Some(r),
                _ = stop_rx.changed() => None,
            };
            let result = match ended {
                Some(r) => r,
                None => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
    }
    drop(listener);
    let _ = stopping.send(());
    while connections.join_next().await.is_some() {}
}

fn is_per_connection(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    )
}
