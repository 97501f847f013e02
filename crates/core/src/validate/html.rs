//! HTML tag balance, the way an HTML5 parser sees it rather than as XML: void elements (`<br>`,
//! `<img>`) take no end tag, elements with optional end tags (`p`, `li`, `td`, `tr`, `option`, ...)
//! are closed implicitly, `script`/`style`/`textarea`/`title` hold raw text, and tag names are
//! case-insensitive. Reported: stray end tags, elements never closed, end tags that cross an open
//! element, unterminated tags, comments and quoted attributes.

use super::{Finding, LineIndex, OpenStack};

const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen", "command", "basefont", "frame", "isindex",
];

/// Elements whose end tag may be left out (HTML Living Standard, "Optional tags").
const OPTIONAL_END: &[&str] = &[
    "html", "head", "body", "p", "li", "dt", "dd", "rb", "rt", "rtc", "rp", "optgroup", "option",
    "colgroup", "caption", "thead", "tbody", "tfoot", "tr", "td", "th",
];

const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "noembed", "iframe",
];

/// Start tags that close an open `<p>`.
const CLOSES_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "details",
    "dialog",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "pre",
    "search",
    "section",
    "table",
    "ul",
];

/// Does starting `new` implicitly end an open `open` element?
fn implicitly_closes(new: &str, open: &str) -> bool {
    match open {
        "p" => CLOSES_P.contains(&new),
        "li" => new == "li",
        "dt" | "dd" => matches!(new, "dt" | "dd"),
        "option" => matches!(new, "option" | "optgroup"),
        "optgroup" => new == "optgroup",
        "td" | "th" => matches!(new, "td" | "th" | "tr" | "tbody" | "tfoot" | "thead"),
        "tr" => matches!(new, "tr" | "tbody" | "tfoot" | "thead"),
        "thead" | "tbody" => matches!(new, "tbody" | "tfoot"),
        "rb" | "rt" | "rtc" | "rp" => matches!(new, "rb" | "rt" | "rtc" | "rp"),
        "colgroup" | "caption" => !matches!(new, "col"),
        "head" => new == "body",
        _ => false,
    }
}

