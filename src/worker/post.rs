//! Posting to GitHub what `present` makes — `present` is pure text-making; this file sends it,
//! idempotently: the check run of a head (found by the id the store keeps, else among this
//! App's check runs by name and external id, else created; an annotation already sent is never
//! sent again, and different findings get a fresh check run) showing the worst verdict of the
//! open pull requests sharing that head; one sticky comment per pull request about that pull
//! request (created once, edited only when what it says changes); and the expired-freezes
//! issue. What a check run was last sent, and by which job, is recorded
//! (`Store::publication`): a job run again after its instance died does not send the same
//! completion twice.
//!
//! When no verdict could be reached, the check run completes as INCONCLUSIVE
//! ([`Worker::give_up`] for a job that gave up): saying why when the repository can act on it,
//! else naming only the delivery, under which the failure is logged.

use super::dispatch::{Target, Work};
use super::failure::{internal, store_err, Failure, Fatal};
use super::judge::{Judged, PrRef};
use super::Worker;
use crate::gate::config::Config;
use crate::gate::expiry::ExpiryNotice;
use crate::gate::Report;
use crate::github::event::{Event, RequestedAction};
use crate::github::{Annotation, CheckRunFields, CommitSha, Conclusion, GithubError, IssueUpdate, PullNumber};
use crate::present::check_run;
use crate::present::comment::{comment_body, comment_changed, COMMENT_MARKER};
use crate::present::expired_freezes::{EXPIRED_FREEZES_MARKER, EXPIRED_FREEZES_TITLE};
use crate::present::shared_head::{shared_head, SharedHeadLine};
use crate::store::{CommentState, ExpiryIssue, Job, PrVerdict};
use anyhow::anyhow;
use sha2::Digest as _;
use std::collections::BTreeSet;

/// Not judged yet: waiting for evidence. Blocks like INCONCLUSIVE (a check is never
/// `success` while a pull request sharing its head has no verdict).
pub(super) const NOT_JUDGED: &str = "QUEUED";

/// How bad a recorded verdict is: by conclusion first (an unknown one counts as `failure`),
/// then by verdict. The check run of a shared head shows the worst.
fn severity(v: &PrVerdict) -> (u8, u8) {
    let conclusion = match v.conclusion.as_str() {
        "success" => 0,
        "neutral" => 1,
        _ => 2,
    };
    let verdict = match v.verdict.as_str() {
        "PASS" => 0,
        "PASS_WITH_CAVEAT" => 1,
        NOT_JUDGED => 2,
        "FAIL" => 4,
        _ => 3,
    };
    (conclusion, verdict)
}

/// The worst of `rows`.
fn worst(rows: &[PrVerdict]) -> Option<&PrVerdict> {
    rows.iter().max_by_key(|v| severity(v))
}

