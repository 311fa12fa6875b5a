//! Who must do what: the headline of a verdict, and the actions the check run and the comment
//! lead with — for the author, for a reviewer, and per owner of a frozen, unstable or expired
//! test — with the @-mention policy (`mentions` in the config) applied.

use super::words::unmentioned;
use crate::gate::config::{handle_for, is_handle, Config, Mentions};
use crate::gate::inert;
use crate::gate::probe::Stability;
use crate::gate::report::{ReasonCode, Report, Verdict};
use serde::Serialize;
use std::collections::BTreeSet;

/// One line of "to do": who (our markdown: a handle, or a name in bold) and what (our markdown).
#[derive(Debug, Clone, Serialize)]
pub(super) struct Action {
    pub who: String,
    pub what: String,
    /// A few words for the check run's title (plain text).
    #[serde(skip)]
    pub short: &'static str,
}

/// A reason's one-line label: what the headline and the title say after the verdict.
pub(super) fn label(code: ReasonCode, probed: bool) -> &'static str {
    use ReasonCode::*;
    match code {
        MissingEvidence => "the evidence is missing or unreadable",
        EvidenceConfigChanged => "the patch changes what produces its own evidence",
        EvidenceMismatch => "the evidence is not about this head",
        SelfFreeze => "the patch freezes a test that executes its own changes",
        InvalidLedger => "the ledger is invalid",
        Failed if probed => "a stable test failed on head",
        Failed => "a test failed on head",
        Expired => "a freeze in the ledger has expired",
        Uncovered => "no test executes the changed lines",
        FrozenOnly => "only frozen or unstable tests execute the changed lines",
        BlindLinesStrict | BlindLines => "some changed lines have no stable witness",
        SomeFrozen => "some tests that execute the changes are frozen or unstable",
        LedgerEdited => "the patch edits the ledger",
        SelfWitness => "some changes are witnessed only by tests the patch adds",
        WeakenedTest => "the patch weakens its tests",
        PhaseOnlyWitness => "some changes run only in fixture setup or teardown",
        HeadFlaky => "a test needed a rerun on head",
        FlakyUnchanged => "a test failed on code the patch does not change",
        NoResults => "no head test results were given",
        NoExecutableChange => "nothing a test can execute changed",
        AllStable if probed => "every changed line has a stable witness",
        AllStable => "every changed line has a witness that passed (not probed)",
    }
}

/// What the author (or a reviewer) is asked to do for a reason; `None`: nothing of them.
fn author_action(code: ReasonCode) -> Option<(&'static str, &'static str)> {
    use ReasonCode::*;
    let a = "Author";
    let r = "Reviewer";
    Some(match code {
        MissingEvidence => (a, "fix the evidence workflow as the reason says and re-run it"),
        EvidenceConfigChanged => (
            a,
            "move the change to what produces the evidence into its own pull request",
        ),
        EvidenceMismatch => (a, "re-run the evidence workflow on this head"),
        SelfFreeze => (
            a,
            "take the ledger edit that freezes the patch's own witness out of this pull request",
        ),
        InvalidLedger => (a, "fix the ledger entry the reason names"),
        Failed => (a, "fix the code so the failing tests pass again (not the tests)"),
        Uncovered => (a, "add a test that executes the changed lines"),
        FrozenOnly | BlindLinesStrict => (a, "add a stable test that executes the blind lines"),
        BlindLines => (a, "add a stable test that executes the blind lines (or accept them)"),
        LedgerEdited => (r, "check that each ledger edit is meant"),
        SelfWitness => (r, "check that the tests the patch adds assert what the code should do"),
        WeakenedTest => (r, "check that each weakened test is meant"),
        PhaseOnlyWitness => (a, "add a test that calls the lines, not only its fixtures"),
        HeadFlaky => (a, "check whether the patch made the rerun test flaky"),
        NoResults => (a, "have the evidence workflow upload the head's test results"),
        Expired | SomeFrozen | FlakyUnchanged | NoExecutableChange | AllStable => return None,
    })
}

/// Whether the owners of the report's frozen or unstable witnesses must act before merge.
pub(super) fn owners_block(report: &Report) -> bool {
    report
        .reasons
        .iter()
        .any(|r| r.verdict.blocks() && matches!(r.code, ReasonCode::FrozenOnly | ReasonCode::BlindLinesStrict))
}

/// Whether the expired freezes block this pull request.
pub(super) fn expired_block(report: &Report) -> bool {
    report
        .reasons
        .iter()
        .any(|r| r.verdict.blocks() && r.code == ReasonCode::Expired)
}

