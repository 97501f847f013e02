use super::*;

fn check(content: &str, format: &str) -> ValidationReport {
    let report = validate(content, Some(format), None);
    assert_eq!(
        report.valid,
        !report.errors.iter().any(|d| d.severity == Severity::Error)
    );
    report
}

fn assert_valid(content: &str, format: &str) {
    let report = check(content, format);
    assert!(report.valid, "expected valid {format}: {report:#?}");
}

/// The first error, which must exist.
fn first_error(content: &str, format: &str) -> Diagnostic {
    let report = check(content, format);
    assert!(!report.valid, "expected invalid {format}: {report:#?}");
    report
        .errors
        .into_iter()
        .find(|d| d.severity == Severity::Error)
        .unwrap()
}

fn warnings(content: &str, format: &str) -> Vec<Diagnostic> {
    check(content, format)
        .errors
        .into_iter()
        .filter(|d| d.severity == Severity::Warning)
        .collect()
}

// ---- the report ----

#[test]
fn report_serialises_severity_in_lowercase_and_has_a_schema() {
    let report = validate("{", Some("json"), None);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["errors"][0]["severity"], "error");
    assert_eq!(json["valid"], false);
    let back: ValidationReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, report);
    let schema = serde_json::to_value(schemars::schema_for!(ValidationReport)).unwrap();
    assert!(schema.to_string().contains("\"warning\""));
}

#[test]
fn warnings_alone_leave_content_valid() {
    let report = validate("\\section{Intro}\n\\usepackage{x}\n", Some("latex"), None);
    assert!(report.valid);
    assert!(!report.errors.is_empty());
    assert!(report.summary.contains("warning"), "{}", report.summary);
}

#[test]
fn columns_count_characters_not_bytes() {
    // serde_json stops at the `}` after `tru`: character 10, byte 11.
    let d = first_error("{\"é\": tru}", "json");
    assert_eq!((d.line, d.col), (1, 10));
}

#[test]
fn diagnostics_are_capped_and_the_summary_gives_full_counts() {
    let content = "\\being{x}\n".repeat(500);
    let report = validate(&content, Some("latex"), None);
    assert_eq!(report.errors.len(), MAX_DIAGNOSTICS);
    assert!(report.summary.contains("500 errors"), "{}", report.summary);
    assert!(
        report.summary.contains("only the first 100"),
        "{}",
        report.summary
    );
}

// ---- detection ----

#[test]
fn format_hint_wins_over_path_and_content() {
    let report = validate("a: 1\n", Some("json"), Some("x.yaml"));
    assert_eq!(report.format, "json");
}

#[test]
fn format_hint_accepts_aliases() {
    for (alias, format) in [
        ("yml", "yaml"),
        ("tex", "latex"),
        ("py", "python"),
        ("md", "markdown"),
        ("htm", "html"),
        ("jsonl", "jsonl"),
        ("ndjson", "jsonl"),
        ("JSON", "json"),
        (".toml", "toml"),
        ("svg", "xml"),
    ] {
        assert_eq!(validate("", Some(alias), None).format, format, "{alias}");
    }
}

#[test]
fn target_path_extension_is_used_when_there_is_no_hint() {
    assert_eq!(validate("x", None, Some("src/app.py")).format, "python");
    assert_eq!(validate("x", None, Some("conf/site.YML")).format, "yaml");
    assert_eq!(validate("x", None, Some("Cargo.lock")).format, "toml");
    assert_eq!(validate("x", None, Some("docs\\paper.tex")).format, "latex");
}

#[test]
fn unknown_hint_falls_through_to_path_and_says_so() {
    let report = validate("{}", Some("rust"), Some("a.json"));
    assert_eq!(report.format, "json");
    assert!(
        report.summary.contains("not recognised"),
        "{}",
        report.summary
    );
}

