//! End-to-end scenarios of the App against a stateful fake repository: signed webhooks into the
//! real router, the real SQLite store (temp dir), the real worker (`run_until_idle`, injected
//! clock, no sleeps) and the real GitHub client, against `FakeRepo` on the fake GitHub, which
//! authenticates every request and validates every body against GitHub's OpenAPI subset.
//! Fixture shas are read from the fixtures at test time.

use crate::support::app_harness::{
    case, check_run_event, check_suite_rerequested, pull_request_event, stage_case, workflow_run_completed, App, Case,
    ARTIFACT, CONFIG_PATH, LEDGER_PATH, NAME, OWNER, WORKFLOW,
};
use crate::support::fake_repo::{op, ArtifactState, CheckRunState, CommentState, FakeRepo};
use flakegate::store::{JobState, RetryPolicy};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

const MARKER: &str = flakegate::present::comment::COMMENT_MARKER;

pub(crate) async fn start() -> (App, FakeRepo) {
    start_with(RetryPolicy::default()).await
}

pub(crate) async fn start_with(policy: RetryPolicy) -> (App, FakeRepo) {
    let app = App::start(policy).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    (app, repo)
}

/// Tear down strictly: no invalid, unauthenticated or unmatched request was seen.
pub(crate) async fn finish(app: App) {
    let App { fake, .. } = app;
    fake.verify().await;
}

