use super::*;

const F: &str = ".github/flake-ledger.json";

fn d(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

#[test]
fn valid_ledger_with_prefix_entries() {
    let text = r#"{"frozen": [
  {"test": "tests/test_billing.py::test_retry_backoff",
   "observed": "3/7 fail on clean base",
   "reason": "wall-clock dependency in backoff assertion",
   "owner": "billing-oncall",
   "frozen_at": "2026-11-09", "expires": "2026-12-09"},
  {"test": "tests/test_cart.py::TestCart", "owner": "cart", "expires": "2026-12-01", "observed": null},
    {
      "test": "tests/test_pricing.py::test_bulk_discount",
      "owner": "pricing",
      "expires": "2027-01-01",
      "reason": "caf\u00e9 \"quoted\" [x] {y}"
    }
]}
"#;
    let l = parse_ledger(F, text, None).unwrap();
    assert_eq!(l.entries.len(), 3);
    assert_eq!(l.entries.iter().map(|e| e.line).collect::<Vec<_>>(), vec![2, 7, 8]);
    let e = &l.entries[0];
    assert_eq!(e.owner, "billing-oncall");
    assert_eq!(e.frozen_at, Some(d("2026-11-09")));
    assert_eq!(e.expires, d("2026-12-09"));
    assert!(!e.is_expired(d("2026-12-09")));
    assert!(e.is_expired(d("2026-12-10")));
    assert_eq!(l.entries[2].reason.as_deref(), Some("café \"quoted\" [x] {y}"));

    let t = |s: &str| TestId::new(s);
    assert!(l.is_frozen(&t("tests/test_billing.py::test_retry_backoff")));
    assert!(l.is_frozen(&t("tests/test_cart.py::TestCart::test_total")));
    assert!(l.is_frozen(&t("tests/test_cart.py::TestCart")));
    assert!(!l.is_frozen(&t("tests/test_cart.py::TestCartExtra::test_total")));
    assert!(!l.is_frozen(&t("tests/test_cart.py::test_stocked_subtotal")));
    assert!(l.is_frozen(&t("tests/test_pricing.py::test_bulk_discount[10-0.1]")));
    assert!(l.is_frozen(&t("tests/test_pricing.py::test_bulk_discount")));
    assert!(!l.is_frozen(&t("tests/test_pricing.py::test_bulk_discount_cap")));
    let cover: Vec<_> = l
        .entries_for(&t("tests/test_cart.py::TestCart::test_total"))
        .map(|e| e.line)
        .collect();
    assert_eq!(cover, vec![7]);

    // frozen_at within the limit.
    assert!(parse_ledger(F, text, Some(30)).is_err()); // entries 2 and 3 lack frozen_at
    let ok = r#"{"frozen": [{"test": "a.py::t", "owner": "o", "frozen_at": "2026-01-01", "expires": "2026-01-31"}]}"#;
    assert_eq!(parse_ledger(F, ok, Some(30)).unwrap().entries.len(), 1);
    assert_eq!(parse_ledger(F, "{\"frozen\": []}", Some(1)).unwrap(), Ledger::default());
    // A BOM and CRLF line endings are fine.
    let crlf =
        "\u{feff}{\"frozen\": [\r\n\r\n {\"test\": \"a.py::t\", \"owner\": \"o\", \"expires\": \"2026-01-31\"}]}";
    assert_eq!(parse_ledger(F, crlf, None).unwrap().entries[0].line, 3);
}