/// An owner as our markdown: the handle when it is one and `mention` says to notify, else the
/// name in bold without any `@`.
pub(super) fn who(owner: &str, handle: Option<&str>, mention: bool) -> String {
    match handle.filter(|h| is_handle(h)) {
        Some(h) if mention => h.to_string(),
        Some(h) => format!("**{}**", inert::text(&unmentioned(h))),
        None => format!("**{}**", inert::text(&unmentioned(owner))),
    }
}

/// Whether an owner is @-mentioned: `blocking` when they must act before merge.
pub(super) fn mention(config: &Config, must_act: bool) -> bool {
    match config.mentions {
        Mentions::Always => true,
        Mentions::Never => false,
        Mentions::Blocking => must_act,
    }
}

/// Whether the probe shows every test under `entry` failing every run (broken, not flaky).
pub(super) fn broken_on_base(report: &Report, entry: &str) -> bool {
    report.probe.as_ref().is_some_and(|p| {
        let under: Vec<_> = p.tests.iter().filter(|t| t.test.is_under(entry)).collect();
        !under.is_empty() && under.iter().all(|t| t.stability == Stability::BrokenOnBase)
    })
}

/// The actions a report asks for, the blocking ones first: the author's or a reviewer's per
/// reason (each once), then each blind owner's, then each expired freeze's owner's.
pub(super) fn actions(report: &Report, config: &Config) -> Vec<Action> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for r in &report.reasons {
        if let Some((role, what)) = author_action(r.code) {
            if seen.insert(what) {
                out.push(Action {
                    who: format!("**{role}**"),
                    what: what.to_string(),
                    short: what,
                });
            }
        }
    }
    let owners_must = owners_block(report);
    let mut owners: Vec<&crate::gate::report::BlindOwner> = report.blind_owners.iter().collect();
    owners.sort_by_key(|o| o.owner.trim_start_matches('@').to_lowercase());
    for o in owners {
        let mut tests: Vec<String> = o.tests.iter().map(|t| inert::code(t.as_str())).collect();
        tests.sort();
        let one = tests.len() == 1;
        let tests = tests.join(", ");
        let has = |a: &str| o.actions.iter().any(|x| x == a);
        let mut parts = Vec::new();
        match (has("fix"), has("re-probe")) {
            (true, false) if one => parts.push(format!(
                "fix {tests}, then remove its freeze so it witnesses changes again"
            )),
            (true, false) => parts.push(format!(
                "fix {tests}, then remove their freezes so they witness changes again"
            )),
            (false, true) => parts.push(format!(
                "re-probe {tests} on base (`flakegate probe`) and update the ledger with what it shows"
            )),
            (true, true) => parts.push(format!("fix or re-probe {tests}, then update the ledger")),
            (false, false) => {}
        }
        if has("add-test") {
            parts.push("add a stable test that executes the blind lines you own".to_string());
        }
        // "renew" is the expired freeze's action, listed below with its entry.
        for other in o
            .actions
            .iter()
            .filter(|a| !["fix", "re-probe", "add-test", "renew"].contains(&a.as_str()))
        {
            parts.push(inert::text(other));
        }
        if parts.is_empty() {
            continue;
        }
        let what = parts.join("; ");
        out.push(Action {
            who: who(&o.owner, o.handle.as_deref(), mention(config, owners_must)),
            what,
            short: "owners: fix or re-probe the frozen and unstable tests",
        });
    }
    let expired_must = expired_block(report);
    for e in &report.expired {
        let handle = handle_for(&e.owner, config);
        let what = if !e.waived_by_probe {
            format!(
                "renew the expired freeze of {} with a fresh probe, or fix the test and remove the entry",
                inert::code(&e.test)
            )
        } else if broken_on_base(report, &e.test) {
            format!(
                "fix {}: the probe shows it failing every run on base; then remove its expired entry",
                inert::code(&e.test)
            )
        } else {
            format!(
                "prune the expired entry of {}: the probe shows it stable (`flakegate ledger prune`)",
                inert::code(&e.test)
            )
        };
        out.push(Action {
            who: who(
                &e.owner,
                handle.as_deref(),
                mention(config, expired_must && !e.waived_by_probe),
            ),
            what,
            short: "owners: renew or remove the expired freezes",
        });
    }
    out
}

/// The verdict's headline after its icon: the verdict and the deciding reason's label.
pub(super) fn headline(report: &Report) -> String {
    match report.first_reason() {
        Some(r) => format!("{}: {}", report.verdict, label(r.code, report.probe.is_some())),
        None => report.verdict.to_string(),
    }
}

/// What the verdict means for merging, one sentence (our markdown), or nothing for PASS.
pub(super) fn merge_line(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Fail => "**This blocks merge.**",
        Verdict::Inconclusive => {
            "**This blocks merge:** the evidence could not judge this patch, and flakegate never passes a change it could not judge."
        }
        Verdict::PassWithCaveat => "This does not block merge.",
        Verdict::Pass => "",
    }
}