/// pull_request opened, then the evidence run completes; both jobs processed.
pub(crate) async fn open_then_evidence(app: &App, pr: u64, c: &Case, run_id: u64) {
    app.deliver(
        "pull_request",
        &pull_request_event("opened", pr, &c.base_sha, &c.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    app.deliver(
        "workflow_run",
        &workflow_run_completed(run_id, &c.head_sha, WORKFLOW, &[(pr, &c.base_sha)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
}

/// The one check run on `head`.
pub(crate) fn the_check(repo: &FakeRepo, head: &str) -> CheckRunState {
    let runs = repo.check_runs_for(head);
    assert_eq!(runs.len(), 1, "exactly one check run on {head}: {runs:#?}");
    runs.into_iter().next().unwrap()
}

/// The one comment the App wrote on `pr`.
pub(crate) fn the_comment(repo: &FakeRepo, pr: u64) -> CommentState {
    let cs: Vec<CommentState> = repo.comments(pr).into_iter().filter(|c| c.by_app).collect();
    assert_eq!(cs.len(), 1, "exactly one comment by the App on #{pr}: {cs:#?}");
    cs.into_iter().next().unwrap()
}

/// The evidence record in the check run's `text`.
pub(crate) fn record(c: &CheckRunState) -> Value {
    let text = c.text.as_deref().expect("the check run has a text");
    let start = text.find("```json\n").expect("a json block") + "```json\n".len();
    let end = start + text[start..].find("\n```").expect("the block closes");
    serde_json::from_str(&text[start..end]).expect("the block is JSON")
}

pub(crate) fn title(c: &CheckRunState) -> &str {
    c.title.as_deref().unwrap_or("")
}

pub(crate) fn summary(c: &CheckRunState) -> &str {
    c.summary.as_deref().unwrap_or("")
}

/// Completed with `conclusion`, titled `verdict: …`.
pub(crate) fn assert_verdict(c: &CheckRunState, verdict: &str, conclusion: &str) {
    assert_eq!(c.status, "completed", "{c:#?}");
    assert_eq!(c.conclusion.as_deref(), Some(conclusion), "{c:#?}");
    assert!(
        title(c).starts_with(&format!("{verdict}:")),
        "title {:?} for {verdict}",
        title(c)
    );
    assert_eq!(c.name, "flakegate");
    assert_eq!(c.external_id.as_deref(), Some(c.head_sha.as_str()));
}

/// An INCONCLUSIVE that says why (no evaluation could be done): `needles` all appear.
pub(crate) fn assert_inconclusive_saying(c: &CheckRunState, needles: &[&str]) {
    assert_verdict(c, "INCONCLUSIVE", "failure");
    let all = format!("{}\n{}", title(c), summary(c));
    for n in needles {
        assert!(all.contains(n), "{n:?} not in\n{all}");
    }
}

/// `n` new Python files no coverage measured: each is a blind file.
fn blind_files(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "diff --git a/src/gen/mod_{i:04}.py b/src/gen/mod_{i:04}.py\nnew file mode 100644\n\
                 index 0000000..{i:07x}\n--- /dev/null\n+++ b/src/gen/mod_{i:04}.py\n@@ -0,0 +1,2 @@\n\
                 +def generated_{i}():\n+    return {i}\n"
            )
        })
        .collect()
}

// ---- a. the four verdicts ---------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_four_verdicts_end_to_end() {
    let (app, repo) = start().await;
    let table = [
        ("all_stable", "PASS", "success"),
        ("some_frozen", "PASS_WITH_CAVEAT", "success"),
        ("frozen_only", "INCONCLUSIVE", "failure"),
        ("failed", "FAIL", "failure"),
    ];
    for (i, (name, verdict, conclusion)) in table.iter().enumerate() {
        let c = case(name);
        assert_eq!(&c.expected_verdict, verdict, "{name}: case.json changed");
        let pr = 10 + i as u64;
        stage_case(&repo, pr, &c, 100 + i as u64);

        app.deliver(
            "pull_request",
            &pull_request_event("opened", pr, &c.base_sha, &c.head_sha),
        )
        .await;
        assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
        let queued = the_check(&repo, &c.head_sha);
        assert_eq!((queued.status.as_str(), queued.conclusion.as_deref()), ("queued", None));
        assert!(title(&queued).starts_with("waiting for evidence"), "{}", title(&queued));
        assert!(title(&queued).contains(ARTIFACT));

        app.deliver(
            "workflow_run",
            &workflow_run_completed(100 + i as u64, &c.head_sha, WORKFLOW, &[(pr, &c.base_sha)]),
        )
        .await;
        assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
        let done = the_check(&repo, &c.head_sha);
        assert_verdict(&done, verdict, conclusion);
        assert_eq!(
            done.id, queued.id,
            "{name}: the queued check run is completed, not another"
        );
        let r = record(&done);
        assert_eq!(r["verdict"], *verdict, "{name}");
        assert_eq!(r["reasons"][0]["code"], c.expected_codes[0].as_str(), "{name}");
        assert_eq!(r["head_sha"], c.head_sha.as_str());
        assert_eq!(r["base_sha"], c.base_sha.as_str());
        // Evidence files are named as the artifact names them, never by the server's scratch paths.
        let text = done.text.as_deref().unwrap();
        assert!(!text.contains("flakegate-job-") && !text.contains("/tmp"), "{text}");
        let inputs: Vec<&str> = r["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["path"].as_str())
            .collect();
        assert!(inputs.contains(&"flakegate-evidence/coverage.json"), "{inputs:?}");
        assert!(
            inputs.iter().any(|p| p.starts_with("flakegate-evidence/probe")),
            "{inputs:?}"
        );
        let labels: Vec<&str> = done.actions.iter().filter_map(|a| a["identifier"].as_str()).collect();
        assert!(
            labels.contains(&"rerun") && labels.contains(&"reevaluate"),
            "{labels:?}"
        );

        let comments = repo.comments(pr);
        match *name {
            // Nothing to ask of anyone: no comment at all.
            "all_stable" | "failed" => assert!(comments.is_empty(), "{name}: {comments:#?}"),
            _ => {
                let body = &the_comment(&repo, pr).body;
                assert!(body.starts_with(MARKER), "{body}");
                assert!(body.contains(verdict), "{body}");
                // Mentioned where the owner must act before merge; named otherwise.
                let owner = if *verdict == "PASS_WITH_CAVEAT" {
                    "**shop/payments**"
                } else {
                    "@shop/payments"
                };
                assert!(body.contains(owner), "{name}: the blind owner is named\n{body}");
                assert!(body.contains("tests/test_refunds.py::test_gateway_retry"), "{body}");
                // `qa-oncall` is no GitHub handle: named, never @-mentioned.
                assert!(!body.contains("@qa-oncall"), "{body}");
            }
        }
        if *name == "frozen_only" {
            assert_eq!(done.annotations.len(), 1, "{:#?}", done.annotations);
            let a = &done.annotations[0];
            assert_eq!(a["path"], "src/shop/refunds.py");
            assert_eq!(a["annotation_level"], "failure");
            assert!(a["title"].as_str().unwrap().starts_with("Frozen-only"), "{a}");
        }
    }
    assert_eq!(repo.check_runs().len(), 4);
    finish(app).await;
}

// ---- b. the blind spot is gone ----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blind_spot_gone_edits_the_one_comment_in_place() {
    let (app, repo) = start().await;
    let blind = case("frozen_only");
    let fixed = case("all_stable");
    assert_eq!(blind.base_sha, fixed.base_sha);
    stage_case(&repo, 7, &blind, 1);
    // A reviewer quoting the marker: not the App's comment, never edited.
    let quoted = format!("> {MARKER}\n> what does this mean?\n");
    let human = repo.add_user_comment(7, &quoted);
    open_then_evidence(&app, 7, &blind, 1).await;
    assert_verdict(&the_check(&repo, &blind.head_sha), "INCONCLUSIVE", "failure");
    let first = the_comment(&repo, 7);
    assert!(first.body.contains("@shop/payments"), "{}", first.body);

    // A push: the patch now has a stable witness.
    stage_case(&repo, 7, &fixed, 2);
    app.deliver(
        "pull_request",
        &pull_request_event("synchronize", 7, &fixed.base_sha, &fixed.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(the_check(&repo, &fixed.head_sha).status, "queued");
    app.deliver(
        "workflow_run",
        &workflow_run_completed(2, &fixed.head_sha, WORKFLOW, &[(7, &fixed.base_sha)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &fixed.head_sha), "PASS", "success");
    // The old head's check run keeps its verdict.
    assert_verdict(&the_check(&repo, &blind.head_sha), "INCONCLUSIVE", "failure");

    let now = the_comment(&repo, 7);
    assert_eq!(now.id, first.id, "the same comment");
    assert_eq!(now.edits, 1);
    assert!(now.body.starts_with(MARKER));
    assert!(now.body.contains("the blind spot is gone"), "{}", now.body);
    assert!(now.body.contains(&fixed.head_sha[..12]), "{}", now.body);
    assert!(
        !now.body.contains("@shop/payments"),
        "nobody is asked any more:\n{}",
        now.body
    );

    let mine = repo.comments(7).into_iter().find(|c| c.id == human).unwrap();
    assert_eq!((mine.body.as_str(), mine.edits), (quoted.as_str(), 0));

    // The same evidence delivered again says nothing new: the comment is not touched.
    app.deliver(
        "workflow_run",
        &workflow_run_completed(2, &fixed.head_sha, WORKFLOW, &[(7, &fixed.base_sha)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(the_comment(&repo, 7).edits, 1);
    finish(app).await;
}

// ---- c. the artifact expired, missing, or a zip bomb -----------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_artifact_completes_inconclusive_asking_for_a_rerun() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    repo.add_workflow_run(1, ARTIFACT, ArtifactState::Expired);
    open_then_evidence(&app, 3, &c, 1).await;
    let check = the_check(&repo, &c.head_sha);
    assert_inconclusive_saying(&check, &["expired", "re-run", ARTIFACT]);
    assert!(repo.comments(3).is_empty());
    assert_eq!(
        repo.calls("GET", op::ARTIFACT_ZIP),
        0,
        "an expired artifact is not downloaded"
    );

    // Listed as live, gone by the time it is fetched (GitHub's 410): the same answer.
    let c2 = case("all_stable");
    stage_case(&repo, 4, &c2, 2);
    repo.fail_next("GET", op::ARTIFACT_ZIP, 1, 410, &[]);
    open_then_evidence(&app, 4, &c2, 2).await;
    assert_inconclusive_saying(&the_check(&repo, &c2.head_sha), &["expired", "re-run", ARTIFACT]);
    finish(app).await;
}

/// A run cut short (cancelled, timed out…) may have uploaded a partial artifact: it is never
/// judged, a re-evaluation of its head says the same, and the next complete run is judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evidence_run_cut_short_is_never_judged() {
    let (app, repo) = start().await;
    let c = case("all_stable");
    stage_case(&repo, 3, &c, 1);
    for (run_id, how) in [(1, "cancelled"), (2, "timed_out")] {
        repo.add_workflow_run(run_id, ARTIFACT, ArtifactState::Zip(c.evidence_zip(true)));
        let mut p = workflow_run_completed(run_id, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]);
        p["workflow_run"]["conclusion"] = serde_json::json!(how);
        app.deliver("workflow_run", &p).await;
        assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
        assert_inconclusive_saying(&the_check(&repo, &c.head_sha), &[how, "partial", "re-run"]);
    }
    assert_eq!(
        repo.calls("GET", op::ARTIFACT_ZIP),
        0,
        "a partial artifact is not even downloaded"
    );
    // Re-evaluate judges the run known for the head: still the one cut short.
    app.deliver(
        "check_run",
        &check_run_event("requested_action", &c.head_sha, Some("reevaluate")),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_inconclusive_saying(&the_check(&repo, &c.head_sha), &["timed_out", "partial"]);
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 0);
    // A run that completed is judged.
    repo.add_workflow_run(3, ARTIFACT, ArtifactState::Zip(c.evidence_zip(true)));
    app.deliver(
        "workflow_run",
        &workflow_run_completed(3, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS", "success");
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_artifact_waits_for_evidence_or_fails_the_named_workflow() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    repo.add_workflow_run(1, ARTIFACT, ArtifactState::Missing);
    // No config: any workflow may bring evidence, so a run without it (lint, docs…) is ignored…
    open_then_evidence(&app, 3, &c, 1).await;
    assert_eq!(the_check(&repo, &c.head_sha).status, "queued");
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 0, "nothing judged");
    // …and the check does not wait forever: at the deadline it says what it waited for.
    app.advance(Duration::from_secs(121 * 60));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_inconclusive_saying(
        &the_check(&repo, &c.head_sha),
        &["no evidence arrived", ARTIFACT, "120 minutes"],
    );

    // The config names the evidence workflow: its run without the artifact is a failure at once.
    let c2 = case("all_stable");
    let config = format!("evidence:\n  workflows: [flakegate-evidence.yml]\n  artifact: {ARTIFACT}\n");
    repo.put_file(&c2.base_sha, CONFIG_PATH, config.as_bytes());
    stage_case(&repo, 4, &c2, 2);
    repo.add_workflow_run(2, ARTIFACT, ArtifactState::Missing);
    open_then_evidence(&app, 4, &c2, 2).await;
    assert_inconclusive_saying(
        &the_check(&repo, &c2.head_sha),
        &["finished without uploading", ARTIFACT, "flakegate-evidence.yml"],
    );
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zip_bomb_and_unsafe_entries_are_rejected_inconclusive() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    // 32 MB of zeros deflates to a few kB: far past the 200x ratio cap.
    let zeros = vec![0u8; 32 << 20];
    let meta = std::fs::read(c.dir.join("evidence/meta.json")).unwrap();
    let bomb = FakeRepo::zip_entries(&[("meta.json", &meta), ("results/huge.jsonl", &zeros)]);
    repo.add_workflow_run(1, ARTIFACT, ArtifactState::Zip(bomb));
    open_then_evidence(&app, 3, &c, 1).await;
    assert_inconclusive_saying(&the_check(&repo, &c.head_sha), &["results/huge.jsonl", "zip bomb"]);

    let c2 = case("all_stable");
    stage_case(&repo, 4, &c2, 2);
    let evil = FakeRepo::zip_entries(&[("meta.json", &meta), ("../../outside.txt", b"x")]);
    repo.add_workflow_run(2, ARTIFACT, ArtifactState::Zip(evil));
    open_then_evidence(&app, 4, &c2, 2).await;
    assert_inconclusive_saying(&the_check(&repo, &c2.head_sha), &["../../outside.txt", "unsafe name"]);
    assert!(!app.dir.path().join("outside.txt").exists());
    finish(app).await;
}

// ---- d. the diff too large ---------------------------------------------------------------------

/// Judge `c` with `extra` appended to its diff; `too_large` makes the App page the files listing.
async fn judge(c: &Case, extra: &str, too_large: bool) -> (CheckRunState, Option<CommentState>, usize) {
    let (app, repo) = start().await;
    stage_case(&repo, 5, c, 1);
    repo.add_pull(5, &c.base_sha, &c.head_sha, &format!("{}{extra}", c.diff));
    if too_large {
        repo.set_diff_too_large(5);
    }
    open_then_evidence(&app, 5, c, 1).await;
    let check = the_check(&repo, &c.head_sha);
    let comment = repo.comments(5).into_iter().next();
    let pages = repo.calls("GET", op::PULL_FILES);
    finish(app).await;
    (check, comment, pages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_large_diff_falls_back_to_the_files_listing_with_the_same_verdict() {
    let c = case("some_frozen");
    // 150 files more: the listing takes two pages of 100.
    let extra = blind_files(150);
    let (by_diff, comment_by_diff, pages) = judge(&c, &extra, false).await;
    assert_eq!(pages, 0);
    let (by_files, comment_by_files, pages) = judge(&c, &extra, true).await;
    assert_eq!(pages, 2, "the files listing is paged");

    assert_verdict(&by_diff, "PASS_WITH_CAVEAT", "success");
    assert_eq!(by_files.conclusion, by_diff.conclusion);
    assert_eq!(by_files.title, by_diff.title);
    assert_eq!(by_files.annotations, by_diff.annotations);
    assert_eq!(by_files.annotations.len(), 150, "one per blind file");
    let (a, b) = (record(&by_diff), record(&by_files));
    for key in ["verdict", "reasons", "files", "witnesses", "blind_owners"] {
        assert_eq!(a[key], b[key], "{key} differs between the diff and the files listing");
    }
    assert_eq!(
        comment_by_diff.map(|c| c.body),
        comment_by_files.map(|c| c.body),
        "the same comment"
    );
}

// ---- e. the ledger absent, invalid, or changed by the patch --------------------------------

/// frozen_only's evidence without the probe: only the ledger freezes its one witness.
fn stage_without_probe(repo: &FakeRepo, pr: u64, c: &Case, run_id: u64) {
    repo.add_pull(pr, &c.base_sha, &c.head_sha, &c.diff);
    repo.add_workflow_run(run_id, ARTIFACT, ArtifactState::Zip(c.evidence_zip(false)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_absent_at_base_means_nothing_is_frozen() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    // No ledger at the base, and no probe: nothing is frozen or unstable. The test the project
    // ledger freezes as broken on base (`test_refund_rounding_broken`, failing on every head)
    // is now a stable test that failed — but it ran none of the changed lines, so its failure
    // is not blamed on the patch (`flaky_unchanged`); the ledger's other freeze is now a stable
    // witness.
    stage_without_probe(&repo, 3, &c, 1);
    open_then_evidence(&app, 3, &c, 1).await;
    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "PASS_WITH_CAVEAT", "success");
    let r = record(&check);
    assert_eq!(r["reasons"][0]["code"], "flaky_unchanged");
    assert_eq!(
        r["reasons"][0]["tests"][0],
        "tests/test_refunds.py::test_refund_rounding_broken"
    );
    assert_eq!(r["witnesses"]["frozen"], serde_json::json!([]));
    assert_eq!(
        r["witnesses"]["stable"],
        serde_json::json!(["tests/test_refunds.py::test_gateway_retry"])
    );
    let notes = r["notes"].to_string();
    assert!(notes.contains("no ledger") && notes.contains(LEDGER_PATH), "{notes}");
    assert!(repo.comments(3).is_empty(), "no owner is blind");

    // The same evidence with the ledger at the base: frozen, INCONCLUSIVE.
    let c2 = case("frozen_only");
    repo.put_file(&c2.base_sha, LEDGER_PATH, &c2.ledger());
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c2.head_sha, WORKFLOW, &[(3, &c2.base_sha)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = the_check(&repo, &c2.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    assert_eq!(record(&check)["reasons"][0]["code"], "frozen_only");
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_ledger_at_base_is_inconclusive() {
    let (app, repo) = start().await;
    // The fixture case: a ledger entry without an owner and one frozen for too long.
    let c = case("invalid_ledger");
    assert_eq!(c.expected_codes[0], "invalid_ledger");
    stage_case(&repo, 3, &c, 1);
    open_then_evidence(&app, 3, &c, 1).await;
    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    assert_eq!(record(&check)["reasons"][0]["code"], "invalid_ledger");

    // Not even JSON: the error names the file at the base, with line and column.
    let c2 = case("frozen_only");
    stage_case(&repo, 4, &c2, 2);
    repo.put_file(&c2.base_sha, LEDGER_PATH, b"{\"frozen\": [\n  {\"test\": }\n]}\n");
    open_then_evidence(&app, 4, &c2, 2).await;
    let check = the_check(&repo, &c2.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    let r = record(&check);
    assert_eq!(r["reasons"][0]["code"], "invalid_ledger");
    let msg = r["reasons"][0]["message"].as_str().unwrap();
    assert!(msg.contains(&format!("{}:{LEDGER_PATH}", c2.base_sha)), "{msg}");
    assert!(msg.contains(":2:"), "line 2 is named: {msg}");
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_the_patch_edits_is_reported_and_the_base_one_obeyed() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    let base_ledger = c.ledger();
    // The patch unfreezes its own only witness.
    let mut ledger: Value = serde_json::from_slice(&base_ledger).unwrap();
    ledger["frozen"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e["test"] != "tests/test_refunds.py::test_gateway_retry");
    let head_ledger = format!("{}\n", serde_json::to_string_pretty(&ledger).unwrap());
    let old = String::from_utf8(base_ledger.clone()).unwrap();
    let (old_lines, new_lines): (Vec<&str>, Vec<&str>) = (old.lines().collect(), head_ledger.lines().collect());
    let mut hunk = format!(
        "diff --git a/{LEDGER_PATH} b/{LEDGER_PATH}\nindex 1111111..2222222 100644\n--- a/{LEDGER_PATH}\n+++ b/{LEDGER_PATH}\n@@ -1,{} +1,{} @@\n",
        old_lines.len(),
        new_lines.len()
    );
    for l in &old_lines {
        hunk.push_str(&format!("-{l}\n"));
    }
    for l in &new_lines {
        hunk.push_str(&format!("+{l}\n"));
    }
    repo.put_file(&c.base_sha, LEDGER_PATH, &base_ledger);
    repo.put_file(&c.head_sha, LEDGER_PATH, head_ledger.as_bytes());
    stage_without_probe(&repo, 3, &c, 1);
    repo.add_pull(3, &c.base_sha, &c.head_sha, &format!("{}{hunk}", c.diff));
    open_then_evidence(&app, 3, &c, 1).await;

    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "INCONCLUSIVE", "failure");
    let r = record(&check);
    let codes: Vec<&str> = r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["code"].as_str())
        .collect();
    assert_eq!(
        codes[0], "frozen_only",
        "the base ledger still freezes the witness: {codes:?}"
    );
    assert!(codes.contains(&"ledger_edited"), "the edit is reported: {codes:?}");
    let edits = r["ledger_changes"].to_string();
    assert!(edits.contains("test_gateway_retry"), "{edits}");
    let body = the_comment(&repo, 3).body;
    assert!(body.contains("@shop/payments"), "{body}");
    finish(app).await;
}

/// `ledger` (the project's) with `edit` applied to its `frozen` list, as the ledger commands write it.
fn ledger_with(ledger: &[u8], edit: impl FnOnce(&mut Vec<Value>)) -> Vec<u8> {
    let mut l: Value = serde_json::from_slice(ledger).unwrap();
    edit(l["frozen"].as_array_mut().unwrap());
    format!("{}\n", serde_json::to_string_pretty(&l).unwrap()).into_bytes()
}

fn frozen(test: &str, owner: &str, expires: &str) -> Value {
    serde_json::json!({
        "test": test, "observed": "1/7 fail on clean base", "reason": "flaky",
        "owner": owner, "frozen_at": "2026-11-20", "expires": expires
    })
}

/// A diff of the whole ledger file, `old` → `new` (every line removed and added).
fn ledger_hunk(old: &[u8], new: &[u8]) -> String {
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    let (o, n): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let mut d = format!(
        "diff --git a/{LEDGER_PATH} b/{LEDGER_PATH}\nindex 1111111..2222222 100644\n--- a/{LEDGER_PATH}\n+++ b/{LEDGER_PATH}\n@@ -1,{} +1,{} @@\n",
        o.len(),
        n.len()
    );
    o.iter().for_each(|l| d.push_str(&format!("-{l}\n")));
    n.iter().for_each(|l| d.push_str(&format!("+{l}\n")));
    d
}

fn codes_of(r: &Value) -> Vec<String> {
    r["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["code"].as_str().unwrap().to_owned())
        .collect()
}

/// The base branch's tip, past the commit the pull request branched from (the case's base).
const BASE_TIP: &str = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1";
/// Another branch the pull request is retargeted to, with a ledger of its own.
const RELEASE_TIP: &str = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_edits_on_the_base_after_the_branch_point_or_a_retarget_are_not_the_patchs() {
    let (app, repo) = start().await;
    let c = case("all_stable");
    let found = c.ledger();
    // The head leaves the ledger as it branched with it; main has since renewed a freeze,
    // extended another, pruned a third and frozen the patch's own witness (test_apply_tax).
    let tip = ledger_with(&found, |l| {
        l[0]["observed"] = "3/7 fail on clean base".into();
        l[0]["expires"] = "2027-01-09".into();
        l[1]["expires"] = "2026-12-30".into();
        l.retain(|e| e["test"] != "tests/test_pricing.py::test_bulk_discount");
        l.push(frozen(
            "tests/test_pricing.py::test_apply_tax",
            "@shop/pricing",
            "2026-12-20",
        ));
    });
    repo.put_file(BASE_TIP, LEDGER_PATH, &tip);
    repo.put_file(&c.head_sha, LEDGER_PATH, &found);
    repo.add_pull(3, BASE_TIP, &c.head_sha, &c.diff);
    repo.add_workflow_run(1, ARTIFACT, ArtifactState::Zip(c.evidence_zip(true)));
    app.deliver("pull_request", &pull_request_event("opened", 3, BASE_TIP, &c.head_sha))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, BASE_TIP)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = the_check(&repo, &c.head_sha);
    let r = record(&check);
    // Judged with main's ledger (the witness is frozen there), and no edit is the patch's.
    assert_eq!(codes_of(&r), ["some_frozen"], "{:#}", r["reasons"]);
    assert_eq!(r["ledger_changes"], serde_json::json!([]));
    assert!(!summary(&check).contains("freezes tests"), "{}", summary(&check));

    // Retargeted to `release`, which keeps another ledger (the first of the project's freezes
    // only, and one of its own): still no edit of the patch's.
    let release = ledger_with(&found, |l| {
        l.truncate(1);
        l.push(frozen("tests/test_util.py::test_clamp", "@shop/util", "2026-12-20"));
    });
    repo.put_file(RELEASE_TIP, LEDGER_PATH, &release);
    repo.add_pull(3, RELEASE_TIP, &c.head_sha, &c.diff);
    repo.set_base_ref(3, "release");
    let mut retarget = pull_request_event("edited", 3, RELEASE_TIP, &c.head_sha);
    retarget["changes"] = serde_json::json!({ "base": { "ref": { "from": "main" }, "sha": { "from": BASE_TIP } } });
    app.deliver("pull_request", &retarget).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = repo.check_runs_for(&c.head_sha).pop().unwrap();
    let r = record(&check);
    assert_eq!(r["base_sha"], RELEASE_TIP);
    assert_verdict(&check, "PASS", "success");
    assert_eq!(r["ledger_changes"], serde_json::json!([]));

    // The patch's own edit on top of the moved base is its own, and only it: it freezes its
    // witness (a self-freeze); main's renewal of test_gateway_retry is not listed.
    let leaves = ledger_with(&found, |l| {
        l.push(frozen("tests/test_pricing.py::test_apply_tax", "@agent", "2026-12-20"));
    });
    let head2 = "4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e";
    let tip2 = ledger_with(&found, |l| l[0]["expires"] = "2027-01-09".into());
    repo.put_file(BASE_TIP, LEDGER_PATH, &tip2);
    repo.put_file(head2, LEDGER_PATH, &leaves);
    let diff = format!("{}{}", c.diff, ledger_hunk(&found, &leaves));
    repo.add_pull(4, BASE_TIP, head2, &diff);
    repo.add_workflow_run(2, ARTIFACT, ArtifactState::Zip(c.evidence_zip(true)));
    app.deliver(
        "workflow_run",
        &workflow_run_completed(2, head2, WORKFLOW, &[(4, BASE_TIP)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let r = record(&the_check(&repo, head2));
    let codes = codes_of(&r);
    assert!(codes.contains(&"self_freeze".to_owned()), "{codes:?}");
    let changes = r["ledger_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:#?}");
    assert_eq!(
        (changes[0]["test"].as_str(), changes[0]["kind"].as_str()),
        (Some("tests/test_pricing.py::test_apply_tax"), Some("added"))
    );
    finish(app).await;
}

// ---- f. GitHub failing, then rate limiting ------------------------------------------------------

/// The job's next attempt time, as the store has it.
async fn next_attempt(app: &App, event: &str) -> chrono::DateTime<chrono::Utc> {
    let jobs = app.store.jobs().await.unwrap();
    jobs.into_iter().find(|j| j.event == event).unwrap().next_attempt_at
}

/// Step the injected clock to `at`: nothing is due a millisecond before, the job is at `at`.
async fn due_exactly_at(app: &App, at: chrono::DateTime<chrono::Utc>) {
    let now = (app.clock())();
    let wait = (at - now).to_std().expect("the retry is in the future");
    app.advance(wait - Duration::from_millis(1));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 0, "not before {at}");
    app.advance(Duration::from_millis(1));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1, "at {at}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_502_a_429_and_a_rate_limit_are_retried_when_due_and_publish_once() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    app.deliver(
        "pull_request",
        &pull_request_event("opened", 3, &c.base_sha, &c.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);

    let t0 = (app.clock())();
    let reset_at = t0.timestamp() + 1 + 1 + 90;
    repo.fail_next("PATCH", op::CHECK_RUN, 1, 502, &[]);
    repo.fail_next("PATCH", op::CHECK_RUN, 1, 429, &[("retry-after", "1")]);
    let reset = reset_at.to_string();
    repo.fail_next(
        "PATCH",
        op::CHECK_RUN,
        1,
        403,
        &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", reset.as_str())],
    );
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
    )
    .await;
    // Attempt 1: the 502. Retried after about a second (the first backoff, less its jitter).
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let retry = next_attempt(&app, "workflow_run").await;
    let wait = retry - t0;
    assert!(
        wait >= chrono::Duration::milliseconds(500) && wait <= chrono::Duration::seconds(1),
        "{wait}"
    );
    // Attempt 2 when due: the 429 asks for 1 s, and gets exactly that.
    due_exactly_at(&app, retry).await;
    let retry_after = next_attempt(&app, "workflow_run").await;
    assert_eq!(retry_after, retry + chrono::Duration::seconds(1));
    // Attempt 3 then: the primary rate limit is exhausted until its reset instant.
    due_exactly_at(&app, retry_after).await;
    let at_reset = next_attempt(&app, "workflow_run").await;
    assert_eq!(at_reset.timestamp(), reset_at);
    assert_eq!(at_reset.timestamp_subsec_millis(), 0);
    // Attempt 4 at the reset publishes.
    due_exactly_at(&app, at_reset).await;

    assert_eq!(repo.calls("PATCH", op::CHECK_RUN), 4);
    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "PASS_WITH_CAVEAT", "success");
    assert_eq!(check.updates, 1, "the failed updates changed nothing");
    let comment = the_comment(&repo, 3);
    assert_eq!(comment.edits, 0);
    let job = app
        .store
        .jobs()
        .await
        .unwrap()
        .into_iter()
        .find(|j| j.event == "workflow_run")
        .unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Done, 3));
    assert!(job.last_error.unwrap().contains("403"));
    finish(app).await;
}

// ---- g. killed mid-job and restarted ----------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_job_and_restarted_completes_once_without_a_second_comment() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    app.deliver(
        "pull_request",
        &pull_request_event("opened", 3, &c.base_sha, &c.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
    )
    .await;

    // The worst moment: GitHub created the comment, the answer never came back, and the process
    // died before recording it anywhere.
    let stalled = repo.stall_next("POST", op::ISSUE_COMMENTS);
    tokio::select! {
        r = app.worker.run_until_idle() => panic!("the job finished despite the stall: {r:?}"),
        _ = stalled.notified() => {}
    }
    assert_eq!(repo.comments(3).len(), 1);
    let job = app
        .store
        .jobs()
        .await
        .unwrap()
        .into_iter()
        .find(|j| j.event == "workflow_run")
        .unwrap();
    assert_eq!(job.state, JobState::Running);

    // A new process over the same SQLite file: one instance runs on it at a time, so the
    // starting one owns every lease and takes the dead one's job over at once, the clock unmoved.
    let (store, restarted) = app.new_worker("restarted").await;
    assert_eq!(restarted.start().await.unwrap(), 1);
    assert_eq!(restarted.run_until_idle().await.unwrap(), 1);

    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "PASS_WITH_CAVEAT", "success");
    let comment = the_comment(&repo, 3);
    assert_eq!(
        comment.edits, 0,
        "the comment found by its marker says the same: left alone"
    );
    let job = store.job(job.id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Done, 1));
    assert_eq!(restarted.run_until_idle().await.unwrap(), 0);
    // And later evidence edits that same comment, never adds one.
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
    )
    .await;
    assert_eq!(restarted.run_until_idle().await.unwrap(), 1);
    assert_eq!(the_comment(&repo, 3).edits, 0);
    assert_eq!(repo.check_runs().len(), 1);
    finish(app).await;
}

// ---- h. re-requests and the re-run button -------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerequests_judge_the_latest_run_again_and_the_button_reruns_it() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 2);
    // Run 1's artifact expired; run 2 (a re-run) brought fresh evidence.
    repo.add_workflow_run(1, ARTIFACT, ArtifactState::Expired);
    open_then_evidence(&app, 3, &c, 1).await;
    assert_inconclusive_saying(&the_check(&repo, &c.head_sha), &["expired"]);
    app.deliver(
        "workflow_run",
        &workflow_run_completed(2, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "PASS_WITH_CAVEAT", "success");
    let downloads = repo.calls("GET", op::ARTIFACT_ZIP);

    // check_suite rerequested: run 2, the latest, is judged again (not run 1's expired artifact).
    app.deliver("check_suite", &check_suite_rerequested(&c.head_sha)).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let again = the_check(&repo, &c.head_sha);
    assert_verdict(&again, "PASS_WITH_CAVEAT", "success");
    assert_eq!(again.updates, check.updates + 1);
    assert_eq!(again.text, check.text, "the same evidence gives the same record");
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), downloads + 1);

    // Weeks later the freezes have expired: check_run rerequested judges the same evidence today.
    app.advance(Duration::from_secs(30 * 24 * 3600));
    app.deliver("check_run", &check_run_event("rerequested", &c.head_sha, None))
        .await;
    // (the evidence deadline also came due: the check is completed, so it does nothing)
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 2);
    let later = the_check(&repo, &c.head_sha);
    assert_verdict(&later, "INCONCLUSIVE", "failure");
    assert_eq!(record(&later)["reasons"][0]["code"], "expired");
    let comment = the_comment(&repo, 3);
    assert!(comment.body.contains("Expired freezes"), "{}", comment.body);
    assert_eq!(comment.edits, 1);

    // The "Re-run evidence" button re-runs the latest run's workflow.
    app.deliver(
        "check_run",
        &check_run_event("requested_action", &c.head_sha, Some("rerun")),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(repo.rerun_requests(), [2]);
    // "Re-evaluate" judges again without re-running.
    app.deliver(
        "check_run",
        &check_run_event("requested_action", &c.head_sha, Some("reevaluate")),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(the_check(&repo, &c.head_sha).updates, later.updates + 1);
    assert_eq!(repo.rerun_requests(), [2]);
    assert!(app
        .store
        .jobs()
        .await
        .unwrap()
        .iter()
        .all(|j| j.state == JobState::Done));
    finish(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerequest_with_no_known_run_completes_inconclusive_saying_so() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    app.deliver("check_suite", &check_suite_rerequested(&c.head_sha)).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_inconclusive_saying(
        &the_check(&repo, &c.head_sha),
        &["no completed run of the evidence workflow", "re-run"],
    );
    // Nothing to re-run either.
    app.deliver(
        "check_run",
        &check_run_event("requested_action", &c.head_sha, Some("rerun")),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert!(repo.rerun_requests().is_empty());
    finish(app).await;
}

// ---- i. many annotations, an oversized summary ----------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_annotations_land_in_batches_and_an_oversized_summary_is_cut() {
    let (app, repo) = start().await;
    let c = case("all_stable");
    stage_case(&repo, 3, &c, 1);
    let n = 800;
    repo.add_pull(3, &c.base_sha, &c.head_sha, &format!("{}{}", c.diff, blind_files(n)));
    open_then_evidence(&app, 3, &c, 1).await;

    let check = the_check(&repo, &c.head_sha);
    assert_eq!(check.status, "completed");
    // Every blind file annotated, 50 at most per request, in order of importance.
    assert_eq!(check.annotations.len(), n, "all annotations land");
    assert!(
        check.annotation_batches.iter().all(|&b| b <= 50),
        "{:?}",
        check.annotation_batches
    );
    assert_eq!(check.annotation_batches.iter().sum::<usize>(), n);
    for i in [0, n / 2, n - 1] {
        let path = format!("src/gen/mod_{i:04}.py");
        assert!(check.annotations.iter().any(|a| a["path"] == path.as_str()), "{path}");
    }
    // The first request (the queued create) had none; the completion and appends carried them.
    assert_eq!(check.updates, n.div_ceil(50));
    // The summary is cut below GitHub's limit with a note; the text keeps a valid compact record.
    let s = summary(&check);
    assert!(s.chars().count() <= 65_535, "{}", s.len());
    assert!(s.contains("cut here"), "{}", &s[s.len() - 300..]);
    let r = record(&check);
    assert_eq!(r["truncated"], true);
    assert_eq!(r["verdict"], record(&check)["verdict"]);
    assert!(check.text.as_deref().unwrap().chars().count() <= 65_535);
    finish(app).await;
}

// ---- j. two pull requests, one head ------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pull_requests_sharing_a_head_get_one_check_run_and_a_comment_each() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    stage_case(&repo, 3, &c, 1);
    repo.add_pull(4, &c.base_sha, &c.head_sha, &c.diff);
    // The check run already exists on GitHub (the App's database was lost since): found again
    // by name + external id, not duplicated.
    let existing = repo.add_check_run(&c.head_sha, "flakegate", Some(&c.head_sha), "queued");
    // A check run of another app on the same commit is left alone.
    let other = repo.add_check_run(&c.head_sha, "lint", Some(&c.head_sha), "completed");
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha), (4, &c.base_sha)]),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);

    let ours: Vec<CheckRunState> = repo
        .check_runs_for(&c.head_sha)
        .into_iter()
        .filter(|r| r.name == "flakegate")
        .collect();
    assert_eq!(ours.len(), 1, "{ours:#?}");
    assert_eq!(ours[0].id, existing);
    assert_verdict(&ours[0], "INCONCLUSIVE", "failure");
    assert_eq!(repo.calls("POST", op::CHECK_RUNS), 0);
    let lint = repo.check_runs().into_iter().find(|r| r.id == other).unwrap();
    assert_eq!(lint.updates, 0);
    for pr in [3, 4] {
        let body = the_comment(&repo, pr).body;
        assert!(body.contains("@shop/payments"), "#{pr}: {body}");
    }

    // A fork's run (no pull requests in the payload) finds both through the commit.
    app.deliver("workflow_run", &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[]))
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(repo.calls("GET", op::COMMIT_PULLS), 1);
    let ours = repo
        .check_runs()
        .into_iter()
        .filter(|r| r.name == "flakegate")
        .collect::<Vec<_>>();
    assert_eq!((ours.len(), ours[0].id), (1, existing));
    // Published once per run for both pull requests, the one blind line annotated once:
    // GitHub appends annotations on every update.
    assert_eq!(ours[0].updates, 2);
    assert_eq!(ours[0].annotations.len(), 1, "{:#?}", ours[0].annotations);
    for pr in [3, 4] {
        assert_eq!(the_comment(&repo, pr).edits, 0, "#{pr}: nothing new to say");
    }
    finish(app).await;
}

