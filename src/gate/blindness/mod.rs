//! The blindness map: for a full suite's per-test coverage, which code nobody is watching.
//!
//! Every line of every measured file is judged as the gate would judge it if a patch changed
//! it (the same `gate::attribution::classify_line`: statements, `def`/`class`
//! headers witnessed by their bodies, excluded and import-time lines, the policy's
//! `run_phase_only`, each witness classified by
//! `gate::attribution::classify_test` against the ledger, the probe, the flake
//! history and the head results):
//!
//! - *witnessed*: some witness is stable;
//! - *blind*: witnessed only by frozen or not-stable tests, which are named;
//! - *uncovered*: no test ran it (or it ran only at import time, or under no test context).
//!
//! Then, per frozen or not-stable test, the lines it is the only witness of (what fixing or
//! unfreezing it alone would restore); per owner of freezes, the blind lines their freezes
//! cause and their soonest expiry; per file, the three counts; and the ledger's freezes that
//! name no test the coverage knows (they blind nothing that is measured).
//!
//! Pure: the coverage, ledger, stabilities and sources are passed in, `today` too. Memory is
//! the report's: one entry per measured line (the blind ones name their tests), nothing per
//! (line, test) pair beyond what the coverage reader holds.

mod model;
mod summary;
#[cfg(test)]
mod tests;

pub use model::{
    BlindLine, BlindnessMap, FileBlindness, FileLines, FreezeRef, LineState, OwnerBlindness, TestBlindness, Totals,
};
pub use summary::{BlindnessSummary, CodebaseMap, OwnerSummary, TestSummary};

use crate::gate::attribution::{classify_line, classify_test};
use crate::gate::config::Policy;
use crate::gate::coverage::statements::PythonStatements;
use crate::gate::coverage::{Coverage, FileCoverage};
use crate::gate::error::{InputError, Location};
use crate::gate::history::Stabilities;
use crate::gate::ledger::Ledger;
use crate::gate::nodeid::{Phase, TestId};
use crate::gate::patch::{AddedLine, Scope};
use crate::gate::report::{LineClass, WitnessStatus};
use crate::gate::results::TestResults;
use crate::gate::scopes::SourceMap;
use chrono::NaiveDate;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The version of the JSON this module's [`BlindnessMap`] serialises to.
pub const SCHEMA: &str = "flakegate.blindness/1";

/// What the map is computed from.
#[derive(Debug, Clone, Copy)]
pub struct BlindnessInput<'a> {
    /// The whole suite's coverage, every file and every line's witnesses
    /// ([`crate::gate::coverage::PathMatcher::every_file`]).
    pub coverage: &'a Coverage,
    /// Where the coverage was read from, for errors.
    pub coverage_file: &'a str,
    pub ledger: &'a Ledger,
    /// The evidence's probe and the flake history.
    pub stab: Stabilities<'a>,
    /// The head run's results (a rerun that passed makes a test flaky on head).
    pub results: Option<&'a TestResults>,
    pub policy: &'a Policy,
    /// Repository path → source text, for the files whose source could be read: statements
    /// and definitions are then judged as the gate judges them with the head's source.
    pub sources: &'a BTreeMap<String, String>,
    pub today: NaiveDate,
}

/// What judges each test, for every file of one map.
#[derive(Debug, Clone, Copy)]
pub struct Judging<'a> {
    pub ledger: &'a Ledger,
    pub stab: Stabilities<'a>,
    pub results: Option<&'a TestResults>,
    pub policy: &'a Policy,
    pub today: NaiveDate,
}

/// Compute the map. The one error: coverage without per-test contexts, which cannot say
/// who witnesses anything.
pub fn map(input: &BlindnessInput<'_>) -> Result<BlindnessMap, InputError> {
    let cov = input.coverage;
    let unjoined = match input.results {
        Some(res) if cov.format.id_kind() != crate::gate::nodeid::IdKind::PytestNode => cov
            .files
            .values()
            .flat_map(|f| f.tests.iter())
            .filter(|t| !res.tests.contains_key(*t))
            .cloned()
            .collect(),
        _ => BTreeSet::new(),
    };
    let judging = Judging {
        ledger: input.ledger,
        stab: input.stab,
        results: input.results,
        policy: input.policy,
        today: input.today,
    };
    let mut mapper = Mapper::new(judging, unjoined);
    for (path, fc) in &cov.files {
        mapper.add_file(path, fc, input.sources.get(path).map(String::as_str));
    }
    mapper.finish(input.coverage_file, cov)
}

/// The map built one file at a time (a reader hands each file over as it reads it, and
/// only the file's line states are kept): [`Mapper::add_file`], then [`Mapper::finish`].
pub struct Mapper<'a> {
    judging: Judging<'a>,
    unjoined: BTreeSet<TestId>,
    /// Each test is classified once, however many lines it witnesses.
    cache: RefCell<HashMap<TestId, WitnessStatus>>,
    files: Vec<FileBlindness>,
    only: BTreeMap<TestId, BTreeMap<String, Vec<u32>>>,
    blind_by_test: BTreeMap<TestId, usize>,
    /// Every test the coverage names.
    known: BTreeSet<TestId>,
}

