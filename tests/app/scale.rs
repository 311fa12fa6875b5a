//! Several instances of the App on one PostgreSQL. Two real `flakegate serve` processes share
//! the queue: 200 signed deliveries spread over both, one instance SIGKILLed in the middle of a
//! job; every delivery's job runs to completion exactly once — one check-run completion and one
//! comment per pull request, nothing sent twice — and the killed instance's job is taken over
//! when its lease runs out. And in process, with the injected clock: a job taken over after it
//! had already published its check run does not send that completion again (the store's table
//! of publications).

use crate::scenarios::{assert_verdict, finish, the_check, the_comment};
use crate::support::app_harness::{
    case, pull_request_event, stage_case, workflow_run_completed, App, NAME, OWNER, SECRET, WORKFLOW,
};
use crate::support::fake_repo::{op, FakeRepo};
use crate::support::serve_process::ServeProcess;
use flakegate::server::signature::sign;
use flakegate::store::{Job, JobState, RetryPolicy, Store};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

// ---- in process: a takeover after publishing -----------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_taken_over_after_publishing_its_check_run_does_not_send_it_again() {
    let lease = Duration::from_secs(60);
    let app = App::start_postgres("republish", RetryPolicy::default(), |c| c.lease = lease).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
    )
    .await;

    // Instance A judges, completes the check run, and dies as GitHub takes its comment (the
    // comment is made; A never hears back, and never marks the job done).
    let stalled = repo.stall_next("POST", op::ISSUE_COMMENTS);
    let (_, a) = app.new_worker("a").await;
    let task = tokio::spawn(async move { a.run_until_idle().await });
    stalled.notified().await;
    task.abort();
    let check = the_check(&repo, &c.head_sha);
    assert_eq!(check.status, "completed", "A completed the check run before it died");

    // A's lease runs out; B takes the job over and judges the head again: the same check run
    // content is not sent a second time, and the comment A made is found, not made again.
    app.advance(lease + Duration::from_secs(1));
    let (store, b) = app.new_worker("b").await;
    assert_eq!(b.run_until_idle().await.unwrap(), 1);
    let job = store.jobs().await.unwrap().into_iter().next().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Done, 1));
    let check = the_check(&repo, &c.head_sha);
    assert_verdict(&check, "PASS_WITH_CAVEAT", "success");
    assert_eq!(check.updates, 0, "B sent the completion again: {check:#?}");
    assert_eq!(repo.calls("POST", op::CHECK_RUNS), 1);
    assert_eq!(the_comment(&repo, 3).edits, 0);
    assert_eq!(repo.calls("POST", op::ISSUE_COMMENTS), 1);
    finish(app).await;
}

// ---- two processes, 200 deliveries, one SIGKILL ---------------------------------------------

const REPOS: usize = 100;
/// The repository whose first pull-request read stalls: the instance doing it is killed there.
const STALLED: usize = 50;
const PR: u64 = 7;
/// Short, so the killed instance's job is taken over soon, with room for a busy machine's
/// heartbeat (every 2 s) to be late.
const LEASE_SECONDS: &str = "8";

fn repo_name(i: usize) -> String {
    format!("scale-{i:03}")
}

/// `p` pointed at repository `name` of [`OWNER`] (the same installation and repository id).
fn for_repo(mut p: Value, name: &str) -> Value {
    p["repository"]["full_name"] = json!(format!("{OWNER}/{name}"));
    p["repository"]["name"] = json!(name);
    if let Some(prs) = p["workflow_run"]["pull_requests"].as_array_mut() {
        for pr in prs {
            pr["base"]["repo"]["url"] = json!(format!("https://api.github.com/repos/{OWNER}/{name}"));
        }
    }
    p
}

async fn deliver(http: &reqwest::Client, to: &ServeProcess, event: &str, id: &str, payload: &Value) {
    let body = serde_json::to_vec(payload).unwrap();
    let resp = http
        .post(format!("{}/webhook", to.base))
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", id)
        .header("x-hub-signature-256", sign(SECRET.as_bytes(), &body))
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    assert_eq!(
        status,
        202,
        "{} answered {event} {id}: {}",
        to.name,
        resp.text().await.unwrap()
    );
}

