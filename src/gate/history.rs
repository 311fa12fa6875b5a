//! Flake history: what earlier runs showed about each test, kept across pull requests, and
//! how it joins this evidence's probe to judge stability.
//!
//! The store keeps, per repository, every trusted observation: a base probe's counts per test
//! and sha, and the head run's outcomes (of tests that executed no changed line, recorded for
//! the *base* sha: they ran the base's code). This module is the pure half: the observations
//! one evidence yields ([`observations`]), what the store hands back for the tests that matter
//! ([`History`]), and the judgement ([`Stabilities`]): a test is **unstable** when it both
//! passed and failed on one sha within the window — in this probe, in the history, or the two
//! together — until [`RECOVERY`]'s rule clears it; **broken** when every run on the base sha
//! failed.

mod model;

pub use model::{
    runs_to_recover, History, HistoryPolicy, HistoryReport, Judgement, Observation, RunKind, Source, TestHistory,
    TestStanding, RECOVERY,
};

use crate::gate::input::Evidence;
use crate::gate::nodeid::TestId;
use crate::gate::probe::{Probe, ProbeCounts, Stability};
use crate::gate::report::{FileEvidence, FileReport, ReasonCode, Report};
use crate::gate::results::{Outcome, TestResults};
use chrono::NaiveDate;
use std::collections::BTreeSet;

/// The history's part of the report for `tests`, or `None` without a history.
pub fn report<'a>(stab: Stabilities<'_>, tests: impl IntoIterator<Item = &'a TestId>) -> Option<HistoryReport> {
    let h = stab.history?;
    let tests = tests
        .into_iter()
        .filter_map(|t| {
            let th = h.tests.get(t)?;
            Some(TestStanding {
                test: t.clone(),
                judgement: stab.judge(t)?,
                head_failure: th.head_failure.clone(),
            })
        })
        .collect();
    Some(HistoryReport {
        window_days: h.window_days,
        recovery_runs: h.recovery_runs,
        recovery: RECOVERY,
        tests,
    })
}

/// The stability of tests from this evidence's probe and the history together.
#[derive(Debug, Clone, Copy)]
pub struct Stabilities<'a> {
    pub probe: Option<&'a Probe>,
    pub history: Option<&'a History>,
}

impl<'a> Stabilities<'a> {
    pub fn new(probe: Option<&'a Probe>, history: Option<&'a History>) -> Self {
        Stabilities { probe, history }
    }

    /// The stability of `test`, or `None` when neither the probe nor the history ran it.
    pub fn stability(&self, test: &TestId) -> Option<Stability> {
        self.judge(test).map(|j| j.stability)
    }

    /// The probe's counts for `test` (this evidence only).
    pub fn probe_counts(&self, test: &TestId) -> Option<ProbeCounts> {
        self.probe.and_then(|p| p.tests.get(test)).copied()
    }

    /// Did `test` fail and pass on the head's code: a rerun within this run, or an earlier
    /// attempt of the run (recorded in the history for the head sha) with the other outcome?
    pub fn flaky_on_head(&self, test: &TestId, now: Option<&crate::gate::results::TestResult>) -> bool {
        if now.is_some_and(|r| r.is_head_flaky()) {
            return true;
        }
        let Some(th) = self.history.and_then(|h| h.tests.get(test)) else {
            return false;
        };
        let (mut passes, mut failures) = th.on_head;
        if let Some(r) = now {
            let (p, f) = head_counts(r.outcome, r.reruns);
            passes += u64::from(p);
            failures += u64::from(f);
        }
        passes > 0 && failures > 0
    }

