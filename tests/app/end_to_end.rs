//! The App end to end, offline: signed webhooks from `tests/fixtures/github/webhooks/` posted to the
//! real router on 127.0.0.1, the real SQLite store in a temp dir, the real worker and GitHub
//! client against the fake GitHub (`support::fake_github`), which checks every request
//! body against GitHub's OpenAPI subset. The clock is injected: no wall clock, no sleeps.

use crate::support::app_harness::{case, manifest, patch_repo, repo_path, sample, App, NAME, OWNER, REPO_ID};
use crate::support::fake_repo::FakeRepo;
use flakegate::store::{JobState, RetryPolicy};
use flakegate::worker::EVIDENCE_TIMEOUT_EVENT;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wiremock::ResponseTemplate;

const PR: u64 = 2;
const RUN_ID: u64 = 289782451;
const ARTIFACT_ID: u64 = 7001;
const CHECK_RUN_ID: u64 = 5550001;
const COMMENT_ID: u64 = 9010001;

/// The fixture evidence's own shas (`tests/fixtures/cases/some_frozen/evidence/meta.json`),
/// read at test time: the fixtures may be regenerated.
fn shas() -> &'static (String, String) {
    static SHAS: OnceLock<(String, String)> = OnceLock::new();
    SHAS.get_or_init(|| {
        let c = case("some_frozen");
        (c.base_sha, c.head_sha)
    })
}

fn base() -> &'static str {
    &shas().0
}

fn head() -> &'static str {
    &shas().1
}

fn pull_request_opened() -> Value {
    let mut p = sample("pull_request.opened");
    patch_repo(&mut p);
    p["number"] = json!(PR);
    p["pull_request"]["number"] = json!(PR);
    p["pull_request"]["head"]["sha"] = json!(head());
    p["pull_request"]["base"]["sha"] = json!(base());
    p
}

fn pull_request_synchronize(head: &str) -> Value {
    let mut p = pull_request_opened();
    p["action"] = json!("synchronize");
    p["pull_request"]["head"]["sha"] = json!(head);
    p
}

fn check_run_event(action: &str) -> Value {
    crate::support::app_harness::check_run_event(action, head(), (action == "requested_action").then_some("rerun"))
}

fn workflow_run_completed() -> Value {
    let mut p = sample("workflow_run.completed.with-pull-requests");
    patch_repo(&mut p);
    let run = &mut p["workflow_run"];
    run["id"] = json!(RUN_ID);
    run["head_sha"] = json!(head());
    run["pull_requests"][0]["number"] = json!(PR);
    run["pull_requests"][0]["head"]["sha"] = json!(head());
    run["pull_requests"][0]["base"]["sha"] = json!(base());
    run["pull_requests"][0]["base"]["repo"]["id"] = json!(REPO_ID);
    p
}

/// `GET /pulls/{PR}` as JSON: open, at `head`, into this repository.
fn pull_json(head: &str) -> Value {
    let repo = json!({ "full_name": format!("{OWNER}/{NAME}") });
    json!({
        "number": PR,
        "state": "open",
        "head": { "sha": head, "ref": "feature", "repo": repo },
        "base": { "sha": base(), "ref": "main", "repo": repo },
    })
}

fn check_run_json(id: u64, status: &str, conclusion: Option<&str>) -> Value {
    json!({
        "id": id,
        "name": "flakegate",
        "head_sha": head(),
        "external_id": head(),
        "status": status,
        "conclusion": conclusion,
        "app": { "id": crate::support::fake_github::APP_ID },
    })
}

/// Every delivery is done; the evidence deadline stays queued for later.
async fn assert_deliveries_done(app: &App) {
    for j in app.store.jobs().await.unwrap() {
        let want = if j.event == EVIDENCE_TIMEOUT_EVENT {
            JobState::Queued
        } else {
            JobState::Done
        };
        assert_eq!(j.state, want, "{j:?}");
    }
}

