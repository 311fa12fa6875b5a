//! The flake history's storage contract, on SQLite and PostgreSQL (`store.rs`'s `Db`): what is
//! recorded is read back per test and sha, a run is recorded once, the window and deletion
//! forget what they should, and a repository is its id.

use chrono::{DateTime, Duration as Span, NaiveDate, TimeZone as _, Utc};
use flakegate::gate::{HistoryPolicy, Observation, RunKind, Source, TestId};
use flakegate::store::HistoryQuery;

use crate::store::{contract, Db};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap()
}

fn day(offset: i64) -> NaiveDate {
    (now() + Span::days(offset)).date_naive()
}

fn obs(test: &str, sha: &str, kind: RunKind, passes: u32, failures: u32, pr: u64, date: NaiveDate) -> Observation {
    Observation {
        test: TestId::new(test),
        passes,
        failures,
        source: Source {
            sha: sha.into(),
            kind,
            pr: Some(pr),
            run_id: Some(9000 + pr),
            attempt: Some(1),
            date,
        },
    }
}

fn t(s: &str) -> TestId {
    TestId::new(s)
}

const REPO: i64 = 4242;

fn q<'a>(tests: &'a [TestId], base: Option<&'a str>) -> HistoryQuery<'a> {
    HistoryQuery {
        tests,
        base_sha: base,
        head_sha: None,
        now: now(),
        policy: HistoryPolicy::default(),
        exclude: None,
    }
}

async fn per_sha_counts_and_instability(db: &Db) {
    let s = db.open().await;
    // PR 1's probe on `base` sees `flaky` fail once in 7; PR 2's only passes.
    let r1 = s
        .record_history(
            REPO,
            "run:9001:1",
            &[
                obs("flaky", "base", RunKind::Probe, 6, 1, 1, day(-2)),
                obs("steady", "base", RunKind::Probe, 7, 0, 1, day(-2)),
            ],
            now(),
        )
        .await
        .unwrap();
    assert_eq!(r1, Some(2));
    s.record_history(
        REPO,
        "run:9002:1",
        &[obs("flaky", "base", RunKind::Probe, 7, 0, 2, day(-1))],
        now(),
    )
    .await
    .unwrap();
    let h = s
        .history_for(REPO, &q(&[t("flaky"), t("steady"), t("never")], Some("base")))
        .await
        .unwrap();
    assert!(!h.tests.contains_key(&t("never")), "a test never seen is left out");
    let f = &h.tests[&t("flaky")];
    assert_eq!((f.runs, f.failures, f.on_base), (14, 1, (13, 1)));
    assert_eq!(f.since, Some(day(-2)));
    let seen = f.unstable_on.as_ref().expect("failed and passed on one sha");
    assert_eq!((seen.pr, seen.run_id, seen.sha.as_str()), (Some(1), Some(9001), "base"));
    assert_eq!(f.passes_since_failure, 7);
    let st = &h.tests[&t("steady")];
    assert_eq!((st.runs, st.failures, st.unstable_on.is_none()), (7, 0, true));
    assert_eq!(
        s.history_unstable_tests(REPO, now(), 90).await.unwrap(),
        vec![t("flaky")]
    );
    // Another sha's passes are not "the same code": a failure on `old` alone is no instability.
    let h = s.history_for(REPO, &q(&[t("flaky")], Some("other"))).await.unwrap();
    assert_eq!(h.tests[&t("flaky")].on_base, (0, 0));
}

async fn a_run_is_recorded_once(db: &Db) {
    let s = db.open().await;
    let o = [obs("a", "base", RunKind::Probe, 1, 1, 1, day(0))];
    assert_eq!(s.record_history(REPO, "run:1:1", &o, now()).await.unwrap(), Some(1));
    assert_eq!(s.record_history(REPO, "run:1:1", &o, now()).await.unwrap(), None);
    // The next attempt of the same run is a new run.
    assert_eq!(s.record_history(REPO, "run:1:2", &o, now()).await.unwrap(), Some(1));
    let h = s.history_for(REPO, &q(&[t("a")], Some("base"))).await.unwrap();
    assert_eq!(h.tests[&t("a")].runs, 4);
}

async fn head_passes_are_counts_unless_the_test_has_failed(db: &Db) {
    let s = db.open().await;
    // A head run's pass of a test that never failed: counted per day, not per sha.
    s.record_history(REPO, "k1", &[obs("a", "s1", RunKind::Head, 1, 0, 1, day(0))], now())
        .await
        .unwrap();
    let h = s.history_for(REPO, &q(&[t("a")], Some("s1"))).await.unwrap();
    assert_eq!((h.tests[&t("a")].runs, h.tests[&t("a")].on_base), (1, (0, 0)));
    // Once it has failed, its passes on a sha are kept, so a later pass on the failure's sha
    // shows it unstable.
    s.record_history(REPO, "k2", &[obs("a", "s2", RunKind::Head, 0, 1, 2, day(0))], now())
        .await
        .unwrap();
    s.record_history(REPO, "k3", &[obs("a", "s2", RunKind::Head, 1, 0, 3, day(0))], now())
        .await
        .unwrap();
    let h = s.history_for(REPO, &q(&[t("a")], Some("s2"))).await.unwrap();
    let a = &h.tests[&t("a")];
    assert_eq!((a.runs, a.failures, a.on_base), (3, 1, (1, 1)));
    assert_eq!(a.unstable_on.as_ref().map(|s| s.kind), Some(RunKind::Head));
    assert_eq!(a.passes_since_failure, 1);
}

