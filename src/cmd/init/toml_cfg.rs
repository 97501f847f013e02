//! Editing Codex's `config.toml` in place through `toml_edit`: comments, other tables and
//! their order stay as they are; only `[mcp_servers.<name>]` is added or its `command` and
//! `args` brought up to date (other keys in it, such as `env`, are the user's and kept).

use toml_edit::{Array, DocumentMut, Item, Table, value};

/// `text` with the server table holding `command` and `args`; unchanged (byte for byte)
/// when it already does.
pub fn with_server(
    text: &str,
    name: &str,
    command: &str,
    args: &[String],
) -> Result<String, String> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("is not valid TOML ({})", e.message()))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or("has an `mcp_servers` that is not a table")?;
    let server = servers
        .entry(name)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| format!("has an `mcp_servers.{name}` that is not a table"))?;
    let same_command = server.get("command").and_then(|c| c.as_str()) == Some(command);
    let same_args = server
        .get("args")
        .and_then(|a| a.as_array())
        .is_some_and(|a| {
            a.iter()
                .map(|v| v.as_str())
                .eq(args.iter().map(|s| Some(s.as_str())))
        });
    if same_command && same_args {
        return Ok(text.to_string());
    }
    if !same_command {
        server.insert("command", value(command));
    }
    if !same_args {
        server.insert(
            "args",
            value(args.iter().map(String::as_str).collect::<Array>()),
        );
    }
    let mut out = doc.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> Vec<String> {
        ["serve", "-w", "/p q"].map(String::from).to_vec()
    }

    #[test]
    fn the_table_is_added_keeping_comments_and_other_tables() {
        let text = "# my codex\nmodel = \"m\" # chosen\n\n[mcp_servers.other]\ncommand = \"x\"\n\n[profiles.fast]\nmodel = \"f\"\n";
        let out = with_server(text, "rw", "/opt/rw \"x\"", &args()).unwrap();
        // The new table joins its siblings; every other byte is where it was.
        let added =
            "[mcp_servers.rw]\ncommand = '/opt/rw \"x\"'\nargs = [\"serve\", \"-w\", \"/p q\"]\n\n";
        assert_eq!(out.replacen(added, "", 1), text, "{out}");
        let t: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(
            t["mcp_servers"]["rw"]["command"].as_str(),
            Some("/opt/rw \"x\"")
        );
        assert_eq!(t["mcp_servers"]["rw"]["args"][2].as_str(), Some("/p q"));
        assert_eq!(t["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        assert_eq!(
            with_server(&out, "rw", "/opt/rw \"x\"", &args()).unwrap(),
            out
        );
    }

    #[test]
    fn an_entry_without_the_workspace_is_updated_keeping_its_env() {
        let text =
            "[mcp_servers.rw]\ncommand = \"rw\"\nargs = [\"serve\"]\nenv = { A = \"1\" } # mine\n";
        let out = with_server(text, "rw", "/opt/rw", &args()).unwrap();
        let t: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(t["mcp_servers"]["rw"]["command"].as_str(), Some("/opt/rw"));
        assert_eq!(t["mcp_servers"]["rw"]["args"].as_array().unwrap().len(), 3);
        assert!(out.contains("env = { A = \"1\" } # mine"), "{out}");
    }

    #[test]
    fn bad_toml_and_bad_shapes_are_refused() {
        assert!(
            with_server("[[", "rw", "c", &args())
                .unwrap_err()
                .contains("not valid TOML")
        );
        assert!(
            with_server("mcp_servers = 1\n", "rw", "c", &args())
                .unwrap_err()
                .contains("not a table")
        );
        assert!(
            with_server("[mcp_servers]\nrw = 2\n", "rw", "c", &args())
                .unwrap_err()
                .contains("mcp_servers.rw")
        );
    }
}