fn body_of(req: &wiremock::Request) -> Value {
    serde_json::from_slice(&req.body).unwrap()
}

/// The per-test mocks of these tests (counted `times`, unlike the stateful `FakeRepo`).
trait Mocks {
    async fn mount_evidence(&self, times: u64);
    async fn mount_pull(&self, json_times: u64, diff_times: u64);
    async fn mount_no_config(&self, times: u64);
    async fn mount_no_check_run_yet(&self, times: u64);
}

impl Mocks for App {
    /// Mount the evidence of `tests/fixtures/cases/some_frozen` and the project ledger.
    async fn mount_evidence(&self, times: u64) {
        let artifacts = json!({
            "total_count": 1,
            "artifacts": [{
                "id": ARTIFACT_ID,
                "name": "flakegate-evidence",
                "size_in_bytes": 1234,
                "expired": false,
            }],
        });
        self.fake
            .mock(
                "GET",
                &repo_path(&format!("/actions/runs/{RUN_ID}/artifacts")),
                times,
                move |_| ResponseTemplate::new(200).set_body_json(artifacts.clone()),
            )
            .await;
        let blob = format!("{}/blob/evidence-{ARTIFACT_ID}.zip", self.fake.uri());
        self.fake
            .mock(
                "GET",
                &repo_path(&format!("/actions/artifacts/{ARTIFACT_ID}/zip")),
                times,
                move |_| ResponseTemplate::new(302).insert_header("location", blob.as_str()),
            )
            .await;
        let zip = FakeRepo::zip_dir(&manifest().join("tests/fixtures/cases/some_frozen/evidence"));
        self.fake
            .mock_raw("GET", &format!("/blob/evidence-{ARTIFACT_ID}.zip"), times, move |_| {
                ResponseTemplate::new(200).set_body_raw(zip.clone(), "application/zip")
            })
            .await;
        let ledger = std::fs::read(manifest().join("tests/fixtures/project/.github/flake-ledger.json")).unwrap();
        let content = json!({
            "type": "file",
            "encoding": "base64",
            "name": "flake-ledger.json",
            "path": ".github/flake-ledger.json",
            "content": crate::support::fake_repo::base64(&ledger),
        });
        // Read twice per evaluation: at the base (the ledger in force) and at the
        // head (only to report the patch's own edits; here it has none).
        self.fake
            .mock(
                "GET",
                &repo_path("/contents/.github/flake-ledger.json"),
                times * 2,
                move |req| {
                    let at = req
                        .url
                        .query_pairs()
                        .find(|(k, _)| k == "ref")
                        .map(|(_, v)| v.into_owned());
                    assert!(
                        at.as_deref() == Some(base()) || at.as_deref() == Some(head()),
                        "the ledger is read at the base or the head sha, got {at:?}"
                    );
                    ResponseTemplate::new(200).set_body_json(content.clone())
                },
            )
            .await;
        // The changed source as the head has it, asked for before the coverage is read (its
        // scopes say which lines' witnesses to keep); absent here, so the lines stand alone.
        self.fake
            .mock("GET", &repo_path("/contents/src/shop/refunds.py"), times, |req| {
                assert!(
                    req.url.query_pairs().any(|(k, v)| k == "ref" && v == head()),
                    "a changed source is read at the head sha: {}",
                    req.url
                );
                ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" }))
            })
            .await;
        // No CODEOWNERS at the base, in any of GitHub's three places.
        for path in flakegate::gate::codeowners::CODEOWNERS_PATHS {
            self.fake
                .mock("GET", &repo_path(&format!("/contents/{path}")), times, |req| {
                    assert!(
                        req.url.query_pairs().any(|(k, v)| k == "ref" && v == base()),
                        "CODEOWNERS must be read at the base sha: {}",
                        req.url
                    );
                    ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" }))
                })
                .await;
        }
    }

