//! `flakegate check --base` on a release that adds modules in every shape where a line is
//! not a statement (docstrings, `else:`/`try:`/`finally:` lines, continuation lines,
//! implicit string continuations, entries of multi-line literals, excluded lines; the
//! real runs of `tests/fixtures/statements/`): the `.coverage` data file and the same run's
//! coverage.json give the same verdict, reasons and blind lines, in line and branch mode.
//! With `--diff` alone the head's source is unknown, and the report says so.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{copy_dir, git};

fn out() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/statements/out")
}

/// A checkout whose head adds the fixture's package and tests onto a base without them.
fn checkout() -> (tempfile::TempDir, String) {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path();
    std::fs::write(repo.join("README.md"), "statements\n").unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "base"]);
    let base = git(repo, &["rev-parse", "HEAD"]);
    copy_dir(&out().join("src"), &repo.join("src"));
    copy_dir(&out().join("tests"), &repo.join("tests"));
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "head"]);
    (t, base)
}

fn check(repo: &Path, args: &[&str], coverage: &Path, results: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["check", "--format", "json", "--today", "2026-11-20"])
        .args(args)
        .arg("--coverage")
        .arg(coverage)
        .arg("--results")
        .arg(results)
        .current_dir(repo)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// What must agree: verdict, reasons (with the blind lines they list), and per file the
/// lines by class.
fn judged(v: &Value) -> Value {
    let files: Vec<Value> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            serde_json::json!({
                "path": f["path"], "evidence": f["evidence"], "lines": f["lines"],
                "stable": f["stable_lines"], "uncovered": f["uncovered_lines"],
                "frozen_only": f["frozen_only_lines"],
            })
        })
        .collect();
    serde_json::json!({"verdict": v["verdict"], "reasons": v["reasons"], "files": files})
}

/// Changed lines of `path` that the report calls uncovered.
fn uncovered(v: &Value, path: &str) -> Vec<u64> {
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} not in {:#}", v["files"]))["uncovered_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_u64().unwrap())
        .collect()
}

#[test]
fn data_file_and_coverage_json_give_one_verdict_and_the_same_blind_lines() {
    let (t, base) = checkout();
    for mode in ["line", "branch"] {
        let dir = out().join(mode);
        let results = dir.join("results");
        let json = check(t.path(), &["--base", &base], &dir.join("coverage.json"), &results);
        let db = check(t.path(), &["--base", &base], &dir.join(".coverage"), &results);
        assert_eq!(db["coverage"]["format"], "data_file", "{mode}");
        assert_eq!(judged(&json), judged(&db), "{mode}: coverage.json vs .coverage");
        // The shapes module's docstrings, else:/finally: lines, continuation lines and
        // literal entries are not blind; its excluded suite is not uncovered either.
        let lines = uncovered(&db, "src/stmts/shapes.py");
        let shapes = std::fs::read_to_string(out().join("src/stmts/shapes.py")).unwrap();
        for (n, text) in shapes.lines().enumerate() {
            let t = text.trim();
            let not_code = t.starts_with("\"\"\"")
                || [
                    "else:",
                    "finally:",
                    "\"beta\",",
                    "3],",
                    "\"string \"",
                    "over two lines.\"\"\"",
                ]
                .contains(&t)
                || t.contains("# pragma: no cover");
            if not_code {
                assert!(!lines.contains(&(n as u64 + 1)), "{mode}: shapes.py:{} {t}", n + 1);
            }
        }
        let notes = db["notes"].to_string();
        assert!(!notes.contains("classified"), "{mode}: {notes}");
    }
}

#[test]
fn without_the_head_the_data_file_says_it_could_not_classify() {
    let (t, base) = checkout();
    let diff = git(t.path(), &["diff", &format!("{base}...HEAD")]);
    let patch = t.path().join("release.diff");
    std::fs::write(&patch, format!("{diff}\n")).unwrap();
    let dir = out().join("line");
    let db = check(
        t.path(),
        &["--diff", patch.to_str().unwrap()],
        &dir.join(".coverage"),
        &dir.join("results"),
    );
    assert_ne!(db["verdict"], "PASS", "{:#}", db["reasons"]);
    let notes = db["notes"].to_string();
    assert!(
        notes.contains("lists no statements") && notes.contains("src/stmts/shapes.py"),
        "{notes}"
    );
    // Unclassified, a docstring nothing ran is counted as unexecuted code: blind, not passed.
    assert!(uncovered(&db, "src/stmts/shapes.py").contains(&3), "{:#}", db["files"]);
}