impl<'a> Mapper<'a> {
    /// `unjoined`: the coverage's tests no head result names, when its ids are not pytest's
    /// (as `check` computes them).
    pub fn new(judging: Judging<'a>, unjoined: BTreeSet<TestId>) -> Self {
        Mapper {
            judging,
            unjoined,
            cache: RefCell::new(HashMap::new()),
            files: Vec::new(),
            only: BTreeMap::new(),
            blind_by_test: BTreeMap::new(),
            known: BTreeSet::new(),
        }
    }

    /// Judge every line of one measured file (`source`: its text, when it could be read).
    pub fn add_file(&mut self, path: &str, fc: &FileCoverage, source: Option<&str>) {
        for t in &fc.tests {
            if !self.known.contains(t) {
                self.known.insert(t.clone());
            }
        }
        let j = self.judging;
        let classify = |t: &TestId| -> WitnessStatus {
            if let Some(s) = self.cache.borrow().get(t) {
                return *s;
            }
            let s = classify_test(t, j.ledger, j.stab, j.results, &self.unjoined);
            self.cache.borrow_mut().insert(t.clone(), s);
            s
        };
        let fb = map_file(path, fc, source, j.policy.run_phase_only, &classify);
        for b in &fb.blind_lines {
            for t in &b.tests {
                *self.blind_by_test.entry(t.clone()).or_default() += 1;
            }
            if let [t] = b.tests.as_slice() {
                self.only
                    .entry(t.clone())
                    .or_default()
                    .entry(path.to_string())
                    .or_default()
                    .push(b.line);
            }
        }
        self.files.push(fb);
    }

    /// The map, once every file was added; `cov` says what the whole read found (its
    /// `files` are not read again).
    pub fn finish(self, coverage_file: &str, cov: &Coverage) -> Result<BlindnessMap, InputError> {
        if !cov.has_test_contexts {
            return Err(InputError::new(
                Location::file(coverage_file),
                "this coverage has no per-test contexts, and the blindness map needs per-test coverage: \
                 run pytest with `--cov-context=test` (coverage.py `[run] dynamic_context = test_function`) \
                 and write `coverage json --show-contexts`, or LCOV with a `TN:` name per test",
            ));
        }
        let Mapper {
            judging,
            cache,
            mut files,
            mut only,
            blind_by_test,
            known,
            ..
        } = self;
        // Every not-stable witness of some line, blind or not.
        let mut tests: Vec<TestBlindness> = cache
            .into_inner()
            .into_iter()
            .filter(|(_, s)| !s.is_stable())
            .map(|(t, s)| {
                let mut only_witness: Vec<FileLines> = only
                    .remove(&t)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(path, lines)| FileLines {
                        path,
                        lines: lines.len(),
                        ranges: ranges(&lines),
                    })
                    .collect();
                only_witness.sort_by(|a, b| b.lines.cmp(&a.lines).then_with(|| a.path.cmp(&b.path)));
                let freeze = judging
                    .ledger
                    .entries_for(&t)
                    .next()
                    .map(|e| FreezeRef::of(e, judging.today));
                TestBlindness {
                    freeze,
                    blind_lines: blind_by_test.get(&t).copied().unwrap_or(0),
                    only_witness_lines: only_witness.iter().map(|f| f.lines).sum(),
                    only_witness,
                    status: s,
                    test: t,
                }
            })
            .collect();
        tests.sort_by(|a, b| {
            (b.only_witness_lines, b.blind_lines)
                .cmp(&(a.only_witness_lines, a.blind_lines))
                .then_with(|| a.test.cmp(&b.test))
        });
        let owners = owners(&files, judging.ledger);
        let freezes_with_no_coverage = judging
            .ledger
            .entries
            .iter()
            .filter(|e| !known.iter().any(|t| e.covers(t)))
            .map(|e| FreezeRef::of(e, judging.today))
            .collect();
        files.sort_by(|a, b| b.blind.cmp(&a.blind).then_with(|| a.path.cmp(&b.path)));
        let totals = Totals {
            files: files.len(),
            witnessed: files.iter().map(|f| f.witnessed).sum(),
            blind: files.iter().map(|f| f.blind).sum(),
            uncovered: files.iter().map(|f| f.uncovered).sum(),
        };
        Ok(BlindnessMap {
            schema: SCHEMA.to_string(),
            today: judging.today,
            sha: None,
            coverage_format: cov.format,
            totals,
            files,
            tests,
            owners,
            freezes_with_no_coverage,
            notes: Vec::new(),
        })
    }
}

