//! The decision: the table of the README's "How it decides" applied to the
//! patch, its coverage, the head results, the probe and the ledger.
//!
//! [`evaluate`] first attributes witnesses to every changed line (`attribution.rs`),
//! then runs one function per row of the table, in table order; each pushes the
//! reasons of its row. Every reason that applies is reported: after
//! `policy.signals` has turned caveats off or made them INCONCLUSIVE, the
//! blocking ones (FAIL, INCONCLUSIVE) come first, then caveats, then PASS, each
//! group in table order; the first decides the verdict.
//!
//! Row 1 (the evidence and the trust rules) is in `verdict/evidence.rs`, row 7 (the
//! caveat signals) in `verdict/caveats.rs`, the blind owners in `verdict/owners.rs`;
//! the other rows, `policy.signals` and the record are here.

use crate::gate::attribution::{
    blind_locations, classify_test, import_time_locations, unjoined_tests, Attribution, Standing, Witnessing,
};
use crate::gate::config::{handle_for, Config, PathGlobs, SignalLevel, CONFIG_PATH};
use crate::gate::error::Location;
use crate::gate::history::Stabilities;
use crate::gate::input::{Evidence, GateInput};
use crate::gate::ledger::{ledger_changes, Ledger, LedgerChange};
use crate::gate::nodeid::IdKind;
use crate::gate::nodeid::TestId;
use crate::gate::patch::Patch;
use crate::gate::probe::{self, Probe, Stability};
use crate::gate::report::*;
use crate::gate::results::{Outcome, TestResults};
use crate::gate::trust::{evidence_config_changes, is_dependency_file};
use std::collections::{BTreeMap, BTreeSet};

/// Decide: attribute witnesses to the changed lines, run the rows of the
/// decision table in order, apply `policy.signals`, and say PASS (row 8) when
/// no reason is left.
pub fn evaluate(input: &GateInput<'_>) -> Report {
    // A test file the patch moves keeps its base probe runs under its new path.
    let moved_probe = input
        .evidence
        .probe
        .as_ref()
        .and_then(|p| crate::gate::ledger::moved::follow_probe(p, input.patch));
    if let Some(probe) = moved_probe {
        let mut evidence = input.evidence.clone();
        evidence.probe = Some(probe);
        return decide(&GateInput {
            evidence: &evidence,
            ..input.clone()
        });
    }
    decide(input)
}

/// [`evaluate`] on the evidence as given.
fn decide(input: &GateInput<'_>) -> Report {
    let mut d = Decision::new(input);
    d.row1_evidence();
    d.row2_ledger();
    d.row3_failed();
    d.row4_expired();
    d.row5_uncovered();
    d.row6_frozen_only();
    d.row7_caveats();
    d.blind_owners();
    d.apply_policy_signals();
    d.row8_pass();
    d.into_report()
}

/// The ledger in force when the base ledger is invalid (row 2 says so).
static NO_LEDGER: Ledger = Ledger { entries: Vec::new() };

/// What the rows share: the input, what is worked out once before them, and
/// what they find.
struct Decision<'a> {
    input: &'a GateInput<'a>,
    ev: &'a Evidence,
    /// The base ledger, or an empty one when it is invalid; its freezes of test files the
    /// patch moves carried to their new paths (`ledger::moved`).
    ledger: std::borrow::Cow<'a, Ledger>,
    /// `evidence_config_changed` reasons, and notes about edits that do not shape the evidence.
    config_reasons: Vec<Reason>,
    config_notes: Vec<String>,
    /// Why the files that need no evidence could not be matched, if they could not.
    glob_error: Option<String>,
    att: Attribution,
    /// The patch's own ledger edits (as it found the ledger → as it leaves it).
    ledger_changes: Vec<LedgerChange>,
    /// Witnesses whose id joins no head result (LCOV, Bazel): blind.
    unjoined: BTreeSet<TestId>,
    /// Head failures of tests that ran only unchanged code (`flaky_unchanged`), with where.
    unchanged_failures: Vec<(TestId, Location)>,

    reasons: Vec<Reason>,
    notes: Vec<String>,
    /// Owner → what they cannot see and what they must do.
    blind: BTreeMap<String, BlindOwner>,
    results: ResultsReport,
    expired: Vec<ExpiredEntry>,
    unowned_unstable: Vec<TestId>,
    /// The caveat codes `policy.signals` turned off, in the order met.
    turned_off: Vec<&'static str>,
}