/// The jobs of webhook deliveries (not the evidence deadlines the worker queues itself).
async fn delivery_jobs(store: &Store) -> Vec<Job> {
    let jobs = store.jobs().await.unwrap();
    jobs.into_iter()
        .filter(|j| j.event != flakegate::worker::EVIDENCE_TIMEOUT_EVENT)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_200_deliveries_and_survive_a_sigkill() {
    let app = App::start_postgres("scale", RetryPolicy::default(), |_| {}).await;
    let c = case("some_frozen");
    let mut repos = Vec::new();
    for i in 0..REPOS {
        let repo = FakeRepo::mount(&app.fake, OWNER, &repo_name(i)).await;
        stage_case(&repo, PR, &c, 1);
        repos.push(repo);
    }
    let stalled = repos[STALLED].stall_next("GET", op::PULL);
    let env = [("FLAKEGATE_JOB_LEASE_SECONDS", LEASE_SECONDS)];
    let mut instances = [
        ServeProcess::start("instance-a", &app.fake, &app.db_url, SECRET, &env).await,
        ServeProcess::start("instance-b", &app.fake, &app.db_url, SECRET, &env).await,
    ];

    // Each repository's pull request opens on one instance and its evidence arrives on the
    // other: 100 deliveries each, and the two jobs of one head on two instances.
    let http = reqwest::Client::new();
    for i in 0..REPOS {
        let name = repo_name(i);
        let opened = for_repo(pull_request_event("opened", PR, &c.base_sha, &c.head_sha), &name);
        let evidence = for_repo(
            workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(PR, &c.base_sha)]),
            &name,
        );
        deliver(
            &http,
            &instances[i % 2],
            "pull_request",
            &format!("open-{name}"),
            &opened,
        )
        .await;
        deliver(
            &http,
            &instances[(i + 1) % 2],
            "workflow_run",
            &format!("run-{name}"),
            &evidence,
        )
        .await;
    }

    // One instance is in the middle of a job of the stalled repository: kill it there.
    stalled.notified().await;
    let store = app.store.clone();
    let held = delivery_jobs(&store)
        .await
        .into_iter()
        .find(|j| j.state == JobState::Running && j.repo.as_deref() == Some(&format!("{OWNER}/{}", repo_name(STALLED))))
        .expect("the stalled job is running");
    let owner = held.lease_owner.clone().unwrap();
    let victim = instances
        .iter()
        .position(|p| owner.starts_with(&format!("flakegate-{}-", p.name)))
        .unwrap_or_else(|| panic!("lease owner {owner:?} is neither instance"));
    instances[victim].kill();
    let survivor = &instances[1 - victim];

    // The survivor finishes everything, the killed instance's job once its lease ran out.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let jobs = delivery_jobs(&store).await;
        assert_eq!(jobs.len(), 2 * REPOS);
        if jobs.iter().all(|j| j.state == JobState::Done) {
            break;
        }
        let open: Vec<_> = jobs.iter().filter(|j| j.state != JobState::Done).collect();
        assert!(
            Instant::now() < deadline,
            "not done within 10 minutes: {open:#?}\n{} log:\n{}",
            survivor.name,
            survivor.tail(40)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let jobs = delivery_jobs(&store).await;
    let taken_over = jobs.iter().find(|j| j.id == held.id).unwrap();
    assert_eq!(taken_over.attempts, 1, "one expired lease: {taken_over:?}");
    assert!(
        jobs.iter().filter(|j| j.id != held.id).all(|j| j.attempts == 0),
        "only the killed instance's job ran twice: {jobs:#?}"
    );
    let done = |p: &ServeProcess| p.count("\"job done\"");
    assert_eq!(
        done(&instances[0]) + done(&instances[1]),
        2 * REPOS,
        "each job completed once, by one of the two instances"
    );
    assert!(done(survivor) > 0);

    // At the fake GitHub: per repository, one check run, completed once, one comment never
    // edited — whichever instance did which job, and the killed one's job done again.
    let mut completions: BTreeMap<String, usize> = BTreeMap::new();
    for r in app.fake.all_requests().await {
        let path = r.url.path();
        let Some(rest) = path.strip_prefix(&format!("/repos/{OWNER}/")) else {
            continue;
        };
        let (name, tail) = rest.split_once('/').unwrap();
        let write = matches!((r.method.as_str(), tail), ("POST", "check-runs"))
            || (r.method.as_str() == "PATCH" && tail.starts_with("check-runs/"));
        if !write {
            continue;
        }
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        if body["status"] == "completed" || !body["conclusion"].is_null() {
            *completions.entry(name.to_owned()).or_default() += 1;
        }
    }
    for (i, repo) in repos.iter().enumerate() {
        let name = repo_name(i);
        let check = the_check(repo, &c.head_sha);
        assert_eq!(check.status, "completed", "{name}: {check:#?}");
        assert_eq!(completions.get(&name), Some(&1), "{name}: completions sent");
        let comment = the_comment(repo, PR);
        assert_eq!(comment.edits, 0, "{name}: the comment was edited");
        assert_eq!(repo.calls("POST", op::ISSUE_COMMENTS), 1, "{name}: comments made");
    }
    let verdicts: std::collections::BTreeSet<_> = repos.iter().map(|r| the_check(r, &c.head_sha).conclusion).collect();
    assert_eq!(
        verdicts.len(),
        1,
        "the same evidence got different conclusions: {verdicts:?}"
    );
    drop(instances);
    finish(app).await;
}
