//! Progress reporting for long operations (`chunk_compose` in bytes, `tx_commit` in file
//! steps), without the core knowing about MCP.
//!
//! A front end that can deliver progress (the MCP adapter, when the client sent a
//! `progressToken`) installs a callback for the duration of one tool call with
//! [`with_progress`]; long-running library code reports through [`current`]. With nothing
//! installed, reporting is a no-op. The callback is per thread: tool calls run on their own
//! blocking thread, so concurrent calls never see each other's callbacks.

use std::cell::RefCell;
use std::sync::Arc;

/// `(done, total)` in the operation's unit (bytes for compose, files written then renamed
/// for a transaction commit).
pub type Progress = Arc<dyn Fn(u64, u64) + Send + Sync>;

thread_local! {
    static CURRENT: RefCell<Option<Progress>> = const { RefCell::new(None) };
}

/// Run `f` with `progress` installed as this thread's progress callback.
pub fn with_progress<R>(progress: Option<Progress>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Progress>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let old = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = old);
        }
    }
    let old = CURRENT.with(|c| c.replace(progress));
    let _restore = Restore(old);
    f()
}

/// The callback installed for this thread's current call, if any.
pub fn current() -> Option<Progress> {
    CURRENT.with(|c| c.borrow().clone())
}
