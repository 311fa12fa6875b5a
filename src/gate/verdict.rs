//! The decision: DESIGN.md's table applied to the patch, its coverage, the
//! head results, the probe and the ledger. Every reason that applies is
//! reported: the blocking ones (FAIL, INCONCLUSIVE, and caveats that
//! `policy.signals` makes INCONCLUSIVE) first, then caveats, then PASS, each
//! group in table order; the first decides the verdict.

use crate::gate::config::{Config, PathGlobs, SignalLevel};
use crate::gate::coverage::{FileCoverage, LineWitnesses};
use crate::gate::error::Location;
use crate::gate::input::GateInput;
use crate::gate::ledger::Ledger;
use crate::gate::nodeid::{Phase, TestId};
use crate::gate::patch::{FileChange, FileStatus};
use crate::gate::probe::{self, Probe, Stability};
use crate::gate::report::*;
use crate::gate::results::Outcome;
use std::collections::BTreeMap;

/// Decide.
pub fn evaluate(input: &GateInput<'_>) -> Report {
    let policy = &input.config.policy;
    let ev = input.evidence;
    let empty_ledger = Ledger::default();
    let ledger = input.ledger.as_ref().unwrap_or(&empty_ledger);
    let mut reasons: Vec<Reason> = Vec::new();
    let mut notes: Vec<String> = Vec::new();

    // Row 1: evidence missing or unreadable.
    for p in &ev.problems {
        reasons.push(
            Reason::new(ReasonCode::MissingEvidence, format!("evidence unreadable: {p}")).at(vec![p.location.clone()]),
        );
    }
    let cov_file = ev.coverage_file.clone().unwrap_or_else(|| "coverage".into());
    if ev.coverage.is_none() && !ev.problems.iter().any(|p| p.location.file == cov_file) {
        reasons.push(Reason::new(
            ReasonCode::MissingEvidence,
            "no coverage was given: run pytest with --cov-context=test and put coverage.json (coverage json --show-contexts) or .coverage in the evidence",
        ));
    }
    let head_sha = input
        .head_sha
        .clone()
        .or_else(|| ev.meta.as_ref().and_then(|m| m.head_sha.clone()));
    let base_sha = input
        .base_sha
        .clone()
        .or_else(|| ev.meta.as_ref().and_then(|m| m.base_sha.clone()));
    let workflow = input
        .workflow
        .clone()
        .filter(|w| !w.trim().is_empty())
        .or_else(|| ev.meta.as_ref().and_then(|m| m.workflow.clone()))
        .filter(|w| !w.trim().is_empty());
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
                reasons.push(
                    Reason::new(
                        ReasonCode::EvidenceMismatch,
                        format!("{meta_file} says the evidence{from} is for commit {got}, but the head under review is {want}: {rerun} on the head commit and use its evidence"),
                    )
                    .at(vec![Location::file(meta_file.clone())]),
                );
            }
        }
    }
    if let Some(cov) = &ev.coverage {
        if !cov.has_test_contexts {
            reasons.push(Reason::new(
                ReasonCode::MissingEvidence,
                format!("{cov_file} has no test contexts: run pytest with --cov-context=test (and coverage json --show-contexts), so each line names the tests that ran it"),
            ));
        }
    }

    // Row 1, Trust: evidence shaped by configuration this patch changes. Only
    // the caller's workflow narrows which workflow edits count: meta.json is
    // written by the very workflow run a patch may have changed.
    let (config_reasons, config_notes) = crate::gate::trust::evidence_config_changes(
        input.patch,
        crate::gate::config::CONFIG_PATH,
        input.workflow.as_deref().filter(|w| !w.trim().is_empty()),
    );
    // Files the trust rules judge (workflows, coverage and pytest settings, flakegate's config)
    // need no coverage of their own: no test can execute a YAML or INI file.
    let trust_judged: Vec<String> = config_reasons
        .iter()
        .flat_map(|r| r.locations.iter())
        .map(|l| l.file.clone())
        .filter(|f| !f.ends_with(".py"))
        .collect();
    let config_distrusted = !config_reasons.is_empty();
    reasons.extend(config_reasons);
    notes.extend(config_notes);

    // Row 2: the ledger.
    if let Err(errors) = input.ledger {
        for e in errors {
            reasons.push(
                Reason::new(ReasonCode::InvalidLedger, format!("invalid ledger: {e}")).at(vec![e.location.clone()]),
            );
        }
    }

    // The ledger itself needs no test evidence: its edits are judged by the trust rules.
    let mut no_evidence = policy.no_evidence_paths.clone();
    no_evidence.push(globset::escape(&input.config.ledger));
    no_evidence.extend(trust_judged.iter().map(|f| globset::escape(f)));
    let globs = match PathGlobs::new(&no_evidence) {
        Ok(g) => g,
        Err(m) => {
            reasons.push(Reason::new(ReasonCode::MissingEvidence, m));
            PathGlobs::new(&[]).expect("empty glob set")
        }
    };

    let classify = |t: &TestId| classify_test(t, ledger, ev.probe.as_ref());

    // Per-file, per-line attribution.
    let mut files = Vec::new();
    let mut union: BTreeMap<TestId, WitnessStatus> = BTreeMap::new();
    let mut needs_evidence_units = 0usize;
    let mut phase_only_lines: Vec<Location> = Vec::new();
    let mut deletion_only_code = 0usize;
    let mut unmeasured_existing = 0usize;
    for fc in &input.patch.files {
        let cov = ev.coverage.as_ref().and_then(|c| c.files.get(&fc.path));
        let coverage_path = ev.coverage.as_ref().and_then(|c| {
            c.mapped_paths
                .iter()
                .find(|(_, repo)| repo == &fc.path)
                .map(|(cp, _)| cp.clone())
        });
        let fr = account_file(
            fc,
            cov,
            coverage_path,
            &globs,
            policy.attribute_deletions,
            policy.run_phase_only,
            ev.coverage.is_some(),
            &classify,
        );
        if fr.evidence == FileEvidence::Blind && fc.path.ends_with(".py") && fc.status != FileStatus::Added {
            unmeasured_existing += 1;
        }
        match fr.evidence {
            FileEvidence::Blind => {
                needs_evidence_units += 1;
            }
            FileEvidence::Measured => {
                let attributed = fr
                    .deletions
                    .iter()
                    .filter(|d| d.attributed && d.class.is_some_and(|c| c != LineClass::NotExecutable))
                    .count();
                needs_evidence_units += fr.executable_changed_lines.len() + attributed;
                deletion_only_code += fr
                    .deletions
                    .iter()
                    .filter(|d| !d.attributed && d.class.is_none())
                    .count();
                for l in &fr.lines {
                    for w in &l.witnesses {
                        union.insert(w.test.clone(), w.status);
                    }
                    if l.class == LineClass::Stable
                        && l.witnesses
                            .iter()
                            .filter(|w| w.status.is_stable())
                            .all(|w| !w.phases.contains(&Phase::Run))
                    {
                        phase_only_lines.push(Location::at(&fr.path, l.line as usize, None));
                    }
                }
            }
            FileEvidence::NotNeeded | FileEvidence::NoExecutableChange => {
                deletion_only_code += fr
                    .deletions
                    .iter()
                    .filter(|d| !d.attributed && d.class.is_none())
                    .count();
            }
        }
        files.push(fr);
    }
    // Deletions attributed to neighbours contribute their witnesses too.
    // (account_file already put them in `lines` as witnesses of the neighbours.)

    if let Some(cov) = &ev.coverage {
        // When the patch changed the coverage configuration, that (reported above) is why the
        // changed files are unmeasured; a second, vaguer reason would only blur it.
        if cov.files.is_empty() && cov.measured_files > 0 && unmeasured_existing > 0 && !config_distrusted {
            reasons.push(
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
            notes.push(format!(
                "coverage path {from} was mapped to {to} by suffix (coverage without relative_files)"
            ));
        }
        if !cov.foreign_contexts.is_empty() {
            notes.push(format!(
                "ignored coverage contexts that are not pytest-cov test contexts: {}",
                cov.foreign_contexts.join(", ")
            ));
        }
    }

    // Row 3: stable tests failing on head.
    let mut results_report = ResultsReport::default();
    if let Some(res) = &ev.results {
        results_report.given = true;
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
                let status = classify(test);
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
            reasons.push(
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
            reasons.push(
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
            reasons.push(
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
            notes.push(format!(
                "{} JUnit test case{} matched no node id from coverage and were not used: {}",
                res.unmatched.len(),
                plural(res.unmatched.len()),
                results_report
                    .unmatched
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
    }

    // Row 4: expired ledger entries.
    let mut expired = Vec::new();
    let mut blind: BTreeMap<String, BlindOwner> = BTreeMap::new();
    for e in &ledger.entries {
        if !e.is_expired(input.today) {
            continue;
        }
        let waived = ev.probe.as_ref().is_some_and(|p| {
            let under: Vec<_> = p.tests.iter().filter(|(t, _)| t.is_under(&e.test)).collect();
            !under.is_empty() && under.iter().all(|(_, c)| c.stability() != Stability::Unstable)
        });
        let days_past = (input.today - e.expires).num_days();
        expired.push(ExpiredEntry {
            test: e.test.clone(),
            owner: e.owner.clone(),
            expires: e.expires.to_string(),
            days_past,
            waived_by_probe: waived,
            line: e.line,
        });
        if waived {
            notes.push(format!(
                "the freeze of {} expired on {}, but this evidence's probe shows it stable: prune the entry",
                e.test, e.expires
            ));
            continue;
        }
        reasons.push(
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
        let bo = blind_owner(&mut blind, &e.owner, input.config);
        bo.tests.push(TestId::new(e.test.clone()));
        bo.why
            .push(format!("the freeze of {} expired on {}", e.test, e.expires));
        push_action(bo, "renew");
    }

    // Rows 5–8 over the union of witnesses.
    let stable_n = union.values().filter(|s| s.is_stable()).count();
    let not_stable: Vec<TestId> = union
        .iter()
        .filter(|(_, s)| !s.is_stable())
        .map(|(t, _)| t.clone())
        .collect();
    if ev.coverage.is_none() {
        // Without coverage no witness can be named: row 1 already says so.
    } else if needs_evidence_units == 0 && deletion_only_code > 0 {
        reasons.push(Reason::new(
            ReasonCode::Uncovered,
            format!(
                "the patch only deletes code ({deletion_only_code} deletion{}); no test can be named as its witness unless policy attribute_deletions: true attributes deletions to the lines around them",
                plural(deletion_only_code)
            ),
        ));
    } else if needs_evidence_units > 0 && union.is_empty() {
        let locs = blind_locations(&files);
        reasons.push(
            Reason::new(
                ReasonCode::Uncovered,
                format!(
                    "no test executes any changed line ({} blind: {}); add a test that exercises them",
                    locs.len(),
                    short_locs(&locs, 5)
                ),
            )
            .at(locs),
        );
    } else if needs_evidence_units > 0 && stable_n == 0 {
        reasons.push(
            Reason::new(
                ReasonCode::FrozenOnly,
                format!(
                    "every test that executes the changed lines is frozen or unstable ({}): a green run here is silence, not evidence",
                    short_list(&not_stable, 5)
                ),
            )
            .tests(not_stable.clone()),
        );
    } else if needs_evidence_units > 0 {
        let locs = blind_locations(&files);
        if !locs.is_empty() && policy.strict_lines {
            reasons.push(
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
                .at(locs.clone()),
            );
        }
        if !not_stable.is_empty() {
            reasons.push(
                Reason::new(
                    ReasonCode::SomeFrozen,
                    format!(
                        "{} of {} witnesses of the changed lines {} frozen or unstable ({}); the rest are stable",
                        not_stable.len(),
                        union.len(),
                        if not_stable.len() == 1 { "is" } else { "are" },
                        short_list(&not_stable, 5)
                    ),
                )
                .tests(not_stable.clone()),
            );
        }
        if !locs.is_empty() && !policy.strict_lines {
            reasons.push(
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
                .at(locs),
            );
        }
        if !phase_only_lines.is_empty() {
            reasons.push(
                Reason::new(
                    ReasonCode::PhaseOnlyWitness,
                    format!(
                        "{} changed line{} ran only in fixture setup/teardown, which cannot fail the way an assertion can ({})",
                        phase_only_lines.len(),
                        plural(phase_only_lines.len()),
                        short_locs(&phase_only_lines, 5)
                    ),
                )
                .at(phase_only_lines),
            );
        }
    }
    // Caveat signals: tests the patch weakens, and lines only its own new tests witness.
    let weakened = crate::gate::trust::weakening::weakenings(input.patch);
    if !weakened.is_empty() {
        let list: Vec<String> = weakened
            .iter()
            .take(5)
            .map(|w| format!("{}: {}", w.location, w.what))
            .collect();
        reasons.push(
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
    if ev.coverage.is_some() {
        let mut self_lines = Vec::new();
        let mut self_tests: Vec<TestId> = Vec::new();
        // Each test judged once: a witness of many lines is looked up once.
        let mut touched: BTreeMap<TestId, bool> = BTreeMap::new();
        let mut touched_by_patch = |t: &TestId| {
            *touched
                .entry(t.clone())
                .or_insert_with(|| crate::gate::trust::weakening::tests_touched_by(input.patch, t))
        };
        for f in &files {
            for l in f.lines.iter().filter(|l| l.class == LineClass::Stable) {
                let stable: Vec<&LineWitness> = l.witnesses.iter().filter(|w| w.status.is_stable()).collect();
                if !stable.is_empty() && stable.iter().all(|w| touched_by_patch(&w.test)) {
                    self_lines.push(Location::at(f.path.clone(), l.line as usize, None));
                    self_tests.extend(stable.iter().map(|w| w.test.clone()));
                }
            }
        }
        if !self_lines.is_empty() {
            self_tests.sort();
            self_tests.dedup();
            reasons.push(
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
    }
    if ev.results.is_none() && needs_evidence_units > 0 {
        reasons.push(Reason::new(
            ReasonCode::NoResults,
            "no head test results were given (results/ with a report-log or JUnit file), so failures on head were not checked",
        ));
    }

    // Blind owners of frozen witnesses.
    let mut unowned_unstable = Vec::new();
    for (test, status) in &union {
        match status {
            WitnessStatus::Frozen => {
                for e in ledger.entries_for(test) {
                    let bo = blind_owner(&mut blind, &e.owner, input.config);
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
                        let bo = blind_owner(&mut blind, &e.owner, input.config);
                        if !bo.tests.contains(test) {
                            bo.tests.push(test.clone());
                        }
                        bo.why
                            .push(format!("{test} is unstable on base and executes changed lines"));
                        push_action(bo, "fix");
                    }
                } else {
                    unowned_unstable.push(test.clone());
                }
            }
            _ => {}
        }
    }
    // CODEOWNERS: the owners of changed lines that no stable test witnesses.
    if let Some(co) = &ev.codeowners {
        for f in files.iter().filter(|f| f.is_blind()) {
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
                format!(
                    "{} lines {} have no stable witness",
                    f.path,
                    crate::gate::report::line_list(&lines)
                )
            };
            for owner in owners {
                let bo = blind_owner(&mut blind, owner, input.config);
                bo.why.push(format!("CODEOWNERS: {what}"));
                push_action(bo, "add-test");
            }
        }
    }
    if !unowned_unstable.is_empty() {
        notes.push(format!(
            "unstable on base but not in the ledger, so nobody owns them: {} (freeze them with an owner, or fix them)",
            short_list(&unowned_unstable, 5)
        ));
    }
    let mut blind_owners: Vec<BlindOwner> = blind.into_values().collect();
    for bo in &mut blind_owners {
        bo.tests.sort();
        bo.tests.dedup();
        bo.why.sort();
        bo.why.dedup();
    }

    // Trust: the patch's own ledger edits, and freezes of its own witnesses.
    let mut ledger_changes = Vec::new();
    if let (Some(head), Ok(base)) = (&ev.head_ledger, input.ledger) {
        ledger_changes = crate::gate::ledger::ledger_changes(base, head);
        let ledger_file = input.ledger_file_name();
        let mut self_frozen: Vec<TestId> = Vec::new();
        let mut self_locs = Vec::new();
        for c in ledger_changes.iter().filter(|c| c.freezes_more()) {
            let hit: Vec<TestId> = union.keys().filter(|t| t.is_under(&c.test)).cloned().collect();
            if !hit.is_empty() {
                self_locs.push(Location::at(format!("{ledger_file} (head)"), c.line, None));
                self_frozen.extend(hit);
            }
        }
        if !self_frozen.is_empty() {
            self_frozen.sort();
            self_frozen.dedup();
            reasons.push(
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
        if !ledger_changes.is_empty() {
            let list: Vec<String> = ledger_changes
                .iter()
                .take(5)
                .map(|c| format!("{} {:?}: {}", c.test, c.kind, c.detail))
                .collect();
            reasons.push(Reason::new(
                ReasonCode::LedgerEdited,
                format!(
                    "the patch edits the freeze ledger ({} entr{}: {}); this evaluation used the base ledger, and the edits take effect only after they land",
                    ledger_changes.len(),
                    if ledger_changes.len() == 1 { "y" } else { "ies" },
                    list.join("; ")
                ),
            ));
        }
    }

    // Policy: each caveat signal off, a caveat, or INCONCLUSIVE. Only caveats
    // are knobs, so no verdict worse than a caveat is ever lowered.
    let mut turned_off: Vec<&'static str> = Vec::new();
    reasons.retain_mut(|r| {
        if r.code.verdict() != Verdict::PassWithCaveat {
            return true;
        }
        match policy.signals.get(r.code.as_str()) {
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
    if reasons.is_empty() {
        if needs_evidence_units == 0 {
            reasons.push(Reason::new(
                ReasonCode::NoExecutableChange,
                "no change in this patch needs test evidence (documentation, comments, renames or mode changes only)",
            ));
        } else if !turned_off.is_empty() {
            reasons.push(Reason::new(
                ReasonCode::AllStable,
                format!(
                    "nothing else applies: the repository's policy.signals turned off {} (listed in the notes)",
                    turned_off.join(", ")
                ),
            ));
        } else {
            reasons.push(Reason::new(
                ReasonCode::AllStable,
                format!(
                    "all {stable_n} witness{} of the changed lines are stable",
                    if stable_n == 1 { "" } else { "es" }
                ),
            ));
        }
    }
    // Blocking reasons first (a caveat that policy made INCONCLUSIVE among them),
    // then caveats, then PASS; within each, table order, then input order (stable sort).
    reasons.sort_by_key(|r| (std::cmp::Reverse(severity(r.verdict)), r.code));
    let verdict = reasons.first().map(|r| r.verdict).unwrap_or(Verdict::Inconclusive);

    let mut witnesses = Witnesses::default();
    for (t, s) in &union {
        match s {
            WitnessStatus::Stable => witnesses.stable.push(t.clone()),
            WitnessStatus::Frozen => witnesses.frozen.push(t.clone()),
            WitnessStatus::Unstable => witnesses.unstable.push(t.clone()),
            WitnessStatus::FailingOnBase => witnesses.failing_on_base.push(t.clone()),
        }
    }
    let probe = ev.probe.as_ref().map(|p| probe_report(p, &union));
    Report {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: "flakegate",
            version: env!("CARGO_PKG_VERSION"),
        },
        verdict,
        reasons,
        base_sha,
        head_sha,
        today: input.today.to_string(),
        witnesses,
        files,
        blind_owners,
        expired,
        unowned_unstable,
        ledger_changes,
        probe,
        results: results_report,
        coverage: ev.coverage.as_ref().map(|c| CoverageSummary {
            format: c.format,
            measured_files: c.measured_files,
            mapped_paths: c.mapped_paths.clone(),
        }),
        inputs: input.inputs.clone(),
        notes,
    }
}

fn sha_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    let n = a.len().min(b.len());
    n >= 7 && a[..n] == b[..n]
}

/// How a test stands: unstable (probe) first, then frozen (ledger), then broken on base.
pub fn classify_test(test: &TestId, ledger: &Ledger, probe: Option<&Probe>) -> WitnessStatus {
    let stability = probe.and_then(|p| p.stability(test));
    if stability == Some(Stability::Unstable) {
        WitnessStatus::Unstable
    } else if ledger.is_frozen(test) {
        WitnessStatus::Frozen
    } else if stability == Some(Stability::BrokenOnBase) {
        WitnessStatus::FailingOnBase
    } else {
        WitnessStatus::Stable
    }
}

/// Is this changed line's text something that is never a statement?
/// Used where coverage lists no statements (the `.coverage` data file).
pub fn is_non_code_text(text: &str) -> bool {
    let t = text.trim();
    // A line opening with a triple quote is a docstring (coverage.py does not
    // count docstrings as statements).
    let docstring = ["\"\"\"", "'''", "r\"\"\"", "r'''"].iter().any(|q| t.starts_with(q));
    t.is_empty() || t.starts_with('#') || docstring || t.chars().all(|c| matches!(c, ')' | ']' | '}' | ',' | ':' | ';'))
}

#[allow(clippy::too_many_arguments)]
fn account_file(
    fc: &FileChange,
    cov: Option<&FileCoverage>,
    coverage_path: Option<String>,
    globs: &PathGlobs,
    attribute_deletions: bool,
    run_phase_only: bool,
    have_coverage: bool,
    classify: &dyn Fn(&TestId) -> WitnessStatus,
) -> FileReport {
    let changed_lines = fc.added_line_numbers();
    let mut fr = FileReport {
        path: fc.path.clone(),
        old_path: fc.old_path.clone(),
        status: fc.status,
        evidence: FileEvidence::Measured,
        blind_reason: None,
        coverage_path,
        changed_lines: changed_lines.clone(),
        executable_changed_lines: Vec::new(),
        stable_lines: Vec::new(),
        uncovered_lines: Vec::new(),
        frozen_only_lines: Vec::new(),
        excluded_lines: Vec::new(),
        lines: Vec::new(),
        deletions: Vec::new(),
    };
    let code_deletion = |d: &crate::gate::patch::Deletion| d.text.iter().any(|t| !is_non_code_text(t));
    // Test code is the evidence, not what needs it: the trust rules judge its changes.
    let test_code = crate::gate::trust::is_test_file(&fc.path);
    if test_code || (globs.is_match(&fc.path) && fc.old_path.as_deref().is_none_or(|p| globs.is_match(p))) {
        fr.evidence = FileEvidence::NotNeeded;
        fr.deletions = fc
            .deletions
            .iter()
            .map(|d| DeletionReport {
                old_start: d.old_start,
                old_count: d.old_count,
                after: d.after,
                attributed: false,
                class: Some(LineClass::NotExecutable),
            })
            .collect();
        return fr;
    }
    let blind = |mut fr: FileReport, why: &str| {
        fr.evidence = FileEvidence::Blind;
        fr.blind_reason = Some(why.to_string());
        fr
    };
    if fc.binary {
        return blind(fr, "binary file: no test can witness it");
    }
    if !fc.lines_known {
        return blind(
            fr,
            "changed lines unknown (the diff omits this file's patch, as GitHub does for very large files)",
        );
    }
    if fc.status == FileStatus::Deleted {
        if fc.deletions.iter().all(|d| !code_deletion(d)) && !fc.deletions.is_empty() {
            fr.evidence = FileEvidence::NoExecutableChange;
            return fr;
        }
        return blind(fr, "deleted file: no test on head can witness its removal");
    }
    let code_added: Vec<_> = fc.added.iter().filter(|l| !is_non_code_text(&l.text)).collect();
    let code_deleted = fc.deletions.iter().any(code_deletion);
    if fc.added.is_empty() && !code_deleted {
        fr.evidence = FileEvidence::NoExecutableChange;
        fr.deletions = fc
            .deletions
            .iter()
            .map(|d| DeletionReport {
                old_start: d.old_start,
                old_count: d.old_count,
                after: d.after,
                attributed: false,
                class: Some(LineClass::NotExecutable),
            })
            .collect();
        return fr;
    }
    let Some(cov) = cov else {
        if code_added.is_empty() && !code_deleted {
            fr.evidence = FileEvidence::NoExecutableChange;
            return fr;
        }
        if !have_coverage {
            return blind(fr, "no coverage was given");
        }
        if fc.path.ends_with(".pyi") {
            return blind(fr, "type stub: never executed, so no test can witness it");
        }
        let why = if fc.path.ends_with(".py") {
            "not measured by coverage (never imported by the tests, or outside coverage's source)"
        } else {
            "not measured by coverage (not Python source); add it to no_evidence_paths if it needs no evidence"
        };
        return blind(fr, why);
    };

    let witnesses_at = |line: u32| -> Vec<LineWitness> {
        let Some(ws) = cov.witnesses.get(&line) else {
            return Vec::new();
        };
        to_line_witnesses(ws, run_phase_only, classify)
    };
    let class_of = |ws: &[LineWitness]| {
        if ws.iter().any(|w| w.status.is_stable()) {
            LineClass::Stable
        } else {
            LineClass::FrozenOnly
        }
    };
    for al in &fc.added {
        let line = al.line;
        let ws = witnesses_at(line);
        let class = if cov.excluded.contains(&line) {
            LineClass::Excluded
        } else if !ws.is_empty() {
            class_of(&ws)
        } else if cov.has_statements {
            if cov.missing.contains(&line) || cov.executed.contains(&line) || cov.import_time.contains(&line) {
                LineClass::Uncovered
            } else {
                LineClass::NotExecutable
            }
        } else if cov.import_time.contains(&line) || cov.executed.contains(&line) || !is_non_code_text(&al.text) {
            LineClass::Uncovered
        } else {
            LineClass::NotExecutable
        };
        if class == LineClass::NotExecutable {
            continue;
        }
        fr.executable_changed_lines.push(line);
        match class {
            LineClass::Stable => fr.stable_lines.push(line),
            LineClass::FrozenOnly => fr.frozen_only_lines.push(line),
            LineClass::Uncovered => fr.uncovered_lines.push(line),
            LineClass::Excluded => fr.excluded_lines.push(line),
            LineClass::NotExecutable => {}
        }
        fr.lines.push(LineReport {
            line,
            class,
            witnesses: ws,
        });
    }
    for d in &fc.deletions {
        let mut rep = DeletionReport {
            old_start: d.old_start,
            old_count: d.old_count,
            after: d.after,
            attributed: false,
            class: None,
        };
        if !code_deletion(d) {
            rep.class = Some(LineClass::NotExecutable);
        } else if attribute_deletions {
            rep.attributed = true;
            let mut ws: Vec<LineWitness> = Vec::new();
            for n in [d.after, d.after + 1] {
                if n == 0 {
                    continue;
                }
                for w in witnesses_at(n) {
                    if let Some(x) = ws.iter_mut().find(|x| x.test == w.test) {
                        x.phases.extend(w.phases.iter().copied());
                    } else {
                        ws.push(w);
                    }
                }
            }
            ws.sort_by(|a, b| a.test.cmp(&b.test));
            rep.class = Some(if ws.is_empty() {
                LineClass::Uncovered
            } else {
                class_of(&ws)
            });
            // The neighbours' witnesses witness the deletion: record them as a line entry at `after`.
            if !ws.is_empty() && !fr.lines.iter().any(|l| l.line == d.after.max(1)) {
                fr.lines.push(LineReport {
                    line: d.after.max(1),
                    class: class_of(&ws),
                    witnesses: ws,
                });
            }
        }
        fr.deletions.push(rep);
    }
    fr.lines.sort_by_key(|l| l.line);
    if fr.executable_changed_lines.is_empty() && !fr.deletions.iter().any(|d| d.attributed) && !code_deleted {
        fr.evidence = FileEvidence::NoExecutableChange;
    }
    fr
}

fn to_line_witnesses(
    ws: &LineWitnesses,
    run_phase_only: bool,
    classify: &dyn Fn(&TestId) -> WitnessStatus,
) -> Vec<LineWitness> {
    ws.iter()
        .filter(|(_, phases)| !run_phase_only || phases.contains(&Phase::Run))
        .map(|(t, phases)| LineWitness {
            test: t.clone(),
            status: classify(t),
            phases: phases.clone(),
        })
        .collect()
}

fn blind_locations(files: &[FileReport]) -> Vec<Location> {
    let mut out = Vec::new();
    for f in files {
        if f.evidence == FileEvidence::Blind {
            out.push(Location::file(f.path.clone()));
            continue;
        }
        for l in &f.lines {
            if l.class.is_blind() && f.executable_changed_lines.contains(&l.line) {
                out.push(Location::at(f.path.clone(), l.line as usize, None));
            }
        }
        for d in &f.deletions {
            if d.attributed && d.class.is_some_and(|c| c.is_blind()) {
                out.push(Location::at(f.path.clone(), d.after.max(1) as usize, None));
            }
        }
    }
    out
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

/// The GitHub handle to mention for an owner: the owner itself when it is a
/// handle, else the config's mapping; any other name is never @-mentioned.
pub fn handle_for(owner: &str, config: &Config) -> Option<String> {
    if crate::gate::config::is_handle(owner) {
        Some(owner.to_string())
    } else {
        config.owners.get(owner).cloned()
    }
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
#[path = "verdict_tests.rs"]
mod tests;
