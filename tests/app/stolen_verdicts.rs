//! Verdicts that can be stolen (docs/security.md, "The App's defences"), each played against
//! the real router, store, worker and client with the stateful fake repository: a pull request
//! sharing a head with a friendlier base, a retargeted base, a green `flakegate` check made by
//! a workflow, a late delivery for an older head, a fork's own pull request numbers, a lint
//! run taken for the evidence run, and annotations a later verdict leaves behind.

use crate::scenarios::{assert_verdict, finish, open_then_evidence, start, summary, the_check, the_comment, title};
use crate::support::app_harness::{
    case, check_run_event, check_suite_rerequested, pull_request_event, stage_case, workflow_run_completed, App,
    ARTIFACT, CONFIG_PATH, WORKFLOW,
};
use crate::support::fake_github::APP_ID;
use crate::support::fake_repo::{op, ArtifactState, CheckRunState, FakeRepo, GITHUB_ACTIONS_APP_ID};
use serde_json::{json, Value};

/// A base branch that already contains the change: against it the patch touches only docs.
const EVIL_BASE: &str = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";
const EVIL_REF: &str = "evil-base";

/// The pull request's diff against [`EVIL_BASE`]: one README line, which needs no evidence.
const DOCS_ONLY: &str = "diff --git a/README.md b/README.md\nindex 1111111..2222222 100644\n--- a/README.md\n\
                         +++ b/README.md\n@@ -1 +1,2 @@\n # shop\n+Prices are documented in docs/pricing.md.\n";

/// This App's `flakegate` check runs on `head`, oldest first.
fn ours(repo: &FakeRepo, head: &str) -> Vec<CheckRunState> {
    repo.check_runs_for(head)
        .into_iter()
        .filter(|c| c.name == "flakegate" && c.app_id == APP_ID)
        .collect()
}

/// The newest of them: the one GitHub shows and branch protection reads.
fn newest(repo: &FakeRepo, head: &str) -> CheckRunState {
    ours(repo, head).pop().expect("a flakegate check run of this App")
}

/// `pull_request` edited with `changes.base`: pull request `pr` now targets `base`.
fn retargeted(pr: u64, from: (&str, &str), base: &str, head: &str) -> Value {
    let mut p = pull_request_event("edited", pr, base, head);
    p["changes"] = json!({ "base": { "ref": { "from": from.0 }, "sha": { "from": from.1 } } });
    p
}

async fn deliver_run(app: &App, run: &Value) {
    app.deliver("workflow_run", run).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
}

