//! What one client session adds to the service, without the core knowing about MCP: the
//! workspace roots the client announced (MCP `roots`) and the client's name for journal rows.
//!
//! The service is shared by every session (one per stdio process, one per HTTP client), so a
//! session's roots must never leak into another's. A front end builds a [`ClientSession`] for its
//! client and installs it around each call with [`with_client_session`]; [`crate::store::Store`]
//! answers `workspaces()` and `caller()` from it. Like [`crate::progress`], the installed
//! session is per thread: each tool call runs on its own blocking thread, so concurrent calls of
//! different sessions never see each other's roots.

use crate::workspace::Workspaces;
use std::cell::RefCell;
use std::sync::Arc;

/// One client's view of the service.
#[derive(Debug, Clone, Default)]
pub struct ClientSession {
    /// The static roots plus the client's accepted roots; `None` = the static roots only.
    pub workspaces: Option<Arc<Workspaces>>,
    /// The client's name (`clientInfo.name`), recorded as `caller` in journal rows.
    pub caller: Option<String>,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<ClientSession>>> = const { RefCell::new(None) };
}

/// Run `f` with `session` installed as this thread's session.
pub fn with_client_session<R>(session: Option<Arc<ClientSession>>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<ClientSession>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let old = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = old);
        }
    }
    let old = CURRENT.with(|c| c.replace(session));
    let _restore = Restore(old);
    f()
}

/// The session installed for this thread's current call, if any.
pub fn current() -> Option<Arc<ClientSession>> {
    CURRENT.with(|c| c.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_seen_only_inside_its_scope_and_the_outer_one_comes_back() {
        let outer = Arc::new(ClientSession {
            caller: Some("outer".into()),
            ..ClientSession::default()
        });
        let inner = Arc::new(ClientSession {
            caller: Some("inner".into()),
            ..ClientSession::default()
        });
        assert!(current().is_none());
        with_client_session(Some(outer), || {
            with_client_session(Some(inner), || {
                assert_eq!(
                    current().and_then(|s| s.caller.clone()).as_deref(),
                    Some("inner")
                );
            });
            assert_eq!(
                current().and_then(|s| s.caller.clone()).as_deref(),
                Some("outer")
            );
            let other = std::thread::spawn(|| current().is_none());
            assert!(
                other.join().unwrap_or(false),
                "another thread saw this session"
            );
        });
        assert!(current().is_none());
    }
}
