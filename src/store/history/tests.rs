use super::*;
use crate::gate::TestId;
use chrono::NaiveDate;

fn o(test: &str, sha: &str, kind: RunKind, passes: u32, failures: u32) -> Observation {
    Observation {
        test: TestId::new(test),
        passes,
        failures,
        source: Source {
            sha: sha.into(),
            kind,
            pr: Some(3),
            run_id: Some(77),
            attempt: Some(1),
            date: NaiveDate::from_ymd_opt(2026, 11, 20).unwrap(),
        },
    }
}

#[test]
fn a_runs_own_copy_reads_back_as_written_and_holds_only_the_judged_tests() {
    let run = vec![
        o("w1", "base", RunKind::Probe, 6, 1),
        o("bystander", "base", RunKind::Head, 1, 0),
        o("w2", "base", RunKind::Probe, 7, 0),
        o("w1", "head", RunKind::Head, 0, 1),
    ];
    // Grouped by source, so read back in another order: the same observations.
    let sorted = |mut v: Vec<Observation>| {
        v.sort_by(|a, b| (&a.test, &a.source).cmp(&(&b.test, &b.source)));
        v
    };
    let all = own_copy(&run, None).unwrap();
    assert_eq!(sorted(read_own_copy(&all).unwrap()), sorted(run.clone()));
    let judged = [TestId::new("w1"), TestId::new("w2")].into_iter().collect();
    let kept = own_copy(&run, Some(&judged)).unwrap();
    let back = read_own_copy(&kept).unwrap();
    assert_eq!(
        sorted(back.clone()),
        sorted(vec![run[0].clone(), run[2].clone(), run[3].clone()])
    );
    // Each source is written once: shorter than the observations one by one.
    assert!(kept.len() < serde_json::to_string(&back).unwrap().len(), "{kept}");
}

#[test]
fn a_copy_written_as_a_list_of_observations_or_dropped_still_reads() {
    let run = vec![o("w1", "base", RunKind::Probe, 6, 1)];
    let before = serde_json::to_string(&run).unwrap();
    assert_eq!(read_own_copy(&before).unwrap(), run);
    assert_eq!(read_own_copy("[]").unwrap(), Vec::<Observation>::new());
    assert!(read_own_copy("{\"groups\": 3}").is_err());
}

/// A history recorded before tests and shas were numbered reads the same after the migration:
/// counts, streaks, failures with their sources, the instability.
#[tokio::test]
async fn the_numbering_migration_keeps_every_count() {
    use crate::store::migrations;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    {
        let opts = <sqlx::sqlite::SqliteConnectOptions as std::str::FromStr>::from_str(&url)
            .unwrap()
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(opts).await.unwrap();
        sqlx::raw_sql(migrations::CREATE_VERSION_TABLE)
            .execute(&pool)
            .await
            .unwrap();
        for (i, m) in migrations::SQLITE.iter().take(10).enumerate() {
            sqlx::raw_sql(m).execute(&pool).await.unwrap();
            sqlx::query("INSERT INTO schema_migrations (version) VALUES ($1)")
                .bind(i as i64 + 1)
                .execute(&pool)
                .await
                .unwrap();
        }
        // As the tenth schema held them: test a unstable on sha s1, b passing only.
        let day = 20_400_i64;
        let at = day * DAY_MS + 43_200_000;
        sqlx::raw_sql(&format!(
            "INSERT INTO history_days VALUES (5, 'a', {day}, 6, 1), (5, 'b', {day}, 9, 0);
             INSERT INTO history_sha VALUES (5, 'a', 's1', 6, 1, {at}), (5, 'b', 's1', 9, 0, {at});
             INSERT INTO history_failures (repo_id, test, sha, kind, pr, run_id, attempt, failures, run_key, at)
                 VALUES (5, 'a', 's1', 'probe', 12, 345, 1, 1, 'run:345:1', {at});
             INSERT INTO history_streak VALUES (5, 'a', 2), (5, 'b', 9);"
        ))
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
    let store = crate::store::Store::open(&url, crate::store::RetryPolicy::default())
        .await
        .unwrap();
    let now = DateTime::<Utc>::from_timestamp_millis(20_405 * DAY_MS).unwrap();
    let tests = [TestId::new("a"), TestId::new("b")];
    let q = HistoryQuery {
        tests: &tests,
        base_sha: Some("s1"),
        head_sha: None,
        now,
        policy: crate::gate::history::HistoryPolicy::default(),
        exclude: None,
    };
    let h = store.history_for(5, &q).await.unwrap();
    let a = &h.tests[&TestId::new("a")];
    assert_eq!(
        (a.runs, a.failures, a.on_base, a.passes_since_failure),
        (7, 1, (6, 1), 2)
    );
    let seen = a.unstable_on.as_ref().unwrap();
    assert_eq!((seen.sha.as_str(), seen.pr, seen.run_id), ("s1", Some(12), Some(345)));
    let b = &h.tests[&TestId::new("b")];
    assert_eq!(
        (b.runs, b.failures, b.on_base, b.passes_since_failure),
        (9, 0, (9, 0), 9)
    );
    assert_eq!(store.history_size().await.unwrap(), 5);
    // Recording goes on from the migrated rows.
    let more = [Observation {
        test: TestId::new("a"),
        passes: 3,
        failures: 0,
        source: Source {
            sha: "s1".into(),
            kind: RunKind::Probe,
            pr: Some(13),
            run_id: Some(346),
            attempt: Some(1),
            date: now.date_naive(),
        },
    }];
    store.record_history(5, "run:346:1", &more, now).await.unwrap();
    let h = store.history_for(5, &q).await.unwrap();
    let a = &h.tests[&TestId::new("a")];
    assert_eq!((a.runs, a.on_base, a.passes_since_failure), (10, (9, 1), 5));
}
