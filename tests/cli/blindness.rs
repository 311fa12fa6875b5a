//! `flakegate blindness` end to end on the shop's real evidence (`examples/shop`: pytest,
//! pytest-cov, coverage.py and pytest-reportlog output; `bash tests/fixtures/regen.sh`) and on
//! bad input: coverage without per-test contexts (`tests/fixtures/blindness/regen.sh`), paths
//! outside the source tree, a source that is not UTF-8, one that is missing, freezes of tests
//! the coverage does not know.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn flakegate_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run flakegate")
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// `blindness` on the shop's evidence, its ledger and the project's sources, as of the case's day.
fn shop(extra: &[&str]) -> Output {
    let r = root();
    let mut args = vec![
        "blindness".to_string(),
        path(&r.join("examples/shop/evidence")),
        "--ledger".into(),
        path(&r.join("examples/shop/flake-ledger.json")),
        "--source".into(),
        path(&r.join("tests/fixtures/project")),
        "--today".into(),
        "2026-11-20".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    flakegate_in(dir.path(), &args)
}

fn json_of(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_shop_map_names_the_blind_lines_their_tests_and_owners() {
    let m = json_of(&shop(&["--format", "json"]));
    assert_eq!(m["schema"], "flakegate.blindness/1");
    assert_eq!(m["totals"]["blind"], 7);
    let refunds = &m["files"][0];
    assert_eq!(refunds["path"], "src/shop/refunds.py");
    let blind: Vec<u64> = refunds["blind_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["line"].as_u64().unwrap())
        .collect();
    assert_eq!(blind, [11, 12, 13, 14, 15]);
    // The probe in the evidence finds the retry test unstable; its freeze names its owner.
    let t = &m["tests"][0];
    assert_eq!(t["test"], "tests/test_refunds.py::test_gateway_retry");
    assert_eq!(t["status"], "unstable");
    assert_eq!(t["freeze"]["owner"], "@shop/payments");
    assert_eq!(t["only_witness_lines"], 5);
    assert_eq!(t["only_witness"][0]["ranges"], serde_json::json!([[11, 15]]));
    // The owners, most blind first, with their soonest expiry.
    let owners: Vec<(&str, u64)> = m["owners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["owner"].as_str().unwrap(), o["blind_lines"].as_u64().unwrap()))
        .collect();
    assert_eq!(owners, [("@shop/payments", 5), ("@shop/pricing", 2), ("qa-oncall", 0)]);
    assert_eq!(m["owners"][0]["soonest_expiry"], "2028-01-31");
    assert_eq!(m["freezes_with_no_coverage"], serde_json::json!([]));
    // The per-file counts add up to the totals.
    let sum = |k: &str| {
        m["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f[k].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(sum("blind"), 7);
    assert_eq!(sum("uncovered"), m["totals"]["uncovered"].as_u64().unwrap());
    assert_eq!(sum("witnessed"), m["totals"]["witnessed"].as_u64().unwrap());
}

#[test]
fn the_json_validates_against_the_committed_schema() {
    let m = json_of(&shop(&["--format", "json"]));
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("schemas/blindness.schema.json")).unwrap()).unwrap();
    let v = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = v
        .iter_errors(&m)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn markdown_is_for_a_person_and_mentions_nobody() {
    let out = shop(&["--format", "markdown"]);
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.starts_with("# Blindness map"), "{md}");
    assert!(md.contains("**7 are blind**"), "{md}");
    let row = md.lines().find(|l| l.contains("test_gateway_retry")).unwrap();
    assert!(row.contains("unstable") && row.contains("lines 11-15"), "{row}");
    assert!(
        md.contains("`@shop/payments`"),
        "owners are named in code spans, not pinged:\n{md}"
    );
}

#[test]
fn html_writes_an_index_and_a_page_per_file() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = shop(&["--format", "html", "--out", &path(out_dir.path())]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let index = std::fs::read_to_string(out_dir.path().join("index.html")).unwrap();
    let pages: Vec<_> = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(pages.len(), 6, "index and five files: {pages:?}");
    for p in &pages {
        let html = std::fs::read_to_string(p).unwrap();
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "{}",
            p.display()
        );
        assert!(!html.contains("<script"), "{}", p.display());
        assert!(html.contains("name=\"viewport\""), "{}", p.display());
    }
    // minijinja escapes `/` too: `src&#x2f;shop&#x2f;refunds.py`.
    assert!(index.contains("src&#x2f;shop&#x2f;refunds.py"), "{index}");
    // Without --out, html is refused.
    let out = shop(&["--format", "html"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--out"));
}

#[test]
fn coverage_without_test_contexts_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ev = dir.path().join("evidence");
    std::fs::create_dir_all(&ev).unwrap();
    std::fs::copy(
        root().join("tests/fixtures/blindness/no-contexts/coverage.json"),
        ev.join("coverage.json"),
    )
    .unwrap();
    let out = flakegate_in(dir.path(), &["blindness", "evidence", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("evidence/coverage.json") && err.contains("per-test") && err.contains("--cov-context=test"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// The shop's evidence in a scratch directory, its coverage's file names changed by `rename`.
fn scratch_evidence(dir: &Path, rename: &[(&str, &str)]) {
    let ev = dir.join("evidence");
    std::fs::create_dir_all(&ev).unwrap();
    let text = std::fs::read_to_string(root().join("examples/shop/evidence/coverage.json")).unwrap();
    let mut cov: Value = serde_json::from_str(&text).unwrap();
    let files = cov["files"].as_object_mut().unwrap();
    for (from, to) in rename {
        let f = files.remove(*from).unwrap();
        files.insert(to.to_string(), f);
    }
    std::fs::write(ev.join("coverage.json"), serde_json::to_vec(&cov).unwrap()).unwrap();
}

#[test]
fn sources_outside_missing_or_not_utf8_are_named_never_read_and_never_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("secret.py");
    std::fs::write(&outside, "SECRET = 'do not show'\n").unwrap();
    scratch_evidence(
        dir.path(),
        &[
            ("src/shop/util.py", "../secret.py"),
            ("src/shop/__init__.py", "/etc/passwd"),
        ],
    );
    // The source tree: refunds.py in Latin-1, cart.py missing, the rest as the project has it.
    let src = dir.path().join("tree");
    std::fs::create_dir_all(src.join("src/shop")).unwrap();
    std::fs::copy(
        root().join("tests/fixtures/project/src/shop/pricing.py"),
        src.join("src/shop/pricing.py"),
    )
    .unwrap();
    let refunds = std::fs::read_to_string(root().join("tests/fixtures/project/src/shop/refunds.py")).unwrap();
    let mut latin1 = refunds.into_bytes();
    latin1.extend_from_slice(b"# caf\xe9\n");
    std::fs::write(src.join("src/shop/refunds.py"), latin1).unwrap();
    let ledger = dir.path().join("ledger.json");
    std::fs::write(
        &ledger,
        r#"{"frozen": [{"test": "tests/test_refunds.py::test_gateway_retry", "owner": "@shop/payments", "expires": "2026-12-31"},
                      {"test": "tests/test_gone.py::test_removed", "owner": "@shop/old", "expires": "2026-12-01"}]}"#,
    )
    .unwrap();
    let html = dir.path().join("html");
    let common = [
        "blindness",
        "evidence",
        "--ledger",
        "ledger.json",
        "--source",
        "tree",
        "--today",
        "2026-11-20",
    ];
    let mut args = common.to_vec();
    args.extend(["--format", "json"]);
    let m = json_of(&flakegate_in(dir.path(), &args));
    let notes = m["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        notes.contains("outside the source tree") && notes.contains("../secret.py") && notes.contains("/etc/passwd"),
        "{notes}"
    );
    assert!(
        notes.contains("not found") && notes.contains("src/shop/cart.py"),
        "{notes}"
    );
    assert!(
        notes.contains("not UTF-8") && notes.contains("src/shop/refunds.py"),
        "{notes}"
    );
    let file = |p: &str| {
        m["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == p)
            .unwrap()
            .clone()
    };
    assert!(file("../secret.py")["note"].as_str().unwrap().contains("outside"));
    // Still mapped: the coverage's lines are judged without the source.
    assert_eq!(file("src/shop/refunds.py")["blind"], 5);
    // The freeze of a test the coverage does not know.
    assert_eq!(
        m["freezes_with_no_coverage"][0]["test"],
        "tests/test_gone.py::test_removed"
    );
    assert_eq!(m["freezes_with_no_coverage"][0]["owner"], "@shop/old");

    let mut args = common.to_vec();
    let out_dir = path(&html);
    args.extend(["--format", "html", "--out", &out_dir]);
    let out = flakegate_in(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut all = String::new();
    for e in std::fs::read_dir(&html).unwrap() {
        all.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    assert!(
        !all.contains("do not show") && !all.contains("root:x:"),
        "nothing outside the tree is read"
    );
    assert!(all.contains("not UTF-8") && all.contains("Freezes with no coverage"));
    let md_args = [common.as_slice(), &["--format", "markdown"]].concat();
    let md = String::from_utf8(flakegate_in(dir.path(), &md_args).stdout).unwrap();
    assert!(
        md.contains("## Freezes with no coverage") && md.contains("test_removed"),
        "{md}"
    );
}

#[test]
fn the_ledger_defaults_to_the_configs_path_and_a_missing_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    scratch_evidence(dir.path(), &[]);
    std::fs::create_dir_all(dir.path().join(".github")).unwrap();
    std::fs::copy(
        root().join("examples/shop/flake-ledger.json"),
        dir.path().join(".github/flake-ledger.json"),
    )
    .unwrap();
    let m = json_of(&flakegate_in(
        dir.path(),
        &["blindness", "evidence", "--today", "2026-11-20"],
    ));
    assert_eq!(m["owners"].as_array().unwrap().len(), 3, "the default ledger is read");
    let out = flakegate_in(dir.path(), &["blindness", "no-such-dir"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-dir"));
}

#[test]
fn the_map_read_one_file_at_a_time_is_the_map_read_whole() {
    // Without --history the coverage.json is read a file at a time; with a (new, empty)
    // history it is read whole first, as for a `.coverage` or LCOV.
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.db");
    let streamed = json_of(&shop(&["--format", "json"]));
    let whole = json_of(&shop(&["--format", "json", "--history", &path(&history)]));
    assert_eq!(streamed, whole);
}

/// `check --blindness MAP` on the shop's pull request: each frozen or unstable witness with the
/// lines of the mapped codebase only it runs, and the commit the map's evidence ran on.
#[test]
fn check_reads_a_map_and_says_what_each_frozen_witness_alone_witnesses() {
    let r = root();
    let dir = tempfile::tempdir().unwrap();
    let map_path = dir.path().join("map.json");
    let out = shop(&["--format", "json", "--out", &path(&map_path)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let map: Value = serde_json::from_str(&std::fs::read_to_string(&map_path).unwrap()).unwrap();
    assert_eq!(map["sha"], "ad7b7542e6dfde240659a04c59bcdc3deff92ae2", "from meta.json");
    let check = |map: &Path, format: &str| {
        flakegate_in(
            dir.path(),
            &[
                "check",
                &path(&r.join("examples/shop/evidence")),
                "--diff",
                &path(&r.join("examples/shop/pr.diff")),
                "--ledger",
                &path(&r.join("examples/shop/flake-ledger.json")),
                "--today",
                "2026-11-20",
                "--blindness",
                &path(map),
                "--format",
                format,
            ],
        )
    };
    let out = check(&map_path, "json");
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codebase = &record["codebase"];
    assert_eq!(codebase["sha"], map["sha"], "{record:#}");
    assert!(codebase.get("branch").is_none(), "no branch is known here: {codebase}");
    let named = codebase["tests"].as_array().unwrap();
    assert!(!named.is_empty(), "{record:#}");
    for t in named {
        let witness = record["witnesses"]["frozen"]
            .as_array()
            .unwrap()
            .iter()
            .chain(record["witnesses"]["unstable"].as_array().unwrap())
            .any(|w| w == &t["test"]);
        assert!(witness, "only the patch's frozen or unstable witnesses: {t}");
        let in_map = map["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["test"] == t["test"])
            .unwrap();
        assert_eq!(t["only_witness_lines"], in_map["only_witness_lines"]);
    }
    let md = String::from_utf8(check(&map_path, "markdown").stdout).unwrap();
    for t in named {
        let lines = t["only_witness_lines"].as_u64().unwrap();
        let said = if lines == 0 {
            "across the mapped codebase no line depends on it alone".to_string()
        } else {
            format!("across the mapped codebase it alone witnesses {lines} line")
        };
        let row = md
            .lines()
            .find(|l| l.contains(t["test"].as_str().unwrap()) && l.contains("across"));
        assert!(row.is_some_and(|l| l.contains(&said)), "{said}\n{md}");
    }
    assert!(
        named.iter().any(|t| t["only_witness_lines"].as_u64() > Some(0)),
        "{record:#}"
    );
    assert!(md.contains("the blindness map of `ad7b7542e6df`"), "{md}");

    // Not a map: which file, what was expected, exit 2, no verdict.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"schema": "flakegate.record/4"}"#).unwrap();
    let out = check(&bad, "json");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.json") && err.contains("--blindness"), "{err}");
}
