//! A claimed job to its handler: its stored payload parsed into [`Work`] (a typed webhook
//! [`Event`], or one of the worker's own jobs), the installation client and repository it acts
//! on ([`Target`]), and the one match that routes each kind of work to its `handlers` file.
//! Work for a head a pull request has left, and requests about other apps' check runs, stop
//! here.

use super::failure::{internal, store_err, Failure};
use super::jobs::{EvidenceTimeout, Sweep, SweepRepo, EVIDENCE_TIMEOUT_EVENT, SWEEP_EVENT, SWEEP_REPO_EVENT};
use super::Worker;
use crate::github::event::{Envelope, Event, RequestedAction};
use crate::github::{InstallationClient, InstallationId, RepoName, CHECK_NAME};
use crate::store::Job;
use anyhow::{anyhow, Context as _};
use std::sync::Arc;

/// What a job acts on, read from its payload.
pub(super) struct Target {
    pub(super) client: Arc<InstallationClient>,
    pub(super) repo: RepoName,
    /// GitHub's id of the repository, when the payload gives it.
    pub(super) repo_id: Option<u64>,
}

/// A job's work, parsed from its stored payload.
pub(super) enum Work {
    Event(Event),
    EvidenceTimeout(EvidenceTimeout),
    /// The periodic expired-freezes sweep over every installation.
    Sweep(Sweep),
    /// One repository's share of it.
    SweepRepo(SweepRepo),
}

impl Work {
    /// The job's work; `None` for a job the webhook would not have queued.
    pub(super) fn of(job: &Job) -> Result<Option<Work>, Failure> {
        if job.event == EVIDENCE_TIMEOUT_EVENT {
            return serde_json::from_str(&job.payload)
                .map(|t| Some(Work::EvidenceTimeout(t)))
                .context("stored evidence deadline is not valid")
                .map_err(internal);
        }
        if job.event == SWEEP_EVENT {
            return serde_json::from_str(&job.payload)
                .map(|s| Some(Work::Sweep(s)))
                .context("stored sweep job is not valid")
                .map_err(internal);
        }
        if job.event == SWEEP_REPO_EVENT {
            return serde_json::from_str(&job.payload)
                .map(|s| Some(Work::SweepRepo(s)))
                .context("stored sweep job is not valid")
                .map_err(internal);
        }
        match Event::parse(&job.event, job.payload.as_bytes()) {
            Ok(d) => Ok(d.event.map(Work::Event)),
            Err(e) => Err(internal(anyhow!("stored {e}"))),
        }
    }

    /// The repository and installation the work is for (`None` for the sweep over all).
    pub(super) fn envelope(&self) -> Option<&Envelope> {
        match self {
            Work::Event(e) => Some(e.envelope()),
            Work::EvidenceTimeout(t) => Some(&t.envelope),
            Work::Sweep(_) => None,
            Work::SweepRepo(r) => Some(&r.envelope),
        }
    }

    /// Work about the expired-freezes issue, not about a check run.
    pub(super) fn is_expiry(&self) -> bool {
        matches!(self, Work::Event(Event::Push(_)) | Work::Sweep(_) | Work::SweepRepo(_))
    }
}

impl Worker {
    /// Whether `head` is no longer the head of `repo`#`pr`.
    pub(super) async fn superseded(&self, repo: &str, pr: u64, head: &str) -> Result<bool, Failure> {
        let current = self.store.current_head(repo, pr).await.map_err(store_err)?;
        Ok(current.is_some_and(|c| c != head))
    }

    pub(super) fn target(&self, envelope: &Envelope) -> Result<Target, Failure> {
        let installation = envelope
            .installation
            .ok_or_else(|| internal(anyhow!("the webhook payload names no installation")))?;
        let full_name = &envelope.repository.full_name;
        let repo = RepoName::parse(full_name)
            .ok_or_else(|| internal(anyhow!("bad repository name {full_name:?} in the payload")))?;
        let client = self.github.installation(InstallationId(installation.id))?;
        Ok(Target {
            client,
            repo,
            repo_id: envelope.repository.id,
        })
    }

    /// Do the job's work: route it to its handler.
    pub(super) async fn process(&self, job: &Job) -> Result<(), Failure> {
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
            w => w
                .envelope()
                .ok_or_else(|| internal(anyhow!("the job names no repository")))?,
        };
        let t = self.target(envelope)?;
        // State is kept by repository name: a name another repository had (renamed away,
        // transferred, deleted and taken again) starts afresh, never with the other's.
        if let Some(id) = t.repo_id.and_then(|id| i64::try_from(id).ok()) {
            let repo = t.repo.to_string();
            if self.store.claim_repository_name(&repo, id).await.map_err(store_err)? {
                tracing::warn!(%repo, repo_id = id, "this name was another repository's: its state here is forgotten");
            }
        }
        match work {
            Work::Sweep(_) => Ok(()),
            Work::Event(Event::Push(ref p)) => {
                let branch = p.envelope.repository.default_branch.clone().unwrap_or_default();
                self.expiry_issue(&t, &branch).await
            }
            Work::SweepRepo(ref r) => match r.envelope.repository.default_branch.clone() {
                Some(branch) => self.expiry_issue(&t, &branch).await,
                None => Err(internal(anyhow!("the sweep job names no default branch"))),
            },
            Work::Event(Event::PullRequest(e) | Event::PullRequestRetargeted(e)) => self.pull_request(&t, &e).await,
            Work::Event(Event::PullRequestMerged(e)) => self.pull_request_merged(&t, &e).await,
            Work::Event(Event::WorkflowRunCompleted(e)) => {
                let branch = e.envelope.repository.default_branch.as_deref();
                self.workflow_run(&t, &e.workflow_run, branch).await
            }
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
}
