//! The flake history on the command line (`check --history`, `history record/show/unstable`),
//! on the `all_stable` case's real evidence: what one pull request's probe showed judges the
//! next one on the same base, a re-run attempt never turns a FAIL into a plain PASS, and a
//! history file of another repository is refused.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CASE: &str = "tests/fixtures/cases/all_stable";
const WITNESS: &str = "tests/test_cart.py::TestCart::test_total";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `flakegate ARGS… (the case's diff, ledger and date)`, outside any CI run.
fn flakegate(args: &[&str], attempt: Option<&str>) -> Output {
    let case = root().join(CASE);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_flakegate"));
    cmd.args(args)
        .arg("--diff")
        .arg(case.join("diff.patch"))
        .arg("--ledger")
        .arg(root().join("tests/fixtures/project/.github/flake-ledger.json"))
        .args(["--today", "2026-11-20", "--repository", "octo/shop"])
        .env_remove("GITHUB_REPOSITORY")
        .env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_RUN_ATTEMPT");
    if let Some(a) = attempt {
        cmd.env("GITHUB_RUN_ID", "42").env("GITHUB_RUN_ATTEMPT", a);
    }
    cmd.output().expect("flakegate runs")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// A probe JSON of the case's three witnesses on its base, `test_total` failing `failures` of 5.
fn probe(dir: &Path, name: &str, failures: u32) -> PathBuf {
    let p = dir.join(name);
    let tests = serde_json::json!({
        WITNESS: {"failures": failures, "runs": 5},
        "tests/test_cart.py::TestCart::test_stocked_total": {"failures": 0, "runs": 5},
        "tests/test_pricing.py::test_apply_tax": {"failures": 0, "runs": 5},
    });
    let unstable: Vec<Value> = if failures > 0 && failures < 5 {
        vec![serde_json::json!({"test": WITNESS, "failures": failures, "runs": 5})]
    } else {
        vec![]
    };
    std::fs::write(
        &p,
        serde_json::json!({"k": 5, "tests": tests, "unstable": unstable}).to_string(),
    )
    .unwrap();
    p
}

/// A copy of the case's evidence in which `test_total` failed on head.
fn failing_evidence(dir: &Path) -> PathBuf {
    let from = root().join(CASE).join("evidence");
    let to = dir.join("failing-evidence");
    crate::support::copy_dir(&from, &to);
    let log = to.join("results/report-log.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let changed: Vec<String> = text
        .lines()
        .map(|l| {
            if l.contains("\"TestCart.test_total\"") && l.contains("\"when\": \"call\"") {
                l.replace("\"outcome\": \"passed\"", "\"outcome\": \"failed\"")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert_ne!(
        changed.join("\n"),
        text.trim_end(),
        "the head run's test_total call was found"
    );
    std::fs::write(&log, changed.join("\n") + "\n").unwrap();
    to
}

#[test]
fn a_failure_in_one_pull_requests_probe_makes_the_test_unstable_for_the_next_on_that_base() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("history.db");
    let db = db.to_str().unwrap();
    let evidence = root().join(CASE).join("evidence");
    let ev = evidence.to_str().unwrap();
    let p1 = probe(tmp.path(), "p1.json", 1);
    let p2 = probe(tmp.path(), "p2.json", 0);

    // Without history, pull request 2's own probe shows every witness stable: PASS.
    let alone = flakegate(
        &["check", ev, "--format", "json", "--probe", p2.to_str().unwrap()],
        None,
    );
    assert_eq!(json(&alone)["verdict"], "PASS");

    // Pull request 1's evidence is recorded: its probe saw test_total fail once.
    let rec = flakegate(
        &[
            "history",
            "record",
            ev,
            "--history",
            db,
            "--pr",
            "1",
            "--probe",
            p1.to_str().unwrap(),
        ],
        None,
    );
    let said = String::from_utf8_lossy(&rec.stdout);
    assert_eq!(
        rec.status.code(),
        Some(0),
        "{said}{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    assert!(said.contains("observations added to the flake history"), "{said}");

    // Pull request 2 on the same base, judged with the history: test_total is unstable, and the
    // report says where it failed.
    let out = flakegate(
        &[
            "check",
            ev,
            "--format",
            "json",
            "--probe",
            p2.to_str().unwrap(),
            "--history",
            db,
        ],
        None,
    );
    let r = json(&out);
    assert_eq!(r["witnesses"]["unstable"], serde_json::json!([WITNESS]), "{r:#}");
    assert_ne!(r["verdict"], "PASS");
    let standing = r["history"]["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == WITNESS)
        .expect("the report states the witness's history");
    assert_eq!(standing["stability"], "unstable");
    assert_eq!(standing["seen"]["pr"], 1);
    assert_eq!(
        (standing["failures"].as_u64(), standing["runs"].as_u64()),
        (Some(1), Some(11))
    );

    // The markdown people read (the check run's summary) says it too.
    let md = flakegate(
        &[
            "check",
            ev,
            "--format",
            "markdown",
            "--probe",
            p2.to_str().unwrap(),
            "--history",
            db,
        ],
        None,
    );
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("### Flake history"), "{md}");
    let line = md
        .lines()
        .find(|l| l.contains("test_total") && l.contains("failed 1 of 11 runs"))
        .unwrap_or_else(|| panic!("a history line for the witness: {md}"));
    assert!(line.contains("(last: #1, probe on "), "{line}");

    // `history show` and `history unstable` say the same.
    let shown = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args([
            "history",
            "show",
            WITNESS,
            "--history",
            db,
            "--repository",
            "octo/shop",
            "--today",
            "2026-11-20",
        ])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.starts_with(&format!("{WITNESS}: unstable")), "{shown}");
    assert!(shown.contains("failed 1 of 6 runs"), "{shown}");
    let listed = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args([
            "history",
            "unstable",
            "--history",
            db,
            "--repository",
            "octo/shop",
            "--today",
            "2026-11-20",
        ])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains(WITNESS) && listed.contains("#1"), "{listed}");
}

#[test]
fn a_re_run_attempt_never_turns_a_fail_into_a_plain_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("history.db");
    let db = db.to_str().unwrap();
    let p = probe(tmp.path(), "p.json", 0);
    let failing = failing_evidence(tmp.path());
    // Attempt 1 of run 42: a stable witness failed on head. FAIL, and recorded.
    let a1 = flakegate(
        &[
            "check",
            failing.to_str().unwrap(),
            "--format",
            "json",
            "--probe",
            p.to_str().unwrap(),
            "--history",
            db,
            "--record",
        ],
        Some("1"),
    );
    assert_eq!(json(&a1)["verdict"], "FAIL");
    // Attempt 2, the test passing: not PASS, but the failure of attempt 1 named.
    let ev = root().join(CASE).join("evidence");
    let a2 = flakegate(
        &[
            "check",
            ev.to_str().unwrap(),
            "--format",
            "json",
            "--probe",
            p.to_str().unwrap(),
            "--history",
            db,
            "--record",
        ],
        Some("2"),
    );
    let r = json(&a2);
    assert_ne!(r["verdict"], "PASS", "{r:#}");
    let codes: Vec<&str> = r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["code"].as_str())
        .collect();
    assert!(codes.contains(&"head_flaky"), "{codes:?}");
    assert_eq!(r["witnesses"]["head_flaky"], serde_json::json!([WITNESS]));
    let standing = r["history"]["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == WITNESS)
        .unwrap();
    assert_eq!(standing["head_failure"]["attempt"], 1);
    assert_eq!(standing["head_failure"]["run_id"], 42);
    // The same attempt judged again adds nothing twice.
    let again = flakegate(
        &[
            "history",
            "record",
            ev.to_str().unwrap(),
            "--history",
            db,
            "--probe",
            p.to_str().unwrap(),
        ],
        Some("2"),
    );
    assert!(String::from_utf8_lossy(&again.stdout).contains("was recorded before: nothing added"));
}

#[test]
fn a_history_file_of_another_repository_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("history.db");
    let ev = root().join(CASE).join("evidence");
    let first = flakegate(
        &[
            "history",
            "record",
            ev.to_str().unwrap(),
            "--history",
            db.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(first.status.code(), Some(0));
    let other = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args([
            "history",
            "unstable",
            "--history",
            db.to_str().unwrap(),
            "--repository",
            "octo/other",
        ])
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(2));
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(err.contains("belongs to repository octo/shop"), "{err}");
}

#[test]
fn evidence_a_trust_rule_distrusts_adds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("history.db");
    let entry = root().join("tests/fixtures/corpus/adv_conftest_hook");
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["history", "record"])
        .arg(entry.join("evidence"))
        .arg("--diff")
        .arg(entry.join("diff.patch"))
        .arg("--ledger")
        .arg(root().join("tests/fixtures/project/.github/flake-ledger.json"))
        .arg("--probe")
        .arg(root().join("tests/fixtures/probe/reportlog"))
        .args(["--today", "2026-11-20", "--repository", "octo/shop", "--history"])
        .arg(&db)
        .env_remove("GITHUB_RUN_ID")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("INCONCLUSIVE"), "{said}");
    assert!(
        said.contains("nothing recorded: the evidence may have been shaped by the patch (evidence_config_changed"),
        "{said}"
    );
    let listed = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args([
            "history",
            "show",
            WITNESS,
            "--repository",
            "octo/shop",
            "--today",
            "2026-11-20",
            "--history",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("no run in the last 90 days"));
}