// ---- 1. shared head: the worst verdict wins --------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_head_shows_the_worst_verdict_and_lists_every_pull_request() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    stage_case(&repo, 3, &c, 1);
    // The same branch also opened against a base that already has the change.
    repo.add_pull(4, EVIL_BASE, &c.head_sha, DOCS_ONLY);
    repo.set_base_ref(4, EVIL_REF);

    // GitHub lists both; the friendlier one last.
    let both = workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha), (4, EVIL_BASE)]);
    deliver_run(&app, &both).await;
    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    let s = summary(&check);
    for needle in [
        "2 open pull requests share this head",
        "| #3 |",
        "| #4 |",
        EVIL_REF,
        "`main`",
        "`PASS`",
    ] {
        assert!(s.contains(needle), "{needle:?} not in\n{s}");
    }
    // Each pull request hears about itself only.
    assert!(the_comment(&repo, 3).body.contains("@shop/payments"));
    assert!(
        repo.comments(4).iter().all(|c| !c.body.contains("@shop/payments")),
        "{:#?}",
        repo.comments(4)
    );

    // A later run that lists only the friendly pull request still judges the other one.
    let friendly_only = workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(4, EVIL_BASE)]);
    deliver_run(&app, &friendly_only).await;
    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    assert!(summary(&check).contains("| #3 |"), "{}", summary(&check));

    // Once #3 is closed, the head's verdict is #4's alone.
    repo.set_pull_state(3, "closed");
    deliver_run(&app, &friendly_only).await;
    assert_verdict(&newest(&repo, &c.head_sha), "PASS", "success");
    assert!(!summary(&newest(&repo, &c.head_sha)).contains("| #3 |"));
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_opened_on_a_judged_head_is_judged_at_once() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    stage_case(&repo, 3, &c, 1);
    // First only the friendly pull request exists, and passes.
    repo.add_pull(3, EVIL_BASE, &c.head_sha, DOCS_ONLY);
    repo.set_base_ref(3, EVIL_REF);
    app.deliver("pull_request", &pull_request_event("opened", 3, EVIL_BASE, &c.head_sha))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    deliver_run(
        &app,
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, EVIL_BASE)]),
    )
    .await;
    assert_verdict(&newest(&repo, &c.head_sha), "PASS", "success");

    // The same branch into main: judged with the head's evidence as soon as it is opened.
    repo.add_pull(4, &c.base_sha, &c.head_sha, &c.diff);
    app.deliver(
        "pull_request",
        &pull_request_event("opened", 4, &c.base_sha, &c.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = newest(&repo, &c.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    assert!(summary(&check).contains("| #3 |") && summary(&check).contains("| #4 |"));
    assert!(the_comment(&repo, 4).body.contains("@shop/payments"));
    finish(app).await;
}

// ---- 2. retargeting re-evaluates --------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retargeting_a_pull_request_judges_it_against_its_new_base() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    stage_case(&repo, 3, &c, 1);
    repo.add_pull(3, EVIL_BASE, &c.head_sha, DOCS_ONLY);
    repo.set_base_ref(3, EVIL_REF);
    app.deliver("pull_request", &pull_request_event("opened", 3, EVIL_BASE, &c.head_sha))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    deliver_run(
        &app,
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, EVIL_BASE)]),
    )
    .await;
    assert_verdict(&newest(&repo, &c.head_sha), "PASS", "success");

    // The PASS was earned against the wrong base: retarget to main.
    repo.add_pull(3, &c.base_sha, &c.head_sha, &c.diff);
    repo.set_base_ref(3, "main");
    app.deliver(
        "pull_request",
        &retargeted(3, (EVIL_REF, EVIL_BASE), &c.base_sha, &c.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = newest(&repo, &c.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    assert_eq!(crate::scenarios::record(&check)["base_sha"], c.base_sha.as_str());
    assert!(the_comment(&repo, 3).body.contains("@shop/payments"));
    finish(app).await;
}

// ---- 3. another app's check run of the same name ----------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_green_flakegate_check_made_by_a_workflow_is_never_adopted() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    stage_case(&repo, 3, &c, 1);
    // A workflow with `checks: write` got there first.
    let forged = repo.add_foreign_check_run(
        &c.head_sha,
        "flakegate",
        Some(&c.head_sha),
        "completed",
        Some("success"),
        GITHUB_ACTIONS_APP_ID,
    );
    open_then_evidence(&app, 3, &c, 1).await;
    let mine = ours(&repo, &c.head_sha);
    assert_eq!(mine.len(), 1, "the App made its own check run: {mine:#?}");
    assert_verdict(&mine[0], "INCONCLUSIVE", "failure");
    let forged_now = repo.check_runs().into_iter().find(|r| r.id == forged).unwrap();
    assert_eq!(
        (forged_now.updates, forged_now.conclusion.as_deref()),
        (0, Some("success"))
    );

    // A re-request of the forged check run is not ours to act on.
    let downloads = repo.calls("GET", op::ARTIFACT_ZIP);
    let mut rerequest = check_run_event("rerequested", &c.head_sha, None);
    rerequest["check_run"]["app"]["id"] = json!(GITHUB_ACTIONS_APP_ID);
    app.deliver("check_run", &rerequest).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), downloads);
    assert_eq!(ours(&repo, &c.head_sha)[0].updates, mine[0].updates);
    finish(app).await;
}

// ---- 4. a late delivery for an older head -----------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_synchronize_for_an_older_head_leaves_the_real_head_judged() {
    let (app, repo) = start().await;
    let old = case("frozen_only");
    let new = case("all_stable");
    stage_case(&repo, 3, &old, 1);
    app.deliver(
        "pull_request",
        &pull_request_event("opened", 3, &old.base_sha, &old.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    // A push: GitHub now has the new head.
    stage_case(&repo, 3, &new, 2);
    app.deliver(
        "pull_request",
        &pull_request_event("synchronize", 3, &new.base_sha, &new.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    // The delivery for the older head arrives last.
    app.deliver(
        "pull_request",
        &pull_request_event("synchronize", 3, &old.base_sha, &old.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);

    deliver_run(
        &app,
        &workflow_run_completed(2, &new.head_sha, WORKFLOW, &[(3, &new.base_sha)]),
    )
    .await;
    assert_verdict(&the_check(&repo, &new.head_sha), "PASS", "success");
    finish(app).await;
}

// ---- 5. a fork's own pull request numbers -----------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_requests_of_another_repository_are_not_judged_here() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    stage_case(&repo, 5, &c, 1);
    // Our own #3 is some other, docs-only change.
    repo.add_pull(3, &c.base_sha, "3333333333333333333333333333333333333333", DOCS_ONLY);
    // The run lists the fork's own #3 (its base is the fork), not our #5.
    let mut run = workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, EVIL_BASE)]);
    run["workflow_run"]["pull_requests"][0]["base"]["repo"]["id"] = json!(77_000_001_u64);
    deliver_run(&app, &run).await;

    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    assert!(repo.comments(3).is_empty(), "{:#?}", repo.comments(3));
    assert!(the_comment(&repo, 5).body.contains("@shop/payments"));
    finish(app).await;
}

