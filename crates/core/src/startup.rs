//! Opening the state to serve it: [`Store::open`] (journal repair, the sweep of stale temp
//! files in the background), then transaction recovery (roll forward committed transactions,
//! roll back dead ones) before the first call. It lives here, above both, so that the store
//! does not depend on the transactions built on it.

use crate::notices::Level;
use crate::store::{Config, Store};
use crate::tx::{self, RecoveryReport};
use std::sync::Arc;

/// Open the store at `config` and recover transactions unless `config.repair_on_start` is
/// off (`doctor` looks at the state as it is). Returns what recovery did.
pub fn open(config: Config) -> (Arc<Store>, Option<RecoveryReport>) {
    let store = Store::open(config);
    if !store.config().repair_on_start || !store.state_refused().is_empty() {
        return (store, None);
    }
    let report = tx::recover(&store);
    for line in report.summary() {
        store.notices().record(Level::Warning, line);
    }
    (store, Some(report))
}