    /// The pull request: `json_times` as JSON (the worker asks for its current head and
    /// base), `diff_times` as the diff of `some_frozen`.
    async fn mount_pull(&self, json_times: u64, diff_times: u64) {
        let diff = std::fs::read_to_string(manifest().join("tests/fixtures/cases/some_frozen/diff.patch")).unwrap();
        let (json_seen, diff_seen) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        self.fake
            .mock(
                "GET",
                &repo_path(&format!("/pulls/{PR}")),
                json_times + diff_times,
                move |req| {
                    let accept = req.headers.get("accept").and_then(|v| v.to_str().ok()).unwrap_or("");
                    if accept.contains("diff") {
                        let n = diff_seen.fetch_add(1, Ordering::SeqCst);
                        assert!(
                            n < diff_times as usize,
                            "the diff asked for more than {diff_times} times"
                        );
                        ResponseTemplate::new(200).set_body_raw(diff.clone(), "text/x-diff")
                    } else {
                        let n = json_seen.fetch_add(1, Ordering::SeqCst);
                        assert!(
                            n < json_times as usize,
                            "the pull request asked for more than {json_times} times"
                        );
                        ResponseTemplate::new(200).set_body_json(pull_json(head()))
                    }
                },
            )
            .await;
    }

    /// No `.github/flakegate.yml` at the base: defaults.
    async fn mount_no_config(&self, times: u64) {
        self.fake
            .mock("GET", &repo_path("/contents/.github/flakegate.yml"), times, |req| {
                assert!(
                    req.url.query_pairs().any(|(k, v)| k == "ref" && v == base()),
                    "the config must be read at the base sha: {}",
                    req.url
                );
                ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" }))
            })
            .await;
    }

