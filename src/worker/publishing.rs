//! Publishing, idempotently: the check run (found by the id the store keeps, else by
//! name and external id, else created; an annotation already sent is never sent again)
//! and the one sticky comment (created once, edited only when what it says changes).
//! When a job cannot be judged, `give_up` completes the check run as INCONCLUSIVE.

use super::{fatal, store_err, Failure, Target, Work, Worker};
use crate::gate::config::Config;
use crate::gate::Report;
use crate::github::event::RequestedAction;
use crate::github::{Annotation, CheckRunFields, CommitSha, GithubError, PullNumber};
use crate::publish;
use crate::store::{CommentState, Job};
use sha2::Digest as _;

fn sha256_hex(s: &str) -> String {
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

/// What identifies an annotation already on a check run: everything GitHub shows of it.
fn annotation_digest(a: &Annotation) -> String {
    let json = serde_json::to_string(a).expect("annotations serialise");
    hex::encode(&sha2::Sha256::digest(json.as_bytes())[..16])
}

impl Worker {
    pub(super) async fn publish(
        &self,
        t: &Target,
        head: &CommitSha,
        pr: PullNumber,
        report: &Report,
        config: &Config,
    ) -> Result<(), Failure> {
        let fields = publish::completed(report, config, head.as_str());
        let run = self.upsert_check(t, head, &fields).await?;
        tracing::info!(
            check_run = run,
            conclusion = fields.conclusion.map_or("", |c| c.as_str()),
            "check run published"
        );
        self.publish_comment(t, pr, report, config).await
    }

    /// Update the check run we know of, else find it by name + external id, else create it.
    /// GitHub appends annotations on every update and never removes them, so an annotation
    /// already sent to this check run (a re-evaluation, a retry, a second pull request with
    /// the same head) is not sent again.
    pub(super) async fn upsert_check(
        &self,
        t: &Target,
        head: &CommitSha,
        fields: &CheckRunFields,
    ) -> Result<u64, Failure> {
        let repo = t.repo.to_string();
        let digests: Vec<String> = fields
            .output
            .iter()
            .flat_map(|o| &o.annotations)
            .map(annotation_digest)
            .collect();
        if let Some(id) = self.store.check_run_id(&repo, head.as_str()).await.map_err(store_err)? {
            let sent = self
                .store
                .published_annotations(&repo, head.as_str(), id)
                .await
                .map_err(store_err)?;
            let mut fresh = fields.clone();
            if let Some(o) = &mut fresh.output {
                o.annotations.retain(|a| !sent.contains(&annotation_digest(a)));
            }
            match t.client.update_check_run(&t.repo, id, &fresh).await {
                Ok(run) => {
                    let mut all = sent;
                    for d in digests {
                        if !all.contains(&d) {
                            all.push(d);
                        }
                    }
                    self.store
                        .set_published_annotations(&repo, head.as_str(), id, &all)
                        .await
                        .map_err(store_err)?;
                    return Ok(run.id);
                }
                Err(GithubError::NotFound(_)) => tracing::warn!(check_run = id, "stored check run is gone"),
                Err(e) => return Err(e.into()),
            }
        }
        let run = t.client.upsert_check_run(&t.repo, head, fields).await?;
        self.store
            .set_check_run_id(&repo, head.as_str(), run.id)
            .await
            .map_err(store_err)?;
        self.store
            .set_published_annotations(&repo, head.as_str(), run.id, &digests)
            .await
            .map_err(store_err)?;
        Ok(run.id)
    }

    /// The one sticky comment: created once, edited only when what it says changes.
    async fn publish_comment(
        &self,
        t: &Target,
        pr: PullNumber,
        report: &Report,
        config: &Config,
    ) -> Result<(), Failure> {
        let repo = t.repo.to_string();
        let stored = self.store.comment(&repo, pr.0).await.map_err(store_err)?;
        if let Some(st) = stored {
            let Some(body) = publish::comment_body(report, config, Some("")) else {
                return Ok(());
            };
            let sha = sha256_hex(&body);
            if sha == st.body_sha256 {
                tracing::info!(comment = st.comment_id, "comment unchanged");
                return Ok(());
            }
            let id = match t.client.update_comment(&t.repo, st.comment_id, &body).await {
                Ok(c) => c.id,
                Err(GithubError::NotFound(_)) => t.client.create_comment(&t.repo, pr, &body).await?.id,
                Err(e) => return Err(e.into()),
            };
            return self.remember_comment(&repo, pr, id, sha).await;
        }
        let found = t
            .client
            .find_comment_with_marker(&t.repo, pr, publish::COMMENT_MARKER)
            .await?;
        let previous = found.as_ref().map(|c| c.body.clone().unwrap_or_default());
        let Some(body) = publish::comment_body(report, config, previous.as_deref()) else {
            return Ok(());
        };
        let sha = sha256_hex(&body);
        let id = match found {
            Some(c) if !publish::comment_changed(previous.as_deref().unwrap_or(""), &body) => c.id,
            Some(c) => t.client.update_comment(&t.repo, c.id, &body).await?.id,
            None => t.client.create_comment(&t.repo, pr, &body).await?.id,
        };
        self.remember_comment(&repo, pr, id, sha).await
    }

    async fn remember_comment(&self, repo: &str, pr: PullNumber, id: u64, sha: String) -> Result<(), Failure> {
        let state = CommentState {
            comment_id: id,
            body_sha256: sha,
        };
        self.store.set_comment(repo, pr.0, &state).await.map_err(store_err)
    }

    /// Complete the job's check run as INCONCLUSIVE saying why (best effort; logged on failure).
    pub(super) async fn give_up(&self, job: &Job, why: &str) {
        let work = Work::of(job);
        if let Ok(Some(Work::Event(e))) = &work {
            if e.requested_action() == Some(RequestedAction::Rerun) {
                // A failed re-run request changes no verdict.
                return;
            }
        }
        let Some(head) = job.head_sha.as_deref() else {
            tracing::error!("cannot mark the check INCONCLUSIVE: the job has no head sha");
            return;
        };
        if let (Some(repo), Some(pr)) = (&job.repo, job.pr) {
            if matches!(self.superseded(repo, pr, head).await, Ok(true)) {
                return;
            }
        }
        let result = async {
            let work = work?.ok_or_else(|| fatal("the job carries no event the App acts on"))?;
            let t = self.target(work.envelope())?;
            let fields = publish::inconclusive(head, why);
            self.upsert_check(&t, &CommitSha::from(head), &fields).await
        }
        .await;
        match result {
            Ok(id) => tracing::info!(check_run = id, "check run completed as INCONCLUSIVE: {why}"),
            Err(e) => tracing::error!("could not mark the check run INCONCLUSIVE: {e:?}"),
        }
    }
}
