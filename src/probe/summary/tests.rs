use super::*;
use crate::gate::results::TestResult;

fn run(index: u32, outcomes: &[(&str, Outcome)]) -> RunInput {
    let mut r = TestResults::default();
    for (t, o) in outcomes {
        r.tests.insert(
            TestId::new(*t),
            TestResult {
                outcome: *o,
                phase: None,
                message: Some(format!("{t} went {o:?}")),
                source: "f:1".into(),
                reruns: 0,
            },
        );
    }
    RunInput {
        index,
        source: None,
        end: RunEnd::Exited {
            code: Some(1),
            signal: None,
        },
        results: ResultsRead::Parsed(r),
        log_tail: None,
        duration: None,
    }
}

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

fn opts<'a>(seed: &'a Seed, ledger: Option<&'a Ledger>) -> Options<'a> {
    Options {
        today: day("2026-11-20"),
        days: 14,
        seed: Some(seed),
        command: None,
        only: None,
        ledger,
        probe_file: Some("p.json"),
    }
}

fn suite(i: u32) -> RunInput {
    use Outcome::*;
    let flaky = if i % 2 == 0 { Failed } else { Passed };
    run(
        i,
        &[
            ("t.py::a", Passed),
            ("t.py::b", flaky),
            ("t.py::c", Failed),
            ("t.py::d", Skipped),
            ("t.py::e", Error),
        ],
    )
}

#[test]
fn counts_stability_and_suggestions() {
    let seed = Seed {
        value: 9,
        source: "--seed".into(),
    };
    let ledger = crate::gate::ledger::parse_ledger(
        "l",
        r#"{"frozen": [{"test": "t.py::e", "owner": "o", "expires": "2027-01-01"}]}"#,
        None,
    )
    .unwrap();
    let runs: Vec<RunInput> = (1..=4).map(suite).collect();
    let o = summarize(&runs, &opts(&seed, Some(&ledger)));
    assert!(!o.inconclusive);
    assert_eq!(o.k, Some(4));
    let t = |n: &str| {
        o.tests
            .as_ref()
            .unwrap()
            .iter()
            .find(|t| t.test.as_str() == n)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (t("t.py::a").failures, t("t.py::a").runs, t("t.py::a").stability),
        (0, 4, "stable_passing")
    );
    assert_eq!(
        (
            t("t.py::b").failures,
            t("t.py::b").stability,
            t("t.py::b").failed_runs.clone()
        ),
        (2, "unstable", vec![2, 4])
    );
    assert_eq!(t("t.py::b").first_failure.as_deref(), Some("t.py::b went Failed"));
    assert_eq!(
        t("t.py::b").replay.as_deref(),
        Some("replay: FLAKEGATE_SEED=9 PYTHONHASHSEED=9 pytest 't.py::b'")
    );
    assert_eq!((t("t.py::c").failures, t("t.py::c").stability), (4, "broken_on_base"));
    assert_eq!(
        (t("t.py::d").runs, t("t.py::d").skips, t("t.py::d").stability),
        (0, 4, "skipped")
    );
    assert_eq!(
        (t("t.py::e").errors, t("t.py::e").frozen_by.as_deref()),
        (4, Some("t.py::e"))
    );
    assert_eq!(
        o.unstable.as_ref().unwrap(),
        &vec![Count {
            test: TestId::new("t.py::b"),
            failures: 2,
            runs: 4
        }]
    );
    let sug = o.ledger_suggestions.as_ref().unwrap();
    assert_eq!(
        sug.iter().map(|s| s.test.as_str()).collect::<Vec<_>>(),
        vec!["t.py::b", "t.py::c"]
    );
    assert_eq!(sug[0].observed, "2/4 fail on clean base");
    assert_eq!(sug[0].owner, None);
    assert_eq!(sug[0].expires, day("2026-12-04"));
    let json = o.to_json();
    assert!(json.ends_with("}\n"));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["k"], 4);
    assert_eq!(v["seed"], 9);
    assert_eq!(v["ledger_suggestions"][0]["owner"], serde_json::Value::Null);
    let text = render_text(&o);
    assert!(
        text.contains("unstable (1):") && text.contains("[frozen: t.py::e]"),
        "{text}"
    );
}

#[test]
fn a_different_test_set_is_unusable_and_counted_missing() {
    let seed = Seed {
        value: 1,
        source: "--seed".into(),
    };
    let mut runs: Vec<RunInput> = (1..=4).map(suite).collect();
    runs[2] = run(3, &[("t.py::a", Outcome::Passed)]);
    let o = summarize(&runs, &opts(&seed, None));
    assert_eq!(o.k, Some(3));
    assert_eq!(o.runs[2].status, "different_tests");
    assert!(
        o.runs[2].detail.as_deref().unwrap().contains("4 fewer"),
        "{:?}",
        o.runs[2].detail
    );
    let b = o
        .tests
        .as_ref()
        .unwrap()
        .iter()
        .find(|t| t.test.as_str() == "t.py::b")
        .unwrap();
    assert_eq!(
        (b.missing, b.missing_runs.clone(), b.failures, b.runs),
        (1, vec![3], 2, 3)
    );
    let a = o
        .tests
        .as_ref()
        .unwrap()
        .iter()
        .find(|t| t.test.as_str() == "t.py::a")
        .unwrap();
    assert_eq!(a.missing, 0);
}

#[test]
fn too_many_unusable_runs_are_inconclusive() {
    let seed = Seed {
        value: 1,
        source: "--seed".into(),
    };
    let mut runs: Vec<RunInput> = (1..=3).map(suite).collect();
    for r in &mut runs[..2] {
        r.results = ResultsRead::Missing;
        r.end = RunEnd::Exited {
            code: None,
            signal: Some(11),
        };
    }
    let o = summarize(&runs, &opts(&seed, None));
    assert!(o.inconclusive);
    assert_eq!((o.k, o.tests.is_none(), o.unstable.is_none()), (None, true, true));
    assert!(o
        .why_inconclusive
        .as_deref()
        .unwrap()
        .contains("2 of 3 runs are unusable"));
    assert!(
        o.runs[0].detail.as_deref().unwrap().contains("crashed without results"),
        "{:?}",
        o.runs[0]
    );
    // One usable run of two: still inconclusive.
    let mut two: Vec<RunInput> = (1..=2).map(suite).collect();
    two[0].end = RunEnd::TimedOut {
        after: Duration::from_secs(3),
    };
    let o = summarize(&two, &opts(&seed, None));
    assert!(o.inconclusive);
    assert_eq!(o.runs[0].status, "timed_out");
    assert!(o.why_inconclusive.as_deref().unwrap().contains("only 1 of 2"));
}

#[test]
fn percentages_round_up() {
    assert_eq!(pct(0.2804547), "28.1 %");
    assert_eq!(pct(0.38), "38 %");
    assert_eq!(pct(0.3199), "32 %");
    assert_eq!(pct(0.0450074), "4.6 %");
}
