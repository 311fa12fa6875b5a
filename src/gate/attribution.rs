//! Attribution: which tests witness each changed line. Every file the patch
//! touches is accounted for ([`FileReport`]): documentation, test code, files no
//! test executes (type stubs, `py.typed`, tool configuration) and deleted files
//! need no evidence, binary and unmeasured files are blind, and
//! in a measured file each changed executable line gets its witnesses, each
//! witness classified as stable, frozen, unstable or failing on base. The rows
//! of the decision (`verdict.rs`) all read this one [`Attribution`].

use crate::gate::config::{PathGlobs, Policy};
use crate::gate::coverage::{Coverage, FileCoverage, KeepLines, LineWitnesses};
use crate::gate::error::Location;
use crate::gate::history::Stabilities;
use crate::gate::ledger::Ledger;
use crate::gate::nodeid::{Phase, TestId};
use crate::gate::patch::{Deletion, FileChange, FileStatus, Patch};
use crate::gate::probe::Stability;
use crate::gate::report::{
    DeletionReport, FileEvidence, FileReport, LineClass, LineReport, LineWitness, WitnessStatus,
};
use crate::gate::results::TestResults;
use crate::gate::scopes::SourceMap;
use crate::gate::trust::is_test_file;
use std::collections::{BTreeMap, BTreeSet};

/// The patch's changed lines and their witnesses, file by file, and the totals
/// the rows decide on.
#[derive(Debug)]
pub(crate) struct Attribution {
    /// One report per file of the patch, in patch order.
    pub(crate) files: Vec<FileReport>,
    /// Every witness of a changed line (or attributed deletion), with its status.
    pub(crate) union: BTreeMap<TestId, WitnessStatus>,
    /// Changed executable lines, attributed deletions and blind files: what needs evidence.
    pub(crate) needs_evidence_units: usize,
    /// Changed lines whose stable witnesses ran them only in fixture setup/teardown.
    pub(crate) phase_only_lines: Vec<Location>,
    /// Pure deletions of code not attributed to neighbouring lines.
    pub(crate) deletion_only_code: usize,
    /// Blind, existing Python files (unmeasured, though not new).
    pub(crate) unmeasured_existing: usize,
}

/// Which of rows 5–7 the witnesses speak to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Witnessing {
    /// No coverage (row 1 says so), or no change needs evidence.
    Unjudged,
    /// The patch only deletes code, and no deletion is attributed (row 5).
    OnlyDeletions,
    /// Changes need evidence, and no test executes any of them (row 5).
    Unwitnessed,
    /// Every witness is frozen or not stable (row 6).
    NoStableWitness,
    /// Some witness is stable (row 7's witness caveats).
    SomeStable,
}