#[test]
fn content_is_sniffed_when_hint_and_path_say_nothing() {
    let cases = [
        ("{\"a\": 1}", "json"),
        ("{\"a\": 1}\n{\"a\": 2}\n", "jsonl"),
        ("<?xml version=\"1.0\"?><a/>", "xml"),
        ("<!DOCTYPE html><html></html>", "html"),
        ("\\documentclass{article}\n", "latex"),
        ("---\ntitle: x\n---\n# Heading\n", "markdown"),
        ("---\na: 1\n", "yaml"),
        ("import os\n", "python"),
        ("#!/usr/bin/env python3\nprint(1)\n", "python"),
        ("# Title\n\nText.\n", "markdown"),
        ("[package]\nname = \"x\"\n", "toml"),
        ("name = \"x\"\n", "toml"),
        ("name: x\n", "yaml"),
    ];
    for (content, format) in cases {
        assert_eq!(
            validate(content, None, Some("notes")).format,
            format,
            "{content:?}"
        );
    }
}

#[test]
fn unrecognised_content_is_text_and_nothing_is_checked() {
    let report = validate("just some words, nothing more", None, Some("README"));
    assert_eq!(report.format, "text");
    assert!(report.valid);
    assert!(report.errors.is_empty());
    assert!(
        report.summary.contains("nothing was checked"),
        "{}",
        report.summary
    );
}

// ---- bytes ----

#[test]
fn invalid_utf8_is_an_error_at_the_first_bad_byte() {
    let report = validate_bytes(b"{\n  \"a\": \"\xc3\xa9\xff\"\n}", Some("json"), None);
    assert!(!report.valid);
    assert_eq!(report.format, "json");
    let d = &report.errors[0];
    assert_eq!((d.line, d.col), (2, 10));
    assert!(d.message.contains("0xff"), "{}", d.message);
}

#[test]
fn valid_utf8_bytes_are_validated_as_text() {
    assert!(validate_bytes(b"{\"a\": 1}", Some("json"), None).valid);
    assert!(!validate_bytes(b"{\"a\": }", Some("json"), None).valid);
}

// ---- json ----

#[test]
fn json_valid_document_passes() {
    assert_valid(
        "{\"a\": [1, 2.5, null, true], \"b\": {\"c\": \"d\"}}",
        "json",
    );
}

#[test]
fn json_syntax_error_is_located_by_line_and_column() {
    let d = first_error("{\n  \"a\": 1,\n  \"b\": ]\n}", "json");
    assert_eq!((d.line, d.col), (3, 8));
    assert!(!d.message.contains("at line"), "{}", d.message);
}

#[test]
fn json_trailing_comma_is_an_error() {
    let d = first_error("[1, 2,]", "json");
    assert_eq!(d.line, 1);
}

#[test]
fn json_empty_input_is_an_error() {
    first_error("", "json");
}

#[test]
fn json_deep_nesting_is_an_error_not_a_crash() {
    let content = "[".repeat(100_000);
    first_error(&content, "json");
}

// ---- jsonl ----

#[test]
fn jsonl_valid_records_and_blank_lines_pass() {
    assert_valid("{\"a\": 1}\n\n[2]\r\n\"x\"\n", "jsonl");
}

#[test]
fn jsonl_reports_every_bad_line_on_its_own_line() {
    let report = check("{\"a\": 1}\n{\"a\": }\n{}\n{\"b\"\n", "jsonl");
    let lines: Vec<usize> = report.errors.iter().map(|d| d.line).collect();
    assert_eq!(lines, vec![2, 4]);
    assert!(report.errors[0].message.contains("line 2"));
}

#[test]
fn jsonl_record_split_over_two_lines_is_an_error() {
    let d = first_error("{\"a\":\n 1}\n", "jsonl");
    assert_eq!(d.line, 1);
}

// ---- yaml ----

#[test]
fn yaml_valid_document_passes() {
    assert_valid("a: 1\nb:\n  - x\n  - y: z\nc: |\n  text\n", "yaml");
}