/// Thirty pull requests on one head (and one of them into another base): the run's artifact is
/// listed and downloaded once, and each pull request is judged against its own base. The job's
/// time is printed for docs/performance.md ("One head, many pull requests").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_pull_requests_on_one_head_read_its_artifact_once() {
    let (app, repo) = start().await;
    let c = case("frozen_only");
    stage_case(&repo, 1, &c, 1);
    for n in 2..=29 {
        repo.add_pull(n, &c.base_sha, &c.head_sha, &c.diff);
    }
    // A base whose ledger freezes nothing: there the frozen witness is an ordinary one.
    let other_base = "b".repeat(40);
    repo.put_file(&other_base, LEDGER_PATH, br#"{"frozen": []}"#);
    repo.add_pull(30, &other_base, &c.head_sha, &c.diff);
    let mut pulls: Vec<(u64, &str)> = (1..=29).map(|n| (n, c.base_sha.as_str())).collect();
    pulls.push((30, &other_base));
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &pulls),
    )
    .await;
    let started = std::time::Instant::now();
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    println!("30 pull requests on one head: the job took {:?}", started.elapsed());

    assert_eq!(
        repo.calls("GET", op::RUN_ARTIFACTS),
        1,
        "the run's artifacts listed once"
    );
    assert_eq!(repo.calls("GET", op::ARTIFACT_ZIP), 1, "the artifact downloaded once");
    let ours: Vec<CheckRunState> = repo
        .check_runs_for(&c.head_sha)
        .into_iter()
        .filter(|r| r.name == "flakegate")
        .collect();
    assert_eq!(ours.len(), 1, "{ours:#?}");
    assert_verdict(&ours[0], "INCONCLUSIVE", "failure");
    for pr in 1..=29 {
        let body = the_comment(&repo, pr).body;
        assert!(body.contains("@shop/payments"), "#{pr}: {body}");
    }
    // Judged against its own base, from the same read: its ledger freezes nothing, so the
    // unstable witness has no owner to ask.
    let other = the_comment(&repo, 30).body;
    assert!(other.contains("no ledger entry names an owner"), "{other}");
    assert!(!other.contains("@shop/payments"), "{other}");
    finish(app).await;
}

