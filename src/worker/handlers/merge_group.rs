//! Merge queues. A required check that never reports on a merge group stalls the queue, so
//! `merge_group` `checks_requested` gets a `flakegate` check run on the group's head at once
//! (queued, with the evidence deadline), and the group is judged like a head: its patch is
//! `base_sha...head_sha` compared, config, ledger and CODEOWNERS are read at `base_sha`, and
//! the evidence is the artifact of the evidence workflow's run triggered by `merge_group` at
//! that head — never a pull request's run. The check is never `success` before that evidence
//! was judged; `destroyed` completes a pending check as `cancelled`. Merge groups get no
//! comment: there is no pull request to put it on.

use crate::gate::config::Config;
use crate::github::event::{Event, MergeGroup, MergeGroupEvent, WorkflowRun};
use crate::github::{CommitSha, CHECK_NAME};
use crate::present::check_run;
use crate::store::EvidenceRun;
use crate::worker::dispatch::Target;
use crate::worker::failure::{internal, store_err, Failure};
use crate::worker::judge::{settle, workflow_matches, HeadRead, PatchOf, RunRef, MERGE_GROUP};
use crate::worker::Worker;
use anyhow::anyhow;

/// What judging a merge group with one workflow run gave.
enum GroupJudged {
    /// The run is not the evidence the group's config asks for.
    NotEvidence,
    /// Published (a verdict, or INCONCLUSIVE saying why).
    Published,
}

impl Worker {
    /// The merge group whose head is `head`, as its `checks_requested` delivery said (the
    /// store keeps every delivery; `workflow_run` and re-evaluation find the base by it).
    pub(in crate::worker) async fn merge_group_at(
        &self,
        t: &Target,
        head: &str,
    ) -> Result<Option<MergeGroup>, Failure> {
        let repo = t.repo.to_string();
        let Some(job) = self
            .store
            .latest_delivery(&repo, head, MERGE_GROUP, "checks_requested")
            .await
            .map_err(store_err)?
        else {
            return Ok(None);
        };
        match Event::parse(&job.event, job.payload.as_bytes()) {
            Ok(d) => match d.event {
                Some(Event::MergeGroupChecksRequested(e)) if e.merge_group.head_sha == head => Ok(Some(e.merge_group)),
                _ => Ok(None),
            },
            Err(e) => Err(internal(anyhow!("stored merge_group delivery: {e}"))),
        }
    }

    /// Whether the merge group at `head` has left the queue (a `destroyed` delivery is recorded).
    async fn merge_group_destroyed_at(&self, t: &Target, head: &str) -> Result<bool, Failure> {
        let repo = t.repo.to_string();
        Ok(self
            .store
            .latest_delivery(&repo, head, MERGE_GROUP, "destroyed")
            .await
            .map_err(store_err)?
            .is_some())
    }

    /// `merge_group` `checks_requested`: judge the group if its evidence is already there
    /// (a redelivery, or the run finished first), else queue its check run and the deadline.
    pub(in crate::worker) async fn merge_group_requested(
        &self,
        t: &Target,
        e: &MergeGroupEvent,
    ) -> Result<(), Failure> {
        let group = &e.merge_group;
        let head = CommitSha::from(group.head_sha.as_str());
        let base = CommitSha::from(group.base_sha.as_str());
        if self.merge_group_destroyed_at(t, head.as_str()).await? {
            tracing::info!("the merge group already left the queue; nothing to check");
            return Ok(());
        }
        let config = self.config_at(t, &base).await?.config;
        if self.judge_listed_runs(t, group, &config).await? {
            return Ok(());
        }
        let repo = t.repo.to_string();
        if self
            .store
            .check_run_id(&repo, head.as_str())
            .await
            .map_err(store_err)?
            .is_some()
        {
            tracing::info!("check run already exists for this merge group");
            return Ok(());
        }
        let id = match t
            .client
            .find_check_run(&t.repo, &head, CHECK_NAME, head.as_str())
            .await?
        {
            Some(run) => run.id,
            None => {
                let fields = check_run::queued(head.as_str(), &config);
                t.client.create_check_run(&t.repo, &head, &fields).await?.id
            }
        };
        self.store
            .set_check_run_id(&repo, head.as_str(), id)
            .await
            .map_err(store_err)?;
        tracing::info!(check_run = id, "merge group check run queued");
        self.schedule_timeout(&e.envelope, None, &t.repo, head.as_str(), &config)
            .await
    }