#[test]
fn yaml_multiple_documents_pass() {
    assert_valid("---\na: 1\n---\nb: 2\n", "yaml");
}

#[test]
fn yaml_duplicate_key_is_an_error_with_its_line() {
    let d = first_error("name: a\nother: b\nname: c\n", "yaml");
    assert_eq!((d.line, d.col), (3, 1));
    assert!(d.message.contains("duplicate"), "{}", d.message);
    assert!(!d.message.contains("DuplicateKeyPolicy"), "{}", d.message);
}

#[test]
fn yaml_bad_indentation_is_an_error_with_line_and_column() {
    let d = first_error("key: value\n  bad: indent\n", "yaml");
    assert_eq!((d.line, d.col), (2, 6));
}

#[test]
fn yaml_unknown_alias_is_an_error() {
    let d = first_error("a: &x 1\nb: *y\n", "yaml");
    assert_eq!(d.line, 2);
}

#[test]
fn yaml_alias_bomb_is_refused_quickly() {
    let mut content = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = i - 1;
        content.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n",
            p = if prev == 0 {
                "".to_owned()
            } else {
                prev.to_string()
            }
        ));
    }
    // saphyr's anchor budgets bound the expansion: refused, not expanded.
    let d = first_error(&content, "yaml");
    assert!(d.message.contains("too large"), "{}", d.message);
}

// ---- toml ----

#[test]
fn toml_valid_document_passes() {
    assert_valid(
        "title = \"x\"\n[owner]\nname = \"a\"\n[[items]]\nid = 1\n",
        "toml",
    );
}

#[test]
fn toml_duplicate_key_is_an_error_with_its_line() {
    let d = first_error("a = 1\nb = 2\na = 3\n", "toml");
    assert_eq!((d.line, d.col), (3, 1));
    assert!(d.message.contains("duplicate"), "{}", d.message);
}

#[test]
fn toml_unquoted_string_is_an_error_at_the_value() {
    let d = first_error("[x]\nname = hello world\n", "toml");
    assert_eq!(d.line, 2);
}

#[test]
fn toml_redefined_table_is_an_error() {
    first_error("[a]\nx = 1\n[a]\ny = 2\n", "toml");
}

// ---- python ----

#[test]
fn python_valid_312_code_passes() {
    assert_valid(
        "import os\n\nclass A[T]:\n    def f(self, x: T) -> T:\n        match x:\n            case 1:\n                return x\n        return f'{x!r:>{10}} {\"nested\"}'\n\ntype Alias = list[int]\n",
        "python",
    );
}

#[test]
fn python_syntax_error_is_located() {
    let d = first_error("def f(:\n    pass\n", "python");
    assert_eq!((d.line, d.col), (1, 7));
}

#[test]
fn python_missing_indented_block_is_an_error_on_its_line() {
    let d = first_error("if x:\npass\n", "python");
    assert_eq!(d.line, 2);
    assert!(d.message.contains("indented block"), "{}", d.message);
}

#[test]
fn python_inconsistent_dedent_is_an_error() {
    first_error("def f():\n        x = 1\n    y = 2\n", "python");
}

#[test]
fn python_unclosed_bracket_is_an_error() {
    first_error("x = (1,\n", "python");
}

#[test]
fn python_reports_several_errors_not_only_the_first() {
    let report = check("def f(:\n    pass\nx = = 2\n", "python");
    let lines: Vec<usize> = report.errors.iter().map(|d| d.line).collect();
    assert!(lines.contains(&1) && lines.contains(&3), "{lines:?}");
}

#[test]
fn python_syntax_newer_than_312_is_only_a_warning() {
    // PEP 758 (3.14): except without parentheses around several exception types.
    let content = "try:\n    pass\nexcept ValueError, TypeError:\n    pass\n";
    let report = check(content, "python");
    assert!(report.valid, "{report:#?}");
    assert!(!warnings(content, "python").is_empty(), "{report:#?}");
}

