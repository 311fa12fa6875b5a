//! Per-test line coverage of the head tree, as coverage.py records it with
//! test contexts (or LCOV with `TN:` test names, [`lcov`]), restricted to the
//! files the patch touches.
//!
//! This file is the model, and what every reader shares. Two readers fill
//! [`Coverage`]: [`json::read_json`] (a stream over any `impl Read`), and the
//! crate's reader of the SQLite `.coverage` data file (which does I/O, so it
//! lives outside `gate`). Both record contexts through `ContextCollector`
//! and add files with `insert_file`, so the same run gives the same witnesses.

pub mod json;
pub mod lcov;
pub mod statements;

use crate::gate::nodeid::{ContextKind, Phase, TestId};
use std::collections::{BTreeMap, BTreeSet};

/// Which coverage.py artefact the data came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CoverageFormat {
    /// `coverage json --show-contexts`
    Json,
    /// the `.coverage` SQLite data file
    DataFile,
    /// LCOV tracefiles, one test per `TN:` section
    Lcov,
    /// Bazel's `bazel-testlogs/<package>/<target>/coverage.dat`, one test per target
    Bazel,
}

impl CoverageFormat {
    /// The kind of test id this format's witnesses carry.
    pub fn id_kind(self) -> crate::gate::nodeid::IdKind {
        use crate::gate::nodeid::IdKind;
        match self {
            CoverageFormat::Json | CoverageFormat::DataFile => IdKind::PytestNode,
            CoverageFormat::Lcov => IdKind::LcovTestName,
            CoverageFormat::Bazel => IdKind::BazelLabel,
        }
    }
}

/// One witness of one line: a test and the phases in which it ran the line.
pub type LineWitnesses = BTreeMap<TestId, BTreeSet<Phase>>;

/// Coverage of one source file, keyed by repository-relative path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileCoverage {
    /// Lines that ran.
    pub executed: BTreeSet<u32>,
    /// Executable lines that did not run. Empty and meaningless when
    /// `has_statements` is false (the `.coverage` file lists no statements).
    pub missing: BTreeSet<u32>,
    /// Lines excluded from measurement (`# pragma: no cover`): blind.
    pub excluded: BTreeSet<u32>,
    /// True when `executed ∪ missing` is the full set of executable lines.
    pub has_statements: bool,
    /// line → tests that executed it, with phases. Import-time (`""`) and
    /// non-test contexts are not witnesses and are not in here.
    pub witnesses: BTreeMap<u32, LineWitnesses>,
    /// Lines that ran only at import time (context `""`).
    pub import_time: BTreeSet<u32>,
    /// Every test whose context ran some line of the file, one string per test
    /// (witnesses are kept only for the lines the gate reads; these are all of them,
    /// for matching JUnit records to node ids).
    pub tests: BTreeSet<TestId>,
    /// coverage.json's function and class regions (coverage.py ≥ 7.5): each
    /// definition's `def`/`class` line and its body's lines. Empty from a `.coverage` file.
    pub regions: BTreeMap<u32, BTreeSet<u32>>,
}

impl FileCoverage {
    /// Give a file read from the `.coverage` data file (which lists no statements) the
    /// statements of its source, as `coverage json` reports them: `executed` becomes the
    /// statements that ran (each line that ran counted at its statement's first line),
    /// `missing` the statements that did not, `excluded` coverage.py's excluded lines.
    /// Witnesses and import-time lines stay on the lines that ran, as the JSON's contexts do.
    pub fn classify_statements(&mut self, source: &statements::PythonStatements) {
        let executed: BTreeSet<u32> = self
            .executed
            .iter()
            .map(|&l| source.first_line(l))
            .filter(|l| source.statements.contains(l))
            .collect();
        self.missing = source.statements.difference(&executed).copied().collect();
        self.executed = executed;
        self.excluded = source.excluded.clone();
        self.has_statements = true;
    }
}

/// Coverage of the patch's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    pub format: CoverageFormat,
    /// Repository path → coverage. Only files the patch names are present.
    pub files: BTreeMap<String, FileCoverage>,
    /// How many files the coverage data measured in total.
    pub measured_files: usize,
    /// Coverage paths mapped to repository paths by suffix (absolute paths in a
    /// `.coverage` without `relative_files`): (coverage path, repository path).
    pub mapped_paths: Vec<(String, String)>,
    /// Context strings that were not pytest-cov test contexts (a sample, at
    /// most 20), so the report can say why they were ignored.
    pub foreign_contexts: Vec<String>,
    /// True when contexts were recorded at all (`--cov-context=test`); false
    /// when every line's only context is `""` or the JSON lacks `contexts`.
    pub has_test_contexts: bool,
}

