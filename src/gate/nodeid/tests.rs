use super::*;

#[test]
fn contexts() {
    let t = |s: &str, p| ContextKind::Test(TestId::new(s), p);
    let cases = [
        ("", ContextKind::ImportTime),
        ("tests/a.py::test_x|run", t("tests/a.py::test_x", Phase::Run)),
        ("tests/a.py::test_x|setup", t("tests/a.py::test_x", Phase::Setup)),
        ("tests/a.py::test_x|teardown", t("tests/a.py::test_x", Phase::Teardown)),
        ("tests/a.py::test_p[a|b]|run", t("tests/a.py::test_p[a|b]", Phase::Run)),
        (
            "py311|tests/a.py::T::test_x|run",
            t("tests/a.py::T::test_x", Phase::Run),
        ),
        (
            "py311|tests/a.py::test_p[x|y]|setup",
            t("tests/a.py::test_p[x|y]", Phase::Setup),
        ),
        ("tests.a.test_x", ContextKind::Other("tests.a.test_x".into())),
        ("py311", ContextKind::Other("py311".into())),
        (
            "tests/a.py::test_x|bogus",
            ContextKind::Other("tests/a.py::test_x|bogus".into()),
        ),
    ];
    for (raw, want) in cases {
        assert_eq!(parse_context(raw), want, "context {raw:?}");
    }
}

#[test]
fn prefixes() {
    let id = TestId::new("tests/a.py::TestX::test_y[1-2]");
    assert!(id.is_under("tests/a.py::TestX"));
    assert!(id.is_under("tests/a.py::TestX::test_y"));
    assert!(id.is_under("tests/a.py::TestX::test_y[1-2]"));
    assert!(!id.is_under("tests/a.py::TestX::test_"));
    assert!(!id.is_under("tests/a.py::TestXY"));
    assert_eq!(id.base(), "tests/a.py::TestX::test_y");
    assert_eq!(id.file(), "tests/a.py");
}

#[test]
fn id_kinds() {
    let ok = [
        ("tests/a.py::test_x", IdKind::PytestNode),
        ("tests/a.py::T", IdKind::PytestNode),
        ("//calc:test_add", IdKind::BazelLabel),
        ("//:all_tests", IdKind::BazelLabel),
        ("@ext//pkg/sub:t", IdKind::BazelLabel),
        ("test_add", IdKind::LcovTestName),
        ("com.acme.CartTest.testTotal", IdKind::JUnitCase),
        ("calc.test_p[a.b]", IdKind::JUnitCase),
    ];
    for (id, want) in ok {
        assert_eq!(IdKind::of(id), Ok(want), "{id}");
    }
    for bad in [
        "",
        " x",
        "//calc",
        "//calc:",
        "//calc:a b",
        "a b",
        ".x",
        "x.",
        "a..b",
        "tést",
    ] {
        assert!(IdKind::of(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn join_keys() {
    let k = |s: &str| junit_join_keys(&TestId::new(s));
    assert_eq!(k("test_add"), [(None, "test_add".to_string())]);
    assert_eq!(
        k("//calc:test_add"),
        [
            (None, "calc/test_add".to_string()),
            (None, "//calc:test_add".to_string())
        ]
    );
    assert_eq!(k("a.B.t[x.y]"), [(Some("a.B".to_string()), "t[x.y]".to_string())]);
    assert_eq!(k("tests/a.py::t"), [(Some("tests.a".to_string()), "t".to_string())]);
}

#[test]
fn junit_keys() {
    let k = junit_key(&TestId::new("tests/sub/test_a.py::TestX::test_y[1]"));
    assert_eq!(k, ("tests.sub.test_a.TestX".into(), "test_y[1]".into()));
    let k = junit_key(&TestId::new("tests/test_a.py::T::test_p[a::b]"));
    assert_eq!(k, ("tests.test_a.T".into(), "test_p[a::b]".into()));
    let k = junit_key(&TestId::new("tests/test_a.py::test_z"));
    assert_eq!(k, ("tests.test_a".into(), "test_z".into()));
}