#[test]
fn python_pathologically_deep_expressions_do_not_overflow_the_stack() {
    for content in [
        format!("x = {}1\n", "-".repeat(200_000)),
        format!("x = {}1\n", "1+".repeat(100_000)),
        format!("x = a{}\n", ".b".repeat(100_000)),
        format!("x = {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
    ] {
        let _ = validate(&content, Some("python"), None);
    }
}

// ---- latex ----

const LATEX_DOC: &str = "\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n\\section{Intro}\\label{sec:intro}\nText with $x^2$ and \\% and \\{ braces \\}.\n% a comment with { and $ and \\begin{itemize}\n\\begin{itemize}\n  \\item one\n\\end{itemize}\n\\[ a = b \\]\n\\begin{verbatim}\n{ $ \\begin{x} \\being\n\\end{verbatim}\n\\verb|{$|\n\\url{http://a.b/%7E}\n\\end{document}\n";

#[test]
fn latex_valid_document_passes_without_warnings() {
    let report = check(LATEX_DOC, "latex");
    assert!(report.errors.is_empty(), "{report:#?}");
}

#[test]
fn latex_unclosed_brace_is_an_error_at_the_brace() {
    let d = first_error("a\n\\textbf{bold\n", "latex");
    assert_eq!((d.line, d.col), (2, 8));
}

#[test]
fn latex_extra_closing_brace_is_an_error() {
    let d = first_error("a}\n", "latex");
    assert_eq!((d.line, d.col), (1, 2));
}

#[test]
fn latex_mismatched_end_names_the_open_environment_and_its_line() {
    let report = check("\\begin{itemize}\n\\item a\n\\end{enumerate}\n", "latex");
    let d = report
        .errors
        .iter()
        .find(|d| d.message.contains("enumerate"))
        .unwrap();
    assert_eq!(d.line, 3);
    assert!(
        d.message.contains("itemize") && d.message.contains("line 1"),
        "{}",
        d.message
    );
}

#[test]
fn latex_unclosed_environment_is_reported_at_its_begin() {
    let content = "\\begin{figure}\n\\begin{center}\nx\n\\end{figure}\n";
    let d = first_error(content, "latex");
    assert_eq!(d.line, 2);
    assert!(d.message.contains("center"), "{}", d.message);
}

#[test]
fn latex_environment_never_closed_is_an_error() {
    let d = first_error("\\begin{table}\nx\n", "latex");
    assert_eq!(d.line, 1);
}

#[test]
fn latex_misspelled_commands_are_errors_with_a_suggestion() {
    for (typo, meant) in [
        ("\\being{itemize}", "\\begin"),
        ("\\edn{itemize}", "\\end"),
        ("\\lable{x}", "\\label"),
        ("\\refernce{x}", "\\ref"),
    ] {
        let report = check(&format!("{typo}\n"), "latex");
        let d = report
            .errors
            .iter()
            .find(|d| d.message.contains("did you mean"))
            .unwrap_or_else(|| panic!("{typo}: {report:#?}"));
        assert!(d.message.contains(meant), "{}", d.message);
    }
}

#[test]
fn latex_typo_defined_by_the_document_is_accepted() {
    assert_valid("\\newcommand{\\lable}[1]{#1}\n\\lable{x}\n", "latex");
    assert_valid("\\def\\edn{x}\n\\edn\n", "latex");
}

#[test]
fn latex_unbalanced_dollar_is_an_error_at_the_paragraph_break() {
    let d = first_error("Text $x + y\n\nNext paragraph.\n", "latex");
    assert_eq!((d.line, d.col), (1, 6));
}

#[test]
fn latex_unclosed_display_math_is_an_error() {
    first_error("\\[ x = 1\n", "latex");
    first_error("$$ x = 1\n", "latex");
}

#[test]
fn latex_backslash_math_delimiters_report_nesting_and_stray_closers() {
    let d = first_error("\\( a \\( b \\)\n", "latex");
    assert_eq!(
        d.message,
        "`\\(` inside math already opened by `\\(` on line 1"
    );
    let d = first_error("x\n\\[ a\n\\[ b \\]\n", "latex");
    assert_eq!(
        d.message,
        "`\\[` inside display math already opened by `\\[` on line 2"
    );
    let d = first_error("a \\) b\n", "latex");
    assert_eq!(d.message, "`\\)` without a matching `\\(`");
    let d = first_error("a \\] b\n", "latex");
    assert_eq!(d.message, "`\\]` without a matching `\\[`");
}

#[test]
fn latex_escaped_and_commented_specials_are_ignored() {
    assert_valid(
        "costs \\$5 and 50\\% % and { here $\n\\\\[2pt] next\n",
        "latex",
    );
}

#[test]
fn latex_verbatim_environment_contents_are_skipped() {
    assert_valid(
        "\\begin{lstlisting}\n{ } } $ \\end{itemize}\n\\end{lstlisting}\n",
        "latex",
    );
}

#[test]
fn latex_unclosed_verbatim_is_an_error() {
    first_error("\\begin{verbatim}\nx\n", "latex");
}

#[test]
fn latex_full_document_without_documentclass_or_begin_document_gets_warnings() {
    let w = warnings("\\usepackage{x}\nText\n", "latex");
    assert_eq!(w.len(), 2, "{w:#?}");
    let w = warnings("\\documentclass{article}\nText\n", "latex");
    assert!(w[0].message.contains("begin{document}"), "{w:#?}");
}

#[test]
fn latex_fragment_gets_no_document_warnings() {
    assert!(warnings("\\section{A}\nText.\n", "latex").is_empty());
}

#[test]
fn latex_content_after_end_document_is_ignored() {
    assert_valid(
        "\\documentclass{a}\n\\begin{document}\nx\n\\end{document}\n} { $ \\being\n",
        "latex",
    );
}

// ---- markdown ----

#[test]
fn markdown_with_front_matter_and_closed_fences_passes() {
    assert_valid(
        "---\ntitle: x\ntags: [a, b]\n---\n# T\n\n```rust\nfn main() {}\n```\n\n~~~\nx\n~~~\n",
        "markdown",
    );
}

#[test]
fn markdown_front_matter_yaml_error_is_located_in_the_file() {
    let d = first_error("---\ntitle: a\ntitle: b\n---\nbody\n", "markdown");
    assert_eq!((d.line, d.col), (3, 1));
    assert!(d.message.contains("front matter"), "{}", d.message);
}

#[test]
fn markdown_unclosed_front_matter_is_an_error() {
    let d = first_error("---\ntitle: a\nbody\n", "markdown");
    assert_eq!(d.line, 1);
}

#[test]
fn markdown_unclosed_code_fence_is_an_error_at_the_fence() {
    let d = first_error("# T\n\n```python\nx = 1\n", "markdown");
    assert_eq!((d.line, d.col), (3, 1));
}

#[test]
fn markdown_fence_closes_only_with_the_same_marker_and_width() {
    first_error("````\n```\n~~~~\n", "markdown");
    assert_valid("````\n```\n`````\n", "markdown");
}

// ---- xml ----

#[test]
fn xml_well_formed_document_passes() {
    assert_valid(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE r [<!ENTITY e \"v\">]>\n<r xmlns:a=\"u\"><a:b c='1'>&e;&amp;</a:b><![CDATA[<x>]]></r>\n",
        "xml",
    );
}

#[test]
fn xml_mismatched_tag_is_an_error_with_line_and_column() {
    let d = first_error("<a>\n  <b>\n</a>\n", "xml");
    assert_eq!(d.line, 3);
}

#[test]
fn xml_two_roots_is_an_error() {
    first_error("<a/><b/>", "xml");
}

#[test]
fn xml_unknown_entity_is_an_error() {
    first_error("<a>&nbsp;</a>", "xml");
}

#[test]
fn xml_billion_laughs_is_refused() {
    let mut content = String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE l [\n<!ENTITY l0 \"ha\">\n");
    for i in 1..10 {
        let p = i - 1;
        content.push_str(&format!(
            "<!ENTITY l{i} \"&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};\">\n"
        ));
    }
    content.push_str("]>\n<l>&l9;</l>\n");
    first_error(&content, "xml");
}

// ---- html ----

#[test]
fn html_with_void_elements_and_optional_end_tags_passes() {
    assert_valid(
        "<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>a < b</title></head>\n<body><p>one<p>two<br><img src=\"a>b\">\n<ul><li>a<li>b</ul>\n<table><tr><td>1<td>2<tr><td>3</table>\n<script>if (a < b && c > d) { x = \"</div>\"; }</script>\n<!-- <div> -->\n<svg><path d=\"M0\"/></svg></body></html>\n",
        "html",
    );
}

#[test]
fn html_unclosed_element_is_an_error_at_its_start_tag() {
    let d = first_error("<div>\n  <span>text\n</div>\n", "html");
    assert_eq!((d.line, d.col), (2, 3));
    assert!(
        d.message.contains("span") && d.message.contains("line 3"),
        "{}",
        d.message
    );
}

#[test]
fn html_stray_end_tag_is_an_error() {
    let d = first_error("<p>a</p></div>\n", "html");
    assert_eq!((d.line, d.col), (1, 9));
}

#[test]
fn html_element_never_closed_is_an_error() {
    first_error("<section>\n<p>x\n", "html");
}

#[test]
fn html_tag_names_are_case_insensitive() {
    assert_valid("<DIV>x</div>", "html");
}

#[test]
fn html_unclosed_comment_is_an_error() {
    first_error("<div></div><!-- oops\n", "html");
}

#[test]
fn html_self_closing_div_is_a_warning() {
    let w = warnings("<div/>", "html");
    assert_eq!(w.len(), 1);
}

// ---- robustness ----

/// A small deterministic generator (no clock, no extra crate).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

use super::samples::FORMATS;

#[test]
fn no_validator_panics_on_random_or_truncated_input() {
    let alphabet: Vec<char> = "{}[]()<>/\\$%&#:;,.'\"`~-=+*!? \n\t\raéz01\u{feff}€"
        .chars()
        .collect();
    let seeds = [
        LATEX_DOC,
        "{\"a\": [1, {\"b\": null}]}",
        "---\na: [1, 2]\nb: {c: d}\n---\n# x\n```\ny\n```\n",
        "<html><body><p>x<br></body></html>",
        "<?xml version=\"1.0\"?><a><b c=\"d\"/></a>",
        "def f(x):\n    return [i for i in x if i]\n",
        "[a]\nb = [1, 2]\nc = { d = 'e' }\n",
    ];
    let mut rng = Lcg(42);
    for format in FORMATS {
        for seed in seeds {
            // Every truncation at a character boundary.
            for (cut, _) in seed.char_indices() {
                let _ = validate(&seed[..cut], Some(format), None);
            }
        }
        for _ in 0..200 {
            let len = (rng.next() % 80) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[(rng.next() as usize) % alphabet.len()])
                .collect();
            let _ = validate(&text, Some(format), None);
        }
        for bytes in [&b"\xff"[..], b"a\xc3", b"\xe2\x82", b"{\n\"\x80\"}"] {
            let _ = validate_bytes(bytes, Some(format), None);
        }
    }
}

#[test]
fn deeply_nested_input_is_handled_by_every_validator() {
    let deep = [
        "[".repeat(50_000),
        "{".repeat(50_000),
        "<a>".repeat(50_000),
        "\\begin{x}".repeat(50_000),
        "- ".repeat(50_000),
        "a = ".to_owned() + &"[".repeat(50_000),
    ];
    for format in FORMATS {
        for content in &deep {
            let _ = validate(content, Some(format), None);
        }
    }
}

#[test]
fn a_megabyte_of_each_format_is_validated() {
    // Nothing is timed here (the example `validate_bench` measures); this proves the inputs are
    // valid and that every validator finishes on them. Each is linear by construction.
    for format in FORMATS {
        let content = super::samples::megabyte_of(format);
        assert!(content.len() >= 1_000_000, "{format}: {}", content.len());
        let report = validate(&content, Some(format), None);
        assert!(report.valid, "{format}: {}", report.summary);
    }
}

#[test]
fn yaml_larger_than_saphyr_default_node_budget_is_valid() {
    let content: String = (0..90_000).map(|i| format!("k{i}: [1, 2]\n")).collect();
    let report = check(&content, "yaml");
    assert!(report.valid, "{}", report.summary);
}

#[test]
fn validators_run_on_a_small_thread_stack() {
    let handle = std::thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(|| {
            for format in FORMATS {
                for content in [
                    "[".repeat(10_000),
                    "- ".repeat(10_000),
                    LATEX_DOC.to_owned(),
                ] {
                    let _ = validate(&content, Some(format), None);
                }
            }
        })
        .unwrap();
    handle.join().unwrap();
}

#[test]
fn json_array_of_strings_is_not_mistaken_for_a_toml_table() {
    assert_eq!(validate("[\"a\"]", None, None).format, "json");
}

#[test]
fn json_byte_order_mark_is_a_warning() {
    let report = check("\u{feff}{}", "json");
    assert!(report.valid);
    assert_eq!(report.errors.len(), 1);
}

#[test]
fn latex_url_argument_may_hold_percent_signs() {
    assert_valid(
        "\\url{http://x/a%20b} and \\href{http://y/%7E}{text}\n",
        "latex",
    );
}

#[test]
fn latex_iffalse_block_is_skipped_up_to_fi_not_figure() {
    assert_valid("\\iffalse\n{ \\figure $\n\\fi\ntext\n", "latex");
}

#[test]
fn many_stray_closers_stay_linear() {
    // Quadratic scans would take minutes here; a linear one takes milliseconds.
    let latex = "\\begin{a}".repeat(40_000) + &"\\end{b}".repeat(40_000);
    assert!(!validate(&latex, Some("latex"), None).valid);
    let html = "<a>".repeat(100_000) + &"</b>".repeat(100_000);
    assert!(!validate(&html, Some("html"), None).valid);
    let long_line = "\\being{x} ".repeat(100_000);
    assert!(!validate(&long_line, Some("latex"), None).valid);
    let urls = "\\url{".repeat(100_000);
    assert!(!validate(&urls, Some("latex"), None).valid);
}

#[test]
fn capped_report_lists_an_error_even_after_many_warnings() {
    let content = "<div/>".repeat(300) + "</span>";
    let report = check(&content, "html");
    assert!(!report.valid);
    assert_eq!(report.errors.len(), MAX_DIAGNOSTICS);
    assert!(report.errors.iter().any(|d| d.severity == Severity::Error));
}

#[test]
fn python_deep_statements_and_patterns_do_not_overflow_the_stack() {
    let mut nested_ifs = String::new();
    for depth in 0..1_000 {
        nested_ifs.push_str(&" ".repeat(depth));
        nested_ifs.push_str("if x:\n");
    }
    nested_ifs.push_str(&" ".repeat(1_000));
    nested_ifs.push_str("pass\n");
    let deep_pattern = format!(
        "match x:\n    case {}1{}:\n        pass\n",
        "[".repeat(50_000),
        "]".repeat(50_000)
    );
    let deep_fstring = format!("x = {}1{}\n", "f'{".repeat(5_000), "}'".repeat(5_000));
    for content in [nested_ifs, deep_pattern, deep_fstring] {
        let _ = validate(&content, Some("python"), None);
    }
}
