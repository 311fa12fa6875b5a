//! The evidence deadline: queued (once per head) with a pull request's or a merge group's
//! queued check run; when it comes due and that check run is still not completed, no evidence
//! arrived in time and the check completes as INCONCLUSIVE saying what it waited for.

use crate::gate::config::Config;
use crate::github::event::Envelope;
use crate::github::{CommitSha, RepoName, CHECK_NAME};
use crate::present::check_run;
use crate::store::NewDelivery;
use crate::worker::dispatch::Target;
use crate::worker::failure::{internal, store_err, Failure};
use crate::worker::jobs::{EvidenceTimeout, EVIDENCE_TIMEOUT_EVENT};
use crate::worker::Worker;
use anyhow::Context as _;

impl Worker {
    /// Queue the evidence deadline for this head (once: the delivery id is derived from it);
    /// `pr` is `None` for a merge group's head.
    pub(in crate::worker) async fn schedule_timeout(
        &self,
        envelope: &Envelope,
        pr: Option<u64>,
        repo: &RepoName,
        head: &str,
        config: &Config,
    ) -> Result<(), Failure> {
        let minutes = config.evidence.timeout_minutes;
        let due = self.now() + chrono::Duration::minutes(i64::from(minutes));
        let deadline = EvidenceTimeout {
            envelope: Envelope {
                repository: crate::github::event::Repository {
                    full_name: repo.to_string(),
                    id: envelope.repository.id,
                    default_branch: None,
                },
                installation: envelope.installation,
            },
            head_sha: head.to_owned(),
            artifact: config.evidence.artifact.clone(),
            workflows: config.evidence.workflows.clone(),
            timeout_minutes: minutes,
            merge_group: pr.is_none(),
        };
        let delivery = NewDelivery {
            delivery_id: format!("{EVIDENCE_TIMEOUT_EVENT}/{repo}/{head}"),
            event: EVIDENCE_TIMEOUT_EVENT.to_owned(),
            action: None,
            repo: Some(repo.to_string()),
            pr,
            head_sha: Some(head.to_owned()),
            payload: serde_json::to_string(&deadline)
                .context("evidence deadline")
                .map_err(internal)?,
        };
        self.store.record_delivery(&delivery, due).await.map_err(store_err)?;
        Ok(())
    }

    /// The deadline came: a check run still waiting completes as INCONCLUSIVE.
    pub(in crate::worker) async fn evidence_timeout(&self, t: &Target, d: &EvidenceTimeout) -> Result<(), Failure> {
        let head = d.head_sha.as_str();
        let sha = CommitSha::from(head);
        let run = t.client.find_check_run(&t.repo, &sha, CHECK_NAME, head).await?;
        match run {
            Some(run) if run.status != "completed" => {
                let from = if d.workflows.is_empty() {
                    "any workflow run".to_owned()
                } else {
                    format!("workflow {}", d.workflows.join(" or "))
                };
                let why = if d.merge_group {
                    format!(
                        "no evidence arrived within {} minutes: waited for the artifact `{}` from {from} \
                         triggered by `merge_group` on the merge group's head `{head}`. Does the evidence \
                         workflow run `on: merge_group` (`templates/workflows/flakegate-evidence.yml`), and was \
                         it cancelled?",
                        d.timeout_minutes, d.artifact
                    )
                } else {
                    format!(
                        "no evidence arrived within {} minutes: waited for the artifact `{}` from {from} on \
                         `{head}`. Was the evidence workflow path-filtered away, cancelled, or never added \
                         (`templates/workflows/flakegate-evidence.yml`)?",
                        d.timeout_minutes, d.artifact
                    )
                };
                let fields = check_run::inconclusive(head, &why);
                let id = self.upsert_check(t, &sha, &fields).await?;
                tracing::warn!(check_run = id, "evidence timed out: {why}");
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
