//! LaTeX checks, written here because no LaTeX grammar crate is usable (DEPS.md): one linear scan
//! that understands comments (`%`), control symbols (`\%`, `\{`, `\$`, `\\`), `\verb|...|`,
//! verbatim-like environments and `\url{...}` arguments (their contents are not TeX), and reports
//!
//! - unbalanced braces: a `}` with nothing open, a `{` never closed (at the brace);
//! - `\begin`/`\end` mismatches, naming the line of the other end, and environments never closed;
//! - unbalanced math: a `$`, `$$`, `\(` or `\[` still open at a paragraph break or at the end;
//! - the paper's typo checks: commonly misspelled commands (`\being`, `\edn`, `\lable`,
//!   `\refernce`, ...) unless the document defines them itself;
//! - for content that looks like a whole document: missing `\documentclass` or
//!   `\begin{document}` (warnings: a fragment meant for `\input` has neither).
//!
//! Everything after `\end{document}` is ignored, as TeX ignores it.

use super::{Finding, LineIndex, OpenStack};
use std::collections::HashSet;

/// Environments whose body is not TeX: skipped up to their `\end{name}`.
const VERBATIM_ENVIRONMENTS: &[&str] = &[
    "verbatim",
    "verbatim*",
    "Verbatim",
    "Verbatim*",
    "BVerbatim",
    "LVerbatim",
    "lstlisting",
    "minted",
    "comment",
    "filecontents",
    "filecontents*",
];

/// Misspellings seen in agent-written LaTeX, with the command meant. Each is an "Undefined control
/// sequence" at build time unless the document defines it.
const TYPOS: &[(&str, &str)] = &[
    ("being", "begin"),
    ("bgein", "begin"),
    ("begn", "begin"),
    ("beign", "begin"),
    ("edn", "end"),
    ("ned", "end"),
    ("lable", "label"),
    ("labl", "label"),
    ("lavel", "label"),
    ("refernce", "ref"),
    ("refrence", "ref"),
    ("eqrf", "eqref"),
    ("ciet", "cite"),
    ("cte", "cite"),
    ("sectoin", "section"),
    ("setcion", "section"),
    ("secton", "section"),
    ("subsectoin", "subsection"),
    ("subsetcion", "subsection"),
    ("itme", "item"),
    ("tiem", "item"),
    ("emhp", "emph"),
    ("empth", "emph"),
    ("textbd", "textbf"),
    ("textfb", "textbf"),
    ("txtbf", "textbf"),
    ("textti", "textit"),
    ("docuemntclass", "documentclass"),
    ("documnetclass", "documentclass"),
    ("documentclas", "documentclass"),
    ("usepackge", "usepackage"),
    ("usepakage", "usepackage"),
    ("usepacakge", "usepackage"),
    ("includegraphcis", "includegraphics"),
    ("inlcudegraphics", "includegraphics"),
    ("includegrahpics", "includegraphics"),
    ("captoin", "caption"),
    ("caprion", "caption"),
    ("farc", "frac"),
    ("fracc", "frac"),
    ("maketitel", "maketitle"),
    ("tableofcontnets", "tableofcontents"),
    ("newcommnad", "newcommand"),
    ("renewcommnad", "renewcommand"),
    ("footnoet", "footnote"),
    ("fotnote", "footnote"),
    ("hspcae", "hspace"),
    ("vspcae", "vspace"),
    ("bibliograpy", "bibliography"),
    ("bibliogrpahy", "bibliography"),
];

