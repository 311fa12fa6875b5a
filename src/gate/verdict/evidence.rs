//! Row 1 of the decision (INCONCLUSIVE): the evidence is missing or unreadable, shaped
//! by configuration the patch changes (trust), not about this head, or silenced by the
//! patch's own freeze.

use super::{short_list, Decision};
use crate::gate::error::Location;
use crate::gate::nodeid::TestId;
use crate::gate::report::{Reason, ReasonCode};
use crate::gate::trust::weakening::tests_touched_by;

impl Decision<'_> {
    /// Row 1 (INCONCLUSIVE): the evidence is missing or unreadable, shaped by
    /// configuration the patch changes, not about this head, or silenced by the
    /// patch's own freeze.
    pub(super) fn row1_evidence(&mut self) {
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
        self.witnesses_the_probe_did_not_run();
    }

    /// Row 1, `missing_evidence`: a probe was given but did not run a witness it could have run
    /// (a test of the base: not one the patch adds or edits), and no flake history knows it. Its
    /// stability is unknown, so it is not evidence — never a stable witness by default: a
    /// witnesses-only probe that ran other tests than it was asked for must not pass.
    fn witnesses_the_probe_did_not_run(&mut self) {
        let Some(probe) = &self.ev.probe else {
            return;
        };
        let stab = crate::gate::history::Stabilities::new(Some(probe), self.ev.history.as_ref());
        let patch = self.input.patch;
        let missing: Vec<TestId> = self
            .att
            .union
            .keys()
            .filter(|t| {
                !probe.tests.contains_key(*t)
                    && stab.judge(t).is_none()
                    && !self.unjoined.contains(*t)
                    && !tests_touched_by(patch, t)
            })
            .cloned()
            .collect();
        if missing.is_empty() {
            return;
        }
        let n = missing.len();
        self.reasons.push(
            Reason::new(
                ReasonCode::MissingEvidence,
                format!(
                    "the probe did not run {n} witness{} of this patch that the base has ({}), and no flake history knows {}: {} stability is unknown, so {} not evidence; probe {} on the base (flakegate probe --witnesses-of, or the whole suite)",
                    if n == 1 { "" } else { "es" },
                    short_list(&missing, 5),
                    if n == 1 { "it" } else { "them" },
                    if n == 1 { "its" } else { "their" },
                    if n == 1 { "it is" } else { "they are" },
                    if n == 1 { "it" } else { "them" },
                ),
            )
            .tests(missing),
        );
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
                "{} coverage test id(s) match no head result, so they are blind witnesses, never stable: {} (the coverage's {} must equal the results' id: see docs/cli.md, \"Other languages\")",
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
}

fn sha_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    let n = a.len().min(b.len());
    n >= 7 && a[..n] == b[..n]
}
