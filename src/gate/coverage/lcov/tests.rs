use super::*;
use crate::gate::coverage::KeepLines;
use proptest::prelude::*;

fn read(text: &str, paths: &[&str]) -> Result<Coverage, InputError> {
    read_lcov("t.info", text.as_bytes(), &PathMatcher::new(paths.iter().copied()))
}
fn ids(w: Option<&crate::gate::coverage::LineWitnesses>) -> Vec<&str> {
    w.map(|w| w.keys().map(TestId::as_str).collect()).unwrap_or_default()
}

const TWO: &str = "TN:test_add\nSF:/build/calc/calc.c\nFN:3,add\nFNDA:1,add\nFN:7,sub\nFNDA:0,sub\nDA:3,1\nDA:4,1\nDA:8,0\nLF:3\nLH:2\nend_of_record\n\
TN:test_sub\nSF:/build/calc/calc.c\nFN:3,add\nFNDA:0,add\nFN:7,sub\nFNDA:2,sub\nDA:3,0\nDA:4,0\nDA:7,2\nDA:8,2\nend_of_record\n\
TN:\nSF:/build/calc/calc.c\nDA:12,5\nend_of_record\n\
TN:test_sub\nSF:/build/other.c\nDA:1,1\nend_of_record\n";

#[test]
fn one_test_per_section() {
    let c = read(TWO, &["calc/calc.c"]).unwrap();
    assert_eq!(c.format, CoverageFormat::Lcov);
    assert_eq!(c.measured_files, 2);
    assert_eq!(
        c.mapped_paths,
        vec![("/build/calc/calc.c".to_string(), "calc/calc.c".to_string())]
    );
    let f = &c.files["calc/calc.c"];
    assert_eq!(f.executed, [3, 4, 7, 8, 12].into());
    assert!(
        f.missing.is_empty(),
        "a line one test ran is not missing: {:?}",
        f.missing
    );
    assert_eq!(ids(f.witnesses.get(&4)), ["test_add"]);
    assert_eq!(ids(f.witnesses.get(&8)), ["test_sub"]);
    // The empty TN: ran line 12 but is not a test.
    assert!(!f.witnesses.contains_key(&12));
    assert_eq!(f.tests, [TestId::new("test_add"), TestId::new("test_sub")].into());
    assert!(c.has_test_contexts);
    assert_eq!(c.foreign_contexts.len(), 1);
    // Function scopes: add's body is line 4 (up to sub's first line), sub's is line 8.
    assert_eq!(f.regions[&3], [4].into());
    assert_eq!(f.regions[&7], [8].into());
}

#[test]
fn missed_lines_and_end_lines() {
    let t = "TN:t1\nSF:src/a.c\nFN:2,6,f\nFNDA:0,f\nDA:2,0\nDA:3,0\nDA:6,0\nDA:9,0\nend_of_record\n";
    let c = read(t, &["src/a.c"]).unwrap();
    let f = &c.files["src/a.c"];
    assert!(f.executed.is_empty());
    assert_eq!(f.missing, [2, 3, 6, 9].into());
    assert_eq!(f.regions[&2], [3, 6].into());
    assert!(
        f.tests.is_empty(),
        "a test that ran nothing of the file is not one of its tests"
    );
}

#[test]
fn only_kept_lines_keep_witnesses_but_a_kept_header_keeps_its_body() {
    let m = PathMatcher::new(["calc/calc.c"]).keeping(
        [(
            "calc/calc.c".to_string(),
            KeepLines {
                lines: [7].into(),
                from: None,
            },
        )]
        .into(),
    );
    let c = read_lcov("t.info", TWO.as_bytes(), &m).unwrap();
    let f = &c.files["calc/calc.c"];
    assert_eq!(f.witnesses.keys().copied().collect::<Vec<_>>(), [7, 8]);
    assert_eq!(f.executed, [3, 4, 7, 8, 12].into());
}

