use super::*;
use crate::gate::results::{parse_junit, parse_reportlog};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/probe")
}
fn read(p: PathBuf) -> String {
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn power_matches_design() {
    assert!(
        (detection_chance(0.05, 10) - 0.40).abs() < 0.005,
        "{}",
        detection_chance(0.05, 10)
    );
    assert!(
        (detection_chance(0.05, 50) - 0.92).abs() < 0.005,
        "{}",
        detection_chance(0.05, 50)
    );
    assert_eq!(detection_chance(0.5, 2), 0.5);
    assert!(detection_chance(0.3, u32::MAX).is_finite());

    assert_eq!(min_detectable_rate(2, 0.9), None);
    assert!((min_detectable_rate(2, 0.5).unwrap() - 0.5).abs() < 1e-6);
    assert_eq!(min_detectable_rate(1, 0.1), None);
    assert_eq!(min_detectable_rate(0, 0.1), None);
    assert_eq!(min_detectable_rate(10, f64::NAN), None);
    for (k, c) in [(5, 0.9), (10, 0.9), (50, 0.9), (50, 0.92), (200, 0.99), (10, 0.4)] {
        let p = min_detectable_rate(k, c).unwrap();
        assert!(p > 0.0 && p <= 0.5);
        assert!(detection_chance(p, k) >= c, "k={k} c={c} p={p}");
        assert!(
            detection_chance(p * (1.0 - 1e-9), k) < c,
            "k={k} c={c}: {p} is not the smallest"
        );
    }
    // Probe power: p = 5 % is shown with 92 % at K = 50, so the 0.9 threshold lies just below 5 %.
    let p = min_detectable_rate(50, 0.9).unwrap();
    assert!(p > 0.04 && p < 0.05, "{p}");
    // K = 10 reaches 40 % at about 5 %.
    assert!((min_detectable_rate(10, 0.40).unwrap() - 0.05).abs() < 0.002);
}

/// The committed probe runs (5 runs of the base; report-log and xunit1 of the
/// same runs, xunit2 from a second set) against scripts/probe_counts.py's
/// independent count in expected.json.
/// The fixture probe's five report-log runs split over two shards merge to the same
/// counts as read together; another base sha or another collection is an error.
#[test]
fn shards_merge_only_the_same_collection_at_the_same_base() {
    let run = |n: u32| {
        let f = format!("run-{n}.jsonl");
        parse_reportlog(&f, &read(dir().join("reportlog").join(&f))).unwrap()
    };
    let all: Vec<TestResults> = (1..=5).map(run).collect();
    let shard = |name: &str, sha: Option<&str>, runs: &[TestResults]| ProbeShard {
        name: name.into(),
        base_sha: sha.map(str::to_string),
        runs: runs.to_vec(),
    };
    let a = shard("probe/a", Some("abc123"), &all[..2]);
    let b = shard("probe/b", Some("ABC123"), &all[2..]);
    assert_eq!(merge_shards(&[a.clone(), b.clone()]).unwrap(), from_runs(&all));
    assert_eq!(merge_shards(&[a.clone(), b.clone()]).unwrap().k, 5);

    let e = merge_shards(&[a.clone(), shard("probe/c", Some("def456"), &all[2..])]).unwrap_err();
    assert_eq!(e.location.file, "probe/c/meta.json");
    assert!(
        e.message.contains("different base commits") && e.message.contains("def456"),
        "{e}"
    );

    let e = merge_shards(&[a.clone(), shard("probe/d", None, &all[2..])]).unwrap_err();
    assert!(e.message.contains("\"base_sha\""), "{e}");

    let mut fewer = all[3].clone();
    let gone = fewer.tests.keys().next().cloned().unwrap();
    fewer.tests.remove(&gone);
    let e = merge_shards(&[a.clone(), shard("probe/e", Some("abc123"), &[fewer])]).unwrap_err();
    assert_eq!(e.location.file, "probe/e");
    assert!(
        e.message.contains("collected different tests") && e.message.contains(gone.as_str()),
        "{e}"
    );

    let e = merge_shards(&[a, shard("probe/f", Some("abc123"), &[])]).unwrap_err();
    assert!(e.message.contains("no result files"), "{e}");
}

#[test]
fn fixture_probe_three_formats() {
    let want = parse_probe_json("expected.json", &read(dir().join("expected.json"))).unwrap();
    assert_eq!(want.k, 5);
    assert!(want.complete);
    let runs = |sub: &str, ext: &str, known: &BTreeSet<TestId>| -> Vec<TestResults> {
        (1..=5)
            .map(|n| {
                let name = format!("{sub}/run-{n}.{ext}");
                let text = read(dir().join(&name));
                let r = if ext == "jsonl" {
                    parse_reportlog(&name, &text)
                } else {
                    parse_junit(&name, &text, known)
                };
                let r = r.unwrap();
                assert!(r.unmatched.is_empty(), "{name}: {:?}", r.unmatched);
                r
            })
            .collect()
    };
    let rl = runs("reportlog", "jsonl", &BTreeSet::new());
    let known: BTreeSet<TestId> = rl.iter().flat_map(|r| r.tests.keys().cloned()).collect();
    // Skipped and xfailed tests: probe_counts.py counts every run that reported the
    // test; from_runs counts only runs with a pass/fail outcome, so it leaves them out.
    let never_decided: BTreeSet<TestId> = known
        .iter()
        .filter(|t| {
            rl.iter()
                .all(|r| matches!(r.tests[*t].outcome, Outcome::Skipped | Outcome::XFailed))
        })
        .cloned()
        .collect();
    assert_eq!(
        never_decided.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        vec![
            "tests/test_util.py::test_legacy_currency",
            "tests/test_util.py::test_round_half_up"
        ]
    );
    let mut expected = want.clone();
    expected.tests.retain(|t, _| !never_decided.contains(t));
    for (name, got) in [
        ("reportlog", from_runs(&rl)),
        (
            "junit-xunit1",
            from_runs(&runs("junit-xunit1", "xml", &BTreeSet::new())),
        ),
        ("junit-xunit2", from_runs(&runs("junit-xunit2", "xml", &known))),
    ] {
        assert_eq!(got, expected, "{name}");
        let g = TestId::new("tests/test_refunds.py::test_gateway_retry");
        assert_eq!(got.tests[&g], ProbeCounts { failures: 2, runs: 5 });
        assert!(got.is_unstable(&g));
        let b = TestId::new("tests/test_refunds.py::test_refund_rounding_broken");
        assert_eq!(got.stability(&b), Some(Stability::BrokenOnBase));
        assert!(got.shows_stable(&b));
        assert!(!got.shows_stable(&TestId::new("tests/test_util.py::test_legacy_currency")));
    }
    // The short form (only "k" and "unstable") is incomplete.
    let text = read(dir().join("expected.json"));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let short = serde_json::json!({"k": v["k"], "unstable": v["unstable"]}).to_string();
    let p = parse_probe_json("p.json", &short).unwrap();
    assert!(!p.complete);
    assert_eq!(p.tests.len(), 1);
    assert!(p.is_unstable(&TestId::new("tests/test_refunds.py::test_gateway_retry")));
}

#[test]
fn from_runs_counts() {
    use crate::gate::results::TestResult;
    let run = |o: &[(&str, Outcome)]| TestResults {
        tests: o
            .iter()
            .map(|(t, o)| {
                (
                    TestId::new(*t),
                    TestResult {
                        outcome: *o,
                        phase: None,
                        message: None,
                        source: String::new(),
                        reruns: 0,
                    },
                )
            })
            .collect(),
        ..Default::default()
    };
    let p = from_runs(&[
        run(&[
            ("a::x", Outcome::Passed),
            ("a::e", Outcome::Error),
            ("a::s", Outcome::Skipped),
            ("a::xp", Outcome::XPassed),
        ]),
        run(&[
            ("a::x", Outcome::Failed),
            ("a::e", Outcome::Error),
            ("a::s", Outcome::XFailed),
        ]),
        run(&[("a::e", Outcome::Passed), ("a::xp", Outcome::XPassed)]),
    ]);
    assert_eq!(p.k, 3);
    assert!(p.complete);
    assert_eq!(p.seed, None);
    assert_eq!(p.tests[&TestId::new("a::x")], ProbeCounts { failures: 1, runs: 2 });
    assert_eq!(p.tests[&TestId::new("a::e")], ProbeCounts { failures: 2, runs: 3 });
    assert_eq!(p.tests[&TestId::new("a::xp")], ProbeCounts { failures: 0, runs: 2 });
    assert!(!p.tests.contains_key(&TestId::new("a::s")));
    assert_eq!(from_runs(&[]).k, 0);
    // A base run in which a test failed and passed on a rerun shows it unstable.
    let mut flaky = run(&[("a::f", Outcome::Passed), ("a::g", Outcome::Failed)]);
    for t in flaky.tests.values_mut() {
        t.reruns = 1;
    }
    let p = from_runs(&[flaky, run(&[("a::f", Outcome::Passed), ("a::g", Outcome::Failed)])]);
    assert_eq!(p.tests[&TestId::new("a::f")], ProbeCounts { failures: 1, runs: 3 });
    assert_eq!(p.stability(&TestId::new("a::f")), Some(Stability::Unstable));
    // Failed in every attempt of every run: still broken on base, not unstable.
    assert_eq!(p.tests[&TestId::new("a::g")], ProbeCounts { failures: 3, runs: 3 });
    assert_eq!(p.stability(&TestId::new("a::g")), Some(Stability::BrokenOnBase));
}

#[test]
fn probe_json_forms() {
    let p = parse_probe_json(
        "p.json",
        r#"{"k": 5, "seed": 7, "extra": {"ignored": true},
                "unstable": [{"test": "t.py::a", "failures": 2, "runs": 5, "note": "x"}],
                "tests": [{"test": "t.py::a", "failures": 2, "runs": 5}, {"test": "t.py::b", "failures": 0, "runs": 5},
                          {"test": "t.py::never", "failures": 0, "runs": 0}]}"#,
    )
    .unwrap();
    assert_eq!((p.k, p.seed, p.complete, p.tests.len()), (5, Some(7), true, 2));
    assert!(p.shows_stable(&TestId::new("t.py::b")));
    assert!(!p.shows_stable(&TestId::new("t.py::never")));
    let p = parse_probe_json("p.json", "{\"k\": 3, \"unstable\": [], \"seed\": null}").unwrap();
    assert_eq!((p.k, p.seed, p.complete, p.tests.len()), (3, None, false, 0));
}

