//! The few Markdown helpers the references share.

/// `text` as one table cell: on one line, pipes escaped.
pub fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// `text` on one line: every run of whitespace (line breaks included) one space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` as Markdown paragraphs: each paragraph (separated by a blank line) on one line.
pub fn paragraphs(text: &str) -> String {
    text.split("\n\n")
        .map(one_line)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The GitHub anchor of a heading made of `text` (lowercase; letters, digits, `-` and `_`
/// kept; spaces become `-`; the rest dropped).
pub fn anchor(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// A table from its header and rows (each cell already [`cell`]-escaped).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out += &format!("|{}\n", "---|".repeat(header.len()));
    for row in rows {
        out += &format!("| {} |\n", row.join(" | "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_stay_on_one_line_and_escape_pipes() {
        assert_eq!(cell("a |b\n  c"), "a \\|b c");
        assert_eq!(paragraphs("a\nb\n\n c \n"), "a b\n\nc");
        assert_eq!(
            anchor("`rw_safe_write`: Write a file"),
            "rw_safe_write-write-a-file"
        );
    }
}
