//! The GitHub side of the one pipeline: a head judged with one workflow run's evidence. The
//! files are read through GitHub ([`PullRequestFiles`], the App's side of
//! `evidence::assemble::Sources`): config, ledger and CODEOWNERS at the base, the ledger at the
//! head, the diff (a pull request's, or a merge group's `base...head` compared), and the run's
//! evidence artifact, extracted into a scratch directory. The `workflow_run`, `merge_group` and
//! `check_run` handlers judge with it.

use super::dispatch::Target;
use super::failure::{content, user, Failure, Fatal};
use super::Worker;
use crate::evidence::assemble::{self, AssembleError, ConfigRead, HistoryAccess, Judging, Named, Sources};
use crate::evidence::{artifact_relative, evidence_root, EvidenceSources, ReadOnce};
use crate::gate::config::{Config, CONFIG_PATH};
use crate::gate::history::RecordContext;
use crate::gate::Report;
use crate::github::{Artifact, CommitSha, GithubError, PatchSource, PullNumber};
use anyhow::Context as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

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
    /// Its head is in another repository (or a deleted one): its runs may show a test
    /// unstable in the flake history, never stable.
    pub(super) fork: bool,
}

/// The evidence run being judged: its id, its attempt when the event said (a re-evaluation
/// does not: it judges the latest recorded attempt again), and whether this judgement adds
/// the attempt to the flake history (once per attempt, however many pull requests share it).
#[derive(Debug, Clone, Copy)]
pub(super) struct RunRef {
    pub(super) id: u64,
    pub(super) attempt: Option<u32>,
    pub(super) record: bool,
    /// How the run ended when it did not complete ([`RunRef::cut_short`]).
    pub(super) cut_short: Option<&'static str>,
}

impl RunRef {
    /// A workflow run's conclusion when it says the run did not complete: the tests passing
    /// (`success`) or failing (`failure`) is a completed run; `cancelled`, `timed_out` and the
    /// rest may have left a partial artifact, which is never judged. No conclusion (a payload
    /// stored before conclusions were kept) is judged as before.
    pub(super) fn cut_short(conclusion: Option<&str>) -> Option<&'static str> {
        const CUT_SHORT: [&str; 7] = [
            "cancelled",
            "timed_out",
            "startup_failure",
            "action_required",
            "stale",
            "skipped",
            "neutral",
        ];
        match conclusion? {
            "success" | "failure" => None,
            c => Some(CUT_SHORT.into_iter().find(|k| *k == c).unwrap_or("unknown")),
        }
    }

    pub(super) fn key(id: u64, attempt: u32) -> String {
        format!("run:{id}:{attempt}")
    }
}

/// What judging one pull request with a workflow run gave.
pub(super) enum Judged {
    /// The run is not the evidence this pull request's config asks for.
    NotEvidence,
    /// A verdict, with the config it was reached under.
    Report(Box<Report>, Box<Config>),
    /// No verdict could be reached: INCONCLUSIVE saying why. `evidence`: the run is this
    /// pull request's evidence workflow (known only once its config could be read).
    Failed { why: Fatal, evidence: bool },
}

/// A failure retrying cannot fix becomes an INCONCLUSIVE (`Ok(Err(why))`); a retryable one
/// fails the job. An internal one is logged here in full: the check run will not show it.
pub(super) fn settle<T>(r: Result<T, Failure>) -> Result<Result<T, Fatal>, Failure> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(Failure::Fatal(why)) => {
            if let Fatal::Internal(e) = &why {
                tracing::error!("no verdict, an internal error: {e:#}");
            }
            Ok(Err(why))
        }
        Err(e) => Err(e),
    }
}

/// A directory removed when dropped.
pub(super) struct Scratch(PathBuf);

impl Scratch {
    pub(super) fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

static SCRATCH_SEQ: AtomicU64 = AtomicU64::new(0);

/// One head's evidence, fetched and read once for every pull request judged on it: the run's
/// artifact listing, each artifact downloaded and extracted once into one scratch directory
/// (removed with it), and the evidence parsed from it ([`ReadOnce`]). Each pull request is
/// still judged against its own base from that one read.
pub(super) struct HeadRead {
    scratch: Scratch,
    /// Workflow run id → its artifacts as listed.
    listed: tokio::sync::Mutex<Vec<(u64, Vec<Artifact>)>>,
    /// Artifact id → where it was extracted.
    extracted: tokio::sync::Mutex<Vec<(u64, PathBuf)>>,
    parsed: Arc<ReadOnce>,
}

impl HeadRead {
    pub(super) fn new(worker: &Worker) -> Result<HeadRead, Failure> {
        Ok(HeadRead {
            scratch: worker.scratch()?,
            listed: Default::default(),
            extracted: Default::default(),
            parsed: Default::default(),
        })
    }

