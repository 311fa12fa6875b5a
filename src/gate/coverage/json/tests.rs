use super::*;
use crate::gate::nodeid::Phase;
use oracle::read_json_stream;
use proptest::prelude::*;

/// The previous reader, the oracle the scan is compared with (test code shared with the
/// integration tests).
mod oracle {
    /// The gate as the oracle names it from outside the crate.
    mod flakegate {
        pub use crate::gate;
    }
    include!("../../../../tests/common/coverage_oracle.rs");
}

/// Real `coverage json --show-contexts` output (tests/fixtures, regen.sh):
/// embedded at compile time, so `gate` opens no files, even in tests.
const ALL_STABLE: &[u8] = include_bytes!("../../../../tests/fixtures/cases/all_stable/evidence/coverage.json");
const STATIC_CONTEXT: &[u8] =
    include_bytes!("../../../../tests/fixtures/coverage-variants/static-context/coverage.json");
const BRANCH: &[u8] = include_bytes!("../../../../tests/fixtures/coverage-variants/branch/coverage.json");
const ABSOLUTE: &[u8] = include_bytes!("../../../../tests/fixtures/coverage-variants/absolute/coverage.json");
const NEW_MODULE: &[u8] = include_bytes!("../../../../tests/fixtures/cases/new_module/evidence/coverage.json");

const SHOP: [&str; 5] = [
    "src/shop/__init__.py",
    "src/shop/cart.py",
    "src/shop/pricing.py",
    "src/shop/refunds.py",
    "src/shop/util.py",
];

fn read(bytes: &[u8], paths: &[&str]) -> Result<Coverage, InputError> {
    read_json("coverage.json", bytes, &PathMatcher::new(paths.iter().copied()))
}