pub(super) fn check(content: &str) -> Vec<Finding> {
    let bytes = content.as_bytes();
    let index = LineIndex::new(content);
    let mut findings = Vec::new();
    let mut stack = OpenStack::default();
    let mut foreign_depth = 0usize; // inside <svg> or <math>, `/>` really self-closes
    let mut pos = 0;
    while let Some(n) = content.get(pos..).and_then(|rest| rest.find('<')) {
        let start = pos + n;
        let rest = content.get(start..).unwrap_or("");
        if rest.starts_with("<!--") {
            match rest.get(4..).and_then(|r| r.find("-->")) {
                Some(end) => pos = start + 4 + end + 3,
                None => {
                    findings.push(Finding::error(
                        start,
                        "comment `<!--` is never closed by `-->`",
                    ));
                    pos = content.len();
                }
            }
            continue;
        }
        if rest.starts_with("<![CDATA[") {
            pos = match rest.find("]]>") {
                Some(end) => start + end + 3,
                None => {
                    findings.push(Finding::error(
                        start,
                        "`<![CDATA[` is never closed by `]]>`",
                    ));
                    content.len()
                }
            };
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            pos = match rest.find('>') {
                Some(end) => start + end + 1,
                None => {
                    findings.push(Finding::error(start, "declaration is never closed by `>`"));
                    content.len()
                }
            };
            continue;
        }
        let is_end = rest.starts_with("</");
        let name_start = start + if is_end { 2 } else { 1 };
        let name_len = bytes
            .get(name_start..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.'))
            .count();
        let starts_with_letter = bytes.get(name_start).is_some_and(u8::is_ascii_alphabetic);
        if name_len == 0 || !starts_with_letter {
            // `a < b` in text: a literal less-than sign, not a tag.
            pos = start + 1;
            continue;
        }
        let name = content
            .get(name_start..name_start + name_len)
            .unwrap_or("")
            .to_ascii_lowercase();
        let slash = if is_end { "/" } else { "" };
        let (tag_end, self_closing) = match tag_end(content, name_start + name_len) {
            Ok(end) => end,
            Err(next) => {
                findings.push(Finding::error(
                    start,
                    format!("tag `<{slash}{name}` is not closed by `>`"),
                ));
                match next {
                    Some(next_tag) => {
                        pos = next_tag;
                        continue;
                    }
                    None => break,
                }
            }
        };
        pos = tag_end;
        if is_end {
            end_tag(&name, start, &index, &mut stack, &mut findings);
            if matches!(name.as_str(), "svg" | "math") {
                foreign_depth = foreign_depth.saturating_sub(1);
            }
            continue;
        }
        while stack
            .last()
            .is_some_and(|(open, _)| implicitly_closes(&name, open))
        {
            stack.pop();
        }
        if VOID.contains(&name.as_str()) {
            continue;
        }
        if self_closing {
            if foreign_depth == 0 {
                findings.push(Finding::warning(
                    start,
                    format!(
                        "`<{name}/>`: HTML ignores `/>` on a non-void element, so `<{name}>` stays \
                         open until `</{name}>`; treated as closed here"
                    ),
                ));
            }
            continue;
        }
        if RAW_TEXT.contains(&name.as_str()) && foreign_depth == 0 {
            let closing = format!("</{name}");
            let body = content.get(pos..).unwrap_or("");
            match find_ascii_case_insensitive(body, &closing) {
                Some(n) => pos += n, // the end tag itself is read on the next turn
                None => {
                    findings.push(Finding::error(
                        start,
                        format!("`<{name}>` is never closed by `</{name}>`"),
                    ));
                    pos = content.len();
                    continue;
                }
            }
        }
        if matches!(name.as_str(), "svg" | "math") {
            foreign_depth += 1;
        }
        stack.push(&name, start);
    }
    for (name, offset) in stack.into_open() {
        if !OPTIONAL_END.contains(&name.as_str()) {
            findings.push(Finding::error(
                offset,
                format!("`<{name}>` is never closed"),
            ));
        }
    }
    findings
}

/// Finds the `>` that ends a tag whose name ends at `from`, skipping quoted attribute values.
/// Returns the offset after `>` and whether the tag ended with `/>`; or, for an unterminated tag,
/// the offset of the next `<` outside quotes (`None` at the end of the content).
fn tag_end(content: &str, from: usize) -> Result<(usize, bool), Option<usize>> {
    let bytes = content.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = from;
    while let Some(&b) = bytes.get(i) {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'>') => {
                let self_closing = i > from && bytes.get(i - 1) == Some(&b'/');
                return Ok((i + 1, self_closing));
            }
            (None, b'<') => return Err(Some(i)),
            _ => {}
        }
        i += 1;
    }
    Err(None)
}

fn end_tag(
    name: &str,
    start: usize,
    index: &LineIndex<'_>,
    stack: &mut OpenStack,
    findings: &mut Vec<Finding>,
) {
    if VOID.contains(&name) {
        findings.push(Finding::warning(
            start,
            format!("`</{name}>`: `<{name}>` is a void element and takes no end tag"),
        ));
        return;
    }
    let Some(inside) = stack.close(name) else {
        if !OPTIONAL_END.contains(&name) {
            findings.push(Finding::error(
                start,
                format!("stray `</{name}>`: no `<{name}>` is open"),
            ));
        }
        return;
    };
    for (open, offset) in inside {
        if !OPTIONAL_END.contains(&open.as_str()) {
            findings.push(Finding::error(
                offset,
                format!(
                    "`<{open}>` is not closed before `</{name}>` on line {}",
                    index.position_line(start)
                ),
            ));
        }
    }
}

fn find_ascii_case_insensitive(haystack: &str, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}
