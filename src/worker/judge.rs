//! A workflow run brought evidence: find the pull requests it is for, read their files
//! through GitHub ([`PullRequestFiles`], the App's side of `evidence::assemble::Sources`),
//! run the one pipeline and publish. Also re-evaluation and re-runs, which start from the
//! latest stored workflow run of a head.

use super::{fatal, store_err, Failure, Target, Worker};
use crate::evidence::assemble::{self, AssembleError, ConfigRead, Judging, Named, Sources};
use crate::evidence::{artifact_relative, evidence_root, EvidenceSources};
use crate::github::event::{Event, WorkflowRun};
use crate::github::{Artifact, CommitSha, GithubError, PatchSource, PullNumber};
use crate::publish;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A pull request a workflow run's evidence applies to.
#[derive(Debug, Clone)]
struct PrRef {
    number: u64,
    base_sha: String,
}

/// A directory removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

static SCRATCH_SEQ: AtomicU64 = AtomicU64::new(0);

/// `wanted` (a config `workflows` entry: a file name or a path) names the run's workflow file.
fn workflow_matches(wanted: &str, path: &str) -> bool {
    let wanted = wanted.trim_start_matches("./");
    path == wanted || path.rsplit('/').next() == Some(wanted)
}

/// One pull request's files as GitHub has them: config, ledger and CODEOWNERS at the
/// base, the ledger at the head, the diff, and the run's evidence artifact.
struct PullRequestFiles<'a> {
    worker: &'a Worker,
    t: &'a Target,
    base: CommitSha,
    head: CommitSha,
    number: PullNumber,
    run_id: u64,
    artifact: &'a Artifact,
    scratch: &'a Scratch,
    /// Where the artifact was extracted, once it was.
    extracted: OnceLock<PathBuf>,
}

impl PullRequestFiles<'_> {
    async fn file_at(&self, path: &str, sha: &CommitSha) -> Result<Option<Named>, Failure> {
        let bytes = self.t.client.file_at(&self.t.repo, path, sha).await?;
        Ok(bytes.map(|b| Named::new(format!("{sha}:{path}"), b)))
    }
}

impl Sources for PullRequestFiles<'_> {
    type Error = Failure;

    async fn config(&self) -> Result<Option<Named>, Failure> {
        self.file_at(crate::gate::config::CONFIG_PATH, &self.base).await
    }

    async fn patch(&self) -> Result<Named, Failure> {
        let number = self.number;
        Ok(match self.t.client.pull_diff(&self.t.repo, number).await? {
            PatchSource::Diff(d) => Named::new(format!("pull request {number} diff"), d.into_bytes()),
            PatchSource::Files(f) => Named::new(format!("pull request {number} files"), f.into_bytes()),
        })
    }

    async fn base_ledger(&self, path: &str) -> Result<Result<Named, String>, Failure> {
        Ok(self
            .file_at(path, &self.base)
            .await?
            .ok_or_else(|| format!("no ledger at {}:{path}: no test is frozen", self.base)))
    }

    async fn evidence(&self) -> Result<EvidenceSources, Failure> {
        let (name, run_id) = (&self.artifact.name, self.run_id);
        let limits = &self.worker.config.artifact_limits;
        let extracted = match self
            .t
            .client
            .download_artifact(&self.t.repo, self.artifact.id, &self.scratch.0, limits)
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
        let _ = self.extracted.set(extracted);
        Ok(EvidenceSources {
            dir: Some(dir),
            ..EvidenceSources::default()
        })
    }

    async fn head_ledger(&self, path: &str) -> Result<Option<Named>, Failure> {
        self.file_at(path, &self.head).await
    }

    async fn base_file(&self, path: &str) -> Result<Option<Named>, Failure> {
        self.file_at(path, &self.base).await
    }
}

impl Worker {
    // ---- workflow_run: evaluate -------------------------------------------------------------

