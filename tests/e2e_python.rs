//! End to end with the official MCP Python SDK client (`tests/e2e/mcp_client.py`, `mcp` pinned
//! in `tests/e2e/requirements.txt`): a real client, not our harness, drives the server over
//! stdio and over Streamable HTTP (`serve --transport http`).
//!
//! Without the `mcp` package the test fails under CI (env `CI` set) and otherwise prints a loud
//! skip notice with the install command.

mod common;

use common::{Workspace, bin};
use std::path::{Path, PathBuf};
use std::process::Command;

const INSTALL: &str = "pip install --user -r tests/e2e/requirements.txt";

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/mcp_client.py")
}

/// Whether `python3` can import the SDK; `None` (with the reason) when it cannot.
fn sdk_available() -> Result<(), String> {
    let out = Command::new("python3")
        .args(["-c", "import mcp, mcp.client"])
        .output()
        .map_err(|e| format!("python3 cannot be run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// True when the Python SDK is usable; fails under CI, prints a skip notice elsewhere.
fn require_sdk() -> bool {
    match sdk_available() {
        Ok(()) => true,
        Err(why) => {
            common::missing_prerequisite(&format!(
                "the MCP Python SDK is not importable ({why}); install it with: {INSTALL}"
            ));
            false
        }
    }
}

fn run_client(transport: &str, mode: &str) {
    let ws = Workspace::new();
    let extra = Workspace::new();
    let out = Command::new("python3")
        .arg(script())
        .arg(transport)
        .arg("--bin")
        .arg(bin())
        .arg("--workspace")
        .arg(&ws.root)
        .arg("--extra-root")
        .arg(&extra.root)
        .args([
            "--mode",
            mode,
            "--expect-version",
            env!("CARGO_PKG_VERSION"),
        ])
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_STATE_DIR")
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client failed over {transport} ({mode}):\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("e2e passed ({transport}, {mode})")),
        "{stdout}"
    );
    let rows = common::journal_rows(&ws.root);
    assert!(
        rows.iter().any(|r| r["caller"] == "python-e2e"),
        "journal rows do not name the Python client: {rows:?}"
    );
}

#[test]
fn python_sdk_client_over_stdio_with_the_initialize_handshake() {
    if require_sdk() {
        run_client("stdio", "legacy");
    }
}

#[test]
fn python_sdk_client_over_stdio_with_protocol_discovery() {
    if require_sdk() {
        run_client("stdio", "auto");
    }
}

#[test]
fn python_sdk_client_over_http() {
    if !require_sdk() {
        return;
    }
    run_client("http", "legacy");
}
