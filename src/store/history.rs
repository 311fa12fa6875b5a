//! The flake history's storage: observations in, per-test [`History`] out, compaction and
//! deletion — the same SQL on SQLite and PostgreSQL, expanded into each backend's `impl`
//! (as `common.rs` does). The judgement itself is pure, in `gate::history`.
//!
//! Bounded storage: everything older than the window is deleted by [`compact`]; passes are
//! counts (per test and day; per test and sha only where the test was probed on that sha or
//! has failed), failures are rows with their source. A repository is its numeric id; each test
//! node id and sha is written once (`history_tests`, `history_shas`) and the counts name them by
//! number, so a row is a few integers and a read probes integer keys.
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

/// Where a test failed: on the head sha, last, and last on a sha where it also passed.
pub(super) type FailureSources = (Option<Source>, Option<Source>, Option<Source>);

/// `$first, …` — `len` numbered placeholders for an `IN (…)` list.
pub(super) fn placeholders(first: usize, len: usize) -> String {
    (0..len)
        .map(|i| format!("${}", first + i))
        .collect::<Vec<_>>()
        .join(", ")
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

/// The tables (migrations 8 and 11): each test node id and sha once per repository
/// (`history_tests`, with the test's passing streak; `history_shas`), and counts that name them
/// by number — per test and day, per test and sha, and each failure with its source.
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
    /// A test's streak after one observation ($3: it failed; $4: its passes), and its `last_at`
    /// moved to the observation's time: the row is held until the run commits, so compaction
    /// cannot drop the test under it. Returns the test's number (none: a test not yet known).
    pub const TOUCH_TEST: &str = "UPDATE history_tests SET streak = CASE WHEN $3 THEN 0 ELSE streak + CAST($4 AS \
                                  BIGINT) END, passes = passes + CAST($4 AS BIGINT), failures = failures + CAST($6 \
                                  AS BIGINT), first_day = CASE WHEN first_day IS NULL OR first_day > CAST($7 AS \
                                  BIGINT) THEN CAST($7 AS BIGINT) ELSE first_day END, last_at = CASE WHEN last_at \
                                  >= CAST($5 AS BIGINT) THEN last_at ELSE CAST($5 AS BIGINT) END WHERE repo_id = $1 \
                                  AND test = $2 RETURNING id";
    /// A test seen for the first time; none returned when another instance added it meanwhile.
    pub const NEW_TEST: &str = "INSERT INTO history_tests (repo_id, test, streak, last_at, passes, failures, \
                                first_day) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (repo_id, test) DO NOTHING \
                                RETURNING id";
    pub const TOUCH_SHA: &str = "UPDATE history_shas SET last_at = CASE WHEN last_at > CAST($3 AS BIGINT) THEN \
                                 last_at ELSE CAST($3 AS BIGINT) END WHERE repo_id = $1 AND sha = $2 RETURNING id";
    pub const NEW_SHA: &str = "INSERT INTO history_shas (repo_id, sha, last_at) VALUES ($1, $2, $3) ON CONFLICT \
                               (repo_id, sha) DO NOTHING RETURNING id";
    pub const SHA_IDS: &str = "SELECT id, sha FROM history_shas WHERE repo_id = $1 AND sha IN ($2, $3)";
    pub const ADD_DAY: &str = "INSERT INTO history_day_counts (test_id, day, passes, failures) VALUES ($1, $2, $3, \
                               $4) ON CONFLICT (test_id, day) DO UPDATE SET passes = history_day_counts.passes + \
                               excluded.passes, failures = history_day_counts.failures + excluded.failures";
    /// Per-sha counts: always for a probe or a failure; a head run's pass only where the test
    /// already has a row on that sha or a failure in the history (the "same code" check needs
    /// nothing else, and a full suite's passes on every base sha would be most of the database).
    pub const ADD_SHA: &str = "INSERT INTO history_sha_counts (test_id, sha_id, passes, failures, last_at) SELECT \
                               CAST($1 AS BIGINT), CAST($2 AS BIGINT), CAST($3 AS BIGINT), CAST($4 AS BIGINT), \
                               CAST($5 AS BIGINT) WHERE $6 OR EXISTS (SELECT 1 FROM history_failed f WHERE \
                               f.test_id = $1) OR EXISTS (SELECT 1 FROM history_sha_counts s WHERE s.test_id = $1 \
                               AND s.sha_id = $2) ON CONFLICT (test_id, sha_id) DO UPDATE SET passes = \
                               history_sha_counts.passes + excluded.passes, failures = history_sha_counts.failures \
                               + excluded.failures, last_at = excluded.last_at";
    pub const ADD_FAILURE: &str = "INSERT INTO history_failed (test_id, sha_id, kind, pr, run_id, attempt, \
                                   failures, at, run_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
    pub const LAST_FAILURE: &str = "SELECT h.sha, f.kind, f.pr, f.run_id, f.attempt, f.at FROM history_failed f JOIN \
                                    history_shas h ON h.id = f.sha_id WHERE f.test_id = $1 AND f.at >= $2 AND \
                                    f.run_key <> $3 ORDER BY f.at DESC, f.id DESC LIMIT 1";
    pub const FAILURE_ON_SHA: &str = "SELECT h.sha, f.kind, f.pr, f.run_id, f.attempt, f.at FROM history_failed f \
                                      JOIN history_shas h ON h.id = f.sha_id WHERE f.test_id = $1 AND f.sha_id = $2 \
                                      AND f.at >= $3 AND f.run_key <> $4 ORDER BY f.at DESC, f.id DESC LIMIT 1";
    /// The latest failure on a sha where the test also passed.
    pub const UNSTABLE_ON: &str = "SELECT h.sha, f.kind, f.pr, f.run_id, f.attempt, f.at FROM history_failed f JOIN \
                                   history_sha_counts s ON s.test_id = f.test_id AND s.sha_id = f.sha_id JOIN \
                                   history_shas h ON h.id = f.sha_id WHERE f.test_id = $1 AND f.at >= $2 AND \
                                   s.passes > 0 AND f.run_key <> $3 ORDER BY f.at DESC, f.id DESC LIMIT 1";
    /// Tests with a failure on a sha where they also passed, within the window.
    pub const UNSTABLE_TESTS: &str = "SELECT DISTINCT t.test FROM history_failed f JOIN history_tests t ON t.id = \
                                      f.test_id JOIN history_sha_counts s ON s.test_id = f.test_id AND s.sha_id = \
                                      f.sha_id WHERE t.repo_id = $1 AND f.at >= $2 AND s.passes > 0 ORDER BY t.test";
    /// Every repository id the history holds anything of.
    pub const REPO_IDS: &str = "SELECT repo_id FROM history_tests UNION SELECT repo_id FROM history_recorded UNION \
                                SELECT repo_id FROM history_repositories";
    pub const COUNT: &str = "SELECT (SELECT COUNT(*) FROM history_day_counts) + (SELECT COUNT(*) FROM \
                             history_sha_counts) + (SELECT COUNT(*) FROM history_failed)";
    /// Each with the window's first day (the running totals, `history_day_counts`) or millisecond (the others);
    /// tests and shas with the first millisecond of the window's first day, so that nothing
    /// left refers to them (their `last_at` is the latest of their counts').
    pub const COMPACT: [(&str, Bound); 7] = [
        (
            "UPDATE history_tests SET passes = passes - COALESCE((SELECT SUM(d.passes) FROM history_day_counts d \
             WHERE d.test_id = history_tests.id AND d.day < $1), 0), failures = failures - COALESCE((SELECT \
             SUM(d.failures) FROM history_day_counts d WHERE d.test_id = history_tests.id AND d.day < $1), 0), \
             first_day = (SELECT MIN(d.day) FROM history_day_counts d WHERE d.test_id = history_tests.id AND d.day \
             >= $1) WHERE first_day < $1",
            Bound::Day,
        ),
        ("DELETE FROM history_day_counts WHERE day < $1", Bound::Day),
        ("DELETE FROM history_sha_counts WHERE last_at < $1", Bound::Time),
        ("DELETE FROM history_failed WHERE at < $1", Bound::Time),
        ("DELETE FROM history_recorded WHERE at < $1", Bound::Time),
        ("DELETE FROM history_tests WHERE last_at < $1", Bound::DayStart),
        ("DELETE FROM history_shas WHERE last_at < $1", Bound::DayStart),
    ];
    /// How a compaction statement's bound is given.
    #[derive(Debug, Clone, Copy)]
    pub enum Bound {
        Day,
        Time,
        DayStart,
    }
    /// A run's own copy serves a later judgement of the same run (a retry, a re-evaluation,
    /// a pull request opened later on the same head): kept for `OWN_COPY_DAYS`, then dropped (a
    /// run judged again after that reads the history with its own observations in it).
    pub const TRIM_OWN_COPIES: &str =
        "UPDATE history_recorded SET observations = '[]' WHERE at < $1 AND observations <> '[]'";
    pub const DELETE: [&str; 7] = [
        "DELETE FROM history_recorded WHERE repo_id = $1",
        "DELETE FROM history_day_counts WHERE test_id IN (SELECT id FROM history_tests WHERE repo_id = $1)",
        "DELETE FROM history_sha_counts WHERE test_id IN (SELECT id FROM history_tests WHERE repo_id = $1)",
        "DELETE FROM history_failed WHERE test_id IN (SELECT id FROM history_tests WHERE repo_id = $1)",
        "DELETE FROM history_tests WHERE repo_id = $1",
        "DELETE FROM history_shas WHERE repo_id = $1",
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
            use crate::gate::history::{Observation, RunKind};
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
            let at_of = |o: &Observation| {
                o.source
                    .date
                    .and_hms_opt(12, 0, 0)
                    .map(|d| d.and_utc().timestamp_millis())
                    .unwrap_or_default()
            };
            // Each sha once, with the latest time any of its counts is observed at.
            let mut sha_at: std::collections::HashMap<&str, i64> = Default::default();
            for o in observations.iter().filter(|o| o.passes > 0 || o.failures > 0) {
                let at = sha_at.entry(o.source.sha.as_str()).or_insert(i64::MIN);
                *at = (*at).max(at_of(o));
            }
            let mut sha_ids: std::collections::HashMap<&str, i64> = Default::default();
            for (sha, at) in sha_at {
                let mut id = None;
                for q in [sql::TOUCH_SHA, sql::NEW_SHA, sql::TOUCH_SHA] {
                    id = sqlx::query_as::<Db, (i64,)>(q)
                        .bind(repo_id)
                        .bind(sha)
                        .bind(at)
                        .fetch_optional(&mut *tx)
                        .await
                        .context("recording history (shas)")?;
                    if id.is_some() {
                        break;
                    }
                }
                let (id,) = id.with_context(|| format!("recording history: sha {sha} could not be numbered"))?;
                sha_ids.insert(sha, id);
            }
            let mut n = 0u64;
            for o in observations {
                if o.passes == 0 && o.failures == 0 {
                    continue;
                }
                let at = at_of(o);
                let (test, sha) = (o.test.as_str(), o.source.sha.as_str());
                let (passes, failures) = (i64::from(o.passes), i64::from(o.failures));
                let streak = if failures > 0 { 0 } else { passes };
                let day = at.div_euclid(DAY_MS);
                // Kept to the day, so the row's index entry moves once a day, not every run.
                let last_at = day * DAY_MS + (DAY_MS - 1);
                // The test's number, its streak moved on and its row held (a new test is added).
                let mut test_id = None;
                for fresh in [false, true, false] {
                    test_id = if fresh {
                        sqlx::query_as::<Db, (i64,)>(sql::NEW_TEST)
                            .bind(repo_id)
                            .bind(test)
                            .bind(streak)
                            .bind(last_at)
                            .bind(passes)
                            .bind(failures)
                            .bind(day)
                            .fetch_optional(&mut *tx)
                            .await
                    } else {
                        sqlx::query_as::<Db, (i64,)>(sql::TOUCH_TEST)
                            .bind(repo_id)
                            .bind(test)
                            .bind(failures > 0)
                            .bind(passes)
                            .bind(last_at)
                            .bind(failures)
                            .bind(day)
                            .fetch_optional(&mut *tx)
                            .await
                    }
                    .context("recording history (tests)")?;
                    if test_id.is_some() {
                        break;
                    }
                }
                let (test_id,) =
                    test_id.with_context(|| format!("recording history: test {test} could not be numbered"))?;
                let sha_id = *sha_ids.get(sha).context("recording history: a sha without its number")?;
                sqlx::query::<Db>(sql::ADD_DAY)
                    .bind(test_id)
                    .bind(at.div_euclid(DAY_MS))
                    .bind(passes)
                    .bind(failures)
                    .execute(&mut *tx)
                    .await
                    .context("recording history (days)")?;
                if failures > 0 {
                    sqlx::query::<Db>(sql::ADD_FAILURE)
                        .bind(test_id)
                        .bind(sha_id)
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
                    .bind(test_id)
                    .bind(sha_id)
                    .bind(passes)
                    .bind(failures)
                    .bind(at)
                    .bind(o.source.kind == RunKind::Probe || failures > 0)
                    .execute(&mut *tx)
                    .await
                    .context("recording history (shas)")?;
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
            use super::history::{day_of, sql, subtract, window_start, DAY_MS};
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
            // Counts for every test at once (a few statements per chunk, not per test, on the
            // tests' and shas' numbers); the failures' sources only for tests that failed.
            let list = super::history::placeholders;
            // Each test's number, streak and running totals (passes, failures, first day).
            let mut numbers: std::collections::HashMap<String, (i64, i64, i64, i64, Option<i64>)> = Default::default();
            for chunk in tests.chunks(400) {
                let q = format!(
                    "SELECT test, id, streak, passes, failures, first_day FROM history_tests WHERE repo_id = $1 \
                     AND test IN ({})",
                    list(2, chunk.len())
                );
                let mut query = sqlx::query_as::<Db, (String, i64, i64, i64, i64, Option<i64>)>(&q).bind(repo_id);
                for t in chunk {
                    query = query.bind(t.as_str());
                }
                for (t, id, streak, p, f, d) in query.fetch_all(&mut *conn).await.context("reading history (tests)")? {
                    numbers.insert(t, (id, streak, p, f, d));
                }
            }
            let shas: Vec<(i64, String)> = sqlx::query_as::<Db, _>(sql::SHA_IDS)
                .bind(repo_id)
                .bind(base_sha.unwrap_or(""))
                .bind(head_sha.unwrap_or(""))
                .fetch_all(&mut *conn)
                .await
                .context("reading history (shas)")?;
            let sha_id = |sha: Option<&str>| sha.and_then(|s| shas.iter().find(|(_, h)| h == s).map(|(id, _)| *id));
            let (base_id, head_id) = (sha_id(base_sha), sha_id(head_sha));
            let ids: Vec<i64> = numbers.values().map(|&(id, ..)| id).collect();
            // The totals within the window: the running totals, less the days before it that
            // compaction has not dropped yet (at most a sweep interval's worth).
            let from_day = from.div_euclid(DAY_MS);
            let stale: Vec<i64> = numbers
                .values()
                .filter(|&&(.., first)| first.is_some_and(|d| d < from_day))
                .map(|&(id, ..)| id)
                .collect();
            let before = Self::days_before(&mut conn, &stale, from_day).await?;
            let mut totals: std::collections::HashMap<i64, (i64, i64, Option<i64>)> = numbers
                .values()
                .map(|&(id, _, p, f, first)| match before.get(&id) {
                    Some(&(bp, bf, since)) => (id, (p - bp, f - bf, since)),
                    None => (id, (p, f, first)),
                })
                .collect();
            totals.retain(|_, (p, f, _)| *p > 0 || *f > 0);
            let mut on_sha: std::collections::HashMap<(i64, i64), (i64, i64)> = Default::default();
            for chunk in ids.chunks(400) {
                if base_id.is_none() && head_id.is_none() {
                    continue;
                }
                let q = format!(
                    "SELECT test_id, sha_id, passes, failures FROM history_sha_counts WHERE last_at >= $1 AND \
                     sha_id IN ($2, $3) AND test_id IN ({})",
                    list(4, chunk.len())
                );
                let mut query = sqlx::query_as::<Db, (i64, i64, i64, i64)>(&q)
                    .bind(from)
                    .bind(base_id.unwrap_or(-1))
                    .bind(head_id.unwrap_or(-1));
                for id in chunk {
                    query = query.bind(id);
                }
                for (t, sha, p, f) in query.fetch_all(&mut *conn).await.context("reading history (shas)")? {
                    on_sha.insert((t, sha), (p, f));
                }
            }
            for test in tests {
                let Some(&(id, streak, ..)) = numbers.get(test.as_str()) else {
                    continue;
                };
                let Some(&(passes, failures, first_day)) = totals.get(&id) else {
                    continue;
                };
                let sha_counts = |sha: Option<i64>| sha.and_then(|s| on_sha.get(&(id, s)).copied());
                let on_base: Option<(i64, i64)> = sha_counts(base_id);
                let on_head = sha_counts(head_id);
                let (head_failure, last_failure, unstable_on) = if failures > 0 {
                    Self::failure_sources(&mut conn, id, head_id, from, exclude).await?
                } else {
                    (None, None, None)
                };
                let n = |v: i64| u64::try_from(v).unwrap_or(0);
                let mut th = TestHistory {
                    runs: n(passes) + n(failures),
                    failures: n(failures),
                    since: first_day.and_then(day_of),
                    unstable_on,
                    last_failure,
                    passes_since_failure: n(streak),
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

        /// For each of `ids` (tests with counts before the window's first day `from_day`): the
        /// passes and failures before it, and the first day it has counts within the window.
        async fn days_before(
            conn: &mut sqlx::pool::PoolConnection<Db>,
            ids: &[i64],
            from_day: i64,
        ) -> anyhow::Result<std::collections::HashMap<i64, (i64, i64, Option<i64>)>> {
            let mut out: std::collections::HashMap<i64, (i64, i64, Option<i64>)> = Default::default();
            for chunk in ids.chunks(400) {
                let list = super::history::placeholders(2, chunk.len());
                // Each a seek on the counts' key (test, day): the few days before the window, and
                // the first day within it — never every day of a test.
                let q = format!(
                    "SELECT t.id, CAST(COALESCE((SELECT SUM(d.passes) FROM history_day_counts d WHERE d.test_id = \
                     t.id AND d.day < $1), 0) AS BIGINT), CAST(COALESCE((SELECT SUM(d.failures) FROM \
                     history_day_counts d WHERE d.test_id = t.id AND d.day < $1), 0) AS BIGINT), (SELECT MIN(d.day) \
                     FROM history_day_counts d WHERE d.test_id = t.id AND d.day >= $1) FROM history_tests t WHERE \
                     t.id IN ({list})"
                );
                let mut query = sqlx::query_as::<Db, (i64, i64, i64, Option<i64>)>(&q).bind(from_day);
                for id in chunk {
                    query = query.bind(id);
                }
                for (id, p, f, since) in query.fetch_all(&mut **conn).await.context("reading history (window)")? {
                    out.insert(id, (p, f, since));
                }
            }
            Ok(out)
        }

        /// Where a test that failed in the window failed: on the head sha (when known), last,
        /// and last on a sha where it also passed — each leaving out the run `exclude`.
        async fn failure_sources(
            conn: &mut sqlx::pool::PoolConnection<Db>,
            id: i64,
            head_id: Option<i64>,
            from: i64,
            exclude: &str,
        ) -> anyhow::Result<super::history::FailureSources> {
            use super::history::{source_of, sql, FailureRow};
            let head: Option<FailureRow> = match head_id {
                Some(sha) => sqlx::query_as::<Db, _>(sql::FAILURE_ON_SHA)
                    .bind(id)
                    .bind(sha)
                    .bind(from)
                    .bind(exclude)
                    .fetch_optional(&mut **conn)
                    .await
                    .context("reading history (head failures)")?,
                None => None,
            };
            let last: Option<FailureRow> = sqlx::query_as::<Db, _>(sql::LAST_FAILURE)
                .bind(id)
                .bind(from)
                .bind(exclude)
                .fetch_optional(&mut **conn)
                .await
                .context("reading history (failures)")?;
            let unstable: Option<FailureRow> = sqlx::query_as::<Db, _>(sql::UNSTABLE_ON)
                .bind(id)
                .bind(from)
                .bind(exclude)
                .fetch_optional(&mut **conn)
                .await
                .context("reading history (instability)")?;
            Ok((
                head.and_then(source_of),
                last.and_then(source_of),
                unstable.and_then(source_of),
            ))
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
            let day_start = from.div_euclid(super::history::DAY_MS) * super::history::DAY_MS;
            for (q, bound) in sql::COMPACT {
                let bound = match bound {
                    sql::Bound::Day => from.div_euclid(super::history::DAY_MS),
                    sql::Bound::Time => from,
                    sql::Bound::DayStart => day_start,
                };
                sqlx::query::<Db>(q)
                    .bind(bound)
                    .execute(&mut *tx)
                    .await
                    .context("compacting history")?;
            }
            sqlx::query::<Db>(sql::TRIM_OWN_COPIES)
                .bind(window_start(now, super::history::OWN_COPY_DAYS))
                .execute(&mut *tx)
                .await
                .context("compacting history")?;
            tx.commit().await.context("compacting history")?;
            // Fresh statistics for the planner: a history filled faster than the database's own
            // analysis runs (PostgreSQL's autovacuum) is otherwise read with plans made for
            // empty tables (docs/performance.md, "The flake history at scale").
            for q in ANALYZE_HISTORY {
                // Outside any transaction (VACUUM must be), as one simple statement.
                sqlx::raw_sql(q).execute(&self.pool).await.context("analysing history")?;
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