#[test]
fn a_forks_evidence_adds_only_its_probe_failures() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("history.db");
    let db = db.to_str().unwrap();
    let ev = root().join(CASE).join("evidence");
    let p1 = probe(tmp.path(), "p1.json", 1);
    let out = flakegate(
        &[
            "history",
            "record",
            ev.to_str().unwrap(),
            "--history",
            db,
            "--fork",
            "--probe",
            p1.to_str().unwrap(),
        ],
        None,
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("head run not recorded: the pull request comes from a fork"),
        "{said}"
    );
    let show = |test: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_flakegate"))
            .args([
                "history",
                "show",
                test,
                "--history",
                db,
                "--repository",
                "octo/shop",
                "--today",
                "2026-11-20",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // Its one failure counts; its four passes, its head run and the other witnesses' passes do not.
    assert!(show(WITNESS).contains("failed 1 of 1 runs"), "{}", show(WITNESS));
    assert!(show("tests/test_pricing.py::test_apply_tax").contains("no run in the last 90 days"));
}

#[test]
fn head_outcomes_are_not_taken_for_base_runs_when_a_changed_line_ran_at_import_time() {
    // adv_import_time_only: nothing fails. adv_import_time_breaks: the tax tests fail on head
    // because of the import-time line; their failures are the patch's, not flakiness of the base.
    for case in ["adv_import_time_only", "adv_import_time_breaks"] {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("history.db");
        let entry = root().join("tests/fixtures/corpus").join(case);
        let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
            .args(["history", "record"])
            .arg(entry.join("evidence"))
            .arg("--diff")
            .arg(entry.join("diff.patch"))
            .arg("--ledger")
            .arg(root().join("tests/fixtures/project/.github/flake-ledger.json"))
            .args(["--today", "2026-11-20", "--repository", "octo/shop", "--history"])
            .arg(&db)
            .env_remove("GITHUB_RUN_ID")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains("head outcomes of tests that ran no changed line not recorded")
                && said.contains("ran at import time"),
            "{case}: {said}"
        );
        let show = Command::new(env!("CARGO_BIN_EXE_flakegate"))
            .args(["history", "show", "tests/test_pricing.py::test_apply_tax", "--history"])
            .arg(&db)
            .args(["--repository", "octo/shop", "--today", "2026-11-20"])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&show.stdout);
        assert!(shown.contains("no run in the last 90 days"), "{case}: {shown}");
    }
}