fn tests_of(fc: &FileCoverage, line: u32) -> Vec<(String, Vec<Phase>)> {
    fc.witnesses
        .get(&line)
        .map(|w| {
            w.iter()
                .map(|(t, p)| (t.0.clone(), p.iter().copied().collect()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn reads_the_real_report() {
    let cov = read(ALL_STABLE, &["src/shop/pricing.py", "src/shop/cart.py"]).unwrap();
    assert_eq!(cov.format, CoverageFormat::Json);
    assert_eq!(cov.measured_files, 5);
    assert!(cov.has_test_contexts);
    assert!(cov.mapped_paths.is_empty());
    assert!(cov.foreign_contexts.is_empty(), "{:?}", cov.foreign_contexts);
    assert_eq!(
        cov.files.keys().collect::<Vec<_>>(),
        ["src/shop/cart.py", "src/shop/pricing.py"]
    );
    let pricing = &cov.files["src/shop/pricing.py"];
    assert!(pricing.has_statements);
    // pricing.py:19 (apply_tax): the all_stable case's changed line.
    assert_eq!(
        tests_of(pricing, 19),
        [
            (
                "tests/test_cart.py::TestCart::test_stocked_total".to_string(),
                vec![Phase::Run]
            ),
            ("tests/test_cart.py::TestCart::test_total".to_string(), vec![Phase::Run]),
            ("tests/test_pricing.py::test_apply_tax".to_string(), vec![Phase::Run]),
        ]
    );
    assert!(pricing.executed.contains(&19));
    // pricing.py:8-9 run only at import time (context "").
    assert!(pricing.import_time.contains(&8) && pricing.import_time.contains(&9));
    assert!(!pricing.witnesses.contains_key(&8));
    // Line 1 (the docstring) has a context but is not a statement.
    assert!(pricing.import_time.contains(&1) && !pricing.executed.contains(&1));
    // The function regions: each `def` line with its body's lines (the module's `""` region is not kept).
    let regions: Vec<(u32, Vec<u32>)> = pricing
        .regions
        .iter()
        .map(|(def, body)| (*def, body.iter().copied().collect()))
        .collect();
    assert!(regions.contains(&(15, vec![16, 17, 18, 19, 20])), "{regions:?}");
    assert!(regions.contains(&(6, vec![8, 9])), "{regions:?}");
    assert!(regions.iter().all(|(def, _)| *def > 1), "{regions:?}");
    // A class region (Cart, line 6) holds its methods' bodies; a decorated method's region
    // starts at its `def` line (12), not at `@classmethod` (11).
    let cart = &cov.files["src/shop/cart.py"];
    assert!(cart
        .regions
        .iter()
        .any(|(def, body)| *def == 6 && body.contains(&13) && body.contains(&31)));
    assert!(cart.regions.iter().any(|(def, _)| *def == 12) && !cart.regions.iter().any(|(def, _)| *def == 11));
    // A parametrised id containing `|`, and pytest's escaped non-ASCII id.
    let all: BTreeSet<&str> = pricing
        .witnesses
        .values()
        .flat_map(|w| w.keys())
        .map(|t| t.as_str())
        .collect();
    assert!(
        all.contains("tests/test_pricing.py::test_discount[half|code]"),
        "{all:?}"
    );
    assert!(
        all.contains("tests/test_pricing.py::test_discount[caf\\xe9]"),
        "{all:?}"
    );
    // Setup/teardown phases of the yield fixture (cart.py:13-17, 31-34).
    let cart = &cov.files["src/shop/cart.py"];
    assert_eq!(
        tests_of(cart, 31),
        [
            (
                "tests/test_cart.py::TestCart::test_stocked_total".to_string(),
                vec![Phase::Teardown]
            ),
            (
                "tests/test_cart.py::test_stocked_subtotal".to_string(),
                vec![Phase::Teardown]
            ),
        ]
    );
}

#[test]
fn missing_lines_and_the_empty_init() {
    let cov = read(ALL_STABLE, &SHOP).unwrap();
    let util = &cov.files["src/shop/util.py"];
    for l in 19..=21 {
        assert!(
            util.missing.contains(&l),
            "util.py:{l} is missing (legacy_currency_code)"
        );
        assert!(!util.witnesses.contains_key(&l));
    }
    // `__init__.py` is empty: its only context entry is line 0, which is ignored.
    let init = &cov.files["src/shop/__init__.py"];
    assert_eq!(
        init,
        &FileCoverage {
            has_statements: true,
            ..Default::default()
        }
    );
}

#[test]
fn a_file_the_matcher_does_not_name_is_not_materialised() {
    let cov = read(ALL_STABLE, &["src/shop/util.py", "README.md"]).unwrap();
    assert_eq!(cov.files.keys().collect::<Vec<_>>(), ["src/shop/util.py"]);
    assert_eq!(cov.measured_files, 5);
    // No file selected at all: test contexts are still found in skipped files.
    let cov = read(ALL_STABLE, &["docs/x.md"]).unwrap();
    assert!(cov.files.is_empty());
    assert!(cov.has_test_contexts);
    assert_eq!(cov.measured_files, 5);
}

#[test]
fn new_module_in_source_is_measured_with_all_lines_missing() {
    let cov = read(NEW_MODULE, &["src/shop/loyalty.py", "tools/seed_catalog.py"]).unwrap();
    assert_eq!(cov.measured_files, 6);
    assert_eq!(cov.files.keys().collect::<Vec<_>>(), ["src/shop/loyalty.py"]);
    let l = &cov.files["src/shop/loyalty.py"];
    assert!(l.executed.is_empty() && l.witnesses.is_empty());
    assert_eq!(l.missing.iter().copied().collect::<Vec<_>>(), [4, 5, 6, 7]);
}

#[test]
fn static_context_prefix_is_stripped() {
    let plain = read(ALL_STABLE, &SHOP).unwrap();
    let stat = read(STATIC_CONTEXT, &SHOP).unwrap();
    assert!(stat.has_test_contexts);
    // `py311` alone is import-time code under the static context, not foreign.
    assert!(stat.foreign_contexts.is_empty(), "{:?}", stat.foreign_contexts);
    for path in SHOP {
        let (a, b) = (&plain.files[path], &stat.files[path]);
        assert_eq!(a.witnesses, b.witnesses, "{path}");
        assert_eq!(a.import_time, b.import_time, "{path}");
        assert_eq!(a.executed, b.executed, "{path}");
    }
}

#[test]
fn branch_report_gives_the_same_witnesses() {
    let line = read(ALL_STABLE, &SHOP).unwrap();
    let branch = read(BRANCH, &SHOP).unwrap();
    for path in SHOP {
        assert_eq!(line.files[path].witnesses, branch.files[path].witnesses, "{path}");
        assert_eq!(line.files[path].executed, branch.files[path].executed, "{path}");
    }
}

#[test]
fn absolute_variant_json_is_relative_and_suffix_mapping_works() {
    // coverage json relativises to the cwd even without relative_files.
    let cov = read(ABSOLUTE, &SHOP).unwrap();
    assert!(cov.mapped_paths.is_empty());
    assert_eq!(cov.files.len(), 5);
    // Hand-made absolute names map by suffix, are listed, and merge.
    let json = br#"{"files": {
            "/home/ci/work/shop/src/shop/a.py": {"executed_lines": [1], "contexts": {"1": ["tests/t.py::test_a|run"]}},
            "src/shop/a.py": {"executed_lines": [2], "contexts": {"2": ["tests/t.py::test_b|setup"]}},
            "/home/ci/work/shop/lib/src/shop/b.py": {"executed_lines": [3]},
            "/elsewhere/xsrc/shop/a.py": {"executed_lines": [9]}
        }, "meta": {"show_contexts": true}}"#;
    let cov = read(json, &["src/shop/a.py", "src/shop/b.py"]).unwrap();
    assert_eq!(cov.measured_files, 4);
    assert_eq!(
        cov.mapped_paths,
        [
            (
                "/home/ci/work/shop/src/shop/a.py".to_string(),
                "src/shop/a.py".to_string()
            ),
            (
                "/home/ci/work/shop/lib/src/shop/b.py".to_string(),
                "src/shop/b.py".to_string()
            ),
        ]
    );
    let a = &cov.files["src/shop/a.py"];
    assert_eq!(a.executed.iter().copied().collect::<Vec<_>>(), [1, 2]);
    assert_eq!(tests_of(a, 2), [("tests/t.py::test_b".to_string(), vec![Phase::Setup])]);
}

#[test]
fn keys_in_any_order_and_unknown_keys() {
    let json = br#"{"totals": {"x": [1, {"y": null}]}, "files": {"a.py": {
            "contexts": {"3": ["t.py::test_x|run", "", "t.py::test_x|teardown"], "2": [""]},
            "future_key": {"deep": [[1.5e3, true, "s"]]},
            "executed_lines": [3, 2], "missing_lines": [4], "excluded_lines": [5],
            "functions": {"f": {"contexts": {"7": ["t.py::test_bogus|run"]}}}
        }}, "meta": {"version": "7.17.5", "show_contexts": true, "extra": {}}}"#;
    let cov = read(json, &["a.py"]).unwrap();
    let a = &cov.files["a.py"];
    assert_eq!(a.executed.iter().copied().collect::<Vec<_>>(), [2, 3]);
    assert_eq!(a.missing.iter().copied().collect::<Vec<_>>(), [4]);
    assert_eq!(a.excluded.iter().copied().collect::<Vec<_>>(), [5]);
    assert_eq!(
        tests_of(a, 3),
        [("t.py::test_x".to_string(), vec![Phase::Run, Phase::Teardown])]
    );
    assert_eq!(a.import_time.iter().copied().collect::<Vec<_>>(), [2, 3]);
    // Contexts of function/class regions are ignored (they repeat the file's).
    assert!(!a.witnesses.contains_key(&7));
}

