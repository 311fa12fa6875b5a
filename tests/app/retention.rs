//! What the store keeps. A flood of signed deliveries the App will never act on — `workflow_run`
//! completions of another workflow, each with a 1 MiB commit message — leaves only the fields
//! the worker reads, and finished jobs are trimmed after the retention window (the injected
//! clock), so the SQLite file stays within a bound whatever the payloads weigh; dedupe by
//! delivery id holds within the window.

use crate::scenarios::finish;
use crate::support::app_harness::{case, stage_case, workflow_run_completed, App, NAME, OWNER};
use crate::support::fake_repo::FakeRepo;
use flakegate::store::{JobState, RetryPolicy};
use serde_json::json;
use std::time::Duration;

/// Deliveries in each flood.
const FLOOD: usize = 40;
/// The bound on the database (the file and its write-ahead log) after two floods with a
/// retention window between them (docs/performance.md, "What the store keeps").
const BOUND: u64 = 512 * 1024;

/// The SQLite file and its write-ahead log, in bytes, once the log is checkpointed into the
/// file (SQLite does it by itself every 1000 pages, about 4 MB of log).
async fn db_size(app: &App) -> u64 {
    use sqlx::Connection as _;
    let mut conn = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    ["flakegate.db", "flakegate.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(app.dir.path().join(f)).ok())
        .map(|m| m.len())
        .sum()
}

async fn flood(app: &App, head: &str, base: &str, first_run: u64) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..FLOOD as u64 {
        // Another workflow of the same pull request's head: not evidence.
        let mut p = workflow_run_completed(first_run + i, head, ".github/workflows/lint.yml", &[(3, base)]);
        p["workflow_run"]["head_commit"] = json!({ "id": head, "message": "x".repeat(1 << 20) });
        ids.push(app.deliver("workflow_run", &p).await);
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_irrelevant_deliveries_keeps_the_store_bounded() {
    let app = App::start(RetryPolicy::default()).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let c = case("some_frozen");
    stage_case(&repo, 3, &c, 1);
    let retention = app.config.retention.expect("finished jobs are trimmed by default");
    assert_eq!(retention, Duration::from_secs(7 * 24 * 3600));

    let first = flood(&app, &c.head_sha, &c.base_sha, 100).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), FLOOD);
    let jobs = app.store.jobs().await.unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Done), "{jobs:#?}");
    for j in &jobs {
        assert!(
            j.payload.len() < 1024,
            "{} bytes stored: {}",
            j.payload.len(),
            j.payload
        );
    }
    let after_first = db_size(&app).await;

    // A redelivery within the window is still a duplicate, though its job is done.
    app.advance(retention - Duration::from_secs(60));
    assert_eq!(app.worker.trim().await.unwrap(), 0);
    let p = workflow_run_completed(100, &c.head_sha, ".github/workflows/lint.yml", &[(3, &c.base_sha)]);
    assert_eq!(
        app.post("workflow_run", &first[0], &p).await,
        (200, "duplicate".to_owned())
    );

    // Past the window the finished jobs go, and their room is used again by the next flood.
    app.advance(Duration::from_secs(120));
    assert_eq!(app.worker.trim().await.unwrap(), FLOOD as u64);
    assert!(app.store.jobs().await.unwrap().is_empty());
    flood(&app, &c.head_sha, &c.base_sha, 1000).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), FLOOD);
    let after_second = db_size(&app).await;
    println!(
        "store after {FLOOD} deliveries of 1 MiB: {after_first} bytes; after trimming them and {FLOOD} more: {after_second} bytes"
    );
    assert!(
        after_first <= BOUND && after_second <= BOUND,
        "{after_first} then {after_second} bytes, over {BOUND}"
    );
    // A redelivery of a trimmed delivery is a new job: dedupe holds for the window only.
    assert_eq!(app.post("workflow_run", &first[0], &p).await.0, 202);
    finish(app).await;
}