/// Maps coverage.py's file names onto the patch's repository paths: exact
/// match after normalising `./` and `\`, else the longest repository path
/// that is a `/`-bounded suffix of the coverage path.
///
/// It also says which lines' witnesses to keep ([`PathMatcher::keeping`]): a
/// changed file's entry can be hundreds of megabytes (a core module every test
/// runs), while the gate reads the witnesses of a few lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathMatcher {
    repo_paths: BTreeSet<String>,
    /// Every file of the coverage, under its own (normalised) name ([`PathMatcher::every_file`]).
    every_file: bool,
    /// Repository path → the lines whose witnesses are kept; `None`: every line.
    keep: Option<BTreeMap<String, KeepLines>>,
}

/// The lines of one file whose witnesses a reader keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeepLines {
    pub lines: BTreeSet<u32>,
    /// Every line from this one on, too (a definition whose body is known only from
    /// the coverage itself: coverage.json's regions, read after the contexts).
    pub from: Option<u32>,
}

impl KeepLines {
    pub fn contains(&self, line: u32) -> bool {
        self.lines.contains(&line) || self.from.is_some_and(|f| line >= f)
    }
}

/// `keep` (`None`: every line) keeps the witnesses of `line` of `repo_path`.
fn keeps(keep: Option<&BTreeMap<String, KeepLines>>, repo_path: &str, line: u32) -> bool {
    keep.is_none_or(|k| k.get(repo_path).is_some_and(|l| l.contains(line)))
}

impl PathMatcher {
    pub fn new<'a>(paths: impl IntoIterator<Item = &'a str>) -> Self {
        PathMatcher {
            repo_paths: paths.into_iter().map(normalise).collect(),
            every_file: false,
            keep: None,
        }
    }

    /// A matcher that selects every file the coverage measured, each under its own name
    /// (`./` and `\` normalised), with every line's witnesses: the whole suite's coverage,
    /// as the blindness map reads it.
    pub fn every_file() -> Self {
        PathMatcher {
            repo_paths: BTreeSet::new(),
            every_file: true,
            keep: None,
        }
    }

    /// Keep witnesses only of these lines (by repository path; a path not listed
    /// keeps none). Which lines ran at all (`executed`, `missing`, import time) is
    /// kept for every line: one number each.
    pub fn keeping(mut self, lines: BTreeMap<String, KeepLines>) -> Self {
        self.keep = Some(lines.into_iter().map(|(p, l)| (normalise(&p), l)).collect());
        self
    }

    /// Are the witnesses of `line` of the repository file `repo_path` kept?
    pub fn keeps(&self, repo_path: &str, line: u32) -> bool {
        keeps(self.keep.as_ref(), repo_path, line)
    }

    /// The repository path a coverage file name stands for, if the patch names it.
    /// Returns (path, mapped_by_suffix).
    pub fn map(&self, coverage_path: &str) -> Option<(String, bool)> {
        let p = normalise(coverage_path);
        if self.every_file || self.repo_paths.contains(&p) {
            return Some((p, false));
        }
        self.repo_paths
            .iter()
            .filter(|r| p.len() > r.len() && p.ends_with(r.as_str()) && p.as_bytes()[p.len() - r.len() - 1] == b'/')
            .max_by_key(|r| r.len())
            .map(|r| (r.clone(), true))
    }
}

fn normalise(p: &str) -> String {
    let p = p.replace('\\', "/");
    let mut s = p.as_str();
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    s.to_string()
}

/// Collects the contexts a reader meets and resolves them at the end (shared
/// by both readers, so the same run gives the same witnesses).
///
/// It understands coverage.py's static context (`[run] context = py311`): test contexts then read `py311|tests/…::t|run`
/// (the prefix is stripped by [`parse_context`](crate::gate::nodeid::parse_context))
/// and import-time code reads `py311` instead of `""`. A non-test context equal
/// to a static prefix seen on some test context is import-time code; the other
/// non-test contexts are foreign (sampled, at most 20).
#[derive(Debug, Default)]
pub(crate) struct ContextCollector {
    /// non-test context → (repository path, line) where it was seen.
    others: BTreeMap<String, BTreeSet<(String, u32)>>,
    static_prefixes: BTreeSet<String>,
    seen_test: bool,
    /// The matcher's lines to keep witnesses of (`None`: all).
    keep: Option<BTreeMap<String, KeepLines>>,
}

impl ContextCollector {
    /// A collector that keeps the witnesses of the lines `matcher` keeps.
    pub fn for_matcher(matcher: &PathMatcher) -> Self {
        ContextCollector {
            keep: matcher.keep.clone(),
            ..Self::default()
        }
    }