#[test]
fn excluded_lines_may_have_contexts() {
    let json = br#"{"meta": {"show_contexts": true}, "files": {"a.py": {"executed_lines": [1],
            "excluded_lines": [2], "contexts": {"1": ["t.py::test_a|run"], "2": ["t.py::test_a|run"]}}}}"#;
    let a = read(json, &["a.py"]).unwrap().files.remove("a.py").unwrap();
    assert!(a.excluded.contains(&2) && a.witnesses.contains_key(&2));
}

#[test]
fn test_contexts_absent() {
    // `coverage json` without --show-contexts: no `contexts` key at all.
    let json =
        br#"{"meta": {"show_contexts": false}, "files": {"a.py": {"executed_lines": [1, 2], "missing_lines": []}}}"#;
    let cov = read(json, &["a.py"]).unwrap();
    assert!(!cov.has_test_contexts);
    assert_eq!(cov.files["a.py"].executed.len(), 2);
    // --show-contexts without --cov-context=test: every context is "".
    let json =
        br#"{"meta": {"show_contexts": true}, "files": {"a.py": {"executed_lines": [1], "contexts": {"1": [""]}},
            "b.py": {"contexts": {"1": [""]}}}}"#;
    assert!(!read(json, &["a.py"]).unwrap().has_test_contexts);
    // meta says no, whatever the files say.
    let json = br#"{"meta": {"show_contexts": false}, "files": {"a.py": {"contexts": {"1": ["t.py::test_a|run"]}}}}"#;
    assert!(!read(json, &["a.py"]).unwrap().has_test_contexts);
    // No meta (hand-made): the contexts decide.
    let json = br#"{"files": {"a.py": {"contexts": {"1": ["t.py::test_a|run"]}}}}"#;
    assert!(read(json, &["a.py"]).unwrap().has_test_contexts);
}