async fn window_and_deletion(db: &Db) {
    let s = db.open().await;
    s.record_history(
        REPO,
        "old",
        &[obs("a", "s", RunKind::Probe, 3, 1, 1, day(-100))],
        now() - Span::days(100),
    )
    .await
    .unwrap();
    s.record_history(REPO, "new", &[obs("a", "t", RunKind::Probe, 7, 0, 2, day(-1))], now())
        .await
        .unwrap();
    s.record_history(7, "other", &[obs("a", "t", RunKind::Probe, 7, 0, 2, day(-1))], now())
        .await
        .unwrap();
    // Older than the window: not read, then compacted away.
    let h = s.history_for(REPO, &q(&[t("a")], Some("s"))).await.unwrap();
    let a = &h.tests[&t("a")];
    assert_eq!(
        (a.runs, a.failures, a.unstable_on.is_none(), a.on_base),
        (7, 0, true, (0, 0))
    );
    assert_eq!(
        a.since,
        Some(day(-1)),
        "the window's first day with a count, not the dropped one"
    );
    let before = s.history_size().await.unwrap();
    let after = s.compact_history(now(), 90).await.unwrap();
    assert!(after < before, "compaction dropped the old rows ({before} → {after})");
    // The running totals lost the dropped days, and only them.
    let h = s.history_for(REPO, &q(&[t("a")], Some("t"))).await.unwrap();
    let a = &h.tests[&t("a")];
    assert_eq!((a.runs, a.failures, a.since, a.on_base), (7, 0, Some(day(-1)), (7, 0)));
    // Uninstalled from REPO: its history goes, the other repository's stays.
    s.delete_history(REPO).await.unwrap();
    let h = s.history_for(REPO, &q(&[t("a")], Some("t"))).await.unwrap();
    assert!(h.tests.is_empty());
    let h = s.history_for(7, &q(&[t("a")], Some("t"))).await.unwrap();
    assert_eq!(h.tests[&t("a")].runs, 7);
}

async fn a_repository_is_its_id(db: &Db) {
    let s = db.open().await;
    s.history_repository(REPO, "octo/repo", false).await.unwrap();
    s.history_repository(REPO, "octo/repo", false).await.unwrap();
    let err = s.history_repository(REPO, "octo/other", false).await.unwrap_err();
    assert!(err.to_string().contains("belongs to repository octo/repo"), "{err}");
    // The App follows a rename.
    s.history_repository(REPO, "octo/renamed", true).await.unwrap();
    s.history_repository(REPO, "octo/renamed", false).await.unwrap();
}

async fn a_failed_write_records_nothing(db: &Db) {
    let s = db.open().await;
    let bad = [
        obs("a", "base", RunKind::Probe, 1, 1, 1, day(0)),
        obs("b", "", RunKind::Probe, 1, 0, 1, day(0)),
    ];
    let err = s.record_history(REPO, "k", &bad, now()).await.unwrap_err();
    assert!(err.to_string().contains("names no sha"), "{err}");
    assert_eq!(s.history_size().await.unwrap(), 0);
    // The run was not marked recorded either.
    assert_eq!(s.record_history(REPO, "k", &bad[..1], now()).await.unwrap(), Some(1));
}

/// Judging a run again (a retry, a re-evaluation) reads the history without its own copy.
async fn a_run_judged_again_reads_the_history_without_itself(db: &Db) {
    let s = db.open().await;
    s.record_history(
        REPO,
        "run:1:1",
        &[obs("a", "base", RunKind::Probe, 6, 1, 1, day(-1))],
        now(),
    )
    .await
    .unwrap();
    s.record_history(
        REPO,
        "run:2:1",
        &[obs("a", "base", RunKind::Probe, 7, 0, 2, day(0))],
        now(),
    )
    .await
    .unwrap();
    let tests = [t("a")];
    let mut query = q(&tests, Some("base"));
    let all = s.history_for(REPO, &query).await.unwrap();
    assert_eq!((all.tests[&t("a")].runs, all.tests[&t("a")].on_base), (14, (13, 1)));
    query.exclude = Some("run:2:1");
    let without_2 = s.history_for(REPO, &query).await.unwrap();
    assert_eq!(
        (without_2.tests[&t("a")].runs, without_2.tests[&t("a")].on_base),
        (7, (6, 1))
    );
    query.exclude = Some("run:1:1");
    let without_1 = s.history_for(REPO, &query).await.unwrap();
    let a = &without_1.tests[&t("a")];
    assert_eq!((a.runs, a.failures, a.on_base), (7, 0, (7, 0)));
    assert!(
        a.last_failure.is_none() && a.unstable_on.is_none(),
        "run 1's failure is its own: {a:?}"
    );
    assert_eq!(s.history_run_key(REPO, 9002).await.unwrap().as_deref(), Some("run:2:1"));
}

