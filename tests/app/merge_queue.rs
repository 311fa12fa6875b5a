//! Merge queues and drafts end to end (docs/app.md, "Merge queues"): `merge_group` deliveries
//! (GitHub's sample payload, and the `destroyed` one derived from it) signed into the real
//! router, the real SQLite store and worker, against the stateful fake repository whose
//! compare and workflow-runs listings are checked against GitHub's OpenAPI subset.

use crate::scenarios::{assert_inconclusive_saying, assert_verdict, finish, start, the_check, the_comment};
use crate::support::app_harness::{
    case, patch_repo, pull_request_event, sample, stage_case, workflow_run_completed, App, Case, ARTIFACT, LEDGER_PATH,
    WORKFLOW,
};
use crate::support::fake_repo::{op, ArtifactState, FakeRepo, ListedRun};
use serde_json::{json, Value};
use std::time::Duration;

/// `merge_group` `action` for the group `base..head` (from GitHub's sample, or the derived
/// `destroyed` one with its `reason`).
fn merge_group_event(action: &str, base: &str, head: &str) -> Value {
    let mut p = match action {
        "destroyed" => sample("merge_group.destroyed.derived"),
        _ => sample("merge_group.checks_requested"),
    };
    patch_repo(&mut p);
    p["action"] = json!(action);
    p["merge_group"]["head_sha"] = json!(head);
    p["merge_group"]["base_sha"] = json!(base);
    p
}

/// `workflow_run` completed: run `run_id` of the evidence workflow triggered by `event` at `head`
/// (GitHub lists no pull requests for a merge group's run).
fn run_completed(run_id: u64, head: &str, event: &str) -> Value {
    let mut p = workflow_run_completed(run_id, head, WORKFLOW, &[]);
    p["workflow_run"]["event"] = json!(event);
    p["workflow_run"]["head_branch"] = json!("gh-readonly-queue/main/pr-104-929f8209d40f77f4abc622a499c93a83babdbe64");
    p
}

/// The merge group `c.base_sha..c.head_sha` on `repo`: the ledger at its base, the compare of
/// its commits, and workflow run `run_id` with the case's evidence (with the probe).
fn stage_group(repo: &FakeRepo, c: &Case, run_id: u64) {
    repo.put_file(&c.base_sha, LEDGER_PATH, &c.ledger());
    repo.add_compare(&c.base_sha, &c.head_sha, &c.diff);
    repo.add_workflow_run(run_id, ARTIFACT, ArtifactState::Zip(c.evidence_zip(true)));
}

