//! Noteworthy server events (start-up repairs, the temp-file sweep, a refused root) kept for
//! the front ends, without the core knowing about MCP: each event is logged with `tracing`
//! and kept in a short log; a front end that can show them (the MCP adapter, as
//! `notifications/message`) subscribes and receives the events so far plus every later one.
//!
//! Subscribers are held weakly: a session that ends drops its sink and is forgotten at the
//! next event or subscription, so a long-running HTTP server does not accumulate dead ones.

use std::sync::{Arc, Mutex, Weak};

/// Most events kept for late subscribers; the oldest go first (start-up events come first and
/// are few, so in practice all of them are kept).
const KEPT: usize = 256;

/// Severity, in increasing order (the MCP logging levels we use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Increasing per service, so a subscriber can tell which events it has already shown.
    pub seq: u64,
    pub level: Level,
    /// What happened, for people; never content or a secret.
    pub text: String,
}

/// What a subscriber does with an event; must not block (the MCP adapter pushes into an
/// unbounded channel).
pub type SinkFn = dyn Fn(&Notice) + Send + Sync;

/// Receives events.
pub type Sink = Arc<SinkFn>;

#[derive(Default)]
struct Inner {
    next: u64,
    kept: Vec<Notice>,
    sinks: Vec<Weak<SinkFn>>,
}

/// The event log of one service.
#[derive(Default)]
pub struct Notices {
    inner: Mutex<Inner>,
}

impl Notices {
    /// Record an event: log it, keep it, and hand it to every live subscriber.
    pub fn record(&self, level: Level, text: impl Into<String>) {
        let text = text.into();
        match level {
            Level::Debug => tracing::debug!("{text}"),
            Level::Info => tracing::info!("{text}"),
            Level::Warning => tracing::warn!("{text}"),
            Level::Error => tracing::error!("{text}"),
        }
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let notice = Notice {
            seq: inner.next,
            level,
            text,
        };
        inner.next += 1;
        if inner.kept.len() == KEPT {
            inner.kept.remove(0);
        }
        inner.kept.push(notice.clone());
        inner.sinks.retain(|w| match w.upgrade() {
            Some(sink) => {
                sink(&notice);
                true
            }
            None => false,
        });
    }

    /// Subscribe `sink` to later events; returns the events kept so far. Both happen under one
    /// lock, so no event is missed or seen twice.
    pub fn subscribe(&self, sink: &Sink) -> Vec<Notice> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.sinks.retain(|w| w.strong_count() > 0);
        inner.sinks.push(Arc::downgrade(sink));
        inner.kept.clone()
    }

    /// The events kept so far.
    pub fn kept(&self) -> Vec<Notice> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .kept
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriber_gets_the_backlog_then_every_later_event_until_it_is_dropped() {
        let notices = Notices::default();
        notices.record(Level::Warning, "before");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let sink: Sink = Arc::new(move |n: &Notice| {
            seen2
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(n.text.clone())
        });
        let backlog = notices.subscribe(&sink);
        assert_eq!(backlog.len(), 1);
        assert_eq!(backlog[0].text, "before");
        notices.record(Level::Info, "after");
        drop(sink);
        notices.record(Level::Error, "gone");
        let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(seen, vec!["after".to_string()]);
        let kept: Vec<u64> = notices.kept().iter().map(|n| n.seq).collect();
        assert_eq!(kept, vec![0, 1, 2]);
    }

    #[test]
    fn levels_are_ordered_by_severity() {
        assert!(Level::Debug < Level::Info);
        assert!(Level::Info < Level::Warning);
        assert!(Level::Warning < Level::Error);
    }
}
