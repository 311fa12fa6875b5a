//! The ledger's upkeep (`ledger_maintenance: on`, the default), run with the expired-freezes
//! issue under the repository's store lock: the plan the evidence supports
//! (`gate::ledger::maintain`, on the flake history of the repository's id), probe runs asked of
//! the evidence workflow (`workflow_dispatch`) for entries that need more runs — once per test
//! per sweep interval, within a budget per installation — and the change proposed in one pull
//! request from the App's own branch ([`LEDGER_BRANCH`]), updated in place, rebased on the
//! ledger as the default branch has it, closed when nothing is left. A commit the App did not
//! make on that branch stops it from touching the branch. Without the permissions
//! (`actions: write`, `contents: write`, `pull_requests: write`) the change goes into the
//! expired-freezes issue as a patch, and a refused dispatch as a sentence: nothing is retried
//! in a loop.

use crate::gate::codeowners::{CodeOwners, CODEOWNERS_PATHS};
use crate::gate::config::Config;
use crate::gate::history::Stabilities;
use crate::gate::ledger::maintain::{codeowner_of, plan, MaintainPolicy, Plan};
use crate::gate::ledger::Ledger;
use crate::gate::TestId;
use crate::github::{CommitSha, GithubError};
use crate::present::ledger_upkeep::{
    ledger_patch, ledger_pull_body, UpkeepNote, LEDGER_COMMIT_MESSAGE, LEDGER_PULL_TITLE,
};
use crate::store::HistoryQuery;
use crate::worker::dispatch::Target;
use crate::worker::failure::{content, store_err, Failure};
use crate::worker::post::sha256_hex;
use crate::worker::Worker;
use serde::{Deserialize, Serialize};

/// The App's branch for its ledger pull request.
pub const LEDGER_BRANCH: &str = "flakegate/ledger";
/// The publication subject under which the pull request's state is kept.
const PROPOSAL: &str = "ledger-proposal";
/// The publication subject under which the last dispatch waiting for its run is kept.
const DISPATCH: &str = "ledger-dispatch";
/// Probe dispatches per installation per sweep interval.
const DISPATCH_BUDGET: usize = 10;
/// Tests named in one dispatch.
const DISPATCH_TESTS: usize = 50;
/// Runs asked per dispatch: at least a probe's K, at most this.
const DISPATCH_RUNS: (u64, u64) = (7, 50);
/// What triggered a run the upkeep asked for (`workflow_run.event`).
pub(in crate::worker) const DISPATCHED: &str = "workflow_dispatch";
/// The evidence workflow when the config names none.
const DEFAULT_WORKFLOW: &str = "flakegate-evidence.yml";

/// What the App last wrote for the pull request: its number, the branch's commit it made, and
/// a digest of what it proposed (nothing is sent when that is unchanged).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Proposal {
    pull: Option<u64>,
    branch_sha: Option<String>,
    digest: Option<String>,
}

/// A dispatch whose run has not come yet.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Waiting {
    at_ms: i64,
    tests: Vec<String>,
}

/// What the upkeep did, for the expired-freezes issue.
pub(in crate::worker) struct Upkeep {
    pub plan: Option<Plan>,
    pub note: UpkeepNote,
}

/// A 403, or a 404/422 on a write: the installation may not do this (or the workflow cannot).
fn refused(e: &GithubError) -> bool {
    matches!(e, GithubError::NotFound(_))
        || matches!(
            e,
            GithubError::Fatal {
                status: Some(403 | 422),
                ..
            }
        )
}

impl Worker {
    /// Plan the ledger's upkeep on `branch` and act on it. Never fails the issue's job for what
    /// the installation may not do: that becomes a sentence in the note.
    pub(in crate::worker) async fn ledger_upkeep(
        &self,
        t: &Target,
        branch: &str,
        config: &Config,
        ledger: &Ledger,
        ledger_text: Option<&[u8]>,
    ) -> Result<Upkeep, Failure> {
        let today = self.now().date_naive();
        let (history, candidates) = self.upkeep_history(t, config, ledger).await?;
        let codeowners = self.codeowners_at(t, branch).await?;
        let owner_of = |test: &TestId| codeowners.as_ref().and_then(|c| codeowner_of(c, test));
        let policy = MaintainPolicy::of(config);
        let stab = Stabilities::new(None, history.as_ref());
        let plan = plan(ledger, &stab, &candidates, &owner_of, &policy, today);
        let mut note = UpkeepNote::default();
        self.ask_for_runs(t, branch, config, &plan, &mut note).await?;
        self.propose(t, branch, config, &plan, ledger_text, &mut note).await?;
        Ok(Upkeep { plan: Some(plan), note })
    }