/// Each bad ledger, the limit, and the expected (line, column, message fragment) of every error.
#[test]
fn bad_ledgers() {
    type Want<'a> = &'a [(usize, Option<usize>, &'a str)];
    let cases: &[(&str, &str, Option<u32>, Want)] = &[
        ("bad json", "{\"frozen\": [\n  {\"test\": }\n]}", None, &[(2, Some(12), "expected value")]),
        ("empty file", "", None, &[(1, Some(0), "EOF")]),
        ("trailing comma", "{\"frozen\": [\n{\"test\": \"a.py::t\"},\n]}", None, &[(3, Some(1), "trailing comma")]),
        ("top not object", "\n[1, 2]", None, &[(2, Some(1), "expected a JSON object")]),
        ("no frozen", "{\n \"tests\": []\n}", None, &[(1, Some(1), "missing field \"frozen\""), (2, Some(2), "unknown field \"tests\"")]),
        ("frozen not array", "{\"frozen\": {}}", None, &[(1, Some(12), "to be an array")]),
        (
            "unknown entry field",
            "{\"frozen\": [\n  {\"test\": \"a.py::t\", \"owner\": \"o\", \"expires\": \"2026-01-01\",\n   \"expiry\": \"x\"}]}",
            None,
            &[(3, Some(4), "unknown field \"expiry\" in a ledger entry: expected one of \"test\", \"observed\", \"reason\", \"owner\", \"frozen_at\", \"expires\"")],
        ),
        (
            "missing owner and expires, entry not an object",
            "{\"frozen\": [\n  {\"test\": \"a.py::t\"},\n  \"b.py::u\"\n]}",
            None,
            &[(2, Some(3), "\"owner\""), (2, Some(3), "\"expires\""), (3, Some(3), "expected a ledger entry object")],
        ),
        (
            "missing test, empty owner",
            "{\"frozen\": [\n  {\"owner\": \" \", \"expires\": \"2026-01-01\"}]}",
            None,
            &[(2, Some(3), "\"test\""), (2, Some(13), "\"owner\" is empty")],
        ),
        (
            "wrong types",
            "{\"frozen\": [{\"test\": 1, \"owner\": [\"o\"], \"expires\": 20260101, \"reason\": false}]}",
            None,
            &[(1, Some(22), "\"test\" to be a string, found a number"), (1, Some(34), "\"owner\" to be a string"), (1, Some(52), "\"expires\" to be a string"), (1, Some(72), "\"reason\" to be a string")],
        ),
        (
            "dates",
            "{\"frozen\": [\n {\"test\": \"a.py::t\", \"owner\": \"o\", \"frozen_at\": \"2026-1-01\", \"expires\": \"2026-02-30\"},\n {\"test\": \"a.py::u\", \"owner\": \"o\", \"expires\": \"2026-02-28T00:00\"}]}",
            None,
            &[(2, Some(49), "\"2026-1-01\" is not an ISO date"), (2, Some(73), "not a calendar date"), (3, Some(47), "not an ISO date")],
        ),
        (
            "expires before frozen_at",
            "{\"frozen\": [{\"test\": \"a.py::t\", \"owner\": \"o\", \"frozen_at\": \"2026-03-01\", \"expires\": \"2026-02-28\"}]}",
            Some(30),
            &[(1, Some(85), "is before \"frozen_at\"")],
        ),
        (
            "too long, and frozen_at missing under a limit",
            "{\"frozen\": [\n{\"test\": \"a.py::t\", \"owner\": \"o\", \"frozen_at\": \"2026-01-01\", \"expires\": \"2026-03-01\"},\n{\"test\": \"a.py::u\", \"owner\": \"o\", \"expires\": \"2026-03-01\"}]}",
            Some(30),
            &[(2, Some(73), "freeze of 59 days"), (3, Some(1), "missing \"frozen_at\"")],
        ),
        (
            "duplicates report both lines",
            "{\"frozen\": [\n{\"test\": \"a.py::t\", \"owner\": \"o\", \"expires\": \"2026-03-01\"},\n{\"test\": \"a.py::u\", \"owner\": \"o\", \"expires\": \"2026-03-01\"},\n{\"test\": \"a.py::t\", \"owner\": \"p\", \"expires\": \"2026-04-01\"}]}",
            None,
            &[(2, Some(10), "duplicate test \"a.py::t\": also frozen at line 4"), (4, Some(10), "also frozen at line 2")],
        ),
        (
            "not test ids",
            "{\"frozen\": [\n{\"test\": \"test a\", \"owner\": \"o\", \"expires\": \"2026-03-01\"},\n{\"test\": \"a.py::\", \"owner\": \"o\", \"expires\": \"2026-03-01\"},\n{\"test\": \" a.py::t\", \"owner\": \"o\", \"expires\": \"2026-03-01\"},\n{\"test\": \"a.py:: t\", \"owner\": \"o\", \"expires\": \"2026-03-01\"},\n{\"test\": \"::t\", \"owner\": \"o\", \"expires\": \"2026-03-01\"}]}",
            None,
            &[(2, Some(10), "is not a test id"), (3, Some(10), "name after"), (4, Some(10), "whitespace"), (5, Some(10), "whitespace"), (6, Some(10), "path before")],
        ),
        (
            "duplicate key",
            "{\"frozen\": [{\"test\": \"a.py::t\", \"owner\": \"o\", \"owner\": \"p\", \"expires\": \"2026-03-01\"}]}",
            None,
            &[(1, Some(47), "appears twice")],
        ),
    ];
    for (name, text, max, want) in cases {
        let errs = parse_ledger(F, text, *max).expect_err(name);
        let got: Vec<_> = errs
            .iter()
            .map(|e| (e.location.line, e.location.column, e.message.as_str()))
            .collect();
        assert_eq!(got.len(), want.len(), "{name}: {got:#?}");
        for ((gl, gc, gm), (wl, wc, wm)) in got.iter().zip(want.iter()) {
            assert_eq!((gl, gc), (&Some(*wl), wc), "{name}: {gm}");
            assert!(gm.contains(wm), "{name}: {gm:?} should contain {wm:?}");
        }
        for e in &errs {
            assert_eq!(e.location.file, F);
        }
    }
}

#[test]
fn committed_fixture_ledgers() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let good = std::fs::read_to_string(dir.join("project/.github/flake-ledger.json")).unwrap();
    let l = parse_ledger("flake-ledger.json", &good, Some(30)).unwrap();
    assert_eq!(l.entries.iter().map(|e| e.line).collect::<Vec<_>>(), vec![3, 11, 19]);
    assert!(l.is_frozen(&TestId::new("tests/test_pricing.py::test_bulk_discount[10-0.1]")));
    assert!(!l.is_frozen(&TestId::new("tests/test_pricing.py::test_bulk_discount_cap")));
    assert_eq!(l.entries[0].owner, "@shop/payments");
    // The invalid_ledger case: the second entry has no owner.
    let bad = std::fs::read_to_string(dir.join("cases/invalid_ledger/ledger.json")).unwrap();
    let errs = parse_ledger("ledger.json", &bad, None).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        errs[0].to_string(),
        "ledger.json:11:5: entry is missing the required field \"owner\""
    );
}

