//! The map of `examples/shop` (real pytest, pytest-cov and coverage.py output; its
//! README says what is frozen and unstable), and the rules it shares with the gate.

use super::*;
use crate::gate::coverage::json::read_json;
use crate::gate::coverage::PathMatcher;
use crate::gate::ledger::parse_ledger;
use crate::gate::results::parse_any;

const COVERAGE: &str = include_str!("../../../examples/shop/evidence/coverage.json");
const LEDGER: &str = include_str!("../../../examples/shop/flake-ledger.json");
const RUNS: [&str; 5] = [
    include_str!("../../../examples/shop/evidence/probe/run-1.jsonl"),
    include_str!("../../../examples/shop/evidence/probe/run-2.jsonl"),
    include_str!("../../../examples/shop/evidence/probe/run-3.jsonl"),
    include_str!("../../../examples/shop/evidence/probe/run-4.jsonl"),
    include_str!("../../../examples/shop/evidence/probe/run-5.jsonl"),
];
const REFUNDS: &str = include_str!("../../../tests/fixtures/project/src/shop/refunds.py");

fn shop_coverage() -> Coverage {
    read_json("coverage.json", COVERAGE.as_bytes(), &PathMatcher::every_file()).unwrap()
}

fn probe() -> crate::gate::probe::Probe {
    let runs: Vec<_> = RUNS
        .iter()
        .enumerate()
        .map(|(i, t)| parse_any(&format!("run-{i}.jsonl"), t, &BTreeSet::new()).unwrap())
        .collect();
    crate::gate::probe::from_runs(&runs)
}

fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 20).unwrap()
}

fn shop_map(ledger: &Ledger, policy: &Policy, sources: &BTreeMap<String, String>) -> BlindnessMap {
    let cov = shop_coverage();
    let probe = probe();
    map(&BlindnessInput {
        coverage: &cov,
        coverage_file: "coverage.json",
        ledger,
        stab: Stabilities::new(Some(&probe), None),
        results: None,
        policy,
        sources,
        today: today(),
    })
    .unwrap()
}

fn file<'m>(m: &'m BlindnessMap, path: &str) -> &'m FileBlindness {
    m.files.iter().find(|f| f.path == path).unwrap()
}

fn test_of<'m>(m: &'m BlindnessMap, id: &str) -> &'m TestBlindness {
    m.tests.iter().find(|t| t.test.as_str() == id).unwrap()
}

#[test]
fn the_shop_is_blind_where_only_frozen_or_unstable_tests_run() {
    let ledger = parse_ledger("flake-ledger.json", LEDGER, None).unwrap();
    let m = shop_map(&ledger, &Policy::default(), &BTreeMap::new());
    // The gateway's retry function (its `def` line judged by its body): only the frozen and
    // unstable retry test runs it.
    let refunds = file(&m, "src/shop/refunds.py");
    assert_eq!(
        refunds.blind_lines.iter().map(|b| b.line).collect::<Vec<_>>(),
        [11, 12, 13, 14, 15]
    );
    assert!(refunds
        .blind_lines
        .iter()
        .all(|b| b.tests == [TestId::new("tests/test_refunds.py::test_gateway_retry")]));
    // Line 7 has a stable witness beside the two frozen ones.
    assert_eq!(refunds.state_of(7).unwrap().0, LineState::Witnessed);
    assert_eq!(refunds.state_of(12).unwrap().0, LineState::Blind);
    assert_eq!(refunds.state_of(2), None, "not a statement");
    let retry = test_of(&m, "tests/test_refunds.py::test_gateway_retry");
    // The probe's verdict comes first, as in the gate; the freeze still names its owner.
    assert_eq!(retry.status, WitnessStatus::Unstable);
    assert_eq!(retry.freeze.as_ref().unwrap().owner, "@shop/payments");
    assert_eq!(retry.only_witness_lines, 5);
    assert_eq!(retry.only_witness[0].ranges, [(11, 15)]);
    // The parametrised family's freeze blinds the lines only its `[10-0.1]` case runs.
    let pricing = file(&m, "src/shop/pricing.py");
    assert_eq!(pricing.blind_lines.iter().map(|b| b.line).collect::<Vec<_>>(), [34, 35]);
    assert_eq!(
        pricing.state_of(33).unwrap().0,
        LineState::Witnessed,
        "the cap test is stable"
    );
    let bulk = test_of(&m, "tests/test_pricing.py::test_bulk_discount[10-0.1]");
    assert_eq!(bulk.status, WitnessStatus::Frozen);
    assert_eq!(
        bulk.freeze.as_ref().unwrap().test,
        "tests/test_pricing.py::test_bulk_discount"
    );
    assert_eq!(bulk.only_witness_lines, 2);
    // A frozen witness of witnessed lines only restores nothing by itself.
    let rounding = test_of(&m, "tests/test_refunds.py::test_refund_rounding_broken");
    assert_eq!((rounding.blind_lines, rounding.only_witness_lines), (0, 0));
    // Owners: most blind lines first, each with the soonest expiry of their freezes.
    let owners: Vec<_> = m.owners.iter().map(|o| (o.owner.as_str(), o.blind_lines)).collect();
    assert_eq!(owners, [("@shop/payments", 5), ("@shop/pricing", 2), ("qa-oncall", 0)]);
    assert_eq!(m.owners[0].files, [("src/shop/refunds.py".to_string(), 5)]);
    assert_eq!(m.owners[0].soonest_expiry, NaiveDate::from_ymd_opt(2028, 1, 31));
    // util.py's missing lines are uncovered; totals add up over the files.
    let util = file(&m, "src/shop/util.py");
    assert_eq!(
        (util.uncovered, util.uncovered_lines.len()),
        (5, 5),
        "3 missing, 2 run only at import time"
    );
    assert_eq!(m.files[0].path, "src/shop/refunds.py", "most blind first");
    assert_eq!(m.totals.blind, 7);
    assert_eq!(
        m.totals.witnessed + m.totals.blind + m.totals.uncovered,
        m.files
            .iter()
            .map(|f| f.witnessed + f.blind + f.uncovered)
            .sum::<usize>()
    );
    assert!(m.freezes_with_no_coverage.is_empty());
    // The summary the App reads.
    let s = m.summary();
    assert_eq!(s.owners[0].top_files, [("src/shop/refunds.py".to_string(), 5)]);
    assert_eq!(s.tests[0].only_witness_lines, 5);
    assert_eq!(s.tests[0].owner.as_deref(), Some("@shop/payments"));
}

