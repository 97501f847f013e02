//! Building a [`Classifier`]: the built-in rules minus the disabled families plus the operator's
//! rules, each regex compiled once (the operator's when the policy loads, so a bad one is
//! reported then; a built-in one on its first use, shared by clones: a scan of a few small files,
//! the pre-commit path, wakes a handful of rules, and compiling every regex up front was most of
//! its time), every rule keyword in one Aho-Corasick automaton (with what a
//! keyword hit wakes up), the scanners and rules without keywords listed apart, and the family
//! weights and verdict cut-offs. Everything here runs once per policy, never per draft.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use regex_automata::util::captures::Captures;
use regex_automata::util::syntax;
use regex_automata::{Input, Match, PatternID, meta};

use super::config::{PatternSpec, Thresholds};
use super::keywords::Keywords;
use super::rules;
use super::spec::{self, Check, Gate, Scanner, Tier, Window};
use super::{DEFAULT_CUSTOM_WEIGHT, DEFAULT_WEIGHTS, EXAMPLE_FAMILY};

#[derive(Clone)]
pub(super) struct CompiledRule {
    pub(super) name: String,
    pub(super) family: String,
    pub(super) tier: Tier,
    pub(super) check: Check,
    pub(super) window: Window,
    pub(super) regex: Option<RuleRegex>,
    /// The regex needs an assignment operator (`=` or `:`) in the window.
    pub(super) needs_assign: bool,
    /// What a keyword hit must have around it to wake this rule.
    pub(super) gate: Gate,
    /// A built-in rule whose groups follow from its match span: a capture search runs only
    /// when they do not.
    pub(super) derive: Derive,
    /// The rule's only keyword has no letter (so its case does not matter) and cannot overlap
    /// itself: its hits are found by `memchr`/`memmem` as well as by the keyword scan, so a
    /// draft scanned on two threads runs the rule on the scanners' thread
    /// ([`Classifier::literal_keyed`]).
    pub(super) literal_key: bool,
}

/// How the scan finds a rule's capture groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Derive {
    /// A capture search.
    Captures,
    /// From the span of the generic assignment rule's match (`derive::assignment_groups`).
    Assignment,
    /// From the span of the URL userinfo rule's match (`derive::userinfo_groups`).
    Userinfo,
    /// From the span of the prose rule's match (`derive::prose_groups`).
    Prose,
    /// From the span of a redacted-prefix rule's match (`derive::redacted_groups`), the rule
    /// of `prefixes::REDACTABLE_PREFIXES[i]`.
    Redacted(usize),
}

/// A rule's regex, compiled on first use; clones share the compiled regex.
#[derive(Clone)]
pub(super) struct RuleRegex {
    pattern: Arc<str>,
    unicode: bool,
    /// Searched over whole drafts (no keyword wakes it): worth a literal prefilter.
    prefilter: bool,
    /// The regex and its capture groups; `None` when it does not compile.
    compiled: Arc<OnceLock<Option<(Regex, Slots)>>>,
}

/// Indices of the named capture groups the checks read, looked up once per regex (by name per
/// match, the lookup hashed every name of every match).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Slots {
    /// The regex has capture groups at all.
    pub(super) any: bool,
    pub(super) s: Option<usize>,
    pub(super) s2: Option<usize>,
    pub(super) secret: Option<usize>,
    pub(super) k: Option<usize>,
    pub(super) u: Option<usize>,
    pub(super) d: Option<usize>,
}

impl Slots {
    fn of(regex: &Regex) -> Slots {
        let mut slots = Slots {
            any: regex.0.captures_len() > 1,
            ..Slots::default()
        };
        for (i, name) in regex
            .0
            .group_info()
            .pattern_names(PatternID::ZERO)
            .enumerate()
        {
            let slot = match name {
                Some("s") => &mut slots.s,
                Some("s2") => &mut slots.s2,
                Some("secret") => &mut slots.secret,
                Some("k") => &mut slots.k,
                Some("u") => &mut slots.u,
                Some("d") => &mut slots.d,
                _ => continue,
            };
            *slot = Some(i);
        }
        slots
    }
}

/// A rule's compiled regex, with the searches the scan makes (those of
/// `regex::bytes::Regex`, which wraps the same engine).
pub(super) struct Regex(meta::Regex);

/// The capture groups of a rule's last capture search, reused search after search.
pub(super) struct Locations(Captures);

