//! The SQLite backend: one file, WAL mode, writers serialised by SQLite itself.

use super::job::{
    duration_ms, job_from_row, millis, sql, CommentState, EvidenceRun, ExpiryIssue, Failed, Job, JobId, JobRow,
    JobState, NewDelivery, PrVerdict, Recorded, RetryPolicy, JOB_COLUMNS,
};
use super::migrations;
use anyhow::Context as _;
use chrono::{DateTime, Utc};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Sqlite, SqlitePool};
use std::str::FromStr as _;
use std::time::Duration;

type Db = Sqlite;

/// The history's statistics after compaction (`compact_history`): sampled, so that it costs
/// milliseconds whatever the tables hold.
const ANALYZE_HISTORY: &[&str] = &[
    "PRAGMA analysis_limit = 1000",
    "ANALYZE history_tests",
    "ANALYZE history_shas",
    "ANALYZE history_day_counts",
    "ANALYZE history_sha_counts",
    "ANALYZE history_failed",
];

#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    pub(super) policy: RetryPolicy,
}

impl SqliteStore {
    pub async fn open(url: &str, policy: RetryPolicy) -> anyhow::Result<Self> {
        let options = SqliteConnectOptions::from_str(url)
            .context("parsing the SQLite DATABASE_URL")?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10))
            // 32 MiB of page cache per connection (SQLite's default is 2 MiB): a history read
            // looks up hundreds of tests at random across the file (docs/performance.md).
            .pragma("cache_size", "-32768");
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .context("opening the SQLite database")?;
        let store = SqliteStore { pool, policy };
        store.migrate().await.context("migrating the SQLite database")?;
        Ok(store)
    }

    async fn migrate(&self) -> anyhow::Result<()> {
        // BEGIN IMMEDIATE takes the write lock first, so two processes opening the same
        // file cannot both apply a migration.
        let mut conn = self.pool.acquire().await?;
        sqlx::raw_sql("BEGIN IMMEDIATE").execute(&mut *conn).await?;
        let result: anyhow::Result<()> = async {
            sqlx::raw_sql(migrations::CREATE_VERSION_TABLE)
                .execute(&mut *conn)
                .await?;
            let (applied,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM schema_migrations")
                .fetch_one(&mut *conn)
                .await?;
            migrations::check_version(applied, migrations::SQLITE.len())?;
            for (i, m) in migrations::SQLITE.iter().enumerate().skip(applied as usize) {
                sqlx::raw_sql(m).execute(&mut *conn).await?;
                sqlx::query("INSERT INTO schema_migrations (version) VALUES ($1)")
                    .bind(i as i64 + 1)
                    .execute(&mut *conn)
                    .await?;
            }
            Ok(())
        }
        .await;
        let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
        sqlx::raw_sql(end).execute(&mut *conn).await?;
        result
    }

    pub(super) async fn claim(&self, worker: &str, now: DateTime<Utc>, lease: Duration) -> anyhow::Result<Option<Job>> {
        let q = format!("{}{JOB_COLUMNS}", sql::CLAIM.replace("{lock}", ""));
        let row: Option<JobRow> = sqlx::query_as(&q)
            .bind(worker)
            .bind(millis(now).saturating_add(duration_ms(lease)))
            .bind(millis(now))
            .fetch_optional(&self.pool)
            .await
            .context("claiming a job")?;
        row.map(job_from_row).transpose()
    }
}

impl SqliteStore {
    /// Expire every lease now: one instance runs on an SQLite file at a time, so at its start
    /// every job still `running` was left by an instance that is gone. Returns how many.
    pub(super) async fn expire_leases(&self, now: DateTime<Utc>) -> anyhow::Result<u64> {
        let n = sqlx::query::<Db>(sql::EXPIRE_LEASES)
            .bind(millis(now))
            .execute(&self.pool)
            .await
            .context("expiring the leases left by a previous instance")?
            .rows_affected();
        Ok(n)
    }
}

impl SqliteStore {
    common_store_methods!();
    common_history_methods!();
}
