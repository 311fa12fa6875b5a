//! Benchmark harness for `flakegate::gate::coverage::statements::PythonStatements::parse`.
//!
//! ```text
//! cargo run --release --example statements_cost -- SOURCE.py
//! ```
//!
//! Reads a Python source, finds its statements as the `.coverage` path does, and prints
//! its lines, its statements and excluded lines, and the time the classification took.
//! See docs/performance.md ("Statements of a `.coverage` data file").

use flakegate::gate::coverage::statements::PythonStatements;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [source] = args.as_slice() else {
        eprintln!("usage: statements_cost SOURCE.py");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(source).unwrap_or_else(|e| {
        eprintln!("error: {source}: {e}");
        std::process::exit(1);
    });
    let start = Instant::now();
    let statements = match PythonStatements::parse(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {source}: {e}");
            std::process::exit(1);
        }
    };
    let elapsed = start.elapsed();
    println!("bytes:       {}", text.len());
    println!("lines:       {}", text.lines().count());
    println!("statements:  {}", statements.statements.len());
    println!("excluded:    {}", statements.excluded.len());
    println!("classify:    {elapsed:.2?}");
}
