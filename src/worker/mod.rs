//! The job worker: claims durable webhook jobs from the store, parses each into its typed
//! [`Event`] and turns it into GitHub calls — a queued check run when a pull request gets a
//! new head, an evaluation when a workflow run brings evidence (`judge`: fetch, the one
//! pipeline in `evidence::assemble`, publish), re-evaluation and re-runs on request — and
//! publishes the check run and the sticky comment idempotently (`publishing`).
//!
//! Failures never leave a check pending and never pass: a retryable GitHub error is retried
//! with the store's backoff; anything else, and a job out of attempts, completes the check
//! run as INCONCLUSIVE (conclusion `failure`) saying why.

mod judge;
mod merge_group;
mod publishing;
mod sweep;

use crate::evidence::assemble::{ConfigRead, Named};
use crate::gate::config::{Config, CONFIG_PATH};
use crate::github::event::{Envelope, Event, PullRequestEvent, RequestedAction};
use crate::github::{
    ArtifactLimits, CommitSha, GithubApp, GithubError, InstallationClient, InstallationId, PullNumber, RepoName, Wait,
    CHECK_NAME,
};
use crate::metrics::{JobOutcome, Metrics};
use crate::present;
use crate::runtime::{Clock, Shutdown, Task};
use crate::store::{Failed, Job, JobId, NewDelivery, PrVerdict, Store};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

/// The worker's own delayed job: when it comes due and the check run is still not completed,
/// no evidence arrived in time and the check completes as INCONCLUSIVE saying what it waited for.
pub const EVIDENCE_TIMEOUT_EVENT: &str = "flakegate_evidence_timeout";

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
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            artifact_limits: ArtifactLimits::default(),
            lease: Duration::from_secs(600),
            heartbeat: Duration::from_secs(150),
            poll_interval: Duration::from_secs(1),
            worker_id: default_worker_id(),
            scratch_dir: std::env::temp_dir(),
            sweep_interval: Some(crate::app_config::DEFAULT_SWEEP_INTERVAL),
            sweep_pace: Duration::from_secs(2),
            sweep_min_rate_limit: 1000,
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
    /// The job being processed, and how to tell it its lease was lost.
    in_hand: std::sync::Mutex<Option<(JobId, Arc<tokio::sync::Notify>)>>,
    /// Attempts by outcome and queued→done latency (`/metrics`).
    metrics: Arc<Metrics>,
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

/// Why a job did not finish.
#[derive(Debug)]
enum Failure {
    /// Try again after the store's backoff.
    Retryable(String),
    /// Try again when GitHub said (`Retry-After` or the rate-limit reset), not before.
    RetryAfter(String, Wait),
    /// Retrying will not help: publish INCONCLUSIVE saying this.
    Fatal(String),
}

impl From<GithubError> for Failure {
    fn from(e: GithubError) -> Self {
        if let GithubError::Retryable {
            retry_after: Some(wait),
            ..
        } = &e
        {
            return Failure::RetryAfter(e.to_string(), *wait);
        }
        if e.is_retryable() {
            Failure::Retryable(e.to_string())
        } else {
            Failure::Fatal(e.to_string())
        }
    }
}

/// When GitHub's `wait` ends, measured from `now` on the worker's clock.
fn wait_until(now: DateTime<Utc>, wait: Wait) -> DateTime<Utc> {
    match wait {
        Wait::For(d) => chrono::Duration::from_std(d).map_or(now, |d| now + d),
        Wait::Until(t) => DateTime::<Utc>::from(t).max(now),
    }
}

/// Store errors are taken as passing (the database may be restarting).
fn store_err(e: anyhow::Error) -> Failure {
    Failure::Retryable(format!("store: {e:#}"))
}

fn fatal(msg: impl Into<String>) -> Failure {
    Failure::Fatal(msg.into())
}

/// What a job acts on, read from its payload.
struct Target {
    client: Arc<InstallationClient>,
    repo: RepoName,
    /// GitHub's id of the repository, when the payload gives it.
    repo_id: Option<u64>,
}

/// The worker's own delayed job: the evidence deadline of a head.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct EvidenceTimeout {
    #[serde(flatten)]
    envelope: Envelope,
    head_sha: String,
    artifact: String,
    workflows: Vec<String>,
    timeout_minutes: u32,
    /// The head is a merge group's: the evidence comes from a `merge_group` run.
    #[serde(default)]
    merge_group: bool,
}