    async fn mount_no_check_run_yet(&self, times: u64) {
        self.fake
            .mock(
                "GET",
                &repo_path(&format!("/commits/{}/check-runs", head())),
                times,
                |_| ResponseTemplate::new(200).set_body_json(json!({ "total_count": 0, "check_runs": [] })),
            )
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_request_then_evidence_publishes_a_check_run_and_one_comment() {
    let app = App::start(RetryPolicy::default()).await;
    let check_runs = repo_path("/check-runs");
    let check_run = repo_path(&format!("/check-runs/{CHECK_RUN_ID}"));
    let comments = repo_path(&format!("/issues/{PR}/comments"));

    // pull_request opened → the check run, queued.
    app.mount_no_config(3).await;
    app.mount_pull(3, 2).await;
    app.mount_no_check_run_yet(1).await;
    app.fake
        .mock("POST", &check_runs, 1, |_| {
            ResponseTemplate::new(201).set_body_json(check_run_json(CHECK_RUN_ID, "queued", None))
        })
        .await;
    app.deliver("pull_request", &pull_request_opened()).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let created = app.fake.requests("POST", &check_runs).await;
    assert_eq!(created.len(), 1);
    let body = body_of(&created[0]);
    assert_eq!(body["status"], "queued", "{body}");
    assert_eq!(body["head_sha"], head());
    assert_eq!(body["external_id"], head());
    assert_eq!(body["name"], "flakegate");
    let title = body["output"]["title"].as_str().unwrap();
    assert!(title.starts_with("waiting for evidence"), "{title}");
    assert!(title.contains("flakegate-evidence"), "{title}");
    assert_eq!(app.fake.token_requests(), 1);

    // workflow_run completed → evaluated, check run completed, one comment.
    app.mount_evidence(2).await;
    app.fake
        .mock("PATCH", &check_run, 2, |_| {
            ResponseTemplate::new(200).set_body_json(check_run_json(CHECK_RUN_ID, "completed", Some("success")))
        })
        .await;
    app.fake
        .mock("GET", &comments, 1, |_| {
            ResponseTemplate::new(200).set_body_json(json!([]))
        })
        .await;
    app.fake
        .mock("POST", &comments, 1, |req| {
            let body = body_of(req);
            ResponseTemplate::new(201).set_body_json(json!({ "id": COMMENT_ID, "body": body["body"] }))
        })
        .await;
    app.deliver("workflow_run", &workflow_run_completed()).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);

    let updates = app.fake.requests("PATCH", &check_run).await;
    assert_eq!(updates.len(), 1);
    let body = body_of(&updates[0]);
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(body["conclusion"], "success", "{body}");
    let title = body["output"]["title"].as_str().unwrap();
    assert!(title.starts_with("PASS_WITH_CAVEAT"), "{title}");
    assert!(body["output"]["text"].as_str().unwrap().contains("\"verdict\""));
    assert!(body["actions"].as_array().is_some_and(|a| !a.is_empty()), "{body}");
    let posted = app.fake.requests("POST", &comments).await;
    assert_eq!(posted.len(), 1);
    let comment = body_of(&posted[0])["body"].as_str().unwrap().to_owned();
    assert!(comment.contains(flakegate::present::comment::COMMENT_MARKER));
    // A caveat: the owners are named, mentioned only where they must act before merge.
    assert!(comment.contains("**shop/payments**"), "{comment}");
    assert!(
        !comment.contains("@shop/payments") && !comment.contains("@qa-oncall"),
        "{comment}"
    );

    // The same evidence again (a new delivery): the check run is updated, not created, and the
    // comment, which would say the same, is not edited.
    app.deliver("workflow_run", &workflow_run_completed()).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(app.fake.requests("POST", &check_runs).await.len(), 1);
    let updates = app.fake.requests("PATCH", &check_run).await;
    assert_eq!(updates.len(), 2);
    assert_eq!(body_of(&updates[1])["conclusion"], "success");
    assert_eq!(app.fake.requests("POST", &comments).await.len(), 1);
    assert!(app
        .fake
        .requests("PATCH", &repo_path(&format!("/issues/comments/{COMMENT_ID}")))
        .await
        .is_empty());

    assert_eq!(app.fake.token_requests(), 1, "the installation token is cached");
    assert_deliveries_done(&app).await;
    app.fake.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_failing_until_attempts_run_out_completes_inconclusive() {
    let policy = RetryPolicy {
        max_attempts: 3,
        base: Duration::from_secs(30),
        cap: Duration::from_secs(3600),
        jitter_percent: 50,
    };
    let app = App::start(policy).await;
    let check_runs = repo_path("/check-runs");

    // Asking for the pull request (its current head and base) is the first call, and it fails.
    app.fake
        .mock("GET", &repo_path(&format!("/pulls/{PR}")), 3, |_| {
            ResponseTemplate::new(500).set_body_json(json!({ "message": "Server Error" }))
        })
        .await;
    app.mount_no_check_run_yet(1).await;
    app.fake
        .mock("POST", &check_runs, 1, |_| {
            ResponseTemplate::new(201).set_body_json(check_run_json(CHECK_RUN_ID, "completed", Some("failure")))
        })
        .await;

    let delivery = app.deliver("workflow_run", &workflow_run_completed()).await;
    for attempt in 1..=3 {
        assert_eq!(app.worker.run_until_idle().await.unwrap(), 1, "attempt {attempt}");
        // Nothing is due until the backoff has passed.
        assert_eq!(app.worker.run_until_idle().await.unwrap(), 0, "attempt {attempt}");
        app.advance(Duration::from_secs(3600));
    }
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 0);

    let created = app.fake.requests("POST", &check_runs).await;
    assert_eq!(created.len(), 1);
    let body = body_of(&created[0]);
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(body["conclusion"], "failure", "{body}");
    let title = body["output"]["title"].as_str().unwrap();
    assert!(title.starts_with("INCONCLUSIVE"), "{title}");
    // GitHub's failure, not the repository's: the check run names the delivery the worker
    // logged it under, and shows nothing of it.
    let summary = body["output"]["summary"].as_str().unwrap();
    assert!(summary.contains(&delivery), "{summary}");
    assert!(title.contains(&delivery), "{title}");
    let shown = format!("{title}\n{summary}");
    for inside in ["500", "Server Error", "get pull request", "attempts"] {
        assert!(!shown.contains(inside), "{inside:?} shown:\n{shown}");
    }
    let jobs = app.store.jobs().await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state, JobState::Dead);
    // The store keeps the failure for the operators.
    let last = jobs[0].last_error.as_deref().unwrap_or("");
    assert!(last.contains("500") && last.contains("Server Error"), "{last}");
    app.fake.verify().await;
}