impl Attribution {
    /// Account for every file of `patch` against `coverage`; `no_evidence`
    /// matches the files that need no evidence.
    // Each argument is one input of the attribution; a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn of(
        patch: &Patch,
        coverage: Option<&Coverage>,
        no_evidence: &PathGlobs,
        policy: &Policy,
        standing: Standing<'_>,
        head_sources: &BTreeMap<String, String>,
        unjoined: &BTreeSet<TestId>,
    ) -> Self {
        // Only files with a changed line are ever asked for their source.
        let sources: BTreeMap<&String, SourceMap> = head_sources
            .iter()
            .filter(|(p, _)| patch.files.iter().any(|f| &f.path == *p && !f.added.is_empty()))
            .map(|(p, text)| (p, SourceMap::parse(text)))
            .collect();
        let classify = |t: &TestId| classify_test(t, standing.ledger, standing.stab, standing.results, unjoined);
        let mut files = Vec::new();
        let mut union: BTreeMap<TestId, WitnessStatus> = BTreeMap::new();
        let mut needs_evidence_units = 0usize;
        let mut phase_only_lines: Vec<Location> = Vec::new();
        let mut deletion_only_code = 0usize;
        let mut unmeasured_existing = 0usize;
        for fc in &patch.files {
            let cov = coverage.and_then(|c| c.files.get(&fc.path));
            let coverage_path = coverage.and_then(|c| {
                c.mapped_paths
                    .iter()
                    .find(|(_, repo)| repo == &fc.path)
                    .map(|(cp, _)| cp.clone())
            });
            let fr = account_file(
                fc,
                cov,
                coverage_path,
                no_evidence,
                policy.attribute_deletions,
                policy.run_phase_only,
                coverage.is_some(),
                sources.get(&fc.path),
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
                    // Deletions attributed to neighbours contribute their witnesses too:
                    // account_file put them in `lines` as witnesses of the neighbours.
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
        Attribution {
            files,
            union,
            needs_evidence_units,
            phase_only_lines,
            deletion_only_code,
            unmeasured_existing,
        }
    }

    /// How many witnesses are stable.
    pub(crate) fn stable_count(&self) -> usize {
        self.union.values().filter(|s| s.is_stable()).count()
    }

    /// The witnesses that are frozen or not stable, in test order.
    pub(crate) fn not_stable(&self) -> Vec<TestId> {
        self.union
            .iter()
            .filter(|(_, s)| !s.is_stable())
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// Which of rows 5–7 applies; `have_coverage` is whether coverage was given.
    pub(crate) fn witnessing(&self, have_coverage: bool) -> Witnessing {
        if !have_coverage {
            // Without coverage no witness can be named: row 1 already says so.
            Witnessing::Unjudged
        } else if self.needs_evidence_units == 0 && self.deletion_only_code > 0 {
            Witnessing::OnlyDeletions
        } else if self.needs_evidence_units > 0 && self.union.is_empty() {
            Witnessing::Unwitnessed
        } else if self.needs_evidence_units > 0 && self.stable_count() == 0 {
            Witnessing::NoStableWitness
        } else if self.needs_evidence_units > 0 {
            Witnessing::SomeStable
        } else {
            Witnessing::Unjudged
        }
    }
}

/// The coverage's tests that no head result names, when the coverage's ids are not
/// pytest node ids (LCOV `TN:` names, Bazel labels): an id that cannot be joined is
/// blind, never stable. Empty without head results (row 7 says so).
pub(crate) fn unjoined_tests(ev: &crate::gate::Evidence) -> BTreeSet<TestId> {
    let (Some(cov), Some(res)) = (&ev.coverage, &ev.results) else {
        return BTreeSet::new();
    };
    if cov.format.id_kind() == crate::gate::nodeid::IdKind::PytestNode {
        return BTreeSet::new();
    }
    cov.files
        .values()
        .flat_map(|f| f.tests.iter())
        .filter(|t| !res.tests.contains_key(*t))
        .cloned()
        .collect()
}

/// What a test's status as a witness is judged from: the ledger, the base
/// probe and the head results (for reruns).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Standing<'a> {
    pub(crate) ledger: &'a Ledger,
    /// This evidence's probe and the flake history.
    pub(crate) stab: Stabilities<'a>,
    pub(crate) results: Option<&'a TestResults>,
}

/// How a test stands: a witness whose id joins no head result is unjoined; else
/// unstable (probe) first, then frozen (ledger), then broken on base, then flaky on
/// head (it failed and passed on a rerun in the head run).
pub(crate) fn classify_test(
    test: &TestId,
    ledger: &Ledger,
    stab: Stabilities<'_>,
    results: Option<&TestResults>,
    unjoined: &BTreeSet<TestId>,
) -> WitnessStatus {
    let stability = stab.stability(test);
    if unjoined.contains(test) {
        WitnessStatus::Unjoined
    } else if stability == Some(Stability::Unstable) {
        WitnessStatus::Unstable
    } else if ledger.is_frozen(test) {
        WitnessStatus::Frozen
    } else if stability == Some(Stability::BrokenOnBase) {
        WitnessStatus::FailingOnBase
    } else if stab.flaky_on_head(test, results.and_then(|r| r.tests.get(test))) {
        WitnessStatus::HeadFlaky
    } else {
        WitnessStatus::Stable
    }
}

/// Is this changed line's text something that is never a statement?
/// Used where coverage lists no statements (the `.coverage` data file).
fn is_non_code_text(text: &str) -> bool {
    let t = text.trim();
    // A line opening with a triple quote is a docstring (coverage.py does not
    // count docstrings as statements).
    let docstring = ["\"\"\"", "'''", "r\"\"\"", "r'''"].iter().any(|q| t.starts_with(q));
    t.is_empty() || t.starts_with('#') || docstring || t.chars().all(|c| matches!(c, ')' | ']' | '}' | ',' | ':' | ';'))
}

/// One file of the patch, accounted for: decided from the change alone (no evidence
/// needed, none possible, nothing executable), else measured line by line.
#[allow(clippy::too_many_arguments)]
fn account_file(
    fc: &FileChange,
    cov: Option<&FileCoverage>,
    coverage_path: Option<String>,
    globs: &PathGlobs,
    attribute_deletions: bool,
    run_phase_only: bool,
    have_coverage: bool,
    source: Option<&SourceMap>,
    classify: &dyn Fn(&TestId) -> WitnessStatus,
) -> FileReport {
    let fr = FileReport {
        path: fc.path.clone(),
        old_path: fc.old_path.clone(),
        status: fc.status,
        evidence: FileEvidence::Measured,
        blind_reason: None,
        no_evidence_reason: None,
        deletes_code: false,
        witness_limit: None,
        coverage_path,
        changed_lines: fc.added_line_numbers(),
        executable_changed_lines: Vec::new(),
        stable_lines: Vec::new(),
        uncovered_lines: Vec::new(),
        frozen_only_lines: Vec::new(),
        excluded_lines: Vec::new(),
        import_time_lines: Vec::new(),
        lines: Vec::new(),
        deletions: Vec::new(),
    };
    let (mut fr, cov) = match triage(fr, fc, cov, globs, have_coverage) {
        Triage::Done(fr) => return fr,
        Triage::Measure(fr, cov) => (fr, cov),
    };
    measure_added_lines(&mut fr, fc, cov, source, run_phase_only, classify);
    measure_deletions(&mut fr, fc, cov, attribute_deletions, run_phase_only, classify);
    fr.lines.sort_by_key(|l| l.line);
    let code_deleted = fc.deletions.iter().any(is_code_deletion);
    if fr.executable_changed_lines.is_empty() && !fr.deletions.iter().any(|d| d.attributed) && !code_deleted {
        fr.evidence = FileEvidence::NoExecutableChange;
    }
    fr
}

/// Does a pure deletion remove code (not only blank, comment or docstring lines)?
fn is_code_deletion(d: &Deletion) -> bool {
    d.text.iter().any(|t| !is_non_code_text(t))
}

/// A file's deletions, each of nothing executable.
fn not_executable_deletions(fc: &FileChange) -> Vec<DeletionReport> {
    fc.deletions
        .iter()
        .map(|d| DeletionReport {
            old_start: d.old_start,
            old_count: d.old_count,
            after: d.after,
            attributed: false,
            class: Some(LineClass::NotExecutable),
        })
        .collect()
}

/// What a file's change and the coverage make of it before its lines are read.
enum Triage<'c> {
    /// Accounted for from the change alone: no evidence needed, none can exist (blind),
    /// or no executable change.
    Done(FileReport),
    /// To be measured in the file's coverage.
    Measure(FileReport, &'c FileCoverage),
}

fn triage<'c>(
    mut fr: FileReport,
    fc: &FileChange,
    cov: Option<&'c FileCoverage>,
    globs: &PathGlobs,
    have_coverage: bool,
) -> Triage<'c> {
    // Test code is the evidence, not what needs it: the trust rules judge its changes.
    let test_code = is_test_file(&fc.path);
    let no_evidence = globs.is_match(&fc.path) && fc.old_path.as_deref().is_none_or(|p| globs.is_match(p));
    let blind = |mut fr: FileReport, why: &str| {
        fr.evidence = FileEvidence::Blind;
        fr.blind_reason = Some(why.to_string());
        Triage::Done(fr)
    };
    let no_executable_change = |mut fr: FileReport| {
        fr.evidence = FileEvidence::NoExecutableChange;
        Triage::Done(fr)
    };
    let not_needed = |mut fr: FileReport, why: &str| {
        fr.evidence = FileEvidence::NotNeeded;
        fr.no_evidence_reason = Some(why.to_string());
        fr.deletions = not_executable_deletions(fc);
        Triage::Done(fr)
    };
    // Lines that cannot be read exactly cannot be matched to evidence, nor judged by the
    // trust rules (a test file): blind, unless the file needs no evidence whatever it says.
    if let Some(why) = fc.unreadable.as_deref().filter(|_| !no_evidence) {
        return blind(fr, why);
    }
    if test_code {
        return not_needed(
            fr,
            "test code: it is the evidence, and the trust rules judge its changes",
        );
    }
    if no_evidence {
        return not_needed(
            fr,
            "matches no_evidence_paths (documentation; or the ledger, a dependency manifest or configuration the trust rules judge)",
        );
    }
    // Whatever it holds, no test executes it: asking for a test of it could never be met.
    if let Some(why) = never_executed(&fc.path) {
        return not_needed(fr, why);
    }
    if fc.status == FileStatus::Deleted {
        if !fc.binary && fc.lines_known && fc.deletions.iter().all(|d| !is_code_deletion(d)) && !fc.deletions.is_empty()
        {
            return no_executable_change(fr);
        }
        // Nothing of it is left on head to run. What used it is judged by its own changed
        // lines, and a test that still uses it fails on head (a note says so).
        fr.evidence = FileEvidence::NotNeeded;
        fr.no_evidence_reason = Some("deleted file: nothing of it is left on head for a test to execute".to_string());
        fr.deletes_code = true;
        return Triage::Done(fr);
    }
    if fc.binary {
        return blind(fr, "binary file: no test can witness it");
    }
    if !fc.lines_known {
        return blind(
            fr,
            "changed lines unknown (the diff omits this file's patch, as GitHub does for very large files)",
        );
    }
    let code_added = fc.added.iter().any(|l| !is_non_code_text(&l.text));
    let code_deleted = fc.deletions.iter().any(is_code_deletion);
    if fc.added.is_empty() && !code_deleted {
        fr.deletions = not_executable_deletions(fc);
        return no_executable_change(fr);
    }
    let Some(cov) = cov else {
        if !code_added && !code_deleted {
            return no_executable_change(fr);
        }
        if !have_coverage {
            return blind(fr, "no coverage was given");
        }
        let why = if fc.path.ends_with(".py") {
            "not measured by coverage (never imported by the tests, or outside coverage's source)"
        } else {
            "not measured by coverage (not Python source); add it to no_evidence_paths if it needs no evidence"
        };
        return blind(fr, why);
    };
    Triage::Measure(fr, cov)
}

