//! The store's contract, run on SQLite (a temp file) and on a real PostgreSQL: the server
//! `FLAKEGATE_TEST_POSTGRES` names, else a throwaway one this test process starts
//! (`support::postgres`). The PostgreSQL cases fail, never skip, when neither can be had. Each
//! PostgreSQL case works in a schema of its own so cases run in parallel.

use chrono::{DateTime, Duration as Span, TimeZone as _, Utc};
use flakegate::store::{
    CommentState, EvidenceRun, Failed, JobState, NewDelivery, PgStore, PrVerdict, Recorded, RetryPolicy, SqliteStore,
    Store,
};
use sqlx::postgres::PgConnectOptions;
use sqlx::Connection as _;
use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(60);

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base: Duration::from_secs(10),
        cap: Duration::from_secs(3600),
        jitter_percent: 0,
    }
}

fn delivery(id: &str, pr: u64, sha: &str) -> NewDelivery {
    NewDelivery {
        delivery_id: id.to_owned(),
        event: "pull_request".to_owned(),
        action: Some("synchronize".to_owned()),
        repo: Some("octo/repo".to_owned()),
        pr: Some(pr),
        head_sha: Some(sha.to_owned()),
        payload: r#"{"action":"synchronize"}"#.to_owned(),
    }
}

/// A fresh database for one case; `reopen` gives a second handle on the same data.
pub(crate) struct Db {
    url: String,
    pg_schema: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl Db {
    pub(crate) async fn sqlite() -> Db {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("flakegate.db").display());
        Db {
            url,
            pg_schema: None,
            _dir: Some(dir),
        }
    }

    pub(crate) async fn postgres(case: &str) -> Db {
        let url = crate::support::postgres::url();
        let schema = format!("t_{case}_{}", std::process::id());
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap_or_else(|e| {
            panic!(
                "PostgreSQL is required for the store contract tests and is not reachable at {url}: {e}. \
                 Start it, or unset FLAKEGATE_TEST_POSTGRES for a throwaway one."
            )
        });
        sqlx::raw_sql(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .execute(&mut conn)
        .await
        .unwrap();
        Db {
            url,
            pg_schema: Some(schema),
            _dir: None,
        }
    }

    pub(crate) async fn open(&self) -> Store {
        match &self.pg_schema {
            None => Store::Sqlite(SqliteStore::open(&self.url, policy()).await.unwrap()),
            Some(schema) => {
                let options = PgConnectOptions::from_str(&self.url)
                    .unwrap()
                    .options([("search_path", schema.as_str())]);
                Store::Postgres(PgStore::open_with(options, policy()).await.unwrap())
            }
        }
    }

    pub(crate) async fn cleanup(self) {
        if let Some(schema) = &self.pg_schema {
            let mut conn = sqlx::PgConnection::connect(&self.url).await.unwrap();
            sqlx::raw_sql(&format!("DROP SCHEMA {schema} CASCADE"))
                .execute(&mut conn)
                .await
                .unwrap();
        }
    }
}

async fn dedupe(db: &Db) {
    let s = db.open().await;
    let first = s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    assert!(matches!(first, Recorded::Inserted(_)));
    assert_eq!(
        s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap(),
        Recorded::Duplicate
    );
    let jobs = s.jobs().await.unwrap();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job.delivery_id, "d1");
    assert_eq!(job.event, "pull_request");
    assert_eq!(job.action.as_deref(), Some("synchronize"));
    assert_eq!(
        (job.repo.as_deref(), job.pr, job.head_sha.as_deref()),
        (Some("octo/repo"), Some(1), Some("a"))
    );
    assert_eq!(job.state, JobState::Queued);
    assert_eq!(job.next_attempt_at, t0());
}

async fn claim_once_under_concurrency(db: &Db) {
    let s = Arc::new(db.open().await);
    for i in 0..5 {
        s.record_delivery(&delivery(&format!("d{i}"), i, &format!("sha{i}")), t0())
            .await
            .unwrap();
    }
    // Eight workers race for five jobs: every job goes to exactly one of them.
    let tasks: Vec<_> = (0..8)
        .map(|w| {
            let s = s.clone();
            tokio::spawn(async move { s.claim(&format!("w{w}"), t0(), LEASE).await.unwrap() })
        })
        .collect();
    let mut claimed = Vec::new();
    for t in tasks {
        claimed.extend(t.await.unwrap());
    }
    let mut ids: Vec<_> = claimed.iter().map(|j| j.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "{claimed:?}");
    assert_eq!(claimed.len(), 5, "a job was claimed twice: {claimed:?}");
    assert!(claimed
        .iter()
        .all(|j| j.state == JobState::Running && j.lease_owner.is_some()));
    assert_eq!(s.claim("late", t0(), LEASE).await.unwrap(), None);
}

/// Another repository's job on the same sha.
fn elsewhere(id: &str, sha: &str) -> NewDelivery {
    NewDelivery {
        repo: Some("octo/other".to_owned()),
        ..delivery(id, 1, sha)
    }
}