/// The sweep job: list installations and their repositories, queue one job per repository.
pub const SWEEP_EVENT: &str = "flakegate_expiry_sweep";
/// One repository's share of the sweep.
pub const SWEEP_REPO_EVENT: &str = "flakegate_expiry_repo";

/// The sweep job's payload: which interval it is for.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sweep {
    pub slot: i64,
}

/// One repository's sweep job: the repository (with its default branch) and installation.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SweepRepo {
    pub slot: i64,
    #[serde(flatten)]
    pub envelope: Envelope,
}

/// A job's work, parsed from its stored payload.
enum Work {
    Event(Event),
    EvidenceTimeout(EvidenceTimeout),
    /// The periodic expired-freezes sweep over every installation.
    Sweep(Sweep),
    /// One repository's share of it.
    SweepRepo(SweepRepo),
}

impl Work {
    /// The job's work; `None` for a job the webhook would not have queued.
    fn of(job: &Job) -> Result<Option<Work>, Failure> {
        if job.event == EVIDENCE_TIMEOUT_EVENT {
            return serde_json::from_str(&job.payload)
                .map(|t| Some(Work::EvidenceTimeout(t)))
                .map_err(|e| fatal(format!("stored evidence deadline is not valid: {e}")));
        }
        if job.event == SWEEP_EVENT {
            return serde_json::from_str(&job.payload)
                .map(|s| Some(Work::Sweep(s)))
                .map_err(|e| fatal(format!("stored sweep job is not valid: {e}")));
        }
        if job.event == SWEEP_REPO_EVENT {
            return serde_json::from_str(&job.payload)
                .map(|s| Some(Work::SweepRepo(s)))
                .map_err(|e| fatal(format!("stored sweep job is not valid: {e}")));
        }
        match Event::parse(&job.event, job.payload.as_bytes()) {
            Ok(d) => Ok(d.event.map(Work::Event)),
            Err(e) => Err(fatal(format!("stored {e}"))),
        }
    }

    /// The repository and installation the work is for (`None` for the sweep over all).
    fn envelope(&self) -> Option<&Envelope> {
        match self {
            Work::Event(e) => Some(e.envelope()),
            Work::EvidenceTimeout(t) => Some(&t.envelope),
            Work::Sweep(_) => None,
            Work::SweepRepo(r) => Some(&r.envelope),
        }
    }

    /// Work about the expired-freezes issue, not about a check run.
    fn is_expiry(&self) -> bool {
        matches!(self, Work::Event(Event::Push(_)) | Work::Sweep(_) | Work::SweepRepo(_))
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

    /// Poll for jobs until `shutdown`; a job in hand when it fires is released untouched.
    pub async fn run(&self, shutdown: Shutdown) -> anyhow::Result<()> {
        // When to make sure the current interval's sweep is queued (a cheap, deduplicated insert).
        let mut sweep_check = self.now();
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
            .map(|(id, _)| *id)
    }

    /// Renew the lease of the job in hand until `now + lease` (the heartbeat calls this every
    /// `heartbeat`). `Some(false)`: the lease was lost — it expired and another worker claimed
    /// the job — so the job in hand is abandoned before it publishes anything more. `None`:
    /// no job in hand.
    pub async fn heartbeat(&self) -> anyhow::Result<Option<bool>> {
        let in_hand = self.in_hand.lock().unwrap_or_else(|p| p.into_inner()).clone();
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
        *self.in_hand.lock().unwrap_or_else(|p| p.into_inner()) = Some((job.id, lost.clone()));
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
            let policy = self.store.policy();
            if job.attempts >= policy.max_attempts {
                // Out of attempts through expired leases (a worker died mid-job each time).
                let why = job
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "the worker stopped while evaluating".into());
                self.give_up(job, &format!("gave up after {} attempts: {why}", job.attempts))
                    .await;
                return self.complete(job, JobOutcome::Inconclusive).await;
            }
            match self.process(job).await {
                Ok(()) => self.complete(job, JobOutcome::Done).await,
                Err(failure @ (Failure::Retryable(_) | Failure::RetryAfter(..))) => {
                    let now = self.now();
                    let (msg, not_before) = match failure {
                        Failure::RetryAfter(msg, wait) => (msg, Some(wait_until(now, wait))),
                        Failure::Retryable(msg) | Failure::Fatal(msg) => (msg, None),
                    };
                    match self
                        .store
                        .fail_not_before(job.id, &self.config.worker_id, &msg, now, not_before)
                        .await?
                    {
                        Failed::Retry { at } => {
                            self.metrics.job(JobOutcome::Retry);
                            tracing::warn!(%at, "will retry: {msg}");
                            Ok(())
                        }
                        Failed::Dead => {
                            self.metrics.job(JobOutcome::Dead);
                            tracing::error!("out of attempts: {msg}");
                            self.give_up(job, &format!("gave up after {} attempts: {msg}", policy.max_attempts))
                                .await;
                            Ok(())
                        }
                        Failed::LeaseLost => {
                            self.metrics.job(JobOutcome::LeaseLost);
                            tracing::warn!("lease lost while failing ({msg}); the worker now holding the job decides");
                            Ok(())
                        }
                    }
                }
                Err(Failure::Fatal(msg)) => {
                    tracing::error!("cannot evaluate: {msg}");
                    self.give_up(job, &msg).await;
                    self.complete(job, JobOutcome::Inconclusive).await
                }
            }
        }
        .instrument(span)
        .await
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