    fn keeps(&self, repo_path: &str, line: u32) -> bool {
        keeps(self.keep.as_ref(), repo_path, line)
    }

    /// Record one context of one line of the file `repo_path` (whose coverage
    /// is `fc`). Line 0 (coverage.py's entry for an empty module) is ignored.
    pub fn record(&mut self, repo_path: &str, fc: &mut FileCoverage, line: u32, context: &str) {
        if line == 0 {
            return;
        }
        let keep = self.keeps(repo_path, line);
        match crate::gate::nodeid::parse_context(context) {
            ContextKind::ImportTime => {
                fc.import_time.insert(line);
            }
            // A line nobody asks about: its test contexts can still name a static prefix.
            ContextKind::Test(test, _) if !keep => {
                self.note_prefix(context, &test);
                fc.tests.insert(test);
            }
            // Named in the sample of foreign contexts, but its place is not kept.
            ContextKind::Other(s) if !keep => {
                self.others.entry(s).or_default();
            }
            ContextKind::Test(test, phase) => {
                self.note_prefix(context, &test);
                if !fc.tests.contains(&test) {
                    fc.tests.insert(test.clone());
                }
                fc.witnesses
                    .entry(line)
                    .or_default()
                    .entry(test)
                    .or_default()
                    .insert(phase);
            }
            ContextKind::Other(s) => {
                self.others.entry(s).or_default().insert((repo_path.to_string(), line));
            }
        }
    }

    /// Record one context over the lines of a numbits bitmap (a `.coverage` `line_bits`
    /// row) — what [`ContextCollector::record`] does for each line, with the context
    /// parsed once and only the kept lines visited for witnesses, so a row costs the
    /// lines the gate reads, not the lines the test ran. Lines that ran are the caller's
    /// (an OR of the bitmaps).
    pub fn record_numbits(&mut self, repo_path: &str, fc: &mut FileCoverage, numbits: &[u8], context: &str) {
        let lines = self.kept_lines(repo_path, numbits);
        match crate::gate::nodeid::parse_context(context) {
            ContextKind::ImportTime => {
                fc.import_time
                    .extend(decode_numbits(numbits).into_iter().filter(|&l| l > 0));
            }
            ContextKind::Test(test, phase) => {
                self.note_prefix(context, &test);
                if numbits_have_a_line(numbits) && !fc.tests.contains(&test) {
                    fc.tests.insert(test.clone());
                }
                for line in lines {
                    fc.witnesses
                        .entry(line)
                        .or_default()
                        .entry(test.clone())
                        .or_default()
                        .insert(phase);
                }
            }
            ContextKind::Other(s) => {
                let places = self.others.entry(s).or_default();
                for line in lines {
                    places.insert((repo_path.to_string(), line));
                }
            }
        }
    }

    /// The kept lines (> 0) set in `numbits`.
    fn kept_lines(&self, repo_path: &str, numbits: &[u8]) -> Vec<u32> {
        let Some(keep) = &self.keep else {
            return decode_numbits(numbits).into_iter().filter(|&l| l > 0).collect();
        };
        let Some(k) = keep.get(repo_path) else {
            return Vec::new();
        };
        let set = |n: u32| n > 0 && numbits.get(n as usize / 8).is_some_and(|b| b & (1 << (n % 8)) != 0);
        let mut out: Vec<u32> = k.lines.iter().copied().filter(|&n| set(n)).collect();
        if let Some(from) = k.from {
            let start = from as usize / 8;
            if start < numbits.len() {
                let tail = decode_numbits(&numbits[start..]);
                out.extend(
                    tail.into_iter()
                        .map(|n| n + start as u32 * 8)
                        .filter(|&n| n >= from && n > 0),
                );
                out.sort_unstable();
                out.dedup();
            }
        }
        out
    }

    /// Note a context seen outside the patch's files (a skipped file of the
    /// JSON, the data file's `context` table): it can show that test contexts
    /// were recorded, and name a static prefix. Returns true for a test context.
    pub fn observe(&mut self, context: &str) -> bool {
        if context.is_empty() {
            return false;
        }
        match crate::gate::nodeid::parse_context(context) {
            ContextKind::Test(test, _) => {
                self.note_prefix(context, &test);
                true
            }
            _ => false,
        }
    }

    /// Has any test context been recorded or observed?
    pub fn seen_test(&self) -> bool {
        self.seen_test
    }