#[test]
fn probe_json_errors() {
    let cases: &[(&str, &str, usize, usize, &str)] = &[
        ("syntax", "{\"k\": 5,\n \"unstable\": [}", 2, 15, "expected value"),
        ("not object", "[]", 1, 1, "expected a probe JSON object"),
        ("no k", "{\"unstable\": []}", 1, 1, "missing field \"k\""),
        ("k zero", "{\"k\": 0, \"unstable\": []}", 1, 7, "positive integer"),
        ("k float", "{\"k\": 2.5, \"unstable\": []}", 1, 7, "found 2.5"),
        ("k negative", "{\"k\": -1, \"unstable\": []}", 1, 7, "positive integer"),
        ("k string", "{\"k\": \"5\", \"unstable\": []}", 1, 7, "found \"5\""),
        ("k huge", "{\"k\": 99999999999, \"unstable\": []}", 1, 7, "positive integer"),
        ("no unstable", "{\"k\": 5}", 1, 1, "missing field \"unstable\""),
        ("unstable not array", "{\"k\": 5, \"unstable\": 3}", 1, 22, "to be an array"),
        ("entry not object", "{\"k\": 5, \"unstable\": [\n 1]}", 2, 2, "expected an entry"),
        ("no test", "{\"k\": 5, \"unstable\": [\n {\"failures\": 1, \"runs\": 2}]}", 2, 2, "missing \"test\""),
        ("test type", "{\"k\": 5, \"unstable\": [{\"test\": 5, \"failures\": 1, \"runs\": 2}]}", 1, 32, "\"test\" to be a node id string"),
        ("no runs", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": 1}]}", 1, 23, "missing \"runs\""),
        ("failures type", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": -1, \"runs\": 2}]}", 1, 52, "non-negative integer"),
        ("failures > runs", "{\"k\": 5, \"unstable\": [\n{\"test\": \"t::a\", \"failures\": 3, \"runs\": 2}]}", 2, 30, "failures (3) is more than runs (2)"),
        ("runs > k", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": 3, \"runs\": 6}]}", 1, 63, "more than k"),
        ("duplicate", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": 1, \"runs\": 2},\n {\"test\": \"t::a\", \"failures\": 1, \"runs\": 2}]}", 2, 11, "appears twice"),
        ("disagree", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": 1, \"runs\": 2}], \"tests\": {\"t::a\": {\"failures\": 2, \"runs\": 2}}}", 1, 32, "\"tests\" says 2/2"),
        ("seed", "{\"k\": 5, \"unstable\": [], \"seed\": \"x\"}", 1, 34, "\"seed\""),
    ];
    for (name, text, line, col, msg) in cases {
        let e = parse_probe_json("p.json", text).expect_err(name);
        assert_eq!(
            (e.location.line, e.location.column),
            (Some(*line), Some(*col)),
            "{name}: {e}"
        );
        assert!(e.message.contains(msg), "{name}: {e}");
    }
}

proptest::proptest! {
    #[test]
    fn probe_json_never_panics(s in "\\PC*") {
        let _ = parse_probe_json("p", &s);
    }
    #[test]
    fn probe_jsonish_never_panics(s in "[{}\\[\\]\":, a-z0-9.e-]{0,100}") {
        let _ = parse_probe_json("p", &s);
        let _ = parse_probe_json("p", &format!("{{\"k\": 3, \"unstable\": [{s}]}}"));
    }
    #[test]
    fn min_rate_is_a_boundary(k in 0u32..500, c in 0.0f64..1.0) {
        if let Some(p) = min_detectable_rate(k, c) {
            proptest::prop_assert!(p > 0.0 && p <= 0.5);
            proptest::prop_assert!(detection_chance(p, k) >= c);
        } else {
            proptest::prop_assert!(detection_chance(0.5, k) < c);
        }
    }
}
