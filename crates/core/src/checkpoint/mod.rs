//! Checkpoints: named snapshots of an agent's intermediate data in
//! `.resilient_write/checkpoints/`. [`doc`] is the pure part (names, formats, TTLs, the
//! on-disk documents, the cleanup rule) and is re-exported here, so `checkpoint::Checkpoint`
//! and friends keep their paths; [`disk`] is the I/O over a [`crate::store::Store`] (save,
//! read, list, cleanup, journaled removal) that the `checkpoint*` tools and the MCP resources
//! call.

pub mod disk;
pub mod doc;

pub use doc::*;
