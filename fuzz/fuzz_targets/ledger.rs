//! The freeze ledger as a patch could leave it: parsed (with a freeze-length limit), then
//! compared with the base ledger, re-serialised, and asked what expires.
#![no_main]

#[path = "common.rs"]
mod common;

use flakegate::gate::ledger::{ledger_changes, parse_ledger, Ledger};
use flakegate::gate::{error::text_of, TestId};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static BASE: OnceLock<Ledger> = OnceLock::new();
    let base = BASE.get_or_init(|| {
        parse_ledger("base", &common::read_fixture("project/.github/flake-ledger.json"), None).expect("fixture ledger")
    });
    let Ok(text) = text_of("flake-ledger.json", data) else {
        return;
    };
    let Ok(head) = parse_ledger("flake-ledger.json", &text, Some(90)) else {
        return;
    };
    let _ = ledger_changes(base, &head);
    let _ = ledger_changes(&head, base);
    let _ = head.expiring(common::today(), 7);
    let _ = head.is_frozen(&TestId::new("tests/test_cart.py::test_total"));
    // What the ledger writes back must read again as the same entries.
    let canonical = Ledger::canonical_text(&head.entries);
    let again = parse_ledger("canonical", &canonical, None)
        .unwrap_or_else(|e| panic!("canonical text does not parse: {e:?}\n{canonical}"));
    assert_eq!(again.entries.len(), head.entries.len());
});