/// `ledger maintain` on the history: an entry whose test passed enough runs in a row is pruned
/// with its power statement, one still unstable is renewed with where it failed, an unstable
/// test nobody froze is proposed with its CODEOWNERS owner — or with owner null, which the
/// ledger's reader refuses until a person names one.
#[test]
fn ledger_maintain_prunes_renews_and_proposes_from_the_history() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("history.db");
    let db = db.to_str().unwrap();
    let ev = root().join(CASE).join("evidence");
    let ev = ev.to_str().unwrap();
    // `history record` of the case's evidence with `probe`, as pull request `pr` (and attempt).
    let record = |pr: &str, probe: &Path, attempt: Option<&str>| {
        let args = [
            "history",
            "record",
            ev,
            "--history",
            db,
            "--pr",
            pr,
            "--probe",
            probe.to_str().unwrap(),
        ];
        let rec = flakegate(&args, attempt);
        assert_eq!(rec.status.code(), Some(0), "{}", String::from_utf8_lossy(&rec.stderr));
    };
    // Ten attempts of one run saw everything pass; then another probe saw test_total fail.
    let passing = probe(tmp.path(), "p2.json", 0);
    for attempt in 1..=10 {
        record("2", &passing, Some(&attempt.to_string()));
    }
    record("1", &probe(tmp.path(), "p1.json", 1), None);
    let ledger = tmp.path().join("flake-ledger.json");
    std::fs::write(
        &ledger,
        serde_json::json!({"frozen": [
            {"test": WITNESS, "owner": "@carol", "frozen_at": "2026-11-01", "expires": "2026-11-18"},
            {"test": "tests/test_pricing.py::test_apply_tax", "owner": "@dave", "frozen_at": "2026-11-01", "expires": "2026-11-22"},
        ]})
        .to_string(),
    )
    .unwrap();
    let codeowners = tmp.path().join("owners-file");
    std::fs::write(&codeowners, "tests/test_cart.py @acme/cart\n").unwrap();
    let maintain = |ledger: &Path, codeowners: Option<&Path>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_flakegate"));
        cmd.args([
            "ledger",
            "maintain",
            "--history",
            db,
            "--repository",
            "octo/shop",
            "--today",
            "2026-11-20",
        ])
        .arg("--ledger")
        .arg(ledger)
        .current_dir(tmp.path());
        if let Some(c) = codeowners {
            cmd.arg("--codeowners").arg(c);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = maintain(&ledger, Some(&codeowners));
    assert!(
        said.contains(&format!(
            "renew {WITNESS} (owner @carol) from 2026-11-18 to 2026-12-04: failed 1 of"
        )),
        "{said}"
    );
    assert!(said.contains("(last: #1, "), "the renewal says where it failed: {said}");
    assert!(
        said.contains("prune tests/test_pricing.py::test_apply_tax (owner @dave): 0 of ")
            && said.contains("runs failed: not shown unstable at p ≥"),
        "{said}"
    );
    assert!(said.contains("changed 2 entries"), "{said}");
    let text = std::fs::read_to_string(&ledger).unwrap();
    let written: Value = serde_json::from_str(&text).unwrap();
    let entries = written["frozen"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{text}");
    assert_eq!(entries[0]["test"], WITNESS);
    assert_eq!(entries[0]["expires"], "2026-12-04");
    assert_eq!(
        entries[0]["frozen_at"], "2026-11-01",
        "a renewal keeps when the freeze began"
    );
    assert!(
        entries[0]["observed"].as_str().unwrap().starts_with("failed 1 of"),
        "{text}"
    );

    // An empty ledger: the unstable test nobody froze is proposed, owned by CODEOWNERS.
    let empty = tmp.path().join("empty.json");
    std::fs::write(&empty, "{\"frozen\": []}\n").unwrap();
    let said = maintain(&empty, Some(&codeowners));
    assert!(
        said.contains(&format!("freeze {WITNESS} (owner @acme/cart, from CODEOWNERS)")),
        "{said}"
    );
    let lint = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["ledger", "lint", "--today", "2026-11-20"])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(lint.status.code(), Some(0), "{}", String::from_utf8_lossy(&lint.stderr));

    // No CODEOWNERS rule: owner null, said so, and the ledger fails lint until a person fills it.
    let unowned = tmp.path().join("unowned.json");
    std::fs::write(&unowned, "{\"frozen\": []}\n").unwrap();
    let said = maintain(&unowned, None);
    assert!(said.contains("owner is null"), "{said}");
    assert!(std::fs::read_to_string(&unowned).unwrap().contains("\"owner\": null"));
    let lint = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["ledger", "lint", "--today", "2026-11-20"])
        .arg(&unowned)
        .output()
        .unwrap();
    assert_eq!(lint.status.code(), Some(1), "{}", String::from_utf8_lossy(&lint.stdout));
    assert!(String::from_utf8_lossy(&lint.stderr).contains("owner"));
}
