//! Agent sessions in analytics: per agent conversation, what it changed and how (its own
//! edit tools, its shell commands, our MCP tools as its hooks attributed them).

use super::{Query, Row};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// One agent session seen in the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentSessionStats {
    /// The agent (`claude-code`, `gemini`, `cursor`).
    pub caller: String,
    /// Journal rows of the session.
    pub writes: u64,
    /// Of which: the agent's own edit tools, its shell commands, our MCP tools.
    pub native_edits: u64,
    pub shell_changes: u64,
    pub mcp_writes: u64,
    /// Distinct files it changed.
    pub files: u64,
    pub first_write: String,
    pub last_write: String,
}

struct Acc {
    stats: AgentSessionStats,
    files: HashSet<String>,
}

/// The sessions of the rows seen so far.
#[derive(Default)]
pub(super) struct AgentAcc(HashMap<String, Acc>);

/// The agents' shell tools, whose rows are a command's changes.
const SHELL_TOOLS: [&str; 2] = ["native:Bash", "native:run_shell_command"];

impl AgentAcc {
    /// Count `row` (of the file `key`, at `ts`) for its agent session, if it has one.
    pub(super) fn add(&mut self, q: &Query, row: &Row<'_>, key: &str, ts: &str) {
        let attributed = match (&row.agent_session, &row.journal_id) {
            (Some(_), _) => None,
            (None, Some(id)) if !q.attributed.is_empty() => q.attributed.get(id.as_ref()),
            _ => return,
        };
        let (session, caller, via_mcp) = match (&row.agent_session, attributed) {
            (Some(s), _) => (
                s.as_ref(),
                row.caller.as_deref().unwrap_or("unknown"),
                false,
            ),
            (None, Some((s, c))) => (s.as_str(), c.as_str(), true),
            (None, None) => return,
        };
        let acc = self.0.entry(session.to_string()).or_insert_with(|| Acc {
            stats: AgentSessionStats {
                caller: caller.to_string(),
                writes: 0,
                native_edits: 0,
                shell_changes: 0,
                mcp_writes: 0,
                files: 0,
                first_write: ts.to_string(),
                last_write: ts.to_string(),
            },
            files: HashSet::new(),
        });
        let s = &mut acc.stats;
        s.writes += 1;
        let tool = row.tool.as_deref().unwrap_or("");
        if via_mcp {
            s.mcp_writes += 1;
        } else if SHELL_TOOLS.contains(&tool) {
            s.shell_changes += 1;
        } else if tool.starts_with("native:") {
            s.native_edits += 1;
        }
        s.last_write.clear();
        s.last_write.push_str(ts);
        if !acc.files.contains(key) {
            acc.files.insert(key.to_string());
        }
    }

    pub(super) fn finish(self) -> BTreeMap<String, AgentSessionStats> {
        self.0
            .into_iter()
            .map(|(k, mut a)| {
                a.stats.files = a.files.len() as u64;
                (k, a.stats)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Query, analyse};

    #[test]
    fn agent_sessions_count_native_shell_and_attributed_mcp_writes() {
        let row = |id: &str, path: &str, tool: &str, extra: &str| {
            format!(
                "{{\"bytes\":1,\"caller\":\"claude-code\",\"journal_id\":\"{id}\",\"mode\":\"overwrite\",\"path\":\"{path}\",\"tool\":\"{tool}\",\"ts\":\"2026-01-01T00:00:0{}Z\"{extra}}}\n",
                id.len() % 10
            )
        };
        let s1 = ",\"agent_session\":\"s1\"";
        let journal = [
            row("a", "app.py", "native:Edit", s1),
            row("bb", "gen.txt", "native:Bash", s1),
            row("ccc", "app.py", "native:Bash", s1),
            row("dddd", "plan.md", "safe_write", ""),
            row("eeeee", "other.md", "safe_write", ""),
            row(
                "ffffff",
                "x.md",
                "native:Write",
                ",\"agent_session\":\"s2\"",
            ),
        ]
        .concat();
        let mut q = Query::default();
        q.attributed
            .insert("dddd".into(), ("s1".into(), "claude-code".into()));
        let a = analyse(journal.as_bytes(), &q).unwrap();
        assert_eq!(a.agent_sessions.len(), 2);
        let s = &a.agent_sessions["s1"];
        assert_eq!(
            (
                s.writes,
                s.native_edits,
                s.shell_changes,
                s.mcp_writes,
                s.files
            ),
            (4, 1, 2, 1, 3)
        );
        assert_eq!(s.caller, "claude-code");
        assert_eq!(a.agent_sessions["s2"].writes, 1);
        assert_eq!(a.total_writes, 6, "other counters see every row");
    }
}