/// Why no test can ever execute the file at `path`, whatever it holds: read by type
/// checkers, packaging, git or linters, never run by the suite.
fn never_executed(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.ends_with(".pyi") {
        // Python imports the `.py` beside a stub (or the compiled module), never the stub.
        return Some("type stub (.pyi): read by type checkers, never executed by a test");
    }
    match name {
        "py.typed" => Some("PEP 561 marker (py.typed): read by type checkers, never executed"),
        ".gitignore" | ".gitattributes" | ".mailmap" | ".git-blame-ignore-revs" => {
            Some("git metadata: never executed by a test")
        }
        ".editorconfig" => Some("editor configuration: never executed by a test"),
        "mypy.ini"
        | ".mypy.ini"
        | ".flake8"
        | ".pylintrc"
        | "pylintrc"
        | ".isort.cfg"
        | "ruff.toml"
        | ".ruff.toml"
        | ".pre-commit-config.yaml" => Some("linter or type-checker configuration: the test run never reads it"),
        _ => None,
    }
}

/// Stable when some witness is; else every witness is frozen or not stable.
fn class_of_witnesses(ws: &[LineWitness]) -> LineClass {
    if ws.iter().any(|w| w.status.is_stable()) {
        LineClass::Stable
    } else {
        LineClass::FrozenOnly
    }
}

