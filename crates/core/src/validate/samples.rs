//! About a megabyte of typical, valid content per format, shared by the unit tests and the
//! `validate_bench` example (which includes this file by path). Plain std only, so both can use it.

/// The formats with a sample, text included.
pub const FORMATS: &[&str] = &[
    "json", "jsonl", "yaml", "toml", "python", "latex", "markdown", "xml", "html", "text",
];

/// About 1 MB of valid content per format, built by repeating a typical block.
pub fn megabyte_of(format: &str) -> String {
    let block: String = match format {
        "json" => return format!("[{}{{}}]", "{\"key\": \"value\", \"n\": [1, 2.5, true, null]},\n".repeat(23_000)),
        "jsonl" => "{\"ts\": \"2026-01-01T00:00:00Z\", \"path\": \"a/b.rs\", \"bytes\": 1024}\n".into(),
        "yaml" => return (0..22_000)
            .map(|i| format!("key{i}:\n  name: value {i}\n  list: [1, 2, 3]\n"))
            .collect(),
        "toml" => return (0..24_000)
            .map(|i| format!("[table{i}]\nname = \"value\"\nlist = [1, 2, 3]\n"))
            .collect(),
        "python" => return (0..17_000)
            .map(|i| format!("def f{i}(x, y=2):\n    return [a * y for a in x if a > {i}]\n\n"))
            .collect(),
        "latex" => "\\section{A}\\label{s} Text with $x^2$ and \\textbf{bold} % comment\n\\begin{itemize}\\item a\\end{itemize}\n".into(),
        "markdown" => "# Heading\n\nSome *text* with `code`.\n\n```rust\nfn main() {}\n```\n".into(),
        "xml" => return format!("<root>{}</root>", "<item id=\"1\"><name>value &amp; more</name></item>\n".repeat(20_000)),
        "html" => return format!("<html><body>{}</body></html>", "<div class=\"x\"><p>text<br><a href=\"/\">link</a></div>\n".repeat(19_000)),
        _ => "plain words in a line of text\n".into(),
    };
    block.repeat(1_000_000 / block.len() + 1)
}
