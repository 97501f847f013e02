//! Keeping the state directory out of git: the `.gitignore` line that ignores it, and writing
//! a text file as `safe_write` does, through [`files::put`] (used by the `.gitignore`
//! repair and by `resilient-write init`). Whether the state directory is ignored is decided
//! in `store` (which notes it at start): [`gitignore_mentions_state`],
//! [`state_dir_git_ignored`], [`gitignore_note`], re-exported here.

use crate::files;
use crate::hash::sha256_hex;
use crate::store::{STATE_DIR_NAME, Store};
use crate::write::idempotency::Keyed;
use crate::write::intent::{self, WriteMode};
use crate::write::pipeline::Caller;
use std::path::Path;

pub use crate::store::{gitignore_mentions_state, gitignore_note, state_dir_git_ignored};

/// `text` of a .gitignore with `.resilient_write/` added unless some line already names it.
pub fn with_gitignore_entry(text: &str) -> String {
    if gitignore_mentions_state(text) {
        return text.to_string();
    }
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(STATE_DIR_NAME);
    out.push_str("/\n");
    out
}

/// Add the state directory's line to the `.gitignore` at `path` (created if missing) through
/// [`write_text`]; `Err` says why it could not.
pub fn add_entry(store: &Store, path: &Path) -> Result<(), String> {
    let old = match crate::util::statefile::read_to_string_following(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.to_string()),
    };
    let new = with_gitignore_entry(old.as_deref().unwrap_or(""));
    write_text(store, path, old.as_deref(), &new)
}

/// Replace `path`'s content `old` (`None`: the file does not exist) with `new` through the
/// write pipeline, as `safe_write` does: `create` for a new file, else `overwrite` guarded by
/// `old`'s hash, so a file changed since it was read is never clobbered. The journal row
/// names the store's caller and the tool `safe_write`. The error is the envelope in one line
/// (`error/reason_hint: message`).
pub fn write_text(store: &Store, path: &Path, old: Option<&str>, new: &str) -> Result<(), String> {
    write_text_as_safe_write(store, path, old, new).map_err(|f| {
        let env = serde_json::to_value(f.envelope("safe_write", 0)).unwrap_or_default();
        format!(
            "{}/{}: {}",
            env["error"].as_str().unwrap_or("?"),
            env["reason_hint"].as_str().unwrap_or("?"),
            env["context"]["message"]
                .as_str()
                .unwrap_or("see the envelope")
        )
    })
}

fn write_text_as_safe_write(
    store: &Store,
    path: &Path,
    old: Option<&str>,
    new: &str,
) -> crate::envelope::Result<()> {
    let shown = path.display().to_string();
    let (mode, expected) = match old {
        Some(old) => (WriteMode::Overwrite, Some(sha256_hex(old.as_bytes()))),
        None => (WriteMode::Create, None),
    };
    let bytes = new.as_bytes().to_vec();
    let limit = store.config().max_write_bytes;
    intent::within_limit("content", bytes.len() as u64, limit)?;
    let target = store.workspaces().resolve(&shown, true)?;
    let who = Caller {
        caller: store.caller(),
        tool: "safe_write".into(),
    };
    files::put(
        store,
        &who,
        files::Put {
            shown: &shown,
            target: &target,
            bytes,
            mode,
            expected_prev_sha256: expected.as_deref(),
            keyed: Keyed {
                key: None,
                request_sha256: "",
            },
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_entry_is_added_once_and_other_spellings_count() {
        assert_eq!(
            with_gitignore_entry("target"),
            "target\n.resilient_write/\n"
        );
        assert_eq!(
            with_gitignore_entry("/.resilient_write\n"),
            "/.resilient_write\n"
        );
        let once = with_gitignore_entry("");
        assert_eq!(with_gitignore_entry(&once), once);
    }
}
