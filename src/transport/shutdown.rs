//! Graceful shutdown, shared by every transport. A [`Drain`] counts the requests in flight;
//! on SIGINT/SIGTERM (or stdin EOF for stdio) the transport stops taking new work
//! ([`Drain::begin`]), waits up to a bounded grace period for the count to reach zero
//! ([`Drain::idle`]) so that in-flight tool calls finish *and are answered*, and only then
//! tears the sessions down. A write still running when the grace period ends is not torn
//! either: the pipeline's rename is the only step that changes the target, and the caller waits
//! for blocking threads ([`tokio::runtime::Runtime::shutdown_timeout`]) before exiting; a
//! temp file it leaves behind is swept at the next start because its pid is dead.

use rmcp::model::{ErrorCode, ServerConfig};
use rmcp::service::{NotificationContext, RequestContext, ServiceRole};
use rmcp::{ErrorData, RoleServer};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// Default grace period for in-flight calls after a shutdown signal.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// Counts requests in flight and refuses new ones once draining.
#[derive(Clone, Default)]
pub struct Drain(Arc<DrainState>);

#[derive(Default)]
struct DrainState {
    active: AtomicUsize,
    draining: AtomicBool,
    idle: Notify,
    started: Notify,
}

/// One request in flight; dropping it (answered, failed or abandoned) ends it.
pub struct InFlight(Drain);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.0.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.0.idle.notify_waiters();
        }
    }
}

impl Drain {
    pub fn new() -> Drain {
        Drain::default()
    }

    /// Start a request, or `None` when the server is shutting down.
    pub fn enter(&self) -> Option<InFlight> {
        self.0.active.fetch_add(1, Ordering::AcqRel);
        let guard = InFlight(self.clone());
        (!self.is_draining()).then_some(guard)
    }

    /// Stop taking new requests.
    pub fn begin(&self) {
        self.0.draining.store(true, Ordering::Release);
        self.0.started.notify_waiters();
    }

    pub fn is_draining(&self) -> bool {
        self.0.draining.load(Ordering::Acquire)
    }

    /// Resolves once [`Drain::begin`] has been called.
    pub async fn started(&self) {
        loop {
            let notified = self.0.started.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_draining() {
                return;
            }
            notified.await;
        }
    }

    /// Requests in flight now.
    pub fn active(&self) -> usize {
        self.0.active.load(Ordering::Acquire)
    }

    /// Wait until nothing is in flight, at most `within`. True when idle.
    pub async fn idle(&self, within: Duration) -> bool {
        let wait = async {
            loop {
                let notified = self.0.idle.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.active() == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(within, wait).await.is_ok()
    }
}

/// Resolves on the first SIGINT or SIGTERM (Ctrl-C only where there are no Unix signals).
pub async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => tracing::info!("SIGINT: shutting down"),
                    _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                }
            }
            _ => {
                tracing::warn!("cannot install signal handlers; only Ctrl-C stops the server");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// An rmcp service that counts each request in a [`Drain`] and refuses new ones while the
/// server shuts down (used where the transport accepts any [`rmcp::Service`]).
pub struct Tracked<S> {
    inner: S,
    drain: Drain,
}

impl<S> Tracked<S> {
    pub fn new(inner: S, drain: Drain) -> Tracked<S> {
        Tracked { inner, drain }
    }
}

/// The JSON-RPC error for a request that arrives while the server drains.
pub fn shutting_down() -> ErrorData {
    ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        "the server is shutting down; retry against a new instance",
        None,
    )
}

impl<S: rmcp::Service<RoleServer>> rmcp::Service<RoleServer> for Tracked<S> {
    async fn handle_request(
        &self,
        request: <RoleServer as ServiceRole>::PeerReq,
        context: RequestContext<RoleServer>,
    ) -> Result<<RoleServer as ServiceRole>::Resp, ErrorData> {
        let Some(_in_flight) = self.drain.enter() else {
            return Err(shutting_down());
        };
        self.inner.handle_request(request, context).await
    }

    async fn handle_notification(
        &self,
        notification: <RoleServer as ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_waits_for_the_last_request_and_begin_refuses_new_ones() {
        let drain = Drain::new();
        let first = drain.enter().expect("accepting");
        assert!(!drain.idle(Duration::from_millis(20)).await);
        drain.begin();
        assert!(
            drain.enter().is_none(),
            "a draining server takes no new work"
        );
        let waiter = {
            let d = drain.clone();
            tokio::spawn(async move { d.idle(Duration::from_secs(5)).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(first);
        assert!(waiter.await.expect("join"));
        assert_eq!(drain.active(), 0);
    }
}
