//! The default branch's blindness map. A pull request merged into the default branch brought
//! code whose whole suite already ran with per-test coverage: the evidence its head was judged
//! on (or, through a merge queue, the evidence of the merge commit itself). That evidence is
//! mapped once per merge ([`crate::gate::blindness`], as `flakegate blindness` does) against
//! the ledger and config as merged and the flake history, and its summary kept per repository
//! ([`CodebaseMap`]): the expired-freezes issue says what each owner's freezes blind, and a
//! pull request's check says how many lines of the codebase its frozen witnesses alone watch.
//!
//! Only evidence that was judged here is read (a head with a recorded evidence run), from the
//! repository itself: a fork's artifact could say anything about code it did not write, so a
//! fork's merge leaves the map as it was. A map is informative, never a verdict: when one
//! cannot be made (the artifact expired, the ledger is invalid) the previous map stays and the
//! reason is logged.

use crate::evidence::{evidence_root, load_every_file, EvidenceSources};
use crate::gate::blindness::{self, BlindnessInput, CodebaseMap};
use crate::gate::config::Config;
use crate::gate::history::{tests_of_interest, History, Stabilities};
use crate::gate::ledger::{parse_ledger, Ledger};
use crate::gate::report::CodebaseBlindness;
use crate::gate::{Evidence, Report};
use crate::github::event::PullRequestEvent;
use crate::github::{CommitSha, GithubError, PullNumber};
use crate::store::{EvidenceRun, HistoryQuery};
use crate::worker::dispatch::Target;
use crate::worker::failure::{content, internal, store_err, Failure};
use crate::worker::judge::{settle, Scratch};
use crate::worker::Worker;
use anyhow::anyhow;
use std::collections::BTreeMap;

/// The store's subject of a repository's map (`publication`).
const MAP: &str = "blindness-map";

/// Why no map was made from a merge (logged; the previous map stays).
struct NoMap(String);

impl Worker {
    /// `pull_request` `closed` and merged: map the merged code, when its evidence is known.
    pub(in crate::worker) async fn pull_request_merged(&self, t: &Target, e: &PullRequestEvent) -> Result<(), Failure> {
        let number = e
            .number()
            .ok_or_else(|| internal(anyhow!("the pull_request payload has no number")))?;
        match self.map_merge(t, e, number).await? {
            Ok(map) => {
                tracing::info!(
                    pull_request = number,
                    sha = %map.sha,
                    blind = map.blind,
                    witnessed = map.witnessed,
                    "the default branch's blindness map was updated"
                );
            }
            Err(NoMap(why)) => tracing::info!(pull_request = number, "no blindness map from this merge: {why}"),
        }
        Ok(())
    }

    async fn map_merge(
        &self,
        t: &Target,
        e: &PullRequestEvent,
        number: u64,
    ) -> Result<Result<CodebaseMap, NoMap>, Failure> {
        let repo = t.repo.to_string();
        let Some(branch) = e.envelope.repository.default_branch.clone() else {
            return Ok(Err(NoMap("the delivery names no default branch".into())));
        };
        let pr = match t.client.pull_request(&t.repo, PullNumber(number)).await {
            Ok(pr) => pr,
            Err(GithubError::NotFound(_)) => return Ok(Err(NoMap("the pull request is gone".into()))),
            Err(e) => return Err(e.into()),
        };
        if pr.base.ref_name != branch {
            return Ok(Err(NoMap(format!(
                "merged into `{}`, not the default branch",
                pr.base.ref_name
            ))));
        }
        if pr.head.repo.as_ref().is_none_or(|r| r.full_name != repo) {
            return Ok(Err(NoMap("a fork's evidence is not read for the map".into())));
        }
        let head = pr.head.sha.as_str();
        let merge_sha = e
            .pull_request
            .merge_commit_sha
            .clone()
            .or(pr.merge_commit_sha.clone())
            .unwrap_or_else(|| head.to_owned());
        // A merge queue ran the evidence on the merge commit itself; else the head's stands for it.
        let mut found = None;
        for sha in [merge_sha.as_str(), head] {
            match self.store.evidence_run(&repo, sha).await.map_err(store_err)? {
                Some(run) if run.cut_short.is_none() => {
                    found = Some((sha.to_owned(), run));
                    break;
                }
                _ => {}
            }
        }
        let Some((evidence_head, run)) = found else {
            return Ok(Err(NoMap(format!("no completed evidence run was judged for `{head}`"))));
        };
        let stored = self.codebase_map(&repo).await;
        if stored.as_ref().is_some_and(|s| s.sha == merge_sha) {
            return Ok(Err(NoMap(format!("`{merge_sha}` is mapped already"))));
        }
        let at = CommitSha::from(merge_sha.as_str());
        let config = match settle(self.config_at(t, &at).await)? {
            Ok(c) => c.config,
            Err(why) => return Ok(Err(NoMap(format!("the config as merged: {why}")))),
        };
        let ledger = match self.ledger_at(t, &config, &at).await? {
            (_, Ok(l)) => l,
            (_, Err(why)) => return Ok(Err(NoMap(why))),
        };
        let (scratch, dir) = match self.fetch_evidence(t, &config, &run).await? {
            Ok(d) => d,
            Err(why) => return Ok(Err(why)),
        };
        let today = self.now().date_naive();
        // Reading and mapping the whole coverage is blocking work: off the runtime.
        let root = evidence_root(&dir);
        let l = ledger.clone();
        let evidence = blocking(move || {
            load_every_file(
                &EvidenceSources {
                    dir: Some(root),
                    ..EvidenceSources::default()
                },
                Some(&l),
            )
            .evidence
        })
        .await?;
        drop(scratch);
        let history = self.map_history(t, &config, &evidence).await;
        let computed = blocking(move || map_evidence(&evidence, &ledger, &config, history.as_ref(), today)).await?;
        let mut map = match computed {
            Ok(m) => CodebaseMap::of(&m, &branch, &merge_sha, today),
            Err(why) => return Ok(Err(why)),
        };
        map.pull_request = Some(number);
        map.evidence_head = evidence_head;
        map.run_id = run.run_id;
        map.merged_at = pr.merged_at.clone();
        if let Some(older) = &stored {
            if !map.replaces(older) {
                return Ok(Err(NoMap(format!(
                    "the map of a later merge (`{}`) is kept",
                    older.sha
                ))));
            }
        }
        let json = serde_json::to_string(&map).map_err(|e| internal(e.into()))?;
        self.store.set_publication(&repo, MAP, &json).await.map_err(store_err)?;
        Ok(Ok(map))
    }