async fn one_job_per_head_at_a_time(db: &Db) {
    let s = db.open().await;
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    s.record_delivery(&delivery("d2", 2, "a"), t0()).await.unwrap();
    s.record_delivery(&delivery("d3", 3, "b"), t0()).await.unwrap();
    s.record_delivery(&elsewhere("d4", "a"), t0()).await.unwrap();
    let claimed = |j: Option<flakegate::store::Job>| j.map(|j| j.delivery_id);
    assert_eq!(
        claimed(s.claim("w1", t0(), LEASE).await.unwrap()).as_deref(),
        Some("d1")
    );
    // d2 waits while d1 (same repository, same head) holds a live lease; other heads and
    // the same sha in another repository go ahead.
    assert_eq!(
        claimed(s.claim("w2", t0(), LEASE).await.unwrap()).as_deref(),
        Some("d3")
    );
    assert_eq!(
        claimed(s.claim("w3", t0(), LEASE).await.unwrap()).as_deref(),
        Some("d4")
    );
    assert_eq!(s.claim("w4", t0(), LEASE).await.unwrap(), None, "d2 must wait for d1");
    assert_eq!(s.job_gauges().await.unwrap().queued, 1);
    let d1 = s
        .jobs()
        .await
        .unwrap()
        .into_iter()
        .find(|j| j.delivery_id == "d1")
        .unwrap();
    assert!(s.complete(d1.id, "w1").await.unwrap());
    for (id, w) in [("d3", "w2"), ("d4", "w3")] {
        let j = s
            .jobs()
            .await
            .unwrap()
            .into_iter()
            .find(|j| j.delivery_id == id)
            .unwrap();
        assert!(s.complete(j.id, w).await.unwrap());
    }
    let d2 = s.claim("w4", t0(), LEASE).await.unwrap().unwrap();
    assert_eq!((d2.delivery_id.as_str(), d2.attempts), ("d2", 0));

    // An expired lease holds nothing back: d2's worker died; d5 (due earlier) goes first,
    // and then d2 waits for d5 in turn.
    s.record_delivery(&delivery("d5", 5, "a"), t0() - Span::seconds(1))
        .await
        .unwrap();
    assert_eq!(s.claim("w5", t0(), LEASE).await.unwrap(), None, "d2's lease is live");
    let later = t0() + Span::seconds(61);
    assert_eq!(
        claimed(s.claim("w5", later, LEASE).await.unwrap()).as_deref(),
        Some("d5")
    );
    assert_eq!(s.claim("w6", later, LEASE).await.unwrap(), None, "d2 must wait for d5");
    let d5 = s
        .jobs()
        .await
        .unwrap()
        .into_iter()
        .find(|j| j.delivery_id == "d5")
        .unwrap();
    assert!(s.complete(d5.id, "w5").await.unwrap());
    let d2 = s.claim("w6", later, LEASE).await.unwrap().unwrap();
    assert_eq!(
        (d2.delivery_id.as_str(), d2.attempts),
        ("d2", 1),
        "an expired lease counts"
    );
}

async fn one_job_per_head_under_concurrency(db: &Db) {
    // Two handles, as two instances would have, each with its own pool.
    let (a, b) = (Arc::new(db.open().await), Arc::new(db.open().await));
    for i in 0..6 {
        s_record(&a, &delivery(&format!("same{i}"), i, "a")).await;
    }
    for i in 0..3 {
        s_record(&a, &delivery(&format!("other{i}"), 10 + i, &format!("b{i}"))).await;
    }
    for round in 0..3 {
        let tasks: Vec<_> = (0..8)
            .map(|w| {
                let s = if w % 2 == 0 { a.clone() } else { b.clone() };
                tokio::spawn(async move { s.claim(&format!("r{round}w{w}"), t0(), LEASE).await.unwrap() })
            })
            .collect();
        let mut claimed = Vec::new();
        for t in tasks {
            claimed.extend(t.await.unwrap());
        }
        let heads: std::collections::BTreeSet<_> = claimed.iter().map(|j| j.head_sha.clone()).collect();
        assert_eq!(heads.len(), claimed.len(), "two jobs of one head at once: {claimed:?}");
        assert_eq!(
            claimed.len(),
            if round == 0 { 4 } else { 1 },
            "round {round}: {claimed:?}"
        );
        assert_eq!(a.job_gauges().await.unwrap().running, 4, "round {round}");
        // The running job of head `a` finishes; the others keep their leases.
        let jobs = a.jobs().await.unwrap();
        let on_a = jobs
            .iter()
            .find(|j| j.state == JobState::Running && j.head_sha.as_deref() == Some("a"))
            .unwrap();
        assert!(a.complete(on_a.id, on_a.lease_owner.as_deref().unwrap()).await.unwrap());
    }
}

async fn s_record(s: &Store, d: &NewDelivery) {
    assert!(matches!(
        s.record_delivery(d, t0()).await.unwrap(),
        Recorded::Inserted(_)
    ));
}