    async fn upkeep_history(
        &self,
        t: &Target,
        config: &Config,
        ledger: &Ledger,
    ) -> Result<(Option<crate::gate::history::History>, Vec<TestId>), Failure> {
        let Some(repo_id) = t.repo_id.and_then(|id| i64::try_from(id).ok()) else {
            return Ok((None, Vec::new()));
        };
        let now = self.now();
        let candidates = self
            .store
            .history_unstable_tests(repo_id, now, config.history.window_days)
            .await
            .map_err(store_err)?;
        let mut tests: Vec<TestId> = ledger.entries.iter().map(|e| TestId::new(e.test.clone())).collect();
        tests.extend(candidates.iter().cloned());
        let q = HistoryQuery {
            tests: &tests,
            base_sha: None,
            head_sha: None,
            now,
            policy: config.history,
            exclude: None,
        };
        let h = self.store.history_for(repo_id, &q).await.map_err(store_err)?;
        Ok((Some(h), candidates))
    }

    async fn codeowners_at(&self, t: &Target, branch: &str) -> Result<Option<CodeOwners>, Failure> {
        let at = CommitSha::from(branch);
        for path in CODEOWNERS_PATHS {
            if let Some(bytes) = t.client.file_at(&t.repo, path, &at).await.map_err(content)? {
                return Ok(Some(CodeOwners::parse(&String::from_utf8_lossy(&bytes))));
            }
        }
        Ok(None)
    }

