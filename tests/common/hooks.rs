//! Running `resilient-write hook` on the agents' documented payloads
//! (`tests/fixtures/hooks/`), for the hook tests.

use super::bin;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// A fixture with its `__NAME__` string values replaced by `fill`.
pub fn fixture(rel: &str, fill: &[(&str, &str)]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(rel);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    fn walk(v: &mut Value, fill: &[(&str, &str)]) {
        match v {
            Value::String(s) => {
                for (k, val) in fill {
                    *s = s.replace(&format!("__{k}__"), val);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, fill)),
            Value::Object(o) => o.values_mut().for_each(|x| walk(x, fill)),
            _ => {}
        }
    }
    walk(&mut v, fill);
    v
}

/// What one hook run printed.
#[derive(Debug)]
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run the hook with `stdin` from a neutral directory (not the workspace: the payload names
/// it), with `env` added.
pub fn hook_raw(agent: &str, event: &str, stdin: &[u8], env: &[(&str, &str)]) -> Ran {
    let neutral = std::env::temp_dir();
    let mut cmd = Command::new(bin());
    cmd.args(["hook", agent, event])
        .current_dir(&neutral)
        .env_remove("RW_STATE_DIR")
        .env_remove("RW_WORKSPACE")
        .env_remove("RW_POLICY_FILE")
        .env_remove("RW_MAX_WRITE_BYTES")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    // A hook that answers without reading stdin (an unknown agent) may close it first.
    match child.stdin.take().unwrap().write_all(stdin) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.unwrap(),
    }
    let out = child.wait_with_output().unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

pub fn hook(agent: &str, event: &str, payload: &Value) -> Ran {
    hook_raw(agent, event, payload.to_string().as_bytes(), &[])
}
