//! The flake history's storage: observations in, per-test [`History`] out, compaction and
//! deletion — the same SQL on SQLite and PostgreSQL, expanded into each backend's `impl`
//! (as `common.rs` does). The judgement itself is pure, in `gate::history`.
//!
//! Bounded storage: everything older than the window is deleted by [`compact`]; passes are
//! counts (per test and day; per test and sha only where the test was probed on that sha or
//! has failed), failures are rows with their source. A repository is its numeric id.
//!
//! [`History`]: crate::gate::history::History
//! [`compact`]: crate::store::Store::compact_history

use crate::gate::history::{Observation, RunKind, Source};
use chrono::{DateTime, NaiveDate, Utc};

pub(super) const DAY_MS: i64 = 86_400_000;

/// What a judgement asks of the history.
#[derive(Debug, Clone, Copy)]
pub struct HistoryQuery<'a> {
    pub tests: &'a [crate::gate::TestId],
    pub base_sha: Option<&'a str>,
    pub head_sha: Option<&'a str>,
    pub now: DateTime<Utc>,
    pub policy: crate::gate::history::HistoryPolicy,
    /// The run key of the run being judged, when it may already be recorded: its own
    /// observations are left out (a retry or a re-evaluation judges as the first judgement did).
    pub exclude: Option<&'a str>,
}

/// Take a run's own observations of `test` out of what the store counted.
pub(super) fn subtract(
    th: &mut crate::gate::history::TestHistory,
    test: &crate::gate::TestId,
    own: &[Observation],
    base_sha: Option<&str>,
    head_sha: Option<&str>,
) {
    for o in own.iter().filter(|o| &o.test == test) {
        let (p, f) = (u64::from(o.passes), u64::from(o.failures));
        th.runs = th.runs.saturating_sub(p + f);
        th.failures = th.failures.saturating_sub(f);
        if f == 0 {
            th.passes_since_failure = th.passes_since_failure.saturating_sub(p);
        }
        if Some(o.source.sha.as_str()) == base_sha {
            th.on_base = (th.on_base.0.saturating_sub(p), th.on_base.1.saturating_sub(f));
        }
        if Some(o.source.sha.as_str()) == head_sha {
            th.on_head = (th.on_head.0.saturating_sub(p), th.on_head.1.saturating_sub(f));
        }
    }
}

/// One failure row as read back.
pub(super) type FailureRow = (String, String, Option<i64>, Option<i64>, Option<i64>, i64);

pub(super) fn source_of(row: FailureRow) -> Option<Source> {
    let (sha, kind, pr, run_id, attempt, at) = row;
    Some(Source {
        sha,
        kind: RunKind::parse(&kind)?,
        pr: pr.and_then(|n| u64::try_from(n).ok()),
        run_id: run_id.and_then(|n| u64::try_from(n).ok()),
        attempt: attempt.and_then(|n| u32::try_from(n).ok()),
        date: DateTime::<Utc>::from_timestamp_millis(at)?.date_naive(),
    })
}

