//! A real release-to-release diff: cachetools 6.1.0 → 6.2.0, from the two sdists,
//! with the 6.2.0 suite's real per-test coverage and JUnit and a K = 3 probe of 6.1.0
//! (`tests/fixtures/release/regen.sh`). The release adds `RRCache.__setitem__`/`__delitem__`,
//! rewrites `popitem`, bumps `__version__` and adds tests beside the existing ones. The verdict
//! must be PASS for reasons that hold on inspection: every changed line of code has an
//! unmodified stable witness, the new methods' `def` lines (run only at import time) are
//! witnessed by the tests that run their bodies, and `__version__` is an import-time line —
//! not blind, not a caveat.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{copy_dir, git};

fn release() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/release/cachetools")
}

/// A checkout whose HEAD~1 holds the 6.1.0 text of every file the release touches and whose
/// HEAD is that plus the release's diff.
fn checkout() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    copy_dir(&release().join("base"), t.path());
    git(t.path(), &["init", "-q", "-b", "main"]);
    git(t.path(), &["add", "-A"]);
    git(t.path(), &["commit", "-q", "-m", "cachetools 6.1.0"]);
    git(
        t.path(),
        &["apply", "--index", release().join("diff.patch").to_str().unwrap()],
    );
    git(t.path(), &["commit", "-q", "-m", "cachetools 6.2.0"]);
    t
}

fn check(dir: &Path, how: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["check", "--format", "json", "--today", "2026-11-20"])
        .args(how)
        .arg(release().join("evidence"))
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn nums(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect()
}

fn init_py(v: &Value) -> &Value {
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "src/cachetools/__init__.py")
        .unwrap()
}

/// The tests that witness a line, with their statuses: each listed witness resolved in the
/// file's `witnesses` table. A record this size lists every witness of every line.
fn witnesses(f: &Value, line: u64) -> Vec<(String, String)> {
    let l = f["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"] == line)
        .unwrap_or_else(|| panic!("line {line}: {f:#}"));
    let listed: Vec<(String, String)> = l["witnesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            let t = &f["witnesses"][w["witness"].as_u64().unwrap() as usize];
            (
                t["test"].as_str().unwrap().to_owned(),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(l["witness_count"], listed.len(), "line {line} lists all its witnesses");
    listed
}

#[test]
fn cachetools_6_2_0_passes_for_reasons_that_hold() {
    let t = checkout();
    let v = check(t.path(), &["--base", "HEAD~1"]);
    let codes: Vec<&str> = v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        (v["verdict"].as_str(), codes),
        (Some("PASS"), vec!["all_stable"]),
        "{:#}",
        v["reasons"]
    );

    // Every file is accounted for: the changelog is documentation, the tests are judged by the
    // trust rules (new tests, no marker, nothing weakened), the module is measured.
    let evidence: Vec<(&str, &str)> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["evidence"].as_str().unwrap()))
        .collect();
    assert_eq!(
        evidence,
        [
            ("CHANGELOG.rst", "not_needed"),
            ("src/cachetools/__init__.py", "measured"),
            ("tests/test_fifo.py", "not_needed"),
            ("tests/test_lfu.py", "not_needed"),
            ("tests/test_lru.py", "not_needed"),
            ("tests/test_rr.py", "not_needed"),
        ]
    );
    assert_eq!(
        v["line_witness_limit"],
        Value::Null,
        "every witness of every line is listed"
    );
    let f = init_py(&v);
    // 15: `__version__ = "6.2.0"`, run only at import time: its own class, not blind.
    assert_eq!(nums(&f["import_time_lines"]), [15]);
    assert!(nums(&f["uncovered_lines"]).is_empty() && nums(&f["frozen_only_lines"]).is_empty());
    assert_eq!(
        nums(&f["stable_lines"]),
        [291, 292, 299, 300, 301, 302, 303, 305, 306, 307, 308, 309, 310, 311, 312, 317]
    );
    // 299 `def __setitem__(…)` and 305 `def __delitem__(…)` ran only at import time; the tests
    // that ran their bodies witness them — among them tests 6.2.0 did not touch.
    for (def, body) in [(299, 300), (305, 306)] {
        let of_def = witnesses(f, def);
        assert_eq!(of_def, witnesses(f, body), "line {def} takes its body's witnesses");
        assert!(of_def.iter().all(|(_, s)| s == "stable"));
        assert!(
            of_def
                .iter()
                .any(|(t, _)| t == "tests/test_rr.py::RRCacheTest::test_delete"),
            "{of_def:?}"
        );
        assert!(
            of_def.iter().any(|(t, _)| t.starts_with("tests/test_func.py::")),
            "{of_def:?}"
        );
    }
    // The rewritten popitem line is run by the unmodified test_popitem and test_rr.
    let popitem = witnesses(f, 317);
    for t in [
        "tests/test_rr.py::RRCacheTest::test_popitem",
        "tests/test_rr.py::RRCacheTest::test_rr",
    ] {
        assert!(popitem.iter().any(|(w, _)| w == t), "{popitem:?}");
    }
    // The head run passed: JUnit, all matched.
    assert_eq!(v["results"]["passed"], 220);
    assert_eq!(v["results"]["failed"], 0);
    assert!(v["results"]["unmatched"].as_array().unwrap().is_empty());
    assert_eq!(v["probe"]["k"], 3);
    assert!(
        v["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["role"] == "source" && i["path"] == "HEAD:src/cachetools/__init__.py"),
        "{:#}",
        v["inputs"]
    );

    // Without the head source coverage.json's function regions still witness the two def lines.
    let v = check(t.path(), &["--diff", release().join("diff.patch").to_str().unwrap()]);
    assert_eq!(v["verdict"], "PASS", "{:#}", v["reasons"]);
    assert_eq!(nums(&init_py(&v)["import_time_lines"]), [15]);
    assert_eq!(witnesses(init_py(&v), 299), witnesses(init_py(&v), 300));
}
