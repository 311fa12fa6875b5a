//! A workflow run brought evidence: find the pull requests it is for, read their files
//! through GitHub ([`PullRequestFiles`], the App's side of `evidence::assemble::Sources`),
//! run the one pipeline and publish. Every open pull request at the head is judged against
//! its own base as GitHub has it now. Also re-evaluation and re-runs, which start from the
//! evidence workflow's run recorded for the head (never another workflow's).

use super::{fatal, store_err, Failure, Target, Worker};
use crate::evidence::assemble::{self, AssembleError, ConfigRead, Judging, Named, Sources};
use crate::evidence::{artifact_relative, evidence_root, EvidenceSources};
use crate::gate::config::Config;
use crate::gate::Report;
use crate::github::event::WorkflowRun;
use crate::github::{Artifact, CommitSha, GithubError, PatchSource, PullNumber, PullRequest};
use crate::present;
use crate::store::EvidenceRun;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The `X-GitHub-Event` of merge queues, and the `event` of the workflow runs they trigger
/// (`merge_group.rs` judges those).
pub(super) const MERGE_GROUP: &str = "merge_group";

/// A pull request to judge at a head, as GitHub has it now (open, at that head, into this
/// repository): its base is the one it targets today, not the one a payload remembered.
#[derive(Debug, Clone)]
pub(super) struct PrRef {
    pub(super) number: u64,
    pub(super) base_sha: String,
    pub(super) base_ref: String,
}

/// What judging one pull request with a workflow run gave.
pub(super) enum Judged {
    /// The run is not the evidence this pull request's config asks for.
    NotEvidence,
    /// A verdict, with the config it was reached under.
    Report(Box<Report>, Box<Config>),
    /// No verdict could be reached: INCONCLUSIVE saying why. `evidence`: the run is this
    /// pull request's evidence workflow (known only once its config could be read).
    Failed { why: String, evidence: bool },
}

/// A failure retrying cannot fix becomes the pull request's INCONCLUSIVE (`Ok(Err(why))`);
/// a retryable one fails the job.
fn settle<T>(r: Result<T, Failure>) -> Result<Result<T, String>, Failure> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(Failure::Fatal(why)) => Ok(Err(why)),
        Err(e) => Err(e),
    }
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
pub(super) fn workflow_matches(wanted: &str, path: &str) -> bool {
    let wanted = wanted.trim_start_matches("./");
    path == wanted || path.rsplit('/').next() == Some(wanted)
}

/// Where the patch of a head comes from.
#[derive(Debug, Clone, Copy)]
pub(super) enum PatchOf {
    /// The pull request's diff (or its files listing).
    Pull(PullNumber),
    /// `base...head` compared (a merge group's changes).
    Compare,
}

