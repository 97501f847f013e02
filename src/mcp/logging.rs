//! MCP `logging`: the service's notices go to each client as `notifications/message`, at or
//! above the level the session chose with `logging/setLevel` (warning until then). One task per
//! session forwards them, each notice once, and on a level change sends those it held back.

use super::McpServer;
use crate::dispatch::Service;
use resilient_write_core::notices::{Level, Notice, Sink};
use rmcp::RoleServer;
#[allow(deprecated)] // MCP logging: deprecated by SEP-2577 yet still in the protocol we serve.
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use tokio::sync::mpsc;

/// Log level of a session until it sends `logging/setLevel` (MCP lets the server choose).
pub(super) const DEFAULT_LOG_LEVEL: u8 = 3; // warning

pub(super) enum LogEvent {
    Notice(Notice),
    LevelChanged,
}

/// Rank of an MCP logging level (debug lowest).
#[allow(deprecated)]
pub(super) fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[allow(deprecated)]
fn mcp_level(level: Level) -> LoggingLevel {
    match level {
        Level::Debug => LoggingLevel::Debug,
        Level::Info => LoggingLevel::Info,
        Level::Warning => LoggingLevel::Warning,
        Level::Error => LoggingLevel::Error,
    }
}

/// Send one log message to the client if it is at or above the session's level. Returns
/// false when the client is gone.
#[allow(deprecated)]
pub(super) async fn send_log(
    peer: &Peer<RoleServer>,
    min: &AtomicU8,
    level: Level,
    text: &str,
) -> bool {
    let level = mcp_level(level);
    if level_rank(level) < min.load(Ordering::Relaxed) {
        return true;
    }
    let param = LoggingMessageNotificationParam::new(level, Value::String(text.to_string()))
        .with_logger("resilient-write");
    peer.notify_logging_message(param).await.is_ok()
}

/// Forward the service's notices to one client: those kept so far, then each new one, and on
/// a level change those held back that the new level lets through. Each notice is sent once.
async fn forward_notices(
    peer: Peer<RoleServer>,
    service: Arc<Service>,
    min: Arc<AtomicU8>,
    backlog: Vec<Notice>,
    mut events: mpsc::UnboundedReceiver<LogEvent>,
) {
    let mut sent = HashSet::new();
    let mut batch = backlog;
    loop {
        for n in batch.drain(..) {
            if sent.contains(&n.seq) || level_rank(mcp_level(n.level)) < min.load(Ordering::Relaxed)
            {
                continue;
            }
            if !send_log(&peer, &min, n.level, &n.text).await {
                return;
            }
            sent.insert(n.seq);
        }
        match events.recv().await {
            Some(LogEvent::Notice(n)) => batch.push(n),
            Some(LogEvent::LevelChanged) => batch = service.store().notices().kept(),
            None => return,
        }
    }
}

impl McpServer {
    /// Start forwarding the service's notices to this client (once).
    pub(super) fn start_log_forwarding(&self, peer: Peer<RoleServer>) {
        let (tx, rx) = mpsc::unbounded_channel();
        if self.client.log_events.set(tx.clone()).is_err() {
            return;
        }
        let sink: Sink = Arc::new(move |n: &Notice| {
            let _ = tx.send(LogEvent::Notice(n.clone()));
        });
        let backlog = self.service.store().notices().subscribe(&sink);
        let _ = self.client.notice_sink.set(sink);
        tokio::spawn(forward_notices(
            peer,
            self.service.clone(),
            self.client.log_level.clone(),
            backlog,
            rx,
        ));
    }

    /// `logging/setLevel`: the session's new minimum severity; the forwarder then sends what
    /// it held back that the new level lets through.
    #[allow(deprecated)]
    pub(super) fn set_log_level(&self, level: LoggingLevel) {
        self.client
            .log_level
            .store(level_rank(level), Ordering::Relaxed);
        if let Some(tx) = self.client.log_events.get() {
            let _ = tx.send(LogEvent::LevelChanged);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(deprecated)]
    fn log_levels_rank_by_severity() {
        assert!(level_rank(LoggingLevel::Debug) < level_rank(LoggingLevel::Info));
        assert!(level_rank(LoggingLevel::Warning) < level_rank(LoggingLevel::Error));
        assert_eq!(level_rank(mcp_level(Level::Warning)), DEFAULT_LOG_LEVEL);
    }
}
