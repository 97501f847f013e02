//! Which agent session wrote what through the MCP tools (beyond the paper).
//!
//! The rows of an agent's native edits and shell commands carry its session (conversation)
//! id, `agent_session`, taken from the hook payload. A call of one of our MCP tools does not:
//! the MCP client session the server sees is not the agent's conversation (one Claude Code
//! process may hold several conversations over one server process, and the server is never
//! told which). The agents' after-tool hook on our own tools (`resilient-write hook`,
//! installed by `init --hooks`) sees both the conversation's id and the tool's result, so it
//! records here which journal rows (by `journal_id`, read from the result) that call wrote.
//! Readers (`restore --session`, `journal --session`, `analytics`) join this log with the
//! journal by `journal_id`. An MCP client without such a hook (Codex, Cursor) leaves its
//! tool writes unattributed.
//!
//! Layout: `.resilient_write/agent_sessions.jsonl`, one JSON object per tool call,
//! `{ts, agent_session, caller, tool, journal_ids}`, appended with one `write(2)` under an
//! exclusive lock and `fdatasync`ed: a record, never dropped to make room. A torn or
//! unreadable line is skipped on read.

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The log's name inside the state directory.
pub const LOG: &str = "agent_sessions.jsonl";

/// One MCP tool call of an agent session, and the journal rows it wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    pub ts: String,
    pub agent_session: String,
    /// The agent (`claude-code`, `gemini`).
    pub caller: String,
    /// The tool as the agent named it (`mcp__resilient-write__rw_safe_write`).
    pub tool: String,
    pub journal_ids: Vec<String>,
}

pub fn log_path(state_dir: &Path) -> PathBuf {
    state_dir.join(LOG)
}

/// Append `a` as one line, durably. A torn last line (a crash mid-append) is ended first, so
/// it costs only itself.
pub fn append(state_dir: &Path, a: &Attribution) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut line = serde_json::to_vec(a).map_err(io::Error::other)?;
    line.push(b'\n');
    use rustix::fs::OFlags;
    let flags = OFlags::RDWR | OFlags::APPEND | OFlags::CREATE;
    let mut f = crate::util::statefile::open_with(&log_path(state_dir), flags, 0o600)?;
    rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)?;
    let written = (|| {
        let len = f.metadata()?.len();
        let mut last = [0u8; 1];
        if len > 0 && f.read_at(&mut last, len - 1).is_ok() && last[0] != b'\n' {
            line.insert(0, b'\n');
        }
        f.write_all(&line)?;
        f.sync_data()
    })();
    let _ = rustix::fs::flock(&f, rustix::fs::FlockOperation::Unlock);
    written
}

/// Every attribution in the log, oldest first (a missing log is an empty one).
pub fn read_all(state_dir: &Path) -> io::Result<Vec<Attribution>> {
    let text = match crate::util::statefile::read(&log_path(state_dir)) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(text
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Attribution>(l).ok())
        .collect())
}

/// `journal_id` → (agent session, caller) for every attributed row.
pub fn by_journal_id(state_dir: &Path) -> io::Result<HashMap<String, (String, String)>> {
    let mut out = HashMap::new();
    for a in read_all(state_dir)? {
        for id in a.journal_ids {
            out.insert(id, (a.agent_session.clone(), a.caller.clone()));
        }
    }
    Ok(out)
}

/// The journal ids attributed to `session`.
pub fn journal_ids_of(state_dir: &Path, session: &str) -> io::Result<HashSet<String>> {
    Ok(read_all(state_dir)?
        .into_iter()
        .filter(|a| a.agent_session == session)
        .flat_map(|a| a.journal_ids)
        .collect())
}

