//! Reruns on head (docs/cli.md, "Reruns on head"): `flakegate check` on pytest-rerunfailures' real
//! report-log and JUnit (`tests/fixtures/reruns/`, made by `scripts/reruns.sh`), where
//! `test_gateway_retry` failed its first attempt and passed its rerun.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures")
}

const GATEWAY: &str = "tests/test_refunds.py::test_gateway_retry";
const ROUNDING: &str = "tests/test_refunds.py::test_refund_rounding_broken";

/// The fixture project's ledger without the gateway entry: nothing but the head run's
/// rerun then tells that test is flaky.
fn ledger_without_gateway(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(fixtures().join("project/.github/flake-ledger.json")).unwrap();
    let mut ledger: Value = serde_json::from_str(&text).unwrap();
    let entries = ledger["frozen"].as_array_mut().unwrap();
    let before = entries.len();
    entries.retain(|e| e["test"] != GATEWAY);
    assert_eq!(entries.len(), before - 1, "the project's ledger freezes {GATEWAY}");
    let p = dir.join("ledger.json");
    std::fs::write(&p, serde_json::to_string_pretty(&ledger).unwrap()).unwrap();
    p
}

/// `flakegate check --format json` on a reruns case; `results` is `results` (report-log)
/// or `junit` (xunit1). Returns the exit status and the record.
fn check(case: &str, results: &str, ledger: &Path, extra: &[&str]) -> (i32, Value) {
    let dir = fixtures().join("reruns").join(case);
    let mut args: Vec<String> = vec![
        "check".into(),
        "--format".into(),
        "json".into(),
        "--diff".into(),
        dir.join("diff.patch").display().to_string(),
        "--coverage".into(),
        dir.join("coverage.json").display().to_string(),
        "--results".into(),
        dir.join(results).display().to_string(),
        "--ledger".into(),
        ledger.display().to_string(),
        "--today".into(),
        "2026-11-20".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(&args)
        .current_dir(root())
        .output()
        .expect("run flakegate");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), json)
}

fn codes(r: &Value) -> Vec<&str> {
    r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["code"].as_str().unwrap())
        .collect()
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect()
}

/// Both formats of the same run: the rerun is read from report-log `rerun` records and
/// from JUnit's repeated test cases alike.
const FORMATS: [&str; 2] = ["results", "junit"];

#[test]
fn reran_tests_are_listed_with_their_final_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = ledger_without_gateway(tmp.path());
    for fmt in FORMATS {
        let (_, r) = check("some_frozen", fmt, &ledger, &[]);
        assert_eq!(r["schema_version"], 4, "{fmt}");
        let reran = r["results"]["reran"].as_array().unwrap();
        let got: Vec<(&str, u64, &str)> = reran
            .iter()
            .map(|x| {
                (
                    x["test"].as_str().unwrap(),
                    x["reruns"].as_u64().unwrap(),
                    x["outcome"].as_str().unwrap(),
                )
            })
            .collect();
        // --reruns 2: the gateway test failed once and passed; the broken one failed three times.
        assert_eq!(got, vec![(GATEWAY, 1, "passed"), (ROUNDING, 2, "failed")], "{fmt}");
        assert!(reran[0]["source"]
            .as_str()
            .unwrap()
            .contains("tests/fixtures/reruns/some_frozen/"));
        // Counted once each, with the last attempt's outcome.
        assert_eq!(r["results"]["failed"], 1, "{fmt}");
    }
}