    /// Judge the group with the newest completed `merge_group` run at its head that is its
    /// evidence; `false` when there is none yet.
    async fn judge_listed_runs(&self, t: &Target, group: &MergeGroup, config: &Config) -> Result<bool, Failure> {
        let head = CommitSha::from(group.head_sha.as_str());
        let wanted = &config.evidence.workflows;
        let runs = t.client.workflow_runs(&t.repo, MERGE_GROUP, &head).await?;
        for run in runs {
            let path = run.path.as_deref().unwrap_or("");
            let completed = run.status.as_deref() == Some("completed");
            let from_queue = run.event.as_deref() == Some(MERGE_GROUP) && run.head_sha == group.head_sha;
            let workflow = wanted.is_empty() || wanted.iter().any(|w| workflow_matches(w, path));
            if !(completed && from_queue && workflow) {
                continue;
            }
            let cut_short = RunRef::cut_short(run.conclusion.as_deref());
            if let GroupJudged::Published = self.judge_merge_group(t, group, run.id, path, cut_short).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A workflow run triggered by `merge_group` completed: evidence for the group at its head,
    /// if a merge queue asked this App for that group's checks.
    pub(in crate::worker) async fn merge_group_run_completed(
        &self,
        t: &Target,
        run: &WorkflowRun,
    ) -> Result<(), Failure> {
        let Some(group) = self.merge_group_at(t, &run.head_sha).await? else {
            tracing::info!(run_id = run.id, "no merge group is known at this run's head; ignored");
            return Ok(());
        };
        let cut_short = RunRef::cut_short(run.conclusion.as_deref());
        self.judge_merge_group(t, &group, run.id, run.path.as_deref().unwrap_or(""), cut_short)
            .await
            .map(drop)
    }

    /// Re-evaluation of a merge group: the evidence run judged before, else the newest listed.
    pub(in crate::worker) async fn reevaluate_merge_group(
        &self,
        t: &Target,
        group: &MergeGroup,
    ) -> Result<(), Failure> {
        let repo = t.repo.to_string();
        let head = group.head_sha.as_str();
        if let Some(run) = self.store.evidence_run(&repo, head).await.map_err(store_err)? {
            return self
                .judge_merge_group(
                    t,
                    group,
                    run.run_id,
                    &run.workflow_path,
                    RunRef::cut_short(run.cut_short.as_deref()),
                )
                .await
                .map(drop);
        }
        let base = CommitSha::from(group.base_sha.as_str());
        let config = self.config_at(t, &base).await?.config;
        if self.judge_listed_runs(t, group, &config).await? {
            return Ok(());
        }
        let why = format!(
            "re-evaluation was requested, but no completed `merge_group` run of the evidence workflow is known for \
             the merge group's head `{head}`; re-run the evidence workflow"
        );
        let fields = check_run::inconclusive(head, &why);
        self.upsert_check(t, &CommitSha::from(head), &fields).await.map(drop)
    }

    /// Judge the merge group with workflow run `run_id` and publish its check run (no comment).
    /// A group that left the queue is not judged any more.
    async fn judge_merge_group(
        &self,
        t: &Target,
        group: &MergeGroup,
        run_id: u64,
        workflow_path: &str,
        cut_short: Option<&'static str>,
    ) -> Result<GroupJudged, Failure> {
        let head = group.head_sha.as_str();
        if self.merge_group_destroyed_at(t, head).await? {
            tracing::info!(run_id, "the merge group left the queue; its evidence is not judged");
            return Ok(GroupJudged::Published);
        }
        let repo = t.repo.to_string();
        let sha = CommitSha::from(head);
        let base = CommitSha::from(group.base_sha.as_str());
        let evidence_run = EvidenceRun {
            run_id,
            workflow_path: workflow_path.to_owned(),
            cut_short: cut_short.map(str::to_owned),
        };
        let fields = match settle(self.config_at(t, &base).await)? {
            Err(why) => self.unjudged(head, &why),
            Ok(config) => {
                let read = HeadRead::new(self)?;
                let judged = self
                    .evaluate_at(
                        t,
                        head,
                        &group.base_sha,
                        PatchOf::Compare,
                        RunRef {
                            id: run_id,
                            attempt: None,
                            record: false,
                            cut_short,
                        },
                        workflow_path,
                        config,
                        None,
                        &read,
                    )
                    .await;
                match settle(judged)? {
                    Ok(None) => return Ok(GroupJudged::NotEvidence),
                    Ok(Some((report, config))) => {
                        tracing::info!(verdict = %report.verdict, run_id, "merge group evaluated");
                        self.store
                            .set_evidence_run(&repo, head, &evidence_run)
                            .await
                            .map_err(store_err)?;
                        check_run::completed(&report, &config, head)
                    }
                    Err(why) => {
                        self.store
                            .set_evidence_run(&repo, head, &evidence_run)
                            .await
                            .map_err(store_err)?;
                        self.unjudged(head, &why)
                    }
                }
            }
        };
        let id = self.upsert_check(t, &sha, &fields).await?;
        tracing::info!(
            check_run = id,
            conclusion = fields.conclusion.map_or("", |c| c.as_str()),
            "merge group check run published"
        );
        Ok(GroupJudged::Published)
    }

    /// `merge_group` `destroyed`: the group merged, was dequeued or invalidated. A check run
    /// still pending for its head completes as `cancelled`; a completed one stays as it is.
    pub(in crate::worker) async fn merge_group_destroyed(
        &self,
        t: &Target,
        e: &MergeGroupEvent,
    ) -> Result<(), Failure> {
        let head = e.merge_group.head_sha.as_str();
        let sha = CommitSha::from(head);
        match t.client.find_check_run(&t.repo, &sha, CHECK_NAME, head).await? {
            Some(run) if run.status != "completed" => {
                let fields = check_run::cancelled(head, e.reason.as_deref());
                let id = self.upsert_check(t, &sha, &fields).await?;
                tracing::info!(
                    check_run = id,
                    reason = e.reason.as_deref().unwrap_or(""),
                    "merge group left the queue: check cancelled"
                );
            }
            Some(_) => tracing::info!("merge group left the queue; its check run was already completed"),
            None => tracing::info!("merge group left the queue; no check run of ours on its head"),
        }
        Ok(())
    }
}
