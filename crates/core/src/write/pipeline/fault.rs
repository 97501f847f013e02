//! The fault-injection points of the crash and failure tests (`RW_FAULT_INJECT`).

/// Fault injection for tests of paths that real disks rarely take. Honoured only in debug
/// builds, so a release binary cannot be told to corrupt anything.
pub(crate) fn fault(name: &str) -> bool {
    cfg!(debug_assertions)
        && std::env::var("RW_FAULT_INJECT")
            .map(|v| v.split(',').any(|f| f == name))
            .unwrap_or(false)
}