#[test]
fn foreign_contexts_are_sampled() {
    let json = br#"{"meta": {"show_contexts": true}, "files": {"a.py": {"executed_lines": [1],
            "contexts": {"1": ["tests.test_a.test_x", "t.py::test_a|run"]}}}}"#;
    let cov = read(json, &["a.py"]).unwrap();
    assert_eq!(cov.foreign_contexts, ["tests.test_a.test_x"]);
    assert!(cov.has_test_contexts);
}

fn err(bytes: &[u8]) -> InputError {
    read(bytes, &SHOP).expect_err("must fail")
}

#[test]
fn errors_carry_line_and_column() {
    let e = err(&ALL_STABLE[..ALL_STABLE.len() / 2]);
    assert!(e.location.line.is_some() && e.location.column.is_some(), "{e}");
    assert!(e.message.contains("EOF"), "{e}");
    assert_eq!(e.location.file, "coverage.json");

    let e = err(b"{\"meta\": {},\n  \"files\": {\"x.py\": [1,,2]}}");
    assert_eq!((e.location.line, e.location.column), (Some(2), Some(24)), "{e}");

    let e = err(b"garbage");
    assert_eq!(e.location.line, Some(1), "{e}");

    let e = err(b"[1, 2]");
    assert!(e.message.contains("coverage.py JSON report"), "{e}");

    let e = err(b"{\"meta\": {}}");
    assert!(
        e.location.line.is_none() && e.message.contains("no \"files\" object"),
        "{e}"
    );

    let e = err(b"{\"files\": {}} trailing");
    assert!(e.message.contains("trailing"), "{e}");

    // Wrong types in a selected file.
    let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"executed_lines\": [1, \"2\"]}}}");
    assert_eq!(e.location.line, Some(1), "{e}");
    assert!(e.message.contains("expected u32"), "{e}");
    let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"executed_lines\": [-3]}}}");
    assert!(e.message.contains("u32"), "{e}");
    let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"executed_lines\": {}}}}");
    assert!(e.message.contains("an array of line numbers"), "{e}");
    let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"1\": \"t.py::test_a|run\"}}}}");
    assert!(e.message.contains("an array of context names"), "{e}");
    let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"1\": [3]}}}}");
    assert!(e.message.contains("a context name"), "{e}");
    let e = err(b"{\"files\": [\"src/shop/cart.py\"]}");
    assert!(e.message.contains("file name"), "{e}");

    // A context line key that is no number.
    let e = err(b"{\"files\": {\n\"src/shop/cart.py\": {\"contexts\": {\"12a\": [\"\"]}}}}");
    assert_eq!(e.location.line, Some(2), "{e}");
    assert!(e.location.column.is_some());
    assert!(e.message.contains("\"12a\" is not a line number"), "{e}");
    let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"-1\": [\"\"]}}}}");
    assert!(e.message.contains("not a line number"), "{e}");
}