    fn note_prefix(&mut self, raw: &str, test: &TestId) {
        self.seen_test = true;
        let node = raw.rfind('|').map_or(raw, |bar| &raw[..bar]);
        if let Some(prefix) = node.strip_suffix(test.as_str()) {
            let prefix = prefix.strip_suffix('|').unwrap_or(prefix);
            if !prefix.is_empty() && !self.static_prefixes.contains(prefix) {
                self.static_prefixes.insert(prefix.to_string());
            }
        }
    }

    /// Resolve the non-test contexts into `files` (import time under a static
    /// prefix) and return (foreign context sample, test contexts seen).
    pub fn finish(self, files: &mut BTreeMap<String, FileCoverage>) -> (Vec<String>, bool) {
        let mut foreign = Vec::new();
        for (ctx, places) in self.others {
            let bare = ctx.strip_suffix('|').unwrap_or(&ctx);
            if self.static_prefixes.contains(bare) {
                for (repo, line) in places {
                    if let Some(fc) = files.get_mut(&repo) {
                        fc.import_time.insert(line);
                    }
                }
            } else if foreign.len() < 20 {
                foreign.push(ctx);
            }
        }
        (foreign, self.seen_test)
    }
}

/// Add `src` into `dst` (two coverage paths that map to one repository path).
fn merge_file(dst: &mut FileCoverage, src: FileCoverage) {
    dst.executed.extend(src.executed);
    dst.missing.extend(src.missing);
    dst.excluded.extend(src.excluded);
    dst.has_statements |= src.has_statements;
    for (line, tests) in src.witnesses {
        let w = dst.witnesses.entry(line).or_default();
        for (test, phases) in tests {
            w.entry(test).or_default().extend(phases);
        }
    }
    dst.import_time.extend(src.import_time);
    dst.tests.extend(src.tests);
    for (def_line, body) in src.regions {
        dst.regions.entry(def_line).or_default().extend(body);
    }
}

/// Insert `(repo, fc)` into `files`, merging with an earlier entry, and note
/// the mapping when it was by suffix (shared by both readers).
pub(crate) fn insert_file(
    cov_files: &mut BTreeMap<String, FileCoverage>,
    mapped_paths: &mut Vec<(String, String)>,
    coverage_path: &str,
    mapped: (String, bool),
    fc: FileCoverage,
) {
    let (repo, by_suffix) = mapped;
    if by_suffix {
        mapped_paths.push((coverage_path.to_string(), repo.clone()));
    }
    match cov_files.entry(repo) {
        std::collections::btree_map::Entry::Vacant(v) => {
            v.insert(fc);
        }
        std::collections::btree_map::Entry::Occupied(mut o) => merge_file(o.get_mut(), fc),
    }
}

/// Decode coverage.py's `numbits` blob (as stored in `line_bits.numbits`)
/// into line numbers: bit `i` of byte `b` set ⇒ line `b*8 + i`.
/// Does the bitmap hold a line above 0?
fn numbits_have_a_line(bits: &[u8]) -> bool {
    bits.first().is_some_and(|b| b & !1 != 0) || bits.iter().skip(1).any(|&b| b != 0)
}

pub(crate) fn decode_numbits(bits: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    for (byte_i, byte) in bits.iter().enumerate() {
        for bit in 0..8 {
            if byte & (1 << bit) != 0 {
                out.push(byte_i as u32 * 8 + bit);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// coverage.py's `numbits.nums_to_numbits`.
    fn nums_to_numbits(nums: &BTreeSet<u32>) -> Vec<u8> {
        let Some(&max) = nums.iter().next_back() else {
            return Vec::new();
        };
        let mut b = vec![0u8; max as usize / 8 + 1];
        for &n in nums {
            b[n as usize / 8] |= 1 << (n % 8);
        }
        b
    }

    #[test]
    fn numbits_known_values() {
        // From coverage.py's tests: nums_to_numbits([1, 2, 3, 17]) (bit 1..3 of byte 0, bit 1 of byte 2).
        assert_eq!(nums_to_numbits(&[1, 2, 3, 17].into()), [0x0e, 0x00, 0x02]);
        assert_eq!(decode_numbits(&[0x0e, 0x00, 0x02]), [1, 2, 3, 17]);
        assert_eq!(decode_numbits(&[]), Vec::<u32>::new());
        assert_eq!(decode_numbits(&[0x01]), [0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn numbits_round_trip(nums in proptest::collection::btree_set(0u32..20_000, 0..300)) {
            let bits = nums_to_numbits(&nums);
            let back = decode_numbits(&bits);
            prop_assert_eq!(back.iter().copied().collect::<BTreeSet<_>>(), nums.clone());
            prop_assert_eq!(back.len(), nums.len());
            prop_assert!(back.windows(2).all(|w| w[0] < w[1]), "ascending");
        }
    }
}
