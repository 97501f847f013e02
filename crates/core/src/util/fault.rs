//! The fault-injection points of the crash and failure tests (the write pipeline's, the
//! object store's, the chunks'). The front end installs the names once at start (the binary
//! reads `RW_FAULT_INJECT`); nothing here reads the environment. Honoured only in debug builds, so a release binary cannot be told to corrupt
//! anything.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// An installed fault: its name, and how many more times it fires (`None`: always).
type Installed = (String, Option<AtomicU64>);

static INSTALLED: OnceLock<Vec<Installed>> = OnceLock::new();

/// Make the pipeline fail at the points named in `names` (a comma-separated list), for the
/// rest of the process, or the first `N` times for `name:N` (a disk that is full, then has
/// room again). The first call wins; a release build ignores it.
pub fn install_faults(names: &str) {
    if cfg!(debug_assertions) {
        let _ = INSTALLED.set(parse(names));
    }
}

fn parse(names: &str) -> Vec<Installed> {
    names
        .split(',')
        .filter(|n| !n.is_empty())
        .map(|n| match n.split_once(':') {
            Some((name, times)) => (
                name.to_string(),
                Some(AtomicU64::new(times.parse().unwrap_or(1))),
            ),
            None => (n.to_string(), None),
        })
        .collect()
}

/// Whether `name` fires among `installed`, counting a counted fault down.
fn fires(installed: &[Installed], name: &str) -> bool {
    installed.iter().any(|(f, left)| {
        f == name
            && left.as_ref().is_none_or(|n| {
                n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1))
                    .is_ok()
            })
    })
}

/// Whether the fault `name` fires here (it was installed, and has not fired its count yet).
pub(crate) fn fault(name: &str) -> bool {
    cfg!(debug_assertions)
        && INSTALLED
            .get()
            .is_some_and(|installed| fires(installed, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `name:N` fires N times, a bare name every time, an absent one never.
    #[test]
    fn a_counted_fault_fires_its_count_then_never() {
        let installed = parse("always,twice:2,,once:1");
        let fire = |n: &str| fires(&installed, n);
        assert_eq!(
            [fire("twice"), fire("twice"), fire("twice")],
            [true, true, false]
        );
        assert_eq!([fire("once"), fire("once")], [true, false]);
        assert!((0..5).all(|_| fire("always")));
        assert!(!fire("never"));
    }
}
