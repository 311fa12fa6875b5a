//! The flake history in the App, end to end on the fake GitHub: what one pull request's probe
//! showed judges the next on the same base, a fork's runs count only as failures, and a re-run
//! attempt never turns a FAIL into a plain PASS.

use crate::scenarios::{finish, open_then_evidence, record, start, the_check, title};
use crate::support::app_harness::{case, fixtures, stage_case, workflow_run_completed, Case, ARTIFACT, WORKFLOW};
use crate::support::fake_repo::{ArtifactState, FakeRepo};
use serde_json::Value;
use std::path::{Path, PathBuf};

const CAP: &str = "tests/test_pricing.py::test_bulk_discount_cap";
const TOTAL: &str = "tests/test_cart.py::TestCart::test_total";

/// A copy of `from` in which `test`'s call outcome in the file `name` becomes `outcome`.
fn with_outcome(from: &Path, to: &Path, name: &str, test: &str, outcome: &str) -> PathBuf {
    crate::support::app_harness::copy_tree(from, to);
    let file = to.join(name);
    let text = std::fs::read_to_string(&file).unwrap();
    let (file_part, func) = test.split_once("::").unwrap();
    let location = format!("\"{}\"", func.replace("::", "."));
    let mut hit = false;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            if l.contains(file_part) && l.contains(&location) && l.contains("\"when\": \"call\"") {
                hit = true;
                let l = l.replace("\"outcome\": \"passed\"", &format!("\"outcome\": \"{outcome}\""));
                l.replace("\"outcome\": \"failed\"", &format!("\"outcome\": \"{outcome}\""))
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(hit, "{test}'s call record in {}", file.display());
    std::fs::write(&file, out.join("\n") + "\n").unwrap();
    to.to_path_buf()
}

/// `case`'s evidence with `probe` as its probe, zipped as the workflow uploads it.
fn zip_with_probe(evidence: &Path, probe: &Path) -> Vec<u8> {
    FakeRepo::zip_dirs(&[(evidence, ""), (probe, "probe")])
}

fn stage_with(repo: &FakeRepo, pr: u64, c: &Case, run_id: u64, zip: Vec<u8>) {
    repo.put_file(&c.base_sha, crate::support::app_harness::LEDGER_PATH, &c.ledger());
    repo.add_pull(pr, &c.base_sha, &c.head_sha, &c.diff);
    repo.add_workflow_run(run_id, ARTIFACT, ArtifactState::Zip(zip));
}

fn standing<'a>(r: &'a Value, test: &str) -> &'a Value {
    r["history"]["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("a history section: {r:#}"))
        .iter()
        .find(|t| t["test"] == test)
        .unwrap_or_else(|| panic!("{test} in the history section: {r:#}"))
}

async fn one_probe_failure_on_the_base_judges_the_next_pull_request(fork: bool) {
    let (app, repo) = start().await;
    let tmp = tempfile::tempdir().unwrap();
    // Pull request 1 (all_stable) ran the base's probe, in which test_bulk_discount_cap failed once.
    let probe = with_outcome(
        &fixtures().join("probe/reportlog"),
        &tmp.path().join("probe"),
        "run-1.jsonl",
        CAP,
        "failed",
    );
    let a = case("all_stable");
    stage_with(&repo, 1, &a, 11, zip_with_probe(&a.dir.join("evidence"), &probe));
    if fork {
        repo.set_fork(1);
    }
    open_then_evidence(&app, 1, &a, 11).await;
    assert!(title(&the_check(&repo, &a.head_sha)).starts_with("PASS"));

    // Pull request 2 (prefix_boundary) on the same base: its only stable witness is that test,
    // and its own probe saw it pass 5 of 5. The history makes it unstable: INCONCLUSIVE.
    let b = case("prefix_boundary");
    stage_case(&repo, 2, &b, 12);
    open_then_evidence(&app, 2, &b, 12).await;
    let check = the_check(&repo, &b.head_sha);
    let r = record(&check);
    assert_eq!(r["verdict"], "INCONCLUSIVE", "{r:#}");
    assert_eq!(r["reasons"][0]["code"], "frozen_only");
    assert!(
        r["witnesses"]["unstable"].as_array().unwrap().iter().any(|t| t == CAP),
        "{r:#}"
    );
    let s = standing(&r, CAP);
    assert_eq!(s["stability"], "unstable");
    assert_eq!(s["seen"]["pr"], 1, "the instability names its source: {s:#}");
    assert_eq!(s["seen"]["run_id"], 11);
    // A fork's run adds its failure, never its passes: this probe's 5 + its 1 failure; else 5 + 5
    // probe runs + 1 head run (the test ran no changed line of pull request 1: base code).
    let runs = s["runs"].as_u64().unwrap();
    assert_eq!(runs, if fork { 6 } else { 11 }, "{s:#}");
    // Where people look: the check run's summary and the pull request's comment.
    let said = format!("failed 1 of {runs} runs since");
    assert!(
        crate::scenarios::summary(&check).contains(&said),
        "{}",
        crate::scenarios::summary(&check)
    );
    let comment = crate::scenarios::the_comment(&repo, 2);
    assert!(
        // The comment quotes `#1` inertly (no cross-reference from text flakegate shows).
        comment.body.contains(&said) && comment.body.contains("1, run 11, probe of"),
        "{}",
        comment.body
    );
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_failure_in_one_pull_request_makes_the_test_unstable_for_the_next_on_that_base() {
    one_probe_failure_on_the_base_judges_the_next_pull_request(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forks_runs_count_only_their_failures() {
    one_probe_failure_on_the_base_judges_the_next_pull_request(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_run_attempt_never_turns_a_fail_into_a_plain_pass() {
    let (app, repo) = start().await;
    let c = case("failed");
    stage_case(&repo, 7, &c, 42);
    open_then_evidence(&app, 7, &c, 42).await;
    let check = the_check(&repo, &c.head_sha);
    assert!(title(&check).starts_with("FAIL"), "{}", title(&check));

    // Attempt 2 of run 42: the same head, test_total passing this time.
    let tmp = tempfile::tempdir().unwrap();
    let evidence = with_outcome(
        &c.dir.join("evidence"),
        &tmp.path().join("evidence"),
        "results/report-log.jsonl",
        TOTAL,
        "passed",
    );
    repo.add_workflow_run(
        42,
        ARTIFACT,
        ArtifactState::Zip(zip_with_probe(&evidence, &fixtures().join("probe/reportlog"))),
    );
    let mut payload = workflow_run_completed(42, &c.head_sha, WORKFLOW, &[(7, &c.base_sha)]);
    payload["workflow_run"]["run_attempt"] = serde_json::json!(2);
    app.deliver("workflow_run", &payload).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = the_check(&repo, &c.head_sha);
    let r = record(&check);
    assert_ne!(r["verdict"], "PASS", "{r:#}");
    let codes: Vec<&str> = r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["code"].as_str())
        .collect();
    assert!(codes.contains(&"head_flaky"), "{codes:?}");
    assert!(r["witnesses"]["head_flaky"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == TOTAL));
    let s = standing(&r, TOTAL);
    assert_eq!(
        (
            s["head_failure"]["run_id"].as_u64(),
            s["head_failure"]["attempt"].as_u64()
        ),
        (Some(42), Some(1))
    );
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_failure_on_unchanged_code_is_flakiness_recorded_for_the_base() {
    let (app, repo) = start().await;
    let tmp = tempfile::tempdir().unwrap();
    // Pull request 1 (all_stable): test_bulk_discount_cap, which runs none of its changed lines,
    // fails on head. Not the patch's failure: a caveat naming it, and an observation of the
    // base's code in the history.
    let a = case("all_stable");
    let evidence = with_outcome(
        &a.dir.join("evidence"),
        &tmp.path().join("evidence"),
        "results/report-log.jsonl",
        CAP,
        "failed",
    );
    stage_with(
        &repo,
        1,
        &a,
        11,
        zip_with_probe(&evidence, &fixtures().join("probe/reportlog")),
    );
    open_then_evidence(&app, 1, &a, 11).await;
    let check = the_check(&repo, &a.head_sha);
    let r = record(&check);
    assert_eq!(r["verdict"], "PASS_WITH_CAVEAT", "{r:#}");
    assert_eq!(check.conclusion.as_deref(), Some("success"));
    let codes: Vec<&str> = r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["code"].as_str())
        .collect();
    assert_eq!(codes, ["flaky_unchanged"], "{r:#}");
    assert_eq!(r["reasons"][0]["tests"], serde_json::json!([CAP]));

    // Pull request 2 (prefix_boundary) on the same base: that test is its only stable witness,
    // and its own probe saw it pass 5 of 5. The head failure of pull request 1, recorded for the
    // base's sha, and the passes there make it unstable: INCONCLUSIVE, naming where it failed.
    let b = case("prefix_boundary");
    stage_case(&repo, 2, &b, 12);
    open_then_evidence(&app, 2, &b, 12).await;
    let r = record(&the_check(&repo, &b.head_sha));
    assert_eq!(r["verdict"], "INCONCLUSIVE", "{r:#}");
    assert_eq!(r["reasons"][0]["code"], "frozen_only");
    let s = standing(&r, CAP);
    assert_eq!(s["stability"], "unstable", "{s:#}");
    assert_eq!(
        (s["seen"]["pr"].as_u64(), s["seen"]["run_id"].as_u64()),
        (Some(1), Some(11)),
        "{s:#}"
    );
    assert_eq!(s["seen"]["kind"], "head", "the failure was seen in a head run: {s:#}");
    finish(app).await;
}