#[test]
fn without_a_freeze_the_unstable_test_still_blinds_and_has_no_owner() {
    let m = shop_map(&Ledger::default(), &Policy::default(), &BTreeMap::new());
    let retry = test_of(&m, "tests/test_refunds.py::test_gateway_retry");
    assert_eq!((retry.status, retry.freeze.is_none()), (WitnessStatus::Unstable, true));
    assert_eq!(retry.only_witness_lines, 5);
    // The bulk discount is stable in the probe: unfrozen, its lines are witnessed.
    assert_eq!(file(&m, "src/shop/pricing.py").blind, 0);
    assert!(m.owners.is_empty());
    assert_eq!(m.summary().tests[0].owner, None);
}

#[test]
fn phase_only_lines_follow_the_policy() {
    // cart.py 13–17 run only in fixture setup: witnessed, unless the policy asks for the run phase.
    let m = shop_map(&Ledger::default(), &Policy::default(), &BTreeMap::new());
    assert_eq!(
        file(&m, "src/shop/cart.py").state_of(13).unwrap().0,
        LineState::Witnessed
    );
    let strict = Policy {
        run_phase_only: true,
        ..Policy::default()
    };
    let m = shop_map(&Ledger::default(), &strict, &BTreeMap::new());
    assert_eq!(
        file(&m, "src/shop/cart.py").state_of(13).unwrap().0,
        LineState::Uncovered
    );
}

#[test]
fn a_def_line_is_witnessed_by_its_body() {
    // `def retry_gateway` ran at import time; it is judged as the gate judges a changed
    // header: by the tests of its body (with the source, its definition; without, coverage.json's
    // function regions), here only the unstable retry test.
    let def_line = REFUNDS
        .lines()
        .position(|l| l.starts_with("def retry_gateway"))
        .map(|i| i as u32 + 1)
        .expect("refunds.py defines retry_gateway");
    let sources = BTreeMap::from([("src/shop/refunds.py".to_string(), REFUNDS.to_string())]);
    for given in [BTreeMap::new(), sources] {
        let m = shop_map(&Ledger::default(), &Policy::default(), &given);
        let (state, tests) = file(&m, "src/shop/refunds.py").state_of(def_line).unwrap();
        assert_eq!(state, LineState::Blind, "with {} sources", given.len());
        assert_eq!(tests, [TestId::new("tests/test_refunds.py::test_gateway_retry")]);
    }
}