/// Commands that introduce a definition of the command written after them.
const DEFINERS: &[&str] = &[
    "newcommand",
    "renewcommand",
    "providecommand",
    "def",
    "gdef",
    "edef",
    "xdef",
    "let",
    "DeclareMathOperator",
    "DeclareRobustCommand",
    "NewDocumentCommand",
    "RenewDocumentCommand",
    "ProvideDocumentCommand",
    "DeclareDocumentCommand",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Math {
    Dollar,
    DoubleDollar,
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    index: LineIndex<'a>,
    findings: Vec<Finding>,
    braces: Vec<usize>,
    environments: OpenStack,
    dollar: Option<(Math, usize)>,
    paren_math: Option<usize>,
    bracket_math: Option<usize>,
    typos: Vec<(&'a str, &'static str, usize)>,
    defined: HashSet<&'a str>,
    saw_documentclass: bool,
    saw_begin_document: bool,
    looks_like_document: bool,
}

pub(super) fn check(content: &str) -> Vec<Finding> {
    let mut scanner = Scanner {
        text: content,
        bytes: content.as_bytes(),
        pos: 0,
        index: LineIndex::new(content),
        findings: Vec::new(),
        braces: Vec::new(),
        environments: OpenStack::default(),
        dollar: None,
        paren_math: None,
        bracket_math: None,
        typos: Vec::new(),
        defined: HashSet::new(),
        saw_documentclass: false,
        saw_begin_document: false,
        looks_like_document: false,
    };
    scanner.scan();
    scanner.finish()
}

impl<'a> Scanner<'a> {
    fn line_of(&self, offset: usize) -> usize {
        self.index.position_line(offset)
    }

    fn scan(&mut self) {
        while let Some(&byte) = self.bytes.get(self.pos) {
            match byte {
                b'%' => self.skip_to_line_end(),
                b'\\' => {
                    if self.command() {
                        return; // \end{document}: TeX reads no further.
                    }
                }
                b'{' => {
                    self.braces.push(self.pos);
                    self.pos += 1;
                }
                b'}' => {
                    if self.braces.pop().is_none() {
                        self.findings.push(Finding::error(
                            self.pos,
                            "unmatched `}`: no `{` is open here",
                        ));
                    }
                    self.pos += 1;
                }
                b'$' => self.dollar_sign(),
                b'\n' => {
                    self.pos += 1;
                    if self.at_blank_line() {
                        self.paragraph_break();
                    }
                }
                _ => self.pos += 1,
            }
        }
    }

    fn skip_to_line_end(&mut self) {
        self.pos = match self.text.get(self.pos..).and_then(|rest| rest.find('\n')) {
            Some(n) => self.pos + n,
            None => self.bytes.len(),
        };
    }

    /// After a newline: is the next line blank (a paragraph break)?
    fn at_blank_line(&self) -> bool {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        rest.iter()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r'))
            .is_some_and(|&b| b == b'\n')
    }

    fn paragraph_break(&mut self) {
        if let Some((math, start)) = self.dollar
            && math == Math::Dollar
        {
            self.findings.push(Finding::error(
                start,
                "unbalanced `$`: inline math opened here is still open at the paragraph break",
            ));
            self.dollar = None;
        }
        if let Some(start) = self.paren_math.take() {
            self.findings.push(Finding::error(
                start,
                "`\\(` opened here is not closed by `\\)` before the paragraph break",
            ));
        }
    }

    fn dollar_sign(&mut self) {
        let double = self.bytes.get(self.pos + 1) == Some(&b'$');
        let kind = if double {
            Math::DoubleDollar
        } else {
            Math::Dollar
        };
        match self.dollar {
            None => self.dollar = Some((kind, self.pos)),
            Some((open, _)) if open == kind => self.dollar = None,
            Some((open, start)) => {
                let (opened, closed) = match open {
                    Math::Dollar => ("$", "$$"),
                    Math::DoubleDollar => ("$$", "$"),
                };
                self.findings.push(Finding::error(
                    self.pos,
                    format!(
                        "`{closed}` cannot close the `{opened}` math opened on line {}",
                        self.line_of(start)
                    ),
                ));
                self.dollar = None;
            }
        }
        self.pos += if double { 2 } else { 1 };
    }

    /// Handles the command at `self.pos` (a backslash). Returns true at `\end{document}`.
    fn command(&mut self) -> bool {
        let start = self.pos;
        let name_start = start + 1;
        let name_len = self
            .bytes
            .get(name_start..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_alphabetic() || **b == b'@')
            .count();
        if name_len == 0 {
            self.control_symbol(start);
            return false;
        }
        let name = self
            .text
            .get(name_start..name_start + name_len)
            .unwrap_or("");
        self.pos = name_start + name_len;
        match name {
            "begin" => self.begin(start),
            "end" => return self.end(start),
            "documentclass" => self.saw_documentclass = true,
            "usepackage" | "maketitle" | "title" | "author" => self.looks_like_document = true,
            "verb" | "lstinline" | "mintinline" => self.inline_verbatim(start, name),
            "url" | "href" | "path" => self.raw_argument(start, name),
            "iffalse" => self.skip_iffalse(start),
            _ => {
                if DEFINERS.contains(&name) {
                    self.definition();
                } else if let Some(&(_, meant)) = TYPOS.iter().find(|(typo, _)| *typo == name) {
                    self.typos.push((name, meant, start));
                }
            }
        }
        false
    }

    /// `\` followed by one non-letter: `\%`, `\{`, `\$`, `\\` and `\(`, `\)`, `\[`, `\]`.
    fn control_symbol(&mut self, start: usize) {
        let Some(&symbol) = self.bytes.get(start + 1) else {
            self.pos = start + 1;
            return;
        };
        self.pos = start + 2;
        match symbol {
            b'(' => self.open_math(start, Delim::Paren),
            b')' => self.close_math(start, Delim::Paren),
            b'[' => self.open_math(start, Delim::Bracket),
            b']' => self.close_math(start, Delim::Bracket),
            _ => {}
        }
    }

    /// `\(` or `\[`: a second opener before the closer is an error naming the first.
    fn open_math(&mut self, start: usize, d: Delim) {
        if let Some(open) = self.math_slot(d).replace(start) {
            let (opener, what) = d.names();
            self.findings.push(Finding::error(
                start,
                format!(
                    "`\\{opener}` inside {what} already opened by `\\{opener}` on line {}",
                    self.line_of(open)
                ),
            ));
        }
    }

    /// `\)` or `\]`: a closer without its opener is an error.
    fn close_math(&mut self, start: usize, d: Delim) {
        if self.math_slot(d).take().is_none() {
            let (opener, _) = d.names();
            let closer = d.closer();
            self.findings.push(Finding::error(
                start,
                format!("`\\{closer}` without a matching `\\{opener}`"),
            ));
        }
    }

    fn math_slot(&mut self, d: Delim) -> &mut Option<usize> {
        match d {
            Delim::Paren => &mut self.paren_math,
            Delim::Bracket => &mut self.bracket_math,
        }
    }

    /// Reads `{name}` after `\begin` or `\end`, skipping spaces; `None` if there is no such group.
    fn environment_name(&mut self) -> Option<&'a str> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let spaces = rest
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        if rest.get(spaces) != Some(&b'{') {
            return None;
        }
        let name_start = self.pos + spaces + 1;
        let name_len = self
            .bytes
            .get(name_start..)
            .unwrap_or_default()
            .iter()
            .take(128)
            .take_while(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'*' | b'@' | b':' | b'-' | b'_' | b' ')
            })
            .count();
        if self.bytes.get(name_start + name_len) != Some(&b'}') || name_len == 0 {
            return None;
        }
        self.pos = name_start + name_len + 1;
        self.text.get(name_start..name_start + name_len)
    }

    fn begin(&mut self, start: usize) {
        let Some(name) = self.environment_name() else {
            self.findings.push(Finding::error(
                start,
                "`\\begin` must be followed by an environment name in braces, as `\\begin{itemize}`",
            ));
            return;
        };
        if name == "document" {
            self.saw_begin_document = true;
        }
        if VERBATIM_ENVIRONMENTS.contains(&name) {
            let closing = format!("\\end{{{name}}}");
            match self
                .text
                .get(self.pos..)
                .and_then(|rest| rest.find(&closing))
            {
                Some(n) => self.pos += n + closing.len(),
                None => {
                    self.findings.push(Finding::error(
                        start,
                        format!("`\\begin{{{name}}}` is never closed by `{closing}`"),
                    ));
                    self.pos = self.bytes.len();
                }
            }
            return;
        }
        self.environments.push(name, start);
    }

    fn end(&mut self, start: usize) -> bool {
        let Some(name) = self.environment_name() else {
            self.findings.push(Finding::error(
                start,
                "`\\end` must be followed by an environment name in braces, as `\\end{itemize}`",
            ));
            return false;
        };
        match self.environments.close(name) {
            Some(inside) => {
                // Everything opened after the matching \begin was left open.
                for (open, open_start) in inside {
                    self.findings.push(Finding::error(
                        open_start,
                        format!(
                            "`\\begin{{{open}}}` is not closed before `\\end{{{name}}}` on line {}",
                            self.line_of(start)
                        ),
                    ));
                }
            }
            None => {
                let message = match self.environments.last() {
                    Some((open, open_start)) => format!(
                        "`\\end{{{name}}}` does not match the open `\\begin{{{open}}}` from line {}",
                        self.line_of(*open_start)
                    ),
                    None => format!("`\\end{{{name}}}` without a matching `\\begin{{{name}}}`"),
                };
                self.findings.push(Finding::error(start, message));
            }
        }
        name == "document" && self.environments.is_empty()
    }

    /// `\verb|text|`, `\verb*|text|`, `\lstinline{text}`: the text is skipped, up to the line end.
    fn inline_verbatim(&mut self, start: usize, name: &str) {
        if self.bytes.get(self.pos) == Some(&b'*') {
            self.pos += 1;
        }
        if name != "verb" && self.bytes.get(self.pos) == Some(&b'[') {
            // \lstinline[options]{...}: skip the options.
            let rest = self.text.get(self.pos..).unwrap_or("");
            if let Some(n) = rest.find(']') {
                self.pos += n + 1;
            }
        }
        if name == "mintinline" && self.bytes.get(self.pos) == Some(&b'{') {
            let rest = self.text.get(self.pos..).unwrap_or("");
            if let Some(n) = rest.find('}') {
                self.pos += n + 1;
            }
        }
        let Some(delimiter) = self
            .text
            .get(self.pos..)
            .and_then(|rest| rest.chars().next())
        else {
            return;
        };
        if delimiter.is_whitespace() && name == "verb" {
            self.findings.push(Finding::error(
                start,
                "`\\verb` needs a delimiter, as `\\verb|text|`",
            ));
            return;
        }
        let closing = if delimiter == '{' { '}' } else { delimiter };
        let body_start = self.pos + delimiter.len_utf8();
        let rest = self.text.get(body_start..).unwrap_or("");
        let line = rest.split('\n').next().unwrap_or("");
        match line.find(closing) {
            Some(n) => self.pos = body_start + n + closing.len_utf8(),
            None => {
                self.findings.push(Finding::error(
                    start,
                    format!("`\\{name}` text is not closed by `{closing}` on the same line"),
                ));
                self.pos = body_start + line.len();
            }
        }
    }

    /// `\url{...}`: the argument is not TeX (`%` and `#` are literal), but braces still nest. It
    /// must close on its own line.
    fn raw_argument(&mut self, start: usize, name: &str) {
        if self.bytes.get(self.pos) != Some(&b'{') {
            return;
        }
        let open = self.pos;
        let mut depth = 0usize;
        for (i, &b) in self
            .bytes
            .get(open..)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = open + i + 1;
                        return;
                    }
                }
                b'\n' => {
                    self.pos = open + i;
                    break;
                }
                _ => {}
            }
            self.pos = open + i + 1;
        }
        self.findings.push(Finding::error(
            start,
            format!("the argument of `\\{name}` is not closed by `}}` on its line"),
        ));
    }

    /// `\iffalse ... \fi` is the conventional block comment.
    fn skip_iffalse(&mut self, start: usize) {
        let rest = self.text.get(self.pos..).unwrap_or("");
        let fi = rest.match_indices("\\fi").find(|(n, _)| {
            !rest
                .as_bytes()
                .get(n + 3)
                .is_some_and(u8::is_ascii_alphabetic)
        });
        match fi {
            Some((n, _)) => self.pos += n + 3,
            None => {
                self.findings.push(Finding::warning(
                    start,
                    "`\\iffalse` without a closing `\\fi`",
                ));
                self.pos = self.bytes.len();
            }
        }
    }

    /// After `\newcommand` and friends: record the command being defined.
    fn definition(&mut self) {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let mut i = rest
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'*'))
            .count();
        if rest.get(i) == Some(&b'{') {
            i += 1;
        }
        if rest.get(i) != Some(&b'\\') {
            return;
        }
        let name_start = self.pos + i + 1;
        let len = self
            .bytes
            .get(name_start..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_alphabetic() || **b == b'@')
            .count();
        if let Some(name) = self.text.get(name_start..name_start + len) {
            self.defined.insert(name);
        }
        // Only the name is consumed: a `{` before it is skipped, so the matching `}` must be too.
        self.pos = name_start + len;
        if rest.get(..i).is_some_and(|skipped| skipped.ends_with(b"{"))
            && self.bytes.get(self.pos) == Some(&b'}')
        {
            self.pos += 1;
        }
    }

    fn finish(mut self) -> Vec<Finding> {
        for (typo, meant, offset) in std::mem::take(&mut self.typos) {
            if !self.defined.contains(typo) {
                self.findings.push(Finding::error(
                    offset,
                    format!("`\\{typo}` is not a LaTeX command; did you mean `\\{meant}`?"),
                ));
            }
        }
        for offset in std::mem::take(&mut self.braces) {
            self.findings
                .push(Finding::error(offset, "unmatched `{`: never closed"));
        }
        for (name, offset) in std::mem::take(&mut self.environments).into_open() {
            self.findings.push(Finding::error(
                offset,
                format!("`\\begin{{{name}}}` is never closed by `\\end{{{name}}}`"),
            ));
        }
        if let Some((math, offset)) = self.dollar {
            let sign = if math == Math::Dollar { "$" } else { "$$" };
            self.findings.push(Finding::error(
                offset,
                format!("unbalanced `{sign}`: math opened here is never closed"),
            ));
        }
        if let Some(offset) = self.paren_math {
            self.findings.push(Finding::error(
                offset,
                "`\\(` opened here is never closed by `\\)`",
            ));
        }
        if let Some(offset) = self.bracket_math {
            self.findings.push(Finding::error(
                offset,
                "`\\[` opened here is never closed by `\\]`",
            ));
        }
        let full_document =
            self.looks_like_document || self.saw_documentclass || self.saw_begin_document;
        if full_document && !self.saw_documentclass {
            self.findings.push(Finding::warning(
                0,
                "looks like a whole document but has no `\\documentclass`",
            ));
        }
        if full_document && !self.saw_begin_document {
            self.findings.push(Finding::warning(
                0,
                "looks like a whole document but has no `\\begin{document}`",
            ));
        }
        self.findings
    }
}

/// The two LaTeX math delimiter pairs written with a backslash.
#[derive(Clone, Copy)]
enum Delim {
    /// `\(` ... `\)`: inline math.
    Paren,
    /// `\[` ... `\]`: display math.
    Bracket,
}

impl Delim {
    /// The opener's character and the kind of math it opens.
    fn names(self) -> (char, &'static str) {
        match self {
            Delim::Paren => ('(', "math"),
            Delim::Bracket => ('[', "display math"),
        }
    }

    fn closer(self) -> char {
        match self {
            Delim::Paren => ')',
            Delim::Bracket => ']',
        }
    }
}