impl Regex {
    /// The leftmost-first match in `hay` starting at `at` or later (the bytes before `at`
    /// still count for `^`, `$` and word boundaries).
    pub(super) fn find_at(&self, hay: &[u8], at: usize) -> Option<Match> {
        self.0.find(Input::new(hay).range(at..))
    }

    /// Every non-overlapping match in `hay`.
    pub(super) fn find_iter<'r, 'h>(
        &'r self,
        hay: &'h [u8],
    ) -> impl Iterator<Item = Match> + use<'r, 'h> {
        self.0.find_iter(hay)
    }

    /// Room for the groups of one capture search.
    pub(super) fn capture_locations(&self) -> Locations {
        Locations(self.0.create_captures())
    }

    /// Like [`Regex::find_at`], filling `locs` with the match's groups.
    pub(super) fn captures_read_at(
        &self,
        locs: &mut Locations,
        hay: &[u8],
        at: usize,
    ) -> Option<Match> {
        self.0
            .search_captures(&Input::new(hay).range(at..), &mut locs.0);
        locs.0.get_match()
    }
}

impl Locations {
    /// Group `i` of the last match, as a span of the searched haystack.
    pub(super) fn get(&self, i: usize) -> Option<(usize, usize)> {
        self.0.get_group(i).map(|s| (s.start, s.end))
    }
}

/// The groups of one capture search, by index or name (the tests' view).
#[cfg(test)]
pub(super) struct TestCaptures(Captures);

/// One group of a [`TestCaptures`].
#[cfg(test)]
pub(super) struct Group(regex_automata::Span);

#[cfg(test)]
impl Group {
    pub(super) fn range(&self) -> std::ops::Range<usize> {
        self.0.range()
    }
    pub(super) fn start(&self) -> usize {
        self.0.start
    }
    pub(super) fn end(&self) -> usize {
        self.0.end
    }
}

#[cfg(test)]
impl TestCaptures {
    pub(super) fn get(&self, i: usize) -> Option<Group> {
        self.0.get_group(i).map(Group)
    }
    pub(super) fn name(&self, name: &str) -> Option<Group> {
        self.0.get_group_by_name(name).map(Group)
    }
}

#[cfg(test)]
impl Regex {
    /// The groups of the leftmost-first match starting at `at` or later.
    pub(super) fn captures_at(&self, hay: &[u8], at: usize) -> Option<TestCaptures> {
        let mut caps = self.0.create_captures();
        self.0
            .search_captures(&Input::new(hay).range(at..), &mut caps);
        caps.is_match().then_some(TestCaptures(caps))
    }
}

/// Compiles a rule's regex as `regex::bytes::RegexBuilder` does (leftmost-first, bytes that
/// need not be UTF-8, empty matches anywhere, the size limits of before), less two parts the
/// scan never uses: the one-pass DFA, which only anchored capture searches run (the scan's are
/// unanchored), and, for a rule a keyword wakes (`prefilter` false: it is searched only in the
/// windows around its hits), the literal prefilter. On the built-in rules those two were a
/// third of the compile time, and a scan of a few files spends most of its time compiling the
/// rules they wake.
pub(super) fn build_regex(pattern: &str, unicode: bool, prefilter: bool) -> Result<Regex, String> {
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .utf8_empty(false)
                .nfa_size_limit(Some(1 << 23))
                .hybrid_cache_capacity(1 << 23)
                .onepass(false)
                .auto_prefilter(prefilter),
        )
        .syntax(syntax::Config::new().unicode(unicode).utf8(false))
        .build(pattern)
        .map(Regex)
        .map_err(|e| regex_error_text(&e))
}

/// The text `regex::Error` shows for a build error (the syntax error's own text, or the size
/// limit), so a policy's invalid rule reads as it did.
fn regex_error_text(e: &meta::BuildError) -> String {
    if let Some(limit) = e.size_limit() {
        format!("Compiled regex exceeds size limit of {limit} bytes.")
    } else if let Some(syntax) = e.syntax_error() {
        syntax.to_string()
    } else {
        e.to_string()
    }
}

impl RuleRegex {
    fn lazy(pattern: &str, unicode: bool, prefilter: bool) -> RuleRegex {
        RuleRegex {
            pattern: pattern.into(),
            unicode,
            prefilter,
            compiled: Arc::new(OnceLock::new()),
        }
    }

    fn compiled(pattern: &str, unicode: bool, prefilter: bool, regex: Regex) -> RuleRegex {
        let slots = Slots::of(&regex);
        RuleRegex {
            pattern: pattern.into(),
            unicode,
            prefilter,
            compiled: Arc::new(OnceLock::from(Some((regex, slots)))),
        }
    }

