//! The ledger kept by its evidence: for each entry past or near its expiry, and for each test
//! the evidence shows unstable that no entry freezes, the change the evidence supports — prune
//! an entry whose test passed enough runs in a row, renew one whose test is still unstable,
//! propose a freeze for an unstable test nobody froze — and the tests that need more runs
//! before anything can be said. The command line (`flakegate ledger maintain`) and the App
//! (its ledger pull request) both write what [`plan`] returns; the decision stays a person's.
//!
//! flakegate never invents an owner: a proposed freeze takes its owner from CODEOWNERS of the
//! test's file, or is written with `"owner": null` — which the ledger's reader refuses, so the
//! change cannot be merged until a person names one.

use super::{FreezeEntry, Ledger};
use crate::gate::history::{Judgement, Stabilities};
use crate::gate::nodeid::TestId;
use crate::gate::probe::{passing_statement, Stability};
use chrono::NaiveDate;
use serde::Serialize;

/// What the plan may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaintainPolicy {
    /// Entries expiring within this many days are looked at (`policy.expiry_warning_days`).
    pub warning_days: u32,
    /// How long a renewal or a new freeze lasts.
    pub freeze_days: u32,
    /// The policy's limit on a freeze's whole length (from `frozen_at`).
    pub max_freeze_days: Option<u32>,
    /// Passing runs in a row that prune an entry (at least; a test that failed before needs
    /// as many as the history's recovery rule asks).
    pub prune_runs: u32,
}

/// A freeze's length when none is asked for (`flakegate ledger add` without `--days` too).
pub const DEFAULT_FREEZE_DAYS: u32 = 14;

impl Default for MaintainPolicy {
    fn default() -> Self {
        MaintainPolicy {
            warning_days: 7,
            freeze_days: DEFAULT_FREEZE_DAYS,
            max_freeze_days: None,
            prune_runs: 40,
        }
    }
}

impl MaintainPolicy {
    /// The policy of a repository's config: its warning days and its freeze limit, freezes of
    /// the default length within that limit.
    pub fn of(config: &crate::gate::config::Config) -> Self {
        let max = config.policy.max_freeze_days;
        MaintainPolicy {
            warning_days: config.policy.expiry_warning_days,
            freeze_days: max.map_or(DEFAULT_FREEZE_DAYS, |m| DEFAULT_FREEZE_DAYS.min(m)),
            max_freeze_days: max,
            ..MaintainPolicy::default()
        }
    }
}

/// One change to the ledger, with the evidence it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Change {
    /// The entry goes: its test passed `runs` runs in a row.
    Prune {
        test: String,
        owner: String,
        runs: u64,
        evidence: String,
    },
    /// The entry stays, until `expires`, with a fresh observation.
    Renew {
        test: String,
        owner: String,
        was: NaiveDate,
        expires: NaiveDate,
        evidence: String,
    },
    /// A new entry for a test the evidence shows unstable; `owner` from CODEOWNERS, or none.
    Freeze {
        test: String,
        owner: Option<String>,
        expires: NaiveDate,
        evidence: String,
    },
}

impl Change {
    pub fn test(&self) -> &str {
        match self {
            Change::Prune { test, .. } | Change::Renew { test, .. } | Change::Freeze { test, .. } => test,
        }
    }

    /// One line for a person: what changes and why.
    pub fn describe(&self) -> String {
        match self {
            Change::Prune {
                test, owner, evidence, ..
            } => {
                format!("prune {test} (owner {owner}): {evidence}")
            }
            Change::Renew {
                test,
                owner,
                was,
                expires,
                evidence,
            } => format!("renew {test} (owner {owner}) from {was} to {expires}: {evidence}"),
            Change::Freeze {
                test,
                owner,
                expires,
                evidence,
            } => match owner {
                Some(o) => format!("freeze {test} (owner {o}, from CODEOWNERS) until {expires}: {evidence}"),
                None => format!(
                    "freeze {test} until {expires}: {evidence}; no CODEOWNERS rule names its owner, so the entry's \
                     owner is null and the ledger fails lint until a person fills it"
                ),
            },
        }
    }
}

/// A test the plan cannot decide on yet, and what it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    pub test: String,
    /// The entry's owner (none for a test no entry freezes).
    pub owner: Option<String>,
    pub why: String,
    /// Whether more runs of it would decide (a probe is worth asking for).
    pub wants_runs: bool,
    /// How many more passing runs in a row would (0 when runs would not decide).
    pub runs_wanted: u64,
}

