//! Client roots: after `initialized` and on `roots/list_changed` the session asks the client
//! for its roots and makes its local `file://` roots extra workspaces of this session (refused
//! ones are logged), then finishes any transaction committed in them before a crash. Calls
//! wait for a refresh under way, at most [`ROOTS_WAIT`], so they never race the answer.

use super::McpServer;
use super::logging::send_log;
use resilient_write_core::client_session::{ClientSession, with_client_session};
use resilient_write_core::notices::Level;
use resilient_write_core::workspace::Workspaces;
use rmcp::RoleServer;
use rmcp::service::Peer;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a call waits for the client's answer to `roots/list` (asked after `initialized`
/// and on `roots/list_changed`) before it runs with the roots it has. Waiting makes a write
/// into a just-announced root succeed instead of racing the answer.
pub(super) const ROOTS_WAIT: Duration = Duration::from_secs(5);

#[derive(Default)]
pub(super) struct RootsState {
    /// Refreshes asked for and not yet answered; calls wait while it is not zero.
    pub(super) pending: usize,
    /// Sequence of the last refresh started and of the one whose answer is applied, so a
    /// slow answer never replaces a newer one.
    started: u64,
    applied: u64,
    /// Static roots plus the client's accepted roots; `None` before any answer.
    pub(super) workspaces: Option<Arc<Workspaces>>,
}

/// The local path of a `file://` root (`file:///p` or `file://localhost/p`, percent-decoded).
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let path = if rest.starts_with('/') {
        rest
    } else {
        rest.strip_prefix("localhost")?
    };
    if !path.starts_with('/') {
        return None;
    }
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    Some(PathBuf::from(OsString::from_vec(bytes)))
}

impl McpServer {
    /// Ask the client for its roots and make its `file://` roots extra workspaces of this
    /// session. Refused roots (deny-list, missing, not `file://`) are logged and skipped; a
    /// client that fails to answer keeps the roots it had. `counted`: the caller already
    /// raised `pending` (at initialize, so no call can slip in before the first answer).
    #[allow(deprecated)] // roots: deprecated upstream by SEP-2577, still what clients send.
    pub(super) async fn refresh_roots(&self, peer: Peer<RoleServer>, counted: bool) {
        let mut seq = 0;
        self.client.roots.send_modify(|s| {
            if !counted {
                s.pending += 1;
            }
            s.started += 1;
            seq = s.started;
        });
        let answer = tokio::time::timeout(ROOTS_WAIT, peer.list_roots()).await;
        let mut rejected = Vec::new();
        let built = match answer {
            Ok(Ok(list)) => {
                let mut paths = Vec::new();
                for root in &list.roots {
                    match file_uri_path(&root.uri) {
                        Some(p) => paths.push(p),
                        None => rejected.push(format!(
                            "client root {} refused: only local file:// roots can be workspaces",
                            root.uri
                        )),
                    }
                }
                let service = self.service.clone();
                match tokio::task::spawn_blocking(move || service.store().with_client_roots(&paths))
                    .await
                {
                    Ok((ws, refused)) => {
                        for (path, reason) in refused {
                            rejected
                                .push(format!("client root {} refused: {reason}", path.display()));
                        }
                        Some(Arc::new(ws))
                    }
                    Err(e) => {
                        rejected.push(format!("client roots not applied: {e}"));
                        None
                    }
                }
            }
            Ok(Err(e)) => {
                rejected.push(format!("roots/list failed, keeping the roots known: {e}"));
                None
            }
            Err(_) => {
                rejected.push("client did not answer roots/list; keeping the roots known".into());
                None
            }
        };
        for text in &rejected {
            tracing::warn!("{text}");
            send_log(&peer, &self.client.log_level, Level::Warning, text).await;
        }
        if let Some(ws) = &built {
            // A transaction committed in a client root before a crash could not be finished
            // at start (only the static roots were known then): finish it now that the roots
            // are, before any call of this session runs (they wait for `pending`).
            let session = Arc::new(ClientSession {
                workspaces: Some(ws.clone()),
                caller: None,
            });
            let service = self.service.clone();
            let recovered = tokio::task::spawn_blocking(move || {
                with_client_session(Some(session), || {
                    resilient_write_core::tx::recover(service.store())
                })
            })
            .await;
            if let Ok(mut report) = recovered {
                // Problems (say, a transaction outside these roots too) recur at every
                // refresh: they go to the server's log only. What was done goes to the client.
                for problem in std::mem::take(&mut report.problems) {
                    tracing::warn!("{problem}");
                }
                for text in report.summary() {
                    send_log(&peer, &self.client.log_level, Level::Warning, &text).await;
                }
            }
        }
        self.client.roots.send_modify(|s| {
            if let Some(ws) = built
                && seq > s.applied
            {
                tracing::info!(
                    "client roots: {}",
                    ws.roots()
                        .map(|r| r.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                s.workspaces = Some(ws);
                s.applied = seq;
            }
            s.pending = s.pending.saturating_sub(1);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths_and_other_schemes_do_not() {
        assert_eq!(
            file_uri_path("file:///home/a/my%20proj"),
            Some(PathBuf::from("/home/a/my proj"))
        );
        assert_eq!(
            file_uri_path("file://localhost/srv/x"),
            Some(PathBuf::from("/srv/x"))
        );
        assert_eq!(file_uri_path("file://otherhost/srv/x"), None);
        assert_eq!(file_uri_path("https://example.com/x"), None);
        assert_eq!(file_uri_path("file://"), None);
    }
}
