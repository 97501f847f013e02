//! The fault-injection points of the crash and failure tests (the write pipeline's, the
//! object store's, the chunks'). The front end installs the names once at start (the binary
//! reads `RW_FAULT_INJECT`); nothing here reads the environment. Honoured only in debug builds, so a release binary cannot be told to corrupt
//! anything.

use std::sync::OnceLock;

static INSTALLED: OnceLock<Vec<String>> = OnceLock::new();

/// Make the pipeline fail at the points named in `names` (a comma-separated list), for the
/// rest of the process. The first call wins; a release build ignores it.
pub fn install_faults(names: &str) {
    if cfg!(debug_assertions) {
        let _ = INSTALLED.set(
            names
                .split(',')
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect(),
        );
    }
}

/// Whether the fault `name` was installed.
pub(crate) fn fault(name: &str) -> bool {
    cfg!(debug_assertions)
        && INSTALLED
            .get()
            .is_some_and(|names| names.iter().any(|f| f == name))
}
