use super::*;
use crate::gate::nodeid::Phase;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}
fn read(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}
fn outcomes(r: &TestResults) -> BTreeMap<String, Outcome> {
    r.tests.iter().map(|(k, v)| (k.0.clone(), v.outcome)).collect()
}
/// pytest's JUnit writer records a non-strict XPASS as a plain pass (no child element).
fn junit_view(mut m: BTreeMap<String, Outcome>) -> BTreeMap<String, Outcome> {
    for o in m.values_mut() {
        if *o == Outcome::XPassed {
            *o = Outcome::Passed;
        }
    }
    m
}

/// The committed fixtures (tests/fixtures/cases/*): the report-log, xunit1 of the same
/// run and xunit2 of a second run give the same outcome per node id.
#[test]
fn fixture_cases_three_formats_agree() {
    let mut n = 0;
    let mut dirs: Vec<_> = std::fs::read_dir(fixtures().join("cases"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let rl = parse_reportlog(
            "report-log.jsonl",
            &read(&dir.join("evidence/results/report-log.jsonl")),
        )
        .unwrap();
        let known: BTreeSet<TestId> = rl.tests.keys().cloned().collect();
        let x1 = parse_junit("xunit1.xml", &read(&dir.join("junit/xunit1.xml")), &BTreeSet::new()).unwrap();
        let x2 = parse_junit("xunit2.xml", &read(&dir.join("junit/xunit2.xml")), &known).unwrap();
        let x2_blind = parse_junit("xunit2.xml", &read(&dir.join("junit/xunit2.xml")), &BTreeSet::new()).unwrap();
        assert!(rl.tests.len() >= 19, "{}", dir.display());
        assert_eq!(
            junit_view(outcomes(&rl)),
            outcomes(&x1),
            "{}: report-log vs xunit1",
            dir.display()
        );
        assert_eq!(
            junit_view(outcomes(&rl)),
            outcomes(&x2),
            "{}: report-log vs xunit2",
            dir.display()
        );
        assert!(x1.unmatched.is_empty() && x2.unmatched.is_empty(), "{}", dir.display());
        // Without node ids to match against, xunit2 guesses nothing.
        assert!(x2_blind.tests.is_empty());
        assert_eq!(x2_blind.unmatched.len(), x2.tests.len());
        assert!(x2_blind
            .unmatched
            .iter()
            .all(|u| u.why == "no node id from coverage matches"));
        for r in [&rl, &x1, &x2] {
            assert!(r.collection_errors.is_empty());
            // Same messages where both formats carry one.
            let m = |id: &str| r.tests[&TestId::new(id)].message.clone();
            assert_eq!(
                m("tests/test_refunds.py::test_refund_rounding_broken").as_deref(),
                Some("assert 9.67 == 9.66"),
                "{}",
                dir.display()
            );
        }
        n += 1;
    }
    assert!(n >= 10, "expected the committed case fixtures, found {n}");
}

#[test]
fn fixture_known_outcomes() {
    let dir = fixtures().join("cases/failed");
    let rl_text = read(&dir.join("evidence/results/report-log.jsonl"));
    let rl = parse_reportlog("report-log.jsonl", &rl_text).unwrap();
    let x1 = parse_junit("xunit1.xml", &read(&dir.join("junit/xunit1.xml")), &BTreeSet::new()).unwrap();
    for r in [&rl, &x1] {
        let o = |id: &str| r.tests.get(&TestId::new(id)).map(|t| t.outcome);
        assert_eq!(o("tests/test_cart.py::TestCart::test_total"), Some(Outcome::Failed));
        assert_eq!(
            o("tests/test_cart.py::TestCart::test_empty_total"),
            Some(Outcome::Passed)
        );
        assert_eq!(o("tests/test_cart.py::test_stocked_subtotal"), Some(Outcome::Passed));
        assert_eq!(
            o("tests/test_refunds.py::test_refund_rounding_broken"),
            Some(Outcome::Failed)
        );
        assert_eq!(o("tests/test_util.py::test_legacy_currency"), Some(Outcome::Skipped));
        assert_eq!(o("tests/test_util.py::test_round_half_up"), Some(Outcome::XFailed));
        // pytest escapes non-ASCII ids: `café` is written `caf\xe9` in both formats.
        assert_eq!(
            o("tests/test_pricing.py::test_discount[caf\\xe9]"),
            Some(Outcome::Passed)
        );
        assert_eq!(
            o("tests/test_pricing.py::test_discount[half|code]"),
            Some(Outcome::Passed)
        );
        let t = &r.tests[&TestId::new("tests/test_cart.py::TestCart::test_total")];
        assert_eq!(t.message.as_deref(), Some("assert 3.0 == 12.0"));
        assert_eq!(t.phase, None);
    }
    // The source is the record's file and line.
    let t = &rl.tests[&TestId::new("tests/test_cart.py::TestCart::test_total")];
    let line: usize = t.source.rsplit(':').next().unwrap().parse().unwrap();
    let rec = rl_text.lines().nth(line - 1).unwrap();
    assert!(rec.contains("\"when\": \"call\"") && rec.contains("TestCart::test_total"));
    assert_eq!(
        rl.tests[&TestId::new("tests/test_util.py::test_legacy_currency")]
            .message
            .as_deref(),
        Some("Skipped: legacy currency codes are not supported")
    );
}

// Real pytest 9.2.0 + pytest-reportlog 1.0.0 output of a throwaway project
// (/tmp/rshape2: tests/test_shapes.py with a raising fixture in setup, one in
// teardown, a failing test whose teardown also raises, an xfail that passes,
// a strict one, a class with a `a<b` parameter; tests/test_broken.py imports a
// missing module), run with --continue-on-collection-errors. Trimmed: dropped
// passing setup and collect records, `keywords`, `sections`, durations, the
// traceback bodies; the shapes are pytest's.
const SHAPES_RL: &str = r#"{"pytest_version": "9.2.0", "$report_type": "SessionStart"}
{"outcome": "failed", "longrepr": "ImportError while importing test module '/tmp/rshape2/tests/test_broken.py'.\n\u2026", "nodeid": "tests/test_broken.py", "$report_type": "CollectReport"}
{"location": ["tests/test_shapes.py", 11, "test_setup_error"], "outcome": "failed", "longrepr": {"reprcrash": {"path": "/tmp/rshape2/tests/test_shapes.py", "lineno": 5, "message": "RuntimeError: setup boom"}}, "when": "setup", "nodeid": "tests/test_shapes.py::test_setup_error", "$report_type": "TestReport"}
{"location": ["tests/test_shapes.py", 11, "test_setup_error"], "outcome": "passed", "longrepr": null, "when": "teardown", "nodeid": "tests/test_shapes.py::test_setup_error", "$report_type": "TestReport"}
{"location": ["tests/test_shapes.py", 14, "test_teardown_error"], "outcome": "passed", "longrepr": null, "when": "call", "nodeid": "tests/test_shapes.py::test_teardown_error", "$report_type": "TestReport"}
{"location": ["tests/test_shapes.py", 14, "test_teardown_error"], "outcome": "failed", "longrepr": {"reprcrash": {"path": "/tmp/rshape2/tests/test_shapes.py", "lineno": 10, "message": "RuntimeError: teardown boom"}}, "when": "teardown", "nodeid": "tests/test_shapes.py::test_teardown_error", "$report_type": "TestReport"}
{"location": ["tests/test_shapes.py", 17, "test_fail_and_teardown_error"], "outcome": "failed", "longrepr": {"reprcrash": {"path": "/tmp/rshape2/tests/test_shapes.py", "lineno": 19, "message": "assert False"}}, "when": "call", "nodeid": "tests/test_shapes.py::test_fail_and_teardown_error", "$report_type": "TestReport"}
{"location": ["tests/test_shapes.py", 17, "test_fail_and_teardown_error"], "outcome": "failed", "longrepr": {"reprcrash": {"path": "/tmp/rshape2/tests/test_shapes.py", "lineno": 10, "message": "RuntimeError: teardown boom"}}, "when": "teardown", "nodeid": "tests/test_shapes.py::test_fail_and_teardown_error", "$report_type": "TestReport"}

{"location": ["tests/test_shapes.py", 20, "test_xpass"], "outcome": "passed", "longrepr": null, "when": "call", "wasxfail": "fixed?", "nodeid": "tests/test_shapes.py::test_xpass", "$report_type": "TestReport"}
{"location": ["tests/test_shapes.py", 20, "test_xpass"], "outcome": "passed", "longrepr": null, "when": "teardown", "nodeid": "tests/test_shapes.py::test_xpass", "$report_type": "TestReport"}
{"location": ["tests/test_shapes.py", 24, "test_xpass_strict"], "outcome": "failed", "longrepr": "[XPASS(strict)] strict\n\u2026", "when": "call", "nodeid": "tests/test_shapes.py::test_xpass_strict", "$report_type": "TestReport"}
{"location": ["tests/test_shapes.py", 24, "test_xpass_strict"], "outcome": "passed", "longrepr": null, "when": "teardown", "nodeid": "tests/test_shapes.py::test_xpass_strict", "$report_type": "TestReport"}
{"$report_type": "WarningMessage", "message": "ignored"}
{"location": ["tests/test_shapes.py", 29, "TestK.test_p[a<b]"], "outcome": "passed", "longrepr": null, "when": "call", "nodeid": "tests/test_shapes.py::TestK::test_p[a<b]", "$report_type": "TestReport"}
{"location": ["tests/test_shapes.py", 29, "TestK.test_p[a<b]"], "outcome": "passed", "longrepr": null, "when": "teardown", "nodeid": "tests/test_shapes.py::TestK::test_p[a<b]", "$report_type": "TestReport"}
{"exitstatus": 1, "$report_type": "SessionFinish"}
"#;
// The same run's xunit1 (failure/error bodies trimmed to "…").
const SHAPES_X1: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="4" failures="2" skipped="0" tests="8" time="0.048" >
<testcase classname="" name="tests.test_broken" file="tests/test_broken.py" time="0.000"><error message="collection failure">…</error></testcase>
<testcase classname="tests.test_shapes" name="test_setup_error" file="tests/test_shapes.py" line="11" time="0.000"><error message="failed on setup with &quot;RuntimeError: setup boom&quot;">…</error></testcase>
<testcase classname="tests.test_shapes" name="test_teardown_error" file="tests/test_shapes.py" line="14" time="0.000"><error message="failed on teardown with &quot;RuntimeError: teardown boom&quot;">…</error></testcase>
<testcase classname="tests.test_shapes" name="test_fail_and_teardown_error" file="tests/test_shapes.py" line="17" time="0.000"><failure message="assert False">…</failure></testcase>
<testcase classname="tests.test_shapes" name="test_fail_and_teardown_error" file="tests/test_shapes.py" line="17" time="0.000"><error message="failed on teardown with &quot;RuntimeError: teardown boom&quot;">…</error></testcase>
<testcase classname="tests.test_shapes" name="test_xpass" file="tests/test_shapes.py" line="20" time="0.000" />
<testcase classname="tests.test_shapes" name="test_xpass_strict" file="tests/test_shapes.py" line="24" time="0.000"><failure message="[XPASS(strict)] strict">…</failure></testcase>
<testcase classname="tests.test_shapes.TestK" name="test_p[a&lt;b]" file="tests/test_shapes.py" line="29" time="0.000" />
</testsuite></testsuites>"#;
// A second run of the same project with junit_family=xunit2.
const SHAPES_X2: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="4" failures="2" skipped="0" tests="8" time="0.052" >
<testcase classname="" name="tests.test_broken" time="0.000"><error message="collection failure">…</error></testcase>
<testcase classname="tests.test_shapes" name="test_setup_error" time="0.000"><error message="failed on setup with &quot;RuntimeError: setup boom&quot;">…</error></testcase>
<testcase classname="tests.test_shapes" name="test_teardown_error" time="0.000"><error message="failed on teardown with &quot;RuntimeError: teardown boom&quot;">…</error></testcase>
<testcase classname="tests.test_shapes" name="test_fail_and_teardown_error" time="0.000"><failure message="assert False">…</failure></testcase>
<testcase classname="tests.test_shapes" name="test_fail_and_teardown_error" time="0.000"><error message="failed on teardown with &quot;RuntimeError: teardown boom&quot;">…</error></testcase>
<testcase classname="tests.test_shapes" name="test_xpass" time="0.000" />
<testcase classname="tests.test_shapes" name="test_xpass_strict" time="0.000"><failure message="[XPASS(strict)] strict">…</failure></testcase>
<testcase classname="tests.test_shapes.TestK" name="test_p[a&lt;b]" time="0.000" />
</testsuite></testsuites>"#;

#[test]
fn real_shapes_setup_teardown_xpass_collection() {
    use Outcome::*;
    let rl = parse_reportlog("rl.jsonl", SHAPES_RL).unwrap();
    let known: BTreeSet<TestId> = rl.tests.keys().cloned().collect();
    let x1 = parse_junit("x1.xml", SHAPES_X1, &BTreeSet::new()).unwrap();
    let x2 = parse_junit("x2.xml", SHAPES_X2, &known).unwrap();
    let p = "tests/test_shapes.py::";
    let want: &[(&str, Outcome, Option<Phase>, &str)] = &[
        (
            "test_setup_error",
            Error,
            Some(Phase::Setup),
            "RuntimeError: setup boom",
        ),
        (
            "test_teardown_error",
            Error,
            Some(Phase::Teardown),
            "RuntimeError: teardown boom",
        ),
        // The call failed and the teardown raised: the call's failure decides.
        ("test_fail_and_teardown_error", Failed, None, "assert False"),
        ("test_xpass_strict", Failed, None, "[XPASS(strict)] strict"),
        ("TestK::test_p[a<b]", Passed, None, ""),
    ];
    for r in [&rl, &x1, &x2] {
        assert_eq!(r.tests.len(), 6);
        for (name, o, ph, msg) in want {
            let t = &r.tests[&TestId::new(format!("{p}{name}"))];
            assert_eq!((t.outcome, t.phase), (*o, *ph), "{name} in {}", t.source);
            assert_eq!(t.message.as_deref().unwrap_or(""), *msg, "{name}");
        }
        assert_eq!(r.collection_errors.len(), 1);
        assert!(r.unmatched.is_empty());
    }
    // A non-strict XPASS: report-log keeps `wasxfail` on a passed call; JUnit writes a plain pass.
    assert_eq!(rl.tests[&TestId::new(format!("{p}test_xpass"))].outcome, XPassed);
    assert_eq!(x1.tests[&TestId::new(format!("{p}test_xpass"))].outcome, Passed);
    assert_eq!(x2.tests[&TestId::new(format!("{p}test_xpass"))].outcome, Passed);
    assert_eq!(rl.collection_errors[0].nodeid, "tests/test_broken.py");
    assert_eq!(x1.collection_errors[0].nodeid, "tests/test_broken.py");
    assert_eq!(x1.collection_errors[0].message.as_deref(), Some("…"));
    assert_eq!(
        rl.collection_errors[0].message.as_deref(),
        Some("ImportError while importing test module '/tmp/rshape2/tests/test_broken.py'.")
    );
    assert_eq!(rl.collection_errors[0].source, "rl.jsonl:2");
    assert_eq!(
        x1.tests[&TestId::new(format!("{p}test_setup_error"))].source,
        "x1.xml:3"
    );
    // xunit2's collection error has no `file`: its dotted name is mapped to a known file.
    assert_eq!(
        parse_junit("x2.xml", SHAPES_X2, &BTreeSet::new())
            .unwrap()
            .collection_errors[0]
            .nodeid,
        "tests.test_broken"
    );
    assert_eq!(
        parse_junit(
            "x2.xml",
            SHAPES_X2,
            &[TestId::new("tests/test_broken.py::test_z")].into()
        )
        .unwrap()
        .collection_errors[0]
            .nodeid,
        "tests/test_broken.py"
    );
}

/// Reruns: pytest-rerunfailures' real report-log and JUnit (tests/fixtures/reruns), and
/// the Surefire/Gradle elements. A rerun test keeps its last attempt's outcome.
#[test]
fn reruns_in_both_formats() {
    let dir = fixtures().join("reruns/some_frozen");
    let rl = parse_reportlog("rl", &read(&dir.join("results/report-log.jsonl"))).unwrap();
    let x1 = parse_junit("x1", &read(&dir.join("junit/xunit1.xml")), &BTreeSet::new()).unwrap();
    for r in [&rl, &x1] {
        let g = &r.tests[&TestId::new("tests/test_refunds.py::test_gateway_retry")];
        assert_eq!((g.outcome, g.reruns, g.is_head_flaky()), (Outcome::Passed, 1, true));
        let b = &r.tests[&TestId::new("tests/test_refunds.py::test_refund_rounding_broken")];
        assert_eq!((b.outcome, b.reruns, b.is_head_flaky()), (Outcome::Failed, 2, false));
        assert_eq!(r.head_flaky().count(), 1);
        assert_eq!(r.tests.values().filter(|t| t.reruns > 0).count(), 2);
    }
    // Maven Surefire / Gradle: <flakyFailure> on a passing case, <rerunFailure> beside a
    // failure; the element shapes of Surefire's XSD (surefire-test-report-3.0.xsd).
    let surefire = r#"<testsuite name="calc.AddTest" tests="3">
<testcase name="adds" classname="calc.AddTest" file="calc/AddTest.py"><flakyFailure message="expected 3" type="java.lang.AssertionError"><stackTrace>at calc.AddTest.adds</stackTrace></flakyFailure></testcase>
<testcase name="subs" classname="calc.AddTest" file="calc/AddTest.py"><failure message="expected 1"/><rerunFailure message="expected 1" type="java.lang.AssertionError"/><rerunError message="timeout"/></testcase>
<testcase name="muls" classname="calc.AddTest" file="calc/AddTest.py"/>
</testsuite>"#;
    let r = parse_junit("s.xml", surefire, &BTreeSet::new()).unwrap();
    let t = |n: &str| r.tests[&TestId::new(format!("calc/AddTest.py::{n}"))].clone();
    assert_eq!((t("adds").outcome, t("adds").reruns), (Outcome::Passed, 1));
    assert_eq!((t("subs").outcome, t("subs").reruns), (Outcome::Failed, 2));
    assert_eq!(t("subs").message.as_deref(), Some("expected 1"));
    assert_eq!(t("muls").reruns, 0);
    // Gradle's test-retry: the same case twice, failed then passed; the last attempt decides.
    let gradle = r#"<testsuite><testcase name="t" classname="a" file="a.py"><failure message="boom"/></testcase>
<testcase name="t" classname="a" file="a.py"/></testsuite>"#;
    let g = &parse_junit("g.xml", gradle, &BTreeSet::new()).unwrap().tests[&TestId::new("a.py::t")];
    assert_eq!(
        (g.outcome, g.reruns, g.source.as_str()),
        (Outcome::Passed, 1, "g.xml:2")
    );
    // pytest's teardown error is a second case of one attempt, not a rerun (SHAPES_X1).
    let x = parse_junit("x1.xml", SHAPES_X1, &BTreeSet::new()).unwrap();
    assert!(x.tests.values().all(|t| t.reruns == 0));
    assert!(parse_reportlog("rl", SHAPES_RL)
        .unwrap()
        .tests
        .values()
        .all(|t| t.reruns == 0));
}

#[test]
fn large_inputs() {
    let n = 30_000;
    let mut xml = String::from("<testsuites><testsuite>\n");
    let mut rl = String::new();
    for i in 0..n {
        xml.push_str(&format!(
            "<testcase classname=\"tests.test_big\" name=\"test_{i}\" file=\"tests/test_big.py\"/>\n"
        ));
        rl.push_str(&format!("{{\"$report_type\": \"TestReport\", \"nodeid\": \"tests/test_big.py::test_{i}\", \"when\": \"call\", \"outcome\": \"passed\"}}\n"));
    }
    xml.push_str("</testsuite></testsuites>");
    let r = parse_junit("big.xml", &xml, &BTreeSet::new()).unwrap();
    assert_eq!(r.tests.len(), n);
    assert_eq!(
        r.tests[&TestId::new(format!("tests/test_big.py::test_{}", n - 1))].source,
        format!("big.xml:{}", n + 1)
    );
    assert_eq!(parse_reportlog("big.jsonl", &rl).unwrap().tests.len(), n);
}

#[test]
fn sniffing() {
    assert_eq!(sniff(SHAPES_X1), Some(ResultFormat::JUnit));
    assert_eq!(sniff(SHAPES_RL), Some(ResultFormat::ReportLog));
    assert!(parse_any("f", "hello", &BTreeSet::new()).is_err());
}

proptest::proptest! {
    #[test]
    fn truncated_real_files_never_panic(cut in 0usize..4000) {
        let t = SHAPES_X1;
        let cut = (0..=cut.min(t.len())).rev().find(|i| t.is_char_boundary(*i)).unwrap_or(0);
        let _ = parse_junit("f", &t[..cut], &BTreeSet::new());
        let r = SHAPES_RL;
        let cut2 = (0..=cut.min(r.len())).rev().find(|i| r.is_char_boundary(*i)).unwrap_or(0);
        let _ = parse_reportlog("f", &r[..cut2]);
    }
}
