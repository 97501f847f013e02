//! The repairs of [`super`]: each cannot lose anything, and every file one writes goes
//! through the write pipeline.

use super::{MAX_ENTRIES, Repair};
use crate::store::Store;
use crate::write::pipeline::Caller;

/// Carry out one repair; `Err` says why it could not.
pub fn repair(store: &Store, what: &Repair) -> Result<(), String> {
    let who = Caller {
        caller: "resilient-write doctor".into(),
        tool: "doctor".into(),
    };
    match what {
        Repair::CutJournalTail => store
            .pipeline()
            .journal()
            .repair()
            .map_err(|e| e.to_string()),
        Repair::SweepTemps(dir) => {
            crate::write::pipeline::sweep_temp_files(dir, MAX_ENTRIES);
            Ok(())
        }
        Repair::RebuildManifest(name) => crate::chunks::rebuild_manifest(store, &who, name)
            .map(drop)
            .map_err(|f| f.to_string()),
        Repair::CompactIndex => crate::scratch::compact_index(store, &who)
            .map(drop)
            .map_err(|f| f.to_string()),
        Repair::RecoverTransactions => {
            let report = crate::tx::recover(store);
            match report.problems.is_empty() {
                true => Ok(()),
                false => Err(report.problems.join("; ")),
            }
        }
        Repair::Gc => {
            let (Some(objects), Some(retention)) =
                (store.pipeline().objects(), super::check::retention(store))
            else {
                return Err("no object store or no usable retention policy".into());
            };
            crate::history::gc(
                store.pipeline().journal(),
                &store.workspaces().journal_paths(),
                objects,
                &retention,
                false,
            )
            .map_err(|e| e.to_string())?;
            // Retention includes the disk: the floor free again, oldest versions first.
            store
                .pipeline()
                .restore_floor()
                .map(drop)
                .map_err(|e| e.to_string())
        }
        Repair::GitIgnore(path) => super::gitignore::add_entry(store, path),
    }
}