impl<'a> Decision<'a> {
    fn new(input: &'a GateInput<'a>) -> Self {
        let ev = input.evidence;
        let base_ledger = input.ledger.as_ref().unwrap_or(&NO_LEDGER);
        // A frozen test stays frozen when the patch moves its file.
        let (ledger, moved_notes) = match crate::gate::ledger::moved::follow_moves(base_ledger, input.patch) {
            Some((l, notes)) => (std::borrow::Cow::Owned(l), notes),
            None => (std::borrow::Cow::Borrowed(base_ledger), Vec::new()),
        };
        // Only the caller's workflow narrows which workflow edits count: meta.json is
        // written by the very workflow run a patch may have changed.
        let (config_reasons, config_notes) = evidence_config_changes(
            input.patch,
            CONFIG_PATH,
            input.workflow.as_deref().filter(|w| !w.trim().is_empty()),
        );
        let (no_evidence, glob_error) = no_evidence_globs(input.config, input.patch, &config_reasons);
        let unjoined = unjoined_tests(ev);
        let att = Attribution::of(
            input.patch,
            ev.coverage.as_ref(),
            &no_evidence,
            &input.config.policy,
            Standing {
                ledger: &ledger,
                stab: Stabilities::new(ev.probe.as_ref(), ev.history.as_ref()),
                results: ev.results.as_ref(),
            },
            &ev.head_sources,
            &unjoined,
        );
        // What the patch's own diff did to the ledger: never the base's tip against the head,
        // which would blame the patch for edits landed on the base since it was cut.
        let ledger_changes = ev
            .ledger_edit
            .as_ref()
            .map(|e| ledger_changes(&e.before, &e.after))
            .unwrap_or_default();
        // A deleted file of code needs no evidence, but what used it may now fail: say so.
        let mut notes: Vec<String> = att
            .files
            .iter()
            .filter(|f| f.deletes_code)
            .map(|f| {
                format!(
                    "{} is deleted: no test can run it any more, so it needs no evidence; a test that still uses it fails on head{}",
                    f.path,
                    if ev.results.is_some() { "" } else { " (no head results were given to show it)" }
                )
            })
            .collect();
        notes.extend(moved_notes);
        Decision {
            input,
            ev,
            ledger,
            config_reasons,
            config_notes,
            glob_error,
            att,
            ledger_changes,
            unjoined,
            unchanged_failures: Vec::new(),
            reasons: Vec::new(),
            notes,
            blind: BTreeMap::new(),
            results: ResultsReport::default(),
            expired: Vec::new(),
            unowned_unstable: Vec::new(),
            turned_off: Vec::new(),
        }
    }

    /// Row 2 (INCONCLUSIVE), `invalid_ledger`: every problem found in the base ledger;
    /// and a ledger whose every id is of another kind than the coverage's (pytest node
    /// ids judged against LCOV evidence, …): none of its freezes could ever apply.
    fn row2_ledger(&mut self) {
        if let Err(errors) = self.input.ledger {
            for e in errors {
                self.reasons.push(
                    Reason::new(ReasonCode::InvalidLedger, format!("invalid ledger: {e}")).at(vec![e.location.clone()]),
                );
            }
        }
        let (Ok(ledger), Some(cov)) = (self.input.ledger, &self.ev.coverage) else {
            return;
        };
        let want = cov.format.id_kind();
        let kinds: std::collections::BTreeSet<IdKind> =
            ledger.entries.iter().filter_map(|e| IdKind::of(&e.test).ok()).collect();
        if !ledger.entries.is_empty() && !kinds.contains(&want) {
            let file = self.input.ledger_file_name();
            let had: Vec<&str> = kinds.iter().map(|k| k.describe()).collect();
            self.reasons.push(
                Reason::new(
                    ReasonCode::InvalidLedger,
                    format!(
                        "invalid ledger: {file} names its tests by {}, but the coverage ({}) names them by {}: no freeze can apply; write the ledger's \"test\" as the coverage's ids{}",
                        had.join(" and "),
                        self.coverage_file(),
                        want.describe(),
                        cov.files
                            .values()
                            .flat_map(|f| f.tests.iter())
                            .next()
                            .map(|t| format!(" (such as {t})"))
                            .unwrap_or_default()
                    ),
                )
                .at(vec![Location::file(file.clone())]),
            );
        }
    }

