//! Durable state of the App: the webhook job queue (dedupe by delivery id, leases,
//! retries with backoff, dead letters, superseded heads), what publishing needs to
//! stay idempotent (check-run and comment ids), each pull request's verdict on a shared
//! head, and the evidence workflow's run per head. Two backends behind one contract:
//! SQLite (one file, the default) and PostgreSQL (several instances sharing the work),
//! chosen by the URL's scheme. The clock is always passed in.

#[macro_use]
mod common;
#[macro_use]
mod history;
pub use history::HistoryQuery;
mod job;
mod migrations;
mod postgres;
mod sqlite;

pub use job::{
    CommentState, EvidenceRun, ExpiryIssue, Failed, Job, JobId, JobState, NewDelivery, PrVerdict, Recorded, RetryPolicy,
};
pub use postgres::PgStore;
pub use sqlite::SqliteStore;

use chrono::{DateTime, Utc};
use std::time::Duration;

/// The database behind a `DATABASE_URL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn of_url(url: &str) -> Option<Backend> {
        if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Backend::Postgres)
        } else {
            None
        }
    }
}

/// The store: one contract, two backends. An enum rather than a trait object keeps the
/// async methods plain `async fn` and still shares as `Arc<Store>`.
#[derive(Debug, Clone)]
pub enum Store {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Store::Sqlite($s) => $e,
            Store::Postgres($s) => $e,
        }
    };
}

impl Store {
    /// Open by URL scheme (`sqlite:` or `postgres://`) and run pending migrations.
    pub async fn open(url: &str, policy: RetryPolicy) -> anyhow::Result<Store> {
        match Backend::of_url(url) {
            Some(Backend::Sqlite) => Ok(Store::Sqlite(SqliteStore::open(url, policy).await?)),
            Some(Backend::Postgres) => Ok(Store::Postgres(PgStore::open(url, policy).await?)),
            None => anyhow::bail!("DATABASE_URL must start with sqlite: or postgres://"),
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Store::Sqlite(_) => Backend::Sqlite,
            Store::Postgres(_) => Backend::Postgres,
        }
    }

    /// What a starting instance does before it claims: on SQLite, where one instance runs at a
    /// time by design, every job left `running` belongs to an instance that is gone (killed
    /// mid-job), so the starting instance owns every lease: each expires now and is taken over
    /// by the next claim (counting the attempt). On PostgreSQL nothing: other instances hold
    /// live leases, and a dead one's run out after the lease (60 s by default), short for that
    /// reason. Returns how many jobs were taken back.
    pub async fn take_over_stranded_jobs(&self, now: DateTime<Utc>) -> anyhow::Result<u64> {
        match self {
            Store::Sqlite(s) => s.expire_leases(now).await,
            Store::Postgres(_) => Ok(0),
        }
    }

    pub fn policy(&self) -> RetryPolicy {
        dispatch!(self, s => s.policy)
    }

    /// Claim `repo_id`'s history for repository `name` (see the backends: an id held under
    /// another name is an error unless `rename`).
    pub async fn history_repository(&self, repo_id: i64, name: &str, rename: bool) -> anyhow::Result<()> {
        dispatch!(self, s => s.history_repository(repo_id, name, rename).await)
    }

    /// Add observations to a repository's flake history, all or none; a run (`run_key`)
    /// already recorded adds nothing and returns `None`.
    pub async fn record_history(
        &self,
        repo_id: i64,
        run_key: &str,
        observations: &[crate::gate::history::Observation],
        now: DateTime<Utc>,
    ) -> anyhow::Result<Option<u64>> {
        dispatch!(self, s => s.record_history(repo_id, run_key, observations, None, now).await)
    }