    /// Whether `head` is no longer the head of `repo`#`pr`.
    async fn superseded(&self, repo: &str, pr: u64, head: &str) -> Result<bool, Failure> {
        let current = self.store.current_head(repo, pr).await.map_err(store_err)?;
        Ok(current.is_some_and(|c| c != head))
    }

    fn target(&self, envelope: &Envelope) -> Result<Target, Failure> {
        let installation = envelope
            .installation
            .ok_or_else(|| fatal("the webhook payload names no installation"))?;
        let full_name = &envelope.repository.full_name;
        let repo = RepoName::parse(full_name)
            .ok_or_else(|| fatal(format!("bad repository name {full_name:?} in the payload")))?;
        let client = self.github.installation(InstallationId(installation.id))?;
        Ok(Target {
            client,
            repo,
            repo_id: envelope.repository.id,
        })
    }

    async fn process(&self, job: &Job) -> Result<(), Failure> {
        let Some(work) = Work::of(job)? else {
            tracing::info!("no work for {}.{}", job.event, job.action.as_deref().unwrap_or(""));
            return Ok(());
        };
        // The deadline of a head the pull request has left is moot. Other work asks GitHub
        // for each pull request's current head itself.
        if let (Work::EvidenceTimeout(_), Some(repo), Some(pr), Some(sha)) = (&work, &job.repo, job.pr, &job.head_sha) {
            if self.superseded(repo, pr, sha).await? {
                tracing::info!("superseded by a newer head; skipped");
                return Ok(());
            }
        }
        if !self.ours(&work) {
            tracing::info!("another app's check run or suite; ignored");
            return Ok(());
        }
        let envelope = match &work {
            Work::Sweep(s) => return self.sweep(s).await,
            Work::Event(Event::Push(p)) if !p.to_default_branch() => {
                tracing::info!(git_ref = %p.git_ref, "a push to another branch or a tag; ignored");
                return Ok(());
            }
            w => w.envelope().ok_or_else(|| fatal("the job names no repository"))?,
        };
        let t = self.target(envelope)?;
        match work {
            Work::Sweep(_) => Ok(()),
            Work::Event(Event::Push(ref p)) => {
                let branch = p.envelope.repository.default_branch.clone().unwrap_or_default();
                self.expiry_issue(&t, &branch).await
            }
            Work::SweepRepo(ref r) => match r.envelope.repository.default_branch.clone() {
                Some(branch) => self.expiry_issue(&t, &branch).await,
                None => Err(fatal("the sweep job names no default branch")),
            },
            Work::Event(Event::PullRequest(e) | Event::PullRequestRetargeted(e)) => self.pull_request(&t, &e).await,
            Work::Event(Event::WorkflowRunCompleted(e)) => self.workflow_run(&t, &e.workflow_run).await,
            Work::EvidenceTimeout(deadline) => self.evidence_timeout(&t, &deadline).await,
            Work::Event(Event::CheckRunRerequested(e)) => self.reevaluate(&t, &e.check_run.head_sha).await,
            Work::Event(Event::CheckSuiteRerequested(e)) => self.reevaluate(&t, &e.check_suite.head_sha).await,
            Work::Event(Event::MergeGroupChecksRequested(e)) => self.merge_group_requested(&t, &e).await,
            Work::Event(Event::MergeGroupDestroyed(e)) => self.merge_group_destroyed(&t, &e).await,
            Work::Event(ref event @ Event::CheckRunRequestedAction(ref e)) => match event.requested_action() {
                Some(RequestedAction::Rerun) => self.rerun(&t, &e.check_run.head_sha).await,
                Some(RequestedAction::Reevaluate) => self.reevaluate(&t, &e.check_run.head_sha).await,
                other => {
                    tracing::info!(identifier = ?other.as_ref().map(|a| a.identifier()), "unknown requested action; ignored");
                    Ok(())
                }
            },
        }
    }

