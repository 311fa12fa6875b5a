//! The App end to end, offline: signed webhooks from `../shared/github/webhooks/` posted to the
//! real router on 127.0.0.1, the real SQLite store in a temp dir, the real worker and GitHub
//! client against the fake GitHub (`tests/support/fake_github.rs`), which checks every request
//! body against GitHub's OpenAPI subset. The clock is injected: no wall clock, no sleeps.

mod support;

use chrono::{DateTime, TimeZone as _, Utc};
use flakegate::github::{AppCredentials, AppId, GithubApp};
use flakegate::server::signature::sign;
use flakegate::server::{router, AppState, Clock};
use flakegate::store::{JobState, RetryPolicy, Store};
use flakegate::worker::{Worker, WorkerConfig, EVIDENCE_TIMEOUT_EVENT};
use secrecy::SecretString;
use serde_json::{json, Value};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::fake_github::FakeGithub;
use wiremock::ResponseTemplate;

const SECRET: &str = "app-test-webhook-secret";
const OWNER: &str = "octo-org";
const NAME: &str = "octo-repo";
const INSTALLATION: u64 = 31337;
const PR: u64 = 2;
/// The fixture evidence's own shas (`tests/fixtures/cases/some_frozen/evidence/meta.json`).
const BASE: &str = "834ebdf971761d8266e0f2ed4dfc7b66f9b86ad2";
const HEAD: &str = "c7f1dd71655a0012f330230da9e0d5477f68290d";
const RUN_ID: u64 = 289782451;
const ARTIFACT_ID: u64 = 7001;
const CHECK_RUN_ID: u64 = 5550001;
const COMMENT_ID: u64 = 9010001;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn repo_path(rest: &str) -> String {
    format!("/repos/{OWNER}/{NAME}{rest}")
}

