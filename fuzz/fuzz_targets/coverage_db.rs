//! The `.coverage` SQLite data file: the input is written to a file and read by the real
//! reader (read-only, `immutable`). SQLite makes this the slowest target.
#![no_main]

#[path = "common.rs"]
mod common;

use flakegate::evidence::coverage_db::read_data_file;
use flakegate::gate::coverage::PathMatcher;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static M: OnceLock<PathMatcher> = OnceLock::new();
    let matcher = M.get_or_init(|| PathMatcher::new(common::PROJECT_PATHS.iter().copied()));
    let path = common::scratch().join(".coverage");
    std::fs::write(&path, data).unwrap();
    if let Ok(cov) = read_data_file(&path, matcher) {
        for path in cov.files.keys() {
            assert!(
                common::PROJECT_PATHS.contains(&path.as_str()),
                "unmatched file kept: {path}"
            );
        }
    }
});
