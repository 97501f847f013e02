//! L0 false positives on real text: scores every UTF-8 file under the given directories (source
//! of well-known projects: the crate sources in `~/.cargo/registry/src`, the Python standard
//! library) and prints the share of files and the findings per MB at verdict >= medium, with the
//! rules that fired, and the share of files with any finding but personal data (low included).
//! Files over 1 MB, non-UTF-8 files and `site-packages` directories (third-party packages
//! beside the standard library) are skipped.
//!
//! Run: `cargo run --release --example l0_sweep -- ~/.cargo/registry/src "$(python3 -c 'import sysconfig;print(sysconfig.get_paths()["stdlib"])')" [--show N]`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use resilient_write_core::classify::{Classifier, Verdict, risk_score};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            // third-party packages installed beside the standard library are not part of it
            if e.file_name() != "site-packages" {
                walk(&e.path(), out);
            }
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let show = args
        .iter()
        .position(|a| a == "--show")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let dirs: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && (*i == 0 || args[i - 1] != "--show"))
        .map(|(_, a)| a)
        .collect();
    let c = Classifier::default();
    for d in dirs {
        let mut files = Vec::new();
        walk(Path::new(d), &mut files);
        files.sort();
        let (mut n, mut bytes, mut medium, mut findings) = (0usize, 0usize, 0usize, 0usize);
        let mut rules: BTreeMap<String, usize> = BTreeMap::new();
        // files with any finding but personal data, and the rules behind them
        let (mut flagged, mut flag_rules) = (0usize, BTreeMap::<String, usize>::new());
        let mut shown = 0;
        for f in &files {
            let Ok(meta) = std::fs::metadata(f) else {
                continue;
            };
            if meta.len() > 1_000_000 {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(f) else {
                continue;
            };
            n += 1;
            bytes += text.len();
            let r = risk_score(&text, &c);
            let flags: Vec<_> = r
                .detected_patterns
                .iter()
                .filter(|p| p.kind != "pii" && !p.kind.starts_with("pii_"))
                .collect();
            flagged += usize::from(!flags.is_empty());
            for p in flags {
                *flag_rules.entry(p.pattern.clone()).or_default() += 1;
            }
            if r.verdict >= Verdict::Medium {
                medium += 1;
                findings += r.detected_patterns.len();
                for p in &r.detected_patterns {
                    *rules
                        .entry(format!("{}/{}", p.kind, p.pattern))
                        .or_default() += 1;
                    if shown < show {
                        shown += 1;
                        let line = text.lines().nth(p.line as usize - 1).unwrap_or("");
                        let line: String = line.chars().take(160).collect();
                        println!(
                            "  {}:{} {} | {}",
                            f.display(),
                            p.line,
                            p.pattern,
                            line.trim()
                        );
                    }
                }
            }
        }
        let mb = bytes as f64 / 1e6;
        println!(
            "{d}: {n} files, {mb:.1} MB; >= medium: {medium} files ({:.3}%), {findings} findings ({:.2} per MB)",
            100.0 * medium as f64 / n.max(1) as f64,
            findings as f64 / mb.max(1e-9)
        );
        let mut top: Vec<_> = rules.into_iter().collect();
        top.sort_by_key(|t| std::cmp::Reverse(t.1));
        for (rule, k) in top.iter().take(15) {
            println!("    {rule} x{k}");
        }
        let mut top: Vec<_> = flag_rules.into_iter().collect();
        top.sort_by_key(|t| std::cmp::Reverse(t.1));
        let top: Vec<String> = top
            .iter()
            .take(8)
            .map(|(r, k)| format!("{r} x{k}"))
            .collect();
        println!(
            "  any finding but personal data: {flagged} files ({:.3}%): {}",
            100.0 * flagged as f64 / n.max(1) as f64,
            top.join(", ")
        );
    }
}
