//! The job worker: claims durable webhook jobs from the store and turns them into GitHub
//! calls — a queued check run when a pull request gets a new head, an evaluation when a
//! workflow run brings evidence, re-evaluation and re-runs on request — then publishes the
//! check run and the sticky comment idempotently.
//!
//! Failures never leave a check pending and never pass: a retryable GitHub error is retried
//! with the store's backoff; anything else, and a job out of attempts, completes the check
//! run as INCONCLUSIVE (conclusion `failure`) saying why.

use crate::cli::parse_patch;
use crate::gate::config::{parse_config, Config};
use crate::gate::{evaluate, GateInput, InputDigest, InputError, Ledger, Report};
use crate::github::client::CHECK_NAME;
use crate::github::{
    Annotation, AnnotationLevel, ArtifactLimits, CheckAction, CheckOutput, CheckRunFields, CheckStatus, CommitSha,
    Conclusion, GithubApp, GithubError, InstallationClient, InstallationId, PatchSource, PullNumber, RepoName,
};
use crate::load::{self, EvidenceSources};
use crate::publish;
use crate::server::{Clock, Shutdown};
use crate::store::{CommentState, Failed, Job, NewDelivery, Store};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::Digest as _;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

/// Where the repository configuration lives (read at the pull request's base sha).
pub const CONFIG_PATH: &str = ".github/flakegate.yml";

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
    /// How often `run` looks for due jobs when the queue is empty.
    pub poll_interval: Duration,
    /// Lease owner name in the store.
    pub worker_id: String,
    /// Artifacts are extracted below this directory (one fresh subdirectory per job).
    pub scratch_dir: PathBuf,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            artifact_limits: ArtifactLimits::default(),
            lease: Duration::from_secs(600),
            poll_interval: Duration::from_secs(1),
            worker_id: default_worker_id(),
            scratch_dir: std::env::temp_dir(),
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
    /// Try again, not before this long (GitHub's `Retry-After` or rate-limit reset).
    RetryAfter(String, std::time::Duration),
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

/// Store errors are taken as passing (the database may be restarting).
fn store_err(e: anyhow::Error) -> Failure {
    Failure::Retryable(format!("store: {e:#}"))
}

fn fatal(msg: impl Into<String>) -> Failure {
    Failure::Fatal(msg.into())
}

/// A pull request a workflow run's evidence applies to.
#[derive(Debug, Clone)]
struct PrRef {
    number: u64,
    base_sha: String,
}

/// What a job acts on, read from its payload.
struct Target {
    client: Arc<InstallationClient>,
    repo: RepoName,
}

/// A directory removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

static SCRATCH_SEQ: AtomicU64 = AtomicU64::new(0);