    pub(super) async fn workflow_run(&self, t: &Target, run: &WorkflowRun) -> Result<(), Failure> {
        let run_id = run.id;
        let head = run.head_sha.clone();
        let workflow_path = run.path.clone().unwrap_or_default();
        let listed: Vec<PrRef> = run
            .pull_requests
            .iter()
            .flatten()
            .filter(|pr| pr.head.as_ref().map(|h| h.sha.as_str()) == Some(head.as_str()))
            .filter_map(|pr| {
                Some(PrRef {
                    number: pr.number?,
                    base_sha: pr.base.as_ref()?.sha.clone(),
                })
            })
            .collect();
        let prs = if listed.is_empty() && run.pull_requests.as_ref().is_none_or(|a| a.is_empty()) {
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

        let config: ConfigRead = self.config_at(t, &base).await?;
        let wanted = &config.config.evidence.workflows;
        if !wanted.is_empty() && !wanted.iter().any(|w| workflow_matches(w, workflow_path)) {
            tracing::info!(
                workflow = workflow_path,
                "not an evidence workflow per the config; ignored"
            );
            return Ok(());
        }

        // The artifact, first by listing (cheap), so a run of some other workflow is ignored early.
        let name = &config.config.evidence.artifact;
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

        let scratch = self.scratch()?;
        let files = PullRequestFiles {
            worker: self,
            t,
            base,
            head: head_sha.clone(),
            number,
            run_id,
            artifact,
            scratch: &scratch,
            extracted: OnceLock::new(),
        };
        let judging = Judging {
            today: self.now().date_naive(),
            base_sha: Some(pr.base_sha.clone()),
            head_sha: Some(head.to_owned()),
            workflow: (!workflow_path.is_empty()).then(|| workflow_path.to_owned()),
        };
        let mut report = assemble::evaluate(&files, &config, judging)
            .await
            .map_err(|e| match e {
                AssembleError::Source(f) => f,
                AssembleError::Config(e) => fatal(format!("repository config: {e}")),
                AssembleError::Patch(e) => fatal(format!("the patch: {e}")),
            })?;
        if let Some(extracted) = files.extracted.get() {
            artifact_relative(&mut report, extracted, name);
        }
        drop(files);
        drop(scratch);
        tracing::info!(verdict = %report.verdict, pull_request = pr.number, "evaluated");

        // A push may have landed while we worked: do not publish for an old head.
        if self.superseded(&repo, pr.number, head).await? {
            tracing::info!(pull_request = pr.number, "superseded while evaluating; not published");
            return Ok(());
        }
        self.publish(t, &head_sha, number, &report, &config.config).await
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

    // ---- re-evaluation and re-runs ----------------------------------------------------------

    /// The run of the latest `workflow_run` completed delivery stored for `repo` at `head`.
    async fn latest_run(&self, repo: &str, head: &str) -> Result<Option<WorkflowRun>, Failure> {
        let job = self
            .store
            .latest_delivery(repo, head, "workflow_run", "completed")
            .await
            .map_err(store_err)?;
        let Some(job) = job else { return Ok(None) };
        match Event::parse("workflow_run", job.payload.as_bytes()) {
            Ok(d) => match d.event {
                Some(Event::WorkflowRunCompleted(e)) => Ok(Some(e.workflow_run)),
                _ => Err(fatal(
                    "the stored workflow run delivery is not a completed workflow run",
                )),
            },
            Err(e) => Err(fatal(format!("stored workflow run {e}"))),
        }
    }

    pub(super) async fn reevaluate(&self, t: &Target, head: &str) -> Result<(), Failure> {
        match self.latest_run(&t.repo.to_string(), head).await? {
            Some(run) => self.workflow_run(t, &run).await,
            // Nothing to judge. Not queued (that could wait forever): a later run overwrites this.
            None => {
                let why = format!(
                    "re-evaluation was requested, but no completed workflow run with evidence is known for `{head}`; \
                     re-run the evidence workflow"
                );
                let fields = publish::inconclusive(head, &why);
                self.upsert_check(t, &CommitSha::from(head), &fields).await.map(drop)
            }
        }
    }

    /// Re-run the evidence workflow; its `workflow_run` completed delivery brings the verdict.
    pub(super) async fn rerun(&self, t: &Target, head: &str) -> Result<(), Failure> {
        let Some(run) = self.latest_run(&t.repo.to_string(), head).await? else {
            tracing::info!("no workflow run known for this head; nothing to re-run");
            return Ok(());
        };
        t.client.rerun_workflow(&t.repo, run.id).await?;
        tracing::info!(run_id = run.id, "evidence workflow re-run requested");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
