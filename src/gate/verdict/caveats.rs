//! Row 7 of the decision (PASS_WITH_CAVEAT): the caveat signals, one function each;
//! `policy.signals` then decides what each does.

use super::{plural, short_list, short_locs, Decision};
use crate::gate::attribution::{blind_locations, classify_test, Witnessing};
use crate::gate::error::Location;
use crate::gate::history::Stabilities;
use crate::gate::nodeid::TestId;
use crate::gate::report::{LineClass, LineWitness, Reason, ReasonCode, WitnessStatus};
use crate::gate::trust::support::TestCode;
use crate::gate::trust::weakening::{tests_touched_by, weakenings_in};
use crate::gate::trust::{checks, substance};
use std::collections::BTreeMap;

impl Decision<'_> {
    /// Row 7 (PASS_WITH_CAVEAT): the caveat signals, in the order the policy
    /// notes list them. Each one is subject to `policy.signals`
    /// ([`Self::apply_policy_signals`]); `blind_lines` is INCONCLUSIVE under
    /// `strict_lines`.
    pub(super) fn row7_caveats(&mut self) {
        if self.witnessing() == Witnessing::SomeStable {
            self.some_frozen();
            self.blind_lines();
            self.phase_only_witness();
        }
        self.weakened_test();
        self.self_witness();
        self.head_flaky();
        self.flaky_unchanged();
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
                    "{} of {} witnesses of the changed lines {} frozen or unstable ({}); the rest {}",
                    not_stable.len(),
                    self.att.union.len(),
                    if not_stable.len() == 1 { "is" } else { "are" },
                    short_list(&not_stable, 5),
                    // Without a probe nothing measured the rest: never "stable".
                    if self.ev.probe.is_some() {
                        "are stable"
                    } else {
                        "passed (not probed)"
                    }
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
    /// assertions loosened in place, `trust::checks`; stand-ins, computed expectations,
    /// demoted assertions and removed cases, `trust::substance`).
    fn weakened_test(&mut self) {
        let code = TestCode::new(self.input.patch, &self.ev.test_sources);
        let mut weakened = weakenings_in(self.input.patch, &code);
        weakened.extend(checks::weakenings(self.input.patch));
        weakened.extend(substance::weakenings(self.input.patch, &code, &self.ev.head_sources));
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
        // A rerun within this run, or an earlier attempt of the run with the other outcome.
        let stab = Stabilities::new(self.ev.probe.as_ref(), self.ev.history.as_ref());
        for (t, r) in &res.tests {
            if classify_test(t, &self.ledger, stab, Some(res), &self.unjoined) == WitnessStatus::HeadFlaky {
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

    /// Could the patch have changed what `test` ran? Not when the test executed none of the
    /// changed lines and nothing else of the patch reaches it unseen: the coverage has per-test
    /// contexts, every changed file is measured code (or needs no evidence, and is not a deleted
    /// file of code) with no pure deletion, no excluded and no import-time changed line, and no
    /// trust rule fired. Any doubt
    /// is `false` (and the failure is `failed`).
    pub(super) fn ran_only_unchanged_code(&self, test: &TestId) -> bool {
        let Some(cov) = &self.ev.coverage else {
            return false;
        };
        cov.has_test_contexts
            && !self.att.union.contains_key(test)
            && !self
                .reasons
                .iter()
                .any(|r| crate::gate::history::blocks_recording(r.code))
            && crate::gate::history::files_leave_untouched_tests_alone(&self.att.files)
    }

    /// `flaky_unchanged`: head failures of tests that ran none of the changed lines, where the
    /// patch cannot have changed what they ran (see `ran_only_unchanged_code`): flakiness on
    /// unchanged code, named with its owner, not blamed on the patch.
    pub(super) fn flaky_unchanged(&mut self) {
        if self.unchanged_failures.is_empty() {
            return;
        }
        let (tests, locs): (Vec<TestId>, Vec<Location>) = self.unchanged_failures.iter().cloned().unzip();
        let n = tests.len();
        let mut owners: Vec<String> = tests
            .iter()
            .flat_map(|t| {
                let from_ledger = self.ledger.entries_for(t).next().map(|e| e.owner.clone());
                let from_codeowners = self
                    .ev
                    .codeowners
                    .as_ref()
                    .map(|c| c.owners_of(t.file()).to_vec())
                    .unwrap_or_default();
                from_ledger.into_iter().chain(from_codeowners)
            })
            .collect();
        owners.sort();
        owners.dedup();
        let owner = if owners.is_empty() {
            "no owner is known (no ledger entry, no CODEOWNERS line for the test file)".to_string()
        } else {
            format!("owner: {}", owners.join(", "))
        };
        self.reasons.push(
            Reason::new(
                ReasonCode::FlakyUnchanged,
                format!(
                    "{n} test{} failed on head but ran none of the changed lines ({}): {} failed on code this patch did not change — flaky, or broken on base — so the failure is not blamed on the patch; {owner}",
                    plural(n),
                    short_list(&tests, 5),
                    if n == 1 { "it" } else { "they" },
                ),
            )
            .at(locs)
            .tests(tests),
        );
    }
}
