//! `flakegate check` on LCOV evidence (docs/cli.md, "Other languages"): the C project in
//! `tests/fixtures/lcov/project`, built with `gcc --coverage`, each cmocka test run on
//! its own and captured with `lcov --capture --test-name`, the head suite's and the K
//! base runs' cmocka JUnit, and the same runs laid out as bazel-testlogs
//! (regenerate with `bash tests/fixtures/lcov/regen.sh`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn lcov() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lcov")
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// (exit code, the JSON report, stderr)
fn check(args: &[String]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["check", "--format", "json", "--today", "2026-11-20"])
        .args(args)
        .output()
        .expect("run flakegate");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr: {stderr}; stdout: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().unwrap_or(-1), json, stderr)
}

/// The case's tracefile, its head JUnit and the K JUnit probe runs.
fn tracefile_args(case: &str, ledger: &str) -> Vec<String> {
    let dir = lcov().join("cases").join(case);
    vec![
        "--diff".into(),
        s(&dir.join("diff.patch")),
        "--ledger".into(),
        s(&lcov().join(ledger)),
        "--coverage".into(),
        s(&dir.join("evidence/coverage.info")),
        "--results".into(),
        s(&dir.join("evidence/results")),
        "--probe".into(),
        s(&lcov().join("probe")),
    ]
}

fn codes(v: &Value) -> Vec<String> {
    v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .collect()
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|t| t.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// (case, verdict, first code, stable, frozen, unstable, exit code)
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
    i32,
);

#[test]
fn lcov_cases_cover_the_decision_table() {
    let table: &[Row] = &[
        ("all_stable", "PASS", "all_stable", &["test_add"], &[], &[], 0),
        (
            "some_frozen",
            "PASS_WITH_CAVEAT",
            "some_frozen",
            &["test_mul"],
            &["test_mul_legacy"],
            &[],
            0,
        ),
        (
            "frozen_only",
            "INCONCLUSIVE",
            "frozen_only",
            &[],
            &[],
            &["test_divide_timing"],
            1,
        ),
        ("failed", "FAIL", "failed", &["test_sub"], &[], &[], 1),
        ("uncovered", "INCONCLUSIVE", "uncovered", &[], &[], &[], 1),
    ];
    for (case, verdict, code, stable, frozen, unstable, exit) in table {
        let (rc, r, stderr) = check(&tracefile_args(case, "ledger.json"));
        assert_eq!(r["verdict"], *verdict, "{case}: {r:#}\n{stderr}");
        assert_eq!(codes(&r).first().map(String::as_str), Some(*code), "{case}");
        assert_eq!(rc, *exit, "{case}");
        let w = &r["witnesses"];
        assert_eq!(names(&w["stable"]), *stable, "{case}");
        assert_eq!(names(&w["frozen"]), *frozen, "{case}");
        assert_eq!(names(&w["unstable"]), *unstable, "{case}");
        assert!(w.get("unjoined").is_none(), "{case}: every id joins: {w}");
        // The tracefile's absolute SF: path is mapped by suffix, and said so.
        assert!(
            names(&r["notes"])
                .iter()
                .any(|n| n.contains("was mapped to calc/calc.c by suffix")),
            "{case}: {}",
            r["notes"]
        );
    }
}