    /// Whether the regex has been compiled.
    #[cfg(test)]
    fn is_compiled(&self) -> bool {
        self.compiled.get().is_some()
    }

    /// The regex and its capture groups, compiled now if it was not. `None` only for a regex
    /// that does not compile: never a built-in one (`builtin_rules_compile`), and an operator's
    /// is compiled when the policy loads.
    pub(super) fn get(&self) -> Option<(&Regex, Slots)> {
        self.compiled
            .get_or_init(|| {
                build_regex(&self.pattern, self.unicode, self.prefilter)
                    .ok()
                    .map(|r| {
                        let slots = Slots::of(&r);
                        (r, slots)
                    })
            })
            .as_ref()
            .map(|(r, g)| (r, *g))
    }
}

/// A rule a keyword hit wakes up.
#[derive(Clone)]
pub(super) struct KeywordRule {
    pub(super) rule: usize,
    /// The keyword can only matter at the start of a token.
    pub(super) at_start: bool,
    /// The keyword's exact bytes when the rule is case-sensitive (the automaton is not).
    pub(super) exact: Option<Box<[u8]>>,
}

/// The compiled rules of a policy; build once (`Policy::compile`) and reuse. Cloning is
/// cheap (compiled automata are shared), for work that outlives a borrow (a streaming compose).
#[derive(Clone)]
pub struct Classifier {
    pub(super) rules: Vec<CompiledRule>,
    /// Every rule's keywords in one ASCII case-insensitive DFA: one pass over the content, its
    /// transitions followed by the scan's own loop through a dense table
    /// (`keywords::Keywords::hits`). Shared by clones.
    pub(super) keywords: Option<Arc<Keywords>>,
    /// The rules of each keyword of `keywords`, by pattern id.
    pub(super) keyword_rules: Vec<Vec<KeywordRule>>,
    /// The rules whose only keyword is a literal, with it ([`CompiledRule::literal_key`]).
    pub(super) literal_keyed: Vec<(Box<[u8]>, KeywordRule)>,
    pub(super) unkeyed: Vec<usize>,
    pub(super) scanners: Vec<(Scanner, usize)>,
    pub(super) weights: BTreeMap<String, f64>,
    pub(super) thresholds: Thresholds,
    /// Whether vendors' documentation examples are reported (as `example_key`); a policy turns
    /// it off with `disable_families: [example_key]`.
    pub(super) report_examples: bool,
    /// Whether keyword hits go through their rule's [`Gate`] (always, but in the test that
    /// shows the gates lose no finding).
    pub(super) gates: bool,
    /// Drafts at least this long run the scanners and the literal-keyed rules on a second
    /// thread ([`SPLIT_MIN`]; `usize::MAX`: never, [`Classifier::on_one_thread`]).
    pub(super) split_min: usize,
}

/// Drafts of at least this many bytes are scanned on two threads by default. The second
/// thread has a fixed cost (its spawn, the wake of an idle CPU, the join), so it pays only once
/// the scan on one thread costs a few times that: ordinary source reaches that point around
/// this size, Markdown with many URLs and secret-dense text sooner; below it the split makes
/// ordinary source slower. Measure with `l0_bench` and `RW_L0_SPLIT` (why:
/// `docs/decisions/0040-l0-two-threads-for-a-long-draft.md`; the runs behind this value:
/// `docs/performance-log.md`, "L0 speed, step by step").
pub const SPLIT_MIN: usize = 128 * 1024;

impl std::fmt::Debug for Classifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classifier")
            .field("rules", &self.rules.len())
            .field("weights", &self.weights)
            .field("thresholds", &self.thresholds)
            .finish()
    }
}

impl Default for Classifier {
    fn default() -> Self {
        // The built-in rules are constants of this crate; failing to compile them is a bug caught
        // by `builtin_rules_compile`.
        #[allow(clippy::expect_used)]
        Classifier::build(&[], &[], BTreeMap::new(), Thresholds::default())
            .expect("built-in L0 rules compile")
    }
}

/// A keyword found as plainly by `memchr::memmem` as by the keyword scan: no letter (the scan
/// ignores case) and no overlap with itself (the scan reports overlapping hits, `memmem` does
/// not): no proper prefix is also a suffix.
fn is_plain_literal(kw: &[u8]) -> bool {
    !kw.is_empty()
        && !kw.iter().any(u8::is_ascii_alphabetic)
        && (1..kw.len()).all(|k| kw[..k] != kw[kw.len() - k..])
}

