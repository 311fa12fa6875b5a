//! The expired-freezes issue: owners hear that their freezes expired without a pull request
//! having to run into them.
//!
//! Two ways in, one outcome. A `push` to a repository's default branch, and the periodic
//! sweep — one job per interval (`WorkerConfig::sweep_interval`, recorded in the store under
//! a delivery id derived from the interval's slot, so several instances and restarts queue it
//! once), which lists the App's installations and their repositories and queues one job per
//! repository, paced `sweep_pace` apart and skipping an installation whose rate limit is low.
//! Each repository job reads the config and the ledger at the default branch's head and keeps
//! exactly one open issue, found again by its marker ([`EXPIRED_FREEZES_MARKER`]): created when
//! entries expire or are about to, edited in place only when the list changes, closed with a
//! short note when nothing is left (`post` sends it). The store records the issue per
//! repository, and a store lock per repository keeps one writer at a time across instances.

use crate::gate::config::LedgerMaintenance;
use crate::gate::expiry::expiry_notice;
use crate::github::event::{Envelope, Installation, Repository};
use crate::github::CommitSha;
use crate::present::expired_freezes::{expired_freezes_body, expired_freezes_closed_body, EXPIRED_FREEZES_MARKER};
use crate::present::ledger_upkeep::{upkeep_only_body, upkeep_section};
use crate::store::{ExpiryIssue, NewDelivery, Recorded};
use crate::worker::dispatch::Target;
use crate::worker::failure::{internal, store_err, Failure};
use crate::worker::jobs::{Sweep, SweepRepo, SWEEP_EVENT, SWEEP_REPO_EVENT};
use crate::worker::post::sha256_hex;
use crate::worker::Worker;
use anyhow::{anyhow, Context as _};

impl Worker {
    /// Queue the sweep of the current interval, unless it already is (by this or another
    /// instance, before or after a restart). `false` when the sweep is off or already queued.
    pub async fn schedule_sweep(&self) -> anyhow::Result<bool> {
        let Some(interval) = self.config.sweep_interval else {
            return Ok(false);
        };
        let secs = interval.as_secs().max(1) as i64;
        let now = self.now();
        let slot = now.timestamp().div_euclid(secs);
        let delivery = NewDelivery {
            delivery_id: format!("{SWEEP_EVENT}/{secs}/{slot}"),
            event: SWEEP_EVENT.to_owned(),
            action: None,
            repo: None,
            pr: None,
            head_sha: None,
            payload: serde_json::to_string(&Sweep { slot })?,
        };
        let queued = matches!(self.store.record_delivery(&delivery, now).await?, Recorded::Inserted(_));
        if queued {
            tracing::info!(slot, "expired-freezes sweep queued");
        }
        Ok(queued)
    }

    /// The sweep job: every installation's repositories get a job of their own, `sweep_pace`
    /// apart. An installation whose rate limit left is under `sweep_min_rate_limit` is skipped
    /// this time (its pull requests matter more); the next sweep tries again.
    pub(in crate::worker) async fn sweep(&self, sweep: &Sweep) -> Result<(), Failure> {
        let installations = self.github.installations().await?;
        let mut due = self.now();
        let pace = chrono::Duration::from_std(self.config.sweep_pace).unwrap_or_default();
        let mut queued = 0usize;
        // Every repository the App is installed on, when every installation could be listed.
        let mut installed: Option<std::collections::BTreeSet<i64>> = Some(Default::default());
        for id in installations {
            let client = self.github.installation(id)?;
            let (repos, remaining) = client.repositories().await?;
            if let Some(left) = remaining.filter(|&n| n < self.config.sweep_min_rate_limit) {
                tracing::warn!(
                    installation = id.0,
                    rate_limit_remaining = left,
                    "rate limit low: this installation's repositories are skipped until the next sweep"
                );
                installed = None;
                continue;
            }
            if let Some(ids) = installed.as_mut() {
                ids.extend(repos.iter().filter_map(|r| i64::try_from(r.id).ok()));
            }
            for repo in repos.into_iter().filter(|r| !r.archived) {
                let Some(branch) = repo.default_branch.clone() else {
                    continue;
                };
                let job = SweepRepo {
                    slot: sweep.slot,
                    envelope: Envelope {
                        repository: Repository {
                            full_name: repo.full_name.clone(),
                            id: Some(repo.id),
                            default_branch: Some(branch),
                        },
                        installation: Some(Installation { id: id.0 }),
                    },
                };
                let delivery = NewDelivery {
                    delivery_id: format!("{SWEEP_REPO_EVENT}/{}/{}", repo.full_name, sweep.slot),
                    event: SWEEP_REPO_EVENT.to_owned(),
                    action: None,
                    repo: Some(repo.full_name.clone()),
                    pr: None,
                    head_sha: None,
                    payload: serde_json::to_string(&job).context("sweep job").map_err(internal)?,
                };
                if let Recorded::Inserted(_) = self.store.record_delivery(&delivery, due).await.map_err(store_err)? {
                    queued += 1;
                    due += pace;
                }
            }
        }
        tracing::info!(repositories = queued, "expired-freezes sweep: repositories queued");
        self.forget_history(installed.as_ref()).await
    }