/// State is kept by repository name, and belongs to the repository id that left it: a new
/// repository under a name another had (the commits pushed again) is never taken for the old
/// one — its pull request gets a check run of its own, not "already exists".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_repository_under_an_old_name_does_not_inherit_its_state() {
    let (app, repo) = start().await;
    let c = case("all_stable");
    stage_case(&repo, 3, &c, 1);
    app.deliver(
        "pull_request",
        &pull_request_event("opened", 3, &c.base_sha, &c.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(repo.check_runs_for(&c.head_sha).len(), 1);

    // The repository is deleted and a new one made under its name, with the same commits.
    repo.forget_check_runs();
    let mut opened = pull_request_event("opened", 3, &c.base_sha, &c.head_sha);
    opened["repository"]["id"] = serde_json::json!(crate::support::app_harness::REPO_ID + 1);
    app.deliver("pull_request", &opened).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let runs = repo.check_runs_for(&c.head_sha);
    assert_eq!(
        runs.len(),
        1,
        "the new repository's pull request has its check run: {runs:#?}"
    );
    assert_eq!(runs[0].status, "queued");
    finish(app).await;
}

// ---- k. shutdown releases the job in hand --------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_releases_the_job_in_hand_for_the_next_worker() {
    use flakegate::runtime::Shutdown;
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
    )
    .await;

    let stalled = repo.stall_next("GET", op::PULL);
    let (_, running) = app.new_worker("serving").await;
    let running = Arc::new(running);
    let (trigger, shutdown) = Shutdown::channel();
    let task = {
        let running = running.clone();
        tokio::spawn(async move { running.run(shutdown).await })
    };
    stalled.notified().await;
    let job = app.store.jobs().await.unwrap().pop().unwrap();
    assert_eq!(
        (job.state, job.lease_owner.as_deref()),
        (JobState::Running, Some("serving"))
    );
    trigger.send(true).unwrap();
    task.await.unwrap().unwrap();

    let job = app.store.job(job.id).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.attempts, job.lease_owner.as_deref()),
        (JobState::Queued, 0, None),
        "released untouched, claimable at once"
    );
    assert!(repo.check_runs().is_empty(), "nothing was published");
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS_WITH_CAVEAT", "success");
    assert_eq!(repo.comments(3).len(), 1);
    finish(app).await;
}