pub(super) fn build_ac(words: &[String]) -> Option<Arc<Keywords>> {
    if words.is_empty() {
        return None;
    }
    Keywords::new(words).map(Arc::new)
}

/// A rule whose regex does not compile: its name, the policy line of its `regex` (0 when unknown)
/// and the last line of the regex error. The policy turns it into its `InvalidRegex` error.
#[derive(Debug)]
pub(crate) struct InvalidRule {
    pub(crate) name: String,
    pub(crate) line: u64,
    pub(crate) message: String,
}

impl Classifier {
    /// Compiles the built-in rules (minus `disable_families`) and the operator's `extend_patterns`,
    /// with the family weights of `weight_overrides` and the verdict cut-offs `thresholds`.
    pub(crate) fn build(
        disable_families: &[String],
        extend_patterns: &[PatternSpec],
        weight_overrides: BTreeMap<String, f64>,
        thresholds: Thresholds,
    ) -> Result<Classifier, InvalidRule> {
        let disabled: BTreeSet<&str> = disable_families.iter().map(String::as_str).collect();
        let mut specs: Vec<spec::RuleSpec> = rules::builtin()
            .into_iter()
            .filter(|r| !disabled.contains(r.family.as_str()))
            .collect();
        let custom_start = specs.len();
        for p in extend_patterns {
            if disabled.contains(p.family.as_str()) {
                continue;
            }
            specs.push(spec::RuleSpec {
                name: p.name.clone(),
                family: p.family.clone(),
                keywords: Vec::new(),
                case_sensitive: false,
                regex: p.regex.clone(),
                check: Check::None,
                window: Window::Line,
                tier: Tier::Vendor,
                scanner: None,
                gate: Gate::None,
            });
        }
        let mut rules = Vec::with_capacity(specs.len());
        let mut words = Vec::<String>::new();
        let mut keyword_rules = Vec::<Vec<KeywordRule>>::new();
        let mut literal_keyed = Vec::new();
        let mut unkeyed = Vec::new();
        let mut scanners = Vec::new();
        for (idx, spec) in specs.into_iter().enumerate() {
            let regex = if spec.regex.is_empty() {
                None
            } else {
                let custom = idx >= custom_start;
                let prefilter = spec.keywords.is_empty();
                if !custom {
                    Some(RuleRegex::lazy(&spec.regex, false, prefilter))
                } else {
                    match build_regex(&spec.regex, true, prefilter) {
                        Ok(r) => Some(RuleRegex::compiled(&spec.regex, true, prefilter, r)),
                        Err(e) => {
                            let line = extend_patterns
                                .iter()
                                .find(|p| p.name == spec.name)
                                .and_then(|p| p.line)
                                .unwrap_or(0);
                            return Err(InvalidRule {
                                line,
                                name: spec.name,
                                message: e
                                    .to_string()
                                    .lines()
                                    .last()
                                    .unwrap_or("")
                                    .trim()
                                    .to_string(),
                            });
                        }
                    }
                }
            };
            if let Some(s) = spec.scanner {
                scanners.push((s, idx));
            } else if spec.keywords.is_empty() {
                unkeyed.push(idx);
            }
            let literal_key = match spec.keywords.as_slice() {
                [kw] => is_plain_literal(kw.as_bytes()),
                _ => false,
            };
            for kw in &spec.keywords {
                let w = kw.to_ascii_lowercase();
                let hit = KeywordRule {
                    rule: idx,
                    at_start: keyword_starts_token(&spec.regex, &w),
                    exact: spec
                        .case_sensitive
                        .then(|| kw.as_bytes().to_vec().into_boxed_slice()),
                };
                if literal_key {
                    literal_keyed.push((kw.as_bytes().into(), hit.clone()));
                }
                match words.iter().position(|x| *x == w) {
                    Some(p) => keyword_rules[p].push(hit),
                    None => {
                        words.push(w);
                        keyword_rules.push(vec![hit]);
                    }
                }
            }
            let needs_assign = spec.regex.contains("(?::=|=>");
            let derive = match spec.name.as_str() {
                rules::ASSIGNMENT_RULE if idx < custom_start => Derive::Assignment,
                rules::USERINFO_RULE if idx < custom_start => Derive::Userinfo,
                rules::PROSE_RULE if idx < custom_start => Derive::Prose,
                name if idx < custom_start && spec.check == Check::Redacted => {
                    super::prefixes::redactable_index(name)
                        .map_or(Derive::Captures, Derive::Redacted)
                }
                _ => Derive::Captures,
            };
            rules.push(CompiledRule {
                name: spec.name,
                family: spec.family,
                tier: spec.tier,
                check: spec.check,
                window: spec.window,
                regex,
                needs_assign,
                gate: spec.gate,
                derive,
                literal_key,
            });
        }
        let mut weights: BTreeMap<String, f64> = DEFAULT_WEIGHTS
            .iter()
            .map(|(f, w)| ((*f).to_string(), *w))
            .collect();
        for r in &rules {
            weights
                .entry(r.family.clone())
                .or_insert(DEFAULT_CUSTOM_WEIGHT);
        }
        weights.extend(weight_overrides);
        Ok(Classifier {
            rules,
            keywords: build_ac(&words),
            keyword_rules,
            literal_keyed,
            unkeyed,
            scanners,
            weights,
            thresholds,
            report_examples: !disabled.contains(EXAMPLE_FAMILY),
            gates: true,
            split_min: SPLIT_MIN,
        })
    }