    /// The flake history keeps only what it should: observations older than the App's window
    /// go, and so does the whole history of a repository the App is no longer installed on
    /// (`installed`: every repository id of every installation; `None` when some installation
    /// could not be listed this time — then nothing is deleted).
    async fn forget_history(&self, installed: Option<&std::collections::BTreeSet<i64>>) -> Result<(), Failure> {
        let window = crate::gate::history::HistoryPolicy::default().window_days;
        let left = self
            .store
            .compact_history(self.now(), window)
            .await
            .map_err(store_err)?;
        let Some(installed) = installed else {
            return Ok(());
        };
        for repo_id in self.store.history_repo_ids().await.map_err(store_err)? {
            if !installed.contains(&repo_id) {
                self.store.delete_history(repo_id).await.map_err(store_err)?;
                tracing::info!(
                    repo_id,
                    "flake history deleted: the App is no longer installed on this repository"
                );
            }
        }
        tracing::info!(rows = left, "flake history compacted");
        Ok(())
    }

    /// Bring the repository's expired-freezes issue up to date with the ledger on its
    /// default branch `branch`, holding the repository's store lock while doing so.
    pub(in crate::worker) async fn expiry_issue(&self, t: &Target, branch: &str) -> Result<(), Failure> {
        let repo = t.repo.to_string();
        let lock = format!("expiry-issue/{repo}");
        let owner = &self.config.worker_id;
        let held = self
            .store
            .try_lock(&lock, owner, self.now(), self.config.lease)
            .await
            .map_err(store_err)?;
        if !held {
            return Err(Failure::Retryable(anyhow!(
                "another worker is updating the expired-freezes issue of {repo}"
            )));
        }
        let result = self.sync_expiry_issue(t, branch).await;
        if let Err(e) = self.store.unlock(&lock, owner).await {
            // The lock expires with the lease anyway.
            tracing::warn!("releasing {lock}: {e:#}");
        }
        result
    }

    async fn sync_expiry_issue(&self, t: &Target, branch: &str) -> Result<(), Failure> {
        let repo = t.repo.to_string();
        // The branch's head now, not a pushed sha: a late job must not bring back an old ledger.
        let at = CommitSha::from(branch);
        let config = self.config_at(t, &at).await?.config;
        let (bytes, ledger) = match self.ledger_at(t, &config, &at).await? {
            (bytes, Ok(l)) => (bytes, l),
            (_, Err(why)) => {
                // Fail closed: an unreadable ledger says nothing about expiry, so the issue (if
                // any) is left as it is; pull requests get `invalid_ledger`.
                tracing::warn!("the ledger is invalid; the expired-freezes issue is left unchanged: {why}");
                return Ok(());
            }
        };
        let today = self.now().date_naive();
        let notice = expiry_notice(&ledger, &config, today);
        let upkeep = match config.ledger_maintenance {
            LedgerMaintenance::On => Some(
                self.ledger_upkeep(t, branch, &config, &ledger, bytes.as_deref())
                    .await?,
            ),
            LedgerMaintenance::Off => None,
        };
        let section = upkeep
            .as_ref()
            .map(|u| upkeep_section(&u.note, u.plan.as_ref(), &config))
            .unwrap_or_default();
        // What the owners' freezes blind, when the branch was mapped (its numbers are part of
        // what the issue says, so a new map edits it).
        let map = self.codebase_map(&repo).await.filter(|m| m.branch == branch);
        let listed = notice.entries.iter().map(|e| e.owner.as_str());
        let blind_key = map.as_ref().map(|m| m.blind_key(listed)).unwrap_or_default();
        let key = sha256_hex(&format!("{}\n{section}\n{blind_key}", notice.change_key()));
        let recorded = self.store.expiry_issue(&repo).await.map_err(store_err)?;
        // Nothing expires, but the upkeep has something only this issue can carry (the
        // change as a patch, a refused dispatch): the issue says that alone.
        let upkeep_alone = upkeep
            .as_ref()
            .is_some_and(|u| u.note.patch.is_some() || !u.note.problems.is_empty());
        if notice.is_empty() && !upkeep_alone {
            let number = match &recorded {
                Some(r) => r.issue_number,
                // Never looked, and no ledger: nothing to close, nothing to list.
                None if bytes.is_none() => None,
                None => t
                    .client
                    .find_open_issue_with_marker(&t.repo, EXPIRED_FREEZES_MARKER)
                    .await?
                    .map(|i| i.number),
            };
            if let Some(n) = number {
                let body = expired_freezes_closed_body(&config.ledger, branch, today);
                self.close_expiry_issue(t, n, &body).await?;
            }
            if number.is_some() || recorded.is_none() {
                self.remember_expiry_issue(&repo, None, key).await?;
            }
            return Ok(());
        }
        if let Some(r) = &recorded {
            if r.issue_number.is_some() && r.list_sha256 == key {
                tracing::info!(issue = r.issue_number, "expired freezes unchanged");
                return Ok(());
            }
        }
        let body = if notice.is_empty() {
            upkeep_only_body(&config.ledger, branch, today, &section)
        } else {
            expired_freezes_body(
                &notice,
                &config.ledger,
                branch,
                today,
                config.mentions,
                map.as_ref(),
                &section,
            )
        };
        let number = self.publish_expiry_issue(t, recorded.as_ref(), &notice, &body).await?;
        self.remember_expiry_issue(&repo, Some(number), key).await
    }

    async fn remember_expiry_issue(&self, repo: &str, number: Option<u64>, key: String) -> Result<(), Failure> {
        let record = ExpiryIssue {
            issue_number: number,
            list_sha256: key,
        };
        self.store.set_expiry_issue(repo, &record).await.map_err(store_err)
    }
}