/// Each added line: its class and witnesses, in the file's line lists.
fn measure_added_lines(
    fr: &mut FileReport,
    fc: &FileChange,
    cov: &FileCoverage,
    source: Option<&SourceMap>,
    run_phase_only: bool,
    classify: &dyn Fn(&TestId) -> WitnessStatus,
) {
    let mut bodies = BTreeMap::new();
    for al in &fc.added {
        let line = al.line;
        let (class, ws) = classify_line(cov, source, al, &mut bodies, run_phase_only, classify);
        if class == LineClass::NotExecutable {
            continue;
        }
        fr.executable_changed_lines.push(line);
        match class {
            LineClass::Stable => fr.stable_lines.push(line),
            LineClass::FrozenOnly => fr.frozen_only_lines.push(line),
            LineClass::Uncovered => fr.uncovered_lines.push(line),
            LineClass::Excluded => fr.excluded_lines.push(line),
            LineClass::ImportTime => fr.import_time_lines.push(line),
            LineClass::NotExecutable => {}
        }
        fr.lines.push(LineReport {
            line,
            class,
            witnesses: ws,
        });
    }
}

/// Each pure deletion: of nothing executable, listed only, or (`attribute_deletions`)
/// witnessed by the witnesses of the lines directly above and below it.
fn measure_deletions(
    fr: &mut FileReport,
    fc: &FileChange,
    cov: &FileCoverage,
    attribute_deletions: bool,
    run_phase_only: bool,
    classify: &dyn Fn(&TestId) -> WitnessStatus,
) {
    let witnesses_at = |line: u32| -> Vec<LineWitness> {
        let Some(ws) = cov.witnesses.get(&line) else {
            return Vec::new();
        };
        to_line_witnesses(ws, run_phase_only, classify)
    };
    for d in &fc.deletions {
        let mut rep = DeletionReport {
            old_start: d.old_start,
            old_count: d.old_count,
            after: d.after,
            attributed: false,
            class: None,
        };
        if !is_code_deletion(d) {
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
                class_of_witnesses(&ws)
            });
            // The neighbours' witnesses witness the deletion: record them as a line entry at `after`.
            if !ws.is_empty() && !fr.lines.iter().any(|l| l.line == d.after.max(1)) {
                fr.lines.push(LineReport {
                    line: d.after.max(1),
                    class: class_of_witnesses(&ws),
                    witnesses: ws,
                });
            }
        }
        fr.deletions.push(rep);
    }
}