    /// This classifier with every draft scanned on the calling thread. By default a draft of
    /// at least [`SPLIT_MIN`] bytes has its scanners (numbers, Discord tokens, binary hints)
    /// and the rules keyed by `@` and `://` run on a second thread while the calling one runs
    /// the keyword scan and the other rules: the same findings, sooner when a second CPU is
    /// free. For callers that scan many drafts at once on every CPU already, for processes
    /// that score once and exit (the thread's start, in a fresh process, cost more than it
    /// saved), and for the benchmark's one-thread figure.
    pub fn on_one_thread(self) -> Classifier {
        self.split_from(usize::MAX)
    }

    /// This classifier with drafts of at least `bytes` bytes scanned on two threads, instead
    /// of from [`SPLIT_MIN`]: lower where spawning a thread is cheaper than on the machine
    /// the default was measured on, `usize::MAX` for [`Classifier::on_one_thread`].
    pub fn split_from(mut self, bytes: usize) -> Classifier {
        self.split_min = bytes;
        self
    }

    /// Whether every draft is scanned on the calling thread ([`Classifier::on_one_thread`]).
    pub fn is_on_one_thread(&self) -> bool {
        self.split_min == usize::MAX
    }

    /// How many rule regexes have been compiled so far (they compile on first use).
    #[cfg(test)]
    fn compiled_regexes(&self) -> usize {
        self.rules
            .iter()
            .filter(|r| r.regex.as_ref().is_some_and(RuleRegex::is_compiled))
            .count()
    }

    /// `(rule, family)` of every active rule, in precedence order.
    pub fn rules(&self) -> impl Iterator<Item = (&str, &str)> {
        self.rules
            .iter()
            .map(|r| (r.name.as_str(), r.family.as_str()))
    }

    /// Names of the built-in rules that each detect one credential format.
    pub fn credential_formats() -> Vec<String> {
        rules::credential_rule_names()
    }
}

