//! The App under test, end to end: the real router on 127.0.0.1 with the real SQLite store in a
//! temp dir, the real worker and GitHub client against a [`FakeGithub`], an injected clock (no
//! wall clock, no sleeps), and webhook payloads built from `tests/fixtures/github/webhooks/` patched
//! to the fake's repository and shas and signed like GitHub signs them. Fixture cases
//! (`tests/fixtures/cases/<case>`) are read at test time, shas included.

use chrono::{DateTime, TimeZone as _, Utc};
use flakegate::github::{AppCredentials, AppId, GithubApp};
use flakegate::metrics::Metrics;
use flakegate::runtime::Clock;
use flakegate::server::signature::sign;
use flakegate::server::{router, AppState};
use flakegate::store::{RetryPolicy, Store};
use flakegate::worker::{Worker, WorkerConfig};
use secrecy::SecretString;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::fake_github::FakeGithub;
use super::fake_repo::{ArtifactState, FakeRepo};

pub const SECRET: &str = "app-test-webhook-secret";
pub const OWNER: &str = "octo-org";
pub const NAME: &str = "octo-repo";
pub const INSTALLATION: u64 = 31337;
/// GitHub's id of the fake's repository (payloads name base repositories by id).
pub const REPO_ID: u64 = 300029405;
/// The evidence workflow's path, as the template installs it.
pub const WORKFLOW: &str = ".github/workflows/flakegate-evidence.yml";
pub const ARTIFACT: &str = "flakegate-evidence";
pub const LEDGER_PATH: &str = ".github/flake-ledger.json";
pub const CONFIG_PATH: &str = ".github/flakegate.yml";

pub fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixtures() -> PathBuf {
    manifest().join("tests/fixtures")
}

/// `/repos/{OWNER}/{NAME}{rest}`.
pub fn repo_path(rest: &str) -> String {
    format!("/repos/{OWNER}/{NAME}{rest}")
}

// ---- webhook payloads ------------------------------------------------------------------------