async fn a_run_keeps_its_own_copy_of_the_tests_it_judged(db: &Db) {
    let s = db.open().await;
    // A head run of the whole suite: `w` (a witness, judged) and `bystander` (a test that ran
    // no changed line: counted for the base, never read by this run's judgement).
    let judged = [t("w")].into_iter().collect();
    let run = [
        obs("w", "base", RunKind::Probe, 6, 1, 1, day(0)),
        obs("bystander", "base", RunKind::Head, 1, 0, 1, day(0)),
    ];
    let added = s
        .record_history_judged(REPO, "run:1:1", &run, &judged, now())
        .await
        .unwrap();
    assert_eq!(added, Some(2), "both are counted");
    let tests = [t("w"), t("bystander")];
    let mut query = q(&tests, Some("base"));
    let all = s.history_for(REPO, &query).await.unwrap();
    assert_eq!((all.tests[&t("w")].runs, all.tests[&t("bystander")].runs), (7, 1));
    // Judged again, the run reads the history without its own copy of what it judged.
    query.exclude = Some("run:1:1");
    let again = s.history_for(REPO, &query).await.unwrap();
    assert!(!again.tests.contains_key(&t("w")), "{again:?}");
    // The run's copy holds the judged tests only: a bystander's count stays (no judgement of
    // this run reads it).
    assert_eq!(again.tests[&t("bystander")].runs, 1);
}

async fn a_runs_own_copy_is_dropped_after_two_weeks(db: &Db) {
    let s = db.open().await;
    let judged = [t("w")].into_iter().collect();
    let run = [obs("w", "base", RunKind::Probe, 6, 1, 1, day(-20))];
    s.record_history_judged(REPO, "old", &run, &judged, now() - Span::days(20))
        .await
        .unwrap();
    let fresh = [obs("w", "base", RunKind::Probe, 7, 0, 2, day(-1))];
    s.record_history_judged(REPO, "fresh", &fresh, &judged, now() - Span::days(1))
        .await
        .unwrap();
    s.compact_history(now(), 90).await.unwrap();
    let tests = [t("w")];
    let mut query = q(&tests, Some("base"));
    // Judged again after two weeks, the old run reads the history with itself in it; a run
    // of yesterday still reads it without itself.
    query.exclude = Some("old");
    assert_eq!(s.history_for(REPO, &query).await.unwrap().tests[&t("w")].runs, 14);
    query.exclude = Some("fresh");
    assert_eq!(s.history_for(REPO, &query).await.unwrap().tests[&t("w")].runs, 7);
    // Still recorded once: the key outlives its copy.
    assert_eq!(s.record_history(REPO, "old", &run, now()).await.unwrap(), None);
}

/// Compaction drops what nothing in the window refers to — a test's and a sha's name too — and
/// a test seen again later starts afresh.
async fn compaction_drops_names_nothing_refers_to(db: &Db) {
    let s = db.open().await;
    let (old, fresh) = (9, 10);
    s.record_history(
        old,
        "old",
        &[obs("gone", "sha-old", RunKind::Probe, 3, 1, 1, day(-100))],
        now() - Span::days(100),
    )
    .await
    .unwrap();
    s.record_history(
        fresh,
        "new",
        &[obs("kept", "sha-new", RunKind::Probe, 7, 0, 2, day(-1))],
        now(),
    )
    .await
    .unwrap();
    let mut ids = s.history_repo_ids().await.unwrap();
    ids.sort();
    assert_eq!(ids, vec![old, fresh]);
    s.compact_history(now(), 90).await.unwrap();
    // Nothing of the old repository's test is left (its run's key went with the window too).
    assert_eq!(s.history_repo_ids().await.unwrap(), vec![fresh]);
    s.record_history(
        old,
        "again",
        &[obs("gone", "sha-old", RunKind::Probe, 2, 0, 3, day(0))],
        now(),
    )
    .await
    .unwrap();
    let h = s.history_for(old, &q(&[t("gone")], Some("sha-old"))).await.unwrap();
    let g = &h.tests[&t("gone")];
    assert_eq!(
        (g.runs, g.failures, g.on_base, g.passes_since_failure),
        (2, 0, (2, 0), 2)
    );
    assert_eq!(
        s.history_for(fresh, &q(&[t("kept")], Some("sha-new")))
            .await
            .unwrap()
            .tests[&t("kept")]
            .runs,
        7
    );
}

contract!(
    compaction_drops_names_nothing_refers_to,
    a_runs_own_copy_is_dropped_after_two_weeks,
    a_run_keeps_its_own_copy_of_the_tests_it_judged,
    a_run_judged_again_reads_the_history_without_itself,
    per_sha_counts_and_instability,
    a_run_is_recorded_once,
    head_passes_are_counts_unless_the_test_has_failed,
    window_and_deletion,
    a_repository_is_its_id,
    a_failed_write_records_nothing,
);