#[test]
fn param_ids_may_hold_anything() {
    let text = r#"{"frozen": [{"test": "t.py::test_p[a b::c]", "owner": "o", "expires": "2026-01-01"}]}"#;
    assert_eq!(
        parse_ledger(F, text, None).unwrap().entries[0].test,
        "t.py::test_p[a b::c]"
    );
}

proptest::proptest! {
    #[test]
    fn never_panics(s in "\\PC*") {
        let _ = parse_ledger(F, &s, Some(30));
    }

    #[test]
    fn never_panics_on_jsonish(s in "[\\[\\]{}\",:0-9a-z_\\\\ \n-]{0,80}") {
        let _ = parse_ledger(F, &s, None);
        let _ = parse_ledger(F, &format!("{{\"frozen\": [{s}]}}"), Some(3));
    }

    #[test]
    fn entry_lines_are_exact(pad in proptest::collection::vec(0usize..3, 1..6)) {
        let mut text = String::from("{\"frozen\": [");
        let mut want = Vec::new();
        let mut line = 1;
        for (i, p) in pad.iter().enumerate() {
            if i > 0 { text.push(','); }
            for _ in 0..*p { text.push('\n'); line += 1; }
            want.push(line);
            text.push_str(&format!("{{\"test\": \"a.py::t{i}\", \"owner\": \"o\\n\", \"expires\": \"2026-01-01\"}}"));
        }
        text.push_str("]}");
        let l = parse_ledger(F, &text, None).unwrap();
        proptest::prop_assert_eq!(l.entries.iter().map(|e| e.line).collect::<Vec<_>>(), want);
    }
}
