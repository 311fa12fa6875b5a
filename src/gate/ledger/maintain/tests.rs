use super::*;
use crate::gate::history::{History, RunKind, Source, TestHistory};
use crate::gate::ledger::parse_ledger;
use crate::gate::probe::{pct, unseen_rate};

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

const TODAY: &str = "2026-12-05";

fn entry(test: &str, expires: &str, frozen_at: &str) -> FreezeEntry {
    FreezeEntry {
        test: test.into(),
        observed: Some("3/7 fail".into()),
        reason: Some("flaky".into()),
        owner: "@alice".into(),
        frozen_at: Some(day(frozen_at)),
        expires: day(expires),
        line: 0,
    }
}

fn source(sha: &str) -> Source {
    Source {
        sha: sha.into(),
        kind: RunKind::Probe,
        pr: Some(481),
        run_id: Some(9912),
        attempt: Some(1),
        date: day("2026-11-30"),
    }
}

/// A history of `runs` runs with `failures` failures (the latest on a sha where it also
/// passed, when `unstable`), `clean` of them passing after the last failure.
fn th(runs: u64, failures: u64, clean: u64, unstable: bool) -> TestHistory {
    TestHistory {
        runs,
        failures,
        since: Some(day("2026-10-01")),
        unstable_on: unstable.then(|| source("abc1234")),
        last_failure: (failures > 0).then(|| source("abc1234")),
        passes_since_failure: clean,
        ..TestHistory::default()
    }
}

fn history(tests: &[(&str, TestHistory)]) -> History {
    History {
        tests: tests.iter().map(|(t, h)| (TestId::new(*t), h.clone())).collect(),
        window_days: 90,
        recovery_runs: 50,
        observations: 0,
    }
}

fn run(ledger: &[FreezeEntry], h: &History, candidates: &[&str], policy: MaintainPolicy) -> Plan {
    let ledger = Ledger {
        entries: ledger.to_vec(),
    };
    let stab = Stabilities::new(None, Some(h));
    let candidates: Vec<TestId> = candidates.iter().map(|t| TestId::new(*t)).collect();
    let owner_of = |t: &TestId| t.as_str().starts_with("tests/owned").then(|| "@acme/team".to_string());
    plan(&ledger, &stab, &candidates, &owner_of, &policy, day(TODAY))
}

#[test]
fn the_unseen_rate_is_what_that_many_passing_runs_rule_out() {
    assert_eq!(pct(unseen_rate(40).unwrap()), "5.6 %");
    assert_eq!(pct(unseen_rate(212).unwrap()), "1.1 %");
    assert_eq!(unseen_rate(0), None);
    assert_eq!(
        passing_statement(40, false),
        "0 of 40 runs failed: not shown unstable at p ≥ 5.6 % (90 % chance)"
    );
}

#[test]
fn an_expiring_entry_whose_test_passed_enough_runs_is_pruned() {
    let e = entry("tests/t.py::a", "2026-12-08", "2026-11-20");
    let plan = run(
        &[e],
        &history(&[("tests/t.py::a", th(60, 0, 60, false))]),
        &[],
        MaintainPolicy::default(),
    );
    assert_eq!(
        plan.changes,
        vec![Change::Prune {
            test: "tests/t.py::a".into(),
            owner: "@alice".into(),
            runs: 60,
            evidence: "0 of 60 runs failed: not shown unstable at p ≥ 3.8 % (90 % chance)".into(),
        }]
    );
    assert!(plan.pending.is_empty());
    assert_eq!(plan.ledger.as_deref(), Some("{\n  \"frozen\": []\n}\n"));
}

#[test]
fn too_few_passing_runs_wait_for_a_probe() {
    let e = entry("tests/t.py::a", "2026-12-01", "2026-11-20");
    let plan = run(
        &[e],
        &history(&[("tests/t.py::a", th(10, 0, 10, false))]),
        &[],
        MaintainPolicy::default(),
    );
    assert!(plan.changes.is_empty());
    assert_eq!(plan.ledger, None);
    assert_eq!(plan.wanted_runs(), vec!["tests/t.py::a"]);
    assert!(
        plan.pending[0].why.contains("10 passing runs in a row so far; 50"),
        "{}",
        plan.pending[0].why
    );
    // Nothing known at all: a probe is wanted too.
    let e = entry("tests/t.py::b", "2026-12-01", "2026-11-20");
    let plan = run(&[e], &history(&[]), &[], MaintainPolicy::default());
    assert_eq!(plan.wanted_runs(), vec!["tests/t.py::b"]);
}

#[test]
fn a_test_that_failed_before_needs_the_recovery_rule_runs() {
    // 2 failures in 100 runs before: the recovery rule asks 149 passes in a row, not 40.
    let e = entry("tests/t.py::a", "2026-12-08", "2026-11-20");
    let h = history(&[("tests/t.py::a", th(160, 2, 60, false))]);
    let plan = run(std::slice::from_ref(&e), &h, &[], MaintainPolicy::default());
    assert!(plan.changes.is_empty(), "{:?}", plan.changes);
    assert!(plan.pending[0].wants_runs);
    let h = history(&[("tests/t.py::a", th(260, 2, 160, false))]);
    let plan = run(&[e], &h, &[], MaintainPolicy::default());
    assert!(
        matches!(&plan.changes[..], [Change::Prune { runs: 160, evidence, .. }] if evidence.starts_with("passed the last 160 runs in a row")),
        "{:?}",
        plan.changes
    );
}

