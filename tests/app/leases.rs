//! Leases on PostgreSQL, where several instances of the App share one queue: a job that runs
//! longer than its lease stays with the worker whose heartbeat renews it, and passes to another
//! worker only when that heartbeat stops; the first worker then abandons the job unpublished. Two workers, a 60 s lease, the injected clock; the
//! heartbeats are the test's own calls, so nothing waits on wall time.

use crate::scenarios::{assert_verdict, finish, the_check, the_comment};
use crate::support::app_harness::{case, stage_case, workflow_run_completed, App, NAME, OWNER, WORKFLOW};
use crate::support::fake_repo::{op, FakeRepo};
use flakegate::store::{JobState, RetryPolicy, Store};
use std::sync::Arc;
use std::time::Duration;

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
