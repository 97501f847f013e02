//! Names of the on-disk state (SPEC section 8), shared with the Python original: what
//! `.resilient_write/` is called and the defaults that go with it.

/// Name of the state directory inside the state root.
pub const STATE_DIR_NAME: &str = ".resilient_write";

/// The directories the layers keep beneath the state directory (objects, WAL, scratchpad,
/// chunk sessions, checkpoints, handoff archives). A symlink in place of any of them would
/// carry that state out of the workspace, so start-up refuses one (`state::planted`).
pub const STATE_SUBDIRS: &[&str] = &[
    "objects",
    "wal",
    "scratch",
    "chunks",
    "checkpoints",
    "handoffs",
    "hooks",
];

/// Directory of the agents' hooks' records (`native.rs`) inside the state directory.
pub const HOOKS_DIR: &str = "hooks";

/// Default cap on one write's content: big enough for any source file, small enough that a
/// runaway payload is refused with `quota_exceeded`/`size_limit` instead of filling a disk.
pub const DEFAULT_MAX_WRITE_BYTES: u64 = 64 * 1024 * 1024;