#[test]
fn invalid_utf8_anywhere_is_an_error_with_position() {
    // In a skipped file (serde_json does not check skipped strings).
    let mut bytes = b"{\"files\": {\"skipped.py\": {\"contexts\": {\"1\": [\"t.py::test_".to_vec();
    bytes.extend_from_slice(b"\xff");
    bytes.extend_from_slice(b"|run\"]}}}}");
    let e = err(&bytes);
    assert_eq!((e.location.line, e.location.column), (Some(1), Some(58)), "{e}");
    assert!(e.message.contains("UTF-8"), "{e}");
    // On a later line, after a valid multi-byte character.
    let mut bytes = "{\"files\": {\n\"é.py\": {\"x\": \"".as_bytes().to_vec();
    bytes.extend_from_slice(b"\xc3\x28\"}}}");
    let e = err(&bytes);
    assert_eq!(e.location.line, Some(2), "{e}");
    assert_eq!(e.location.column, Some(17), "{e}");
    // A truncated multi-byte sequence at the very end.
    let e = err(b"{\"files\": {\"a\xc3");
    assert!(e.message.contains("UTF-8"), "{e}");
    // In a selected file.
    let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"1\": [\"\xfe\"]}}}}");
    assert!(e.location.line.is_some(), "{e}");
    // An earlier syntax error wins over later invalid UTF-8.
    let e = err(b"{\"files\": {\"a\": [1,,]}, \"x\": \"\xff\"}");
    assert!(!e.message.contains("UTF-8"), "{e}");
}

/// A reader that returns at most `n` bytes per call (exercises the guard's
/// handling of multi-byte characters split across reads).
struct Trickle<'a>(&'a [u8], usize);
impl std::io::Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.len().min(self.1).min(out.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn split_reads_give_the_same_result() {
    let whole = read(ALL_STABLE, &SHOP).unwrap();
    for n in [1, 2, 3, 7, 4096] {
        let m = PathMatcher::new(SHOP);
        assert_eq!(
            read_json("coverage.json", Trickle(ALL_STABLE, n), &m).unwrap(),
            whole,
            "chunk {n}"
        );
    }
    let json = "{\"files\": {\"é/ü.py\": {\"contexts\": {\"1\": [\"t.py::test_ß[€]|run\"]}}}}".as_bytes();
    for n in 1..6 {
        let m = PathMatcher::new(["é/ü.py"]);
        let cov = read_json("c.json", Trickle(json, n), &m).unwrap();
        assert_eq!(
            tests_of(&cov.files["é/ü.py"], 1),
            [("t.py::test_ß[€]".to_string(), vec![Phase::Run])]
        );
    }
}

#[test]
fn io_errors_are_reported() {
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    let e = read_json("c.json", Broken, &PathMatcher::new(SHOP)).unwrap_err();
    assert!(e.message.contains("disk on fire"), "{e}");
}
/// The new reader with tiny blocks and buffers (every key, value and escape
/// cut by a block's end; values streamed), the default one, and the previous
/// reader: the same `Coverage`, or errors at the same line.
fn agree(bytes: &[u8], paths: &[&str]) -> Result<Coverage, InputError> {
    let m = PathMatcher::new(paths.iter().copied());
    let old = read_json_stream("coverage.json", bytes, &m);
    for (block, most) in [
        (1, 1),
        (3, 5),
        (7, 64),
        (64, 1 << 10),
        (4096, 1 << 20),
        (scan::BLOCK, scan::BUFFER_AT_MOST),
    ] {
        let blocks = read_json_blocks("coverage.json", bytes, &m, block, most);
        // The slice path with the same steps; `consumed` only grows.
        let mut last = 0;
        let slice = read_json_slice_steps(
            "coverage.json",
            bytes,
            &m,
            &mut |n| {
                assert!(n >= last && n <= bytes.len(), "consumed {n} after {last}");
                last = n;
            },
            block,
            most,
        );
        for (path, new) in [("blocks", &blocks), ("slice", &slice)] {
            match (&old, new) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{path}: block {block}, buffer {most}"),
                (Err(a), Err(b)) => {
                    // serde_json's reader path names the position after the byte it read
                    // last: a raw newline inside a string is counted before it is named a
                    // control character, and a value at the end of a line is known to have
                    // ended only once the newline after it was read — either way the next
                    // line, column 0. The block reader names the value's own line (and streams
                    // a value past the buffer's bound through that same reader path).
                    let newline_in_string = |a: &InputError, b: &InputError| {
                        a.location.column == Some(0) && a.location.line.map(|l| l - 1) == b.location.line
                    };
                    assert!(
                        a.location.line == b.location.line || newline_in_string(a, b) || newline_in_string(b, a),
                        "{path}: block {block}, buffer {most}: {a} / {b}"
                    );
                    assert_eq!(a.location.file, b.location.file);
                }
                _ => panic!("{path}: block {block}, buffer {most}: previous {old:?}, new {new:?}"),
            }
        }
    }
    old
}