#[test]
fn a_stable_test_rerun_on_head_is_no_stable_witness_and_a_caveat() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = ledger_without_gateway(tmp.path());
    for fmt in FORMATS {
        // some_frozen: refunds.py's changed lines are witnessed by a stable test too.
        let (code, r) = check("some_frozen", fmt, &ledger, &[]);
        assert_eq!(r["verdict"], "PASS_WITH_CAVEAT", "{fmt}: {r}");
        assert_eq!(code, 0);
        assert_eq!(codes(&r), vec!["some_frozen", "head_flaky"], "{fmt}");
        assert_eq!(strs(&r["witnesses"]["head_flaky"]), vec![GATEWAY], "{fmt}");
        assert!(!strs(&r["witnesses"]["stable"]).contains(&GATEWAY), "{fmt}");
        let hf = &r["reasons"][1];
        assert_eq!(strs(&hf["tests"]), vec![GATEWAY]);
        assert_eq!(hf["verdict"], "PASS_WITH_CAVEAT");
        assert!(hf["message"]
            .as_str()
            .unwrap()
            .contains("failed and then passed on a rerun"));
        // The line's witness carries the class.
        let f = &r["files"][0];
        let statuses: Vec<&str> = f["lines"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| l["witnesses"].as_array().unwrap())
            .map(|w| &f["witnesses"][w["witness"].as_u64().unwrap() as usize])
            .filter(|w| w["test"] == GATEWAY)
            .map(|w| w["status"].as_str().unwrap())
            .collect();
        assert!(
            !statuses.is_empty() && statuses.iter().all(|s| *s == "head_flaky"),
            "{statuses:?}"
        );

        // frozen_only: the rerun test is the only witness, so no stable test sees the change.
        let (code, r) = check("frozen_only", fmt, &ledger, &[]);
        assert_eq!(r["verdict"], "INCONCLUSIVE", "{fmt}");
        assert_eq!(code, 1);
        assert_eq!(codes(&r), vec!["frozen_only", "head_flaky"], "{fmt}");
        assert_eq!(strs(&r["witnesses"]["head_flaky"]), vec![GATEWAY]);
        assert!(strs(&r["witnesses"]["stable"]).is_empty());
    }
}

#[test]
fn policy_signals_can_make_head_flaky_inconclusive() {
    let tmp = tempfile::tempdir().unwrap();
    let ledger = ledger_without_gateway(tmp.path());
    let config = tmp.path().join("flakegate.yml");
    std::fs::write(&config, "policy:\n  signals:\n    head_flaky: inconclusive\n").unwrap();
    let (code, r) = check(
        "some_frozen",
        "results",
        &ledger,
        &["--config", config.to_str().unwrap()],
    );
    assert_eq!((r["verdict"].as_str().unwrap(), code), ("INCONCLUSIVE", 1), "{r}");
    assert_eq!(r["reasons"][0]["code"], "head_flaky");
    assert_eq!(r["reasons"][0]["escalated"], true);

    std::fs::write(&config, "policy:\n  signals:\n    head_flaky: off\n").unwrap();
    let (_, r) = check(
        "some_frozen",
        "results",
        &ledger,
        &["--config", config.to_str().unwrap()],
    );
    assert_eq!(codes(&r), vec!["some_frozen"]);
    // Turned off as a reason, the test is still no stable witness.
    assert_eq!(strs(&r["witnesses"]["head_flaky"]), vec![GATEWAY]);
}

#[test]
fn without_the_rerun_the_same_test_is_a_stable_witness() {
    // The control: the same head's ordinary run (tests/fixtures/cases/some_frozen, counter at
    // 0 so the gateway test passed its only attempt), the same ledger: stable, no caveat.
    let tmp = tempfile::tempdir().unwrap();
    let ledger = ledger_without_gateway(tmp.path());
    let case = fixtures().join("cases/some_frozen");
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args([
            "check",
            "--format",
            "json",
            "--diff",
            case.join("diff.patch").to_str().unwrap(),
            "--coverage",
            case.join("evidence/coverage.json").to_str().unwrap(),
            "--results",
            case.join("evidence/results").to_str().unwrap(),
            "--ledger",
            ledger.to_str().unwrap(),
            "--today",
            "2026-11-20",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(strs(&r["witnesses"]["stable"]).contains(&GATEWAY), "{r}");
    assert!(strs(&r["witnesses"]["head_flaky"]).is_empty());
    assert!(!codes(&r).contains(&"head_flaky"));
    assert!(r["results"]["reran"].as_array().unwrap().is_empty());
}

#[test]
fn a_test_the_probe_shows_unstable_keeps_that_class() {
    // With the project's ledger and the base probe, the gateway test is unstable on base
    // (2/5) and frozen: its rerun on head is no news, so no head_flaky caveat.
    let ledger = fixtures().join("project/.github/flake-ledger.json");
    let probe = fixtures().join("probe/reportlog");
    for fmt in FORMATS {
        let (_, r) = check("frozen_only", fmt, &ledger, &["--probe", probe.to_str().unwrap()]);
        assert_eq!(r["verdict"], "INCONCLUSIVE");
        assert_eq!(codes(&r), vec!["frozen_only"], "{fmt}");
        assert_eq!(strs(&r["witnesses"]["unstable"]), vec![GATEWAY]);
        assert!(strs(&r["witnesses"]["head_flaky"]).is_empty());
        assert_eq!(r["results"]["reran"].as_array().unwrap().len(), 2);
    }
}