/// What the evidence supports, and the ledger that results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub changes: Vec<Change>,
    pub pending: Vec<Pending>,
    /// The proposed ledger file (canonical text); `None` when nothing changes.
    pub ledger: Option<String>,
}

impl Plan {
    /// The tests a probe should run for the plan to decide on the pending ones.
    pub fn wanted_runs(&self) -> Vec<&str> {
        self.pending
            .iter()
            .filter(|p| p.wants_runs)
            .map(|p| p.test.as_str())
            .collect()
    }
}

/// The owner a sentinel stands for while the canonical text is written: replaced by `null`.
const NO_OWNER: &str = "\u{0}flakegate: no owner";

/// A test's owner by CODEOWNERS: the first owner of the rule that matches its file (a pytest
/// node id's path). `None` when no rule names one — flakegate never invents an owner.
pub fn codeowner_of(codeowners: &crate::gate::codeowners::CodeOwners, test: &TestId) -> Option<String> {
    let (path, _) = test.as_str().split_once("::")?;
    codeowners.owners_of(path.trim_start_matches("./")).first().cloned()
}

/// What the evidence shows of one test (or every test under an entry's prefix).
struct Seen {
    judgements: Vec<(TestId, Judgement)>,
    /// Passing runs in a row since the last failure, the fewest over the tests.
    clean: u64,
    /// Passing runs in a row the recovery rule asks of the test that asks the most.
    needed: u64,
    failed_before: bool,
}

fn seen(stab: &Stabilities<'_>, prefix: &str, policy: &MaintainPolicy) -> Seen {
    let mut tests: std::collections::BTreeSet<TestId> = Default::default();
    if let Some(p) = stab.probe {
        tests.extend(p.tests.keys().filter(|t| t.is_under(prefix)).cloned());
    }
    if let Some(h) = stab.history {
        tests.extend(h.tests.keys().filter(|t| t.is_under(prefix)).cloned());
    }
    let mut out = Seen {
        judgements: Vec::new(),
        clean: u64::MAX,
        needed: u64::from(
            policy
                .prune_runs
                .max(stab.history.map_or(1, |h| h.recovery_runs))
                .max(1),
        ),
        failed_before: false,
    };
    for t in tests {
        let Some(j) = stab.judge(&t) else { continue };
        let th = stab.history.and_then(|h| h.tests.get(&t));
        let probe = stab.probe_counts(&t).filter(|c| c.runs > 0);
        let probe_clean = probe.map_or(0, |c| if c.failures == 0 { u64::from(c.runs) } else { 0 });
        let probe_failed = probe.is_some_and(|c| c.failures > 0);
        let history_clean = th.map_or(0, |h| h.passes_since_failure);
        let clean = if probe_failed { 0 } else { history_clean + probe_clean };
        if let (Some(th), Some(h)) = (th, stab.history) {
            out.needed = out
                .needed
                .max(crate::gate::history::runs_to_recover(th, h.recovery_runs));
        }
        out.failed_before |= j.failures > 0;
        out.clean = out.clean.min(clean);
        out.judgements.push((t, j));
    }
    if out.judgements.is_empty() {
        out.clean = 0;
    }
    out
}