    /// The repository's blindness map, if one was made (an unreadable one is none).
    pub(in crate::worker) async fn codebase_map(&self, repo: &str) -> Option<CodebaseMap> {
        let json = match self.store.publication(repo, MAP).await {
            Ok(j) => j?,
            Err(e) => {
                tracing::warn!("the blindness map could not be read: {e:#}");
                return None;
            }
        };
        serde_json::from_str(&json)
            .inspect_err(|e| tracing::warn!("the stored blindness map does not parse: {e}"))
            .ok()
    }

    /// What the report's frozen and not-stable witnesses leave blind across the codebase, from
    /// the map of the branch the pull request targets.
    pub(in crate::worker) async fn codebase_blindness(
        &self,
        repo: &str,
        base_ref: &str,
        report: &Report,
    ) -> Option<CodebaseBlindness> {
        let w = &report.witnesses;
        if w.frozen.is_empty() && w.unstable.is_empty() {
            return None;
        }
        let map = self.codebase_map(repo).await.filter(|m| m.branch == base_ref)?;
        map.for_witnesses(w.frozen.iter().chain(&w.unstable))
    }

    /// The ledger at `at` by the config's path: its bytes, and the ledger or why it is invalid
    /// (no file: nothing is frozen).
    pub(super) async fn ledger_at(
        &self,
        t: &Target,
        config: &Config,
        at: &CommitSha,
    ) -> Result<(Option<Vec<u8>>, Result<Ledger, String>), Failure> {
        let name = format!("{at}:{}", config.ledger);
        let bytes = t.client.file_at(&t.repo, &config.ledger, at).await.map_err(content)?;
        let ledger = match &bytes {
            None => Ok(Ledger::default()),
            Some(b) => std::str::from_utf8(b)
                .map_err(|e| format!("{name}: not UTF-8: {e}"))
                .and_then(|text| {
                    parse_ledger(&name, text, config.policy.max_freeze_days)
                        .map_err(|errors| errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))
                }),
        };
        Ok((bytes, ledger))
    }

    /// The run's evidence artifact, downloaded and extracted into a scratch directory.
    async fn fetch_evidence(
        &self,
        t: &Target,
        config: &Config,
        run: &EvidenceRun,
    ) -> Result<Result<(Scratch, std::path::PathBuf), NoMap>, Failure> {
        let name = &config.evidence.artifact;
        let artifacts = t.client.run_artifacts(&t.repo, run.run_id).await?;
        let Some(artifact) = artifacts.iter().find(|a| &a.name == name && !a.expired) else {
            return Ok(Err(NoMap(format!(
                "workflow run {} has no artifact `{name}` any more",
                run.run_id
            ))));
        };
        let scratch = self.scratch_dir()?;
        let limits = &self.config.artifact_limits;
        match t
            .client
            .download_artifact(&t.repo, artifact.id, scratch.path(), limits)
            .await
        {
            Ok(dir) => Ok(Ok((scratch, dir))),
            Err(GithubError::Gone(why)) => Ok(Err(NoMap(format!("the artifact expired: {why}")))),
            Err(e) => Err(e.into()),
        }
    }

    /// The flake history of the tests the evidence names (none without the repository's id).
    async fn map_history(&self, t: &Target, config: &Config, evidence: &Evidence) -> Option<History> {
        let repo_id = i64::try_from(t.repo_id?).ok()?;
        let tests: Vec<_> = tests_of_interest(evidence.coverage.as_ref(), evidence.results.as_ref())
            .into_iter()
            .collect();
        let query = HistoryQuery {
            tests: &tests,
            base_sha: None,
            head_sha: None,
            now: self.now(),
            policy: config.history,
            exclude: None,
        };
        self.store
            .history_for(repo_id, &query)
            .await
            .inspect_err(|e| tracing::warn!("the blindness map is made without the flake history: {e:#}"))
            .ok()
    }
}

/// `f` on a blocking thread.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Failure> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| internal(anyhow!("the blindness map's task: {e}")))
}

/// The map of `evidence` (blocking: it judges every measured line).
fn map_evidence(
    evidence: &Evidence,
    ledger: &Ledger,
    config: &Config,
    history: Option<&History>,
    today: chrono::NaiveDate,
) -> Result<blindness::BlindnessMap, NoMap> {
    let Some(coverage) = evidence.coverage.as_ref() else {
        let why = evidence
            .problems
            .first()
            .map_or_else(|| "the evidence has no coverage".to_owned(), ToString::to_string);
        return Err(NoMap(why));
    };
    let input = BlindnessInput {
        coverage,
        coverage_file: evidence.coverage_file.as_deref().unwrap_or("coverage"),
        ledger,
        stab: Stabilities::new(evidence.probe.as_ref(), history),
        results: evidence.results.as_ref(),
        policy: &config.policy,
        sources: &BTreeMap::new(),
        today,
    };
    blindness::map(&input).map_err(|e| NoMap(e.to_string()))
}