async fn publications(db: &Db) {
    let s = db.open().await;
    assert_eq!(s.publication("octo/repo", "check_run/7").await.unwrap(), None);
    s.set_publication("octo/repo", "check_run/7", "d1").await.unwrap();
    s.set_publication("octo/other", "check_run/7", "x").await.unwrap();
    s.set_publication("octo/repo", "check_run/8", "y").await.unwrap();
    assert_eq!(
        s.publication("octo/repo", "check_run/7").await.unwrap().as_deref(),
        Some("d1")
    );
    s.set_publication("octo/repo", "check_run/7", "d2").await.unwrap();
    drop(s);
    // Another instance (a fresh handle) sees what this one published.
    let s = db.open().await;
    assert_eq!(
        s.publication("octo/repo", "check_run/7").await.unwrap().as_deref(),
        Some("d2")
    );
    assert_eq!(
        s.publication("octo/other", "check_run/7").await.unwrap().as_deref(),
        Some("x")
    );
    assert_eq!(
        s.publication("octo/repo", "check_run/8").await.unwrap().as_deref(),
        Some("y")
    );
    assert_eq!(s.publication("octo/repo", "check_run/9").await.unwrap(), None);
}

async fn lease_expiry(db: &Db) {
    let s = db.open().await;
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    let job = s.claim("w1", t0(), LEASE).await.unwrap().unwrap();
    assert_eq!(job.attempts, 0);
    let before = t0() + Span::seconds(59);
    assert_eq!(s.claim("w2", before, LEASE).await.unwrap(), None, "lease still held");
    let after = t0() + Span::seconds(60);
    let again = s
        .claim("w2", after, LEASE)
        .await
        .unwrap()
        .expect("expired lease is claimable");
    assert_eq!(again.id, job.id);
    assert_eq!(again.lease_owner.as_deref(), Some("w2"));
    assert_eq!(again.attempts, 1, "a lost lease counts as an attempt");
    assert!(s.complete(again.id, "w2").await.unwrap());
    assert_eq!(s.job(job.id).await.unwrap().unwrap().state, JobState::Done);
    assert_eq!(s.claim("w3", after + Span::hours(1), LEASE).await.unwrap(), None);
}

/// A starting instance on SQLite owns every lease (one instance runs on a file at a time);
/// on PostgreSQL it takes nothing from the others, whose leases run out on their own.
async fn stranded_jobs_at_start(db: &Db) {
    let s = db.open().await;
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    s.record_delivery(&delivery("d2", 1, "a"), t0()).await.unwrap();
    let held = s.claim("dead", t0(), LEASE).await.unwrap().unwrap();
    let restarted = db.open().await;
    let now = t0() + Span::seconds(1);
    let taken = restarted.take_over_stranded_jobs(now).await.unwrap();
    match restarted.backend() {
        flakegate::store::Backend::Sqlite => {
            assert_eq!(taken, 1);
            // Taken over at once, the attempt counted; then the job of the same head behind it.
            let again = restarted.claim("new", now, LEASE).await.unwrap().unwrap();
            assert_eq!((again.id, again.attempts), (held.id, 1));
            assert!(restarted.complete(again.id, "new").await.unwrap());
            assert!(
                !s.complete(held.id, "dead").await.unwrap(),
                "the dead owner's lease is gone"
            );
            let next = restarted.claim("new", now, LEASE).await.unwrap().unwrap();
            assert_eq!(next.delivery_id, "d2");
            assert!(restarted.complete(next.id, "new").await.unwrap());
        }
        flakegate::store::Backend::Postgres => {
            assert_eq!(taken, 0);
            assert_eq!(
                restarted.claim("new", now, LEASE).await.unwrap(),
                None,
                "the lease is live"
            );
            assert!(restarted.complete(held.id, "dead").await.unwrap());
        }
    }
    assert_eq!(restarted.take_over_stranded_jobs(now).await.unwrap(), 0);
}

async fn backoff_and_dead_letter(db: &Db) {
    let s = db.open().await;
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    let job = s.claim("w", t0(), LEASE).await.unwrap().unwrap();

    // Attempt 1 fails: retried after 10 s, not before.
    let retry1 = t0() + Span::seconds(10);
    assert_eq!(
        s.fail(job.id, "w", "502 from GitHub", t0()).await.unwrap(),
        Failed::Retry { at: retry1 }
    );
    let row = s.job(job.id).await.unwrap().unwrap();
    assert_eq!((row.state, row.attempts), (JobState::Queued, 1));
    assert_eq!(row.last_error.as_deref(), Some("502 from GitHub"));
    assert_eq!(s.claim("w", retry1 - Span::milliseconds(1), LEASE).await.unwrap(), None);
    let job = s.claim("w", retry1, LEASE).await.unwrap().unwrap();

    // Attempt 2: the delay doubles.
    let retry2 = retry1 + Span::seconds(20);
    assert_eq!(
        s.fail(job.id, "w", "timeout", retry1).await.unwrap(),
        Failed::Retry { at: retry2 }
    );
    let job = s.claim("w", retry2, LEASE).await.unwrap().unwrap();

    // Attempt 3 of 3: dead, never claimed again.
    assert_eq!(
        s.fail(job.id, "w", "still failing", retry2).await.unwrap(),
        Failed::Dead
    );
    let row = s.job(job.id).await.unwrap().unwrap();
    assert_eq!((row.state, row.attempts), (JobState::Dead, 3));
    assert_eq!(s.claim("w", retry2 + Span::days(1), LEASE).await.unwrap(), None);
}