fn sample(name: &str) -> Value {
    let p = manifest()
        .join("../shared/github/webhooks")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

fn patch_repo(p: &mut Value) {
    p["repository"]["full_name"] = json!(format!("{OWNER}/{NAME}"));
    p["repository"]["name"] = json!(NAME);
    p["repository"]["owner"]["login"] = json!(OWNER);
    p["installation"] = json!({ "id": INSTALLATION, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" });
}

fn pull_request_opened() -> Value {
    let mut p = sample("pull_request.opened");
    patch_repo(&mut p);
    p["number"] = json!(PR);
    p["pull_request"]["number"] = json!(PR);
    p["pull_request"]["head"]["sha"] = json!(HEAD);
    p["pull_request"]["base"]["sha"] = json!(BASE);
    p
}

fn pull_request_synchronize(head: &str) -> Value {
    let mut p = pull_request_opened();
    p["action"] = json!("synchronize");
    p["pull_request"]["head"]["sha"] = json!(head);
    p
}

fn check_run_event(action: &str) -> Value {
    let mut p = sample(&format!("check_run.{action}"));
    patch_repo(&mut p);
    p["check_run"]["name"] = json!("flakegate");
    p["check_run"]["head_sha"] = json!(HEAD);
    p["check_run"]["external_id"] = json!(HEAD);
    p["check_run"]["pull_requests"] = json!([]);
    if action == "requested_action" {
        p["requested_action"] = json!({ "identifier": "rerun" });
    }
    p
}

fn workflow_run_completed() -> Value {
    let mut p = sample("workflow_run.completed.with-pull-requests");
    patch_repo(&mut p);
    let run = &mut p["workflow_run"];
    run["id"] = json!(RUN_ID);
    run["head_sha"] = json!(HEAD);
    run["pull_requests"][0]["number"] = json!(PR);
    run["pull_requests"][0]["head"]["sha"] = json!(HEAD);
    run["pull_requests"][0]["base"]["sha"] = json!(BASE);
    p
}

/// Standard base64 (the contents API's encoding).
fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n =
            (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A zip of `dir`'s files, as `actions/upload-artifact` makes it (paths relative to `dir`).
fn zip_dir(dir: &Path) -> Vec<u8> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.push((rel, p));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, path) in files {
        zip.start_file(name, opts).unwrap();
        zip.write_all(&std::fs::read(path).unwrap()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn check_run_json(id: u64, status: &str, conclusion: Option<&str>) -> Value {
    json!({
        "id": id,
        "name": "flakegate",
        "head_sha": HEAD,
        "external_id": HEAD,
        "status": status,
        "conclusion": conclusion,
    })
}

fn body_of(req: &wiremock::Request) -> Value {
    serde_json::from_slice(&req.body).unwrap()
}

struct App {
    fake: FakeGithub,
    store: Arc<Store>,
    worker: Worker,
    base: String,
    http: reqwest::Client,
    now_ms: Arc<AtomicI64>,
    deliveries: AtomicU64,
    _dir: tempfile::TempDir,
}

impl App {
    async fn start(policy: RetryPolicy) -> App {
        let fake = FakeGithub::start().await;
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("flakegate.db").display());
        let store = Arc::new(Store::open(&url, policy).await.unwrap());
        // The fixture evidence was made for 2026-11-20.
        let start: DateTime<Utc> = Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap();
        let now_ms = Arc::new(AtomicI64::new(start.timestamp_millis()));
        let clock: Clock = {
            let now_ms = now_ms.clone();
            Arc::new(move || Utc.timestamp_millis_opt(now_ms.load(Ordering::SeqCst)).unwrap())
        };
        let mut state = AppState::new(store.clone(), vec![SecretString::from(SECRET)]);
        state.clock = clock.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router(state)).await.unwrap() });
        let creds = AppCredentials::from_pem(AppId(fake.app_id), fake.private_key_pem().as_bytes()).unwrap();
        let github = GithubApp::new(&fake.uri(), creds).unwrap();
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        let config = WorkerConfig {
            worker_id: "test-worker".into(),
            scratch_dir: scratch,
            ..WorkerConfig::default()
        };
        let worker = Worker::new(store.clone(), github, config, clock);
        App {
            fake,
            store,
            worker,
            base,
            http: reqwest::Client::new(),
            now_ms,
            deliveries: AtomicU64::new(0),
            _dir: dir,
        }
    }

    fn advance(&self, d: Duration) {
        self.now_ms.fetch_add(d.as_millis() as i64, Ordering::SeqCst);
    }

    /// Sign and POST `payload` as `event` with a fresh delivery id; expects 202.
    async fn deliver(&self, event: &str, payload: &Value) {
        let n = self.deliveries.fetch_add(1, Ordering::SeqCst);
        let body = serde_json::to_vec(payload).unwrap();
        let resp = self
            .http
            .post(format!("{}/webhook", self.base))
            .header("content-type", "application/json")
            .header("x-github-event", event)
            .header("x-github-delivery", format!("00000000-0000-4000-8000-{n:012}"))
            .header("x-hub-signature-256", sign(SECRET.as_bytes(), &body))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 202, "{event}: {}", resp.text().await.unwrap());
    }

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
        let zip = zip_dir(&manifest().join("tests/fixtures/cases/some_frozen/evidence"));
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
            "content": base64(&ledger),
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
                        at.as_deref() == Some(BASE) || at.as_deref() == Some(HEAD),
                        "the ledger is read at the base or the head sha, got {at:?}"
                    );
                    ResponseTemplate::new(200).set_body_json(content.clone())
                },
            )
            .await;
        // No CODEOWNERS at the base, in any of GitHub's three places.
        for path in flakegate::gate::codeowners::CODEOWNERS_PATHS {
            self.fake
                .mock("GET", &repo_path(&format!("/contents/{path}")), times, |req| {
                    assert!(
                        req.url.query_pairs().any(|(k, v)| k == "ref" && v == BASE),
                        "CODEOWNERS must be read at the base sha: {}",
                        req.url
                    );
                    ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" }))
                })
                .await;
        }
    }

    async fn mount_diff(&self, times: u64) {
        let diff = std::fs::read_to_string(manifest().join("tests/fixtures/cases/some_frozen/diff.patch")).unwrap();
        self.fake
            .mock("GET", &repo_path(&format!("/pulls/{PR}")), times, move |req| {
                let accept = req.headers.get("accept").and_then(|v| v.to_str().ok()).unwrap_or("");
                assert!(accept.contains("diff"), "diff requested with Accept: {accept}");
                ResponseTemplate::new(200).set_body_raw(diff.clone(), "text/x-diff")
            })
            .await;
    }

    /// No `.github/flakegate.yml` at the base: defaults.
    async fn mount_no_config(&self, times: u64) {
        self.fake
            .mock("GET", &repo_path("/contents/.github/flakegate.yml"), times, |req| {
                assert!(
                    req.url.query_pairs().any(|(k, v)| k == "ref" && v == BASE),
                    "the config must be read at the base sha: {}",
                    req.url
                );
                ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" }))
            })
            .await;
    }

    async fn mount_no_check_run_yet(&self, times: u64) {
        self.fake
            .mock("GET", &repo_path(&format!("/commits/{HEAD}/check-runs")), times, |_| {
                ResponseTemplate::new(200).set_body_json(json!({ "total_count": 0, "check_runs": [] }))
            })
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
    assert_eq!(body["head_sha"], HEAD);
    assert_eq!(body["external_id"], HEAD);
    assert_eq!(body["name"], "flakegate");
    let title = body["output"]["title"].as_str().unwrap();
    assert!(title.starts_with("waiting for evidence"), "{title}");
    assert!(title.contains("flakegate-evidence"), "{title}");
    assert_eq!(app.fake.token_requests(), 1);

    // workflow_run completed → evaluated, check run completed, one comment.
    app.mount_evidence(2).await;
    app.mount_diff(2).await;
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
    assert!(comment.contains(flakegate::publish::COMMENT_MARKER));
    assert!(comment.contains("@shop/payments"), "{comment}");
    assert!(!comment.contains("@qa-oncall"), "{comment}");

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
    let jobs = app.store.jobs().await.unwrap();
    for j in &jobs {
        // The evidence deadline stays queued for later; every delivery is done.
        let want = if j.event == EVIDENCE_TIMEOUT_EVENT {
            JobState::Queued
        } else {
            JobState::Done
        };
        assert_eq!(j.state, want, "{j:?}");
    }
    app.fake.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_failing_until_attempts_run_out_completes_inconclusive() {
    let policy = RetryPolicy {
        max_attempts: 3,
        base: Duration::from_secs(30),
        cap: Duration::from_secs(3600),
    };
    let app = App::start(policy).await;
    let check_runs = repo_path("/check-runs");

    app.mount_no_config(3).await;
    let artifacts = json!({
        "total_count": 1,
        "artifacts": [{ "id": ARTIFACT_ID, "name": "flakegate-evidence", "size_in_bytes": 1234, "expired": false }],
    });
    app.fake
        .mock(
            "GET",
            &repo_path(&format!("/actions/runs/{RUN_ID}/artifacts")),
            3,
            move |_| ResponseTemplate::new(200).set_body_json(artifacts.clone()),
        )
        .await;
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

    app.deliver("workflow_run", &workflow_run_completed()).await;
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
    let summary = body["output"]["summary"].as_str().unwrap();
    assert!(summary.contains("500"), "{summary}");
    assert!(summary.contains("3 attempts"), "{summary}");
    let jobs = app.store.jobs().await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state, JobState::Dead);
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
        "head": { "sha": HEAD, "ref": "fork-branch", "repo": { "full_name": "forker/octo-repo" } },
        "base": { "sha": BASE, "ref": "main", "repo": { "full_name": format!("{OWNER}/{NAME}") } },
    }]);
    app.fake
        .mock("GET", &repo_path(&format!("/commits/{HEAD}/pulls")), 2, move |_| {
            ResponseTemplate::new(200).set_body_json(pulls.clone())
        })
        .await;
    app.mount_no_config(2).await;
    app.mount_evidence(2).await;
    app.mount_diff(2).await;
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

    app.deliver("pull_request", &pull_request_opened()).await;
    app.deliver("pull_request", &pull_request_synchronize(NEW)).await;
    // The opened job (old head) was superseded in the queue; only the new head's job runs.
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let body = body_of(&app.fake.requests("POST", &check_runs).await[0]);
    assert_eq!(body["head_sha"], NEW);

    // The old head's evidence arrives late: skipped without a single GitHub call.
    app.deliver("workflow_run", &workflow_run_completed()).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let jobs = app.store.jobs().await.unwrap();
    let states: Vec<(String, JobState)> = jobs.iter().map(|j| (j.event.clone(), j.state)).collect();
    assert!(
        states.contains(&("pull_request".into(), JobState::Superseded)),
        "{states:?}"
    );
    assert!(states.contains(&("workflow_run".into(), JobState::Done)), "{states:?}");
    app.fake.verify().await;
}

/// No evidence within the configured time: the queued check completes INCONCLUSIVE, saying what it waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_evidence_in_time_completes_inconclusive() {
    let app = App::start(RetryPolicy::default()).await;
    let check_runs = repo_path("/check-runs");
    let check_run = repo_path(&format!("/check-runs/{CHECK_RUN_ID}"));
    app.mount_no_config(1).await;
    let listed = Arc::new(AtomicUsize::new(0));
    app.fake
        .mock(
            "GET",
            &repo_path(&format!("/commits/{HEAD}/check-runs")),
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
