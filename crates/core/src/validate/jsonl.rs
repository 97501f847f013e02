//! JSON Lines / NDJSON: every non-blank line must be one complete JSON text. Each bad line is
//! reported on its own line, so one broken record does not hide the others.

use super::Finding;

pub(super) fn check(content: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut line_start = 0;
    for (number, raw) in content.split_inclusive('\n').enumerate() {
        let line = raw.trim_end_matches(['\n', '\r']);
        let line = if number == 0 {
            line.strip_prefix('\u{feff}').unwrap_or(line)
        } else {
            line
        };
        let shift = raw.len() - raw.trim_end_matches(['\n', '\r']).len();
        let lead = raw.len() - shift - line.len();
        if !line.trim().is_empty()
            && let Some((offset, message)) = super::json::first_error(line)
        {
            findings.push(Finding::error(
                line_start + lead + offset,
                format!("record on line {}: {message}", number + 1),
            ));
        }
        line_start += raw.len();
    }
    findings
}
