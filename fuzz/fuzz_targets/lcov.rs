//! LCOV tracefiles (`lcov --capture --test-name`) through the streaming reader, with a
//! matcher over the C fixture project's path and a keep-list, so witnesses are kept for
//! some lines only. The reader must never panic; what it keeps must be consistent.
#![no_main]

use flakegate::gate::coverage::{lcov::read_lcov, KeepLines, PathMatcher};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static M: OnceLock<PathMatcher> = OnceLock::new();
    let matcher = M.get_or_init(|| {
        PathMatcher::new(["calc/calc.c", "src/a.c"]).keeping(
            [(
                "calc/calc.c".to_string(),
                KeepLines {
                    lines: [3, 4, 5, 15].into(),
                    from: None,
                },
            )]
            .into(),
        )
    });
    if let Ok(cov) = read_lcov("coverage.info", data, matcher) {
        for (path, f) in &cov.files {
            assert!(path == "calc/calc.c" || path == "src/a.c", "unmatched file kept: {path}");
            // A line is executed or missing, never both.
            assert!(f.executed.is_disjoint(&f.missing), "{path}");
            // Every witnessed line ran.
            for line in f.witnesses.keys() {
                assert!(f.executed.contains(line), "{path}:{line} witnessed but not executed");
            }
        }
    }
});
