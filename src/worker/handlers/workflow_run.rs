//! `workflow_run` `completed`: a run brought evidence. Every open pull request at its head —
//! those the run lists (in this repository: a number means something only in its base
//! repository), those judged here before, and, for a fork's run that lists none, those GitHub
//! associates with the commit — is judged against its own base as GitHub has it now, and the
//! head's one check run and each pull request's comment are posted. A run triggered by a merge
//! queue is the `merge_group` handler's; one the ledger's upkeep dispatched is `ledger_upkeep`'s.

use crate::github::event::WorkflowRun;
use crate::github::{CommitSha, GithubError, PullNumber, PullRequest};
use crate::store::EvidenceRun;
use crate::worker::dispatch::Target;
use crate::worker::failure::{store_err, Failure};
use crate::worker::judge::{settle, HeadRead, Judged, PatchOf, PrRef, RunRef, MERGE_GROUP};
use crate::worker::Worker;
use std::collections::BTreeSet;

impl Worker {
    pub(in crate::worker) async fn workflow_run(
        &self,
        t: &Target,
        run: &WorkflowRun,
        default_branch: Option<&str>,
    ) -> Result<(), Failure> {
        if run.event.as_deref() == Some(MERGE_GROUP) {
            return self.merge_group_run_completed(t, run).await;
        }
        // A run the ledger's upkeep asked for: probe runs for the history, no pull request.
        if run.event.as_deref() == Some(super::ledger_upkeep::DISPATCHED) {
            return self.upkeep_run_completed(t, run, default_branch).await;
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
        let run_ref = RunRef {
            id: run.id,
            attempt: Some(run.run_attempt.unwrap_or(1)),
            record: true,
            cut_short: RunRef::cut_short(run.conclusion.as_deref()),
        };
        self.judge_head(t, head, run_ref, run.path.as_deref().unwrap_or(""), &listed, ask_commit)
            .await
    }

    /// Judge every open pull request at `head` — those `listed`, those judged here before,
    /// and (`ask_commit`) those GitHub associates with the commit — with workflow run
    /// `run`, then publish the head's one check run (the worst verdict) and a comment
    /// on each pull request about that pull request. The run's attempt joins the flake
    /// history once, after every pull request read it (the last one judged records it).
    pub(in crate::worker) async fn judge_head(
        &self,
        t: &Target,
        head: &str,
        run: RunRef,
        workflow_path: &str,
        listed: &[u64],
        ask_commit: bool,
    ) -> Result<(), Failure> {
        let prs = self.open_pulls_at(t, head, listed, ask_commit).await?;
        if prs.is_empty() {
            tracing::info!(
                run_id = run.id,
                "no open pull request has this run's head; nothing to judge"
            );
            return Ok(());
        }
        let (run_id, cut_short) = (run.id, run.cut_short);
        let mut judged = Vec::new();
        let n = prs.len();
        // The artifact is downloaded, extracted and parsed once for all of them.
        let read = HeadRead::new(self)?;
        for (i, pr) in prs.into_iter().enumerate() {
            let run = RunRef {
                record: run.record && i + 1 == n,
                ..run
            };
            match self.judge_pr(t, head, &pr, run, workflow_path, &read).await? {
                Judged::NotEvidence => {}
                j => judged.push((pr, j)),
            }
        }
        tracing::info!(run_id, pull_requests = n, parses = read.parses(), "head judged");
        drop(read);
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
                cut_short: cut_short.map(str::to_owned),
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
            let fork = pr.head.repo.as_ref().is_none_or(|r| r.full_name != repo);
            let n = pr.number.0;
            if pr.state == "open" && pr.head.sha.as_str() == head && ours {
                // GitHub's word on the current head: queued work for older heads is moot.
                self.store.supersede(&repo, n, head).await.map_err(store_err)?;
                prs.push(PrRef {
                    number: n,
                    base_sha: pr.base.sha.0,
                    base_ref: pr.base.ref_name,
                    fork,
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
        run: RunRef,
        workflow_path: &str,
        read: &HeadRead,
    ) -> Result<Judged, Failure> {
        let base = CommitSha::from(pr.base_sha.as_str());
        let config = match settle(self.config_at(t, &base).await)? {
            Ok(c) => c,
            Err(why) => return Ok(Judged::Failed { why, evidence: false }),
        };
        let patch_of = PatchOf::Pull(PullNumber(pr.number));
        Ok(
            match settle(
                self.evaluate_at(
                    t,
                    head,
                    &pr.base_sha,
                    patch_of,
                    run,
                    workflow_path,
                    config,
                    Some(pr),
                    read,
                )
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
}