async fn retry_after_is_kept_exactly(db: &Db) {
    let s = db.open().await;
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    let job = s.claim("w", t0(), LEASE).await.unwrap().unwrap();
    // GitHub asked for a minute: retried then, not before and not after the backoff.
    let later = t0() + Span::seconds(60);
    assert_eq!(
        s.fail_not_before(job.id, "w", "429", t0(), Some(later)).await.unwrap(),
        Failed::Retry { at: later }
    );
    assert_eq!(s.claim("w", later - Span::milliseconds(1), LEASE).await.unwrap(), None);
    let job = s.claim("w", later, LEASE).await.unwrap().unwrap();
    // A Retry-After shorter than the 20 s backoff is not stretched to it.
    let soon = later + Span::seconds(1);
    assert_eq!(
        s.fail_not_before(job.id, "w", "429", later, Some(soon)).await.unwrap(),
        Failed::Retry { at: soon }
    );
    assert_eq!(s.claim("w", soon - Span::milliseconds(1), LEASE).await.unwrap(), None);
    assert!(s.claim("w", soon, LEASE).await.unwrap().is_some());
}

/// Finished jobs (done, superseded, dead) recorded before the cut are deleted; queued and
/// running ones never are. Dedupe by delivery id holds until a job is trimmed.
async fn trim_finished(db: &Db) {
    let s = db.open().await;
    let at = |minutes: i64| t0() + Span::minutes(minutes);
    // d1 done, d2 dead, d3 superseded, d4 running, d5 queued: all recorded at t0.
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    s.record_delivery(&delivery("d2", 2, "b"), t0()).await.unwrap();
    let d1 = s.claim("w", t0(), LEASE).await.unwrap().unwrap();
    assert!(s.complete(d1.id, "w").await.unwrap());
    let d2 = s.claim("w", t0(), LEASE).await.unwrap().unwrap();
    let mut now = t0();
    while let Failed::Retry { at } = s.fail(d2.id, "w", "boom", now).await.unwrap() {
        now = at;
        assert_eq!(s.claim("w", now, LEASE).await.unwrap().unwrap().id, d2.id);
    }
    assert_eq!(s.job(d2.id).await.unwrap().unwrap().state, JobState::Dead);
    for (id, pr, sha) in [("d3", 3, "old"), ("d4", 4, "d"), ("d5", 5, "d")] {
        s.record_delivery(&delivery(id, pr, sha), t0()).await.unwrap();
    }
    assert_eq!(s.supersede("octo/repo", 3, "new").await.unwrap(), 1);
    // Held all along (d5, of the same head, waits behind it).
    let d4 = s.claim("w", at(1), Duration::from_secs(86_400)).await.unwrap().unwrap();
    assert_eq!(d4.delivery_id, "d4");
    // A newer finished job stays.
    s.record_delivery(&delivery("d6", 6, "f"), at(30)).await.unwrap();
    let d6 = s.claim("w2", at(30), LEASE).await.unwrap().unwrap();
    assert_eq!(d6.delivery_id, "d6");
    assert!(s.complete(d6.id, "w2").await.unwrap());

    // Within the window a redelivery is a duplicate.
    assert_eq!(
        s.record_delivery(&delivery("d1", 1, "a"), at(20)).await.unwrap(),
        Recorded::Duplicate
    );
    assert_eq!(s.trim_finished(at(10)).await.unwrap(), 3);
    let left: Vec<_> = s
        .jobs()
        .await
        .unwrap()
        .into_iter()
        .map(|j| (j.delivery_id, j.state))
        .collect();
    assert_eq!(
        left,
        [
            ("d4".to_owned(), JobState::Running),
            ("d5".to_owned(), JobState::Queued),
            ("d6".to_owned(), JobState::Done)
        ]
    );
    assert_eq!(s.trim_finished(at(10)).await.unwrap(), 0);
    // Trimmed, its delivery id is forgotten.
    assert!(matches!(
        s.record_delivery(&delivery("d1", 1, "a"), at(20)).await.unwrap(),
        Recorded::Inserted(_)
    ));
}

async fn release(db: &Db) {
    let s = db.open().await;
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    let job = s.claim("w1", t0(), LEASE).await.unwrap().unwrap();
    assert!(
        !s.release(job.id, "w2").await.unwrap(),
        "only the lease holder releases"
    );
    assert!(s.release(job.id, "w1").await.unwrap());
    let row = s.job(job.id).await.unwrap().unwrap();
    assert_eq!((row.state, row.attempts, row.lease_owner), (JobState::Queued, 0, None));
    let again = s
        .claim("w2", t0(), LEASE)
        .await
        .unwrap()
        .expect("released job is claimable at once");
    assert_eq!((again.id, again.attempts), (job.id, 0));
}