    /// One dispatch of the evidence workflow for the tests the plan wants runs of that were not
    /// asked for within the sweep interval, within the installation's budget.
    async fn ask_for_runs(
        &self,
        t: &Target,
        branch: &str,
        config: &Config,
        plan: &Plan,
        note: &mut UpkeepNote,
    ) -> Result<(), Failure> {
        let now = self.now();
        let repo = t.repo.to_string();
        // The runs asked for last: still awaited, or given up after the evidence timeout.
        let waiting: Option<Waiting> = self
            .store
            .publication(&repo, DISPATCH)
            .await
            .map_err(store_err)?
            .and_then(|s| serde_json::from_str(&s).ok());
        if let Some(w) = waiting.filter(|w| !w.tests.is_empty()) {
            let timeout = i64::from(config.evidence.timeout_minutes) * 60_000;
            if now.timestamp_millis() - w.at_ms > timeout {
                let at = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(w.at_ms)
                    .map_or_else(|| "?".into(), |d| d.format("%Y-%m-%d %H:%M UTC").to_string());
                note.problems.push(format!(
                    "the probe runs asked for at {at} ({} test(s)) did not come within evidence.timeout_minutes \
                     ({} minutes): given up; flakegate asks again at the next sweep",
                    w.tests.len(),
                    config.evidence.timeout_minutes
                ));
                self.store
                    .set_publication(&repo, DISPATCH, "{}")
                    .await
                    .map_err(store_err)?;
            } else {
                note.asked = w.tests;
            }
        }
        let wanted: Vec<&crate::gate::ledger::maintain::Pending> =
            plan.pending.iter().filter(|p| p.wants_runs).collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let interval = self
            .config
            .sweep_interval
            .unwrap_or(crate::app_config::DEFAULT_SWEEP_INTERVAL);
        // A holder of its own: a lock already held by this worker must not count as free.
        let mut nonce = [0u8; 8];
        getrandom::getrandom(&mut nonce).map_err(|e| crate::worker::failure::internal(anyhow::anyhow!("{e}")))?;
        let holder = format!("{}/{repo}/{}", self.config.worker_id, hex::encode(nonce));
        let owner = &holder;
        let mut tests = Vec::new();
        let mut runs = DISPATCH_RUNS.0;
        for p in wanted.iter().take(DISPATCH_TESTS) {
            let lock = format!("ledger-probe/{repo}/{}", p.test);
            if self
                .store
                .try_lock(&lock, owner, now, interval)
                .await
                .map_err(store_err)?
            {
                tests.push(p.test.clone());
                runs = runs.max(p.runs_wanted.min(DISPATCH_RUNS.1));
            }
        }
        if tests.is_empty() {
            return Ok(());
        }
        let slot = now.timestamp().div_euclid(interval.as_secs().max(1) as i64);
        let installation = t.client.installation_id().0;
        let mut budget = false;
        for i in 0..DISPATCH_BUDGET {
            let name = format!("ledger-probe-budget/{installation}/{slot}/{i}");
            if self
                .store
                .try_lock(&name, &format!("{owner}/{repo}"), now, interval)
                .await
                .map_err(store_err)?
            {
                budget = true;
                break;
            }
        }
        let release = |tests: Vec<String>| {
            let repo = repo.clone();
            async move {
                for test in tests {
                    let _ = self.store.unlock(&format!("ledger-probe/{repo}/{test}"), owner).await;
                }
            }
        };
        if !budget {
            note.problems.push(format!(
                "probe runs for {} test(s) wait for the next sweep: this installation's {DISPATCH_BUDGET} dispatches \
                 of the interval are used",
                tests.len()
            ));
            release(tests).await;
            return Ok(());
        }
        let workflow = config
            .evidence
            .workflows
            .first()
            .map(|w| w.rsplit('/').next().unwrap_or(w).to_string())
            .unwrap_or_else(|| DEFAULT_WORKFLOW.to_string());
        let inputs = serde_json::json!({ "tests": tests.join("\n"), "k": runs.to_string() });
        match t.client.dispatch_workflow(&t.repo, &workflow, branch, &inputs).await {
            Ok(()) => {
                tracing::info!(tests = tests.len(), runs, %workflow, "ledger upkeep: probe runs asked for");
                let w = Waiting {
                    at_ms: now.timestamp_millis(),
                    tests: tests.clone(),
                };
                let json = serde_json::to_string(&w).map_err(|e| store_err(e.into()))?;
                self.store
                    .set_publication(&repo, DISPATCH, &json)
                    .await
                    .map_err(store_err)?;
                note.asked = tests;
            }
            Err(e) if refused(&e) => {
                tracing::warn!("ledger upkeep: the dispatch was refused: {e}");
                note.problems.push(format!(
                    "flakegate could not ask the evidence workflow {workflow} for probe runs on {branch} ({e}). Add \
                     the workflow_dispatch trigger with the inputs tests and k to it (the template \
                     templates/workflows/flakegate-evidence.yml has them) and grant the App Actions: write; until \
                     then the entries above wait for runs from pull requests."
                ));
            }
            Err(e) => {
                // Asked again at the next sweep: the locks go, the issue is still written.
                tracing::warn!("ledger upkeep: the dispatch failed: {e}");
                note.problems.push(format!(
                    "probe runs could not be asked for this time ({e}); flakegate asks again at the next sweep"
                ));
                release(tests).await;
            }
        }
        Ok(())
    }

