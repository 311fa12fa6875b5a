//! Benchmark harness for the coverage readers: `evidence::read_json_mapped` (the
//! mapped file scanned by `gate::coverage::json::read_json_slice`, as `flakegate check`
//! reads it, without the hash), `read_json` (blocks) or `read_json_stream` (the previous
//! reader) by environment variable, and, for a coverage.py data file, `evidence::coverage_db::read_data_file`.
//!
//! ```text
//! cargo run --release --example coverage_stream -- COVERAGE_JSON|.coverage DIFF
//! ```
//!
//! Reads the file names of DIFF (its `+++ b/…` lines), reads the coverage
//! with a `PathMatcher` over them, and prints what it kept. See docs/performance.md.

use flakegate::evidence::coverage_db::read_data_file;
use flakegate::evidence::read_json_mapped;
use flakegate::gate::coverage::json::read_json;
use flakegate::gate::coverage::{KeepLines, PathMatcher};
use std::time::Instant;

/// The previous reader, test code the benchmark times beside the shipped ones.
#[path = "../tests/common/coverage_oracle.rs"]
mod coverage_oracle;
use coverage_oracle::read_json_stream;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [json, diff] = args.as_slice() else {
        eprintln!("usage: coverage_stream COVERAGE_JSON|.coverage DIFF");
        std::process::exit(2);
    };
    let diff_text = std::fs::read_to_string(diff).expect("read diff");
    let paths: Vec<&str> = diff_text
        .lines()
        .filter_map(|l| l.strip_prefix("+++ b/"))
        .map(|p| p.trim_end_matches('\r'))
        .collect();
    // The generators' hunks change one line each: `@@ -N +N @@` under `+++ b/PATH`.
    let mut changed: Vec<(String, u32)> = Vec::new();
    let mut current = String::new();
    for l in diff_text.lines() {
        if let Some(p) = l.strip_prefix("+++ b/") {
            current = p.trim_end_matches('\r').to_string();
        } else if let Some(rest) = l.strip_prefix("@@ -") {
            let new = rest.split(' ').nth(1).and_then(|n| n.strip_prefix('+'));
            if let Some(line) = new.and_then(|n| n.split(',').next()).and_then(|n| n.parse().ok()) {
                changed.push((current.clone(), line));
            }
        }
    }
    // Keep the witnesses of the changed lines only, as `flakegate check` does (with
    // FLAKEGATE_KEEP_ALL=1, of every line: the reader before issue 11 item 14).
    let mut keep: std::collections::BTreeMap<String, KeepLines> = std::collections::BTreeMap::new();
    for (p, line) in &changed {
        keep.entry(p.clone()).or_default().lines.insert(*line);
    }
    let matcher = PathMatcher::new(paths.iter().copied());
    let matcher = if std::env::var_os("FLAKEGATE_KEEP_ALL").is_some() {
        matcher
    } else {
        matcher.keeping(keep)
    };
    let start = Instant::now();
    let mut f = std::fs::File::open(json).expect("open the coverage file");
    let mut magic = [0u8; 16];
    let sqlite = std::io::Read::read_exact(&mut f, &mut magic).is_ok() && &magic == b"SQLite format 3\0";
    let read = if sqlite {
        read_data_file(std::path::Path::new(json), &matcher).map_err(|e| format!("{e:#}"))
    } else {
        let f = std::fs::File::open(json).expect("open the coverage file");
        // FLAKEGATE_PREVIOUS_READER=1: the reader before issue 12 (serde_json's reader path);
        // FLAKEGATE_BLOCK_READER=1: the block reader (what a pipe gets); by default the file
        // is mapped and scanned in place, as `flakegate check` does.
        if std::env::var_os("FLAKEGATE_PREVIOUS_READER").is_some() {
            read_json_stream(json, f, &matcher).map_err(|e| e.to_string())
        } else if std::env::var_os("FLAKEGATE_BLOCK_READER").is_some() {
            read_json(json, f, &matcher).map_err(|e| e.to_string())
        } else {
            read_json_mapped(std::path::Path::new(json), &matcher).map_err(|e| e.to_string())
        }
    };
    let cov = match read {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let elapsed = start.elapsed();
    let lines: usize = cov.files.values().map(|f| f.witnesses.len()).sum();
    let pairs: usize = cov
        .files
        .values()
        .flat_map(|f| f.witnesses.values())
        .map(|w| w.len())
        .sum();
    let tests: std::collections::BTreeSet<_> = cov
        .files
        .values()
        .flat_map(|f| f.witnesses.values())
        .flat_map(|w| w.keys())
        .collect();
    let changed_pairs: usize = changed
        .iter()
        .filter_map(|(p, line)| cov.files.get(p).and_then(|f| f.witnesses.get(line)))
        .map(|w| w.len())
        .sum();
    println!("diff paths:          {}", paths.len());
    println!("measured files:      {}", cov.measured_files);
    println!("selected files:      {}", cov.files.len());
    println!("witnessed lines:     {lines}");
    println!("line-test pairs:     {pairs}");
    println!("distinct witnesses:  {}", tests.len());
    println!("changed-line pairs:  {changed_pairs}");
    println!("has test contexts:   {}", cov.has_test_contexts);
    println!(
        "{}:{}{:.2?}",
        if sqlite { "read_data_file" } else { "read_json" },
        if sqlite { "      " } else { "           " },
        elapsed
    );
}
