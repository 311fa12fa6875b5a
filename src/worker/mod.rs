//! The job worker's loop: claim a due job from the store, hold its lease with a heartbeat
//! while it runs, and settle it — done; retried after the store's backoff, or when GitHub said;
//! or given up. What a job does is decided elsewhere: `dispatch` parses it into its typed work
//! and routes it to one of the `handlers` (one file per kind of work: fetch through `judge`, the
//! GitHub side of the one pipeline in `evidence::assemble`), and `post` sends to GitHub what
//! `present` makes.
//!
//! Failures never leave a check pending and never pass (`failure`): a retryable one is retried;
//! anything else, and a job out of attempts, completes the check run as INCONCLUSIVE (conclusion
//! `failure`) — saying why when the repository can act on it, else naming the delivery under
//! which the whole failure is logged.

mod dispatch;
mod failure;
mod handlers;
mod jobs;
mod judge;
mod post;

pub use jobs::{EVIDENCE_TIMEOUT_EVENT, SWEEP_EVENT, SWEEP_REPO_EVENT};

use crate::github::{ArtifactLimits, GithubApp, Wait};
use crate::metrics::{JobOutcome, Metrics};
use crate::runtime::{Clock, Shutdown, Task};
use crate::store::{Failed, Job, JobId, Store};
use chrono::{DateTime, Utc};
use failure::{wait_until, Failure, Fatal};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

/// How the worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Caps on the evidence artifact's download and extraction.
    pub artifact_limits: ArtifactLimits,
    /// How long a claimed job is ours before another worker may take it.
    pub lease: Duration,
    /// How often the lease of the job in hand is renewed while it runs (at most half the lease).
    pub heartbeat: Duration,
    /// How often `run` looks for due jobs when the queue is empty.
    pub poll_interval: Duration,
    /// Lease owner name in the store.
    pub worker_id: String,
    /// Artifacts are extracted below this directory (one fresh subdirectory per job).
    pub scratch_dir: PathBuf,
    /// How often every installation's repositories are swept for expired freezes
    /// (`FLAKEGATE_SWEEP_INTERVAL`); `None`: never (pushes to the default branch still count).
    pub sweep_interval: Option<Duration>,
    /// Time between two repositories' sweep jobs, to spread the API calls.
    pub sweep_pace: Duration,
    /// An installation with less rate limit left than this is skipped by the sweep.
    pub sweep_min_rate_limit: u64,
    /// How long a finished job (and with it its delivery id, for dedupe) is kept after it was
    /// recorded (`FLAKEGATE_JOB_RETENTION_DAYS`); `None`: forever.
    pub retention: Option<Duration>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            artifact_limits: ArtifactLimits::default(),
            lease: Duration::from_secs(crate::app_config::DEFAULT_JOB_LEASE_SECONDS),
            heartbeat: Duration::from_secs(crate::app_config::DEFAULT_JOB_LEASE_SECONDS / 4),
            poll_interval: Duration::from_secs(1),
            worker_id: default_worker_id(),
            scratch_dir: std::env::temp_dir(),
            sweep_interval: Some(crate::app_config::DEFAULT_SWEEP_INTERVAL),
            sweep_pace: Duration::from_secs(2),
            sweep_min_rate_limit: 1000,
            retention: Some(crate::app_config::DEFAULT_JOB_RETENTION),
        }
    }
}