/// A fork's run (empty `pull_requests`) is matched to its pull request through the commit;
/// `check_run` rerequested judges the stored evidence again; the "rerun" button re-runs the workflow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_run_rerequest_and_rerun() {
    let app = App::start(RetryPolicy::default()).await;
    let check_runs = repo_path("/check-runs");
    let check_run = repo_path(&format!("/check-runs/{CHECK_RUN_ID}"));
    let comments = repo_path(&format!("/issues/{PR}/comments"));

    let pulls = json!([{
        "number": PR,
        "state": "open",
        "head": { "sha": head(), "ref": "fork-branch", "repo": { "full_name": "forker/octo-repo" } },
        "base": { "sha": base(), "ref": "main", "repo": { "full_name": format!("{OWNER}/{NAME}") } },
    }]);
    app.fake
        .mock("GET", &repo_path(&format!("/commits/{}/pulls", head())), 2, move |_| {
            ResponseTemplate::new(200).set_body_json(pulls.clone())
        })
        .await;
    app.mount_no_config(2).await;
    app.mount_evidence(2).await;
    app.mount_pull(0, 2).await;
    app.mount_no_check_run_yet(1).await;
    app.fake
        .mock("POST", &check_runs, 1, |_| {
            ResponseTemplate::new(201).set_body_json(check_run_json(CHECK_RUN_ID, "completed", Some("success")))
        })
        .await;
    app.fake
        .mock("PATCH", &check_run, 1, |_| {
            ResponseTemplate::new(200).set_body_json(check_run_json(CHECK_RUN_ID, "completed", Some("success")))
        })
        .await;
    app.fake
        .mock("GET", &comments, 1, |_| {
            ResponseTemplate::new(200).set_body_json(json!([]))
        })
        .await;
    app.fake
        .mock("POST", &comments, 1, |_| {
            ResponseTemplate::new(201).set_body_json(json!({ "id": COMMENT_ID, "body": "x" }))
        })
        .await;
    app.fake
        .mock("POST", &repo_path(&format!("/actions/runs/{RUN_ID}/rerun")), 1, |_| {
            ResponseTemplate::new(201).set_body_json(json!({}))
        })
        .await;

    let mut fork = workflow_run_completed();
    fork["workflow_run"]["pull_requests"] = json!([]);
    app.deliver("workflow_run", &fork).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let created = app.fake.requests("POST", &check_runs).await;
    assert_eq!(created.len(), 1);
    let body = body_of(&created[0]);
    assert_eq!(body["conclusion"], "success", "{body}");
    assert!(body["output"]["title"]
        .as_str()
        .unwrap()
        .starts_with("PASS_WITH_CAVEAT"));

    app.deliver("check_run", &check_run_event("rerequested")).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let updates = app.fake.requests("PATCH", &check_run).await;
    assert_eq!(updates.len(), 1, "re-evaluated into the same check run");
    assert!(body_of(&updates[0])["output"]["title"]
        .as_str()
        .unwrap()
        .starts_with("PASS_WITH_CAVEAT"));

    app.deliver("check_run", &check_run_event("requested_action")).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(
        app.fake
            .requests("POST", &repo_path(&format!("/actions/runs/{RUN_ID}/rerun")))
            .await
            .len(),
        1
    );
    assert!(app
        .store
        .jobs()
        .await
        .unwrap()
        .iter()
        .all(|j| j.state == JobState::Done));
    app.fake.verify().await;
}