/// The probe: cmocka JUnit of K=5 base runs, joined to the tracefile's TN: names.
#[test]
fn the_junit_probe_joins_lcov_test_names() {
    let (_, r, _) = check(&tracefile_args("frozen_only", "ledger.json"));
    let probe = &r["probe"];
    assert_eq!(probe["k"], 5, "{probe:#}");
    let tests = probe["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 1, "{probe:#}");
    assert_eq!(tests[0]["test"], "test_divide_timing");
    assert_eq!(tests[0]["failures"], 2);
    assert_eq!(tests[0]["runs"], 5);
    assert_eq!(tests[0]["stability"], "unstable");
}

/// The coverage loop named its tests `calc_test_*`, the runner's JUnit `test_*`: no witness
/// joins a head result, each is named and blind (never stable), and so are the JUnit cases.
#[test]
fn unjoined_ids_are_named_and_blind() {
    let (rc, r, _) = check(&tracefile_args("unjoined", "ledger.json"));
    assert_eq!(r["verdict"], "INCONCLUSIVE", "{r:#}");
    assert_eq!(rc, 1);
    assert_eq!(codes(&r)[0], "frozen_only");
    assert_eq!(names(&r["witnesses"]["unjoined"]), ["calc_test_add"]);
    assert!(names(&r["witnesses"]["stable"]).is_empty());
    let notes = names(&r["notes"]).join("\n");
    for id in ["calc_test_add", "calc_test_sub", "calc_test_divide_timing"] {
        assert!(notes.contains(id), "{id} not named: {notes}");
    }
    let unmatched = names(&r["results"]["unmatched"]).join("\n");
    assert!(
        unmatched.contains("test_add") && unmatched.contains("no node id from coverage matches"),
        "{unmatched}"
    );
}

/// bazel-testlogs/<package>/<target>/{coverage.dat,test.xml}: the label is the test id.
#[test]
fn bazel_testlogs_name_tests_by_label() {
    for (case, verdict, stable, frozen) in [
        (
            "some_frozen",
            "PASS_WITH_CAVEAT",
            &["//calc:test_mul"][..],
            &["//calc:test_mul_legacy"][..],
        ),
        ("failed", "FAIL", &["//calc:test_sub"][..], &[][..]),
    ] {
        let dir = lcov().join("cases").join(case);
        let logs = s(&dir.join("bazel-testlogs"));
        let args = vec![
            "--diff".to_string(),
            s(&dir.join("diff.patch")),
            "--ledger".into(),
            s(&lcov().join("ledger-bazel.json")),
            "--coverage".into(),
            logs.clone(),
            "--results".into(),
            logs,
        ];
        let (_, r, stderr) = check(&args);
        assert_eq!(r["verdict"], verdict, "{case}: {r:#}\n{stderr}");
        assert_eq!(names(&r["witnesses"]["stable"]), stable, "{case}");
        assert_eq!(names(&r["witnesses"]["frozen"]), frozen, "{case}");
        let cov = r["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["role"] == "coverage")
            .expect("a coverage digest");
        assert_eq!(cov["sha256"].as_str().map(str::len), Some(64), "{cov}");
        if case == "failed" {
            let failures = r["results"]["failures"].to_string();
            assert!(failures.contains("//calc:test_sub"), "{failures}");
        }
    }
}

/// A directory of tracefiles reads as their concatenation.
#[test]
fn a_directory_of_tracefiles() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(lcov().join("cases/some_frozen/evidence/coverage.info")).unwrap();
    // Split at a record boundary after a test's section: two tracefiles of whole records.
    let cut = text.match_indices("end_of_record\nTN:test_mul\n").next().unwrap().0 + "end_of_record\n".len();
    std::fs::write(tmp.path().join("a.info"), &text[..cut]).unwrap();
    std::fs::write(tmp.path().join("b.info"), &text[cut..]).unwrap();
    let mut args = tracefile_args("some_frozen", "ledger.json");
    args[5] = s(tmp.path());
    let (_, r, _) = check(&args);
    assert_eq!(r["verdict"], "PASS_WITH_CAVEAT", "{r:#}");
    assert_eq!(names(&r["witnesses"]["frozen"]), ["test_mul_legacy"]);
}

/// Bad tracefiles: INCONCLUSIVE naming the file, the line and what was expected; never a panic.
#[test]
fn bad_tracefiles_name_file_line_and_expectation() {
    let tmp = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(lcov().join("cases/all_stable/evidence/coverage.info")).unwrap();
    let truncated_at = good.lines().take_while(|l| *l != "end_of_record").count();
    let cases: Vec<(&str, String, String)> = vec![
        (
            "bad-da.info",
            good.replacen("DA:5,1", "DA:five,1", 1),
            "DA: line number: expected a non-negative integer".into(),
        ),
        (
            "truncated.info",
            good.lines().take(truncated_at).collect::<Vec<_>>().join("\n"),
            "no end_of_record: the tracefile is truncated".into(),
        ),
        (
            "garbage.info",
            "TN:x\nSF:calc/calc.c\nbogus line\nend_of_record\n".into(),
            ":3:1: expected KEY:VALUE".into(),
        ),
    ];
    for (name, text, want) in cases {
        assert_ne!(text, good, "{name}: the corruption applied");
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        let mut args = tracefile_args("all_stable", "ledger.json");
        args[5] = s(&path);
        let (rc, r, stderr) = check(&args);
        assert_eq!(r["verdict"], "INCONCLUSIVE", "{name}: {r:#}");
        assert_eq!(rc, 1, "{name}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        let first = &r["reasons"][0];
        assert_eq!(first["code"], "missing_evidence", "{name}");
        let msg = first["message"].as_str().unwrap();
        assert!(msg.contains(name) && msg.contains(&want), "{name}: {msg}");
    }
}

/// The ledger accepts LCOV test names and Bazel labels (`ledger lint`).
#[test]
fn ledger_lint_accepts_other_test_ids() {
    for ledger in ["ledger.json", "ledger-bazel.json"] {
        let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
            .args(["ledger", "lint"])
            .arg(lcov().join(ledger))
            .args(["--today", "2026-11-20"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{ledger}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A ledger of pytest node ids judged against LCOV evidence: an error naming both kinds.
#[test]
fn a_ledger_of_another_id_kind_is_an_error_naming_both() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut args = tracefile_args("all_stable", "ledger.json");
    args[3] = s(&root.join("tests/fixtures/project/.github/flake-ledger.json"));
    let (rc, r, _) = check(&args);
    assert_eq!(r["verdict"], "INCONCLUSIVE", "{r:#}");
    assert_eq!(rc, 1);
    let reason = r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "invalid_ledger")
        .unwrap_or_else(|| panic!("no invalid_ledger: {r:#}"));
    let msg = reason["message"].as_str().unwrap();
    assert!(
        msg.contains("flake-ledger.json")
            && msg.contains("a pytest node id")
            && msg.contains("an LCOV test name")
            && msg.contains("coverage.info"),
        "{msg}"
    );
}