/// The lines of each changed file whose witnesses [`Attribution::of`] reads — the
/// changed lines, the statements they belong to and, for a changed `def`/`class`
/// header, the definition's `def` line and body (with the head source; without it,
/// every line from a changed line that reads as a `def`/`class`, where coverage.json's
/// regions may name a body), and the neighbours of each deletion — so a coverage reader
/// keeps only those ([`crate::gate::coverage::PathMatcher::keeping`]) however large a
/// file's entry is.
pub fn lines_needed(patch: &Patch, head_sources: &BTreeMap<String, String>) -> BTreeMap<String, KeepLines> {
    let mut out = BTreeMap::new();
    for fc in &patch.files {
        let mut keep = KeepLines::default();
        let source = head_sources
            .get(&fc.path)
            .filter(|_| !fc.added.is_empty())
            .map(|text| SourceMap::parse(text));
        for al in &fc.added {
            keep.lines.insert(al.line);
            let Some(src) = &source else {
                let t = al.text.trim_start();
                if ["def ", "async def ", "class "].iter().any(|k| t.starts_with(k)) {
                    keep.from = Some(keep.from.map_or(al.line, |f| f.min(al.line)));
                }
                continue;
            };
            if let Some((first, last)) = src.statement_of(al.line) {
                keep.lines.extend(first..=last);
            }
            if let Some(def) = src.header_holding(al.line) {
                keep.lines.insert(def.def_line);
                if let Some((b0, b1)) = def.body {
                    keep.lines.extend(b0..=b1);
                }
            }
        }
        for d in &fc.deletions {
            keep.lines.extend([d.after, d.after + 1]);
        }
        out.insert(fc.path.clone(), keep);
    }
    out
}

/// Union of the witnesses of the lines `first..=last` (a statement, a definition's body).
fn witnesses_over(cov: &FileCoverage, first: u32, last: u32) -> LineWitnesses {
    let mut out = LineWitnesses::new();
    for (_, tests) in cov.witnesses.range(first..=last.max(first)) {
        for (test, phases) in tests {
            out.entry(test.clone()).or_default().extend(phases.iter().copied());
        }
    }
    out
}