/// Evidence for a head a newer push replaced is never published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn superseded_head_is_skipped() {
    const NEW: &str = "1111111111111111111111111111111111111111";
    let app = App::start(RetryPolicy::default()).await;
    let check_runs = repo_path("/check-runs");
    app.mount_no_config(1).await;
    app.fake
        .mock("GET", &repo_path(&format!("/commits/{NEW}/check-runs")), 1, |_| {
            ResponseTemplate::new(200).set_body_json(json!({ "total_count": 0, "check_runs": [] }))
        })
        .await;
    app.fake
        .mock("POST", &check_runs, 1, |_| {
            let mut run = check_run_json(CHECK_RUN_ID, "queued", None);
            run["head_sha"] = json!(NEW);
            run["external_id"] = json!(NEW);
            ResponseTemplate::new(201).set_body_json(run)
        })
        .await;

    // GitHub says the pull request's head is NEW, whenever asked.
    app.fake
        .mock("GET", &repo_path(&format!("/pulls/{PR}")), 3, |_| {
            ResponseTemplate::new(200).set_body_json(pull_json(NEW))
        })
        .await;

    app.deliver("pull_request", &pull_request_opened()).await;
    app.deliver("pull_request", &pull_request_synchronize(NEW)).await;
    // The opened job (old head) learns from GitHub that the head moved on and does nothing;
    // only the new head gets a check run.
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 2);
    let created = app.fake.requests("POST", &check_runs).await;
    assert_eq!(created.len(), 1);
    assert_eq!(body_of(&created[0])["head_sha"], NEW);

    // The old head's evidence arrives late: its pull request is no longer at that head, so
    // nothing is judged or published.
    app.deliver("workflow_run", &workflow_run_completed()).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_deliveries_done(&app).await;
    app.fake.verify().await;
}

/// No evidence within the configured time: the queued check completes INCONCLUSIVE, saying what it waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_evidence_in_time_completes_inconclusive() {
    let app = App::start(RetryPolicy::default()).await;
    let check_runs = repo_path("/check-runs");
    let check_run = repo_path(&format!("/check-runs/{CHECK_RUN_ID}"));
    app.mount_no_config(1).await;
    app.mount_pull(1, 0).await;
    let listed = Arc::new(AtomicUsize::new(0));
    app.fake
        .mock(
            "GET",
            &repo_path(&format!("/commits/{}/check-runs", head())),
            2,
            move |_| {
                let runs = if listed.fetch_add(1, Ordering::SeqCst) == 0 {
                    json!([])
                } else {
                    json!([check_run_json(CHECK_RUN_ID, "queued", None)])
                };
                ResponseTemplate::new(200)
                    .set_body_json(json!({ "total_count": runs.as_array().unwrap().len(), "check_runs": runs }))
            },
        )
        .await;
    app.fake
        .mock("POST", &check_runs, 1, |_| {
            ResponseTemplate::new(201).set_body_json(check_run_json(CHECK_RUN_ID, "queued", None))
        })
        .await;
    app.fake
        .mock("PATCH", &check_run, 1, |_| {
            ResponseTemplate::new(200).set_body_json(check_run_json(CHECK_RUN_ID, "completed", Some("failure")))
        })
        .await;

    app.deliver("pull_request", &pull_request_opened()).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    app.advance(Duration::from_secs(119 * 60));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 0, "not before the deadline");
    app.advance(Duration::from_secs(2 * 60));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);

    let updates = app.fake.requests("PATCH", &check_run).await;
    assert_eq!(updates.len(), 1);
    let body = body_of(&updates[0]);
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(body["conclusion"], "failure", "{body}");
    let out = &body["output"];
    assert!(out["title"].as_str().unwrap().starts_with("INCONCLUSIVE"), "{out}");
    let summary = out["summary"].as_str().unwrap();
    assert!(
        summary.contains("flakegate-evidence") && summary.contains("120 minutes"),
        "{summary}"
    );
    app.fake.verify().await;
}
