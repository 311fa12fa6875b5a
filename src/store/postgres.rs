//! The PostgreSQL backend, for several instances sharing one queue: jobs are claimed with
//! `FOR UPDATE SKIP LOCKED` under an advisory lock, so each goes to exactly one worker and
//! no two jobs of one head run at once.

use super::job::{
    duration_ms, job_from_row, millis, sql, CommentState, EvidenceRun, ExpiryIssue, Failed, Job, JobId, JobRow,
    JobState, NewDelivery, PrVerdict, Recorded, RetryPolicy, JOB_COLUMNS,
};
use super::migrations;
use anyhow::Context as _;
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};
use std::str::FromStr as _;
use std::time::Duration;

type Db = Postgres;

/// The history's statistics after compaction (`compact_history`; ANALYZE samples), and its
/// visibility map: a read is an index-only scan only over pages VACUUM marked all-visible.
const ANALYZE_HISTORY: &[&str] =
    &["VACUUM (ANALYZE) history_tests, history_shas, history_day_counts, history_sha_counts, history_failed"];

/// Arbitrary key for the advisory lock that serialises migrations across instances.
const MIGRATION_LOCK: i64 = 0x666c_616b_6567;
/// Arbitrary key for the advisory lock that serialises job claims across instances.
const CLAIM_LOCK: i64 = 0x666c_616b_6568;

#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    pub(super) policy: RetryPolicy,
}

impl PgStore {
    pub async fn open(url: &str, policy: RetryPolicy) -> anyhow::Result<Self> {
        let options = PgConnectOptions::from_str(url).context("parsing the PostgreSQL DATABASE_URL")?;
        Self::open_with(options, policy).await
    }

    /// Open with explicit options (tests set `search_path` to a schema of their own).
    pub async fn open_with(options: PgConnectOptions, policy: RetryPolicy) -> anyhow::Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .context("connecting to PostgreSQL")?;
        let store = PgStore { pool, policy };
        store.migrate().await.context("migrating the PostgreSQL database")?;
        Ok(store)
    }

    async fn migrate(&self) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *tx)
            .await?;
        sqlx::raw_sql(migrations::CREATE_VERSION_TABLE)
            .execute(&mut *tx)
            .await?;
        let (applied,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM schema_migrations")
            .fetch_one(&mut *tx)
            .await?;
        migrations::check_version(applied, migrations::POSTGRES.len())?;
        for (i, m) in migrations::POSTGRES.iter().enumerate().skip(applied as usize) {
            sqlx::raw_sql(m).execute(&mut *tx).await?;
            sqlx::query("INSERT INTO schema_migrations (version) VALUES ($1)")
                .bind(i as i64 + 1)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub(super) async fn claim(&self, worker: &str, now: DateTime<Utc>, lease: Duration) -> anyhow::Result<Option<Job>> {
        let q = format!(
            "{}{JOB_COLUMNS}",
            sql::CLAIM.replace("{lock}", "FOR UPDATE SKIP LOCKED")
        );
        // SKIP LOCKED alone keeps two instances off one row, but not off two jobs of one head:
        // each would see no running sibling in its snapshot. The advisory lock serialises
        // claims (held to the commit), so each claim sees the one before it.
        let mut tx = self.pool.begin().await.context("claiming a job")?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(CLAIM_LOCK)
            .execute(&mut *tx)
            .await
            .context("claiming a job: the claim lock")?;
        let row: Option<JobRow> = sqlx::query_as(&q)
            .bind(worker)
            .bind(millis(now).saturating_add(duration_ms(lease)))
            .bind(millis(now))
            .fetch_optional(&mut *tx)
            .await
            .context("claiming a job")?;
        tx.commit().await.context("claiming a job")?;
        row.map(job_from_row).transpose()
    }
}

impl PgStore {
    common_store_methods!();
    common_history_methods!();
}
