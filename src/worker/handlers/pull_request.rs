//! `pull_request` (opened, reopened, synchronize, ready for review, a new base): the pull
//! request's head gets a queued check run and an evidence deadline, or — when evidence for that
//! head was judged before — is judged again at once.

use crate::github::event::PullRequestEvent;
use crate::github::{PullNumber, CHECK_NAME};
use crate::present::check_run;
use crate::store::PrVerdict;
use crate::worker::dispatch::Target;
use crate::worker::failure::{internal, store_err, Failure};
use crate::worker::post::NOT_JUDGED;
use crate::worker::Worker;
use anyhow::anyhow;

impl Worker {
    /// A pull request got a head (or a new base). GitHub is asked for its current head first:
    /// deliveries arrive out of order, and a late one for an older head must change nothing.
    /// The pull request is recorded as not judged on its head; if evidence for that head was
    /// judged before (another pull request shares it, or the base changed), everything at
    /// the head is judged again, else the check run is queued until evidence arrives.
    pub(in crate::worker) async fn pull_request(&self, t: &Target, e: &PullRequestEvent) -> Result<(), Failure> {
        let number = e
            .number()
            .ok_or_else(|| internal(anyhow!("the pull_request payload has no number")))?;
        let current = t.client.pull_request(&t.repo, PullNumber(number)).await?;
        let repo = t.repo.to_string();
        let head = current.head.sha.clone();
        if current.state != "open" {
            tracing::info!(state = %current.state, "the pull request is not open; nothing to do");
            return Ok(());
        }
        // GitHub's word on the current head: queued work for older heads is moot.
        self.store
            .supersede(&repo, number, head.as_str())
            .await
            .map_err(store_err)?;
        if head.as_str() != e.pull_request.head.sha {
            tracing::info!(current = %head, "a late delivery for an older head; the current head is judged on its own");
            return Ok(());
        }
        let base = current.base.sha.clone();
        let recorded = self.store.pr_verdicts(&repo, head.as_str()).await.map_err(store_err)?;
        let known = recorded
            .iter()
            .any(|v| v.pr == number && v.base_sha == base.as_str() && v.verdict != NOT_JUDGED);
        if !known {
            let row = PrVerdict {
                pr: number,
                base_sha: base.0.clone(),
                base_ref: current.base.ref_name.clone(),
                verdict: NOT_JUDGED.to_owned(),
                conclusion: "failure".to_owned(),
                title: "not judged yet: waiting for evidence".to_owned(),
            };
            self.store
                .set_pr_verdict(&repo, head.as_str(), &row)
                .await
                .map_err(store_err)?;
        }
        let has_check = self
            .store
            .check_run_id(&repo, head.as_str())
            .await
            .map_err(store_err)?
            .is_some();
        let evidence = self.store.evidence_run(&repo, head.as_str()).await.map_err(store_err)?;
        let ready = e.action.as_deref() == Some("ready_for_review");
        match evidence {
            // This pull request's verdict on this head and base is new: judge the head again.
            Some(_) if !known => return self.reevaluate(t, head.as_str()).await,
            // A draft made ready: judged again on the evidence its head already has.
            Some(_) if ready => {
                tracing::info!("ready for review: the head's evidence is judged again");
                return self.reevaluate(t, head.as_str()).await;
            }
            _ if has_check => {
                tracing::info!("check run already exists for this head");
                return Ok(());
            }
            _ => {}
        }
        if let Some(run) = t
            .client
            .find_check_run(&t.repo, &head, CHECK_NAME, head.as_str())
            .await?
        {
            self.store
                .set_check_run_id(&repo, head.as_str(), run.id)
                .await
                .map_err(store_err)?;
            return Ok(());
        }
        let config = self.config_at(t, &base).await?.config;
        let fields = check_run::queued(head.as_str(), &config);
        let run = t.client.create_check_run(&t.repo, &head, &fields).await?;
        self.store
            .set_check_run_id(&repo, head.as_str(), run.id)
            .await
            .map_err(store_err)?;
        tracing::info!(check_run = run.id, "check run queued");
        self.schedule_timeout(&e.envelope, e.pull_request.number, &t.repo, head.as_str(), &config)
            .await
    }
}