async fn supersede(db: &Db) {
    let s = db.open().await;
    s.record_delivery(&delivery("old", 7, "aaa"), t0()).await.unwrap();
    s.record_delivery(&delivery("other-pr", 8, "aaa"), t0()).await.unwrap();
    s.record_delivery(&delivery("new", 7, "bbb"), t0()).await.unwrap();
    assert_eq!(s.current_head("octo/repo", 7).await.unwrap(), None);
    assert_eq!(s.supersede("octo/repo", 7, "bbb").await.unwrap(), 1);
    assert_eq!(s.current_head("octo/repo", 7).await.unwrap().as_deref(), Some("bbb"));
    let states: Vec<_> = s
        .jobs()
        .await
        .unwrap()
        .into_iter()
        .map(|j| (j.delivery_id, j.state))
        .collect();
    assert_eq!(
        states,
        [
            ("old".to_owned(), JobState::Superseded),
            ("other-pr".to_owned(), JobState::Queued),
            ("new".to_owned(), JobState::Queued)
        ]
    );
    let mut claimed = Vec::new();
    while let Some(j) = s.claim("w", t0(), LEASE).await.unwrap() {
        claimed.push(j.delivery_id);
    }
    claimed.sort();
    assert_eq!(claimed, ["new", "other-pr"]);
}

async fn publish_state(db: &Db) {
    let s = db.open().await;
    assert_eq!(s.check_run_id("octo/repo", "aaa").await.unwrap(), None);
    s.set_check_run_id("octo/repo", "aaa", 4_000_000_001).await.unwrap();
    s.set_check_run_id("octo/repo", "bbb", 2).await.unwrap();
    s.set_check_run_id("octo/repo", "aaa", 4_000_000_003).await.unwrap();
    assert_eq!(s.check_run_id("octo/repo", "aaa").await.unwrap(), Some(4_000_000_003));
    assert_eq!(s.check_run_id("octo/repo", "bbb").await.unwrap(), Some(2));
    assert_eq!(s.check_run_id("octo/other", "aaa").await.unwrap(), None);

    assert_eq!(s.comment("octo/repo", 7).await.unwrap(), None);
    let c = CommentState {
        comment_id: 99,
        body_sha256: "ab".repeat(32),
    };
    s.set_comment("octo/repo", 7, &c).await.unwrap();
    assert_eq!(s.comment("octo/repo", 7).await.unwrap(), Some(c.clone()));
    let edited = CommentState {
        body_sha256: "cd".repeat(32),
        ..c
    };
    s.set_comment("octo/repo", 7, &edited).await.unwrap();
    assert_eq!(s.comment("octo/repo", 7).await.unwrap(), Some(edited));
    assert_eq!(s.comment("octo/repo", 8).await.unwrap(), None);
}

async fn survives_reopen(db: &Db) {
    let job = {
        let s = db.open().await;
        s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
        s.set_check_run_id("octo/repo", "a", 5).await.unwrap();
        s.claim("crashed", t0(), LEASE).await.unwrap().unwrap()
    };
    // A second open runs the migrations again (a no-op) and sees everything.
    let s = db.open().await;
    assert_eq!(
        s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap(),
        Recorded::Duplicate
    );
    assert_eq!(s.check_run_id("octo/repo", "a").await.unwrap(), Some(5));
    let again = s
        .claim("restarted", t0() + Span::seconds(61), LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.id, job.id);
}

/// A worker whose lease expired and was claimed again can no longer complete, fail or release
/// the job: the new holder decides its outcome.
async fn lease_owner_is_checked(db: &Db) {
    let s = db.open().await;
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    let job = s.claim("w1", t0(), LEASE).await.unwrap().unwrap();
    let later = t0() + Span::seconds(61);
    let again = s.claim("w2", later, LEASE).await.unwrap().unwrap();
    assert_eq!((again.id, again.attempts), (job.id, 1));

    // The stale worker w1 comes back from its stall.
    assert!(!s.complete(job.id, "w1").await.unwrap());
    assert_eq!(
        s.fail(job.id, "w1", "late failure", later).await.unwrap(),
        Failed::LeaseLost
    );
    assert!(!s.release(job.id, "w1").await.unwrap());
    let row = s.job(job.id).await.unwrap().unwrap();
    assert_eq!(
        (row.state, row.attempts, row.lease_owner.as_deref(), row.last_error),
        (JobState::Running, 1, Some("w2"), None),
        "nothing w1 did counted"
    );

    // The holder's outcome counts, once.
    assert!(s.complete(job.id, "w2").await.unwrap());
    assert_eq!(s.job(job.id).await.unwrap().unwrap().state, JobState::Done);
    assert!(
        !s.complete(job.id, "w2").await.unwrap(),
        "a done job is not completed twice"
    );
    assert_eq!(s.fail(job.id, "w2", "x", later).await.unwrap(), Failed::LeaseLost);
    assert_eq!(s.job(job.id).await.unwrap().unwrap().state, JobState::Done);
}