    /// [`Store::record_history`], keeping the run's own copy (read back to judge the same run
    /// again without it) of the `judged` tests alone: a head run of a whole suite adds
    /// counts for every test, but a judgement reads only its witnesses and failures.
    pub async fn record_history_judged(
        &self,
        repo_id: i64,
        run_key: &str,
        observations: &[crate::gate::history::Observation],
        judged: &std::collections::BTreeSet<crate::gate::TestId>,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Option<u64>> {
        dispatch!(self, s => s.record_history(repo_id, run_key, observations, Some(judged), now).await)
    }

    /// What a repository's history knows of the query's tests within its window.
    pub async fn history_for(
        &self,
        repo_id: i64,
        q: &HistoryQuery<'_>,
    ) -> anyhow::Result<crate::gate::history::History> {
        dispatch!(self, s => s.history_for(repo_id, q).await)
    }

    /// The run key of the latest recorded attempt of workflow run `run_id`.
    pub async fn history_run_key(&self, repo_id: i64, run_id: u64) -> anyhow::Result<Option<String>> {
        dispatch!(self, s => s.history_run_key(repo_id, run_id).await)
    }

    /// Tests that failed on a sha where they also passed, within the window.
    pub async fn history_unstable_tests(
        &self,
        repo_id: i64,
        now: DateTime<Utc>,
        window_days: u32,
    ) -> anyhow::Result<Vec<crate::gate::TestId>> {
        dispatch!(self, s => s.history_unstable_tests(repo_id, now, window_days).await)
    }

    /// Drop observations older than the window; returns the rows left.
    pub async fn compact_history(&self, now: DateTime<Utc>, window_days: u32) -> anyhow::Result<u64> {
        dispatch!(self, s => s.compact_history(now, window_days).await)
    }

    /// Delete a repository's history (the App was uninstalled from it).
    pub async fn delete_history(&self, repo_id: i64) -> anyhow::Result<()> {
        dispatch!(self, s => s.delete_history(repo_id).await)
    }

    /// Every repository id the history holds anything of.
    pub async fn history_repo_ids(&self) -> anyhow::Result<Vec<i64>> {
        dispatch!(self, s => s.history_repo_ids().await)
    }

    /// Rows the history holds, all repositories together.
    pub async fn history_size(&self) -> anyhow::Result<u64> {
        dispatch!(self, s => s.history_size().await)
    }

    /// Cheap round trip for `/healthz`.
    pub async fn ping(&self) -> anyhow::Result<()> {
        dispatch!(self, s => s.ping().await)
    }

    /// Jobs not done, by state, for `/metrics` (one indexed query).
    pub async fn job_gauges(&self) -> anyhow::Result<crate::metrics::JobGauges> {
        dispatch!(self, s => s.job_gauges().await)
    }

    /// Record a delivery and its job in one statement; a known delivery id is a `Duplicate`.
    pub async fn record_delivery(&self, d: &NewDelivery, now: DateTime<Utc>) -> anyhow::Result<Recorded> {
        dispatch!(self, s => s.record_delivery(d, now).await)
    }

    /// Delete the finished jobs (done, superseded, dead) recorded before `before`, the end of
    /// the retention window; returns how many. Dedupe by delivery id holds within the window:
    /// a redelivery of a trimmed job's delivery is a new job.
    pub async fn trim_finished(&self, before: DateTime<Utc>) -> anyhow::Result<u64> {
        dispatch!(self, s => s.trim_finished(before).await)
    }

    /// Lease the next due job to `worker`: a queued job whose time has come, or a running
    /// one whose lease expired (that counts as a failed attempt). Each job goes to one worker.
    pub async fn claim(&self, worker: &str, now: DateTime<Utc>, lease: Duration) -> anyhow::Result<Option<Job>> {
        dispatch!(self, s => s.claim(worker, now, lease).await)
    }

    /// Mark job `id` done, if `worker` still holds its lease. `false`: the lease expired and
    /// the job was claimed again (by another worker, which now owns the outcome), or it is no
    /// longer running; nothing changed.
    pub async fn complete(&self, id: JobId, worker: &str) -> anyhow::Result<bool> {
        dispatch!(self, s => s.complete(id, worker).await)
    }

    /// Count a failed attempt of `worker`'s leased job: queue again after the backoff, or dead
    /// after the last attempt; [`Failed::LeaseLost`] (and nothing changed) if `worker` no longer
    /// holds the lease.
    pub async fn fail(&self, id: JobId, worker: &str, error: &str, now: DateTime<Utc>) -> anyhow::Result<Failed> {
        dispatch!(self, s => s.fail(id, worker, error, now, None).await)
    }

    /// [`Store::fail`], but retried at `not_before` (GitHub's `Retry-After` or rate-limit
    /// reset) instead of after the backoff: never earlier, and no later.
    pub async fn fail_not_before(
        &self,
        id: JobId,
        worker: &str,
        error: &str,
        now: DateTime<Utc>,
        not_before: Option<DateTime<Utc>>,
    ) -> anyhow::Result<Failed> {
        dispatch!(self, s => s.fail(id, worker, error, now, not_before).await)
    }

    /// Give a job `worker` leased back untouched (graceful shutdown): claimable again at once.
    /// `false` if `worker` no longer held the lease.
    pub async fn release(&self, id: JobId, worker: &str) -> anyhow::Result<bool> {
        dispatch!(self, s => s.release(id, worker).await)
    }

    /// The most recent delivery of `event`.`action` recorded for `repo` at `head_sha`, in any
    /// state (re-evaluation judges the latest workflow run known for a head). Indexed.
    pub async fn latest_delivery(
        &self,
        repo: &str,
        head_sha: &str,
        event: &str,
        action: &str,
    ) -> anyhow::Result<Option<Job>> {
        dispatch!(self, s => s.latest_delivery(repo, head_sha, event, action).await)
    }

    /// `head_sha` is now the head of `repo`#`pr`: queued jobs of that pull request for any
    /// other head become `Superseded`. Returns how many.
    pub async fn supersede(&self, repo: &str, pr: u64, head_sha: &str) -> anyhow::Result<u64> {
        dispatch!(self, s => s.supersede(repo, pr, head_sha).await)
    }

    /// The head last given to `supersede`, for a running job to check before publishing.
    pub async fn current_head(&self, repo: &str, pr: u64) -> anyhow::Result<Option<String>> {
        dispatch!(self, s => s.current_head(repo, pr).await)
    }

    pub async fn job(&self, id: JobId) -> anyhow::Result<Option<Job>> {
        dispatch!(self, s => s.job(id).await)
    }

    /// All jobs, oldest first (tests and operators).
    pub async fn jobs(&self) -> anyhow::Result<Vec<Job>> {
        dispatch!(self, s => s.jobs().await)
    }

    pub async fn check_run_id(&self, repo: &str, head_sha: &str) -> anyhow::Result<Option<u64>> {
        dispatch!(self, s => s.check_run_id(repo, head_sha).await)
    }

    pub async fn set_check_run_id(&self, repo: &str, head_sha: &str, id: u64) -> anyhow::Result<()> {
        dispatch!(self, s => s.set_check_run_id(repo, head_sha, id).await)
    }

    /// Digests of the annotations already sent to check run `check_run_id` of `repo` at
    /// `head_sha` (GitHub appends annotations on every update and never removes them, so
    /// publishing again sends only new ones). Empty when none were recorded.
    pub async fn published_annotations(
        &self,
        repo: &str,
        head_sha: &str,
        check_run_id: u64,
    ) -> anyhow::Result<Vec<String>> {
        dispatch!(self, s => s.published_annotations(repo, head_sha, check_run_id).await)
    }

    /// Replace the recorded annotation digests of that check run.
    pub async fn set_published_annotations(
        &self,
        repo: &str,
        head_sha: &str,
        check_run_id: u64,
        digests: &[String],
    ) -> anyhow::Result<()> {
        dispatch!(self, s => s.set_published_annotations(repo, head_sha, check_run_id, digests).await)
    }

    /// The verdict of every pull request recorded on `repo` at `head_sha`, by number.
    pub async fn pr_verdicts(&self, repo: &str, head_sha: &str) -> anyhow::Result<Vec<PrVerdict>> {
        dispatch!(self, s => s.pr_verdicts(repo, head_sha).await)
    }

    /// Record (or replace) pull request `v.pr`'s verdict on `head_sha`.
    pub async fn set_pr_verdict(&self, repo: &str, head_sha: &str, v: &PrVerdict) -> anyhow::Result<()> {
        dispatch!(self, s => s.set_pr_verdict(repo, head_sha, v).await)
    }

    /// Forget pull request `pr`'s verdict on `head_sha` (it is closed, or has moved on).
    pub async fn remove_pr_verdict(&self, repo: &str, head_sha: &str, pr: u64) -> anyhow::Result<()> {
        dispatch!(self, s => s.remove_pr_verdict(repo, head_sha, pr).await)
    }

    /// The state kept under the repository name `repo` (check runs, comments, verdicts, the
    /// evidence runs, the expired-freezes issue) is repository `repo_id`'s from now on: when it
    /// was another repository's — renamed or transferred away, deleted, its name taken by a new
    /// one — that state is forgotten (`true`), never used for this repository.
    pub async fn claim_repository_name(&self, repo: &str, repo_id: i64) -> anyhow::Result<bool> {
        dispatch!(self, s => s.claim_repository_name(repo, repo_id).await)
    }

    /// The evidence workflow's run last judged for `head_sha`.
    pub async fn evidence_run(&self, repo: &str, head_sha: &str) -> anyhow::Result<Option<EvidenceRun>> {
        dispatch!(self, s => s.evidence_run(repo, head_sha).await)
    }

    pub async fn set_evidence_run(&self, repo: &str, head_sha: &str, run: &EvidenceRun) -> anyhow::Result<()> {
        dispatch!(self, s => s.set_evidence_run(repo, head_sha, run).await)
    }

    /// Extend `worker`'s lease on job `id` to `now + lease` (a heartbeat while the job runs).
    /// `false` if `worker` no longer holds it: another worker claimed it after it expired.
    pub async fn renew(&self, id: JobId, worker: &str, now: DateTime<Utc>, lease: Duration) -> anyhow::Result<bool> {
        dispatch!(self, s => s.renew(id, worker, now, lease).await)
    }

    pub async fn comment(&self, repo: &str, pr: u64) -> anyhow::Result<Option<CommentState>> {
        dispatch!(self, s => s.comment(repo, pr).await)
    }

    pub async fn set_comment(&self, repo: &str, pr: u64, c: &CommentState) -> anyhow::Result<()> {
        dispatch!(self, s => s.set_comment(repo, pr, c).await)
    }

    /// What was last sent to `subject` of `repo` (`check_run/<id>`) — the worker records the
    /// job and a digest of the content — written after GitHub accepted it: a job run again
    /// after its instance died mid-job does not send the same content twice.
    pub async fn publication(&self, repo: &str, subject: &str) -> anyhow::Result<Option<String>> {
        dispatch!(self, s => s.publication(repo, subject).await)
    }

    pub async fn set_publication(&self, repo: &str, subject: &str, digest: &str) -> anyhow::Result<()> {
        dispatch!(self, s => s.set_publication(repo, subject, digest).await)
    }

    /// The expired-freezes issue recorded for `repo` (`None`: the App never looked).
    pub async fn expiry_issue(&self, repo: &str) -> anyhow::Result<Option<ExpiryIssue>> {
        dispatch!(self, s => s.expiry_issue(repo).await)
    }

    pub async fn set_expiry_issue(&self, repo: &str, issue: &ExpiryIssue) -> anyhow::Result<()> {
        dispatch!(self, s => s.set_expiry_issue(repo, issue).await)
    }

    /// Take lock `name` for `owner` until `now + ttl`: `true` when it was free, had expired, or
    /// was already `owner`'s. Several instances use it to keep one writer per repository.
    pub async fn try_lock(&self, name: &str, owner: &str, now: DateTime<Utc>, ttl: Duration) -> anyhow::Result<bool> {
        dispatch!(self, s => s.try_lock(name, owner, now, ttl).await)
    }

    /// Give lock `name` up, if `owner` holds it.
    pub async fn unlock(&self, name: &str, owner: &str) -> anyhow::Result<()> {
        dispatch!(self, s => s.unlock(name, owner).await)
    }
}