    /// The whole judgement of `test`.
    pub fn judge(&self, test: &TestId) -> Option<Judgement> {
        let probed = self.probe_counts(test).filter(|c| c.runs > 0);
        let Some(h) = self.history.and_then(|h| h.tests.get(test).map(|t| (h, t))) else {
            return probed.map(|c| Judgement {
                stability: c.stability(),
                runs: u64::from(c.runs),
                failures: u64::from(c.failures),
                since: None,
                seen: None,
                history_only: false,
                recovers_after: None,
                power: None,
            });
        };
        let (h, th) = h;
        let (p_runs, p_fail) = probed.map_or((0, 0), |c| (u64::from(c.runs), u64::from(c.failures)));
        let runs = th.runs + p_runs;
        let failures = th.failures + p_fail;
        if runs == 0 {
            return None;
        }
        // This probe and the history's runs on the same base sha are runs of the same code.
        let base_passes = th.on_base.0 + (p_runs - p_fail);
        let base_failures = th.on_base.1 + p_fail;
        let to_recover = runs_to_recover(th, h.recovery_runs);
        let recovered = th.passes_since_failure >= to_recover;
        let mut recovers_after = None;
        let probe_unstable = probed.is_some_and(|c| c.stability() == Stability::Unstable);
        let (stability, seen) = if probe_unstable {
            (Stability::Unstable, None)
        } else if base_passes > 0 && base_failures > 0 {
            (Stability::Unstable, th.last_failure.clone())
        } else if th.unstable_on.is_some() && !recovered {
            recovers_after = Some(to_recover - th.passes_since_failure);
            (Stability::Unstable, th.unstable_on.clone())
        } else if base_failures > 0 && base_passes == 0 {
            (Stability::BrokenOnBase, th.last_failure.clone())
        } else if base_passes == 0 && base_failures == 0 && th.failures > 0 && th.passes_since_failure == 0 {
            // No run on this base yet, and its latest runs elsewhere failed: broken until a run
            // shows otherwise, never a stable witness.
            (Stability::BrokenOnBase, th.last_failure.clone())
        } else {
            (Stability::StablePassing, th.last_failure.clone())
        };
        let power = (stability == Stability::StablePassing).then(|| {
            let clean = th.passes_since_failure + if p_fail == 0 { p_runs } else { 0 };
            crate::gate::probe::passing_statement(clean, failures > 0)
        });
        Some(Judgement {
            stability,
            runs,
            failures,
            since: th.since,
            seen,
            history_only: probed.is_none(),
            recovers_after,
            power,
        })
    }
}

/// The tests whose history the gate may ask for: every test named by the coverage of the
/// changed files (the witnesses are among them) and every test of the head results that failed
/// or was rerun.
pub fn tests_of_interest(
    coverage: Option<&crate::gate::coverage::Coverage>,
    results: Option<&TestResults>,
) -> BTreeSet<TestId> {
    let mut out = BTreeSet::new();
    if let Some(cov) = coverage {
        for f in cov.files.values() {
            out.extend(f.tests.iter().cloned());
        }
    }
    if let Some(res) = results {
        for (id, r) in &res.tests {
            if r.outcome.is_failure() || r.reruns > 0 {
                out.insert(id.clone());
            }
        }
    }
    out
}

/// How a head-run outcome counts: (passes, failures), each failed attempt a rerun plugin
/// repeated one more failure; skips and expected failures count nothing.
pub fn head_counts(outcome: Outcome, reruns: u32) -> (u32, u32) {
    let (p, f) = match outcome {
        Outcome::Passed | Outcome::XPassed => (1, 0),
        Outcome::Failed | Outcome::Error => (0, 1),
        Outcome::Skipped | Outcome::XFailed => (0, 0),
    };
    (p, f + reruns)
}

/// The observations of one probe on `base`: one per test it ran.
pub fn probe_observations(probe: &Probe, source: &Source) -> Vec<Observation> {
    probe
        .tests
        .iter()
        .filter(|(_, c)| c.runs > 0)
        .map(|(test, c)| Observation {
            test: test.clone(),
            passes: c.runs - c.failures.min(c.runs),
            failures: c.failures.min(c.runs),
            source: source.clone(),
        })
        .collect()
}

/// Who and what an evidence's observations are recorded as coming from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordContext {
    pub pr: Option<u64>,
    pub run_id: Option<u64>,
    pub attempt: Option<u32>,
    pub date: NaiveDate,
    /// The pull request comes from a fork: its runs may show a test unstable (failures of
    /// base probe runs), never stable (no passes, no head runs).
    pub fork: bool,
}

/// The observations one judged evidence adds to the history, or why it adds none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    pub observations: Vec<Observation>,
    /// The tests this judgement read the history of ([`tests_of_interest`]): a later judgement
    /// of the same run reads the same tests, so the store keeps the run's own copy (to read the
    /// history without it) of these alone — not of a whole suite's head run.
    pub judged: BTreeSet<TestId>,
    /// Why parts were left out (for notes and logs), e.g. "a trust rule fired".
    pub skipped: Vec<String>,
}

/// Reason codes under which nothing of the evidence is recorded: it may have been shaped by
/// the patch (or is not this head's, or is missing).
pub fn blocks_recording(code: ReasonCode) -> bool {
    code == ReasonCode::MissingEvidence || code.is_about_the_patchs_evidence()
}

/// May a head-run outcome of a test that executed no changed line be taken for a run of the
/// base's code? Only when the patch cannot have changed what such a test ran: every changed
/// file is measured code or needs no evidence, no changed line ran at import time or is
/// excluded from measurement, no code was deleted ([`files_leave_untouched_tests_alone`]), and
/// no trust rule fired (the conditions of `flaky_unchanged`). Under any doubt, no.
pub fn untouched_tests_ran_base_code(report: &Report) -> bool {
    report.reasons.iter().all(|r| !blocks_recording(r.code)) && files_leave_untouched_tests_alone(&report.files)
}