    /// Row 3 (FAIL), `failed`: a stable test failed on head, or xfails there
    /// although it passed in every base probe run; a JUnit case that failed and
    /// matches no node id; a collection error. Also tallies the head results.
    fn row3_failed(&mut self) {
        let ev = self.ev;
        let Some(res) = &ev.results else {
            return;
        };
        self.results.given = true;
        let (failing_stable, locs) = self.tally_head_tests(res);
        let results_report = &mut self.results;
        for ce in &res.collection_errors {
            results_report.collection_errors += 1;
            results_report.failures.push(HeadFailure {
                test: ce.nodeid.clone(),
                outcome: None,
                status: None,
                message: ce.message.clone(),
                source: ce.source.clone(),
                counts: true,
            });
        }
        let mut unmatched_failures = Vec::new();
        for u in &res.unmatched {
            results_report
                .unmatched
                .push(format!("{}: {}::{} ({})", u.source, u.classname, u.name, u.why));
            if u.outcome.is_failure() {
                // Not matched to a node id, so it cannot be shown frozen or unstable: it counts.
                unmatched_failures.push(Location::file(u.source.clone()));
                results_report.failures.push(HeadFailure {
                    test: format!("{}::{}", u.classname, u.name),
                    outcome: Some(u.outcome),
                    status: None,
                    message: u.message.clone(),
                    source: u.source.clone(),
                    counts: true,
                });
            }
        }
        if !unmatched_failures.is_empty() {
            self.reasons.push(
                Reason::new(
                    ReasonCode::Failed,
                    format!(
                        "{} JUnit test case{} failed on head and could not be matched to a node id, so nothing shows {} frozen or unstable; give a report-log (--report-log) or xunit1 JUnit with file names",
                        unmatched_failures.len(),
                        plural(unmatched_failures.len()),
                        if unmatched_failures.len() == 1 { "it" } else { "them" }
                    ),
                )
                .at(unmatched_failures),
            );
        }
        if !failing_stable.is_empty() {
            let n = failing_stable.len();
            let list = short_list(&failing_stable, 5);
            // Without a base probe nothing measured these tests' stability: never "stable" (the
            // report says once, elsewhere, what a probe would add).
            let message = format!(
                "{n} {}test{} failed on head: {list}. Fix the code, not the test.",
                if ev.probe.is_some() { "stable " } else { "" },
                plural(n)
            );
            self.reasons
                .push(Reason::new(ReasonCode::Failed, message).at(locs).tests(failing_stable));
        }
        if !res.collection_errors.is_empty() {
            let names: Vec<_> = res.collection_errors.iter().map(|c| c.nodeid.clone()).collect();
            self.reasons.push(
                Reason::new(
                    ReasonCode::Failed,
                    format!(
                        "collection failed on head for {}: the tests there did not run",
                        names.join(", ")
                    ),
                )
                .at(res
                    .collection_errors
                    .iter()
                    .map(|c| Location::file(c.source.clone()))
                    .collect()),
            );
        }
        if !res.unmatched.is_empty() {
            self.notes.push(format!(
                "{} JUnit test case{} matched no node id from coverage and were not used: {}",
                res.unmatched.len(),
                plural(res.unmatched.len()),
                self.results
                    .unmatched
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
    }

    /// Row 3's tally of the head's tests: the counts by outcome, the reruns, and each
    /// failure (an xfail of a test that passed every base probe run among them), whether
    /// it counts or not. Returns the failing stable tests and their records' places.
    fn tally_head_tests(&mut self, res: &TestResults) -> (Vec<TestId>, Vec<Location>) {
        let ev = self.ev;
        let mut failing_stable = Vec::new();
        let mut locs = Vec::new();
        for (test, r) in &res.tests {
            let results_report = &mut self.results;
            match r.outcome {
                Outcome::Passed => results_report.passed += 1,
                Outcome::Failed => results_report.failed += 1,
                Outcome::Error => results_report.errors += 1,
                Outcome::Skipped => results_report.skipped += 1,
                Outcome::XFailed => results_report.xfailed += 1,
                Outcome::XPassed => results_report.xpassed += 1,
            }
            if r.reruns > 0 {
                results_report.reran.push(RerunTest {
                    test: test.clone(),
                    reruns: r.reruns,
                    outcome: r.outcome,
                    source: r.source.clone(),
                });
            }
            // An expected failure is still a failure: a test that passed in every base probe run
            // and xfails on head broke, whatever mark the patch put on it.
            let base_runs = ev
                .probe
                .as_ref()
                .and_then(|p| p.tests.get(test))
                .filter(|c| c.runs > 0 && c.failures == 0)
                .map(|c| c.runs);
            let masked = r.outcome == Outcome::XFailed && base_runs.is_some();
            if r.outcome.is_failure() || masked {
                let status = classify_test(
                    test,
                    &self.ledger,
                    Stabilities::new(ev.probe.as_ref(), ev.history.as_ref()),
                    Some(res),
                    &self.unjoined,
                );
                let unchanged = status.is_stable() && !masked && self.ran_only_unchanged_code(test);
                let counts = status.is_stable() && !unchanged;
                if counts {
                    failing_stable.push(test.clone());
                    locs.push(Location::file(r.source.clone()));
                }
                if unchanged {
                    self.unchanged_failures
                        .push((test.clone(), Location::file(r.source.clone())));
                }
                let message = if masked {
                    Some(format!(
                        "xfailed on head, but passed in all {} base probe runs: an expected failure is still a failure{}",
                        base_runs.unwrap_or(0),
                        r.message.as_ref().map(|m| format!(" ({m})")).unwrap_or_default()
                    ))
                } else {
                    r.message.clone()
                };
                self.results.failures.push(HeadFailure {
                    test: test.to_string(),
                    outcome: Some(r.outcome),
                    status: Some(status),
                    message,
                    source: r.source.clone(),
                    counts,
                });
            }
        }
        (failing_stable, locs)
    }

    /// Row 4 (INCONCLUSIVE), `expired`: a ledger entry is past its `expires`
    /// date and no probe in this evidence shows the test stable (then it is a
    /// note: prune the entry). Its owner must renew it.
    fn row4_expired(&mut self) {
        let input = self.input;
        for e in &self.ledger.entries {
            if !e.is_expired(input.today) {
                continue;
            }
            let waived = self.ev.probe.as_ref().is_some_and(|p| {
                let under: Vec<_> = p.tests.iter().filter(|(t, _)| t.is_under(&e.test)).collect();
                !under.is_empty() && under.iter().all(|(_, c)| c.stability() != Stability::Unstable)
            });
            let days_past = (input.today - e.expires).num_days();
            self.expired.push(ExpiredEntry {
                test: e.test.clone(),
                owner: e.owner.clone(),
                expires: e.expires.to_string(),
                days_past,
                waived_by_probe: waived,
                line: e.line,
            });
            if waived {
                let broken = self.ev.probe.as_ref().is_some_and(|p| {
                    p.tests
                        .iter()
                        .any(|(t, c)| t.is_under(&e.test) && c.stability() == Stability::BrokenOnBase)
                });
                self.notes.push(if broken {
                    format!(
                        "the freeze of {} expired on {}; this evidence's probe shows it failing every run on base (not flaky, broken): fix the test, then remove the entry",
                        e.test, e.expires
                    )
                } else {
                    format!(
                        "the freeze of {} expired on {}, but this evidence's probe shows it stable: prune the entry",
                        e.test, e.expires
                    )
                });
                continue;
            }
            self.reasons.push(
                Reason::new(
                    ReasonCode::Expired,
                    format!(
                        "the freeze of {} expired on {} ({} day{} ago); {} must re-probe it and renew the entry, or fix the test",
                        e.test,
                        e.expires,
                        days_past,
                        plural(days_past as usize),
                        e.owner
                    ),
                )
                .at(vec![Location::at(input.ledger_file_name(), e.line, None)])
                .tests(vec![TestId::new(e.test.clone())]),
            );
            let bo = blind_owner(&mut self.blind, &e.owner, input.config);
            bo.tests.push(TestId::new(e.test.clone()));
            bo.why
                .push(format!("the freeze of {} expired on {}", e.test, e.expires));
            push_action(bo, "renew");
        }
    }

    /// Row 5 (INCONCLUSIVE), `uncovered`: no test executes any changed line, or
    /// the patch only deletes code and policy does not attribute deletions.
    fn row5_uncovered(&mut self) {
        match self.witnessing() {
            Witnessing::OnlyDeletions => {
                let deletion_only_code = self.att.deletion_only_code;
                self.reasons.push(Reason::new(
                    ReasonCode::Uncovered,
                    format!(
                        "the patch only deletes code ({deletion_only_code} deletion{}); no test can be named as its witness unless policy attribute_deletions: true attributes deletions to the lines around them",
                        plural(deletion_only_code)
                    ),
                ));
            }
            Witnessing::Unwitnessed => {
                let mut locs = blind_locations(&self.att.files);
                let import_time = import_time_locations(&self.att.files);
                let mut what = Vec::new();
                if !locs.is_empty() {
                    what.push(format!("{} blind: {}", locs.len(), short_locs(&locs, 5)));
                }
                if !import_time.is_empty() {
                    what.push(format!(
                        "{} ran only at import time: {}",
                        import_time.len(),
                        short_locs(&import_time, 5)
                    ));
                }
                locs.extend(import_time);
                self.reasons.push(
                    Reason::new(
                        ReasonCode::Uncovered,
                        format!(
                            "no test executes any changed line ({}); add a test that exercises them",
                            what.join("; ")
                        ),
                    )
                    .at(locs),
                );
            }
            _ => {}
        }
    }

    /// Row 6 (INCONCLUSIVE), `frozen_only`: every test that executes changed
    /// lines is frozen or unstable.
    fn row6_frozen_only(&mut self) {
        if self.witnessing() != Witnessing::NoStableWitness {
            return;
        }
        let not_stable = self.att.not_stable();
        self.reasons.push(
            Reason::new(
                ReasonCode::FrozenOnly,
                format!(
                    "every test that executes the changed lines is frozen or unstable ({}): a green run here is silence, not evidence",
                    short_list(&not_stable, 5)
                ),
            )
            .tests(not_stable),
        );
    }

    /// `policy.signals`: each caveat signal off (dropped, with a note), a
    /// caveat, or INCONCLUSIVE (escalated). Only caveats are knobs, so no
    /// verdict worse than a caveat is ever lowered.
    fn apply_policy_signals(&mut self) {
        let policy = &self.input.config.policy;
        let (notes, turned_off) = (&mut self.notes, &mut self.turned_off);
        self.reasons.retain_mut(|r| {
            if r.code.verdict() != Verdict::PassWithCaveat {
                return true;
            }
            match policy.signals.for_code(r.code) {
                Some(SignalLevel::Off) => {
                    notes.push(format!(
                        "policy.signals.{} is off, so this reason did not count: {}",
                        r.code.as_str(),
                        r.message
                    ));
                    if !turned_off.contains(&r.code.as_str()) {
                        turned_off.push(r.code.as_str());
                    }
                    false
                }
                Some(SignalLevel::Inconclusive) => {
                    r.verdict = Verdict::Inconclusive;
                    r.escalated = true;
                    true
                }
                Some(SignalLevel::Caveat) | None => true,
            }
        });
    }

    /// Row 8 (PASS), when no other reason is left: `no_executable_change` when
    /// nothing needs evidence, else `all_stable`.
    fn row8_pass(&mut self) {
        if !self.reasons.is_empty() {
            return;
        }
        if self.att.needs_evidence_units == 0 {
            self.reasons.push(Reason::new(
                ReasonCode::NoExecutableChange,
                "no change in this patch needs test evidence (documentation, comments, files no test executes, deleted files, renames or mode changes only)",
            ));
        } else if !self.turned_off.is_empty() {
            self.reasons.push(Reason::new(
                ReasonCode::AllStable,
                format!(
                    "nothing else applies: the repository's policy.signals turned off {} (listed in the notes)",
                    self.turned_off.join(", ")
                ),
            ));
        } else {
            let stable_n = self.att.stable_count();
            self.reasons.push(Reason::new(
                ReasonCode::AllStable,
                format!(
                    "all {stable_n} witness{} of the changed lines {}",
                    if stable_n == 1 { "" } else { "es" },
                    // Without a probe nothing measured them: never "stable".
                    if self.ev.probe.is_some() {
                        "are stable"
                    } else {
                        "passed on head (not probed)"
                    }
                ),
            ));
        }
    }

    /// The record: reasons ordered blocking first (a caveat that policy made
    /// INCONCLUSIVE among them), then caveats, then PASS; within each, table
    /// order, then the order the rows found them. The first decides.
    fn into_report(mut self) -> Report {
        let (input, ev) = (self.input, self.ev);
        self.reasons
            .sort_by_key(|r| (std::cmp::Reverse(severity(r.verdict)), r.code));
        let verdict = self.reasons.first().map(|r| r.verdict).unwrap_or(Verdict::Inconclusive);
        let mut blind_owners: Vec<BlindOwner> = self.blind.into_values().collect();
        for bo in &mut blind_owners {
            bo.tests.sort();
            bo.tests.dedup();
            bo.why.sort();
            bo.why.dedup();
        }
        let mut witnesses = Witnesses::default();
        for (t, s) in &self.att.union {
            match s {
                WitnessStatus::Stable => witnesses.stable.push(t.clone()),
                WitnessStatus::Frozen => witnesses.frozen.push(t.clone()),
                WitnessStatus::Unstable => witnesses.unstable.push(t.clone()),
                WitnessStatus::FailingOnBase => witnesses.failing_on_base.push(t.clone()),
                WitnessStatus::Unjoined => witnesses.unjoined.push(t.clone()),
                WitnessStatus::HeadFlaky => witnesses.head_flaky.push(t.clone()),
            }
        }
        let probe = ev.probe.as_ref().map(|p| probe_report(p, &self.att.union));
        // The record lists every line's witnesses while they are few enough in all; beyond, the
        // first few of each, so a huge patch's record stays readable.
        let line_witness_limit = line_witness_limit(&self.att.files);
        let files: Vec<FileReport> = std::mem::take(&mut self.att.files)
            .into_iter()
            .map(|f| FileReport {
                witness_limit: line_witness_limit,
                ..f
            })
            .collect();
        let failing = ev
            .results
            .iter()
            .flat_map(|r| r.tests.iter())
            .filter(|(_, r)| r.outcome.is_failure() || r.reruns > 0)
            .map(|(t, _)| t);
        let judged: BTreeSet<&TestId> = self.att.union.keys().chain(failing).collect();
        let history = crate::gate::history::report(Stabilities::new(ev.probe.as_ref(), ev.history.as_ref()), judged);
        Report {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "flakegate",
                version: env!("CARGO_PKG_VERSION"),
            },
            verdict,
            reasons: self.reasons,
            base_sha: input
                .base_sha
                .clone()
                .or_else(|| ev.meta.as_ref().and_then(|m| m.base_sha.clone())),
            head_sha: input
                .head_sha
                .clone()
                .or_else(|| ev.meta.as_ref().and_then(|m| m.head_sha.clone())),
            today: input.today.to_string(),
            witnesses,
            files,
            line_witness_limit,
            blind_owners,
            expired: self.expired,
            unowned_unstable: self.unowned_unstable,
            ledger_changes: self.ledger_changes,
            probe,
            results: self.results,
            coverage: ev.coverage.as_ref().map(|c| CoverageSummary {
                format: c.format,
                measured_files: c.measured_files,
                mapped_paths: c.mapped_paths.clone(),
            }),
            inputs: input.inputs.clone(),
            notes: self.notes,
            history,
            codebase: None,
        }
    }

    fn witnessing(&self) -> Witnessing {
        self.att.witnessing(self.ev.coverage.is_some())
    }

    /// The coverage file's name in messages.
    fn coverage_file(&self) -> String {
        self.ev.coverage_file.clone().unwrap_or_else(|| "coverage".into())
    }

    /// The workflow that produced the evidence, for messages: the caller's, else `meta.json`'s.
    fn workflow(&self) -> Option<String> {
        self.input
            .workflow
            .clone()
            .filter(|w| !w.trim().is_empty())
            .or_else(|| self.ev.meta.as_ref().and_then(|m| m.workflow.clone()))
            .filter(|w| !w.trim().is_empty())
    }
}

/// The files that need no evidence: the policy's `no_evidence_paths`, the
/// ledger (its edits are judged by the trust rules) and the non-Python files
/// the trust rules judge (workflows, coverage and pytest settings, flakegate's
/// config, dependency manifests: no test can execute a YAML or INI file). A bad glob is reported
/// (row 1, `missing_evidence`) and then nothing matches.
fn no_evidence_globs(config: &Config, patch: &Patch, config_reasons: &[Reason]) -> (PathGlobs, Option<String>) {
    let trust_judged = config_reasons
        .iter()
        .flat_map(|r| r.locations.iter())
        .map(|l| l.file.clone())
        .filter(|f| !f.ends_with(".py"));
    let mut no_evidence = config.policy.no_evidence_paths.clone();
    no_evidence.push(globset::escape(&config.ledger));
    no_evidence.extend(trust_judged.map(|f| globset::escape(&f)));
    no_evidence.extend(
        patch
            .files
            .iter()
            .filter(|f| is_dependency_file(&f.path))
            .map(|f| globset::escape(&f.path)),
    );
    match PathGlobs::new(&no_evidence) {
        Ok(g) => (g, None),
        Err(m) => (PathGlobs::new(&[]).expect("empty glob set"), Some(m)),
    }
}

fn blind_owner<'a>(map: &'a mut BTreeMap<String, BlindOwner>, owner: &str, config: &Config) -> &'a mut BlindOwner {
    map.entry(owner.to_string()).or_insert_with(|| BlindOwner {
        owner: owner.to_string(),
        handle: handle_for(owner, config),
        tests: Vec::new(),
        why: Vec::new(),
        actions: Vec::new(),
    })
}

