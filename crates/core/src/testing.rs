//! Test support shared by the core's unit tests: a store over a fresh temporary workspace.

use crate::store::{Config, Store};
use std::sync::Arc;

/// The configuration of a store whose only workspace (and state root) is a fresh temporary
/// directory, kept alive by the guard; no start-up sweep.
pub(crate) fn temp_config() -> (tempfile::TempDir, Config) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let mut c = Config::new(root.clone());
    c.workspaces = vec![root];
    c.sweep_on_start = false;
    (t, c)
}

/// A store over [`temp_config`], opened as a server opens it (transaction recovery included).
pub(crate) fn temp_store() -> (tempfile::TempDir, Arc<Store>) {
    let (t, c) = temp_config();
    (t, crate::startup::open(c).0)
}
