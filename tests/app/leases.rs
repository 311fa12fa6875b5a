//! Leases. On PostgreSQL, where several instances of the App share one queue, a job that runs
//! longer than its lease stays with the worker whose heartbeat renews it, and passes to another
//! worker only when that heartbeat stops; the first worker then abandons the job unpublished
//! (two workers, a 60 s lease, the injected clock; the heartbeats are the test's own calls, so
//! nothing waits on wall time). And a real `flakegate serve` killed (SIGKILL) between claiming a
//! job and completing it strands nothing: restarted on the same SQLite file it takes the job
//! over at once; on PostgreSQL a restarted instance takes it over when the default 60 s lease
//! runs out (wall time: the process runs on the real clock).

use crate::scenarios::{assert_verdict, finish, the_check, the_comment};
use crate::support::app_harness::{
    case, pull_request_event, stage_case, workflow_run_completed, App, NAME, OWNER, SECRET, WORKFLOW,
};
use crate::support::fake_repo::{op, FakeRepo};
use crate::support::serve_process::ServeProcess;
use flakegate::server::signature::sign;
use flakegate::store::{JobState, RetryPolicy, Store};
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn the_job(store: &Store) -> flakegate::store::Job {
    let jobs = store.jobs().await.unwrap();
    jobs.into_iter().find(|j| j.event == "workflow_run").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_longer_than_its_lease_stays_with_its_worker_on_postgres() {
    let lease = Duration::from_secs(60);
    let app = App::start_postgres("lease", RetryPolicy::default(), |c| c.lease = lease).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    app.deliver(
        "workflow_run",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
    )
    .await;

    // Worker A takes the job; GitHub holds its first answer for a long while.
    let stalled = repo.stall_next("GET", op::PULL);
    let (store, a) = app.new_worker("a").await;
    let a = Arc::new(a);
    let task = {
        let a = a.clone();
        tokio::spawn(async move { a.run_until_idle().await })
    };
    stalled.notified().await;
    let (_, b) = app.new_worker("b").await;

    // Two minutes pass, twice the lease, with A's heartbeat every 40 s: B never gets the job.
    for _ in 0..3 {
        app.advance(Duration::from_secs(40));
        assert_eq!(a.heartbeat().await.unwrap(), Some(true), "A still holds the lease");
        assert_eq!(b.run_until_idle().await.unwrap(), 0, "the lease is A's");
    }
    let job = the_job(&store).await;
    assert_eq!(
        (job.state, job.lease_owner.as_deref(), job.attempts),
        (JobState::Running, Some("a"), 0)
    );

    // A stalls without a heartbeat (a paused process, say): the lease runs out, and B takes the
    // job over and finishes it.
    app.advance(lease + Duration::from_secs(1));
    assert_eq!(b.run_until_idle().await.unwrap(), 1);
    let job = the_job(&store).await;
    assert_eq!((job.state, job.attempts, job.lease_owner), (JobState::Done, 1, None));
    // A's next heartbeat finds the lease gone: A abandons the job where it stands and
    // publishes nothing.
    assert_eq!(a.heartbeat().await.unwrap(), Some(false));
    assert_eq!(task.await.unwrap().unwrap(), 1);
    assert_eq!(the_job(&store).await.state, JobState::Done);
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS_WITH_CAVEAT", "success");
    assert_eq!(the_comment(&repo, 3).edits, 0);
    assert_eq!(repo.calls("POST", op::ISSUE_COMMENTS), 1, "judged and published once");
    finish(app).await;
}

async fn deliver_to(to: &ServeProcess, event: &str, id: &str, payload: &serde_json::Value) {
    let body = serde_json::to_vec(payload).unwrap();
    let resp = reqwest::Client::new()
        .post(format!("{}/webhook", to.base))
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", id)
        .header("x-hub-signature-256", sign(SECRET.as_bytes(), &body))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202, "{event} {id}");
}

/// `flakegate serve` on `app`'s database, SIGKILLed while it holds a `workflow_run` job (GitHub
/// holds its answer), with a later job of the same head queued behind it; a new process on the
/// same database (`env` for both) must finish both within `within` of the kill, once each.
/// Returns how long that took.
async fn killed_between_claim_and_completion(app: App, env: &[(&str, &str)], within: Duration) -> Duration {
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    let stalled = repo.stall_next("GET", op::PULL);
    let mut first = ServeProcess::start("first", &app.fake, &app.db_url, SECRET, env).await;
    deliver_to(
        &first,
        "workflow_run",
        "run-1",
        &workflow_run_completed(1, &c.head_sha, WORKFLOW, &[(3, &c.base_sha)]),
    )
    .await;
    stalled.notified().await;
    let held = the_job(&app.store).await;
    assert_eq!(held.state, JobState::Running);
    assert!(
        held.lease_owner.as_deref().unwrap().starts_with("flakegate-first-"),
        "{held:?}"
    );
    // A later job of the same head, which waits while the first holds its lease.
    deliver_to(
        &first,
        "pull_request",
        "reopened-1",
        &pull_request_event("reopened", 3, &c.base_sha, &c.head_sha),
    )
    .await;
    first.kill();
    let killed = Instant::now();

    let second = ServeProcess::start("second", &app.fake, &app.db_url, SECRET, env).await;
    loop {
        let jobs = app.store.jobs().await.unwrap();
        let open: Vec<_> = jobs
            .iter()
            .filter(|j| j.event != flakegate::worker::EVIDENCE_TIMEOUT_EVENT && j.state != JobState::Done)
            .collect();
        if open.is_empty() {
            break;
        }
        assert!(
            killed.elapsed() < within,
            "not done within {within:?} of the kill: {open:#?}\n{}",
            second.tail(40)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = killed.elapsed();
    let job = app.store.job(held.id).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.attempts),
        (JobState::Done, 1),
        "taken over once: {job:?}"
    );
    assert_verdict(&the_check(&repo, &c.head_sha), "PASS_WITH_CAVEAT", "success");
    assert_eq!(repo.calls("POST", op::ISSUE_COMMENTS), 1, "one comment");
    drop(second);
    finish(app).await;
    took
}

/// One instance runs on an SQLite file at a time, so a starting one owns every lease: the dead
/// instance's job is taken over at once, though its lease (an hour here) has long to run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_job_on_sqlite_the_restarted_instance_takes_the_job_at_once() {
    let app = App::start(RetryPolicy::default()).await;
    let took =
        killed_between_claim_and_completion(app, &[("FLAKEGATE_JOB_LEASE_SECONDS", "3600")], Duration::from_secs(60))
            .await;
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// On PostgreSQL other instances' leases are live, so a restarted one takes nothing at its start;
/// the default lease (60 s, renewed every 15 s) moves a dead instance's job on within about a
/// minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_job_on_postgres_the_job_moves_on_within_about_a_minute() {
    let defaults = flakegate::worker::WorkerConfig::default();
    assert_eq!(
        (defaults.lease, defaults.heartbeat),
        (Duration::from_secs(60), Duration::from_secs(15))
    );
    let app = App::start_postgres("killed", RetryPolicy::default(), |_| {}).await;
    killed_between_claim_and_completion(app, &[], Duration::from_secs(100)).await;
}
