//! A check run asked for again — `check_run` or `check_suite` `rerequested`, or the check run's
//! **Re-evaluate** button — judges the head again with the evidence workflow's run recorded for
//! it (never another workflow's); the **Re-run evidence** button re-runs that run, whose
//! `workflow_run` delivery then brings the verdict.

use crate::github::CommitSha;
use crate::present::check_run;
use crate::store::EvidenceRun;
use crate::worker::dispatch::Target;
use crate::worker::failure::{store_err, Failure};
use crate::worker::judge::RunRef;
use crate::worker::Worker;

impl Worker {
    /// The evidence workflow's run last judged for `head` (never some other workflow's run).
    async fn evidence_run(&self, t: &Target, head: &str) -> Result<Option<EvidenceRun>, Failure> {
        self.store
            .evidence_run(&t.repo.to_string(), head)
            .await
            .map_err(store_err)
    }

    pub(in crate::worker) async fn reevaluate(&self, t: &Target, head: &str) -> Result<(), Failure> {
        if let Some(group) = self.merge_group_at(t, head).await? {
            return self.reevaluate_merge_group(t, &group).await;
        }
        match self.evidence_run(t, head).await? {
            Some(run) => {
                self.judge_head(
                    t,
                    head,
                    RunRef {
                        id: run.run_id,
                        attempt: None,
                        record: false,
                        cut_short: RunRef::cut_short(run.cut_short.as_deref()),
                    },
                    &run.workflow_path,
                    &[],
                    true,
                )
                .await
            }
            // Nothing to judge. Not queued (that could wait forever): a later run overwrites this.
            None => {
                let why = format!(
                    "re-evaluation was requested, but no completed run of the evidence workflow is known for \
                     `{head}`; re-run the evidence workflow"
                );
                let fields = check_run::inconclusive(head, &why);
                self.upsert_check(t, &CommitSha::from(head), &fields).await.map(drop)
            }
        }
    }

    /// Re-run the evidence workflow; its `workflow_run` completed delivery brings the verdict.
    pub(in crate::worker) async fn rerun(&self, t: &Target, head: &str) -> Result<(), Failure> {
        let Some(run) = self.evidence_run(t, head).await? else {
            tracing::info!("no evidence workflow run known for this head; nothing to re-run");
            return Ok(());
        };
        t.client.rerun_workflow(&t.repo, run.run_id).await?;
        tracing::info!(run_id = run.run_id, "evidence workflow re-run requested");
        Ok(())
    }
}
