//! Benchmark harness for `flakegate::gate::patch::parse_patch`.
//!
//! ```text
//! cargo run --release --example diff_parse -- DIFF
//! ```
//!
//! Reads DIFF into memory, parses it as the gate does, and prints the files, the
//! changed and context lines, the time the parse took and the time freeing the parsed
//! patch took. See docs/performance.md ("The diff parser").

use flakegate::gate::patch::parse_patch;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [diff] = args.as_slice() else {
        eprintln!("usage: diff_parse DIFF");
        std::process::exit(2);
    };
    let bytes = std::fs::read(diff).unwrap_or_else(|e| {
        eprintln!("error: {diff}: {e}");
        std::process::exit(1);
    });
    let start = Instant::now();
    let patch = match parse_patch(diff, &bytes) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let elapsed = start.elapsed();
    let added: usize = patch.files.iter().map(|f| f.added.len()).sum();
    let deletions: usize = patch.files.iter().map(|f| f.deletions.len()).sum();
    let removed: usize = patch.files.iter().map(|f| f.removed.len()).sum();
    let context: usize = patch.files.iter().map(|f| f.context.len()).sum();
    println!("bytes:               {}", bytes.len());
    println!("files:               {}", patch.files.len());
    println!("added lines:         {added}");
    println!("removed lines:       {removed}");
    println!("context lines:       {context}");
    println!("pure deletions:      {deletions}");
    println!("parse_patch:         {elapsed:.2?}");
    // Freeing the model (a few million lines) is part of the process's wall time.
    let start = Instant::now();
    drop(patch);
    println!("drop:                {:.2?}", start.elapsed());
}