// ---- 6. re-run and re-evaluate act on the evidence workflow's run ------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerun_and_reevaluate_use_the_evidence_run_not_the_latest_run() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    open_then_evidence(&app, 3, &c, 1).await;
    let judged = the_check(&repo, &c.head_sha);
    assert_verdict(&judged, "PASS_WITH_CAVEAT", "success");
    // A lint workflow finishes later on the same head (it uploads no evidence).
    repo.add_workflow_run(2, ARTIFACT, ArtifactState::Missing);
    deliver_run(
        &app,
        &workflow_run_completed(2, &c.head_sha, ".github/workflows/lint.yml", &[(3, &c.base_sha)]),
    )
    .await;
    // Another lint run while the base's config is unreadable: INCONCLUSIVE, and not taken
    // for the evidence run (whose workflow could not be known).
    repo.put_file(&c.base_sha, CONFIG_PATH, b"evidence: [not a map\n");
    repo.add_workflow_run(3, ARTIFACT, ArtifactState::Missing);
    deliver_run(
        &app,
        &workflow_run_completed(3, &c.head_sha, ".github/workflows/lint.yml", &[(3, &c.base_sha)]),
    )
    .await;
    assert_verdict(&newest(&repo, &c.head_sha), "INCONCLUSIVE", "failure");
    repo.put_file(
        &c.base_sha,
        CONFIG_PATH,
        format!("evidence:\n  artifact: {ARTIFACT}\n").as_bytes(),
    );
    let downloads = repo.calls("GET", op::ARTIFACT_ZIP);

    app.deliver(
        "check_run",
        &check_run_event("requested_action", &c.head_sha, Some("rerun")),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(repo.rerun_requests(), [1], "the evidence workflow's run is re-run");

    app.deliver(
        "check_run",
        &check_run_event("requested_action", &c.head_sha, Some("reevaluate")),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(
        repo.calls("GET", op::ARTIFACT_ZIP),
        downloads + 1,
        "run 1's evidence judged again"
    );
    let again = newest(&repo, &c.head_sha);
    assert_verdict(&again, "PASS_WITH_CAVEAT", "success");
    let (now, then) = (crate::scenarios::record(&again), crate::scenarios::record(&judged));
    assert_eq!(now["files"], then["files"], "the same evidence, the same findings");
    finish(app).await;
}

// ---- 9. a later verdict leaves no stale annotations in view ------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_findings_get_a_fresh_check_run() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    stage_case(&repo, 3, &c, 1);
    open_then_evidence(&app, 3, &c, 1).await;
    let first = newest(&repo, &c.head_sha);
    assert_verdict(&first, "INCONCLUSIVE", "failure");
    assert_eq!(first.annotations.len(), 1);

    // Judged again with other findings (here: retargeted to a base that has the change).
    repo.add_pull(3, EVIL_BASE, &c.head_sha, DOCS_ONLY);
    repo.set_base_ref(3, EVIL_REF);
    app.deliver(
        "pull_request",
        &retargeted(3, ("main", &c.base_sha), EVIL_BASE, &c.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let runs = ours(&repo, &c.head_sha);
    assert_eq!(runs.len(), 2, "{runs:#?}");
    let shown = newest(&repo, &c.head_sha);
    assert_verdict(&shown, "PASS", "success");
    assert!(shown.annotations.is_empty(), "{:#?}", shown.annotations);
    assert!(title(&shown).starts_with("PASS"));

    // The same findings again update the newest check run in place.
    app.deliver("check_suite", &check_suite_rerequested(&c.head_sha)).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(ours(&repo, &c.head_sha).len(), 2);
    assert_eq!(newest(&repo, &c.head_sha).updates, shown.updates + 1);
    finish(app).await;
}