/// One pull request's (or merge group's) files as GitHub has them: config, ledger and
/// CODEOWNERS at the base, the ledger at the head, the diff, and the run's evidence artifact.
struct PullRequestFiles<'a> {
    worker: &'a Worker,
    t: &'a Target,
    base: CommitSha,
    head: CommitSha,
    patch_of: PatchOf,
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
        let (base, head) = (&self.base, &self.head);
        Ok(match self.patch_of {
            PatchOf::Pull(number) => match self.t.client.pull_diff(&self.t.repo, number).await? {
                PatchSource::Diff(d) => Named::new(format!("pull request {number} diff"), d),
                PatchSource::Files(f) => Named::new(format!("pull request {number} files"), f.into_bytes()),
            },
            PatchOf::Compare => match self.t.client.compare_diff(&self.t.repo, base, head).await? {
                PatchSource::Diff(d) => Named::new(format!("{base}...{head} diff"), d),
                PatchSource::Files(f) => Named::new(format!("{base}...{head} files"), f.into_bytes()),
            },
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

    /// A changed file as the head has it. Only an aid to attribution: one GitHub will not
    /// serve as a file (a symlink, a submodule) is judged from coverage alone, not fatal.
    async fn head_file(&self, path: &str) -> Result<Option<Named>, Failure> {
        match self.file_at(path, &self.head).await {
            Err(Failure::Fatal(why)) => {
                tracing::info!(path, %why, "head source not read; judged from coverage alone");
                Ok(None)
            }
            r => r,
        }
    }
}

impl Worker {
    // ---- workflow_run: evaluate -------------------------------------------------------------

    pub(super) async fn workflow_run(&self, t: &Target, run: &WorkflowRun) -> Result<(), Failure> {
        if run.event.as_deref() == Some(MERGE_GROUP) {
            return self.merge_group_run_completed(t, run).await;
        }
        let head = run.head_sha.as_str();
        // A number means something only in its base repository: a fork's own pull requests
        // are listed too. Unknown repositories (ours or theirs) are not trusted.
        let listed: Vec<u64> = run
            .pull_requests
            .iter()
            .flatten()
            .filter(|pr| pr.head.as_ref().map(|h| h.sha.as_str()) == Some(head))
            .filter(|pr| {
                let base_repo = pr.base.as_ref().and_then(|b| b.repo.as_ref()).and_then(|r| r.id);
                base_repo.is_some() && base_repo == t.repo_id
            })
            .filter_map(|pr| pr.number)
            .collect();
        // GitHub lists no pull requests for a fork's run: ask which have this head.
        let ask_commit = listed.is_empty();
        self.judge_head(t, head, run.id, run.path.as_deref().unwrap_or(""), &listed, ask_commit)
            .await
    }

    /// Judge every open pull request at `head` — those `listed`, those judged here before,
    /// and (`ask_commit`) those GitHub associates with the commit — with workflow run
    /// `run_id`, then publish the head's one check run (the worst verdict) and a comment
    /// on each pull request about that pull request.
    async fn judge_head(
        &self,
        t: &Target,
        head: &str,
        run_id: u64,
        workflow_path: &str,
        listed: &[u64],
        ask_commit: bool,
    ) -> Result<(), Failure> {
        let prs = self.open_pulls_at(t, head, listed, ask_commit).await?;
        if prs.is_empty() {
            tracing::info!(run_id, "no open pull request has this run's head; nothing to judge");
            return Ok(());
        }
        let mut judged = Vec::new();
        for pr in prs {
            match self.judge_pr(t, head, &pr, run_id, workflow_path).await? {
                Judged::NotEvidence => {}
                j => judged.push((pr, j)),
            }
        }
        if judged.is_empty() {
            return Ok(());
        }
        let repo = t.repo.to_string();
        // Re-run and Re-evaluate act on this run only if it is the evidence workflow's.
        if judged
            .iter()
            .any(|(_, j)| matches!(j, Judged::Report(..) | Judged::Failed { evidence: true, .. }))
        {
            let run = EvidenceRun {
                run_id,
                workflow_path: workflow_path.to_owned(),
            };
            self.store
                .set_evidence_run(&repo, head, &run)
                .await
                .map_err(store_err)?;
        }
        // A push may have landed while we worked: do not publish for an old head.
        let mut current = Vec::new();
        for (pr, j) in judged {
            if self.superseded(&repo, pr.number, head).await? {
                tracing::info!(pull_request = pr.number, "superseded while evaluating; not published");
            } else {
                current.push((pr, j));
            }
        }
        if current.is_empty() {
            return Ok(());
        }
        self.publish_head(t, &CommitSha::from(head), &current).await
    }

    /// The open pull requests of this repository whose head is `head` now, as GitHub says.
    /// A pull request recorded here before that has moved on, closed or is not ours is
    /// forgotten for this head.
    async fn open_pulls_at(
        &self,
        t: &Target,
        head: &str,
        listed: &[u64],
        ask_commit: bool,
    ) -> Result<Vec<PrRef>, Failure> {
        let repo = t.repo.to_string();
        let recorded = self.store.pr_verdicts(&repo, head).await.map_err(store_err)?;
        let mut numbers: BTreeSet<u64> = listed.iter().copied().collect();
        numbers.extend(recorded.iter().map(|v| v.pr));
        let mut found: Vec<PullRequest> = Vec::new();
        if ask_commit {
            let sha = CommitSha::from(head);
            for pr in t.client.commit_pulls(&t.repo, &sha).await? {
                numbers.remove(&pr.number.0);
                found.push(pr);
            }
        }
        for n in numbers {
            match t.client.pull_request(&t.repo, PullNumber(n)).await {
                Ok(pr) => found.push(pr),
                Err(GithubError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let mut prs = Vec::new();
        for pr in found {
            let ours = pr.base.repo.as_ref().is_none_or(|r| r.full_name == repo);
            let n = pr.number.0;
            if pr.state == "open" && pr.head.sha.as_str() == head && ours {
                // GitHub's word on the current head: queued work for older heads is moot.
                self.store.supersede(&repo, n, head).await.map_err(store_err)?;
                prs.push(PrRef {
                    number: n,
                    base_sha: pr.base.sha.0,
                    base_ref: pr.base.ref_name,
                });
            } else {
                tracing::info!(pull_request = n, state = %pr.state, "not an open pull request at this head");
                if recorded.iter().any(|v| v.pr == n) {
                    self.store.remove_pr_verdict(&repo, head, n).await.map_err(store_err)?;
                }
            }
        }
        Ok(prs)
    }

    /// Judge one pull request with the run's evidence. A failure retrying cannot fix is
    /// this pull request's INCONCLUSIVE; a retryable one fails the job.
    async fn judge_pr(
        &self,
        t: &Target,
        head: &str,
        pr: &PrRef,
        run_id: u64,
        workflow_path: &str,
    ) -> Result<Judged, Failure> {
        let base = CommitSha::from(pr.base_sha.as_str());
        let config = match settle(self.config_at(t, &base).await)? {
            Ok(c) => c,
            Err(why) => return Ok(Judged::Failed { why, evidence: false }),
        };
        let patch_of = PatchOf::Pull(PullNumber(pr.number));
        Ok(
            match settle(
                self.evaluate_at(t, head, &pr.base_sha, patch_of, run_id, workflow_path, config)
                    .await,
            )? {
                Ok(Some((report, config))) => {
                    tracing::info!(verdict = %report.verdict, pull_request = pr.number, "evaluated");
                    Judged::Report(Box::new(report), Box::new(config))
                }
                Ok(None) => Judged::NotEvidence,
                Err(why) => Judged::Failed { why, evidence: true },
            },
        )
    }

    /// The report of `base_sha`..`head` (a pull request's, or a merge group's) under `config`
    /// (read at the base), or `None` when the run is not its evidence.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn evaluate_at(
        &self,
        t: &Target,
        head: &str,
        base_sha: &str,
        patch_of: PatchOf,
        run_id: u64,
        workflow_path: &str,
        config: ConfigRead,
    ) -> Result<Option<(Report, Config)>, Failure> {
        let base = CommitSha::from(base_sha);
        let head_sha = CommitSha::from(head);

        let wanted = &config.config.evidence.workflows;
        if !wanted.is_empty() && !wanted.iter().any(|w| workflow_matches(w, workflow_path)) {
            tracing::info!(
                workflow = workflow_path,
                "not an evidence workflow per the config; ignored"
            );
            return Ok(None);
        }

        // The artifact, first by listing (cheap), so a run of some other workflow is ignored early.
        let name = &config.config.evidence.artifact;
        let artifacts = t.client.run_artifacts(&t.repo, run_id).await?;
        let artifact = match artifacts.iter().find(|a| &a.name == name) {
            Some(a) => a,
            None if wanted.is_empty() => {
                tracing::info!(run_id, artifact = %name, "this run uploaded no evidence artifact; ignored");
                return Ok(None);
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
            head: head_sha,
            patch_of,
            run_id,
            artifact,
            scratch: &scratch,
            extracted: OnceLock::new(),
        };
        let judging = Judging {
            today: self.now().date_naive(),
            base_sha: Some(base_sha.to_owned()),
            head_sha: Some(head.to_owned()),
            workflow: (!workflow_path.is_empty()).then(|| workflow_path.to_owned()),
            history: None,
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
        Ok(Some((report, config.config)))
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

    /// The evidence workflow's run last judged for `head` (never some other workflow's run).
    async fn evidence_run(&self, t: &Target, head: &str) -> Result<Option<EvidenceRun>, Failure> {
        self.store
            .evidence_run(&t.repo.to_string(), head)
            .await
            .map_err(store_err)
    }

    pub(super) async fn reevaluate(&self, t: &Target, head: &str) -> Result<(), Failure> {
        if let Some(group) = self.merge_group_at(t, head).await? {
            return self.reevaluate_merge_group(t, &group).await;
        }
        match self.evidence_run(t, head).await? {
            Some(run) => {
                self.judge_head(t, head, run.run_id, &run.workflow_path, &[], true)
                    .await
            }
            // Nothing to judge. Not queued (that could wait forever): a later run overwrites this.
            None => {
                let why = format!(
                    "re-evaluation was requested, but no completed run of the evidence workflow is known for \
                     `{head}`; re-run the evidence workflow"
                );
                let fields = present::check_run::inconclusive(head, &why);
                self.upsert_check(t, &CommitSha::from(head), &fields).await.map(drop)
            }
        }
    }

    /// Re-run the evidence workflow; its `workflow_run` completed delivery brings the verdict.
    pub(super) async fn rerun(&self, t: &Target, head: &str) -> Result<(), Failure> {
        let Some(run) = self.evidence_run(t, head).await? else {
            tracing::info!("no evidence workflow run known for this head; nothing to re-run");
            return Ok(());
        };
        t.client.rerun_workflow(&t.repo, run.run_id).await?;
        tracing::info!(run_id = run.run_id, "evidence workflow re-run requested");
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
