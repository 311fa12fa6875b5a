//! Bad input never panics and never passes: each gives one clear error naming
//! the file, the line (and column) and what was expected — exit status 2 for an
//! unusable question, INCONCLUSIVE `missing_evidence` for unreadable evidence.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn case_dir(name: &str) -> PathBuf {
    root().join("tests/fixtures/cases").join(name)
}

fn ledger() -> PathBuf {
    root().join("tests/fixtures/project/.github/flake-ledger.json")
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// `check` with the all_stable case's evidence, overriding some parts.
fn check(diff: &Path, coverage: &Path, extra: &[&str]) -> (i32, String, String) {
    let ev = case_dir("all_stable").join("evidence");
    let mut args = vec![
        "check",
        "--format",
        "json",
        "--today",
        "2026-11-20",
        "--diff",
        diff.to_str().unwrap(),
        "--coverage",
        coverage.to_str().unwrap(),
        "--results",
    ];
    let results = ev.join("results");
    args.push(results.to_str().unwrap());
    let l = ledger();
    if !extra.contains(&"--ledger") {
        args.extend(["--ledger", l.to_str().unwrap()]);
    }
    args.extend_from_slice(extra);
    run(&args)
}

fn good_diff() -> PathBuf {
    case_dir("all_stable").join("diff.patch")
}

fn good_cov() -> PathBuf {
    case_dir("all_stable").join("evidence/coverage.json")
}

fn reasons(stdout: &str) -> Vec<(String, String)> {
    let v: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON: {e}: {stdout}"));
    v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["code"].as_str().unwrap().into(),
                r["message"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn malformed_diff_is_unusable_input() {
    let t = tempfile::tempdir().unwrap();
    let d = write(
        t.path(),
        "bad.diff",
        b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@ \n-a\n",
    );
    let (code, _, err) = check(&d, &good_cov(), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.diff:"), "names the file: {err}");
}

/// A Latin-1 file in the patch does not make the evaluation fail: that file is blind, with the
/// diff line of its first invalid byte, and the rest of the patch is judged as usual.
#[test]
fn a_non_utf8_file_in_the_diff_is_blind_and_the_rest_is_judged() {
    let t = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(good_diff()).unwrap();
    let bad_line = bytes.iter().filter(|&&b| b == b'\n').count() + 7;
    bytes.extend_from_slice(
        b"diff --git a/src/shop/legacy.py b/src/shop/legacy.py\nindex 1111111..2222222 100644\n--- a/src/shop/legacy.py\n+++ b/src/shop/legacy.py\n@@ -1,2 +1,2 @@\n-NAME = 'cafe'\n+NAME = 'caf\xe9'\n X = 1\n",
    );
    let d = write(t.path(), "latin1.diff", &bytes);
    let (code, out, err) = check(&d, &good_cov(), &[]);
    assert_eq!(code, 0, "PASS_WITH_CAVEAT: {err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"], "PASS_WITH_CAVEAT", "{out}");
    let codes: Vec<&str> = v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["blind_lines"], "{out}");
    let files = v["files"].as_array().unwrap();
    let legacy = files
        .iter()
        .find(|f| f["path"] == "src/shop/legacy.py")
        .expect("listed");
    assert_eq!(legacy["evidence"], "blind");
    let why = legacy["blind_reason"].as_str().unwrap();
    assert!(
        why.contains("not UTF-8") && why.contains(&format!("latin1.diff:{bad_line}")),
        "{why}"
    );
    // The case's own file is still measured.
    assert!(
        files
            .iter()
            .any(|f| f["path"] != "src/shop/legacy.py" && f["evidence"] == "measured"),
        "{out}"
    );
    // And the markdown the App would post renders it.
    let (results, l) = (case_dir("all_stable").join("evidence/results"), ledger());
    let (code, md, err) = run(&[
        "check",
        "--format",
        "markdown",
        "--today",
        "2026-11-20",
        "--diff",
        d.to_str().unwrap(),
        "--coverage",
        good_cov().to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
        "--ledger",
        l.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(md.contains("legacy.py"), "{md}");
    assert!(md.contains("not UTF-8"), "{md}");
}

#[test]
fn truncated_coverage_is_inconclusive_with_its_position() {
    let t = tempfile::tempdir().unwrap();
    let full = std::fs::read(good_cov()).unwrap();
    let c = write(t.path(), "coverage.json", &full[..full.len() / 2]);
    let (code, out, err) = check(&good_diff(), &c, &[]);
    assert_eq!(code, 1, "{err}");
    let r = reasons(&out);
    assert_eq!(r[0].0, "missing_evidence");
    assert!(r[0].1.contains("coverage.json:"), "{:?}", r[0]);
}

#[test]
fn garbage_coverage_is_inconclusive() {
    let t = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("coverage.json", &b"{\"files\": [1, 2"[..]),
        ("coverage.json", b"\xff\xfe\x00garbage"),
        (".coverage", b"SQLite format 3\0 but not really"),
    ] {
        let c = write(t.path(), name, bytes);
        let (code, out, err) = check(&good_diff(), &c, &[]);
        assert_eq!(code, 1, "{name}: {err}");
        let r = reasons(&out);
        assert_eq!(r[0].0, "missing_evidence", "{name}: {out}");
        // The error names its file once.
        assert_eq!(
            r[0].1.matches(&c.display().to_string()).count(),
            1,
            "{name}: {}",
            r[0].1
        );
    }
}

#[test]
fn coverage_from_another_repository_is_inconclusive() {
    let t = tempfile::tempdir().unwrap();
    let d = write(
        t.path(),
        "other.diff",
        b"diff --git a/lib/other.py b/lib/other.py\n--- a/lib/other.py\n+++ b/lib/other.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n",
    );
    let (code, out, _) = check(&d, &good_cov(), &[]);
    assert_eq!(code, 1);
    let r = reasons(&out);
    assert_eq!(r[0].0, "evidence_mismatch", "{r:?}");
    assert!(r[0].1.contains("another repository"), "{r:?}");
}

#[test]
fn invalid_ledger_is_inconclusive_naming_the_line() {
    let t = tempfile::tempdir().unwrap();
    let l = write(
        t.path(),
        "ledger.json",
        b"{\"frozen\": [\n  {\"test\": \"tests/a.py::t\", \"expires\": \"2026-12-01\"}\n]}\n",
    );
    let (code, out, _) = check(&good_diff(), &good_cov(), &["--ledger", l.to_str().unwrap()]);
    assert_eq!(code, 1);
    let r = reasons(&out);
    assert_eq!(r[0].0, "invalid_ledger");
    assert!(r[0].1.contains("ledger.json:2"), "{r:?}");
    assert!(r[0].1.contains("owner"), "{r:?}");
}

#[test]
fn bad_config_is_unusable_and_names_the_line() {
    let t = tempfile::tempdir().unwrap();
    let c = write(
        t.path(),
        "flakegate.yml",
        b"policy:\n  strict_lines: true\n  stritc: 1\n",
    );
    let (code, _, err) = check(&good_diff(), &good_cov(), &["--config", c.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("flakegate.yml:3:"), "{err}");
    assert!(err.contains("stritc"), "{err}");
}

#[test]
fn bad_results_and_probe_are_inconclusive() {
    let t = tempfile::tempdir().unwrap();
    let r = write(
        t.path(),
        "report-log.jsonl",
        b"{\"$report_type\": \"SessionStart\"}\n{\"$report_type\": \"TestReport\", \"nodeid\": \n",
    );
    let p = write(t.path(), "probe.json", b"{\"k\": \"seven\", \"unstable\": []}");
    let (code, out, _) = check(
        &good_diff(),
        &good_cov(),
        &["--results", r.to_str().unwrap(), "--probe", p.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    let msgs: Vec<String> = reasons(&out)
        .into_iter()
        .filter(|(c, _)| c == "missing_evidence")
        .map(|(_, m)| m)
        .collect();
    assert!(msgs.iter().any(|m| m.contains("report-log.jsonl:2")), "{msgs:?}");
    assert!(msgs.iter().any(|m| m.contains("probe.json:1")), "{msgs:?}");
}

#[test]
fn missing_pieces() {
    let (code, _, err) = run(&["check", "--format", "json"]);
    assert_eq!(code, 2);
    assert!(err.contains("--diff"), "{err}");
    let (code, out, _) = run(&[
        "check",
        "--format",
        "json",
        "--diff",
        good_diff().to_str().unwrap(),
        "--today",
        "2026-11-20",
    ]);
    assert_eq!(code, 1);
    assert_eq!(reasons(&out)[0].0, "missing_evidence");
    let (code, _, err) = run(&["check", "--today", "20-11-2026", "--diff", "x"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn ledger_lint() {
    let (code, out, err) = run(&[
        "ledger",
        "lint",
        ledger().to_str().unwrap(),
        "--today",
        "2026-12-05",
        "--within",
        "7",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("expires 2026-12-09"), "{out}");
    let (code, out, _) = run(&["ledger", "lint", ledger().to_str().unwrap(), "--today", "2026-12-10"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("EXPIRED"), "{out}");
    let t = tempfile::tempdir().unwrap();
    let l = write(t.path(), "l.json", b"{\"frozen\": [{\"test\": \"x\"}]}");
    let (code, _, err) = run(&["ledger", "lint", l.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("l.json:1"), "{err}");
}