#[test]
fn an_unstable_test_is_renewed_with_its_evidence() {
    let e = entry("tests/t.py::a", "2026-12-03", "2026-11-20");
    let plan = run(
        &[e],
        &history(&[("tests/t.py::a", th(200, 3, 5, true))]),
        &[],
        MaintainPolicy::default(),
    );
    let [Change::Renew {
        was, expires, evidence, ..
    }] = &plan.changes[..]
    else {
        panic!("{:?}", plan.changes)
    };
    assert_eq!((*was, *expires), (day("2026-12-03"), day("2026-12-19")));
    assert!(
        evidence.starts_with("failed 3 of 200 runs since 2026-10-01 (last: #481, run 9912"),
        "{evidence}"
    );
    let text = plan.ledger.unwrap();
    let l = parse_ledger("l", &text, None).unwrap();
    assert_eq!(l.entries[0].expires, day("2026-12-19"));
    assert_eq!(
        l.entries[0].frozen_at,
        Some(day("2026-11-20")),
        "a renewal keeps when the freeze began"
    );
    assert_eq!(l.entries[0].observed.as_deref(), Some(evidence.as_str()));
}

#[test]
fn a_renewal_stays_within_max_freeze_days_and_never_shortens() {
    let policy = MaintainPolicy {
        max_freeze_days: Some(20),
        ..MaintainPolicy::default()
    };
    // frozen 2026-11-20 + 20 days = 2026-12-10: renewed to that, not to 12-19.
    let e = entry("tests/t.py::a", "2026-12-03", "2026-11-20");
    let h = history(&[("tests/t.py::a", th(200, 3, 5, true))]);
    let plan = run(&[e], &h, &[], policy);
    assert!(matches!(&plan.changes[..], [Change::Renew { expires, .. }] if *expires == day("2026-12-10")));
    assert!(parse_ledger("l", plan.ledger.as_deref().unwrap(), Some(20)).is_ok());
    // Already at the limit: listed, not renewed, no probe asked for.
    let e = entry("tests/t.py::a", "2026-12-10", "2026-11-20");
    let plan = run(&[e], &h, &[], policy);
    assert!(plan.changes.is_empty());
    assert!(!plan.pending[0].wants_runs);
    assert!(
        plan.pending[0].why.contains("max_freeze_days"),
        "{}",
        plan.pending[0].why
    );
}

#[test]
fn a_broken_test_is_not_renewed_as_flaky() {
    let e = entry("tests/t.py::a", "2026-12-03", "2026-11-20");
    let plan = run(
        &[e],
        &history(&[("tests/t.py::a", th(20, 20, 0, false))]),
        &[],
        MaintainPolicy::default(),
    );
    assert!(plan.changes.is_empty());
    assert!(
        plan.pending[0].why.contains("broken, not flaky"),
        "{}",
        plan.pending[0].why
    );
}

#[test]
fn entries_not_due_are_left_alone() {
    let e = entry("tests/t.py::a", "2027-01-30", "2026-11-20");
    let plan = run(
        &[e],
        &history(&[("tests/t.py::a", th(60, 0, 60, false))]),
        &[],
        MaintainPolicy::default(),
    );
    assert!(plan.changes.is_empty() && plan.pending.is_empty());
    assert_eq!(plan.ledger, None);
}

#[test]
fn an_unstable_test_nobody_froze_is_proposed_with_its_codeowner_or_none() {
    let h = history(&[
        ("tests/owned/t.py::a", th(100, 4, 2, true)),
        ("tests/loose/t.py::b", th(100, 4, 2, true)),
        ("tests/loose/t.py::stable", th(100, 0, 100, false)),
    ]);
    let kept = entry("tests/other.py::c", "2027-02-01", "2026-11-20");
    let plan = run(
        std::slice::from_ref(&kept),
        &h,
        &["tests/owned/t.py::a", "tests/loose/t.py::b", "tests/loose/t.py::stable"],
        MaintainPolicy::default(),
    );
    assert_eq!(plan.changes.len(), 2, "{:?}", plan.changes);
    assert!(matches!(&plan.changes[0], Change::Freeze { owner: Some(o), .. } if o == "@acme/team"));
    assert!(matches!(&plan.changes[1], Change::Freeze { owner: None, .. }));
    assert!(plan.changes[1].describe().contains("owner is null"));
    let text = plan.ledger.unwrap();
    assert!(text.contains("\"owner\": null"), "{text}");
    assert!(!text.contains("flakegate: no owner"), "{text}");
    // The ledger refuses the null owner: the change cannot merge until a person names one.
    let errors = parse_ledger("l", &text, None).unwrap_err();
    assert!(errors.iter().any(|e| e.message.contains("owner")), "{errors:?}");
    // With the owner filled in, the rest of the proposal is a valid ledger.
    let filled = text.replace("\"owner\": null", "\"owner\": \"@bob\"");
    let l = parse_ledger("l", &filled, None).unwrap();
    assert_eq!(l.entries.len(), 3);
    assert!(l.entries.iter().any(|e| e.test == kept.test));
}

#[test]
fn a_candidate_already_frozen_is_not_proposed_again() {
    let e = entry("tests/owned/t.py", "2027-02-01", "2026-11-20");
    let h = history(&[("tests/owned/t.py::a", th(100, 4, 2, true))]);
    let plan = run(&[e], &h, &["tests/owned/t.py::a"], MaintainPolicy::default());
    assert!(plan.changes.is_empty(), "a prefix entry covers it: {:?}", plan.changes);
}