#[test]
fn no_test_names_at_all() {
    let c = read("SF:a.c\nDA:1,1\nend_of_record\n", &["a.c"]).unwrap();
    assert!(!c.has_test_contexts);
    assert!(c.files["a.c"].witnesses.is_empty());
}

#[test]
fn a_label_overrides_tn() {
    let m = PathMatcher::new(["a.c"]);
    let mut r = LcovReader::new(&m);
    let label = TestId::new("//calc:test_add");
    r.read(
        "coverage.dat",
        "TN:\nSF:a.c\nDA:1,1\nend_of_record\n".as_bytes(),
        Some(&label),
    )
    .unwrap();
    let c = r.finish(CoverageFormat::Bazel);
    assert_eq!(ids(c.files["a.c"].witnesses.get(&1)), ["//calc:test_add"]);
}

#[test]
fn errors_name_file_line_and_expectation() {
    let cases: &[(&str, usize, &str)] = &[
        ("TN:a\nSF:a.c\nDA:x,1\nend_of_record\n", 3, "DA: line number"),
        ("TN:a\nSF:a.c\nDA:1,-1\nend_of_record\n", 3, "non-negative count"),
        ("TN:a\nSF:a.c\nDA:1,1\n", 2, "no end_of_record"),
        ("TN:a\nDA:1,1\n", 2, "outside a record"),
        ("TN:a\nSF:a.c\nSF:b.c\n", 3, "end_of_record first"),
        ("end_of_record\n", 1, "without a preceding SF"),
        ("TN:a\nSF:a.c\nXYZ:1\nend_of_record\n", 3, "unknown LCOV record"),
        ("hello\n", 1, "expected KEY:VALUE"),
        ("TN:a\nSF:a.c\nFN:1\nend_of_record\n", 3, "expected FN:line,name"),
        ("TN:a\nSF:a.c\nFNDA:1\nend_of_record\n", 3, "expected FNDA:count,name"),
        ("TN:a\nSF:a.c\nDA:0,1\nend_of_record\n", 3, "line 0"),
        ("\n\n", 0, "empty tracefile"),
    ];
    for (text, line, want) in cases {
        let e = read(text, &["a.c"]).unwrap_err();
        assert_eq!(e.location.file, "t.info", "{text:?}");
        if *line > 0 {
            assert_eq!(e.location.line, Some(*line), "{text:?}: {e}");
        }
        assert!(e.message.contains(want), "{text:?}: {}", e.message);
    }
    let long = format!("TN:{}\n", "x".repeat(MAX_LINE_BYTES + 10));
    assert!(read(&long, &["a.c"]).unwrap_err().message.contains("longer than"));
    let e = read_lcov("t.info", &b"TN:a\nSF:\xff\n"[..], &PathMatcher::new(["a.c"])).unwrap_err();
    assert!(e.message.contains("UTF-8"), "{e}");
}

#[test]
fn sniffing() {
    assert!(looks_like_lcov(b"TN:x\n"));
    assert!(looks_like_lcov(b"\n SF:x\n"));
    assert!(!looks_like_lcov(b"{\"meta\":"));
    assert!(!looks_like_lcov(b"SQLite format 3"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(s in "[A-Z]{0,4}(:[-0-9a-z,.e+]{0,12})?(\n[A-Z_a-z]{0,6}:?[-0-9a-z,./]{0,10}){0,12}") {
        let _ = read(&s, &["a.c", "b"]);
    }

    #[test]
    fn never_panics_on_records(lines in proptest::collection::vec("(TN:[a-z]{0,3}|SF:[ab]\\.c|DA:[0-9]{1,3},[0-9]{1,2}|FN:[0-9]{1,2}(,[0-9]{1,2})?,[fg]|FNDA:[0-9],[fg]|end_of_record)", 0..30)) {
        let _ = read(&lines.join("\n"), &["a.c"]);
    }
}