async fn checks_requested(app: &App, c: &Case) {
    app.deliver(
        "merge_group",
        &merge_group_event("checks_requested", &c.base_sha, &c.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
}

fn assert_queued(repo: &FakeRepo, head: &str) {
    let check = the_check(repo, head);
    assert_eq!(
        (check.status.as_str(), check.conclusion.as_deref()),
        ("queued", None),
        "{check:#?}"
    );
}

/// No merge group gets a comment, and no pull request was asked about.
fn assert_no_pull_request_touched(repo: &FakeRepo) {
    assert!(repo.all_comments().is_empty(), "{:#?}", repo.all_comments());
    assert_eq!(repo.calls("GET", op::PULL), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_group_is_checked_at_once_and_judged_on_its_own_evidence() {
    let (app, repo) = start().await;
    let c = case("all_stable");
    stage_group(&repo, &c, 77);

    checks_requested(&app, &c).await;
    // Reported at once, so a required check does not stall the queue; not success yet.
    assert_queued(&repo, &c.head_sha);
    assert_eq!(repo.calls("GET", op::RUNS), 1, "the group's runs were looked up");

    // A pull request's run at the same head, and a merge group run at another head, are not
    // this group's evidence.
    app.deliver("workflow_run", &run_completed(77, &c.head_sha, "pull_request"))
        .await;
    app.deliver("workflow_run", &run_completed(78, &"f".repeat(40), "merge_group"))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 2);
    assert_queued(&repo, &c.head_sha);
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 0, "nothing judged");

    // The evidence workflow's run triggered by merge_group at the group's head: judged.
    app.deliver("workflow_run", &run_completed(77, &c.head_sha, "merge_group"))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "PASS", "success");
    assert_eq!(repo.calls("GET", op::COMPARE), 1, "the patch is base...head compared");
    let record = crate::scenarios::record(&check);
    assert_eq!(record["base_sha"], json!(c.base_sha), "{record:#}");
    assert_eq!(record["head_sha"], json!(c.head_sha), "{record:#}");
    assert_no_pull_request_touched(&repo);

    // Re-evaluate (the check run's button) judges the group again with the same run.
    let button = crate::support::app_harness::check_run_event("requested_action", &c.head_sha, Some("reevaluate"));
    app.deliver("check_run", &button).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS", "success");
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 2, "judged again");
    assert_no_pull_request_touched(&repo);
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_group_is_judged_like_a_head_and_blocks_the_queue_the_same_way() {
    let (app, repo) = start().await;
    // A frozen-only patch: INCONCLUSIVE blocks the queue exactly as it blocks a pull request.
    let c = case("frozen_only");
    assert_eq!(c.expected_verdict, "INCONCLUSIVE");
    stage_group(&repo, &c, 5);
    checks_requested(&app, &c).await;
    app.deliver("workflow_run", &run_completed(5, &c.head_sha, "merge_group"))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    let r = crate::scenarios::record(&check);
    assert_eq!(r["reasons"][0]["code"], c.expected_codes[0].as_str(), "{r:#}");
    assert_eq!(r["base_sha"], c.base_sha.as_str());
    assert_no_pull_request_touched(&repo);
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evidence_already_there_is_judged_when_checks_are_requested() {
    let (app, repo) = start().await;
    let c = case("all_stable");
    stage_group(&repo, &c, 9);
    // Still running: not evidence yet.
    let running = ListedRun {
        id: 9,
        event: "merge_group".into(),
        head_sha: c.head_sha.clone(),
        path: WORKFLOW.into(),
        status: "in_progress".into(),
    };
    repo.list_run(running.clone());
    checks_requested(&app, &c).await;
    assert_queued(&repo, &c.head_sha);
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 0);

    // Redelivered once the run completed (or the run finished before the queue asked).
    repo.list_run(ListedRun {
        status: "completed".into(),
        ..running
    });
    checks_requested(&app, &c).await;
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS", "success");
    assert_no_pull_request_touched(&repo);
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_evidence_in_time_is_inconclusive_and_rerunnable() {
    let (app, repo) = start().await;
    let c = case("all_stable");
    stage_group(&repo, &c, 3);
    checks_requested(&app, &c).await;
    assert_queued(&repo, &c.head_sha);
    app.advance(Duration::from_secs(121 * 60));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = the_check(&repo, &c.head_sha);
    assert_inconclusive_saying(&check, &["no evidence arrived", "120 minutes", "merge_group", ARTIFACT]);
    let buttons: Vec<&str> = check.actions.iter().filter_map(|a| a["identifier"].as_str()).collect();
    assert!(buttons.contains(&"rerun"), "{buttons:?}");

    // The evidence arrives after all (re-run): the same check run now says what it shows.
    app.deliver("workflow_run", &run_completed(3, &c.head_sha, "merge_group"))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS", "success");
    assert_no_pull_request_touched(&repo);
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destroyed_group_cancels_what_is_pending_and_nothing_after() {
    let (app, repo) = start().await;
    let c = case("all_stable");
    stage_group(&repo, &c, 4);
    checks_requested(&app, &c).await;
    assert_queued(&repo, &c.head_sha);

    app.deliver("merge_group", &merge_group_event("destroyed", &c.base_sha, &c.head_sha))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = the_check(&repo, &c.head_sha);
    assert_eq!(check.status, "completed");
    assert_eq!(check.conclusion.as_deref(), Some("cancelled"), "{check:#?}");
    assert!(check.title.as_deref().unwrap_or("").contains("dequeued"), "{check:#?}");

    // A late evidence run and the deadline change nothing: the group is gone.
    app.deliver("workflow_run", &run_completed(4, &c.head_sha, "merge_group"))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    app.advance(Duration::from_secs(121 * 60));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let after = the_check(&repo, &c.head_sha);
    assert_eq!(after.conclusion.as_deref(), Some("cancelled"));
    assert_eq!(after.updates, check.updates, "not touched again");
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 0);

    // A group judged before it left keeps its verdict.
    let c2 = case("failed");
    stage_group(&repo, &c2, 6);
    checks_requested(&app, &c2).await;
    app.deliver("workflow_run", &run_completed(6, &c2.head_sha, "merge_group"))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &c2.head_sha), "FAIL", "failure");
    app.deliver(
        "merge_group",
        &merge_group_event("destroyed", &c2.base_sha, &c2.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &c2.head_sha), "FAIL", "failure");
    assert_no_pull_request_touched(&repo);
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compare_too_large_is_read_from_its_listing_or_inconclusive_past_300_files() {
    let (app, repo) = start().await;
    let c = case("all_stable");
    stage_group(&repo, &c, 1);
    repo.set_compare_too_large(&c.base_sha, &c.head_sha);
    checks_requested(&app, &c).await;
    app.deliver("workflow_run", &run_completed(1, &c.head_sha, "merge_group"))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS", "success");
    assert_eq!(repo.calls("GET", op::COMPARE), 2, "the diff refused, then the listing");

    // 300 files or more: GitHub's listing may be cut, so the patch cannot be read whole.
    let c2 = case("some_frozen");
    let many: String = (0..310)
        .map(|i| {
            format!(
                "diff --git a/src/gen/m{i}.py b/src/gen/m{i}.py\nnew file mode 100644\nindex 0000000..{i:07x}\n\
                 --- /dev/null\n+++ b/src/gen/m{i}.py\n@@ -0,0 +1 @@\n+X = {i}\n"
            )
        })
        .collect();
    stage_group(&repo, &c2, 2);
    repo.add_compare(&c2.base_sha, &c2.head_sha, &format!("{}{many}", c2.diff));
    repo.set_compare_too_large(&c2.base_sha, &c2.head_sha);
    checks_requested(&app, &c2).await;
    app.deliver("workflow_run", &run_completed(2, &c2.head_sha, "merge_group"))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_inconclusive_saying(&the_check(&repo, &c2.head_sha), &["300 files", "cannot be read whole"]);
    assert_no_pull_request_touched(&repo);
    finish(app).await;
}

// ---- drafts -------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_gets_its_check_and_ready_for_review_judges_its_evidence_again() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 7, &c, 70);
    let mut opened = pull_request_event("opened", 7, &c.base_sha, &c.head_sha);
    opened["pull_request"]["draft"] = json!(true);
    app.deliver("pull_request", &opened).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_queued(&repo, &c.head_sha);

    app.deliver(
        "workflow_run",
        &workflow_run_completed(70, &c.head_sha, WORKFLOW, &[(7, &c.base_sha)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS_WITH_CAVEAT", "success");
    let comment = the_comment(&repo, 7);
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 1);

    // Ready for review: the head's evidence is judged again (the ledger may have expired since);
    // the same check run and the same comment, unchanged.
    let ready = pull_request_event("ready_for_review", 7, &c.base_sha, &c.head_sha);
    app.deliver("pull_request", &ready).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 2, "judged again");
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS_WITH_CAVEAT", "success");
    let again = the_comment(&repo, 7);
    assert_eq!((again.id, again.edits), (comment.id, comment.edits));

    // A draft made ready before any evidence: its check keeps waiting, nothing is judged.
    let c2 = case("all_stable");
    stage_case(&repo, 8, &c2, 80);
    let mut opened = pull_request_event("opened", 8, &c2.base_sha, &c2.head_sha);
    opened["pull_request"]["draft"] = json!(true);
    app.deliver("pull_request", &opened).await;
    app.deliver(
        "pull_request",
        &pull_request_event("ready_for_review", 8, &c2.base_sha, &c2.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 2);
    assert_queued(&repo, &c2.head_sha);
    assert_eq!(
        repo.calls("GET", op::ARTIFACT_ZIP),
        2,
        "nothing judged without evidence"
    );
    finish(app).await;
}

/// A pull request merged through the queue: the merge commit is the group's head, whose own
/// evidence was judged, so the branch's blindness map is made from the group's run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_through_the_queue_maps_the_branch_from_the_groups_evidence() {
    let (app, repo) = start().await;
    let group = case("frozen_only");
    stage_group(&repo, &group, 77);
    checks_requested(&app, &group).await;
    app.deliver("workflow_run", &run_completed(77, &group.head_sha, "merge_group"))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 1);

    // Pull request 7, whose head was never judged here, merged as the group's head.
    let pr_head = "5".repeat(40);
    repo.add_pull(7, &group.base_sha, &pr_head, &group.diff);
    repo.merge(7, &group.head_sha, "2026-11-20T12:00:00Z");
    repo.put_file(&group.head_sha, LEDGER_PATH, &group.ledger());
    let merged = crate::support::app_harness::pull_request_merged(7, &group.base_sha, &pr_head, &group.head_sha);
    app.deliver("pull_request", &merged).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(
        repo.calls("GET", op::ARTIFACT_ZIP),
        2,
        "the group's artifact was mapped"
    );

    // A later pull request with the frozen witness reads that map.
    let later = case("some_frozen");
    stage_case(&repo, 8, &later, 78);
    crate::scenarios::open_then_evidence(&app, 8, &later, 78).await;
    let summary = the_check(&repo, &later.head_sha).summary.unwrap_or_default();
    assert!(
        summary.contains(&format!("its blindness map of `{}`", &group.head_sha[..12])),
        "{summary}"
    );
    assert!(summary.contains("merged with #7"), "{summary}");
    finish(app).await;
}