#[test]
fn freezes_of_tests_the_coverage_does_not_know_are_listed() {
    let text = r#"{"frozen": [{"test": "tests/test_gone.py::test_x", "owner": "@a", "expires": "2026-12-01"},
        {"test": "tests/test_refunds.py::test_gateway_retry", "owner": "@b", "expires": "2026-11-01"}]}"#;
    let ledger = parse_ledger("l.json", text, None).unwrap();
    let m = shop_map(&ledger, &Policy::default(), &BTreeMap::new());
    assert_eq!(m.freezes_with_no_coverage.len(), 1);
    assert_eq!(m.freezes_with_no_coverage[0].test, "tests/test_gone.py::test_x");
    assert!(!m.freezes_with_no_coverage[0].expired);
    let b = m.owners.iter().find(|o| o.owner == "@b").unwrap();
    assert_eq!(b.blind_lines, 5);
    let retry = test_of(&m, "tests/test_refunds.py::test_gateway_retry");
    assert!(
        retry.freeze.as_ref().unwrap().expired,
        "expired 2026-11-01, today 2026-11-20"
    );
}

#[test]
fn coverage_without_test_contexts_is_refused() {
    let mut cov = shop_coverage();
    cov.has_test_contexts = false;
    let err = map(&BlindnessInput {
        coverage: &cov,
        coverage_file: "evidence/coverage.json",
        ledger: &Ledger::default(),
        stab: Stabilities::new(None, None),
        results: None,
        policy: &Policy::default(),
        sources: &BTreeMap::new(),
        today: today(),
    })
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("evidence/coverage.json") && msg.contains("per-test"),
        "{msg}"
    );
}

#[test]
fn ranges_join_consecutive_lines() {
    assert_eq!(ranges(&[]), []);
    assert_eq!(ranges(&[3, 4, 5, 9, 11, 12]), [(3, 5), (9, 9), (11, 12)]);
}

#[test]
fn a_map_built_file_by_file_as_the_reader_hands_them_over_is_the_same() {
    let ledger = parse_ledger("flake-ledger.json", LEDGER, None).unwrap();
    let whole = shop_map(&ledger, &Policy::default(), &BTreeMap::new());
    let probe = probe();
    let policy = Policy::default();
    let judging = Judging {
        ledger: &ledger,
        stab: Stabilities::new(Some(&probe), None),
        results: None,
        policy: &policy,
        today: today(),
    };
    let mut mapper = Mapper::new(judging, BTreeSet::new());
    let mut handed = 0;
    let cov = crate::gate::coverage::json::read_json_slice_each(
        "coverage.json",
        COVERAGE.as_bytes(),
        &PathMatcher::every_file(),
        &mut |_| {},
        &mut |path, fc| {
            handed += 1;
            mapper.add_file(&path, &fc, None);
        },
    )
    .unwrap();
    assert!(cov.files.is_empty(), "nothing kept");
    assert_eq!(handed, 5);
    assert_eq!(mapper.finish("coverage.json", &cov).unwrap(), whole);
}

#[test]
fn a_kept_map_answers_for_a_patchs_witnesses_and_only_a_later_merge_replaces_it() {
    let ledger = parse_ledger("l", LEDGER, None).unwrap();
    let m = shop_map(&ledger, &Policy::default(), &BTreeMap::new());
    let mut kept = CodebaseMap::of(&m, "main", "abc", today());
    kept.merged_at = Some("2026-11-20T12:00:00Z".into());
    // Through JSON, as the App keeps it.
    let kept: CodebaseMap = serde_json::from_str(&serde_json::to_string(&kept).unwrap()).unwrap();
    let frozen = &m.tests.iter().find(|t| t.freeze.is_some()).unwrap().test;
    let unknown = TestId::new("tests/test_new.py::test_nobody_mapped");
    let c = kept.for_witnesses([&unknown, frozen]).unwrap();
    assert_eq!((c.branch.as_deref(), c.sha.as_deref()), (Some("main"), Some("abc")));
    assert_eq!(c.tests.len(), 1, "a test the map does not know is not spoken for");
    assert_eq!(&c.tests[0].test, frozen);
    assert_eq!(
        c.tests[0].only_witness_lines,
        test_of(&m, frozen.as_str()).only_witness_lines
    );
    assert_eq!(kept.for_witnesses([&unknown]), None);

    let mut earlier = kept.clone();
    earlier.merged_at = Some("2026-11-19T08:00:00Z".into());
    assert!(!earlier.replaces(&kept));
    assert!(kept.replaces(&earlier));
    // The issue is edited for other numbers, not for another day.
    let mut next_day = kept.clone();
    next_day.date = today().succ_opt().unwrap();
    let first = kept.summary.owners[0].owner.clone();
    let key = |m: &CodebaseMap, owners: &[&str]| m.blind_key(owners.iter().copied());
    assert_eq!(key(&next_day, &[&first]), key(&kept, &[&first]));
    let mut fewer = kept.clone();
    fewer.summary.owners[0].blind_lines += 1;
    assert_ne!(key(&fewer, &[&first]), key(&kept, &[&first]));
    // Another owner's numbers do not edit a message that does not show them.
    assert_eq!(key(&fewer, &["@someone-else"]), key(&kept, &["@someone-else"]));
}