/// A run's own copy, kept with its key: the observations of the tests its judgement read,
/// grouped by where they come from, so that a source (sha, run, date…) is written once and a
/// test as `[id, passes, failures]` — a few hundred witnesses take some kilobytes.
#[derive(serde::Serialize, serde::Deserialize)]
struct OwnCopy {
    groups: Vec<OwnGroup>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct OwnGroup {
    source: Source,
    counts: Vec<(crate::gate::TestId, u32, u32)>,
}

/// The run's own copy kept with its key: the observations of the `judged` tests (all without).
pub(super) fn own_copy(
    observations: &[Observation],
    judged: Option<&std::collections::BTreeSet<crate::gate::TestId>>,
) -> serde_json::Result<String> {
    let mut groups: Vec<OwnGroup> = Vec::new();
    for o in observations
        .iter()
        .filter(|o| judged.is_none_or(|keep| keep.contains(&o.test)))
    {
        let count = (o.test.clone(), o.passes, o.failures);
        match groups.iter_mut().find(|g| g.source == o.source) {
            Some(g) => g.counts.push(count),
            None => groups.push(OwnGroup {
                source: o.source.clone(),
                counts: vec![count],
            }),
        }
    }
    serde_json::to_string(&OwnCopy { groups })
}

/// A run's own copy as [`own_copy`] writes it; a list of observations as written before; an
/// empty list once compaction dropped it.
pub(super) fn read_own_copy(json: &str) -> serde_json::Result<Vec<Observation>> {
    if json.trim_start().starts_with('[') {
        return serde_json::from_str(json);
    }
    let copy: OwnCopy = serde_json::from_str(json)?;
    Ok(copy
        .groups
        .into_iter()
        .flat_map(|g| {
            let source = g.source;
            g.counts.into_iter().map(move |(test, passes, failures)| Observation {
                test,
                passes,
                failures,
                source: source.clone(),
            })
        })
        .collect())
}

/// Days a run's own copy is kept ([`sql::TRIM_OWN_COPIES`]).
pub(super) const OWN_COPY_DAYS: u32 = 14;

pub(super) fn day_of(day: i64) -> Option<NaiveDate> {
    DateTime::<Utc>::from_timestamp_millis(day.checked_mul(DAY_MS)?).map(|d| d.date_naive())
}

/// The first millisecond of the window that ends at `now`.
pub(super) fn window_start(now: DateTime<Utc>, window_days: u32) -> i64 {
    now.timestamp_millis() - i64::from(window_days) * DAY_MS
}

/// An observation is well formed: a sha, a test id, counts that fit the database.
pub(super) fn check(o: &Observation) -> anyhow::Result<()> {
    if o.source.sha.trim().is_empty() {
        anyhow::bail!(
            "an observation of {} names no sha: the history keeps runs by the code they ran",
            o.test
        );
    }
    if o.test.as_str().is_empty() {
        anyhow::bail!("an observation names no test");
    }
    Ok(())
}

pub(super) mod sql {
    pub const NAME: &str = "SELECT name FROM history_repositories WHERE repo_id = $1";
    pub const SET_NAME: &str = "INSERT INTO history_repositories (repo_id, name) VALUES ($1, $2) \
                                ON CONFLICT (repo_id) DO UPDATE SET name = excluded.name";
    /// Each run (attempt) is recorded once, however many pull requests share its head.
    /// The run's observations are kept with it, so a later judgement of the same run (a retry,
    /// a re-evaluation) reads the history without its own copy.
    pub const MARK_RECORDED: &str =
        "INSERT INTO history_recorded (repo_id, run_key, run_id, attempt, observations, at) \
                                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (repo_id, run_key) DO NOTHING";
    pub const RECORDED: &str = "SELECT observations FROM history_recorded WHERE repo_id = $1 AND run_key = $2";
    /// The latest recorded attempt of a run (what a re-evaluation judges again).
    pub const LATEST_KEY: &str = "SELECT run_key FROM history_recorded WHERE repo_id = $1 AND run_id = $2 ORDER BY \
                                  attempt DESC LIMIT 1";
    pub const ADD_DAY: &str =
        "INSERT INTO history_days (repo_id, test, day, passes, failures) VALUES ($1, $2, $3, $4, \
                               $5) ON CONFLICT (repo_id, test, day) DO UPDATE SET passes = history_days.passes + \
                               excluded.passes, failures = history_days.failures + excluded.failures";
    /// Per-sha counts: always for a probe or a failure; a head run's pass only where the test
    /// already has a row on that sha or a failure in the history (the "same code" check needs
    /// nothing else, and a full suite's passes on every base sha would be most of the database).
    pub const ADD_SHA: &str = "INSERT INTO history_sha (repo_id, test, sha, passes, failures, last_at) SELECT CAST($1 AS \
                               BIGINT), CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($4 AS BIGINT), CAST($5 AS BIGINT), \
                               CAST($6 AS BIGINT) WHERE $7 OR EXISTS (SELECT 1 FROM history_failures f WHERE f.repo_id = $1 AND \
                               f.test = $2) OR EXISTS (SELECT 1 FROM history_sha s WHERE s.repo_id = $1 AND s.test = \
                               $2 AND s.sha = $3) ON CONFLICT (repo_id, test, sha) DO UPDATE SET passes = \
                               history_sha.passes + excluded.passes, failures = history_sha.failures + \
                               excluded.failures, last_at = excluded.last_at";
    pub const ADD_FAILURE: &str = "INSERT INTO history_failures (repo_id, test, sha, kind, pr, run_id, attempt, \
                                   failures, at, run_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
    pub const STREAK: &str = "INSERT INTO history_streak (repo_id, test, passes) VALUES ($1, $2, $3) ON CONFLICT \
                              (repo_id, test) DO UPDATE SET passes = CASE WHEN $4 THEN 0 ELSE history_streak.passes + \
                              excluded.passes END";
    pub const LAST_FAILURE: &str =
        "SELECT sha, kind, pr, run_id, attempt, at FROM history_failures WHERE repo_id = $1 \
                                    AND test = $2 AND at >= $3 AND run_key <> $4 ORDER BY at DESC, id DESC LIMIT 1";
    pub const FAILURE_ON_SHA: &str = "SELECT sha, kind, pr, run_id, attempt, at FROM history_failures WHERE repo_id = \
                                      $1 AND test = $2 AND sha = $3 AND at >= $4 AND run_key <> $5 ORDER BY at DESC, id DESC \
                                      LIMIT 1";
    /// The latest failure on a sha where the test also passed.
    pub const UNSTABLE_ON: &str = "SELECT f.sha, f.kind, f.pr, f.run_id, f.attempt, f.at FROM history_failures f JOIN \
                                   history_sha s ON s.repo_id = f.repo_id AND s.test = f.test AND s.sha = f.sha WHERE \
                                   f.repo_id = $1 AND f.test = $2 AND f.at >= $3 AND s.passes > 0 AND f.run_key <> $4 \
                                   ORDER BY f.at DESC, f.id DESC LIMIT 1";
    /// Tests with a failure on a sha where they also passed, within the window.
    pub const UNSTABLE_TESTS: &str =
        "SELECT DISTINCT f.test FROM history_failures f JOIN history_sha s ON s.repo_id = \
                                      f.repo_id AND s.test = f.test AND s.sha = f.sha WHERE f.repo_id = $1 AND f.at >= \
                                      $2 AND s.passes > 0 ORDER BY f.test";
    /// Every repository id the history holds anything of.
    pub const REPO_IDS: &str = "SELECT repo_id FROM history_days UNION SELECT repo_id FROM history_recorded UNION \
                                SELECT repo_id FROM history_repositories";
    pub const COUNT: &str =
        "SELECT (SELECT COUNT(*) FROM history_days) + (SELECT COUNT(*) FROM history_sha) + (SELECT \
                             COUNT(*) FROM history_failures)";
    /// Each with the window's first day (`history_days`) or millisecond (the others).
    pub const COMPACT: [(&str, bool); 4] = [
        ("DELETE FROM history_days WHERE day < $1", true),
        ("DELETE FROM history_sha WHERE last_at < $1", false),
        ("DELETE FROM history_failures WHERE at < $1", false),
        ("DELETE FROM history_recorded WHERE at < $1", false),
    ];
    /// A run's own copy serves a later judgement of the same run (a retry, a re-evaluation,
    /// a pull request opened later on the same head): kept for `OWN_COPY_DAYS`, then dropped (a
    /// run judged again after that reads the history with its own observations in it).
    pub const TRIM_OWN_COPIES: &str =
        "UPDATE history_recorded SET observations = '[]' WHERE at < $1 AND observations <> '[]'";
    pub const COMPACT_STREAKS: &str =
        "DELETE FROM history_streak WHERE NOT EXISTS (SELECT 1 FROM history_days d WHERE \
                                       d.repo_id = history_streak.repo_id AND d.test = history_streak.test)";
    pub const DELETE: [&str; 6] = [
        "DELETE FROM history_recorded WHERE repo_id = $1",
        "DELETE FROM history_days WHERE repo_id = $1",
        "DELETE FROM history_sha WHERE repo_id = $1",
        "DELETE FROM history_failures WHERE repo_id = $1",
        "DELETE FROM history_streak WHERE repo_id = $1",
        "DELETE FROM history_repositories WHERE repo_id = $1",
    ];
}

macro_rules! common_history_methods {
    () => {
        /// Claim `repo_id`'s history for `name`; an id already held under another name is an
        /// error unless `rename` (the App follows renames; a history file must not be mixed up).
        pub(super) async fn history_repository(&self, repo_id: i64, name: &str, rename: bool) -> anyhow::Result<()> {
            use super::history::sql;
            let known: Option<(String,)> = sqlx::query_as::<Db, _>(sql::NAME)
                .bind(repo_id)
                .fetch_optional(&self.pool)
                .await
                .context("reading the history's repository")?;
            match known {
                Some((n,)) if n == name => return Ok(()),
                Some((n,)) if !rename => anyhow::bail!(
                    "this history belongs to repository {n}, not {name}: use a history file of its own per repository"
                ),
                _ => {}
            }
            sqlx::query::<Db>(sql::SET_NAME)
                .bind(repo_id)
                .bind(name)
                .execute(&self.pool)
                .await
                .context("naming the history's repository")?;
            Ok(())
        }

        /// Add observations to `repo_id`'s history, all or none (one transaction). `run_key`
        /// names the run they come from: a run already recorded adds nothing (`Ok(None)`).
        pub(super) async fn record_history(
            &self,
            repo_id: i64,
            run_key: &str,
            observations: &[crate::gate::history::Observation],
            judged: Option<&std::collections::BTreeSet<crate::gate::TestId>>,
            now: DateTime<Utc>,
        ) -> anyhow::Result<Option<u64>> {
            use super::history::{check, sql, DAY_MS};
            use crate::gate::history::RunKind;
            for o in observations {
                check(o)?;
            }
            let mut tx = self.pool.begin().await.context("recording history")?;
            let first = observations.first().map(|o| &o.source);
            let fresh = sqlx::query::<Db>(sql::MARK_RECORDED)
                .bind(repo_id)
                .bind(run_key)
                .bind(first.and_then(|s| s.run_id).map(|n| n as i64))
                .bind(first.and_then(|s| s.attempt).map(i64::from))
                .bind(super::history::own_copy(observations, judged).context("recording history")?)
                .bind(now.timestamp_millis())
                .execute(&mut *tx)
                .await
                .context("recording history")?
                .rows_affected();
            if fresh == 0 {
                return Ok(None);
            }
            let mut n = 0u64;
            for o in observations {
                if o.passes == 0 && o.failures == 0 {
                    continue;
                }
                let at = o
                    .source
                    .date
                    .and_hms_opt(12, 0, 0)
                    .map(|d| d.and_utc().timestamp_millis())
                    .unwrap_or_default();
                let (test, sha) = (o.test.as_str(), o.source.sha.as_str());
                let (passes, failures) = (i64::from(o.passes), i64::from(o.failures));
                sqlx::query::<Db>(sql::ADD_DAY)
                    .bind(repo_id)
                    .bind(test)
                    .bind(at.div_euclid(DAY_MS))
                    .bind(passes)
                    .bind(failures)
                    .execute(&mut *tx)
                    .await
                    .context("recording history (days)")?;
                if failures > 0 {
                    sqlx::query::<Db>(sql::ADD_FAILURE)
                        .bind(repo_id)
                        .bind(test)
                        .bind(sha)
                        .bind(o.source.kind.as_str())
                        .bind(o.source.pr.map(|n| n as i64))
                        .bind(o.source.run_id.map(|n| n as i64))
                        .bind(o.source.attempt.map(i64::from))
                        .bind(failures)
                        .bind(at)
                        .bind(run_key)
                        .execute(&mut *tx)
                        .await
                        .context("recording history (failures)")?;
                }
                sqlx::query::<Db>(sql::ADD_SHA)
                    .bind(repo_id)
                    .bind(test)
                    .bind(sha)
                    .bind(passes)
                    .bind(failures)
                    .bind(at)
                    .bind(o.source.kind == RunKind::Probe || failures > 0)
                    .execute(&mut *tx)
                    .await
                    .context("recording history (shas)")?;
                sqlx::query::<Db>(sql::STREAK)
                    .bind(repo_id)
                    .bind(test)
                    .bind(if failures > 0 { 0 } else { passes })
                    .bind(failures > 0)
                    .execute(&mut *tx)
                    .await
                    .context("recording history (streaks)")?;
                n += 1;
            }
            tx.commit().await.context("recording history")?;
            Ok(Some(n))
        }

        /// What `repo_id`'s history knows of `tests` within the window ending at `now`, with
        /// their counts on `base_sha` and `head_sha`. Tests it has never seen are left out.
        pub(super) async fn history_for(
            &self,
            repo_id: i64,
            q: &super::history::HistoryQuery<'_>,
        ) -> anyhow::Result<crate::gate::history::History> {
            use super::history::{day_of, source_of, sql, subtract, window_start, FailureRow, DAY_MS};
            use crate::gate::history::{History, TestHistory};
            let (tests, base_sha, head_sha) = (q.tests, q.base_sha, q.head_sha);
            let (window_days, recovery_runs) = (q.policy.window_days, q.policy.recovery_runs);
            let from = window_start(q.now, window_days);
            let exclude = q.exclude.unwrap_or("");
            let mut conn = self.pool.acquire().await.context("reading history")?;
            // A judgement of a run already recorded reads the history without that run's copy.
            let own: Option<(String,)> = match q.exclude {
                Some(key) => sqlx::query_as::<Db, _>(sql::RECORDED)
                    .bind(repo_id)
                    .bind(key)
                    .fetch_optional(&mut *conn)
                    .await
                    .context("reading history (this run)")?,
                None => None,
            };
            let own: Vec<crate::gate::history::Observation> = match own {
                Some((json,)) => super::history::read_own_copy(&json).context("reading history (this run's observations)")?,
                None => Vec::new(),
            };
            let mut out = History {
                window_days,
                recovery_runs,
                ..History::default()
            };
            // Counts for every test at once (a few statements per chunk, not per test); the
            // failures' sources only for tests that failed.
            let mut totals: std::collections::HashMap<String, (i64, i64, Option<i64>)> = Default::default();
            let mut on_sha: std::collections::HashMap<(String, String), (i64, i64)> = Default::default();
            let mut streaks: std::collections::HashMap<String, i64> = Default::default();
            for chunk in tests.chunks(400) {
                let list = |first: usize| {
                    (0..chunk.len()).map(|i| format!("${}", first + i)).collect::<Vec<_>>().join(", ")
                };
                let q = format!(
                    "SELECT test, CAST(SUM(passes) AS BIGINT), CAST(SUM(failures) AS BIGINT), MIN(day) FROM \
                     history_days WHERE repo_id = $1 AND day >= $2 AND test IN ({}) GROUP BY test",
                    list(3)
                );
                let mut query = sqlx::query_as::<Db, (String, i64, i64, Option<i64>)>(&q)
                    .bind(repo_id)
                    .bind(from.div_euclid(DAY_MS));
                for t in chunk {
                    query = query.bind(t.as_str());
                }
                for (t, p, f, d) in query.fetch_all(&mut *conn).await.context("reading history (totals)")? {
                    totals.insert(t, (p, f, d));
                }
                let q = format!(
                    "SELECT test, sha, passes, failures FROM history_sha WHERE repo_id = $1 AND last_at >= $2 AND \
                     sha IN ($3, $4) AND test IN ({})",
                    list(5)
                );
                let mut query = sqlx::query_as::<Db, (String, String, i64, i64)>(&q)
                    .bind(repo_id)
                    .bind(from)
                    .bind(base_sha.unwrap_or(""))
                    .bind(head_sha.unwrap_or(""));
                for t in chunk {
                    query = query.bind(t.as_str());
                }
                for (t, sha, p, f) in query.fetch_all(&mut *conn).await.context("reading history (shas)")? {
                    on_sha.insert((t, sha), (p, f));
                }
                let q = format!(
                    "SELECT test, passes FROM history_streak WHERE repo_id = $1 AND test IN ({})",
                    list(2)
                );
                let mut query = sqlx::query_as::<Db, (String, i64)>(&q).bind(repo_id);
                for t in chunk {
                    query = query.bind(t.as_str());
                }
                for (t, p) in query.fetch_all(&mut *conn).await.context("reading history (streaks)")? {
                    streaks.insert(t, p);
                }
            }
            for test in tests {
                let t = test.as_str();
                let Some(&(passes, failures, first_day)) = totals.get(t) else {
                    continue;
                };
                let sha_counts = |sha: Option<&str>| sha.and_then(|s| on_sha.get(&(t.to_string(), s.to_string())).copied());
                let on_base: Option<(i64, i64)> = sha_counts(base_sha);
                let (on_head, mut head_failure) = (sha_counts(head_sha), None);
                if let Some(sha) = head_sha {
                    if failures > 0 {
                        let row: Option<FailureRow> = sqlx::query_as::<Db, _>(sql::FAILURE_ON_SHA)
                            .bind(repo_id)
                            .bind(t)
                            .bind(sha)
                            .bind(from)
                            .bind(exclude)
                            .fetch_optional(&mut *conn)
                            .await
                            .context("reading history (head failures)")?;
                        head_failure = row.and_then(source_of);
                    }
                }
                let (last_failure, unstable_on) = if failures > 0 {
                    let last: Option<FailureRow> = sqlx::query_as::<Db, _>(sql::LAST_FAILURE)
                        .bind(repo_id)
                        .bind(t)
                        .bind(from)
                        .bind(exclude)
                        .fetch_optional(&mut *conn)
                        .await
                        .context("reading history (failures)")?;
                    let unstable: Option<FailureRow> = sqlx::query_as::<Db, _>(sql::UNSTABLE_ON)
                        .bind(repo_id)
                        .bind(t)
                        .bind(from)
                        .bind(exclude)
                        .fetch_optional(&mut *conn)
                        .await
                        .context("reading history (instability)")?;
                    (last.and_then(source_of), unstable.and_then(source_of))
                } else {
                    (None, None)
                };
                let streak: Option<(i64,)> = streaks.get(t).map(|&p| (p,));
                let n = |v: i64| u64::try_from(v).unwrap_or(0);
                let mut th = TestHistory {
                        runs: n(passes) + n(failures),
                        failures: n(failures),
                        since: first_day.and_then(day_of),
                        unstable_on,
                        last_failure,
                        passes_since_failure: streak.map_or(0, |(p,)| n(p)),
                        on_base: on_base.map_or((0, 0), |(p, f)| (n(p), n(f))),
                        on_head: on_head.map_or((0, 0), |(p, f): (i64, i64)| (n(p), n(f))),
                        head_failure,
                };
                subtract(&mut th, test, &own, base_sha, head_sha);
                if th.runs > 0 || th.last_failure.is_some() {
                    out.tests.insert(test.clone(), th);
                }
            }
            Ok(out)
        }

        /// The run key of the latest recorded attempt of workflow run `run_id`.
        pub(super) async fn history_run_key(&self, repo_id: i64, run_id: u64) -> anyhow::Result<Option<String>> {
            use super::history::sql;
            let key: Option<(String,)> = sqlx::query_as::<Db, _>(sql::LATEST_KEY)
                .bind(repo_id)
                .bind(run_id as i64)
                .fetch_optional(&self.pool)
                .await
                .context("reading history (runs)")?;
            Ok(key.map(|(k,)| k))
        }

        /// Tests of `repo_id` that failed on a sha where they also passed, within the window.
        pub(super) async fn history_unstable_tests(
            &self,
            repo_id: i64,
            now: DateTime<Utc>,
            window_days: u32,
        ) -> anyhow::Result<Vec<crate::gate::TestId>> {
            use super::history::{sql, window_start};
            let rows: Vec<(String,)> = sqlx::query_as::<Db, _>(sql::UNSTABLE_TESTS)
                .bind(repo_id)
                .bind(window_start(now, window_days))
                .fetch_all(&self.pool)
                .await
                .context("listing unstable tests")?;
            Ok(rows.into_iter().map(|(t,)| crate::gate::TestId::new(t)).collect())
        }

        /// Drop every observation older than the window ending at `now`. Returns the rows left.
        pub(super) async fn compact_history(&self, now: DateTime<Utc>, window_days: u32) -> anyhow::Result<u64> {
            use super::history::{sql, window_start};
            let from = window_start(now, window_days);
            let mut tx = self.pool.begin().await.context("compacting history")?;
            for (q, by_day) in sql::COMPACT {
                sqlx::query::<Db>(q)
                    .bind(if by_day { from.div_euclid(super::history::DAY_MS) } else { from })
                    .execute(&mut *tx)
                    .await
                    .context("compacting history")?;
            }
            sqlx::query::<Db>(sql::TRIM_OWN_COPIES)
                .bind(window_start(now, super::history::OWN_COPY_DAYS))
                .execute(&mut *tx)
                .await
                .context("compacting history")?;
            sqlx::query::<Db>(sql::COMPACT_STREAKS)
                .execute(&mut *tx)
                .await
                .context("compacting history")?;
            tx.commit().await.context("compacting history")?;
            // Fresh statistics for the planner: a history filled faster than the database's own
            // analysis runs (PostgreSQL's autovacuum) is otherwise read with plans made for
            // empty tables (docs/performance.md, "The flake history at scale").
            for q in ANALYZE_HISTORY {
                sqlx::query::<Db>(q).execute(&self.pool).await.context("analysing history")?;
            }
            self.history_size().await
        }

        /// Delete `repo_id`'s whole history (the App was uninstalled from it).
        pub(super) async fn delete_history(&self, repo_id: i64) -> anyhow::Result<()> {
            use super::history::sql;
            let mut tx = self.pool.begin().await.context("deleting history")?;
            for q in sql::DELETE {
                sqlx::query::<Db>(q)
                    .bind(repo_id)
                    .execute(&mut *tx)
                    .await
                    .context("deleting history")?;
            }
            tx.commit().await.context("deleting history")?;
            Ok(())
        }

        /// Every repository id the history holds anything of.
        pub(super) async fn history_repo_ids(&self) -> anyhow::Result<Vec<i64>> {
            use super::history::sql;
            let rows: Vec<(i64,)> = sqlx::query_as::<Db, _>(sql::REPO_IDS)
                .fetch_all(&self.pool)
                .await
                .context("listing the history's repositories")?;
            Ok(rows.into_iter().map(|(id,)| id).collect())
        }

        /// Rows the history holds in all (for `/metrics`).
        pub(super) async fn history_size(&self) -> anyhow::Result<u64> {
            use super::history::sql;
            let (n,): (i64,) = sqlx::query_as::<Db, _>(sql::COUNT)
                .fetch_one(&self.pool)
                .await
                .context("counting history")?;
            Ok(u64::try_from(n).unwrap_or(0))
        }
    };
}

#[cfg(test)]
mod tests;
