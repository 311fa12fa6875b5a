//! `flakegate check --base REV` inside a real git checkout: the diff is
//! `REV...HEAD`, and the ledger and config are read at REV — never from the
//! working tree or the head commit, which the patch controls.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{copy_dir, git};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A checkout of the fixture project at base, with `case`'s patch committed on top.
fn checkout(case: &str) -> (tempfile::TempDir, String) {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path();
    copy_dir(&root().join("tests/fixtures/project"), repo);
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "base"]);
    let base = git(repo, &["rev-parse", "HEAD"]);
    let patch = root().join("tests/fixtures/cases").join(case).join("diff.patch");
    git(repo, &["apply", patch.to_str().unwrap()]);
    git(repo, &["commit", "-q", "-am", "head"]);
    (t, base)
}

fn check(repo: &Path, base: &str, case: &str) -> Value {
    check_with(repo, base, case, &[])
}

fn check_with(repo: &Path, base: &str, case: &str, extra: &[&str]) -> Value {
    let ev = root().join("tests/fixtures/cases").join(case).join("evidence");
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["check", "--format", "json", "--today", "2026-11-20", "--base", base])
        .args(extra)
        .arg("--coverage")
        .arg(ev.join("coverage.json"))
        .arg("--results")
        .arg(ev.join("results"))
        .arg("--probe")
        .arg(root().join("tests/fixtures/probe/reportlog"))
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

fn codes(v: &Value) -> Vec<&str> {
    v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect()
}

#[test]
fn base_rev_computes_the_diff_and_reads_the_ledger_at_base() {
    let (t, base) = checkout("frozen_only");
    let v = check(t.path(), &base, "frozen_only");
    assert_eq!(v["verdict"], "INCONCLUSIVE", "{:#}", v["reasons"]);
    assert_eq!(codes(&v), ["frozen_only"]);
    assert_eq!(v["base_sha"], base.as_str());
    let inputs = v["inputs"].as_array().unwrap();
    assert!(inputs
        .iter()
        .any(|i| i["role"] == "ledger" && i["path"] == format!("{base}:.github/flake-ledger.json")));
    assert!(inputs
        .iter()
        .any(|i| i["role"] == "diff" && i["path"].as_str().unwrap().starts_with("git diff")));
}

#[test]
fn a_patch_cannot_unfreeze_or_reconfigure_through_its_own_tree() {
    let (t, base) = checkout("frozen_only");
    let repo = t.path();
    // The head commit empties the ledger and turns the policy into nonsense;
    // the working tree then breaks the ledger outright. Neither is read.
    std::fs::write(repo.join(".github/flake-ledger.json"), "{\"frozen\": []}\n").unwrap();
    std::fs::write(repo.join(".github/flakegate.yml"), "policy:\n  strict_lines: false\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "unfreeze"]);
    std::fs::write(repo.join(".github/flake-ledger.json"), "garbage").unwrap();
    let v = check(repo, &base, "frozen_only");
    assert_eq!(v["verdict"], "INCONCLUSIVE", "{:#}", v["reasons"]);
    // Changing flakegate's own config is itself a reason not to trust the evidence.
    assert_eq!(codes(&v)[0], "evidence_config_changed", "{:#}", v["reasons"]);
    assert!(codes(&v).contains(&"frozen_only"));
    assert_eq!(
        v["witnesses"]["unstable"][0],
        "tests/test_refunds.py::test_gateway_retry"
    );
    assert_eq!(v["blind_owners"][0]["handle"], "@shop/payments");
}

#[test]
fn a_bad_base_rev_is_unusable_input() {
    let (t, _) = checkout("all_stable");
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["check", "--format", "json", "--base", "no-such-rev"])
        .current_dir(t.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-rev"));
}

#[test]
fn a_patch_that_freezes_its_own_witness_is_inconclusive() {
    let (t, base) = checkout("all_stable");
    let repo = t.path();
    // Freeze a stable witness of the patch's own changed line (pricing.py:19).
    let ledger_path = repo.join(".github/flake-ledger.json");
    let mut ledger: Value = serde_json::from_str(&std::fs::read_to_string(&ledger_path).unwrap()).unwrap();
    ledger["frozen"].as_array_mut().unwrap().push(serde_json::json!({
        "test": "tests/test_pricing.py::test_apply_tax",
        "observed": "1/7 fail on clean base",
        "reason": "flaky",
        "owner": "@agent",
        "frozen_at": "2026-11-20",
        "expires": "2026-12-20"
    }));
    std::fs::write(&ledger_path, serde_json::to_string_pretty(&ledger).unwrap()).unwrap();
    git(repo, &["commit", "-q", "-am", "freeze the witness"]);
    let v = check(repo, &base, "all_stable");
    assert_eq!(v["verdict"], "INCONCLUSIVE", "{:#}", v["reasons"]);
    assert_eq!(codes(&v)[0], "self_freeze");
    assert!(codes(&v).contains(&"ledger_edited"));
    assert_eq!(v["ledger_changes"][0]["kind"], "added");
    let ledger_file = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == ".github/flake-ledger.json")
        .unwrap();
    assert_eq!(
        ledger_file["evidence"], "not_needed",
        "the ledger is judged by the trust rules, not by coverage"
    );
    assert_eq!(v["reasons"][0]["tests"][0], "tests/test_pricing.py::test_apply_tax");
}

