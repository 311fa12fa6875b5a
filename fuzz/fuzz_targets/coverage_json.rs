//! `coverage json --show-contexts` output through the streaming reader, with a matcher
//! over the fixture project's paths (so matched files are materialised, others skipped).
#![no_main]

#[path = "common.rs"]
mod common;

use flakegate::gate::coverage::{json::read_json, PathMatcher};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static M: OnceLock<PathMatcher> = OnceLock::new();
    let matcher = M.get_or_init(|| PathMatcher::new(common::PROJECT_PATHS.iter().copied()));
    if let Ok(cov) = read_json("coverage.json", data, matcher) {
        // Only files the matcher maps are kept.
        for path in cov.files.keys() {
            assert!(
                common::PROJECT_PATHS.contains(&path.as_str()),
                "unmatched file kept: {path}"
            );
        }
    }
});
