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
    sweep_where_a_crash_wrote(&store, &report.target_dirs);
    (store, Some(report))
}

/// Rows whose directories are swept before the first call.
const RECENT_ROWS: usize = 64;

/// Temp files a crashed writer left where it most likely wrote last: the directories of the
/// journal's last [`RECENT_ROWS`] rows and of the recovered transactions' files, swept (one
/// directory listing each, no walk) before the first call is answered. The walk of every
/// root in the background finds the rest (`Store::open`).
fn sweep_where_a_crash_wrote(store: &Store, tx_dirs: &[std::path::PathBuf]) {
    let mut dirs: std::collections::BTreeSet<std::path::PathBuf> =
        tx_dirs.iter().cloned().collect();
    if let Ok((rows, _)) = store.pipeline().journal().tail(RECENT_ROWS, |_| true) {
        let paths = store.workspaces().journal_paths();
        for row in &rows {
            if let Some((path, root)) = crate::journal::paths::row_fields(row)
                && let Some(dir) = paths.absolute(path, root).parent()
            {
                dirs.insert(dir.to_path_buf());
            }
        }
    }
    let removed: usize = dirs
        .iter()
        .filter(|d| {
            store.workspaces().roots().any(|r| d.starts_with(r)) || d.starts_with(store.state_dir())
        })
        .map(|d| crate::write::pipeline::sweep_dir_temp_files(d).len())
        .sum();
    if removed > 0 {
        store.notices().record(
            Level::Info,
            format!("removed {removed} stale temp file(s) of crashed writers before serving"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temp file a crashed writer left beside the file it last wrote is gone before the
    /// first call, with the background walk off: the quick sweep of the last rows'
    /// directories removed it.
    #[test]
    fn a_crashed_writers_temp_file_beside_its_last_rows_is_gone_before_the_first_call() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("deep/dir")).unwrap();
        let mut config = Config::new(root.clone());
        config.workspaces = vec![root.clone()];
        config.sweep_on_start = false;
        let (store, _) = open(config.clone());
        let target = store.workspaces().resolve("deep/dir/a.txt", true).unwrap();
        let who = crate::write::pipeline::Caller {
            caller: "test".into(),
            tool: "safe_write".into(),
        };
        store
            .pipeline()
            .commit(&target, &who, |_| {
                Ok(crate::write::pipeline::Decision::Write(
                    crate::write::pipeline::Plan {
                        body: crate::write::pipeline::Body::Bytes(b"x".to_vec()),
                        mode: "create".into(),
                        create_only: true,
                        extra: Default::default(),
                        new_file_mode: None,
                    },
                    (),
                ))
            })
            .unwrap();
        drop(store);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let stale = root.join(format!(
            "deep/dir/.a.txt{}{gone}-1-0123abcd",
            crate::write::pipeline::TEMP_MARKER
        ));
        std::fs::write(&stale, "debris").unwrap();
        let (_store, _) = open(config);
        assert!(
            !stale.exists(),
            "the temp file was not swept before serving"
        );
    }
}
