use super::*;

#[test]
fn junit_errors() {
    let cases: &[(&str, &str, usize, usize, &str)] = &[
        (
            "mismatched end",
            "<testsuites>\n<testsuite>\n  <testcase name=\"a\"></testsuite>\n</testsuites>",
            3,
            22,
            "malformed XML",
        ),
        (
            "truncated",
            "<testsuite>\n<testcase classname=\"a\" name=\"b\">\n<failure message=\"x\">boom",
            3,
            26,
            "looks truncated",
        ),
        (
            "wrong root",
            "<?xml version=\"1.0\"?>\n<html><body/></html>",
            2,
            1,
            "expected <testsuites> or <testsuite>",
        ),
        (
            "no root",
            "<?xml version=\"1.0\"?>\n<!-- nothing -->\n",
            1,
            1,
            "expected JUnit XML",
        ),
        (
            "bad entity",
            "<testsuite>\n <testcase classname=\"a\" name=\"&bogus;\"/></testsuite>",
            2,
            2,
            "malformed XML attribute value",
        ),
        (
            "unclosed tag",
            "<testsuite>\n<testcase name=\"a\"",
            2,
            1,
            "malformed XML",
        ),
    ];
    for (name, text, line, col, msg) in cases {
        let e = parse_junit("j.xml", text, &BTreeSet::new()).expect_err(name);
        assert_eq!(
            (e.location.line, e.location.column),
            (Some(*line), Some(*col)),
            "{name}: {e}"
        );
        assert!(e.message.contains(msg), "{name}: {e}");
    }
}

#[test]
fn junit_matching() {
    let known: BTreeSet<TestId> = [
        "tests/a.py::T::t",
        "tests/a/T.py::t",
        "tests/b.py::test_é[1]",
        "tests/sub/test_c.py::TestX::TestY::test_y[a.b]",
    ]
    .into_iter()
    .map(TestId::new)
    .collect();
    let xml = r#"<testsuite>
<testcase classname="tests.a.T" name="t"/>
<testcase classname="tests.b" name="test_&#233;[1]"/>
<testcase classname="tests.sub.test_c.TestX.TestY" name="test_y[a.b]"><skipped type="pytest.skip" message="m"/></testcase>
<testcase classname="tests.nope" name="t"/>
</testsuite>"#;
    let r = parse_junit("x2.xml", xml, &known).unwrap();
    assert_eq!(r.tests.len(), 2);
    assert_eq!(r.tests[&TestId::new("tests/b.py::test_é[1]")].outcome, Outcome::Passed);
    assert_eq!(
        r.tests[&TestId::new("tests/sub/test_c.py::TestX::TestY::test_y[a.b]")].outcome,
        Outcome::Skipped
    );
    assert_eq!(r.unmatched.len(), 2);
    assert_eq!(r.unmatched[0].why, "ambiguous: tests/a.py::T::t, tests/a/T.py::t");
    assert_eq!(r.unmatched[0].source, "x2.xml:2");
    assert_eq!(r.unmatched[1].why, "no node id from coverage matches");

    // xunit1 rebuilds the id from `file` (authoritative, `known` not needed).
    let xml = r#"<testsuites><testsuite>
<testcase classname="tests.sub.test_c.TestX.TestY" name="test_y[a.b]" file="tests/sub/test_c.py" line="3"/>
<testcase classname="test_root" name="test_z" file="test_root.py" line="0"/>
<testcase classname="tests.other.TestBase" name="test_inherited" file="tests/base.py" line="1"/>
</testsuite></testsuites>"#;
    let r = parse_junit("x1.xml", xml, &BTreeSet::new()).unwrap();
    let ids: Vec<_> = r.tests.keys().map(|t| t.0.as_str()).collect();
    assert_eq!(
        ids,
        vec!["test_root.py::test_z", "tests/sub/test_c.py::TestX::TestY::test_y[a.b]"]
    );
    // A classname that does not fit its file (a test inherited from another module) falls
    // back to matching, and is reported when that fails.
    assert_eq!(r.unmatched.len(), 1);
    assert!(
        r.unmatched[0]
            .why
            .starts_with("file \"tests/base.py\" does not match classname"),
        "{}",
        r.unmatched[0].why
    );
    let k: BTreeSet<TestId> = [TestId::new("tests/other.py::TestBase::test_inherited")].into();
    let r = parse_junit("x1.xml", xml, &k).unwrap();
    assert!(r
        .tests
        .contains_key(&TestId::new("tests/other.py::TestBase::test_inherited")));
    assert!(r.unmatched.is_empty());
}

#[test]
fn junit_other_shapes() {
    // A module skipped at import is `collection skipped`: no test, no error.
    let xml = r#"<testsuite><testcase classname="" name="tests.test_skipmod" file="tests/test_skipmod.py"><skipped message="collection skipped">reason</skipped></testcase>
<testcase classname="m" name="t" file="m.py"><system-out>hi</system-out><properties><property name="a" value="b"/></properties><error message="Boom&#10;second">trace</error></testcase>
<testcase classname="m" name="u" file="m.py"><failure><![CDATA[first
second]]></failure></testcase></testsuite>"#;
    let r = parse_junit("j", xml, &BTreeSet::new()).unwrap();
    assert!(r.collection_errors.is_empty());
    let t = &r.tests[&TestId::new("m.py::t")];
    assert_eq!(
        (t.outcome, t.phase, t.message.as_deref()),
        (Outcome::Error, None, Some("Boom"))
    );
    assert_eq!(r.tests[&TestId::new("m.py::u")].message.as_deref(), Some("first"));
}

proptest::proptest! {
    #[test]
    fn junit_never_panics(s in "\\PC*") {
        let _ = parse_junit("f", &s, &BTreeSet::new());
    }
    #[test]
    fn junit_xmlish_never_panics(s in "[<>/=\"' a-z&#;:!\\[\\]\n-]{0,120}") {
        let known: BTreeSet<TestId> = [TestId::new("a.py::b")].into();
        let _ = parse_junit("f", &s, &known);
        let _ = parse_junit("f", &format!("<testsuite><testcase classname=\"a\" name=\"b\">{s}"), &known);
    }
}

/// pytest writes its JUnit XML on one line. Each case's record names its line; working out a
/// column there too (the characters since the line's start) made a one-line file quadratic:
/// 6,000 cases took 1.25 s, 20,000 would take minutes. A regression fails here rather than
/// hangs (the bound is far above the linear time, not a measurement).
#[test]
fn a_one_line_file_is_read_in_linear_time() {
    let n = 20_000;
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites><testsuite tests=\"20000\">");
    for i in 0..n {
        xml.push_str(&format!(
            "<testcase classname=\"tests.test_m{m}\" name=\"test_{i}\" file=\"tests/test_m{m}.py\" line=\"{i}\" time=\"0.001\" />",
            m = i / 100
        ));
    }
    xml.push_str("<testcase classname=\"tests.test_m0\" name=\"test_last\" file=\"tests/test_m0.py\"><failure message=\"boom\">x</failure></testcase></testsuite></testsuites>");
    let t0 = std::time::Instant::now();
    let r = parse_junit("one-line.xml", &xml, &BTreeSet::new()).unwrap();
    let took = t0.elapsed();
    assert_eq!(r.tests.len(), n + 1);
    let last = &r.tests[&TestId::new("tests/test_m0.py::test_last")];
    assert_eq!(
        (last.outcome, last.source.as_str()),
        (Outcome::Failed, "one-line.xml:1")
    );
    assert!(
        took < std::time::Duration::from_secs(30),
        "{took:?} for {n} cases on one line"
    );
}