#[test]
fn the_previous_reader_agrees_on_every_embedded_report() {
    for bytes in [ALL_STABLE, STATIC_CONTEXT, BRANCH, ABSOLUTE, NEW_MODULE] {
        for paths in [
            &SHOP[..],
            &["src/shop/cart.py"],
            &[],
            &["src/shop/loyalty.py", "shop/util.py"],
        ] {
            agree(bytes, paths).unwrap();
        }
    }
}

#[test]
fn the_previous_reader_agrees_on_the_error_cases() {
    let cases: [&[u8]; 14] = [
        b"",
        b"   ",
        b"garbage",
        b"[1, 2]",
        b"{\"meta\": {}}",
        b"{\"files\": {}} trailing",
        b"{\"files\": {},}",
        b"{\"files\": {\"a\" 1}}",
        b"{\"files\": {\"a\": 1 \"b\": 2}}",
        b"{\"files\": {1: 2}}",
        b"{\"meta\": {},\n  \"files\": {\"x.py\": [1,,2]}}",
        b"{\"files\": {\"a\\u00e9\\\"b\": {}, \"c\\q\": {}}}",
        b"{\"files\": {\"a\x01\": {}}}",
        b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"1\": [3]}}}}",
    ];
    for c in cases {
        let _ = agree(c, &SHOP);
    }
    // Numbers at the end of a file's value (cut by every block's end in `agree`).
    agree(b"{\"files\": {\"a\": 12, \"b\": -3.5e10, \"c\": true}}", &["x.py"]).unwrap();
    agree(b"{\"files\": {\"a\": {}}, \"totals\": 1234}", &["x.py"]).unwrap();
    assert!(agree(b"{\"files\": {\"a\\u00e9\\\"b\": {}}}", &["a\u{e9}\"b"])
        .unwrap()
        .files
        .contains_key("a\u{e9}\"b"));
}

#[test]
fn errors_name_the_byte_offset() {
    let e = read(b"{\"files\": {\"a\": 1 \"b\": 2}}", &SHOP).unwrap_err();
    assert!(e.message.contains("(byte 18)"), "{e}");
    let mut bytes = b"{\"files\": {\"a\": \"".to_vec();
    bytes.extend_from_slice(b"\xff\"}}");
    let e = read(&bytes, &SHOP).unwrap_err();
    assert!(e.message.contains("byte 17"), "{e}");
}