/// A sample payload from `tests/fixtures/github/webhooks/<name>.json`.
pub fn sample(name: &str) -> Value {
    let p = manifest()
        .join("tests/fixtures/github/webhooks")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

/// Point a sample at the fake's repository and installation.
pub fn patch_repo(p: &mut Value) {
    p["repository"]["full_name"] = json!(format!("{OWNER}/{NAME}"));
    p["repository"]["id"] = json!(REPO_ID);
    p["repository"]["name"] = json!(NAME);
    p["repository"]["owner"]["login"] = json!(OWNER);
    p["installation"] = json!({ "id": INSTALLATION, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" });
}

/// `pull_request` `action` (opened, synchronize, …) for pull request `number` at `base`..`head`.
pub fn pull_request_event(action: &str, number: u64, base: &str, head: &str) -> Value {
    let mut p = sample("pull_request.opened");
    patch_repo(&mut p);
    p["action"] = json!(action);
    p["number"] = json!(number);
    p["pull_request"]["number"] = json!(number);
    p["pull_request"]["head"]["sha"] = json!(head);
    p["pull_request"]["base"]["sha"] = json!(base);
    p
}

/// `push` to `git_ref` (a branch or tag ref) of the test repository, whose default branch is
/// `main`, with `after` its new head.
pub fn push_event(git_ref: &str, after: &str) -> Value {
    let mut p = sample("push");
    patch_repo(&mut p);
    p["ref"] = json!(git_ref);
    p["after"] = json!(after);
    p["deleted"] = json!(false);
    p["created"] = json!(false);
    p["repository"]["default_branch"] = json!("main");
    p
}

/// `pull_request` closed by merging `head` into `base` with commit `merge_sha`.
pub fn pull_request_merged(number: u64, base: &str, head: &str, merge_sha: &str) -> Value {
    let mut p = sample("pull_request.closed");
    patch_repo(&mut p);
    p["number"] = json!(number);
    p["pull_request"]["number"] = json!(number);
    p["pull_request"]["head"]["sha"] = json!(head);
    p["pull_request"]["base"]["sha"] = json!(base);
    p["pull_request"]["merged"] = json!(true);
    p["pull_request"]["merge_commit_sha"] = json!(merge_sha);
    p["repository"]["default_branch"] = json!("main");
    p
}

/// `workflow_run` completed: run `run_id` of `workflow_path` on `head`, listing `pulls`
/// (number, base sha) as GitHub does for same-repository pull requests; empty for a fork.
pub fn workflow_run_completed(run_id: u64, head: &str, workflow_path: &str, pulls: &[(u64, &str)]) -> Value {
    let mut p = sample("workflow_run.completed.with-pull-requests");
    patch_repo(&mut p);
    let template = p["workflow_run"]["pull_requests"][0].clone();
    let run = &mut p["workflow_run"];
    run["id"] = json!(run_id);
    run["head_sha"] = json!(head);
    run["path"] = json!(workflow_path);
    run["conclusion"] = json!("success");
    run["pull_requests"] = pulls
        .iter()
        .map(|(number, base)| {
            let mut pr = template.clone();
            pr["number"] = json!(number);
            pr["head"]["sha"] = json!(head);
            pr["base"]["sha"] = json!(base);
            pr["base"]["repo"]["id"] = json!(REPO_ID);
            pr["base"]["repo"]["url"] = json!(format!("https://api.github.com/repos/{OWNER}/{NAME}"));
            pr
        })
        .collect();
    p
}

/// `check_run` `action` (rerequested, requested_action) on our check run for `head`;
/// `identifier` is the requested action's (`rerun`, `reevaluate`).
pub fn check_run_event(action: &str, head: &str, identifier: Option<&str>) -> Value {
    let mut p = sample(&format!("check_run.{action}"));
    patch_repo(&mut p);
    p["check_run"]["name"] = json!("flakegate");
    p["check_run"]["head_sha"] = json!(head);
    p["check_run"]["external_id"] = json!(head);
    p["check_run"]["pull_requests"] = json!([]);
    p["check_run"]["app"]["id"] = json!(super::fake_github::APP_ID);
    if let Some(id) = identifier {
        p["requested_action"] = json!({ "identifier": id });
    }
    p
}

/// `check_suite` rerequested for `head`.
pub fn check_suite_rerequested(head: &str) -> Value {
    let mut p = sample("check_suite.rerequested");
    patch_repo(&mut p);
    p["check_suite"]["head_sha"] = json!(head);
    p["check_suite"]["pull_requests"] = json!([]);
    p["check_suite"]["app"]["id"] = json!(super::fake_github::APP_ID);
    p
}

// ---- fixture cases ---------------------------------------------------------------------------

/// One case of `tests/fixtures/cases/`, read at test time (the fixtures may be regenerated).
#[derive(Debug, Clone)]
pub struct Case {
    pub dir: PathBuf,
    pub base_sha: String,
    pub head_sha: String,
    pub diff: String,
    pub expected_verdict: String,
    pub expected_codes: Vec<String>,
}

pub fn case(name: &str) -> Case {
    let dir = fixtures().join("cases").join(name);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let meta: Value = serde_json::from_str(&read(&dir.join("evidence/meta.json"))).unwrap();
    let info: Value = serde_json::from_str(&read(&dir.join("case.json"))).unwrap();
    Case {
        base_sha: meta["base_sha"].as_str().unwrap().to_owned(),
        head_sha: meta["head_sha"].as_str().unwrap().to_owned(),
        diff: read(&dir.join("diff.patch")),
        expected_verdict: info["expected_verdict"].as_str().unwrap().to_owned(),
        expected_codes: info["expected_codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect(),
        dir,
    }
}

impl Case {
    /// The case's evidence zipped as the evidence workflow uploads it; `with_probe` adds the base
    /// probe (`tests/fixtures/probe/reportlog/`) as `probe/`.
    pub fn evidence_zip(&self, with_probe: bool) -> Vec<u8> {
        evidence_zip(&self.dir, with_probe)
    }

    /// The ledger this case is judged with: its own `ledger.json`, else the project's.
    pub fn ledger(&self) -> Vec<u8> {
        let own = self.dir.join("ledger.json");
        if own.is_file() {
            std::fs::read(own).unwrap()
        } else {
            base_ledger()
        }
    }
}

/// `fixture/evidence/` (a case's or a corpus entry's) zipped as the evidence workflow uploads it;
/// `with_probe` adds the base probe (`tests/fixtures/probe/reportlog/`) as `probe/`.
pub fn evidence_zip(fixture: &Path, with_probe: bool) -> Vec<u8> {
    let evidence = fixture.join("evidence");
    let probe = fixtures().join("probe/reportlog");
    if with_probe {
        FakeRepo::zip_dirs(&[(&evidence, ""), (&probe, "probe")])
    } else {
        FakeRepo::zip_dir(&evidence)
    }
}

/// `tests/fixtures/project/.github/flake-ledger.json`.
pub fn base_ledger() -> Vec<u8> {
    std::fs::read(fixtures().join("project/.github/flake-ledger.json")).unwrap()
}

/// Put `case` on `repo` as pull request `pr`: its ledger at the base, the pull request (diff), and
/// workflow run `run_id` of [`WORKFLOW`] with the evidence zipped (with the probe).
pub fn stage_case(repo: &FakeRepo, pr: u64, case: &Case, run_id: u64) {
    repo.put_file(&case.base_sha, LEDGER_PATH, &case.ledger());
    repo.add_pull(pr, &case.base_sha, &case.head_sha, &case.diff);
    repo.add_workflow_run(run_id, ARTIFACT, ArtifactState::Zip(case.evidence_zip(true)));
}

// ---- the App ---------------------------------------------------------------------------------

/// The App with the fake GitHub, a temp-dir SQLite store, the router on 127.0.0.1 and a worker.
pub struct App {
    pub fake: FakeGithub,
    pub store: Arc<Store>,
    pub worker: Worker,
    pub base: String,
    /// The store's URL, for a second process over the same file.
    pub db_url: String,
    pub policy: RetryPolicy,
    pub config: WorkerConfig,
    http: reqwest::Client,
    now_ms: Arc<AtomicI64>,
    deliveries: AtomicU64,
    pub dir: tempfile::TempDir,
}

impl App {
    pub async fn start(policy: RetryPolicy) -> App {
        Self::start_with(policy, |_| {}).await
    }

    /// Start with the worker's configuration adjusted by `tweak` (limits, lease, id).
    pub async fn start_with(policy: RetryPolicy, tweak: impl FnOnce(&mut WorkerConfig)) -> App {
        let dir = tempfile::tempdir().unwrap();
        let db_url = format!("sqlite://{}?mode=rwc", dir.path().join("flakegate.db").display());
        Self::start_on(dir, db_url, policy, tweak).await
    }

    /// [`start_with`](Self::start_with) on a PostgreSQL database of its own (named after `case`)
    /// in the test PostgreSQL (`support::postgres`): several workers can share it as several
    /// instances of the App would.
    pub async fn start_postgres(case: &str, policy: RetryPolicy, tweak: impl FnOnce(&mut WorkerConfig)) -> App {
        use sqlx::Connection as _;
        let server = super::postgres::url();
        let name = format!("app_{case}_{}", std::process::id());
        let mut conn = sqlx::PgConnection::connect(&server)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL is required for this test and is not reachable at {server}: {e}"));
        sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name}"))
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .unwrap();
        Self::start_on(
            tempfile::tempdir().unwrap(),
            with_database(&server, &name),
            policy,
            tweak,
        )
        .await
    }

    async fn start_on(
        dir: tempfile::TempDir,
        db_url: String,
        policy: RetryPolicy,
        tweak: impl FnOnce(&mut WorkerConfig),
    ) -> App {
        let fake = FakeGithub::start().await;
        let store = Arc::new(Store::open(&db_url, policy).await.unwrap());
        // The fixture evidence was made for 2026-11-20.
        let start: DateTime<Utc> = Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap();
        let now_ms = Arc::new(AtomicI64::new(start.timestamp_millis()));
        let clock: Clock = {
            let now_ms = now_ms.clone();
            Arc::new(move || Utc.timestamp_millis_opt(now_ms.load(Ordering::SeqCst)).unwrap())
        };
        // One set of counters for the router, the worker and its GitHub client, as `serve` wires them.
        let metrics = Arc::new(Metrics::default());
        let mut state = AppState::new(store.clone(), vec![SecretString::from(SECRET)]);
        state.clock = clock.clone();
        state.metrics = metrics.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router(state)).await.unwrap() });
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        let mut config = WorkerConfig {
            worker_id: "test-worker".into(),
            scratch_dir: scratch,
            // A test that runs the worker's loop queues no sweep unless it asks for one.
            sweep_interval: None,
            ..WorkerConfig::default()
        };
        tweak(&mut config);
        let github = github_app(&fake).with_metrics(metrics.clone());
        let worker = Worker::new(store.clone(), github, config.clone(), clock).with_metrics(metrics.clone());
        App {
            fake,
            store,
            worker,
            base,
            db_url,
            policy,
            config,
            http: reqwest::Client::new(),
            now_ms,
            deliveries: AtomicU64::new(0),
            dir,
        }
    }

    pub fn clock(&self) -> Clock {
        let now_ms = self.now_ms.clone();
        Arc::new(move || Utc.timestamp_millis_opt(now_ms.load(Ordering::SeqCst)).unwrap())
    }

    pub fn advance(&self, d: Duration) {
        self.now_ms.fetch_add(d.as_millis() as i64, Ordering::SeqCst);
    }

    /// Another process over the same database file: its own store handle, GitHub client and
    /// worker id (the same injected clock).
    pub async fn new_worker(&self, worker_id: &str) -> (Arc<Store>, Worker) {
        let store = Arc::new(Store::open(&self.db_url, self.policy).await.unwrap());
        let config = WorkerConfig {
            worker_id: worker_id.to_owned(),
            ..self.config.clone()
        };
        let worker = Worker::new(store.clone(), github_app(&self.fake), config, self.clock());
        (store, worker)
    }

    /// Sign and POST `payload` as `event` with `delivery` as the delivery id; returns status and body.
    pub async fn post(&self, event: &str, delivery: &str, payload: &Value) -> (u16, String) {
        let body = serde_json::to_vec(payload).unwrap();
        let resp = self
            .http
            .post(format!("{}/webhook", self.base))
            .header("content-type", "application/json")
            .header("x-github-event", event)
            .header("x-github-delivery", delivery)
            .header("x-hub-signature-256", sign(SECRET.as_bytes(), &body))
            .body(body)
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    /// GET `path` of the router; status and body.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let resp = self.http.get(format!("{}{path}", self.base)).send().await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    /// Sign and POST `payload` as `event` with a fresh delivery id; expects 202. Returns the id.
    pub async fn deliver(&self, event: &str, payload: &Value) -> String {
        let n = self.deliveries.fetch_add(1, Ordering::SeqCst);
        let id = format!("00000000-0000-4000-8000-{n:012}");
        let (status, body) = self.post(event, &id, payload).await;
        assert_eq!(status, 202, "{event}: {body}");
        id
    }
}

/// `url` (`postgres://…/db?params`) naming database `name` instead.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let path = base[authority_end..]
        .find('/')
        .map_or(base.len(), |i| authority_end + i);
    let mut out = format!("{}/{name}", &base[..path]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// A GitHub App client for `fake` with the test-only key.
pub fn github_app(fake: &FakeGithub) -> GithubApp {
    let creds = AppCredentials::from_pem(AppId(fake.app_id), fake.private_key_pem().as_bytes()).unwrap();
    GithubApp::new(&fake.uri(), creds).unwrap()
}

/// Copy the directory `from` to `to`, recursively.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}