fn sha256_hex(s: &str) -> String {
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

impl Worker {
    pub fn new(store: Arc<Store>, github: GithubApp, config: WorkerConfig, clock: Clock) -> Self {
        Worker {
            store,
            github: Arc::new(github),
            config,
            clock,
        }
    }

    fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    /// For `serve_on`: run until shutdown.
    pub fn into_task(self) -> crate::server::Worker {
        Box::new(move |_store, shutdown| Box::pin(async move { self.run(shutdown).await }))
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
        loop {
            if shutdown.is_triggered() {
                return Ok(());
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

    /// Process one claimed job and record the outcome in the store.
    async fn handle(&self, job: &Job) -> anyhow::Result<()> {
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
                return self.complete(job).await;
            }
            match self.process(job).await {
                Ok(()) => self.complete(job).await,
                Err(failure @ (Failure::Retryable(_) | Failure::RetryAfter(..))) => {
                    let now = self.now();
                    let (msg, not_before) = match failure {
                        Failure::RetryAfter(msg, wait) => (msg, chrono::Duration::from_std(wait).ok().map(|w| now + w)),
                        Failure::Retryable(msg) | Failure::Fatal(msg) => (msg, None),
                    };
                    match self
                        .store
                        .fail_not_before(job.id, &self.config.worker_id, &msg, now, not_before)
                        .await?
                    {
                        Failed::Retry { at } => {
                            tracing::warn!(%at, "will retry: {msg}");
                            Ok(())
                        }
                        Failed::Dead => {
                            tracing::error!("out of attempts: {msg}");
                            self.give_up(job, &format!("gave up after {} attempts: {msg}", policy.max_attempts))
                                .await;
                            Ok(())
                        }
                        Failed::LeaseLost => {
                            tracing::warn!("lease lost while failing ({msg}); the worker now holding the job decides");
                            Ok(())
                        }
                    }
                }
                Err(Failure::Fatal(msg)) => {
                    tracing::error!("cannot evaluate: {msg}");
                    self.give_up(job, &msg).await;
                    self.complete(job).await
                }
            }
        }
        .instrument(span)
        .await
    }

    /// Mark the job done if we still hold its lease; a lease lost to another worker is logged.
    async fn complete(&self, job: &Job) -> anyhow::Result<()> {
        if !self.store.complete(job.id, &self.config.worker_id).await? {
            tracing::warn!("lease lost before completing: another worker has claimed this job");
        }
        Ok(())
    }

    /// Whether `head` is no longer the head of `repo`#`pr`.
    async fn superseded(&self, repo: &str, pr: u64, head: &str) -> Result<bool, Failure> {
        let current = self.store.current_head(repo, pr).await.map_err(store_err)?;
        Ok(current.is_some_and(|c| c != head))
    }

    fn target(&self, payload: &Value) -> Result<Target, Failure> {
        let installation = payload["installation"]["id"]
            .as_u64()
            .ok_or_else(|| fatal("the webhook payload names no installation"))?;
        let full_name = payload["repository"]["full_name"].as_str().unwrap_or("");
        let repo = RepoName::parse(full_name)
            .ok_or_else(|| fatal(format!("bad repository name {full_name:?} in the payload")))?;
        let id = InstallationId(installation);
        let client = self.github.installation(id)?;
        Ok(Target { client, repo })
    }

    async fn process(&self, job: &Job) -> Result<(), Failure> {
        if let (Some(repo), Some(pr), Some(sha)) = (&job.repo, job.pr, &job.head_sha) {
            if self.superseded(repo, pr, sha).await? {
                tracing::info!("superseded by a newer head; skipped");
                return Ok(());
            }
        }
        let payload: Value =
            serde_json::from_str(&job.payload).map_err(|e| fatal(format!("stored payload is not JSON: {e}")))?;
        if job.event == "check_run" && payload["check_run"]["name"].as_str().is_some_and(|n| n != CHECK_NAME) {
            tracing::info!("another app's check run; ignored");
            return Ok(());
        }
        let t = self.target(&payload)?;
        match (job.event.as_str(), job.action.as_deref().unwrap_or("")) {
            ("pull_request", "opened" | "synchronize" | "reopened" | "ready_for_review") => {
                self.pull_request(&t, &payload).await
            }
            ("workflow_run", "completed") => self.workflow_run(&t, &payload).await,
            (EVIDENCE_TIMEOUT_EVENT, _) => {
                let sha = job.head_sha.as_deref().ok_or_else(|| fatal("no head sha in the job"))?;
                self.evidence_timeout(&t, sha, &payload).await
            }
            ("check_run", "rerequested") | ("check_suite", "rerequested") => {
                let sha = job
                    .head_sha
                    .as_deref()
                    .ok_or_else(|| fatal("no head sha in the payload"))?;
                self.reevaluate(&t, sha).await
            }
            ("check_run", "requested_action") => {
                let sha = job
                    .head_sha
                    .as_deref()
                    .ok_or_else(|| fatal("no head sha in the payload"))?;
                match payload["requested_action"]["identifier"].as_str() {
                    Some(publish::ACTION_RERUN) => self.rerun(&t, sha).await,
                    Some(publish::ACTION_REEVALUATE) => self.reevaluate(&t, sha).await,
                    other => {
                        tracing::info!(identifier = ?other, "unknown requested action; ignored");
                        Ok(())
                    }
                }
            }
            (event, action) => {
                tracing::info!("no work for {event}.{action}");
                Ok(())
            }
        }
    }

    // ---- pull_request: a queued check run ---------------------------------------------------

    async fn pull_request(&self, t: &Target, p: &Value) -> Result<(), Failure> {
        let pr = &p["pull_request"];
        let head = pr["head"]["sha"]
            .as_str()
            .ok_or_else(|| fatal("pull request without a head sha"))?;
        let base = pr["base"]["sha"]
            .as_str()
            .ok_or_else(|| fatal("pull request without a base sha"))?;
        let head = CommitSha::from(head);
        let repo = t.repo.to_string();
        // A check run for this head already exists (queued, or already judged): leave it.
        if self
            .store
            .check_run_id(&repo, head.as_str())
            .await
            .map_err(store_err)?
            .is_some()
        {
            tracing::info!("check run already exists for this head");
            return Ok(());
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
        let (config, _) = self.config_at(t, &CommitSha::from(base)).await?;
        let fields = queued_fields(head.as_str(), &config);
        let run = t.client.create_check_run(&t.repo, &head, &fields).await?;
        self.store
            .set_check_run_id(&repo, head.as_str(), run.id)
            .await
            .map_err(store_err)?;
        tracing::info!(check_run = run.id, "check run queued");
        self.schedule_timeout(p, &t.repo, head.as_str(), &config).await
    }

    /// Queue the evidence deadline for this head (once: the delivery id is derived from it).
    async fn schedule_timeout(&self, p: &Value, repo: &RepoName, head: &str, config: &Config) -> Result<(), Failure> {
        let minutes = config.evidence.timeout_minutes;
        let due = self.now() + chrono::Duration::minutes(i64::from(minutes));
        let payload = serde_json::json!({
            "repository": { "full_name": repo.to_string() },
            "installation": { "id": p["installation"]["id"] },
            "head_sha": head,
            "artifact": config.evidence.artifact,
            "workflows": config.evidence.workflows,
            "timeout_minutes": minutes,
        });
        let delivery = NewDelivery {
            delivery_id: format!("{EVIDENCE_TIMEOUT_EVENT}/{repo}/{head}"),
            event: EVIDENCE_TIMEOUT_EVENT.to_owned(),
            action: None,
            repo: Some(repo.to_string()),
            pr: p["pull_request"]["number"].as_u64(),
            head_sha: Some(head.to_owned()),
            payload: payload.to_string(),
        };
        self.store.record_delivery(&delivery, due).await.map_err(store_err)?;
        Ok(())
    }

    /// The deadline came: a check run still waiting completes as INCONCLUSIVE.
    async fn evidence_timeout(&self, t: &Target, head: &str, p: &Value) -> Result<(), Failure> {
        let sha = CommitSha::from(head);
        let run = t.client.find_check_run(&t.repo, &sha, CHECK_NAME, head).await?;
        match run {
            Some(run) if run.status != "completed" => {
                let artifact = p["artifact"].as_str().unwrap_or("flakegate-evidence");
                let from = match p["workflows"].as_array().filter(|w| !w.is_empty()) {
                    Some(w) => {
                        let names: Vec<&str> = w.iter().filter_map(Value::as_str).collect();
                        format!("workflow {}", names.join(" or "))
                    }
                    None => "any workflow run".to_owned(),
                };
                let why = format!(
                    "no evidence arrived within {} minutes: waited for the artifact `{artifact}` from {from} on \
                     `{head}`. Was the evidence workflow path-filtered away, cancelled, or never added \
                     (`templates/workflows/flakegate-evidence.yml`)?",
                    p["timeout_minutes"].as_u64().unwrap_or(0)
                );
                let fields = inconclusive_fields(head, &why);
                let id = self.upsert_check(t, &sha, &fields).await?;
                tracing::warn!(check_run = id, "evidence timed out: {why}");
                Ok(())
            }
            _ => Ok(()),
        }
    }

    // ---- workflow_run: evaluate -------------------------------------------------------------

    async fn workflow_run(&self, t: &Target, p: &Value) -> Result<(), Failure> {
        let run = &p["workflow_run"];
        let run_id = run["id"].as_u64().ok_or_else(|| fatal("workflow run without an id"))?;
        let head = run["head_sha"]
            .as_str()
            .ok_or_else(|| fatal("workflow run without a head sha"))?
            .to_owned();
        let workflow_path = run["path"].as_str().unwrap_or("").to_owned();
        let listed: Vec<PrRef> = run["pull_requests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|pr| pr["head"]["sha"].as_str() == Some(head.as_str()))
            .filter_map(|pr| {
                Some(PrRef {
                    number: pr["number"].as_u64()?,
                    base_sha: pr["base"]["sha"].as_str()?.to_owned(),
                })
            })
            .collect();
        let prs = if listed.is_empty() && run["pull_requests"].as_array().is_none_or(|a| a.is_empty()) {
            // A fork's run: GitHub leaves `pull_requests` empty; ask which pull requests have this head.
            let pulls = t.client.commit_pulls(&t.repo, &CommitSha::from(head.as_str())).await?;
            pulls
                .into_iter()
                .filter(|pr| pr.state == "open" && pr.head.sha.as_str() == head)
                .map(|pr| PrRef {
                    number: pr.number.0,
                    base_sha: pr.base.sha.0,
                })
                .collect()
        } else {
            listed
        };
        if prs.is_empty() {
            tracing::info!(run_id, "no open pull request has this run's head; nothing to judge");
            return Ok(());
        }
        for pr in prs {
            self.evaluate_pr(t, &head, &pr, run_id, &workflow_path).await?;
        }
        Ok(())
    }

    async fn config_at(&self, t: &Target, base: &CommitSha) -> Result<(Config, Option<InputDigest>), Failure> {
        match t.client.file_at(&t.repo, CONFIG_PATH, base).await? {
            None => Ok((Config::default(), None)),
            Some(bytes) => {
                let name = format!("{base}:{CONFIG_PATH}");
                let text = load::text_of(&name, &bytes).map_err(|e| fatal(format!("repository config: {e}")))?;
                let config = parse_config(&name, &text).map_err(|e| fatal(format!("repository config: {e}")))?;
                Ok((config, Some(InputDigest::of("config", &name, &bytes))))
            }
        }
    }

    async fn evaluate_pr(
        &self,
        t: &Target,
        head: &str,
        pr: &PrRef,
        run_id: u64,
        workflow_path: &str,
    ) -> Result<(), Failure> {
        let repo = t.repo.to_string();
        if self.superseded(&repo, pr.number, head).await? {
            tracing::info!(pull_request = pr.number, "superseded by a newer head; skipped");
            return Ok(());
        }
        let base = CommitSha::from(pr.base_sha.as_str());
        let head_sha = CommitSha::from(head);
        let number = PullNumber(pr.number);
        let mut inputs = Vec::new();
        let mut notes = Vec::new();

        let (config, digest) = self.config_at(t, &base).await?;
        inputs.extend(digest);
        let wanted = &config.evidence.workflows;
        if !wanted.is_empty() && !wanted.iter().any(|w| workflow_matches(w, workflow_path)) {
            tracing::info!(
                workflow = workflow_path,
                "not an evidence workflow per the config; ignored"
            );
            return Ok(());
        }

        // The artifact, first by listing (cheap), so a run of some other workflow is ignored early.
        let name = &config.evidence.artifact;
        let artifacts = t.client.run_artifacts(&t.repo, run_id).await?;
        let artifact = match artifacts.iter().find(|a| &a.name == name) {
            Some(a) => a,
            None if wanted.is_empty() => {
                tracing::info!(run_id, artifact = %name, "this run uploaded no evidence artifact; ignored");
                return Ok(());
            }
            None => {
                return Err(fatal(format!(
                    "workflow run {run_id} ({workflow_path}) finished without uploading the artifact `{name}`"
                )))
            }
        };
        if artifact.expired {
            return Err(fatal(format!(
                "the artifact `{name}` of workflow run {run_id} has expired; re-run the workflow"
            )));
        }

        // The patch.
        let (patch_name, patch_bytes) = match t.client.pull_diff(&t.repo, number).await? {
            PatchSource::Diff(d) => (format!("pull request {number} diff"), d.into_bytes()),
            PatchSource::Files(f) => (format!("pull request {number} files"), f.into_bytes()),
        };
        inputs.push(InputDigest::of("diff", &patch_name, &patch_bytes));
        let patch = parse_patch(&patch_name, &patch_bytes).map_err(|e| fatal(format!("the patch: {e}")))?;

        // The ledger at the base: never the head's, which the patch controls.
        let ledger_name = format!("{base}:{}", config.ledger);
        let ledger: Result<Ledger, Vec<InputError>> = match t.client.file_at(&t.repo, &config.ledger, &base).await? {
            Some(bytes) => {
                inputs.push(InputDigest::of("ledger", &ledger_name, &bytes));
                load::parse_ledger_bytes(&ledger_name, &bytes, config.policy.max_freeze_days)
            }
            None => {
                notes.push(format!("no ledger at {ledger_name}: no test is frozen"));
                Ok(Ledger::default())
            }
        };

        // The evidence.
        let scratch = self.scratch()?;
        let extracted = match t
            .client
            .download_artifact(&t.repo, artifact.id, &scratch.0, &self.config.artifact_limits)
            .await
        {
            Ok(dir) => dir,
            // Listed as live a moment ago, expired by the time it was fetched.
            Err(GithubError::Gone(why)) => {
                return Err(fatal(format!(
                    "the artifact `{name}` of workflow run {run_id} has expired ({why}); re-run the workflow"
                )))
            }
            Err(e) => return Err(e.into()),
        };
        let dir = evidence_root(&extracted);
        let sources = EvidenceSources {
            dir: Some(dir),
            ..EvidenceSources::default()
        };
        let mut loaded = load::load_evidence(&sources, &patch, ledger.as_ref().ok());
        inputs.extend(loaded.digests.clone());

        // The ledger as the patch leaves it: its edits are reported, never obeyed.
        if let Some(bytes) = t.client.file_at(&t.repo, &config.ledger, &head_sha).await? {
            let name = format!("{head}:{}", config.ledger);
            load::set_head_ledger(
                &mut loaded.evidence,
                &mut notes,
                &name,
                &bytes,
                config.policy.max_freeze_days,
            );
        }
        // CODEOWNERS at the base names the owners of unwitnessed lines.
        for path in crate::gate::codeowners::CODEOWNERS_PATHS {
            if let Some(bytes) = t.client.file_at(&t.repo, path, &base).await? {
                load::set_codeowners(
                    &mut loaded.evidence,
                    &mut inputs,
                    &mut notes,
                    &format!("{base}:{path}"),
                    &bytes,
                );
                break;
            }
        }

        let input = GateInput {
            patch: &patch,
            ledger: &ledger,
            config: &config,
            evidence: &loaded.evidence,
            today: self.now().date_naive(),
            base_sha: Some(pr.base_sha.clone()),
            head_sha: Some(head.to_owned()),
            inputs,
            workflow: (!workflow_path.is_empty()).then(|| workflow_path.to_owned()),
        };
        let mut report = evaluate(&input);
        report.notes.extend(notes);
        artifact_relative(&mut report, &extracted, name);
        drop(scratch);
        tracing::info!(verdict = %report.verdict, pull_request = pr.number, "evaluated");

        // A push may have landed while we worked: do not publish for an old head.
        if self.superseded(&repo, pr.number, head).await? {
            tracing::info!(pull_request = pr.number, "superseded while evaluating; not published");
            return Ok(());
        }
        self.publish(t, &head_sha, number, &report, &config).await
    }

    fn scratch(&self) -> Result<Scratch, Failure> {
        let dir = self.config.scratch_dir.join(format!(
            "flakegate-job-{}-{}",
            std::process::id(),
            SCRATCH_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Failure::Retryable(format!("creating scratch directory {}: {e}", dir.display())))?;
        Ok(Scratch(dir))
    }

    // ---- publishing -------------------------------------------------------------------------

    async fn publish(
        &self,
        t: &Target,
        head: &CommitSha,
        pr: PullNumber,
        report: &Report,
        config: &Config,
    ) -> Result<(), Failure> {
        let out = publish::check_output(report, config);
        let fields = completed_fields(head.as_str(), &out);
        let run = self.upsert_check(t, head, &fields).await?;
        tracing::info!(
            check_run = run,
            conclusion = out.conclusion.as_str(),
            "check run published"
        );
        self.publish_comment(t, pr, report, config).await
    }

    /// Update the check run we know of, else find it by name + external id, else create it.
    /// GitHub appends annotations on every update and never removes them, so an annotation
    /// already sent to this check run (a re-evaluation, a retry, a second pull request with
    /// the same head) is not sent again.
    async fn upsert_check(&self, t: &Target, head: &CommitSha, fields: &CheckRunFields) -> Result<u64, Failure> {
        let repo = t.repo.to_string();
        let digests: Vec<String> = fields
            .output
            .iter()
            .flat_map(|o| &o.annotations)
            .map(annotation_digest)
            .collect();
        if let Some(id) = self.store.check_run_id(&repo, head.as_str()).await.map_err(store_err)? {
            let sent = self
                .store
                .published_annotations(&repo, head.as_str(), id)
                .await
                .map_err(store_err)?;
            let mut fresh = fields.clone();
            if let Some(o) = &mut fresh.output {
                o.annotations.retain(|a| !sent.contains(&annotation_digest(a)));
            }
            match t.client.update_check_run(&t.repo, id, &fresh).await {
                Ok(run) => {
                    let mut all = sent;
                    for d in digests {
                        if !all.contains(&d) {
                            all.push(d);
                        }
                    }
                    self.store
                        .set_published_annotations(&repo, head.as_str(), id, &all)
                        .await
                        .map_err(store_err)?;
                    return Ok(run.id);
                }
                Err(GithubError::NotFound(_)) => tracing::warn!(check_run = id, "stored check run is gone"),
                Err(e) => return Err(e.into()),
            }
        }
        let run = t.client.upsert_check_run(&t.repo, head, fields).await?;
        self.store
            .set_check_run_id(&repo, head.as_str(), run.id)
            .await
            .map_err(store_err)?;
        self.store
            .set_published_annotations(&repo, head.as_str(), run.id, &digests)
            .await
            .map_err(store_err)?;
        Ok(run.id)
    }

    /// The one sticky comment: created once, edited only when what it says changes.
    async fn publish_comment(
        &self,
        t: &Target,
        pr: PullNumber,
        report: &Report,
        config: &Config,
    ) -> Result<(), Failure> {
        let repo = t.repo.to_string();
        let stored = self.store.comment(&repo, pr.0).await.map_err(store_err)?;
        if let Some(st) = stored {
            let Some(body) = publish::comment_body(report, config, Some("")) else {
                return Ok(());
            };
            let sha = sha256_hex(&body);
            if sha == st.body_sha256 {
                tracing::info!(comment = st.comment_id, "comment unchanged");
                return Ok(());
            }
            let id = match t.client.update_comment(&t.repo, st.comment_id, &body).await {
                Ok(c) => c.id,
                Err(GithubError::NotFound(_)) => t.client.create_comment(&t.repo, pr, &body).await?.id,
                Err(e) => return Err(e.into()),
            };
            return self.remember_comment(&repo, pr, id, sha).await;
        }
        let found = t
            .client
            .find_comment_with_marker(&t.repo, pr, publish::COMMENT_MARKER)
            .await?;
        let previous = found.as_ref().map(|c| c.body.clone().unwrap_or_default());
        let Some(body) = publish::comment_body(report, config, previous.as_deref()) else {
            return Ok(());
        };
        let sha = sha256_hex(&body);
        let id = match found {
            Some(c) if !publish::comment_changed(previous.as_deref().unwrap_or(""), &body) => c.id,
            Some(c) => t.client.update_comment(&t.repo, c.id, &body).await?.id,
            None => t.client.create_comment(&t.repo, pr, &body).await?.id,
        };
        self.remember_comment(&repo, pr, id, sha).await
    }

    async fn remember_comment(&self, repo: &str, pr: PullNumber, id: u64, sha: String) -> Result<(), Failure> {
        let state = CommentState {
            comment_id: id,
            body_sha256: sha,
        };
        self.store.set_comment(repo, pr.0, &state).await.map_err(store_err)
    }

    /// Complete the job's check run as INCONCLUSIVE saying why (best effort; logged on failure).
    async fn give_up(&self, job: &Job, why: &str) {
        if job.event == "check_run"
            && job.action.as_deref() == Some("requested_action")
            && job.payload.contains(publish::ACTION_RERUN)
        {
            // A failed re-run request changes no verdict.
            return;
        }
        let Some(head) = job.head_sha.as_deref() else {
            tracing::error!("cannot mark the check INCONCLUSIVE: the job has no head sha");
            return;
        };
        if let (Some(repo), Some(pr)) = (&job.repo, job.pr) {
            if matches!(self.superseded(repo, pr, head).await, Ok(true)) {
                return;
            }
        }
        let result = async {
            let payload: Value = serde_json::from_str(&job.payload).map_err(|e| fatal(e.to_string()))?;
            let t = self.target(&payload)?;
            let fields = inconclusive_fields(head, why);
            self.upsert_check(&t, &CommitSha::from(head), &fields).await
        }
        .await;
        match result {
            Ok(id) => tracing::info!(check_run = id, "check run completed as INCONCLUSIVE: {why}"),
            Err(e) => tracing::error!("could not mark the check run INCONCLUSIVE: {e:?}"),
        }
    }

    // ---- re-evaluation and re-runs ----------------------------------------------------------

    /// The latest `workflow_run` completed delivery stored for `repo` at `head`.
    async fn latest_run_payload(&self, repo: &str, head: &str) -> Result<Option<Value>, Failure> {
        let job = self
            .store
            .latest_delivery(repo, head, "workflow_run", "completed")
            .await
            .map_err(store_err)?;
        job.map(|j| {
            serde_json::from_str::<Value>(&j.payload)
                .map_err(|e| fatal(format!("stored workflow run payload is not JSON: {e}")))
        })
        .transpose()
    }

    async fn reevaluate(&self, t: &Target, head: &str) -> Result<(), Failure> {
        match self.latest_run_payload(&t.repo.to_string(), head).await? {
            Some(p) => self.workflow_run(t, &p).await,
            // Nothing to judge. Not queued (that could wait forever): a later run overwrites this.
            None => {
                let why = format!(
                    "re-evaluation was requested, but no completed workflow run with evidence is known for `{head}`; \
                     re-run the evidence workflow"
                );
                let fields = inconclusive_fields(head, &why);
                self.upsert_check(t, &CommitSha::from(head), &fields).await.map(drop)
            }
        }
    }

    /// Re-run the evidence workflow; its `workflow_run` completed delivery brings the verdict.
    async fn rerun(&self, t: &Target, head: &str) -> Result<(), Failure> {
        let Some(p) = self.latest_run_payload(&t.repo.to_string(), head).await? else {
            tracing::info!("no workflow run known for this head; nothing to re-run");
            return Ok(());
        };
        let run_id = p["workflow_run"]["id"]
            .as_u64()
            .ok_or_else(|| fatal("stored workflow run without an id"))?;
        t.client.rerun_workflow(&t.repo, run_id).await?;
        tracing::info!(run_id, "evidence workflow re-run requested");
        Ok(())
    }
}

/// Paths inside the extracted artifact as the artifact names them (`flakegate-evidence/results/…`),
/// not as this server's scratch directory: no host paths in what is published, and the same
/// evidence gives the same record on every evaluation.
fn artifact_relative(report: &mut Report, extracted: &Path, artifact: &str) {
    let root = extracted.display().to_string();
    let fix = |s: &mut String| {
        if s.contains(&root) {
            *s = s
                .replace(&format!("{root}/"), &format!("{artifact}/"))
                .replace(&root, artifact);
        }
    };
    for d in &mut report.inputs {
        fix(&mut d.path);
    }
    for r in &mut report.reasons {
        fix(&mut r.message);
        for l in &mut r.locations {
            fix(&mut l.file);
        }
    }
    for f in &mut report.results.failures {
        fix(&mut f.source);
        if let Some(m) = &mut f.message {
            fix(m);
        }
    }
    for n in &mut report.notes {
        fix(n);
    }
}

/// What identifies an annotation already on a check run: everything GitHub shows of it.
fn annotation_digest(a: &Annotation) -> String {
    let json = serde_json::to_string(a).expect("annotations serialise");
    hex::encode(&sha2::Sha256::digest(json.as_bytes())[..16])
}

/// `wanted` (a config `workflows` entry: a file name or a path) names the run's workflow file.
fn workflow_matches(wanted: &str, path: &str) -> bool {
    let wanted = wanted.trim_start_matches("./");
    path == wanted || path.rsplit('/').next() == Some(wanted)
}

/// The evidence directory inside an extracted artifact: its root, or a lone `evidence/` in it.
fn evidence_root(extracted: &Path) -> PathBuf {
    let nested = extracted.join("evidence");
    let root_has_evidence = ["meta.json", "coverage.json", ".coverage", "results"]
        .iter()
        .any(|f| extracted.join(f).exists());
    if !root_has_evidence && nested.is_dir() {
        nested
    } else {
        extracted.to_path_buf()
    }
}

fn queued_fields(head: &str, config: &Config) -> CheckRunFields {
    let artifact = &config.evidence.artifact;
    let from = if config.evidence.workflows.is_empty() {
        "a workflow run".to_owned()
    } else {
        format!("workflow {}", config.evidence.workflows.join(" or "))
    };
    let summary = format!(
        "Waiting for the evidence artifact `{artifact}` from {from} on `{head}`.\n\n\
         The evidence workflow (see `templates/workflows/flakegate-evidence.yml`) uploads it; the verdict follows \
         when that run completes."
    );
    let mut f = CheckRunFields::new(head, CheckStatus::Queued);
    f.output = Some(CheckOutput {
        title: format!("waiting for evidence: artifact `{artifact}`"),
        summary,
        text: None,
        annotations: Vec::new(),
    });
    f
}

fn completed_fields(head: &str, out: &publish::CheckOutput) -> CheckRunFields {
    let mut f = CheckRunFields::new(head, CheckStatus::Completed);
    f.conclusion = Some(match out.conclusion {
        publish::Conclusion::Success => Conclusion::Success,
        publish::Conclusion::Neutral => Conclusion::Neutral,
        publish::Conclusion::Failure => Conclusion::Failure,
    });
    f.output = Some(CheckOutput {
        title: out.title.clone(),
        summary: out.summary.clone(),
        text: Some(out.text.clone()),
        annotations: out
            .annotations
            .iter()
            .map(|a| Annotation {
                path: a.path.clone(),
                start_line: a.start_line,
                end_line: a.end_line,
                annotation_level: match a.annotation_level {
                    publish::AnnotationLevel::Notice => AnnotationLevel::Notice,
                    publish::AnnotationLevel::Warning => AnnotationLevel::Warning,
                    publish::AnnotationLevel::Failure => AnnotationLevel::Failure,
                },
                message: a.message.clone(),
                title: Some(a.title.clone()),
                raw_details: None,
            })
            .collect(),
    });
    f.actions = out
        .actions
        .iter()
        .map(|a| CheckAction {
            label: a.label.clone(),
            description: a.description.clone(),
            identifier: a.identifier.clone(),
        })
        .collect();
    f
}

/// INCONCLUSIVE because the evaluation could not be done: blocks (`failure`) and says why.
fn inconclusive_fields(head: &str, why: &str) -> CheckRunFields {
    let why_line: String = why.lines().next().unwrap_or(why).chars().take(150).collect();
    let summary = format!(
        "## INCONCLUSIVE — no verdict could be reached\n\n{}\n\n\
         flakegate never passes a change it could not judge. Fix the cause above, then use **Re-evaluate** or \
         re-run the evidence workflow.\n",
        why
    );
    let mut f = CheckRunFields::new(head, CheckStatus::Completed);
    f.conclusion = Some(Conclusion::Failure);
    f.output = Some(CheckOutput {
        title: format!("INCONCLUSIVE: {why_line}"),
        summary: crate::render::truncate(&summary, crate::render::GITHUB_TEXT_LIMIT),
        text: None,
        annotations: Vec::new(),
    });
    f.actions = publish::actions()
        .into_iter()
        .map(|a| CheckAction {
            label: a.label,
            description: a.description,
            identifier: a.identifier,
        })
        .collect();
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_waits_become_the_retry_time() {
        let wait = std::time::Duration::from_secs(7);
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
    }

    #[test]
    fn workflow_names() {
        assert!(workflow_matches(
            "flakegate-evidence.yml",
            ".github/workflows/flakegate-evidence.yml"
        ));
        assert!(workflow_matches(
            ".github/workflows/flakegate-evidence.yml",
            ".github/workflows/flakegate-evidence.yml"
        ));
        assert!(!workflow_matches("ci.yml", ".github/workflows/flakegate-evidence.yml"));
    }

    #[test]
    fn inconclusive_is_failure_and_says_why() {
        let f = inconclusive_fields("abc", "GitHub said 500");
        assert_eq!(f.conclusion, Some(Conclusion::Failure));
        let out = f.output.unwrap();
        assert!(out.title.starts_with("INCONCLUSIVE"));
        assert!(out.summary.contains("GitHub said 500"));
    }
}