/// A lease owner name unique to this process: host (containers all run as pid 1, so the pid
/// alone would give every instance the same name), pid and start time.
fn default_worker_id() -> String {
    let host = ["FLY_MACHINE_ID", "HOSTNAME", "COMPUTERNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "local".to_owned());
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("flakegate-{host}-{}-{started:x}", std::process::id())
}

/// Claims and processes jobs.
pub struct Worker {
    store: Arc<Store>,
    github: Arc<GithubApp>,
    config: WorkerConfig,
    clock: Clock,
    /// The job being processed.
    in_hand: std::sync::Mutex<Option<InHand>>,
    /// Attempts by outcome and queued→done latency (`/metrics`).
    metrics: Arc<Metrics>,
}

/// The job being processed.
struct InHand {
    id: JobId,
    /// Its delivery id: what an INCONCLUSIVE for an internal failure names.
    delivery_id: String,
    /// How to tell it its lease was lost.
    lost: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("store", &self.store)
            .field("github", &self.github)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Worker {
    pub fn new(store: Arc<Store>, github: GithubApp, config: WorkerConfig, clock: Clock) -> Self {
        Worker {
            store,
            github: Arc::new(github),
            config,
            clock,
            in_hand: std::sync::Mutex::new(None),
            metrics: Arc::default(),
        }
    }

    /// Count into `metrics` (the process's, shown on `/metrics`) instead of a private set.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    /// For `server::serve_on`: run until shutdown.
    pub fn into_task(self) -> Task {
        Box::new(move |shutdown| Box::pin(async move { self.run(shutdown).await }))
    }

    /// Claim and process jobs until none is due; returns how many were processed.
    pub async fn run_until_idle(&self) -> anyhow::Result<usize> {
        let mut n = 0;
        while let Some(job) = self
            .store
            .claim(&self.config.worker_id, self.now(), self.config.lease)
            .await?
        {
            self.handle(&job).await?;
            n += 1;
        }
        Ok(n)
    }

    /// What the worker does once as its instance starts, before the first claim: take over the
    /// jobs a killed instance left running, where the store says they are this one's
    /// ([`Store::take_over_stranded_jobs`]: on SQLite, all of them). Returns how many.
    pub async fn start(&self) -> anyhow::Result<u64> {
        let n = self.store.take_over_stranded_jobs(self.now()).await?;
        if n > 0 {
            tracing::warn!(jobs = n, "took over the jobs a previous instance left running");
        }
        Ok(n)
    }

    /// Delete the finished jobs recorded more than `retention` ago (the loop does it hourly);
    /// returns how many.
    pub async fn trim(&self) -> anyhow::Result<u64> {
        let Some(retention) = self.config.retention else {
            return Ok(0);
        };
        let window = chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::MAX);
        let before = self
            .now()
            .checked_sub_signed(window)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let n = self.store.trim_finished(before).await?;
        if n > 0 {
            tracing::info!(jobs = n, %before, "trimmed finished jobs");
        }
        Ok(n)
    }

    /// Take over what a previous instance left ([`start`](Self::start)), then poll for jobs
    /// until `shutdown`; a job in hand when it fires is released untouched.
    pub async fn run(&self, shutdown: Shutdown) -> anyhow::Result<()> {
        if let Err(e) = self.start().await {
            // Not fatal: a stranded job is still taken over when its lease runs out.
            tracing::error!("taking over the jobs left running failed: {e:#}");
        }
        // When to make sure the current interval's sweep is queued (a cheap, deduplicated insert).
        let mut sweep_check = self.now();
        // When to trim the finished jobs next (one indexed delete; several instances may).
        let mut trim_check = self.now();
        loop {
            if shutdown.is_triggered() {
                return Ok(());
            }
            if self.config.sweep_interval.is_some() && self.now() >= sweep_check {
                if let Err(e) = self.schedule_sweep().await {
                    tracing::error!("queueing the expired-freezes sweep failed: {e:#}");
                }
                sweep_check = self.now() + chrono::Duration::seconds(60);
            }
            if self.config.retention.is_some() && self.now() >= trim_check {
                if let Err(e) = self.trim().await {
                    tracing::error!("trimming finished jobs failed: {e:#}");
                }
                trim_check = self.now() + chrono::Duration::seconds(3600);
            }
            let job = match self
                .store
                .claim(&self.config.worker_id, self.now(), self.config.lease)
                .await
            {
                Ok(j) => j,
                Err(e) => {
                    tracing::error!("claiming a job failed: {e:#}");
                    None
                }
            };
            match job {
                Some(job) => {
                    tokio::select! {
                        r = self.handle(&job) => {
                            if let Err(e) = r {
                                tracing::error!(job = %job.id, "job bookkeeping failed: {e:#}");
                            }
                        }
                        _ = shutdown.clone().triggered() => {
                            tracing::info!(job = %job.id, "shutting down: releasing the job in hand");
                            self.store.release(job.id, &self.config.worker_id).await?;
                            return Ok(());
                        }
                    }
                }
                None => {
                    tokio::select! {
                        _ = tokio::time::sleep(self.config.poll_interval) => {}
                        _ = shutdown.clone().triggered() => return Ok(()),
                    }
                }
            }
        }
    }

    /// The job being processed, if any.
    fn job_in_hand(&self) -> Option<JobId> {
        self.in_hand
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|h| h.id)
    }

    /// The delivery id of the job being processed, if any.
    fn delivery_in_hand(&self) -> Option<String> {
        self.in_hand
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|h| h.delivery_id.clone())
    }

    /// Renew the lease of the job in hand until `now + lease` (the heartbeat calls this every
    /// `heartbeat`). `Some(false)`: the lease was lost — it expired and another worker claimed
    /// the job — so the job in hand is abandoned before it publishes anything more. `None`:
    /// no job in hand.
    pub async fn heartbeat(&self) -> anyhow::Result<Option<bool>> {
        let in_hand = self
            .in_hand
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|h| (h.id, h.lost.clone()));
        let Some((id, lost)) = in_hand else { return Ok(None) };
        let held = self
            .store
            .renew(id, &self.config.worker_id, self.now(), self.config.lease)
            .await?;
        if !held {
            lost.notify_one();
        }
        Ok(Some(held))
    }

    /// Process one claimed job with its lease renewed while it runs; a job whose lease is lost
    /// is dropped where it stands (the worker now holding it decides its outcome).
    async fn handle(&self, job: &Job) -> anyhow::Result<()> {
        let lost = Arc::new(tokio::sync::Notify::new());
        *self.in_hand.lock().unwrap_or_else(|p| p.into_inner()) = Some(InHand {
            id: job.id,
            delivery_id: job.delivery_id.clone(),
            lost: lost.clone(),
        });
        let every = self
            .config
            .heartbeat
            .min(self.config.lease / 2)
            .max(Duration::from_millis(10));
        let beat = async {
            loop {
                tokio::time::sleep(every).await;
                match self.heartbeat().await {
                    Ok(Some(false)) => return,
                    Ok(_) => {}
                    // The store may be restarting: the lease is not lost yet; try again next beat.
                    Err(e) => tracing::warn!(job = %job.id, "renewing the lease failed: {e:#}"),
                }
            }
        };
        let abandoned = || {
            tracing::warn!(job = %job.id, "lease lost to another worker: this job was abandoned");
            self.metrics.job(JobOutcome::LeaseLost);
            Ok(())
        };
        let result = tokio::select! {
            r = self.handle_leased(job) => r,
            () = beat => abandoned(),
            () = lost.notified() => abandoned(),
        };
        *self.in_hand.lock().unwrap_or_else(|p| p.into_inner()) = None;
        result
    }

    /// Process one claimed job and record the outcome in the store.
    async fn handle_leased(&self, job: &Job) -> anyhow::Result<()> {
        let span = tracing::info_span!(
            "job",
            job = %job.id,
            delivery_id = %job.delivery_id,
            event = %job.event,
            action = job.action.as_deref().unwrap_or(""),
            repository = job.repo.as_deref().unwrap_or(""),
            pull_request = job.pr.unwrap_or(0),
            sha = job.head_sha.as_deref().unwrap_or(""),
        );
        async {
            if job.attempts >= self.store.policy().max_attempts {
                // Out of attempts through expired leases (a worker died mid-job each time).
                let why = job
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "the worker stopped while evaluating".into());
                let why = anyhow::Error::msg(why).context(format!("gave up after {} attempts", job.attempts));
                self.give_up(job, &Fatal::Internal(why)).await;
                return self.complete(job, JobOutcome::Inconclusive).await;
            }
            match self.process(job).await {
                Ok(()) => self.complete(job, JobOutcome::Done).await,
                Err(Failure::Retryable(e)) => self.retry(job, e, None).await,
                Err(Failure::RetryAfter(e, wait)) => self.retry(job, e, Some(wait)).await,
                Err(Failure::Fatal(why)) => {
                    tracing::error!("cannot evaluate: {why}");
                    self.give_up(job, &why).await;
                    self.complete(job, JobOutcome::Inconclusive).await
                }
            }
        }
        .instrument(span)
        .await
    }

    /// A retryable failure `e`: the job is retried after the store's backoff (not before
    /// GitHub's `wait`), or, out of attempts, given up.
    async fn retry(&self, job: &Job, e: anyhow::Error, wait: Option<Wait>) -> anyhow::Result<()> {
        let now = self.now();
        let not_before = wait.map(|wait| wait_until(now, wait));
        let msg = format!("{e:#}");
        match self
            .store
            .fail_not_before(job.id, &self.config.worker_id, &msg, now, not_before)
            .await?
        {
            Failed::Retry { at } => {
                self.metrics.job(JobOutcome::Retry);
                tracing::warn!(%at, "will retry: {msg}");
            }
            Failed::Dead => {
                self.metrics.job(JobOutcome::Dead);
                tracing::error!("out of attempts: {msg}");
                let why = e.context(format!("gave up after {} attempts", self.store.policy().max_attempts));
                self.give_up(job, &Fatal::Internal(why)).await;
            }
            Failed::LeaseLost => {
                self.metrics.job(JobOutcome::LeaseLost);
                tracing::warn!("lease lost while failing ({msg}); the worker now holding the job decides");
            }
        }
        Ok(())
    }

    /// Mark the job done if we still hold its lease, counting `outcome` and how long the job
    /// took from being queued; a lease lost to another worker is logged.
    async fn complete(&self, job: &Job, outcome: JobOutcome) -> anyhow::Result<()> {
        if self.store.complete(job.id, &self.config.worker_id).await? {
            let waited = (self.now() - job.created_at).num_milliseconds();
            self.metrics.job(outcome);
            self.metrics.job_latency(waited as f64 / 1000.0);
            tracing::info!(outcome = outcome.as_str(), seconds = waited as f64 / 1000.0, "job done");
        } else {
            self.metrics.job(JobOutcome::LeaseLost);
            tracing::warn!("lease lost before completing: another worker has claimed this job");
        }
        Ok(())
    }
}