/// The newest delivery of an event for a head, whatever its state; other heads, repositories,
/// events and actions are not confused with it.
async fn latest_delivery(db: &Db) {
    let s = db.open().await;
    let run = |id: &str, repo: &str, sha: &str, action: &str| NewDelivery {
        delivery_id: id.to_owned(),
        event: "workflow_run".to_owned(),
        action: Some(action.to_owned()),
        repo: Some(repo.to_owned()),
        pr: Some(1),
        head_sha: Some(sha.to_owned()),
        payload: format!(r#"{{"delivery":"{id}"}}"#),
    };
    assert_eq!(
        s.latest_delivery("octo/repo", "aaa", "workflow_run", "completed")
            .await
            .unwrap(),
        None
    );
    s.record_delivery(&run("r1", "octo/repo", "aaa", "completed"), t0())
        .await
        .unwrap();
    s.record_delivery(&run("r2", "octo/repo", "aaa", "completed"), t0())
        .await
        .unwrap();
    s.record_delivery(&run("other-head", "octo/repo", "bbb", "completed"), t0())
        .await
        .unwrap();
    s.record_delivery(&run("other-repo", "octo/other", "aaa", "completed"), t0())
        .await
        .unwrap();
    s.record_delivery(&run("requested", "octo/repo", "aaa", "requested"), t0())
        .await
        .unwrap();
    s.record_delivery(&delivery("a-push", 1, "aaa"), t0()).await.unwrap();
    let latest = s
        .latest_delivery("octo/repo", "aaa", "workflow_run", "completed")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.delivery_id, "r2");
    assert_eq!(latest.payload, r#"{"delivery":"r2"}"#);

    // Done, dead or superseded, it is still the latest evidence known for that head.
    while let Some(j) = s.claim("w", t0(), LEASE).await.unwrap() {
        assert!(s.complete(j.id, "w").await.unwrap());
    }
    let latest = s
        .latest_delivery("octo/repo", "aaa", "workflow_run", "completed")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((latest.delivery_id.as_str(), latest.state), ("r2", JobState::Done));
    assert_eq!(
        s.latest_delivery("octo/repo", "bbb", "workflow_run", "completed")
            .await
            .unwrap()
            .unwrap()
            .delivery_id,
        "other-head"
    );
    assert_eq!(
        s.latest_delivery("octo/repo", "ccc", "workflow_run", "completed")
            .await
            .unwrap(),
        None
    );
}

/// The head lookup is served by an index on both backends, not a scan of every job.
async fn latest_delivery_uses_an_index(db: &Db) {
    let s = db.open().await;
    let plan: String = match &s {
        Store::Sqlite(_) => {
            let url = &db.url;
            let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
            let rows: Vec<(i64, i64, i64, String)> = sqlx::query_as(
                "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE repo = 'r' AND head_sha = 'h' AND event = 'e' \
                 AND action = 'a' ORDER BY id DESC LIMIT 1",
            )
            .fetch_all(&mut conn)
            .await
            .unwrap();
            rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("\n")
        }
        Store::Postgres(_) => {
            let schema = db.pg_schema.as_deref().unwrap();
            let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
            sqlx::raw_sql(&format!("SET search_path TO {schema}; SET enable_seqscan = off"))
                .execute(&mut conn)
                .await
                .unwrap();
            let rows: Vec<(String,)> = sqlx::query_as(
                "EXPLAIN SELECT id FROM jobs WHERE repo = 'r' AND head_sha = 'h' AND event = 'e' AND action = 'a' \
                 ORDER BY id DESC LIMIT 1",
            )
            .fetch_all(&mut conn)
            .await
            .unwrap();
            rows.into_iter().map(|r| r.0).collect::<Vec<_>>().join("\n")
        }
    };
    assert!(
        plan.contains("jobs_head"),
        "the lookup does not use the jobs_head index:\n{plan}"
    );
}

/// What was sent to a check run is remembered per check run: a new check run id for the same
/// head starts empty.
async fn published_annotations(db: &Db) {
    let s = db.open().await;
    assert!(s.published_annotations("octo/repo", "aaa", 5).await.unwrap().is_empty());
    let digests = vec!["d1".to_owned(), "d2".to_owned()];
    s.set_published_annotations("octo/repo", "aaa", 5, &digests)
        .await
        .unwrap();
    assert_eq!(s.published_annotations("octo/repo", "aaa", 5).await.unwrap(), digests);
    assert!(s.published_annotations("octo/repo", "aaa", 6).await.unwrap().is_empty());
    assert!(s.published_annotations("octo/repo", "bbb", 5).await.unwrap().is_empty());
    assert!(s
        .published_annotations("octo/other", "aaa", 5)
        .await
        .unwrap()
        .is_empty());
    let more = vec!["d1".to_owned(), "d2".to_owned(), "d3".to_owned()];
    s.set_published_annotations("octo/repo", "aaa", 5, &more).await.unwrap();
    assert_eq!(s.published_annotations("octo/repo", "aaa", 5).await.unwrap(), more);
    s.set_published_annotations("octo/repo", "aaa", 5, &[]).await.unwrap();
    assert!(s.published_annotations("octo/repo", "aaa", 5).await.unwrap().is_empty());
}

async fn renew(db: &Db) {
    let s = db.open().await;
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    let job = s.claim("w1", t0(), LEASE).await.unwrap().unwrap();
    // Renewed 50 s in: the lease now runs to 110 s.
    assert!(s.renew(job.id, "w1", t0() + Span::seconds(50), LEASE).await.unwrap());
    assert_eq!(s.claim("w2", t0() + Span::seconds(109), LEASE).await.unwrap(), None);
    let taken = s.claim("w2", t0() + Span::seconds(110), LEASE).await.unwrap().unwrap();
    assert_eq!((taken.id, taken.attempts), (job.id, 1));
    // The first worker can neither renew nor complete what it lost.
    assert!(!s.renew(job.id, "w1", t0() + Span::seconds(111), LEASE).await.unwrap());
    assert!(!s.complete(job.id, "w1").await.unwrap());
    assert!(s.renew(job.id, "w2", t0() + Span::seconds(111), LEASE).await.unwrap());
    assert!(s.complete(job.id, "w2").await.unwrap());
    assert!(
        !s.renew(job.id, "w2", t0() + Span::seconds(112), LEASE).await.unwrap(),
        "done: nothing to renew"
    );
}

async fn pr_verdicts(db: &Db) {
    let s = db.open().await;
    let v = |pr: u64, base: &str, verdict: &str, conclusion: &str| PrVerdict {
        pr,
        base_sha: base.to_owned(),
        base_ref: format!("ref-{base}"),
        verdict: verdict.to_owned(),
        conclusion: conclusion.to_owned(),
        title: format!("{verdict}: #{pr}"),
    };
    assert!(s.pr_verdicts("octo/repo", "h").await.unwrap().is_empty());
    s.set_pr_verdict("octo/repo", "h", &v(4, "evil", "PASS", "success"))
        .await
        .unwrap();
    s.set_pr_verdict("octo/repo", "h", &v(3, "main", "QUEUED", "failure"))
        .await
        .unwrap();
    s.set_pr_verdict("octo/repo", "other", &v(3, "main", "FAIL", "failure"))
        .await
        .unwrap();
    s.set_pr_verdict("octo/fork", "h", &v(9, "main", "FAIL", "failure"))
        .await
        .unwrap();
    // Per repository and head, by pull request number.
    assert_eq!(
        s.pr_verdicts("octo/repo", "h").await.unwrap(),
        [v(3, "main", "QUEUED", "failure"), v(4, "evil", "PASS", "success")]
    );
    // A pull request's verdict is replaced, never duplicated.
    s.set_pr_verdict("octo/repo", "h", &v(3, "main", "INCONCLUSIVE", "failure"))
        .await
        .unwrap();
    s.remove_pr_verdict("octo/repo", "h", 4).await.unwrap();
    assert_eq!(
        s.pr_verdicts("octo/repo", "h").await.unwrap(),
        [v(3, "main", "INCONCLUSIVE", "failure")]
    );
    assert_eq!(s.pr_verdicts("octo/repo", "other").await.unwrap().len(), 1);
    assert_eq!(s.pr_verdicts("octo/fork", "h").await.unwrap().len(), 1);
}

async fn evidence_runs(db: &Db) {
    let s = db.open().await;
    assert_eq!(s.evidence_run("octo/repo", "h").await.unwrap(), None);
    let run = |id: u64| EvidenceRun {
        run_id: id,
        workflow_path: ".github/workflows/flakegate-evidence.yml".to_owned(),
        cut_short: None,
    };
    s.set_evidence_run("octo/repo", "h", &run(1)).await.unwrap();
    s.set_evidence_run("octo/repo", "h2", &run(7)).await.unwrap();
    assert_eq!(s.evidence_run("octo/repo", "h").await.unwrap(), Some(run(1)));
    // The run judged last is the one kept.
    s.set_evidence_run("octo/repo", "h", &run(2)).await.unwrap();
    assert_eq!(s.evidence_run("octo/repo", "h").await.unwrap(), Some(run(2)));
    assert_eq!(s.evidence_run("octo/repo", "h2").await.unwrap(), Some(run(7)));
    assert_eq!(s.evidence_run("octo/other", "h").await.unwrap(), None);
    // A run that was cut short is remembered as such.
    let cancelled = EvidenceRun {
        cut_short: Some("cancelled".to_owned()),
        ..run(3)
    };
    s.set_evidence_run("octo/repo", "h", &cancelled).await.unwrap();
    assert_eq!(s.evidence_run("octo/repo", "h").await.unwrap(), Some(cancelled));
    s.set_evidence_run("octo/repo", "h", &run(4)).await.unwrap();
    assert_eq!(s.evidence_run("octo/repo", "h").await.unwrap(), Some(run(4)));

    // What is kept under a name belongs to the repository id that claimed it: the same id keeps
    // it; another id under the name (a new repository) starts afresh.
    assert!(!s.claim_repository_name("octo/repo", 41).await.unwrap());
    assert!(!s.claim_repository_name("octo/repo", 41).await.unwrap());
    assert_eq!(s.evidence_run("octo/repo", "h").await.unwrap(), Some(run(4)));
    assert!(s.claim_repository_name("octo/repo", 42).await.unwrap());
    assert_eq!(s.evidence_run("octo/repo", "h").await.unwrap(), None);
    assert_eq!(s.evidence_run("octo/repo", "h2").await.unwrap(), None);
    assert!(!s.claim_repository_name("octo/repo", 42).await.unwrap());
}

/// The `/metrics` job gauges: the four unfinished states, disjoint; done and superseded jobs
/// are not counted. `created_at` is the time the delivery was recorded.
async fn job_gauges(db: &Db) {
    use flakegate::metrics::JobGauges;
    let s = db.open().await;
    assert_eq!(s.job_gauges().await.unwrap(), JobGauges::default());
    // d1 fails three times: dead.
    s.record_delivery(&delivery("d1", 1, "a"), t0()).await.unwrap();
    let mut now = t0();
    for _ in 0..3 {
        let job = s.claim("w", now, LEASE).await.unwrap().unwrap();
        s.fail(job.id, "w", "502", now).await.unwrap();
        now += Span::hours(2);
    }
    // d2 done, d3 failed once, d4 running, d5 queued, d6 superseded.
    for (i, id) in ["d2", "d3", "d4", "d5"].iter().enumerate() {
        s.record_delivery(&delivery(id, 2 + i as u64, "a"), now).await.unwrap();
    }
    s.record_delivery(&delivery("d6", 9, "old"), now).await.unwrap();
    assert_eq!(s.supersede("octo/repo", 9, "new").await.unwrap(), 1);
    let d2 = s.claim("w", now, LEASE).await.unwrap().unwrap();
    assert_eq!(d2.created_at, now);
    assert!(s.complete(d2.id, "w").await.unwrap());
    let d3 = s.claim("w", now, LEASE).await.unwrap().unwrap();
    assert!(matches!(
        s.fail(d3.id, "w", "502", now).await.unwrap(),
        Failed::Retry { .. }
    ));
    let d4 = s.claim("w", now, LEASE).await.unwrap().unwrap();
    assert_eq!(d4.delivery_id, "d4");
    assert_eq!(
        s.job_gauges().await.unwrap(),
        JobGauges {
            queued: 1,
            failed: 1,
            running: 1,
            dead: 1,
            history_rows: 0,
        }
    );
}

/// The expired-freezes issue per repository (issue 0 stored as none), and the named locks
/// that keep one writer per repository across instances: taken when free, expired or already
/// the owner's; refused while another owner holds it; given up only by its owner.
async fn expiry_issues_and_locks(db: &Db) {
    use flakegate::store::ExpiryIssue;
    let s = db.open().await;
    assert_eq!(s.expiry_issue("octo/repo").await.unwrap(), None);
    let open = ExpiryIssue {
        issue_number: Some(12),
        list_sha256: "abc".into(),
    };
    s.set_expiry_issue("octo/repo", &open).await.unwrap();
    assert_eq!(s.expiry_issue("octo/repo").await.unwrap(), Some(open));
    let closed = ExpiryIssue {
        issue_number: None,
        list_sha256: "def".into(),
    };
    s.set_expiry_issue("octo/repo", &closed).await.unwrap();
    assert_eq!(s.expiry_issue("octo/repo").await.unwrap(), Some(closed));
    assert_eq!(s.expiry_issue("octo/other").await.unwrap(), None);

    let ttl = Duration::from_secs(60);
    assert!(s.try_lock("expiry-issue/octo/repo", "w1", t0(), ttl).await.unwrap());
    assert!(!s.try_lock("expiry-issue/octo/repo", "w2", t0(), ttl).await.unwrap());
    // Its owner may take it again (a retry of the same job); another name is free.
    assert!(s.try_lock("expiry-issue/octo/repo", "w1", t0(), ttl).await.unwrap());
    assert!(s.try_lock("expiry-issue/octo/other", "w2", t0(), ttl).await.unwrap());
    // Only the owner gives it up.
    s.unlock("expiry-issue/octo/repo", "w2").await.unwrap();
    assert!(!s.try_lock("expiry-issue/octo/repo", "w2", t0(), ttl).await.unwrap());
    s.unlock("expiry-issue/octo/repo", "w1").await.unwrap();
    assert!(s.try_lock("expiry-issue/octo/repo", "w2", t0(), ttl).await.unwrap());
    // A holder that died: the lock expires.
    assert!(!s
        .try_lock("expiry-issue/octo/repo", "w3", t0() + Span::seconds(59), ttl)
        .await
        .unwrap());
    assert!(s
        .try_lock("expiry-issue/octo/repo", "w3", t0() + Span::seconds(60), ttl)
        .await
        .unwrap());
}

/// Each case once on SQLite and once on PostgreSQL.
macro_rules! contract {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let db = super::Db::sqlite().await;
                    super::$case(&db).await;
                    db.cleanup().await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let db = super::Db::postgres(stringify!($case)).await;
                    super::$case(&db).await;
                    db.cleanup().await;
                }
            )*
        }
    };
}

pub(crate) use contract;

contract!(
    dedupe,
    claim_once_under_concurrency,
    one_job_per_head_at_a_time,
    one_job_per_head_under_concurrency,
    publications,
    lease_expiry,
    stranded_jobs_at_start,
    trim_finished,
    backoff_and_dead_letter,
    retry_after_is_kept_exactly,
    release,
    supersede,
    publish_state,
    survives_reopen,
    lease_owner_is_checked,
    latest_delivery,
    latest_delivery_uses_an_index,
    published_annotations,
    pr_verdicts,
    evidence_runs,
    renew,
    job_gauges,
    expiry_issues_and_locks,
);

#[tokio::test]
async fn open_picks_backend_by_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("x.db").display());
    assert!(matches!(
        Store::open(&url, RetryPolicy::default()).await.unwrap(),
        Store::Sqlite(_)
    ));
    let err = Store::open("mysql://x", RetryPolicy::default()).await.unwrap_err();
    assert!(err.to_string().contains("DATABASE_URL"), "{err}");
}