/// The plan for `ledger` on `today`: entries past or near expiry judged on `stab` (a probe
/// and/or the flake history), and `candidates` — tests the history calls unstable — proposed
/// for a freeze when no entry covers them. `owner_of` names a test's owner from CODEOWNERS.
pub fn plan(
    ledger: &Ledger,
    stab: &Stabilities<'_>,
    candidates: &[TestId],
    owner_of: &dyn Fn(&TestId) -> Option<String>,
    policy: &MaintainPolicy,
    today: NaiveDate,
) -> Plan {
    let mut changes = Vec::new();
    let mut pending = Vec::new();
    let mut entries: Vec<FreezeEntry> = Vec::new();
    for e in &ledger.entries {
        let due = e.is_expired(today) || (e.expires - today).num_days() <= i64::from(policy.warning_days);
        if !due {
            entries.push(e.clone());
            continue;
        }
        let s = seen(stab, &e.test, policy);
        let unstable = s.judgements.iter().find(|(_, j)| j.stability == Stability::Unstable);
        let broken = s
            .judgements
            .iter()
            .find(|(_, j)| j.stability == Stability::BrokenOnBase);
        let wait = |why: String, runs_wanted: u64| Pending {
            test: e.test.clone(),
            owner: Some(e.owner.clone()),
            why,
            wants_runs: runs_wanted > 0,
            runs_wanted,
        };
        if let Some((_, j)) = unstable {
            let evidence = j.runs_text();
            match renewal(e, policy, today) {
                Some(expires) => {
                    changes.push(Change::Renew {
                        test: e.test.clone(),
                        owner: e.owner.clone(),
                        was: e.expires,
                        expires,
                        evidence: evidence.clone(),
                    });
                    let mut renewed = e.clone();
                    renewed.observed = Some(evidence);
                    renewed.frozen_at = renewed.frozen_at.or(Some(today));
                    renewed.expires = expires;
                    entries.push(renewed);
                }
                None => {
                    pending.push(wait(
                        format!(
                            "still unstable ({evidence}), but a renewal would pass the policy's max_freeze_days \
                             from frozen_at {}: fix the test or remove the entry",
                            e.frozen_at.map(|d| d.to_string()).unwrap_or_default()
                        ),
                        0,
                    ));
                    entries.push(e.clone());
                }
            }
        } else if let Some((t, j)) = broken {
            pending.push(wait(
                format!(
                    "{} fails every run on the base ({}): broken, not flaky — fix it rather than renew the freeze",
                    t,
                    j.runs_text()
                ),
                0,
            ));
            entries.push(e.clone());
        } else if !s.judgements.is_empty() && s.clean >= s.needed {
            changes.push(Change::Prune {
                test: e.test.clone(),
                owner: e.owner.clone(),
                runs: s.clean,
                evidence: passing_statement(s.clean, s.failed_before),
            });
        } else {
            let why = if s.judgements.is_empty() {
                format!(
                    "no run of it is known: {} passing runs in a row would prune it",
                    s.needed
                )
            } else {
                format!("{} passing runs in a row so far; {} would prune it", s.clean, s.needed)
            };
            pending.push(wait(why, s.needed.saturating_sub(s.clean).max(1)));
            entries.push(e.clone());
        }
    }
    for t in candidates {
        if ledger.is_frozen(t) || changes.iter().any(|c| c.test() == t.as_str()) {
            continue;
        }
        let Some(j) = stab.judge(t).filter(|j| j.stability == Stability::Unstable) else {
            continue;
        };
        let expires = today + chrono::Days::new(u64::from(first_freeze_days(policy)));
        let owner = owner_of(t);
        let evidence = j.runs_text();
        entries.push(FreezeEntry {
            test: t.as_str().to_string(),
            observed: Some(evidence.clone()),
            reason: Some("unstable in the flake history; proposed by flakegate ledger maintain".into()),
            owner: owner.clone().unwrap_or_else(|| NO_OWNER.to_string()),
            frozen_at: Some(today),
            expires,
            line: 0,
        });
        changes.push(Change::Freeze {
            test: t.as_str().to_string(),
            owner,
            expires,
            evidence,
        });
    }
    let ledger = (!changes.is_empty()).then(|| canonical_with_unowned(&entries));
    Plan {
        changes,
        pending,
        ledger,
    }
}

/// A freeze's first length: the default, within the policy's limit.
fn first_freeze_days(policy: &MaintainPolicy) -> u32 {
    policy
        .max_freeze_days
        .map_or(policy.freeze_days, |m| policy.freeze_days.min(m))
        .max(1)
}

/// The renewed expiry: `freeze_days` from today, within `max_freeze_days` of the freeze's start;
/// `None` when that does not reach past the current expiry (a renewal never shortens).
fn renewal(e: &FreezeEntry, policy: &MaintainPolicy, today: NaiveDate) -> Option<NaiveDate> {
    let mut expires = today + chrono::Days::new(u64::from(policy.freeze_days.max(1)));
    if let (Some(max), Some(start)) = (policy.max_freeze_days, e.frozen_at) {
        expires = expires.min(start + chrono::Days::new(u64::from(max)));
    }
    (expires > e.expires).then_some(expires)
}

/// The canonical ledger text, with `"owner": null` for entries no CODEOWNERS rule owns.
fn canonical_with_unowned(entries: &[FreezeEntry]) -> String {
    let text = Ledger::canonical_text(entries);
    let sentinel = serde_json::to_string(NO_OWNER).expect("a string serialises");
    text.replace(&format!("\"owner\": {sentinel}"), "\"owner\": null")
}

#[cfg(test)]
mod tests;
