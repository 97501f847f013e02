//! `init --pre-commit`: a git pre-commit hook running `scan --staged`, for repositories that
//! do not use the pre-commit framework. A hook of another tool is never replaced.

use super::read_optional;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The first line after the shebang of the hook `init --pre-commit` writes: a hook holding it
/// is ours to replace.
pub const HOOK_MARKER: &str =
    "# resilient-write pre-commit hook (installed by `resilient-write init --pre-commit`)";

/// The pre-commit hook running `command scan --staged`.
pub fn hook_script(command: &str) -> String {
    let quoted = format!("'{}'", command.replace('\'', "'\\''"));
    format!(
        "#!/bin/sh\n{HOOK_MARKER}\n# Refuses a commit whose staged content holds a secret at or above medium.\n\
         # Accept a finding with `pragma: allowlist secret` on its line or its fingerprint in\n\
         # .resilient-write-ignore; bypass once with `git commit --no-verify`.\n\
         exec {quoted} scan --staged\n"
    )
}

/// What installing the hook at `path` does, given its current content.
#[derive(Debug, PartialEq, Eq)]
pub enum HookPlan {
    Create,
    Update,
    Unchanged,
    /// Another tool's hook is there: left alone.
    Foreign,
}

pub fn hook_plan(existing: Option<&str>, script: &str) -> HookPlan {
    match existing {
        None => HookPlan::Create,
        Some(t) if t == script => HookPlan::Unchanged,
        Some(t) if t.contains(HOOK_MARKER) => HookPlan::Update,
        Some(_) => HookPlan::Foreign,
    }
}

/// The hooks directory of the repository at `project` (honours `core.hooksPath` and worktrees).
fn hooks_dir(project: &Path) -> Result<PathBuf, String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(project)
        .args(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{} is not in a git repository ({})",
            project.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&out.stdout).trim_end_matches('\n'),
    ))
}

/// Install the pre-commit hook; exit 1 when a foreign hook is in the way.
pub fn install_hook(project: &Path, command: &str, print: bool) -> ExitCode {
    let dir = match hooks_dir(project) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("resilient-write init: {e}");
            return ExitCode::from(2);
        }
    };
    let path = dir.join("pre-commit");
    let existing = match read_optional(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("resilient-write init: {e}");
            return ExitCode::FAILURE;
        }
    };
    let script = hook_script(command);
    let plan = hook_plan(existing.as_deref(), &script);
    let shown = path.display();
    match plan {
        HookPlan::Unchanged => {
            println!("unchanged  {shown}");
            return ExitCode::SUCCESS;
        }
        HookPlan::Foreign => {
            eprintln!(
                "resilient-write init: {shown} exists and is not ours; left as it is. Add the line\n\
                 \n    {command} scan --staged\n\n\
                 to it, or, with the pre-commit framework, add the `resilient-write` hook of \
                 .pre-commit-hooks.yaml to .pre-commit-config.yaml"
            );
            return ExitCode::FAILURE;
        }
        HookPlan::Create | HookPlan::Update if print => {
            let verb = if plan == HookPlan::Create {
                "created"
            } else {
                "updated"
            };
            println!("would be {verb}  {shown}\n{script}");
            return ExitCode::SUCCESS;
        }
        HookPlan::Create | HookPlan::Update => {}
    }
    let written = (|| -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
        tmp.write_all(script.as_bytes())?;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o755))?;
        tmp.as_file().sync_all()?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    })();
    if let Err(e) = written {
        eprintln!("resilient-write init: writing {shown} failed: {e}");
        return ExitCode::FAILURE;
    }
    let verb = if plan == HookPlan::Create {
        "created"
    } else {
        "updated"
    };
    println!("{verb:<10} {shown}");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_is_created_once_updated_when_ours_and_never_replaces_a_foreign_one() {
        let script = hook_script("/opt/it's/rw");
        assert!(
            script.contains("exec '/opt/it'\\''s/rw' scan --staged"),
            "{script}"
        );
        assert_eq!(hook_plan(None, &script), HookPlan::Create);
        assert_eq!(hook_plan(Some(&script), &script), HookPlan::Unchanged);
        assert_eq!(
            hook_plan(Some(&hook_script("old")), &script),
            HookPlan::Update
        );
        assert_eq!(
            hook_plan(Some("#!/bin/sh\nmake lint\n"), &script),
            HookPlan::Foreign
        );
    }
}
