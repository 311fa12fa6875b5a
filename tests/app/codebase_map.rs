//! The default branch's blindness map end to end: a pull request judged on its full-suite
//! evidence is merged (a signed `pull_request` `closed` delivery), the App maps that evidence
//! once, and from then on the expired-freezes issue says what each owner's freezes leave blind
//! and a later pull request's check says how many lines of `main` its frozen witness alone
//! watches. Real router, store and worker; GitHub faked at the HTTP boundary, every request
//! body checked against the OpenAPI subset.

use flakegate::store::RetryPolicy;
use serde_json::{json, Value};

use crate::scenarios::{finish, open_then_evidence, the_check};
use crate::support::app_harness::{
    case, pull_request_merged, push_event, stage_case, App, CONFIG_PATH, LEDGER_PATH, NAME, OWNER,
};
use crate::support::fake_issues::FakeIssues;
use crate::support::fake_repo::FakeRepo;

/// The merge commit of pull request 7 on `main`.
const MERGED: &str = "7777777777777777777777777777777777777777";
const CONFIG: &str = "ledger_maintenance: off\n";

/// The project's ledger with the freeze of `test_gateway_retry` expired a day before the
/// harness's clock (2026-11-20), so the expired-freezes issue lists its owner.
fn ledger_with_an_expired_freeze() -> Vec<u8> {
    let path = crate::support::app_harness::fixtures().join("project/.github/flake-ledger.json");
    let mut ledger: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    ledger["frozen"][0]["expires"] = json!("2026-11-19");
    assert_eq!(ledger["frozen"][0]["test"], "tests/test_refunds.py::test_gateway_retry");
    serde_json::to_vec_pretty(&ledger).unwrap()
}

/// Pull request `number` (`base..head`) is merged as [`MERGED`] at `at`, and GitHub says so.
async fn merge(app: &App, repo: &FakeRepo, number: u64, base: &str, head: &str, at: &str) {
    repo.merge(number, MERGED, at);
    app.deliver("pull_request", &pull_request_merged(number, base, head, MERGED))
        .await;
}

async fn start() -> (App, FakeRepo, FakeIssues) {
    let app = App::start(RetryPolicy::default()).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let issues = FakeIssues::mount(&app.fake, OWNER, NAME).await;
    for at in ["main", MERGED] {
        repo.put_file(at, CONFIG_PATH, CONFIG.as_bytes());
        repo.put_file(at, LEDGER_PATH, &ledger_with_an_expired_freeze());
    }
    (app, repo, issues)
}

