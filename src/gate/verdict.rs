//! The decision: the table of the README's "How it decides" applied to the
//! patch, its coverage, the head results, the probe and the ledger.
//!
//! [`evaluate`] first attributes witnesses to every changed line (`attribution.rs`),
//! then runs one function per row of the table, in table order; each pushes the
//! reasons of its row. Every reason that applies is reported: after
//! `policy.signals` has turned caveats off or made them INCONCLUSIVE, the
//! blocking ones (FAIL, INCONCLUSIVE) come first, then caveats, then PASS, each
//! group in table order; the first decides the verdict.

use crate::gate::attribution::{
    blind_locations, classify_test, import_time_locations, unjoined_tests, Attribution, Standing, Witnessing,
};
use crate::gate::config::{handle_for, Config, PathGlobs, SignalLevel, CONFIG_PATH};
use crate::gate::error::Location;
use crate::gate::input::{Evidence, GateInput};
use crate::gate::ledger::{ledger_changes, Ledger, LedgerChange};
use crate::gate::nodeid::IdKind;
use crate::gate::nodeid::TestId;
use crate::gate::patch::Patch;
use crate::gate::probe::{self, Probe, Stability};
use crate::gate::report::*;
use crate::gate::results::{Outcome, TestResults};
use crate::gate::trust::checks;
use crate::gate::trust::weakening::{tests_touched_by, weakenings};
use crate::gate::trust::{evidence_config_changes, is_dependency_file};
use std::collections::{BTreeMap, BTreeSet};