/// The class and witnesses of one changed line of a measured file.
///
/// Without the head source a line stands alone, as coverage reports it. With it
/// (`source`), a line of a multi-line statement is judged as its statement (coverage
/// reports a statement at its first line), and a line of a `def`/`class` header —
/// decorators, signature — as the definition: witnessed by the tests that ran its
/// body, besides any that ran the header itself, provided coverage saw the
/// definition run. A line that ran only at import time is `import_time`.
pub(crate) fn classify_line(
    cov: &FileCoverage,
    source: Option<&SourceMap>,
    al: &crate::gate::patch::AddedLine,
    bodies: &mut BTreeMap<u32, LineWitnesses>,
    run_phase_only: bool,
    classify: &dyn Fn(&TestId) -> WitnessStatus,
) -> (LineClass, Vec<LineWitness>) {
    let line = al.line;
    let ran = |n: u32| cov.executed.contains(&n) || cov.import_time.contains(&n) || cov.witnesses.contains_key(&n);
    // The statement the line belongs to; without the source, the line itself.
    let (first, last) = match source {
        Some(src) => match src.statement_of(line) {
            Some(span) => span,
            // Blank or comment-only in the head source.
            None => return (LineClass::NotExecutable, Vec::new()),
        },
        None => (line, line),
    };
    let class_of = |ws: &[LineWitness]| {
        if ws.iter().any(|w| w.status.is_stable()) {
            LineClass::Stable
        } else {
            LineClass::FrozenOnly
        }
    };
    if cov.excluded.contains(&line) || cov.excluded.contains(&first) {
        return (LineClass::Excluded, Vec::new());
    }
    let mut direct = witnesses_over(cov, first, last);
    let body = match source {
        Some(src) => src
            .header_holding(line)
            .filter(|def| ran(def.def_line))
            .and_then(|def| Some((def.def_line, def.body?))),
        // Without the source, coverage.json's regions still name each definition's own line
        // (not its decorators or continuation lines) and its body.
        None => None,
    };
    if let Some((def_line, (b0, b1))) = body {
        // Each definition's body is gathered once, however many of its header lines changed.
        let ws = bodies.entry(def_line).or_insert_with(|| witnesses_over(cov, b0, b1));
        for (test, phases) in ws.iter() {
            direct.entry(test.clone()).or_default().extend(phases.iter().copied());
        }
    } else if source.is_none() && ran(line) {
        for n in cov.regions.get(&line).into_iter().flatten() {
            for (test, phases) in cov.witnesses.get(n).into_iter().flatten() {
                direct.entry(test.clone()).or_default().extend(phases.iter().copied());
            }
        }
    }
    let ws = to_line_witnesses(&direct, run_phase_only, classify);
    if !ws.is_empty() {
        let class = class_of(&ws);
        return (class, ws);
    }
    let import_time = (first..=last).any(|n| cov.import_time.contains(&n));
    let executed = (first..=last).any(|n| cov.executed.contains(&n));
    let class = if cov.has_statements {
        if cov.missing.contains(&first) {
            LineClass::Uncovered
        } else if import_time {
            // Ran, but only as the module was imported (context `""`).
            LineClass::ImportTime
        } else if executed {
            // Ran under no test context (a foreign one): no witness.
            LineClass::Uncovered
        } else {
            LineClass::NotExecutable
        }
    } else if import_time {
        LineClass::ImportTime
    } else if executed {
        LineClass::Uncovered
    } else {
        // The `.coverage` data file lists no statements: code nothing ran is uncovered.
        // With the source, the statement's first line decides (a continuation line's own text may be `)`).
        let text = source.and_then(|s| s.statement_head(first)).unwrap_or(&al.text);
        if is_non_code_text(text) {
            LineClass::NotExecutable
        } else {
            LineClass::Uncovered
        }
    };
    (class, Vec::new())
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

/// Every changed place without a stable witness: blind files, blind lines and
/// attributed deletions with no stable witness.
pub(crate) fn blind_locations(files: &[FileReport]) -> Vec<Location> {
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

/// Every changed line that ran only at import time: not blind, but no witness either.
pub(crate) fn import_time_locations(files: &[FileReport]) -> Vec<Location> {
    files
        .iter()
        .flat_map(|f| {
            f.import_time_lines
                .iter()
                .map(|&l| Location::at(f.path.clone(), l as usize, None))
        })
        .collect()
}
