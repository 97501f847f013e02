//! Markdown (CommonMark/GFM) has no syntax errors as such, so this checks what breaks rendering
//! or tooling: YAML front matter between `---` lines must close and parse (errors located in the
//! file, not in the front matter), and every ``` or ~~~ code fence must be closed.

use super::Finding;

pub(super) fn check(content: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let body_start = front_matter(content, &mut findings);
    fences(content, body_start, &mut findings);
    findings
}

/// Checks front matter if the content opens with `---`; returns the byte offset where the
/// Markdown body begins.
fn front_matter(content: &str, findings: &mut Vec<Finding>) -> usize {
    let text = content.strip_prefix('\u{feff}').unwrap_or(content);
    let bom = content.len() - text.len();
    let Some(first) = text.split_inclusive('\n').next() else {
        return 0;
    };
    if first.trim_end() != "---" {
        return 0;
    }
    let yaml_start = bom + first.len();
    let mut offset = yaml_start;
    for line in content
        .get(yaml_start..)
        .unwrap_or("")
        .split_inclusive('\n')
    {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            let yaml = content.get(yaml_start..offset).unwrap_or("");
            if let Some((at, message)) = super::yaml::first_error(yaml) {
                findings.push(Finding::error(
                    yaml_start + at,
                    format!("front matter is not valid YAML: {message}"),
                ));
            }
            return offset + line.len();
        }
        offset += line.len();
    }
    findings.push(Finding::error(
        bom,
        "front matter opened by `---` on line 1 is never closed by a `---` line",
    ));
    content.len()
}

struct Fence {
    marker: u8,
    width: usize,
    offset: usize,
}

fn fences(content: &str, body_start: usize, findings: &mut Vec<Finding>) {
    let mut open: Option<Fence> = None;
    let mut offset = body_start;
    for line in content
        .get(body_start..)
        .unwrap_or("")
        .split_inclusive('\n')
    {
        let line_offset = offset;
        offset += line.len();
        // Fences may sit in block quotes and list items; the container prefix is not part of them.
        let inner = line.trim_start_matches([' ', '\t', '>']);
        let marker = match inner.as_bytes().first() {
            Some(&b) if b == b'`' || b == b'~' => b,
            _ => continue,
        };
        let width = inner.bytes().take_while(|&b| b == marker).count();
        if width < 3 {
            continue;
        }
        let after = inner.get(width..).unwrap_or("").trim();
        match &open {
            None => {
                // A backtick fence's info string may not contain backticks (CommonMark 4.5).
                if marker == b'`' && after.contains('`') {
                    continue;
                }
                open = Some(Fence {
                    marker,
                    width,
                    offset: line_offset + (line.len() - inner.len()),
                });
            }
            Some(fence) => {
                if marker == fence.marker && width >= fence.width && after.is_empty() {
                    open = None;
                }
            }
        }
    }
    if let Some(fence) = open {
        let marker = char::from(fence.marker).to_string().repeat(fence.width);
        findings.push(Finding::error(
            fence.offset,
            format!("code fence `{marker}` opened here is never closed"),
        ));
    }
}
