//! JUnit XML (xunit1 and xunit2), with a few known node ids for xunit2 matching; also
//! the format sniffer that picks a reader for a results file.
#![no_main]

use flakegate::gate::error::text_of;
use flakegate::gate::results::{parse_any, parse_junit};
use flakegate::gate::TestId;
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeSet;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static KNOWN: OnceLock<BTreeSet<TestId>> = OnceLock::new();
    let known = KNOWN.get_or_init(|| {
        [
            "tests/test_cart.py::test_total",
            "tests/test_pricing.py::test_apply_tax[0]",
            "tests/test_pricing.py::TestTax::test_zero",
            "tests/test_refunds.py::test_refund_rounding_broken",
        ]
        .into_iter()
        .map(TestId::new)
        .collect()
    });
    let Ok(text) = text_of("junit.xml", data) else { return };
    let _ = parse_junit("junit.xml", &text, known);
    let _ = parse_any("results.xml", &text, known);
});