pub(super) fn sha256_hex(s: &str) -> String {
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

/// The store's name for check run `id` in its table of publications.
fn check_run_subject(id: u64) -> String {
    format!("check_run/{id}")
}

/// The store's name for check run `id`'s web address (which the comment links to).
fn check_run_url_subject(id: u64) -> String {
    format!("check_run/{id}/html_url")
}

/// What identifies an annotation already on a check run: everything GitHub shows of it.
fn annotation_digest(a: &Annotation) -> String {
    let json = serde_json::to_string(a).expect("annotations serialise");
    hex::encode(&sha2::Sha256::digest(json.as_bytes())[..16])
}

impl Worker {
    /// Record each judged pull request's verdict on `head`, publish the head's check run once
    /// with the worst verdict recorded there (every pull request's verdict and base listed),
    /// and comment on each judged pull request about that pull request only.
    pub(super) async fn publish_head(
        &self,
        t: &Target,
        head: &CommitSha,
        judged: &[(PrRef, Judged)],
    ) -> Result<(), Failure> {
        let repo = t.repo.to_string();
        let mut now: Vec<(PrVerdict, &Judged)> = Vec::new();
        for (pr, j) in judged {
            let (verdict, conclusion, title) = match j {
                Judged::Report(report, config) => (
                    report.verdict.as_str().to_owned(),
                    check_run::conclusion(report.verdict, config).as_str().to_owned(),
                    check_run::title(report),
                ),
                Judged::Failed { why, .. } => (
                    "INCONCLUSIVE".to_owned(),
                    "failure".to_owned(),
                    self.unjudged(head.as_str(), why)
                        .output
                        .map(|o| o.title)
                        .unwrap_or_default(),
                ),
                Judged::NotEvidence => continue,
            };
            let row = PrVerdict {
                pr: pr.number,
                base_sha: pr.base_sha.clone(),
                base_ref: pr.base_ref.clone(),
                verdict,
                conclusion,
                title,
            };
            self.store
                .set_pr_verdict(&repo, head.as_str(), &row)
                .await
                .map_err(store_err)?;
            now.push((row, j));
        }
        // The details shown are those of the worst verdict reached now; a worse one recorded
        // earlier (a pull request this run is not evidence for) still decides the conclusion.
        let Some((shown, j)) = now.iter().max_by_key(|(v, _)| severity(v)) else {
            return Ok(());
        };
        let mut fields = match j {
            Judged::Report(report, config) => check_run::completed(report, config, head.as_str()),
            Judged::Failed { why, .. } => self.unjudged(head.as_str(), why),
            Judged::NotEvidence => return Ok(()),
        };
        let rows = self.store.pr_verdicts(&repo, head.as_str()).await.map_err(store_err)?;
        let decisive = match worst(&rows) {
            Some(w) if severity(w) > severity(shown) => {
                fields.conclusion = Some(match w.conclusion.as_str() {
                    "success" => Conclusion::Success,
                    "neutral" => Conclusion::Neutral,
                    _ => Conclusion::Failure,
                });
                if let Some(o) = &mut fields.output {
                    o.title.clone_from(&w.title);
                }
                w
            }
            _ => shown,
        };
        let fields = with_table(fields, &rows, decisive.pr);
        let (run, link) = self.upsert_check_linked(t, head, &fields).await?;
        tracing::info!(
            check_run = run,
            conclusion = fields.conclusion.map_or("", |c| c.as_str()),
            decided_by = decisive.pr,
            pull_requests = rows.len(),
            "check run published"
        );
        for (pr, j) in judged {
            if let Judged::Report(report, config) = j {
                self.publish_comment(t, PullNumber(pr.number), report, config, link.as_deref())
                    .await?;
            }
        }
        Ok(())
    }

    /// Update the check run we know of, else find this App's by name + external id, else
    /// create it. GitHub appends annotations on every update and never removes them, so an
    /// annotation already sent to this check run (a retry, the same findings again) is not
    /// sent again, and findings that differ from those already on it get a fresh check run:
    /// GitHub shows the newest check run of a name, so no stale annotation stays in view.
    pub(super) async fn upsert_check(
        &self,
        t: &Target,
        head: &CommitSha,
        fields: &CheckRunFields,
    ) -> Result<u64, Failure> {
        self.upsert_check_linked(t, head, fields).await.map(|(id, _)| id)
    }

    /// [`Self::upsert_check`], also returning the check run's web address when GitHub just
    /// gave it (not when this job had already sent the same and nothing was sent again).
    async fn upsert_check_linked(
        &self,
        t: &Target,
        head: &CommitSha,
        fields: &CheckRunFields,
    ) -> Result<(u64, Option<String>), Failure> {
        let repo = t.repo.to_string();
        let digests: Vec<String> = fields
            .output
            .iter()
            .flat_map(|o| &o.annotations)
            .map(annotation_digest)
            .collect();
        let content = self.sent_by_this_job(fields);
        if let Some(id) = self.store.check_run_id(&repo, head.as_str()).await.map_err(store_err)? {
            let subject = check_run_subject(id);
            let last = self.store.publication(&repo, &subject).await.map_err(store_err)?;
            if last.as_deref() == Some(content.as_str()) {
                // This job sent this before and is running again (its instance died before
                // marking it done, or a later step failed): a second identical completion
                // would only notify everyone twice. Another delivery (a re-evaluation asked
                // for) still updates the check run.
                tracing::info!(check_run = id, "check run already shows this; not sent again");
                let url = self
                    .store
                    .publication(&repo, &check_run_url_subject(id))
                    .await
                    .map_err(store_err)?;
                return Ok((id, url));
            }
            let sent = self
                .store
                .published_annotations(&repo, head.as_str(), id)
                .await
                .map_err(store_err)?;
            let same: bool = sent.iter().collect::<BTreeSet<_>>() == digests.iter().collect::<BTreeSet<_>>();
            if !sent.is_empty() && !same {
                tracing::info!(check_run = id, "findings changed: a fresh check run replaces this one");
                return self.create_check(t, head, fields, &digests).await;
            }
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
                    self.store
                        .set_publication(&repo, &subject, &content)
                        .await
                        .map_err(store_err)?;
                    self.remember_url(&repo, run.id, run.html_url.as_deref()).await?;
                    return Ok((run.id, run.html_url));
                }
                Err(GithubError::NotFound(_)) => tracing::warn!(check_run = id, "stored check run is gone"),
                Err(e) => return Err(e.into()),
            }
        }
        let found = t
            .client
            .find_check_run(&t.repo, head, &fields.name, &fields.external_id)
            .await?;
        match found {
            // Ours, and nothing on it that could be stale: complete it.
            Some(run) if run.annotations_count() == 0 => {
                let run = t.client.update_check_run(&t.repo, run.id, fields).await?;
                self.remember_check(&repo, head, run.id, &digests, &content).await?;
                self.remember_url(&repo, run.id, run.html_url.as_deref()).await?;
                Ok((run.id, run.html_url))
            }
            _ => self.create_check(t, head, fields, &digests).await,
        }
    }

    async fn create_check(
        &self,
        t: &Target,
        head: &CommitSha,
        fields: &CheckRunFields,
        digests: &[String],
    ) -> Result<(u64, Option<String>), Failure> {
        let run = t.client.create_check_run(&t.repo, head, fields).await?;
        let content = self.sent_by_this_job(fields);
        self.remember_check(&t.repo.to_string(), head, run.id, digests, &content)
            .await?;
        self.remember_url(&t.repo.to_string(), run.id, run.html_url.as_deref())
            .await?;
        Ok((run.id, run.html_url))
    }

    /// Keep check run `id`'s web address, so that a job that runs again links the comment to
    /// it as before (nothing is sent to the check run then, so GitHub does not say it again).
    async fn remember_url(&self, repo: &str, id: u64, url: Option<&str>) -> Result<(), Failure> {
        let Some(url) = url else { return Ok(()) };
        self.store
            .set_publication(repo, &check_run_url_subject(id), url)
            .await
            .map_err(store_err)
    }

    /// What the store records as sent to a check run: the job in hand and a digest of
    /// `fields` (`CheckRunFields` is plain data — strings, options, vectors, enums, no maps —
    /// so its `Debug` text is deterministic).
    fn sent_by_this_job(&self, fields: &CheckRunFields) -> String {
        let job = self.job_in_hand().map_or_else(|| "-".to_owned(), |id| id.to_string());
        format!("job {job}: {}", sha256_hex(&format!("{fields:?}")))
    }

    /// Record check run `id` as the head's, with the annotations and the content sent to it.
    async fn remember_check(
        &self,
        repo: &str,
        head: &CommitSha,
        id: u64,
        digests: &[String],
        content: &str,
    ) -> Result<(), Failure> {
        self.store
            .set_check_run_id(repo, head.as_str(), id)
            .await
            .map_err(store_err)?;
        self.store
            .set_published_annotations(repo, head.as_str(), id, digests)
            .await
            .map_err(store_err)?;
        self.store
            .set_publication(repo, &check_run_subject(id), content)
            .await
            .map_err(store_err)
    }

    /// The one sticky comment: created once, edited only when what it says changes.
    async fn publish_comment(
        &self,
        t: &Target,
        pr: PullNumber,
        report: &Report,
        config: &Config,
        check_run: Option<&str>,
    ) -> Result<(), Failure> {
        let repo = t.repo.to_string();
        let stored = self.store.comment(&repo, pr.0).await.map_err(store_err)?;
        if let Some(st) = stored {
            let Some(body) = comment_body(report, config, Some(""), check_run) else {
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
        let found = t.client.find_comment_with_marker(&t.repo, pr, COMMENT_MARKER).await?;
        let previous = found.as_ref().map(|c| c.body.clone().unwrap_or_default());
        let Some(body) = comment_body(report, config, previous.as_deref(), check_run) else {
            return Ok(());
        };
        let sha = sha256_hex(&body);
        let id = match found {
            Some(c) if !comment_changed(previous.as_deref().unwrap_or(""), &body) => c.id,
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

    /// The check run of `head` when no verdict could be reached: INCONCLUSIVE saying why when the
    /// repository can act on it; for an internal failure only the delivery of the job in hand,
    /// under which the failure is logged.
    pub(super) fn unjudged(&self, head: &str, why: &Fatal) -> CheckRunFields {
        match why {
            Fatal::User(why) => check_run::inconclusive(head, why),
            Fatal::Internal(_) => {
                let delivery = self.delivery_in_hand().unwrap_or_else(|| "-".to_owned());
                check_run::internal_error(head, &delivery)
            }
        }
    }

    /// Complete the job's check run as INCONCLUSIVE (best effort; logged on failure).
    pub(super) async fn give_up(&self, job: &Job, why: &Fatal) {
        let work = Work::of(job);
        if let Ok(Some(w)) = &work {
            if w.is_expiry() {
                // No check run to complete: the issue stays as it was until the next push or sweep.
                tracing::error!("the expired-freezes issue was not updated: {why}");
                return;
            }
        }
        if let Ok(Some(Work::Event(Event::PullRequestMerged(_)))) = &work {
            // A merge has no check run of ours left to complete: the map stays as it was.
            tracing::error!("the default branch's blindness map was not updated: {why}");
            return;
        }
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
            let work = work?.ok_or_else(|| internal(anyhow!("the job carries no event the App acts on")))?;
            let t = self.target(
                work.envelope()
                    .ok_or_else(|| internal(anyhow!("the job names no repository")))?,
            )?;
            let mut fields = self.unjudged(head, why);
            if let Some(pr) = job.pr {
                fields = self.record_given_up(&t, head, pr, &work, fields).await?;
            }
            self.upsert_check(&t, &CommitSha::from(head), &fields).await
        }
        .await;
        match result {
            Ok(id) => tracing::info!(check_run = id, "check run completed as INCONCLUSIVE: {why}"),
            Err(e) => tracing::error!("could not mark the check run INCONCLUSIVE: {e}"),
        }
    }

    /// The job's pull request is INCONCLUSIVE on `head` (its base as the event or an earlier
    /// verdict names it); `fields` with every pull request of the head listed.
    async fn record_given_up(
        &self,
        t: &Target,
        head: &str,
        pr: u64,
        work: &Work,
        fields: CheckRunFields,
    ) -> Result<CheckRunFields, Failure> {
        let repo = t.repo.to_string();
        let rows = self.store.pr_verdicts(&repo, head).await.map_err(store_err)?;
        let earlier = rows.iter().find(|v| v.pr == pr);
        let (base_sha, base_ref) = match (work, earlier) {
            (Work::Event(Event::PullRequest(e) | Event::PullRequestRetargeted(e)), _) => {
                (e.pull_request.base.sha.clone(), String::new())
            }
            (_, Some(v)) => (v.base_sha.clone(), v.base_ref.clone()),
            _ => (String::new(), String::new()),
        };
        let row = PrVerdict {
            pr,
            base_sha,
            base_ref,
            verdict: "INCONCLUSIVE".to_owned(),
            conclusion: "failure".to_owned(),
            title: fields.output.as_ref().map(|o| o.title.clone()).unwrap_or_default(),
        };
        self.store.set_pr_verdict(&repo, head, &row).await.map_err(store_err)?;
        let rows = self.store.pr_verdicts(&repo, head).await.map_err(store_err)?;
        Ok(with_table(fields, &rows, pr))
    }

    /// Edit the issue found (the recorded one, else an open one with the marker) or create it.
    pub(super) async fn publish_expiry_issue(
        &self,
        t: &Target,
        recorded: Option<&ExpiryIssue>,
        notice: &ExpiryNotice,
        body: &str,
    ) -> Result<u64, Failure> {
        let mut existing = match recorded.and_then(|r| r.issue_number) {
            Some(n) => t.client.issue(&t.repo, n).await?,
            None => None,
        };
        if existing.is_none() {
            existing = t
                .client
                .find_open_issue_with_marker(&t.repo, EXPIRED_FREEZES_MARKER)
                .await?;
        }
        let entries = notice.entries.len();
        match existing {
            Some(issue) => {
                let closed = issue.state != "open";
                if closed || comment_changed(issue.body.as_deref().unwrap_or(""), body) {
                    let edit = IssueUpdate {
                        body: Some(body),
                        state: closed.then_some("open"),
                        ..IssueUpdate::default()
                    };
                    t.client.update_issue(&t.repo, issue.number, &edit).await?;
                    tracing::info!(
                        issue = issue.number,
                        entries,
                        reopened = closed,
                        "expired-freezes issue edited"
                    );
                }
                Ok(issue.number)
            }
            None => {
                let issue = t.client.create_issue(&t.repo, EXPIRED_FREEZES_TITLE, body).await?;
                tracing::info!(issue = issue.number, entries, "expired-freezes issue opened");
                Ok(issue.number)
            }
        }
    }

    /// Close the expired-freezes issue `n` with `body`; one already gone is left gone.
    pub(super) async fn close_expiry_issue(&self, t: &Target, n: u64, body: &str) -> Result<(), Failure> {
        let close = IssueUpdate {
            body: Some(body),
            state: Some("closed"),
            state_reason: Some("completed"),
            ..IssueUpdate::default()
        };
        match t.client.update_issue(&t.repo, n, &close).await {
            Ok(_) => tracing::info!(issue = n, "no freeze expired any more: expired-freezes issue closed"),
            Err(GithubError::NotFound(_) | GithubError::Gone(_)) => {
                tracing::info!(issue = n, "the expired-freezes issue is gone")
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }
}

/// `fields` with the table of every pull request sharing the head (when there are several).
fn with_table(fields: CheckRunFields, rows: &[PrVerdict], decisive: u64) -> CheckRunFields {
    let lines: Vec<SharedHeadLine<'_>> = rows
        .iter()
        .map(|v| SharedHeadLine {
            pr: v.pr,
            base_ref: &v.base_ref,
            base_sha: &v.base_sha,
            verdict: &v.verdict,
        })
        .collect();
    shared_head(fields, &lines, decisive)
}