/// The journal ids a tool result names: the value of every `"journal_id"` key, found in the
/// result's text however deeply it is nested or escaped (an agent passes the MCP result on as
/// JSON inside strings, or wraps it in text). Our ids are 32 lowercase hex digits; anything
/// else is not one.
pub fn journal_ids_in(text: &str) -> Vec<String> {
    const KEY: &str = "journal_id";
    let b = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    for (at, _) in text.match_indices(KEY) {
        // The key itself, not `restored_journal_id`: a quote (maybe escaped) right before.
        if at == 0 || b[at - 1] != b'"' {
            continue;
        }
        let mut i = at + KEY.len();
        // The closing quote, the colon and the opening quote, each maybe escaped.
        while i < b.len() && matches!(b[i], b'"' | b'\\' | b':' | b' ') {
            i += 1;
        }
        // Bytes, not a `str` slice: what follows the key may be any text.
        let id = &b[i..(i + 32).min(b.len())];
        let whole = b.get(i + 32).is_none_or(|c| !c.is_ascii_hexdigit());
        if id.len() == 32
            && whole
            && id
                .iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        {
            let id = String::from_utf8_lossy(id).into_owned();
            if !out.contains(&id) {
                out.push(id);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_ids_are_found_in_plain_escaped_and_nested_results() {
        let id1 = "0195f3a1b2c3d4e5f60718293a4b5c6d";
        let id2 = "0195f3a1b2c3d4e5f60718293a4b5c6e";
        let plain = format!(r#"{{"ok":true,"journal_id":"{id1}","restored_journal_id":"{id2}"}}"#);
        assert_eq!(journal_ids_in(&plain), [id1]);
        // As Claude Code and Gemini CLI pass an MCP result on: JSON text inside JSON.
        let nested = serde_json::json!([{"type": "text", "text": plain}]).to_string();
        assert_eq!(journal_ids_in(&nested), [id1]);
        let many = format!(
            r#"{{"files":[{{"journal_id":"{id1}"}},{{"journal_id": "{id2}"}},{{"journal_id":"{id1}"}}]}}"#
        );
        assert_eq!(journal_ids_in(&many), [id1, id2]);
        assert!(journal_ids_in(r#"{"journal_id":"not-an-id"}"#).is_empty());
        // Text that is not an id, multibyte characters included, is skipped, never cut.
        assert!(journal_ids_in(r#"{"journal_id":"€€€€€€€€€€€€€€€€€€€€"}"#).is_empty());
        assert!(journal_ids_in(r#""journal_id":"0195f3"#).is_empty());
        assert!(journal_ids_in(&format!(r#"{{"journal_id":"{id1}0"}}"#)).is_empty());
    }

    #[test]
    fn attributions_append_and_read_back_by_journal_id_and_session() {
        let t = tempfile::tempdir().unwrap();
        let a = |s: &str, ids: &[&str]| Attribution {
            ts: "2026-01-01T00:00:00Z".into(),
            agent_session: s.into(),
            caller: "claude-code".into(),
            tool: "mcp__rw__rw_safe_write".into(),
            journal_ids: ids.iter().map(|i| i.to_string()).collect(),
        };
        append(t.path(), &a("s1", &["a", "b"])).unwrap();
        append(t.path(), &a("s2", &["c"])).unwrap();
        // A torn line (a crash mid-append) is skipped.
        std::fs::OpenOptions::new()
            .append(true)
            .open(log_path(t.path()))
            .unwrap()
            .write_all(b"{\"ts\":")
            .unwrap();
        assert_eq!(read_all(t.path()).unwrap().len(), 2);
        // The next append ends the torn line first: nothing after it is lost.
        append(t.path(), &a("s3", &["d"])).unwrap();
        assert_eq!(read_all(t.path()).unwrap().len(), 3);
        let by_id = by_journal_id(t.path()).unwrap();
        assert_eq!(by_id["b"].0, "s1");
        assert_eq!(by_id["c"].0, "s2");
        let s1 = journal_ids_of(t.path(), "s1").unwrap();
        assert_eq!(s1, HashSet::from(["a".to_string(), "b".to_string()]));
        assert!(journal_ids_of(t.path(), "none").unwrap().is_empty());
        let empty = tempfile::tempdir().unwrap();
        assert!(read_all(empty.path()).unwrap().is_empty());
    }
}