    /// How many times an evidence directory was parsed for this head.
    pub(super) fn parses(&self) -> usize {
        self.parsed.reads()
    }

    async fn artifacts(&self, t: &Target, run_id: u64) -> Result<Vec<Artifact>, Failure> {
        let mut listed = self.listed.lock().await;
        if let Some((_, a)) = listed.iter().find(|(id, _)| *id == run_id) {
            return Ok(a.clone());
        }
        let artifacts = t.client.run_artifacts(&t.repo, run_id).await?;
        listed.push((run_id, artifacts.clone()));
        Ok(artifacts)
    }
}

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
    read: &'a HeadRead,
    /// Where the artifact was extracted, once it was.
    extracted: OnceLock<PathBuf>,
}

impl PullRequestFiles<'_> {
    async fn file_at(&self, path: &str, sha: &CommitSha) -> Result<Option<Named>, Failure> {
        let bytes = self.t.client.file_at(&self.t.repo, path, sha).await.map_err(content)?;
        Ok(bytes.map(|b| Named::new(format!("{sha}:{path}"), b)))
    }
}

impl Sources for PullRequestFiles<'_> {
    type Error = Failure;

    async fn config(&self) -> Result<Option<Named>, Failure> {
        self.file_at(CONFIG_PATH, &self.base).await
    }

    async fn patch(&self) -> Result<Named, Failure> {
        let (base, head) = (&self.base, &self.head);
        Ok(match self.patch_of {
            PatchOf::Pull(number) => match self.t.client.pull_diff(&self.t.repo, number).await.map_err(content)? {
                PatchSource::Diff(d) => Named::new(format!("pull request {number} diff"), d),
                PatchSource::Files(f) => Named::new(format!("pull request {number} files"), f.into_bytes()),
            },
            PatchOf::Compare => match self
                .t
                .client
                .compare_diff(&self.t.repo, base, head)
                .await
                .map_err(content)?
            {
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
        // Held while downloading: the next pull request of the head waits and reads the same.
        let mut extracted = self.read.extracted.lock().await;
        let known = extracted
            .iter()
            .find(|(id, _)| *id == self.artifact.id)
            .map(|(_, d)| d.clone());
        let dest = self.read.scratch.0.join(self.artifact.id.to_string());
        let fetched = match known {
            Some(dir) => Ok(dir),
            None => {
                std::fs::create_dir_all(&dest)
                    .with_context(|| format!("creating scratch directory {}", dest.display()))
                    .map_err(Failure::Retryable)?;
                self.t
                    .client
                    .download_artifact(&self.t.repo, self.artifact.id, &dest, limits)
                    .await
            }
        };
        let extracted_dir = match fetched {
            Ok(dir) => {
                if !extracted.iter().any(|(id, _)| *id == self.artifact.id) {
                    extracted.push((self.artifact.id, dir.clone()));
                }
                dir
            }
            // Listed as live a moment ago, expired by the time it was fetched.
            Err(GithubError::Gone(why)) => {
                return Err(user(format!(
                    "the artifact `{name}` of workflow run {run_id} has expired ({why}); re-run the workflow"
                )))
            }
            Err(e) => return Err(e.into()),
        };
        drop(extracted);
        let dir = evidence_root(&extracted_dir);
        let _ = self.extracted.set(extracted_dir);
        Ok(EvidenceSources {
            dir: Some(dir),
            read_once: Some(self.read.parsed.clone()),
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
    /// The repository configuration at `sha` (defaults when there is none).
    pub(super) async fn config_at(&self, t: &Target, sha: &CommitSha) -> Result<ConfigRead, Failure> {
        let file = t
            .client
            .file_at(&t.repo, CONFIG_PATH, sha)
            .await
            .map_err(content)?
            .map(|b| Named::new(format!("{sha}:{CONFIG_PATH}"), b));
        ConfigRead::from_file(file.as_ref()).map_err(|e| user(format!("repository config: {e}")))
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
        run: RunRef,
        workflow_path: &str,
        config: ConfigRead,
        pr: Option<&PrRef>,
        read: &HeadRead,
    ) -> Result<Option<(Report, Config)>, Failure> {
        let run_id = run.id;
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
        let artifacts = read.artifacts(t, run_id).await?;
        let artifact = match artifacts.iter().find(|a| &a.name == name) {
            Some(a) => a,
            None if wanted.is_empty() => {
                tracing::info!(run_id, artifact = %name, "this run uploaded no evidence artifact; ignored");
                return Ok(None);
            }
            None => {
                return Err(user(format!(
                    "workflow run {run_id} ({workflow_path}) finished without uploading the artifact `{name}`"
                )))
            }
        };
        if artifact.expired {
            return Err(user(format!(
                "the artifact `{name}` of workflow run {run_id} has expired; re-run the workflow"
            )));
        }
        if let Some(how) = run.cut_short {
            return Err(user(format!(
                "workflow run {run_id} ({workflow_path}) did not complete (its conclusion: `{how}`): its evidence \
                 may be partial and is not judged; re-run the workflow"
            )));
        }

        let files = PullRequestFiles {
            worker: self,
            t,
            base,
            head: head_sha,
            patch_of,
            run_id,
            artifact,
            read,
            extracted: OnceLock::new(),
        };
        let judging = Judging {
            today: self.now().date_naive(),
            base_sha: Some(base_sha.to_owned()),
            head_sha: Some(head.to_owned()),
            workflow: (!workflow_path.is_empty()).then(|| workflow_path.to_owned()),
            history: self.history_access(t, run, pr).await,
        };
        let mut report = assemble::evaluate(&files, &config, judging)
            .await
            .map_err(|e| match e {
                AssembleError::Source(f) => f,
                AssembleError::Config(e) => user(format!("repository config: {e}")),
                AssembleError::Patch(e) => user(format!("the patch: {e}")),
            })?;
        if let Some(extracted) = files.extracted.get() {
            artifact_relative(&mut report, extracted, name);
        }
        if let Some(pr) = pr {
            report.codebase = self
                .codebase_blindness(&t.repo.to_string(), &pr.base_ref, &report)
                .await;
        }
        Ok(Some((report, config.config)))
    }

    /// The repository's flake history: read for every judgement, added to once per run attempt
    /// (keyed by the repository's id, so a rename keeps it). Without the repository's id
    /// there is no history.
    async fn history_access(&self, t: &Target, run: RunRef, pr: Option<&PrRef>) -> Option<HistoryAccess> {
        let repo_id = i64::try_from(t.repo_id?).ok()?;
        let now = self.now();
        // The run's own observations, when recorded already, are not read as history.
        let exclude = match run.attempt {
            Some(attempt) => Some(RunRef::key(run.id, attempt)),
            None => match self.store.history_run_key(repo_id, run.id).await {
                Ok(key) => key,
                Err(e) => {
                    tracing::warn!("flake history: the run's recorded attempt could not be read: {e:#}");
                    None
                }
            },
        };
        let record = run.attempt.filter(|_| run.record).map(|attempt| {
            (
                RunRef::key(run.id, attempt),
                RecordContext {
                    pr: pr.map(|p| p.number),
                    run_id: Some(run.id),
                    attempt: Some(attempt),
                    date: now.date_naive(),
                    fork: pr.is_some_and(|p| p.fork),
                },
            )
        });
        Some(HistoryAccess {
            store: (*self.store).clone(),
            repo_id,
            now,
            record,
            exclude,
        })
    }

    /// A scratch directory of the job's own, removed with the value.
    pub(super) fn scratch_dir(&self) -> Result<Scratch, Failure> {
        self.scratch()
    }

    fn scratch(&self) -> Result<Scratch, Failure> {
        let dir = self.config.scratch_dir.join(format!(
            "flakegate-job-{}-{}",
            std::process::id(),
            SCRATCH_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating scratch directory {}", dir.display()))
            .map_err(Failure::Retryable)?;
        Ok(Scratch(dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_run_whose_tests_passed_or_failed_is_complete() {
        for complete in [None, Some("success"), Some("failure")] {
            assert_eq!(RunRef::cut_short(complete), None, "{complete:?}");
        }
        assert_eq!(RunRef::cut_short(Some("cancelled")), Some("cancelled"));
        assert_eq!(RunRef::cut_short(Some("timed_out")), Some("timed_out"));
        assert_eq!(RunRef::cut_short(Some("something_new")), Some("unknown"));
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
}
