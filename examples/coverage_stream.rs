//! Streaming benchmark harness for `flakegate::gate::coverage::json::read_json`.
//!
//! ```text
//! cargo run --release --example coverage_stream -- COVERAGE_JSON DIFF
//! ```
//!
//! Reads the file names of DIFF (its `+++ b/…` lines), streams COVERAGE_JSON
//! through `read_json` with a `PathMatcher` over them, and prints what it kept.
//! See docs/performance.md.

use flakegate::gate::coverage::{json::read_json, PathMatcher};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [json, diff] = args.as_slice() else {
        eprintln!("usage: coverage_stream COVERAGE_JSON DIFF");
        std::process::exit(2);
    };
    let diff_text = std::fs::read_to_string(diff).expect("read diff");
    let paths: Vec<&str> = diff_text
        .lines()
        .filter_map(|l| l.strip_prefix("+++ b/"))
        .map(|p| p.trim_end_matches('\r'))
        .collect();
    let matcher = PathMatcher::new(paths.iter().copied());
    let start = Instant::now();
    let f = std::fs::File::open(json).expect("open coverage json");
    let cov = match read_json(json, f, &matcher) {
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
    println!("diff paths:          {}", paths.len());
    println!("measured files:      {}", cov.measured_files);
    println!("selected files:      {}", cov.files.len());
    println!("witnessed lines:     {lines}");
    println!("line-test pairs:     {pairs}");
    println!("distinct witnesses:  {}", tests.len());
    println!("has test contexts:   {}", cov.has_test_contexts);
    println!("read_json:           {:.2?}", elapsed);
}