/// Decide: attribute witnesses to the changed lines, run the rows of the
/// decision table in order, apply `policy.signals`, and say PASS (row 8) when
/// no reason is left.
pub fn evaluate(input: &GateInput<'_>) -> Report {
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
    /// The base ledger, or an empty one when it is invalid.
    ledger: &'a Ledger,
    /// `evidence_config_changed` reasons, and notes about edits that do not shape the evidence.
    config_reasons: Vec<Reason>,
    config_notes: Vec<String>,
    /// Why the files that need no evidence could not be matched, if they could not.
    glob_error: Option<String>,
    att: Attribution,
    /// The patch's own ledger edits (base → head), when both ledgers are known.
    ledger_changes: Vec<LedgerChange>,
    /// Witnesses whose id joins no head result (LCOV, Bazel): blind.
    unjoined: BTreeSet<TestId>,

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
        let ledger = input.ledger.as_ref().unwrap_or(&NO_LEDGER);
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
                ledger,
                probe: ev.probe.as_ref(),
                results: ev.results.as_ref(),
            },
            &ev.head_sources,
            &unjoined,
        );
        let ledger_changes = match (&ev.head_ledger, input.ledger) {
            (Some(head), Ok(base)) => ledger_changes(base, head),
            _ => Vec::new(),
        };
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
            reasons: Vec::new(),
            notes: Vec::new(),
            blind: BTreeMap::new(),
            results: ResultsReport::default(),
            expired: Vec::new(),
            unowned_unstable: Vec::new(),
            turned_off: Vec::new(),
        }
    }

    /// Row 1 (INCONCLUSIVE): the evidence is missing or unreadable, shaped by
    /// configuration the patch changes, not about this head, or silenced by the
    /// patch's own freeze.
    fn row1_evidence(&mut self) {
        self.missing_evidence();
        self.evidence_config_changed();
        self.evidence_mismatch();
        self.self_freeze();
    }

    /// Row 1, `missing_evidence`: a part of the evidence could not be read, no
    /// coverage was given, the coverage has no test contexts, or the files that
    /// need no evidence could not be matched.
    fn missing_evidence(&mut self) {
        let ev = self.ev;
        for p in &ev.problems {
            self.reasons.push(
                Reason::new(ReasonCode::MissingEvidence, format!("evidence unreadable: {p}"))
                    .at(vec![p.location.clone()]),
            );
        }
        let cov_file = self.coverage_file();
        if ev.coverage.is_none() && !ev.problems.iter().any(|p| p.location.file == cov_file) {
            self.reasons.push(Reason::new(
                ReasonCode::MissingEvidence,
                "no coverage was given: run pytest with --cov-context=test and put coverage.json (coverage json --show-contexts) or .coverage in the evidence",
            ));
        }
        if let Some(cov) = &ev.coverage {
            if !cov.has_test_contexts {
                self.reasons.push(Reason::new(
                    ReasonCode::MissingEvidence,
                    format!("{cov_file} has no test contexts: run pytest with --cov-context=test (and coverage json --show-contexts), so each line names the tests that ran it"),
                ));
            }
        }
        if let Some(m) = &self.glob_error {
            self.reasons.push(Reason::new(ReasonCode::MissingEvidence, m.clone()));
        }
    }

    /// Row 1, `evidence_config_changed` (Trust): the patch changes the workflow
    /// that produced the evidence (or, when that is unknown, any workflow), local
    /// actions, coverage or pytest settings, flakegate's config, or puts
    /// `# pragma: no cover` on changed code.
    fn evidence_config_changed(&mut self) {
        self.reasons.extend(self.config_reasons.iter().cloned());
        self.notes.extend(self.config_notes.iter().cloned());
    }

    /// Row 1, `evidence_mismatch` (Trust): `meta.json` names another head
    /// commit, or the coverage measures none of the changed Python files. Also
    /// notes how coverage paths were mapped and which contexts were ignored.
    fn evidence_mismatch(&mut self) {
        let (input, ev) = (self.input, self.ev);
        let cov_file = self.coverage_file();
        let workflow = self.workflow();
        // "the evidence workflow" in a sentence: its file when known.
        let rerun = match &workflow {
            Some(w) => format!("re-run {w}"),
            None => "re-run the workflow that produces the evidence".to_string(),
        };
        let from = workflow
            .as_ref()
            .map(|w| format!(", produced by {w},"))
            .unwrap_or_default();
        if let (Some(want), Some(meta)) = (&input.head_sha, &ev.meta) {
            if let Some(got) = &meta.head_sha {
                if !sha_eq(want, got) {
                    let meta_file = input.input_path("meta").unwrap_or_else(|| "meta.json".into());
                    self.reasons.push(
                        Reason::new(
                            ReasonCode::EvidenceMismatch,
                            format!("{meta_file} says the evidence{from} is for commit {got}, but the head under review is {want}: {rerun} on the head commit and use its evidence"),
                        )
                        .at(vec![Location::file(meta_file.clone())]),
                    );
                }
            }
        }
        let Some(cov) = &ev.coverage else {
            return;
        };
        // When the patch changed the coverage configuration, that (evidence_config_changed)
        // is why the changed files are unmeasured; a second, vaguer reason would only blur it.
        let config_distrusted = !self.config_reasons.is_empty();
        if cov.files.is_empty() && cov.measured_files > 0 && self.att.unmeasured_existing > 0 && !config_distrusted {
            self.reasons.push(
                Reason::new(
                    ReasonCode::EvidenceMismatch,
                    format!(
                        "{cov_file}{from} measures {} files but none of the Python files this patch changes, so it is from another commit, another repository or another source root: {rerun} on this head with coverage's relative_files = true",
                        cov.measured_files
                    ),
                )
                .at(vec![Location::file(cov_file.clone())]),
            );
        }
        for (from, to) in &cov.mapped_paths {
            self.notes.push(format!(
                "coverage path {from} was mapped to {to} by suffix (coverage without relative_files)"
            ));
        }
        if !self.unjoined.is_empty() {
            let names: Vec<&str> = self.unjoined.iter().map(TestId::as_str).collect();
            self.notes.push(format!(
                "{} coverage test id(s) match no head result, so they are blind witnesses, never stable: {} (the coverage's {} must equal the results' id: see README, \"Other languages\")",
                names.len(),
                names.join(", "),
                cov.format.id_kind().describe()
            ));
        }
        if !cov.foreign_contexts.is_empty() {
            self.notes.push(format!(
                "ignored coverage contexts that are not pytest-cov test contexts: {}",
                cov.foreign_contexts.join(", ")
            ));
        }
    }

    /// Row 1, `self_freeze` (Trust): the patch's ledger freezes (or freezes for
    /// longer) a test that executes its own changed lines.
    fn self_freeze(&mut self) {
        let ledger_file = self.input.ledger_file_name();
        let mut self_frozen: Vec<TestId> = Vec::new();
        let mut self_locs = Vec::new();
        for c in self.ledger_changes.iter().filter(|c| c.freezes_more()) {
            let hit: Vec<TestId> = self.att.union.keys().filter(|t| t.is_under(&c.test)).cloned().collect();
            if !hit.is_empty() {
                self_locs.push(Location::at(format!("{ledger_file} (head)"), c.line, None));
                self_frozen.extend(hit);
            }
        }
        if !self_frozen.is_empty() {
            self_frozen.sort();
            self_frozen.dedup();
            self.reasons.push(
                Reason::new(
                    ReasonCode::SelfFreeze,
                    format!(
                        "the patch freezes tests that execute its own changed lines ({}): a patch may not silence its own witnesses; land the freeze separately, with its owner's review",
                        short_list(&self_frozen, 5)
                    ),
                )
                .at(self_locs)
                .tests(self_frozen),
            );
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
            self.reasons.push(
                Reason::new(
                    ReasonCode::Failed,
                    format!(
                        "{n} stable test{} failed on head: {list}. Fix the code, not the test.",
                        plural(n)
                    ),
                )
                .at(locs)
                .tests(failing_stable),
            );
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
        let results_report = &mut self.results;
        let mut failing_stable = Vec::new();
        let mut locs = Vec::new();
        for (test, r) in &res.tests {
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
                let status = classify_test(test, self.ledger, ev.probe.as_ref(), Some(res), &self.unjoined);
                let counts = status.is_stable();
                if counts {
                    failing_stable.push(test.clone());
                    locs.push(Location::file(r.source.clone()));
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
                results_report.failures.push(HeadFailure {
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
                self.notes.push(format!(
                    "the freeze of {} expired on {}, but this evidence's probe shows it stable: prune the entry",
                    e.test, e.expires
                ));
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

    /// Row 7 (PASS_WITH_CAVEAT): the caveat signals, in the order the policy
    /// notes list them. Each one is subject to `policy.signals`
    /// ([`Self::apply_policy_signals`]); `blind_lines` is INCONCLUSIVE under
    /// `strict_lines`.
    fn row7_caveats(&mut self) {
        if self.witnessing() == Witnessing::SomeStable {
            self.some_frozen();
            self.blind_lines();
            self.phase_only_witness();
        }
        self.weakened_test();
        self.self_witness();
        self.head_flaky();
        self.no_results();
        self.ledger_edited();
    }

    /// Row 7, `some_frozen`: some (not all) witnesses are frozen or unstable.
    fn some_frozen(&mut self) {
        let not_stable = self.att.not_stable();
        if not_stable.is_empty() {
            return;
        }
        self.reasons.push(
            Reason::new(
                ReasonCode::SomeFrozen,
                format!(
                    "{} of {} witnesses of the changed lines {} frozen or unstable ({}); the rest are stable",
                    not_stable.len(),
                    self.att.union.len(),
                    if not_stable.len() == 1 { "is" } else { "are" },
                    short_list(&not_stable, 5)
                ),
            )
            .tests(not_stable),
        );
    }

    /// Row 7, `blind_lines`: some changed lines or files have no stable witness
    /// (INCONCLUSIVE, code `BlindLinesStrict`, under `policy.strict_lines`).
    fn blind_lines(&mut self) {
        let locs = blind_locations(&self.att.files);
        if locs.is_empty() {
            return;
        }
        let reason = if self.input.config.policy.strict_lines {
            Reason::new(
                ReasonCode::BlindLinesStrict,
                format!(
                    "{} changed line{} or file{} have no stable witness ({}); policy strict_lines requires one for every line",
                    locs.len(),
                    plural(locs.len()),
                    plural(locs.len()),
                    short_locs(&locs, 5)
                ),
            )
        } else {
            Reason::new(
                ReasonCode::BlindLines,
                format!(
                    "{} changed line{} or file{} have no stable witness ({}); add a test for them",
                    locs.len(),
                    plural(locs.len()),
                    plural(locs.len()),
                    short_locs(&locs, 5)
                ),
            )
        };
        self.reasons.push(reason.at(locs));
    }

    /// Row 7, `phase_only_witness`: changed lines ran only in fixture setup/teardown.
    fn phase_only_witness(&mut self) {
        let phase_only_lines = &self.att.phase_only_lines;
        if phase_only_lines.is_empty() {
            return;
        }
        self.reasons.push(
            Reason::new(
                ReasonCode::PhaseOnlyWitness,
                format!(
                    "{} changed line{} ran only in fixture setup/teardown, which cannot fail the way an assertion can ({})",
                    phase_only_lines.len(),
                    plural(phase_only_lines.len()),
                    short_locs(phase_only_lines, 5)
                ),
            )
            .at(phase_only_lines.clone()),
        );
    }

    /// Row 7, `weakened_test`: the patch weakens its tests (retries, sleeps,
    /// skips, widened tolerances, removed assertions or tests, no-ops, new
    /// tests that assert nothing; hand-written retries, swallowed assertions and
    /// assertions loosened in place, `trust::checks`).
    fn weakened_test(&mut self) {
        let mut weakened = weakenings(self.input.patch);
        weakened.extend(checks::weakenings(self.input.patch));
        if weakened.is_empty() {
            return;
        }
        let list: Vec<String> = weakened
            .iter()
            .take(5)
            .map(|w| format!("{}: {}", w.location, w.what))
            .collect();
        self.reasons.push(
            Reason::new(
                ReasonCode::WeakenedTest,
                format!(
                    "the patch weakens its tests ({}{}); a reviewer must confirm each is intended, or revert it",
                    list.join("; "),
                    if weakened.len() > 5 {
                        format!("; and {} more", weakened.len() - 5)
                    } else {
                        String::new()
                    }
                ),
            )
            .at(weakened.iter().map(|w| w.location.clone()).collect()),
        );
    }

    /// Row 7, `self_witness`: changed lines whose only stable witnesses are
    /// tests the patch adds or modifies.
    fn self_witness(&mut self) {
        if self.ev.coverage.is_none() {
            return;
        }
        let patch = self.input.patch;
        let mut self_lines = Vec::new();
        let mut self_tests: Vec<TestId> = Vec::new();
        // Each test judged once: a witness of many lines is looked up once.
        let mut touched: BTreeMap<TestId, bool> = BTreeMap::new();
        let mut touched_by_patch = |t: &TestId| *touched.entry(t.clone()).or_insert_with(|| tests_touched_by(patch, t));
        for f in &self.att.files {
            for l in f.lines.iter().filter(|l| l.class == LineClass::Stable) {
                let stable: Vec<&LineWitness> = l.witnesses.iter().filter(|w| w.status.is_stable()).collect();
                if !stable.is_empty() && stable.iter().all(|w| touched_by_patch(&w.test)) {
                    self_lines.push(Location::at(f.path.clone(), l.line as usize, None));
                    self_tests.extend(stable.iter().map(|w| w.test.clone()));
                }
            }
        }
        if self_lines.is_empty() {
            return;
        }
        self_tests.sort();
        self_tests.dedup();
        self.reasons.push(
            Reason::new(
                ReasonCode::SelfWitness,
                format!(
                    "{} changed line{} {} witnessed only by tests this patch adds or modifies ({}), so the patch vouches for itself: cover {} with a test the patch leaves unchanged, or a reviewer must read those tests",
                    self_lines.len(),
                    plural(self_lines.len()),
                    if self_lines.len() == 1 { "is" } else { "are" },
                    short_list(&self_tests, 5),
                    if self_lines.len() == 1 { "it" } else { "them" }
                ),
            )
            .at(self_lines)
            .tests(self_tests),
        );
    }

    /// Row 7, `head_flaky`: a test that nothing else shows unstable (not frozen,
    /// not unstable or broken in the probe) failed and then passed on a rerun in
    /// the head run. A patch can make a test flaky, and K base runs cannot rule
    /// out a low rate, so this is a caveat (INCONCLUSIVE by `policy.signals`),
    /// not FAIL; the test is no stable witness either way.
    fn head_flaky(&mut self) {
        let Some(res) = &self.ev.results else {
            return;
        };
        let mut tests = Vec::new();
        let mut locs = Vec::new();
        for (t, r) in res.head_flaky() {
            if classify_test(t, self.ledger, self.ev.probe.as_ref(), Some(res), &self.unjoined)
                == WitnessStatus::HeadFlaky
            {
                tests.push(t.clone());
                locs.push(Location::file(r.source.clone()));
            }
        }
        if tests.is_empty() {
            return;
        }
        let n = tests.len();
        let witnessing = tests.iter().filter(|t| self.att.union.contains_key(*t)).count();
        self.reasons.push(
            Reason::new(
                ReasonCode::HeadFlaky,
                format!(
                    "{n} test{} stable on base failed and then passed on a rerun on head ({}){}: flaky on this evidence, so not a stable witness; the patch may have made {} flaky — run {} again on head, or find the cause",
                    plural(n),
                    short_list(&tests, 5),
                    if witnessing > 0 {
                        format!(", {witnessing} of them witnessing changed lines")
                    } else {
                        String::new()
                    },
                    if n == 1 { "it" } else { "them" },
                    if n == 1 { "it" } else { "them" },
                ),
            )
            .at(locs)
            .tests(tests),
        );
    }

    /// Row 7, `no_results`: changes need evidence, and no head results were given.
    fn no_results(&mut self) {
        if self.ev.results.is_none() && self.att.needs_evidence_units > 0 {
            self.reasons.push(Reason::new(
                ReasonCode::NoResults,
                "no head test results were given (results/ with a report-log or JUnit file), so failures on head were not checked",
            ));
        }
    }

    /// Row 7, `ledger_edited` (Trust): the patch edits the freeze ledger, listed
    /// entry by entry; this evaluation used the base ledger.
    fn ledger_edited(&mut self) {
        let ledger_changes = &self.ledger_changes;
        if ledger_changes.is_empty() {
            return;
        }
        let list: Vec<String> = ledger_changes
            .iter()
            .take(5)
            .map(|c| format!("{} {:?}: {}", c.test, c.kind, c.detail))
            .collect();
        self.reasons.push(Reason::new(
            ReasonCode::LedgerEdited,
            format!(
                "the patch edits the freeze ledger ({} entr{}: {}); this evaluation used the base ledger, and the edits take effect only after they land",
                ledger_changes.len(),
                if ledger_changes.len() == 1 { "y" } else { "ies" },
                list.join("; ")
            ),
        ));
    }

    /// Who cannot see this patch's effect (besides the owners of expired
    /// entries, row 4): the owners of frozen or unstable witnesses, and through
    /// CODEOWNERS the owners of changed lines no stable test witnesses. An
    /// unstable witness nobody owns is a note.
    fn blind_owners(&mut self) {
        let (input, ev, ledger) = (self.input, self.ev, self.ledger);
        let blind = &mut self.blind;
        for (test, status) in &self.att.union {
            match status {
                WitnessStatus::Frozen => {
                    for e in ledger.entries_for(test) {
                        let bo = blind_owner(blind, &e.owner, input.config);
                        if !bo.tests.contains(test) {
                            bo.tests.push(test.clone());
                        }
                        let by = if e.test == test.as_str() {
                            String::new()
                        } else {
                            format!(" (by the entry {})", e.test)
                        };
                        bo.why.push(format!("{test} is frozen{by} and executes changed lines"));
                        let broken = ev
                            .probe
                            .as_ref()
                            .is_some_and(|p| p.stability(test) == Some(Stability::BrokenOnBase));
                        push_action(bo, if broken { "fix" } else { "re-probe" });
                    }
                }
                WitnessStatus::Unstable => {
                    if ledger.is_frozen(test) {
                        for e in ledger.entries_for(test) {
                            let bo = blind_owner(blind, &e.owner, input.config);
                            if !bo.tests.contains(test) {
                                bo.tests.push(test.clone());
                            }
                            bo.why
                                .push(format!("{test} is unstable on base and executes changed lines"));
                            push_action(bo, "fix");
                        }
                    } else {
                        self.unowned_unstable.push(test.clone());
                    }
                }
                _ => {}
            }
        }
        // CODEOWNERS: the owners of changed lines that no stable test witnesses.
        if let Some(co) = &ev.codeowners {
            for f in self.att.files.iter().filter(|f| f.is_blind()) {
                let owners = co.owners_of(&f.path);
                if owners.is_empty() {
                    continue;
                }
                let what = if f.evidence == FileEvidence::Blind {
                    format!(
                        "{} is blind ({})",
                        f.path,
                        f.blind_reason.as_deref().unwrap_or("no stable witness")
                    )
                } else {
                    let mut lines: Vec<u32> = f
                        .uncovered_lines
                        .iter()
                        .chain(&f.frozen_only_lines)
                        .chain(&f.excluded_lines)
                        .copied()
                        .collect();
                    lines.sort();
                    format!("{} lines {} have no stable witness", f.path, line_list(&lines))
                };
                for owner in owners {
                    let bo = blind_owner(blind, owner, input.config);
                    bo.why.push(format!("CODEOWNERS: {what}"));
                    push_action(bo, "add-test");
                }
            }
        }
        if !self.unowned_unstable.is_empty() {
            self.notes.push(format!(
                "unstable on base but not in the ledger, so nobody owns them: {} (freeze them with an owner, or fix them)",
                short_list(&self.unowned_unstable, 5)
            ));
        }
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
                "no change in this patch needs test evidence (documentation, comments, renames or mode changes only)",
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
                    "all {stable_n} witness{} of the changed lines are stable",
                    if stable_n == 1 { "" } else { "es" }
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
            files: self.att.files,
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

fn sha_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    let n = a.len().min(b.len());
    n >= 7 && a[..n] == b[..n]
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

#[cfg(test)]
mod tests;