/// Do the patch's files leave what a test that executed none of the changed lines ran as it was
/// on the base? The one rule behind `flaky_unchanged` and the history's head observations.
pub fn files_leave_untouched_tests_alone<'a>(files: impl IntoIterator<Item = &'a FileReport>) -> bool {
    files.into_iter().all(|f| match f.evidence {
        // A deleted file of code may fail what used it.
        FileEvidence::NotNeeded => !f.deletes_code,
        FileEvidence::NoExecutableChange => true,
        // Code a test may have run is gone (a pure deletion), or a changed line ran at
        // import time or was not measured: what an untouched test ran may have changed.
        FileEvidence::Measured => {
            f.import_time_lines.is_empty() && f.deletions.is_empty() && f.excluded_lines.is_empty()
        }
        FileEvidence::Blind => false,
    })
}

/// Every test that executed a changed line, whatever its status.
pub fn witness_union(report: &Report) -> BTreeSet<&TestId> {
    let w = &report.witnesses;
    w.stable
        .iter()
        .chain(&w.frozen)
        .chain(&w.unstable)
        .chain(&w.failing_on_base)
        .chain(&w.unjoined)
        .chain(&w.head_flaky)
        .collect()
}

/// What a judged evidence teaches the history: this evidence's probe on the base sha, and the
/// head run's outcomes — of a test that executed no changed line, on the base sha (it ran the
/// base's code, see [`untouched_tests_ran_base_code`]); of a witness, on the head sha (a re-run
/// attempt of the same head is a run of the same code). Nothing when a trust rule fired.
pub fn observations(report: &Report, ev: &Evidence, ctx: &RecordContext) -> Recording {
    let mut out = Recording {
        observations: Vec::new(),
        judged: tests_of_interest(ev.coverage.as_ref(), ev.results.as_ref()),
        skipped: Vec::new(),
    };
    let blocking: Vec<&str> = report
        .reasons
        .iter()
        .filter(|r| blocks_recording(r.code))
        .map(|r| r.code.as_str())
        .collect();
    if !blocking.is_empty() {
        out.skipped.push(format!(
            "nothing recorded: the evidence may have been shaped by the patch ({})",
            blocking.join(", ")
        ));
        return out;
    }
    let meta = ev.meta.as_ref();
    let base = report
        .base_sha
        .clone()
        .or_else(|| meta.and_then(|m| m.base_sha.clone()));
    let head = report
        .head_sha
        .clone()
        .or_else(|| meta.and_then(|m| m.head_sha.clone()));
    let source = |sha: &str, kind| Source {
        sha: sha.to_string(),
        kind,
        pr: ctx.pr,
        run_id: ctx.run_id,
        attempt: ctx.attempt,
        date: ctx.date,
    };
    let Some(base) = base.filter(|s| !s.trim().is_empty()) else {
        out.skipped
            .push("nothing recorded: the evidence names no base sha".into());
        return out;
    };
    if let Some(p) = &ev.probe {
        for mut o in probe_observations(p, &source(&base, RunKind::Probe)) {
            if ctx.fork {
                // A fork's runs never make a test look stable: only its failures count.
                if o.failures == 0 {
                    continue;
                }
                o.passes = 0;
            }
            out.observations.push(o);
        }
    }
    let Some(res) = &ev.results else {
        return out;
    };
    if ctx.fork {
        out.skipped
            .push("head run not recorded: the pull request comes from a fork".into());
        return out;
    }
    let touched = witness_union(report);
    let untouched_ok = untouched_tests_ran_base_code(report);
    if !untouched_ok {
        out.skipped.push(
            "head outcomes of tests that ran no changed line not recorded: some changed file is not measured code, or a changed line ran at import time"
                .into(),
        );
    }
    for (test, r) in &res.tests {
        let (passes, failures) = head_counts(r.outcome, r.reruns);
        if passes + failures == 0 {
            continue;
        }
        let sha = if touched.contains(test) {
            match &head {
                Some(h) if !h.trim().is_empty() => h.clone(),
                _ => continue,
            }
        } else if untouched_ok {
            base.clone()
        } else {
            continue;
        };
        out.observations.push(Observation {
            test: test.clone(),
            passes,
            failures,
            source: source(&sha, RunKind::Head),
        });
    }
    out
}

#[cfg(test)]
#[path = "history/tests.rs"]
mod tests;