    /// Check-run and check-suite requests act only on this App's own `flakegate` check runs:
    /// anyone with `checks: write` can make one of that name. A payload that does not say
    /// which app made it is not ours.
    fn ours(&self, work: &Work) -> bool {
        let app = self.github.app_id().0;
        match work {
            Work::Event(Event::CheckRunRerequested(e) | Event::CheckRunRequestedAction(e)) => {
                e.check_run.name.as_deref() == Some(CHECK_NAME) && e.check_run.app.as_ref().is_some_and(|a| a.id == app)
            }
            Work::Event(Event::CheckSuiteRerequested(e)) => e.check_suite.app.as_ref().is_some_and(|a| a.id == app),
            _ => true,
        }
    }

    /// The repository configuration at `sha` (defaults when there is none).
    async fn config_at(&self, t: &Target, sha: &CommitSha) -> Result<ConfigRead, Failure> {
        let file = t
            .client
            .file_at(&t.repo, CONFIG_PATH, sha)
            .await?
            .map(|b| Named::new(format!("{sha}:{CONFIG_PATH}"), b));
        ConfigRead::from_file(file.as_ref()).map_err(|e| fatal(format!("repository config: {e}")))
    }

    // ---- pull_request: a queued check run ---------------------------------------------------

    /// A pull request got a head (or a new base). GitHub is asked for its current head first:
    /// deliveries arrive out of order, and a late one for an older head must change nothing.
    /// The pull request is recorded as not judged on its head; if evidence for that head was
    /// judged before (another pull request shares it, or the base changed), everything at
    /// the head is judged again, else the check run is queued until evidence arrives.
    async fn pull_request(&self, t: &Target, e: &PullRequestEvent) -> Result<(), Failure> {
        let number = e
            .number()
            .ok_or_else(|| fatal("the pull_request payload has no number"))?;
        let current = t.client.pull_request(&t.repo, PullNumber(number)).await?;
        let repo = t.repo.to_string();
        let head = current.head.sha.clone();
        if current.state != "open" {
            tracing::info!(state = %current.state, "the pull request is not open; nothing to do");
            return Ok(());
        }
        // GitHub's word on the current head: queued work for older heads is moot.
        self.store
            .supersede(&repo, number, head.as_str())
            .await
            .map_err(store_err)?;
        if head.as_str() != e.pull_request.head.sha {
            tracing::info!(current = %head, "a late delivery for an older head; the current head is judged on its own");
            return Ok(());
        }
        let base = current.base.sha.clone();
        let recorded = self.store.pr_verdicts(&repo, head.as_str()).await.map_err(store_err)?;
        let known = recorded
            .iter()
            .any(|v| v.pr == number && v.base_sha == base.as_str() && v.verdict != publishing::NOT_JUDGED);
        if !known {
            let row = PrVerdict {
                pr: number,
                base_sha: base.0.clone(),
                base_ref: current.base.ref_name.clone(),
                verdict: publishing::NOT_JUDGED.to_owned(),
                conclusion: "failure".to_owned(),
                title: "not judged yet: waiting for evidence".to_owned(),
            };
            self.store
                .set_pr_verdict(&repo, head.as_str(), &row)
                .await
                .map_err(store_err)?;
        }
        let has_check = self
            .store
            .check_run_id(&repo, head.as_str())
            .await
            .map_err(store_err)?
            .is_some();
        let evidence = self.store.evidence_run(&repo, head.as_str()).await.map_err(store_err)?;
        let ready = e.action.as_deref() == Some("ready_for_review");
        match evidence {
            // This pull request's verdict on this head and base is new: judge the head again.
            Some(_) if !known => return self.reevaluate(t, head.as_str()).await,
            // A draft made ready: judged again on the evidence its head already has.
            Some(_) if ready => {
                tracing::info!("ready for review: the head's evidence is judged again");
                return self.reevaluate(t, head.as_str()).await;
            }
            _ if has_check => {
                tracing::info!("check run already exists for this head");
                return Ok(());
            }
            _ => {}
        }
        if let Some(run) = t
            .client
            .find_check_run(&t.repo, &head, CHECK_NAME, head.as_str())
            .await?
        {
            self.store
                .set_check_run_id(&repo, head.as_str(), run.id)
                .await
                .map_err(store_err)?;
            return Ok(());
        }
        let config = self.config_at(t, &base).await?.config;
        let fields = present::check_run::queued(head.as_str(), &config);
        let run = t.client.create_check_run(&t.repo, &head, &fields).await?;
        self.store
            .set_check_run_id(&repo, head.as_str(), run.id)
            .await
            .map_err(store_err)?;
        tracing::info!(check_run = run.id, "check run queued");
        self.schedule_timeout(&e.envelope, e.pull_request.number, &t.repo, head.as_str(), &config)
            .await
    }