#[test]
fn codeowners_at_base_name_the_owners_of_blind_lines() {
    let (t, base) = checkout("uncovered");
    let repo = t.path();
    // CODEOWNERS added by the head commit is not read: only the base's counts.
    std::fs::create_dir_all(repo.join(".github")).unwrap();
    std::fs::write(repo.join(".github/CODEOWNERS"), "* @intruder\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "codeowners in head"]);
    let v = check(repo, &base, "uncovered");
    assert!(
        v["blind_owners"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["owner"] != "@intruder"),
        "{:#}",
        v["blind_owners"]
    );

    // A base that has CODEOWNERS: its owner of src/shop/util.py is named.
    let (t, _) = checkout("uncovered");
    let repo = t.path();
    git(repo, &["checkout", "-q", "HEAD~1"]);
    std::fs::write(repo.join(".github/CODEOWNERS"), "/src/shop/util.py @shop/util-owners\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "codeowners"]);
    let base2 = git(repo, &["rev-parse", "HEAD"]);
    git(repo, &["checkout", "-q", "-b", "pr"]);
    let patch = root().join("tests/fixtures/cases/uncovered/diff.patch");
    git(repo, &["apply", patch.to_str().unwrap()]);
    git(repo, &["commit", "-q", "-am", "head"]);
    let v = check(repo, &base2, "uncovered");
    let owner = v["blind_owners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["owner"] == "@shop/util-owners")
        .unwrap_or_else(|| panic!("{:#}", v["blind_owners"]));
    assert_eq!(owner["handle"], "@shop/util-owners");
    assert_eq!(owner["actions"][0], "add-test");
    assert!(v["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["role"] == "codeowners"));
}

#[test]
fn the_evidence_workflow_decides_which_workflow_edits_count() {
    let (t, base) = checkout("all_stable");
    let repo = t.path();
    std::fs::create_dir_all(repo.join(".github/workflows")).unwrap();
    std::fs::write(repo.join(".github/workflows/release.yml"), "on: push\njobs: {}\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "a release workflow"]);
    let has = |v: &Value, code: &str| codes(v).contains(&code);
    // Which workflow produced the evidence is not known: every workflow edit counts.
    let v = check(repo, &base, "all_stable");
    assert_eq!(v["verdict"], "INCONCLUSIVE", "{:#}", v["reasons"]);
    assert!(has(&v, "evidence_config_changed"), "{:#}", v["reasons"]);
    // Known, and another one: only a note.
    let v = check_with(
        repo,
        &base,
        "all_stable",
        &["--workflow", ".github/workflows/flakegate-evidence.yml"],
    );
    assert!(!has(&v, "evidence_config_changed"), "{:#}", v["reasons"]);
    assert!(
        v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains(".github/workflows/release.yml")),
        "{:#}",
        v["notes"]
    );
    // Known, and that one: not trusted, named as the evidence's workflow.
    let v = check_with(
        repo,
        &base,
        "all_stable",
        &["--workflow", ".github/workflows/release.yml"],
    );
    assert_eq!(codes(&v)[0], "evidence_config_changed");
    assert!(v["reasons"][0]["message"]
        .as_str()
        .unwrap()
        .contains(".github/workflows/release.yml is the workflow that produced the evidence"));
}

#[test]
fn policy_signals_at_base_escalate_a_caveat() {
    let (t, base) = checkout("all_stable");
    let repo = t.path();
    // The base's config makes weakened tests INCONCLUSIVE; the head adds a sleep to a test.
    git(repo, &["checkout", "-q", &base]);
    std::fs::write(
        repo.join(".github/flakegate.yml"),
        "policy:\n  signals:\n    weakened_test: inconclusive\n",
    )
    .unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "policy"]);
    let base2 = git(repo, &["rev-parse", "HEAD"]);
    git(repo, &["checkout", "-q", "-b", "pr"]);
    let patch = root().join("tests/fixtures/cases/all_stable/diff.patch");
    git(repo, &["apply", patch.to_str().unwrap()]);
    let test = repo.join("tests/test_pricing.py");
    let text = std::fs::read_to_string(&test)
        .unwrap()
        .replace("def test_tax_rate():\n", "def test_tax_rate():\n    time.sleep(0.01)\n");
    std::fs::write(&test, format!("import time\n{text}")).unwrap();
    git(repo, &["commit", "-q", "-am", "head"]);
    let v = check(repo, &base2, "all_stable");
    assert_eq!(v["verdict"], "INCONCLUSIVE", "{:#}", v["reasons"]);
    assert_eq!(codes(&v), ["weakened_test"]);
    assert_eq!(v["reasons"][0]["verdict"], "INCONCLUSIVE");
    assert_eq!(v["reasons"][0]["escalated"], true);
    assert!(v["reasons"][0]["message"]
        .as_str()
        .unwrap()
        .contains("tests/test_pricing.py:8: adds a sleep"));
}

// ---- what the patch did to the ledger is what its own diff did ------------------------------

const LEDGER: &str = ".github/flake-ledger.json";

/// Rewrite the ledger in `repo`'s working tree: `edit` gets its `frozen` list.
fn edit_ledger(repo: &Path, edit: impl FnOnce(&mut Vec<Value>)) {
    let path = repo.join(LEDGER);
    let mut ledger: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(ledger["frozen"].as_array_mut().unwrap());
    std::fs::write(&path, format!("{}\n", serde_json::to_string_pretty(&ledger).unwrap())).unwrap();
}

fn entry(ledger: &mut [Value], test: &str) -> usize {
    ledger.iter().position(|e| e["test"] == test).unwrap()
}

fn freeze(test: &str, owner: &str, expires: &str) -> Value {
    serde_json::json!({
        "test": test, "observed": "1/7 fail on clean base", "reason": "flaky",
        "owner": owner, "frozen_at": "2026-11-20", "expires": expires
    })
}

/// `case`'s patch on branch `pr` from the fixture project's commit on `main`; then `main`
/// moves on with `on_main` applied to its ledger. Returns the checkout (on `pr`).
fn branch_then_base_moves(case: &str, on_main: impl FnOnce(&mut Vec<Value>)) -> tempfile::TempDir {
    let (t, base) = checkout(case);
    let repo = t.path();
    git(repo, &["branch", "pr"]);
    git(repo, &["reset", "-q", "--hard", &base]);
    edit_ledger(repo, on_main);
    git(repo, &["commit", "-q", "-am", "ledger maintenance on main"]);
    git(repo, &["checkout", "-q", "pr"]);
    t
}

#[test]
fn ledger_edits_landed_on_the_base_after_the_branch_point_are_not_the_patchs() {
    // After the branch was cut, main renewed a freeze (a new observation, a later expiry),
    // extended another, froze the patch's own witness (test_apply_tax, pricing.py:19) and
    // pruned a third. Against main's tip every one would read as the patch's edit —
    // the witness's freeze "removed", the pruned one "added" (self_freeze if a witness).
    let t = branch_then_base_moves("all_stable", |l| {
        let i = entry(l, "tests/test_refunds.py::test_gateway_retry");
        l[i]["observed"] = "3/7 fail on clean base".into();
        l[i]["expires"] = "2027-01-09".into();
        let i = entry(l, "tests/test_refunds.py::test_refund_rounding_broken");
        l[i]["expires"] = "2026-12-30".into();
        l.retain(|e| e["test"] != "tests/test_pricing.py::test_bulk_discount");
        l.push(freeze(
            "tests/test_pricing.py::test_apply_tax",
            "@shop/pricing",
            "2026-12-20",
        ));
    });
    let v = check(t.path(), "main", "all_stable");
    assert_eq!(
        codes(&v),
        ["some_frozen"],
        "judged with main's ledger: {:#}",
        v["reasons"]
    );
    assert_eq!(v["ledger_changes"], serde_json::json!([]));
    assert_eq!(v["witnesses"]["frozen"][0], "tests/test_pricing.py::test_apply_tax");
    assert!(v["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["role"] == "ledger" && i["path"] == format!("main:{LEDGER}")));
}

#[test]
fn the_patchs_own_ledger_edit_is_reported_whatever_the_base_did_since() {
    // main renewed test_gateway_retry after the branch point; the patch itself freezes its own
    // witness. Only the patch's edit is listed, and it is a self-freeze.
    let t = branch_then_base_moves("all_stable", |l| {
        let i = entry(l, "tests/test_refunds.py::test_gateway_retry");
        l[i]["expires"] = "2027-01-09".into();
    });
    let repo = t.path();
    edit_ledger(repo, |l| {
        l.push(freeze("tests/test_pricing.py::test_apply_tax", "@agent", "2026-12-20"));
    });
    git(repo, &["commit", "-q", "-am", "freeze the witness"]);
    let v = check(repo, "main", "all_stable");
    assert_eq!(codes(&v), ["self_freeze", "ledger_edited"], "{:#}", v["reasons"]);
    let changes = v["ledger_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:#?}");
    assert_eq!(changes[0]["test"], "tests/test_pricing.py::test_apply_tax");
    assert_eq!(changes[0]["kind"], "added");
    let msg = v["reasons"][1]["message"].as_str().unwrap();
    assert!(!msg.contains("test_gateway_retry"), "{msg}");
}

#[test]
fn a_retarget_to_a_base_with_another_ledger_is_not_a_ledger_edit() {
    // `release` branched from the same commit and keeps another ledger: it unfroze
    // test_gateway_retry (frozen_only's one witness) and froze something else. The pull
    // request, retargeted there, never touched the ledger.
    let (t, base) = checkout("frozen_only");
    let repo = t.path();
    git(repo, &["checkout", "-q", "-b", "release", &base]);
    edit_ledger(repo, |l| {
        l.retain(|e| e["test"] != "tests/test_refunds.py::test_gateway_retry");
        l.push(freeze(
            "tests/test_cart.py::TestCart::test_total",
            "@shop/cart",
            "2026-12-20",
        ));
    });
    git(repo, &["commit", "-q", "-am", "release's own ledger"]);
    git(repo, &["checkout", "-q", "main"]);
    let v = check(repo, "release", "frozen_only");
    let c = codes(&v);
    assert!(!c.contains(&"self_freeze") && !c.contains(&"ledger_edited"), "{c:?}");
    assert_eq!(v["ledger_changes"], serde_json::json!([]));
    // release does not freeze the witness; the base probe still shows it unstable.
    assert_eq!(c[0], "frozen_only", "{:#}", v["reasons"]);
    assert_eq!(v["witnesses"]["frozen"], serde_json::json!([]));
}

/// `flakegate check --diff` with no `--base`: the evidence of `all_stable`, the diff given.
fn check_diff(dir: &Path, diff: &Path, ledger: Option<&Path>) -> (Option<i32>, Value, String) {
    let ev = root().join("tests/fixtures/cases/all_stable/evidence");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_flakegate"));
    cmd.args(["check", "--format", "json", "--today", "2026-11-20", "--diff"])
        .arg(diff)
        .arg("--coverage")
        .arg(ev.join("coverage.json"))
        .arg("--results")
        .arg(ev.join("results"))
        .arg("--probe")
        .arg(root().join("tests/fixtures/probe/reportlog"))
        .current_dir(dir);
    if let Some(l) = ledger {
        cmd.arg("--ledger").arg(l);
    }
    let out = cmd.output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_diff_alone_that_edits_the_ledger_is_reported_or_refused() {
    let (t, base) = checkout("all_stable");
    let repo = t.path();
    let found = std::fs::read(repo.join(LEDGER)).unwrap();
    edit_ledger(repo, |l| {
        l.push(freeze("tests/test_pricing.py::test_apply_tax", "@agent", "2026-12-20"));
    });
    git(repo, &["commit", "-q", "-am", "freeze the witness"]);
    let leaves = std::fs::read(repo.join(LEDGER)).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let diff = scratch.path().join("pr.diff");
    let out = Command::new("git")
        .args(["diff", "--no-color", &format!("{base}...HEAD")])
        .current_dir(repo)
        .output()
        .unwrap();
    std::fs::write(&diff, out.stdout).unwrap();
    let (found_file, leaves_file) = (scratch.path().join("found.json"), scratch.path().join("leaves.json"));
    std::fs::write(&found_file, &found).unwrap();
    std::fs::write(&leaves_file, &leaves).unwrap();

    // With the ledger the diff was made against: the hunks applied to it.
    let (code, v, err) = check_diff(scratch.path(), &diff, Some(&found_file));
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(codes(&v), ["self_freeze", "ledger_edited"], "{:#}", v["reasons"]);
    assert_eq!(v["ledger_changes"][0]["kind"], "added");
    // With the ledger it leaves: reported too, and the note says the patch's ledger was obeyed.
    let (code, v, err) = check_diff(scratch.path(), &diff, Some(&leaves_file));
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(codes(&v)[0], "self_freeze", "{:#}", v["reasons"]);
    assert!(
        v["notes"].to_string().contains("is the one the patch leaves"),
        "{:#}",
        v["notes"]
    );
    // With no ledger it could be read against: the command says it cannot judge it.
    for ledger in [
        None,
        Some(root().join("tests/fixtures/cases/invalid_ledger/ledger.json")),
    ] {
        let (code, v, err) = check_diff(scratch.path(), &diff, ledger.as_deref());
        assert_eq!(code, Some(2), "never a silent verdict: {v:#}");
        assert!(
            err.contains("the patch edits the ledger .github/flake-ledger.json") && err.contains("cannot be judged"),
            "{err}"
        );
    }
}