fn push_action(bo: &mut BlindOwner, action: &str) {
    if !bo.actions.iter().any(|a| a == action) {
        bo.actions.push(action.to_string());
    }
}

fn probe_report(p: &Probe, union: &BTreeMap<TestId, WitnessStatus>) -> ProbeReport {
    let rate = probe::min_detectable_rate(p.k, 0.9);
    let power = match rate {
        // Rounded up, so the sentence never claims more than K runs show.
        Some(r) => format!(
            "a test passing all {} runs is not shown unstable at p ≥ {} (90 % chance to see both outcomes); lower failure rates can hide",
            p.k,
            probe::pct(r)
        ),
        None => format!("{} runs cannot reveal any failure rate with 90 % chance; raise K", p.k),
    };
    let mut tests: Vec<ProbeTest> = p
        .tests
        .iter()
        .filter(|(t, c)| c.stability() != Stability::StablePassing || union.contains_key(*t))
        .map(|(t, c)| ProbeTest {
            test: t.clone(),
            failures: c.failures,
            runs: c.runs,
            stability: c.stability(),
        })
        .collect();
    tests.sort_by(|a, b| a.test.cmp(&b.test));
    ProbeReport {
        k: p.k,
        min_detectable_rate_90: rate,
        power,
        complete: p.complete,
        seed: p.seed,
        tests,
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn short_list(tests: &[TestId], n: usize) -> String {
    let mut s: Vec<String> = tests.iter().take(n).map(|t| t.to_string()).collect();
    if tests.len() > n {
        s.push(format!("and {} more", tests.len() - n));
    }
    s.join(", ")
}

fn short_locs(locs: &[Location], n: usize) -> String {
    let mut s: Vec<String> = locs.iter().take(n).map(|l| l.to_string()).collect();
    if locs.len() > n {
        s.push(format!("and {} more", locs.len() - n));
    }
    s.join(", ")
}

mod caveats;
mod evidence;
mod owners;
#[cfg(test)]
mod tests;