/// (file name, [(line, contexts)]) of a generated report.
type GenFile = (String, Vec<(u32, Vec<String>)>);

/// A report shaped like coverage.py's, from generated parts.
fn report(files: &[GenFile], pretty: bool) -> Vec<u8> {
    let mut fs = serde_json::Map::new();
    for (name, lines) in files {
        let contexts: serde_json::Map<String, serde_json::Value> = lines
            .iter()
            .map(|(l, cs)| (l.to_string(), serde_json::json!(cs)))
            .collect();
        let executed: Vec<u32> = lines.iter().map(|(l, _)| *l).collect();
        fs.insert(
            name.clone(),
            serde_json::json!({"executed_lines": executed, "summary": {"n": 1.5}, "missing_lines": [99],
                "excluded_lines": [], "contexts": contexts,
                "functions": {"f": {"start_line": 2, "executed_lines": executed, "contexts": contexts}}}),
        );
    }
    let v = serde_json::json!({"meta": {"show_contexts": true, "version": "7.17.5"}, "files": fs, "totals": {}});
    if pretty {
        serde_json::to_vec_pretty(&v).unwrap()
    } else {
        serde_json::to_vec(&v).unwrap()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn the_previous_reader_agrees_on_generated_reports(
        files in proptest::collection::vec(
            ("(src/)?[a-zé\\\\\"]{1,6}\\.py", proptest::collection::vec(
                (0u32..40, proptest::collection::vec("(tests/t\\.py::test_[a-zß\\[\\]|\\\\\"]{1,8}\\|(run|setup|teardown))|py311|", 0..4)),
                0..6)),
            0..6),
        pretty in any::<bool>(),
        pick in 0usize..8,
    ) {
        let bytes = report(&files, pretty);
        let names: Vec<&str> = files.iter().enumerate().filter(|(i, _)| i % 2 == pick % 2).map(|(_, f)| f.0.as_str()).collect();
        agree(&bytes, &names).unwrap();
        // Every truncation and a corrupted byte agree too.
        let cut = bytes.len() * pick / 8;
        let _ = agree(&bytes[..cut], &names);
        let mut bad = bytes.clone();
        if !bad.is_empty() {
            let at = bad.len() * pick / 8 % bad.len();
            bad[at] = [b',', b'}', b'"', b'\\', 0xff, b' ', b'1', b']'][pick];
            let _ = agree(&bad, &names);
        }
    }

    #[test]
    fn the_previous_reader_agrees_on_corrupted_real_reports(at in 0usize..ALL_STABLE.len(), byte in any::<u8>()) {
        let mut bytes = ALL_STABLE.to_vec();
        bytes[at] = byte;
        let _ = agree(&bytes, &SHOP);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = read(&bytes, &SHOP);
    }

    #[test]
    fn never_panics_on_json_like_bytes(s in r#"[{}\[\]":,0-9a-z|\\ \n.-]{0,200}"#) {
        let _ = read(s.as_bytes(), &["a.py", "b"]);
        let wrapped = format!("{{\"files\": {{\"a.py\": {{\"contexts\": {s}}}}}}}");
        let _ = read(wrapped.as_bytes(), &["a.py"]);
    }

    #[test]
    fn truncations_of_a_real_report_fail_cleanly(cut in 0usize..ALL_STABLE.len()) {
        let e = read(&ALL_STABLE[..cut], &SHOP);
        // Every proper prefix of the report is incomplete JSON.
        let e = e.expect_err("a truncated report must not parse");
        prop_assert!(e.location.line.is_some() || cut == 0, "{}", e);
    }

    #[test]
    fn corrupted_real_report_never_panics(at in 0usize..ALL_STABLE.len(), byte in any::<u8>()) {
        let mut bytes = ALL_STABLE.to_vec();
        bytes[at] = byte;
        let _ = read(&bytes, &SHOP);
    }
}