    /// Keep the one ledger pull request in step with `plan`.
    async fn propose(
        &self,
        t: &Target,
        branch: &str,
        config: &Config,
        plan: &Plan,
        ledger_text: Option<&[u8]>,
        note: &mut UpkeepNote,
    ) -> Result<(), Failure> {
        let repo = t.repo.to_string();
        let mut state: Proposal = self
            .store
            .publication(&repo, PROPOSAL)
            .await
            .map_err(store_err)?
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        if plan.ledger.is_none() && state.pull.is_none() && state.branch_sha.is_none() {
            // Nothing to propose, and nothing proposed before: no call at all.
            return Ok(());
        }
        let on_branch = t.client.branch_head(&t.repo, LEDGER_BRANCH).await;
        let on_branch = match on_branch {
            Ok(h) => h,
            Err(e) if refused(&e) => None,
            Err(e) => return Err(e.into()),
        };
        let ours = match (&on_branch, &state.branch_sha) {
            (None, _) => true,
            (Some(h), Some(mine)) => h.as_str() == mine,
            (Some(_), None) => false,
        };
        let Some(proposed) = &plan.ledger else {
            // Nothing left to change: the pull request goes, and the branch if it is still ours.
            if let Some(n) = state.pull {
                match t.client.update_pull(&t.repo, n, None, Some("closed")).await {
                    Ok(_) | Err(GithubError::NotFound(_)) => {}
                    Err(e) if refused(&e) => {}
                    Err(e) => return Err(e.into()),
                }
                if ours && on_branch.is_some() {
                    let _ = t.client.delete_branch(&t.repo, LEDGER_BRANCH).await;
                }
                tracing::info!(pull = n, "ledger upkeep: nothing left to change; pull request closed");
            }
            if state.pull.is_some() || state.branch_sha.is_some() {
                self.remember_proposal(&repo, &Proposal::default()).await?;
            }
            return Ok(());
        };
        if !ours {
            note.pull = state.pull;
            note.problems.push(format!(
                "the branch {LEDGER_BRANCH} has commits flakegate did not make: it is left as it is. Merge or close its \
                 pull request, or delete the branch, and flakegate proposes again."
            ));
            return Ok(());
        }
        let old = ledger_text
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        let body = ledger_pull_body(plan, &config.ledger, branch, config);
        let base = match t.client.branch_head(&t.repo, branch).await {
            Ok(Some(h)) => h,
            Ok(None) => {
                return Err(Failure::Retryable(anyhow::anyhow!(
                    "the default branch {branch} has no head"
                )))
            }
            Err(e) => return Err(e.into()),
        };
        let digest = sha256_hex(&format!("{base}\n{proposed}\n{body}"));
        if state.digest.as_deref() == Some(digest.as_str()) && state.pull.is_some() {
            note.pull = state.pull;
            return Ok(());
        }
        let written = self
            .write_proposal(
                t,
                branch,
                config,
                &base,
                on_branch.is_some(),
                proposed,
                &body,
                state.pull,
            )
            .await;
        match written {
            Ok((pull, sha)) => {
                state = Proposal {
                    pull: Some(pull),
                    branch_sha: Some(sha.to_string()),
                    digest: Some(digest),
                };
                self.remember_proposal(&repo, &state).await?;
                note.pull = Some(pull);
                tracing::info!(
                    pull,
                    changes = plan.changes.len(),
                    "ledger upkeep: pull request up to date"
                );
            }
            Err(e) if refused(&e) => {
                tracing::warn!("ledger upkeep: the pull request could not be written: {e}");
                note.patch = Some(ledger_patch(&old, proposed, &config.ledger));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// The branch reset onto `base`, the ledger committed on it, the pull request opened or
    /// its body replaced. Returns the pull request and the branch's new commit.
    #[allow(clippy::too_many_arguments)]
    async fn write_proposal(
        &self,
        t: &Target,
        branch: &str,
        config: &Config,
        base: &CommitSha,
        exists: bool,
        proposed: &str,
        body: &str,
        known: Option<u64>,
    ) -> Result<(u64, CommitSha), GithubError> {
        if exists {
            t.client.move_branch(&t.repo, LEDGER_BRANCH, base).await?;
        } else {
            t.client.create_branch(&t.repo, LEDGER_BRANCH, base).await?;
        }
        let blob = t.client.file_sha(&t.repo, &config.ledger, LEDGER_BRANCH).await?;
        let sha = t
            .client
            .put_file(
                &t.repo,
                LEDGER_BRANCH,
                &config.ledger,
                LEDGER_COMMIT_MESSAGE,
                proposed.as_bytes(),
                blob.as_deref(),
            )
            .await?;
        // The pull request last opened, while it is open: one a person closed or merged is
        // theirs to keep closed, and a changed proposal opens a new one.
        let open = match known {
            Some(n) => match t.client.update_pull(&t.repo, n, Some(body), None).await {
                Ok(p) if p.state.as_deref() != Some("closed") => Some(p.number),
                Ok(_) | Err(GithubError::NotFound(_)) => None,
                Err(GithubError::Fatal { status: Some(422), .. }) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        let pull = match open {
            Some(n) => n,
            None => match t.client.open_pull_from(&t.repo, LEDGER_BRANCH).await? {
                Some(p) => t.client.update_pull(&t.repo, p.number, Some(body), None).await?.number,
                None => {
                    t.client
                        .create_pull(&t.repo, LEDGER_PULL_TITLE, LEDGER_BRANCH, branch, body)
                        .await?
                        .number
                }
            },
        };
        Ok((pull, sha))
    }

    async fn remember_proposal(&self, repo: &str, p: &Proposal) -> Result<(), Failure> {
        let json = serde_json::to_string(p).map_err(|e| store_err(e.into()))?;
        self.store
            .set_publication(repo, PROPOSAL, &json)
            .await
            .map_err(store_err)
    }

    /// A dispatched run of the evidence workflow completed: its probe runs join the flake
    /// history — only a run on the default branch (reviewed code, not a branch anyone with
    /// write access dispatched it on), of the evidence workflow, that completed and whose
    /// probe ran the commit the run did — and the ledger's upkeep runs again with them.
    pub(in crate::worker) async fn upkeep_run_completed(
        &self,
        t: &Target,
        run: &crate::github::event::WorkflowRun,
        default_branch: Option<&str>,
    ) -> Result<(), Failure> {
        let Some(branch) = default_branch.filter(|b| run.head_branch.as_deref() == Some(*b)) else {
            tracing::info!(run = run.id, branch = ?run.head_branch, "a dispatched run off the default branch: not history");
            return Ok(());
        };
        let Some(repo_id) = t.repo_id.and_then(|id| i64::try_from(id).ok()) else {
            return Ok(());
        };
        if crate::worker::judge::RunRef::cut_short(run.conclusion.as_deref()).is_some() {
            tracing::info!(run = run.id, conclusion = ?run.conclusion, "a dispatched run cut short: not history");
            return Ok(());
        }
        let head = CommitSha::from(run.head_sha.as_str());
        let config = self.config_at(t, &head).await?.config;
        let path = run.path.as_deref().unwrap_or("");
        let evidence_workflow = if config.evidence.workflows.is_empty() {
            crate::worker::judge::workflow_matches(DEFAULT_WORKFLOW, path)
        } else {
            config
                .evidence
                .workflows
                .iter()
                .any(|w| crate::worker::judge::workflow_matches(w, path))
        };
        if !evidence_workflow {
            return Ok(());
        }
        let observations = self.dispatched_probe(t, run, &config).await?;
        if observations.is_empty() {
            return Ok(());
        }
        let attempt = run.run_attempt.unwrap_or(1);
        let key = crate::worker::judge::RunRef::key(run.id, attempt);
        let added = self
            .store
            .record_history(repo_id, &key, &observations, self.now())
            .await
            .map_err(store_err)?;
        tracing::info!(run = run.id, observations = ?added, "dispatched probe runs added to the flake history");
        // The runs asked for came.
        self.store
            .set_publication(&t.repo.to_string(), DISPATCH, "{}")
            .await
            .map_err(store_err)?;
        self.expiry_issue(t, branch).await
    }

    /// The observations of a dispatched run's probe (none when it uploaded no probe, or one
    /// that ran another commit).
    async fn dispatched_probe(
        &self,
        t: &Target,
        run: &crate::github::event::WorkflowRun,
        config: &Config,
    ) -> Result<Vec<crate::gate::history::Observation>, Failure> {
        let artifacts = t.client.run_artifacts(&t.repo, run.id).await?;
        let Some(artifact) = artifacts
            .iter()
            .find(|a| a.name == config.evidence.artifact && !a.expired)
        else {
            tracing::warn!(run = run.id, "a dispatched run uploaded no evidence artifact");
            return Ok(Vec::new());
        };
        let scratch = self.scratch_dir()?;
        let extracted = t
            .client
            .download_artifact(&t.repo, artifact.id, scratch.path(), &self.config.artifact_limits)
            .await?;
        let root = crate::evidence::evidence_root(&extracted);
        let sources = crate::evidence::EvidenceSources {
            probe: Some(root.join("probe")),
            meta: Some(root.join("meta.json")),
            ..Default::default()
        };
        let loaded =
            crate::evidence::load_evidence(&sources, &crate::gate::Patch::default(), None, &Default::default());
        let ev = loaded.evidence;
        if let Some(p) = ev.problems.first() {
            tracing::warn!(run = run.id, "a dispatched run's probe is unreadable: {p}");
            return Ok(Vec::new());
        }
        let ran = ev.meta.as_ref().and_then(|m| m.base_sha.as_deref());
        if ran != Some(run.head_sha.as_str()) {
            tracing::warn!(run = run.id, ran = ?ran, "a dispatched run's probe names another commit: not history");
            return Ok(Vec::new());
        }
        let Some(probe) = ev.probe else {
            return Ok(Vec::new());
        };
        let source = crate::gate::history::Source {
            sha: run.head_sha.clone(),
            kind: crate::gate::history::RunKind::Probe,
            pr: None,
            run_id: Some(run.id),
            attempt: run.run_attempt,
            date: self.now().date_naive(),
        };
        Ok(crate::gate::history::probe_observations(&probe, &source))
    }
}