// ---- l. users see user errors, operators internal ones ------------------------------------------

/// GitHub will not list the run's artifacts: not the repository's doing. The check run says
/// what the repository can do and names the delivery under which the worker logged the failure,
/// and shows nothing of the failure itself; re-evaluated once GitHub answers, the verdict
/// replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_internal_failure_names_its_delivery_and_not_its_chain() {
    let (app, repo) = start().await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    app.deliver(
        "pull_request",
        &pull_request_event("opened", 3, &c.base_sha, &c.head_sha),
    )
    .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    repo.fail_next("GET", op::RUN_ARTIFACTS, 1, 404, &[]);
    let delivery = app
        .deliver(
            "workflow_run",
            &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
        )
        .await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);

    let check = the_check(&repo, &c.head_sha);
    assert_inconclusive_saying(&check, &[delivery.as_str(), "internal error", "**Re-evaluate**"]);
    let shown = format!(
        "{}\n{}\n{}",
        title(&check),
        summary(&check),
        check.text.as_deref().unwrap_or("")
    );
    for inside in ["404", "injected", "not found on GitHub", "list workflow run artifacts"] {
        assert!(!shown.contains(inside), "{inside:?} shown:\n{shown}");
    }
    assert!(repo.comments(3).is_empty());
    let job = app
        .store
        .jobs()
        .await
        .unwrap()
        .into_iter()
        .find(|j| j.delivery_id == delivery)
        .unwrap();
    assert_eq!(job.state, JobState::Done, "given up at once: retrying would not help");

    app.deliver("check_suite", &check_suite_rerequested(&c.head_sha)).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS_WITH_CAVEAT", "success");
    finish(app).await;
}