/// One file's lines, each judged as a changed line would be.
fn map_file(
    path: &str,
    fc: &FileCoverage,
    text: Option<&str>,
    run_phase_only: bool,
    classify: &dyn Fn(&TestId) -> WitnessStatus,
) -> FileBlindness {
    let source = text.map(SourceMap::parse);
    // The `.coverage` data file lists no statements: with the source, they are coverage.py's.
    let classified;
    let fc = match text.filter(|_| !fc.has_statements && path.ends_with(".py")) {
        Some(t) => match PythonStatements::parse(t) {
            Ok(st) => {
                let mut c = fc.clone();
                c.classify_statements(&st);
                classified = c;
                &classified
            }
            Err(_) => fc,
        },
        None => fc,
    };
    let source_lines: Vec<&str> = text.map(|t| t.lines().collect()).unwrap_or_default();
    let mut lines: BTreeSet<u32> = BTreeSet::new();
    lines.extend(fc.executed.iter().copied());
    lines.extend(fc.missing.iter().copied());
    lines.extend(fc.import_time.iter().copied());
    lines.extend(fc.witnesses.keys().copied());
    let mut bodies = BTreeMap::new();
    let mut out = FileBlindness {
        path: path.to_string(),
        witnessed: 0,
        blind: 0,
        uncovered: 0,
        witnessed_lines: Vec::new(),
        blind_lines: Vec::new(),
        uncovered_lines: Vec::new(),
        note: None,
    };
    // A line one of whose own witnesses is stable is witnessed whatever else runs it, as
    // `classify_line` finds (its statement's and body's witnesses only add to the line's own):
    // decided here without gathering and copying every witness of the line.
    let witnessed_by_itself = |line: u32| -> bool {
        if fc.excluded.contains(&line) {
            return false;
        }
        if let Some(src) = &source {
            match src.statement_of(line) {
                Some((first, _)) if !fc.excluded.contains(&first) => {}
                _ => return false,
            }
        }
        fc.witnesses.get(&line).is_some_and(|ws| {
            ws.iter()
                .any(|(t, phases)| (!run_phase_only || phases.contains(&Phase::Run)) && classify(t).is_stable())
        })
    };
    for line in lines {
        if witnessed_by_itself(line) {
            out.witnessed_lines.push(line);
            continue;
        }
        let al = AddedLine {
            line,
            text: (line as usize)
                .checked_sub(1)
                .and_then(|i| source_lines.get(i))
                .map_or_else(String::new, |s| s.to_string()),
            scope: Scope::Unknown,
        };
        let (class, ws) = classify_line(fc, source.as_ref(), &al, &mut bodies, run_phase_only, classify);
        match class {
            LineClass::Stable => out.witnessed_lines.push(line),
            LineClass::FrozenOnly => out.blind_lines.push(BlindLine {
                line,
                tests: ws.into_iter().map(|w| w.test).collect(),
            }),
            LineClass::Uncovered | LineClass::ImportTime => out.uncovered_lines.push(line),
            LineClass::Excluded | LineClass::NotExecutable => {}
        }
    }
    out.witnessed = out.witnessed_lines.len();
    out.blind = out.blind_lines.len();
    out.uncovered = out.uncovered_lines.len();
    out
}

/// Every owner of a ledger entry: the blind lines a test they froze witnesses.
fn owners(files: &[FileBlindness], ledger: &Ledger) -> Vec<OwnerBlindness> {
    let mut by_owner: BTreeMap<&str, OwnerBlindness> = BTreeMap::new();
    for e in &ledger.entries {
        let o = by_owner.entry(e.owner.as_str()).or_insert_with(|| OwnerBlindness {
            owner: e.owner.clone(),
            blind_lines: 0,
            files: Vec::new(),
            soonest_expiry: None,
            freezes: 0,
        });
        o.freezes += 1;
        o.soonest_expiry = Some(o.soonest_expiry.map_or(e.expires, |d| d.min(e.expires)));
    }
    let mut owner_of: HashMap<&TestId, BTreeSet<&str>> = HashMap::new();
    for f in files {
        let mut per_owner: BTreeMap<&str, usize> = BTreeMap::new();
        for b in &f.blind_lines {
            let mut owners: BTreeSet<&str> = BTreeSet::new();
            for t in &b.tests {
                let os = owner_of
                    .entry(t)
                    .or_insert_with(|| ledger.entries_for(t).map(|e| e.owner.as_str()).collect());
                owners.extend(os.iter().copied());
            }
            for o in owners {
                *per_owner.entry(o).or_default() += 1;
            }
        }
        for (o, n) in per_owner {
            if let Some(ob) = by_owner.get_mut(o) {
                ob.blind_lines += n;
                ob.files.push((f.path.clone(), n));
            }
        }
    }
    let mut out: Vec<OwnerBlindness> = by_owner.into_values().collect();
    for o in &mut out {
        o.files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    }
    out.sort_by(|a, b| b.blind_lines.cmp(&a.blind_lines).then_with(|| a.owner.cmp(&b.owner)));
    out
}

/// Ascending line numbers as `[first, last]` runs of consecutive numbers.
pub fn ranges(lines: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &l in lines {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == l => *last = l,
            _ => out.push((l, l)),
        }
    }
    out
}