    /// Queue the evidence deadline for this head (once: the delivery id is derived from it);
    /// `pr` is `None` for a merge group's head.
    async fn schedule_timeout(
        &self,
        envelope: &Envelope,
        pr: Option<u64>,
        repo: &RepoName,
        head: &str,
        config: &Config,
    ) -> Result<(), Failure> {
        let minutes = config.evidence.timeout_minutes;
        let due = self.now() + chrono::Duration::minutes(i64::from(minutes));
        let deadline = EvidenceTimeout {
            envelope: Envelope {
                repository: crate::github::event::Repository {
                    full_name: repo.to_string(),
                    id: envelope.repository.id,
                    default_branch: None,
                },
                installation: envelope.installation,
            },
            head_sha: head.to_owned(),
            artifact: config.evidence.artifact.clone(),
            workflows: config.evidence.workflows.clone(),
            timeout_minutes: minutes,
            merge_group: pr.is_none(),
        };
        let delivery = NewDelivery {
            delivery_id: format!("{EVIDENCE_TIMEOUT_EVENT}/{repo}/{head}"),
            event: EVIDENCE_TIMEOUT_EVENT.to_owned(),
            action: None,
            repo: Some(repo.to_string()),
            pr,
            head_sha: Some(head.to_owned()),
            payload: serde_json::to_string(&deadline).map_err(|e| fatal(format!("evidence deadline: {e}")))?,
        };
        self.store.record_delivery(&delivery, due).await.map_err(store_err)?;
        Ok(())
    }

    /// The deadline came: a check run still waiting completes as INCONCLUSIVE.
    async fn evidence_timeout(&self, t: &Target, d: &EvidenceTimeout) -> Result<(), Failure> {
        let head = d.head_sha.as_str();
        let sha = CommitSha::from(head);
        let run = t.client.find_check_run(&t.repo, &sha, CHECK_NAME, head).await?;
        match run {
            Some(run) if run.status != "completed" => {
                let from = if d.workflows.is_empty() {
                    "any workflow run".to_owned()
                } else {
                    format!("workflow {}", d.workflows.join(" or "))
                };
                let why = if d.merge_group {
                    format!(
                        "no evidence arrived within {} minutes: waited for the artifact `{}` from {from} \
                         triggered by `merge_group` on the merge group's head `{head}`. Does the evidence \
                         workflow run `on: merge_group` (`templates/workflows/flakegate-evidence.yml`), and was \
                         it cancelled?",
                        d.timeout_minutes, d.artifact
                    )
                } else {
                    format!(
                        "no evidence arrived within {} minutes: waited for the artifact `{}` from {from} on \
                         `{head}`. Was the evidence workflow path-filtered away, cancelled, or never added \
                         (`templates/workflows/flakegate-evidence.yml`)?",
                        d.timeout_minutes, d.artifact
                    )
                };
                let fields = present::check_run::inconclusive(head, &why);
                let id = self.upsert_check(t, &sha, &fields).await?;
                tracing::warn!(check_run = id, "evidence timed out: {why}");
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_waits_become_the_retry_time() {
        let wait = Wait::For(std::time::Duration::from_secs(7));
        let e = GithubError::Retryable {
            retry_after: Some(wait),
            message: "429".into(),
        };
        assert!(matches!(Failure::from(e), Failure::RetryAfter(_, w) if w == wait));
        let e = GithubError::Retryable {
            retry_after: None,
            message: "502".into(),
        };
        assert!(matches!(Failure::from(e), Failure::Retryable(_)));
        assert!(matches!(
            Failure::from(GithubError::NotFound("x".into())),
            Failure::Fatal(_)
        ));
        let now = DateTime::<Utc>::from(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1000));
        let reset = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1090);
        assert_eq!(wait_until(now, Wait::Until(reset)), DateTime::<Utc>::from(reset));
        assert_eq!(wait_until(now, wait), now + chrono::Duration::seconds(7));
        // A reset already past: at once, never before now.
        assert_eq!(wait_until(now, Wait::Until(std::time::UNIX_EPOCH)), now);
    }
}