/// The row of `owner` in the issue's table of what freezes leave blind.
fn blind_row<'a>(body: &'a str, owner: &str) -> Option<&'a str> {
    let table = body.split("What these freezes leave blind").nth(1)?;
    table.lines().find(|l| l.starts_with(&format!("| `{owner}` |")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_maps_main_and_the_issue_and_later_checks_say_what_freezes_blind() {
    let (app, repo, issues) = start().await;
    // Before any map: the issue lists the expired freeze, and nothing about blind lines.
    app.deliver("push", &push_event("refs/heads/main", &"a".repeat(40)))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let before = issues.ours();
    assert_eq!(before.len(), 1);
    assert!(!before[0].body.contains("leave blind"), "{}", before[0].body);

    // Pull request 7 is judged on its evidence (the whole suite, per-test coverage), then merged.
    let c = case("frozen_only");
    stage_case(&repo, 7, &c, 1);
    open_then_evidence(&app, 7, &c, 1).await;
    let judged = the_check(&repo, &c.head_sha);
    assert!(
        !judged
            .summary
            .clone()
            .unwrap_or_default()
            .contains("it alone witnesses"),
        "no map yet:\n{}",
        judged.summary.clone().unwrap_or_default()
    );
    merge(&app, &repo, 7, &c.base_sha, &c.head_sha, "2026-11-20T12:00:00Z").await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(
        repo.check_runs().len(),
        1,
        "a merge publishes no check run: {:#?}",
        repo.check_runs()
    );

    // The next push edits the issue: each listed owner, the lines only their frozen tests run.
    app.deliver("push", &push_event("refs/heads/main", MERGED)).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let issue = &issues.ours()[0];
    assert_eq!(issue.number, before[0].number, "the same issue, edited");
    let body = &issue.body;
    assert!(
        body.contains(&format!("full-suite evidence of `{}`", &MERGED[..12])),
        "{body}"
    );
    assert!(body.contains("merged with pull request #7"), "{body}");
    let row = blind_row(body, "@shop/payments").unwrap_or_else(|| panic!("no row for @shop/payments:\n{body}"));
    assert_eq!(row, "| `@shop/payments` | 5 | `src/shop/refunds.py` (5) |", "{body}");
    // An owner whose frozen test has a stable companion on every line it runs blinds nothing.
    assert_eq!(blind_row(body, "qa-oncall"), None, "not listed: not expiring\n{body}");

    // A later pull request whose witness is that frozen test: its check says what it costs.
    let later = case("some_frozen");
    stage_case(&repo, 8, &later, 2);
    open_then_evidence(&app, 8, &later, 2).await;
    let summary = the_check(&repo, &later.head_sha).summary.unwrap_or_default();
    assert!(
        summary.contains("`tests/test_refunds.py::test_gateway_retry` — unstable on base (2/5 probe runs failed); across `main` it alone witnesses 5 lines, blind while it is unstable"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("its blindness map of `{}`", &MERGED[..12])),
        "{summary}"
    );
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merges_from_a_fork_into_another_branch_without_evidence_or_cut_short_map_nothing() {
    let (app, repo, issues) = start().await;
    let c = case("frozen_only");
    // A fork's pull request, judged and merged: its artifact is not read for the map.
    stage_case(&repo, 7, &c, 1);
    repo.set_fork(7);
    app.deliver(
        "pull_request",
        &crate::support::app_harness::pull_request_event("opened", 7, &c.base_sha, &c.head_sha),
    )
    .await;
    app.worker.run_until_idle().await.unwrap();
    app.deliver(
        "workflow_run",
        &crate::support::app_harness::workflow_run_completed(
            1,
            &c.head_sha,
            crate::support::app_harness::WORKFLOW,
            &[],
        ),
    )
    .await;
    app.worker.run_until_idle().await.unwrap();
    merge(&app, &repo, 7, &c.base_sha, &c.head_sha, "2026-11-20T12:00:00Z").await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    // Merged into a release branch, and merged with no evidence ever judged: nothing either.
    let other = case("some_frozen");
    stage_case(&repo, 8, &other, 2);
    repo.set_base_ref(8, "release/1.2");
    open_then_evidence(&app, 8, &other, 2).await;
    merge(&app, &repo, 8, &other.base_sha, &other.head_sha, "2026-11-20T12:05:00Z").await;
    repo.add_pull(9, &c.base_sha, &"9".repeat(40), &c.diff);
    merge(&app, &repo, 9, &c.base_sha, &"9".repeat(40), "2026-11-20T12:10:00Z").await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 2);
    // A run cut short is judged INCONCLUSIVE and never read, not even once merged.
    let cut = case("all_stable");
    stage_case(&repo, 10, &cut, 3);
    app.deliver(
        "pull_request",
        &crate::support::app_harness::pull_request_event("opened", 10, &cut.base_sha, &cut.head_sha),
    )
    .await;
    app.worker.run_until_idle().await.unwrap();
    let mut cancelled = crate::support::app_harness::workflow_run_completed(
        3,
        &cut.head_sha,
        crate::support::app_harness::WORKFLOW,
        &[(10, &cut.base_sha)],
    );
    cancelled["workflow_run"]["conclusion"] = json!("cancelled");
    app.deliver("workflow_run", &cancelled).await;
    app.worker.run_until_idle().await.unwrap();
    assert_eq!(the_check(&repo, &cut.head_sha).conclusion.as_deref(), Some("failure"));
    merge(&app, &repo, 10, &cut.base_sha, &cut.head_sha, "2026-11-20T12:15:00Z").await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let downloads = repo.calls("GET", crate::support::fake_repo::op::ARTIFACT_ZIP);
    app.deliver("push", &push_event("refs/heads/main", MERGED)).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let body = &issues.ours()[0].body;
    assert!(!body.contains("leave blind"), "no map was made:\n{body}");
    assert_eq!(
        repo.calls("GET", crate::support::fake_repo::op::ARTIFACT_ZIP),
        downloads
    );
    finish(app).await;
}
