//! L5: task-continuity handoff envelopes (`HANDOFF.md`). [`doc`] is the pure part (parsing,
//! rendering, validation, the dependency graph, the `resume` message) and is re-exported
//! here, so `handoff::Handoff` and friends keep their paths; [`disk`] is the I/O over a
//! [`crate::store::Store`] (write with archive, load, drift against the disk, the `resume`
//! prompt's text) that the `handoff_*` tools, the handoff resource and the prompt call.

pub mod disk;
pub mod doc;

pub use doc::*;