/// Whether every match of `regex` puts `keyword` (lowercase) at the start of a token that
/// `spec::BEGIN` delimits: the regex is `BEGIN(?P<s>LITERAL...` and the literal begins with the
/// keyword. Then a hit preceded by a token byte can never start a match and is skipped.
fn keyword_starts_token(regex: &str, keyword: &str) -> bool {
    let Some(body) = regex
        .strip_prefix(spec::BEGIN)
        .and_then(|r| r.strip_prefix("(?P<s>"))
    else {
        return false;
    };
    let mut literal = String::new();
    let mut chars = body.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => match chars.next() {
                Some(e) if e.is_ascii_punctuation() => literal.push(e),
                _ => break,
            },
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '~' => literal.push(c),
            '?' | '*' | '{' => {
                // the quantifier makes the last literal character optional
                literal.pop();
                break;
            }
            _ => break,
        }
    }
    !keyword.is_empty()
        && literal
            .to_ascii_lowercase()
            .starts_with(&keyword.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::testing::{ALNUM, patterns, synth};
    use crate::classify::{risk_score, rules};

    #[test]
    fn builtin_rules_compile() {
        // built-in regexes compile on first use: every one of them must compile
        let c = Classifier::default();
        for r in &c.rules {
            if let Some(re) = &r.regex {
                assert!(re.get().is_some(), "{} does not compile", r.name);
            }
        }
    }

    #[test]
    fn keyword_hit_filter_only_applies_where_the_keyword_starts_every_match() {
        let rules = rules::builtin();
        let regex_of = |name: &str| {
            rules
                .iter()
                .find(|r| r.name == name)
                .map(|r| r.regex.clone())
                .unwrap()
        };
        assert!(keyword_starts_token(
            &regex_of("github_classic_pat"),
            "ghp_"
        ));
        assert!(keyword_starts_token(&regex_of("sendgrid_api_key"), "SG."));
        assert!(keyword_starts_token(
            &regex_of("datadog_client_token"),
            "pub"
        ));
        // the keyword sits inside the token, or the literal is shorter than the keyword
        assert!(!keyword_starts_token(&regex_of("mailchimp_api_key"), "-us"));
        assert!(!keyword_starts_token(
            &regex_of("stripe_secret_key"),
            "sk_live_"
        ));
        assert!(!keyword_starts_token(
            &regex_of("aws_access_key_id"),
            "akia"
        ));
        assert!(!keyword_starts_token(
            &regex_of("generic_secret_assignment"),
            "token"
        ));
    }

    /// Built-in regexes compile on first use, and only those a keyword woke: scoring ordinary code
    /// compiles none (but the rules without keywords), a GitHub token compiles its rule, and most
    /// of the table is never compiled (the pre-commit path over a few files pays for a handful).
    #[test]
    fn builtin_regexes_compile_only_when_a_keyword_wakes_them() {
        let c = Classifier::default();
        let total = c.rules.iter().filter(|r| r.regex.is_some()).count();
        assert!(total > 100, "{total}");
        assert_eq!(c.compiled_regexes(), 0);
        risk_score(
            "fn main() {\n    let total: u64 = (1..=100).sum();\n}\n",
            &c,
        );
        assert_eq!(c.compiled_regexes(), c.unkeyed.len());
        let before = c.compiled_regexes();
        let text = format!("token = {}\n", synth("ghp_", ALNUM, 36));
        assert!(patterns(&text).contains(&"github_classic_pat".to_string()));
        risk_score(&text, &c);
        let github = c
            .rules
            .iter()
            .position(|r| r.name == "github_classic_pat")
            .unwrap();
        assert!(
            c.rules[github]
                .regex
                .as_ref()
                .is_some_and(|r| r.is_compiled())
        );
        let after = c.compiled_regexes();
        assert!(after > before && after < before + 8, "{before} -> {after}");
        // clones share what was compiled
        assert_eq!(c.clone().compiled_regexes(), after);
    }

    #[test]
    fn at_least_sixty_credential_formats_are_built_in() {
        let n = Classifier::credential_formats().len();
        assert!(n >= 60, "{n}");
    }

    /// An operator's rule that does not compile is reported in the words of the `regex` crate,
    /// as before the rules were built through its engine directly: a syntax error's own text, or
    /// the size limit.
    #[test]
    fn an_invalid_custom_rule_reads_as_the_regex_crate_reports_it() {
        for pattern in [
            "acme_([",
            r"x\",
            "(?P<a>x)(?P<a>y)",
            r"\w{1000}{1000}",
            "a{4294967296}",
        ] {
            let ours = build_regex(pattern, true, true)
                .err()
                .unwrap_or_else(|| panic!("{pattern} compiled"));
            let theirs = regex::bytes::RegexBuilder::new(pattern)
                .unicode(true)
                .size_limit(1 << 23)
                .dfa_size_limit(1 << 23)
                .build()
                .unwrap_err()
                .to_string();
            assert_eq!(ours, theirs, "{pattern}");
        }
    }

    /// The literals found without the keyword scan have no letter and cannot overlap themselves;
    /// the email and URL userinfo rules are among the built-in rules keyed by one.
    #[test]
    fn plain_literal_keywords_are_letterless_and_overlap_free() {
        for yes in ["@", "://", "1//0", "-----BEGIN"] {
            assert_eq!(
                is_plain_literal(yes.as_bytes()),
                !yes.contains('B'),
                "{yes}"
            );
        }
        for no in ["", "aa", "--", "::", "/*/", "1//01", "@@"] {
            assert!(!is_plain_literal(no.as_bytes()), "{no}");
        }
        let c = Classifier::default();
        let keyed: Vec<&str> = c
            .literal_keyed
            .iter()
            .map(|(_, k)| c.rules[k.rule].name.as_str())
            .collect();
        for rule in ["email_address", "url_password"] {
            assert!(keyed.contains(&rule), "{keyed:?}");
        }
        assert!(
            c.rules
                .iter()
                .all(|r| r.literal_key == keyed.contains(&r.name.as_str()))
        );
    }
}
