//! The evidence record: the one JSON shape that the command line prints, the
//! check run embeds and an agent acts on. Documented field by field in
//! `docs/evidence-record.md`; bump [`SCHEMA_VERSION`] on any breaking change.

use crate::gate::error::Location;
use crate::gate::nodeid::{Phase, TestId};
use crate::gate::probe::Stability;
use crate::gate::results::Outcome;
use serde::Serialize;
use std::collections::BTreeSet;

pub const SCHEMA_VERSION: u32 = 4;

/// A record lists every witness of every line while they number at most this many in all;
/// beyond, each line lists its first `line_witness_limit` (by node id) and says how many
/// it has (`witness_count`). A line of a core module can have thousands of witnesses: listed
/// in full, a large diff's record ran to tens of megabytes.
pub const LINE_WITNESS_BUDGET: usize = 5_000;
/// However many lines share the budget, each lists at least this many witnesses.
pub const LINE_WITNESS_MIN: usize = 3;

/// How many witnesses each line of these files lists in the record: `None` (all of them)
/// while all lines' witnesses fit [`LINE_WITNESS_BUDGET`], else the budget shared among the
/// lines that have witnesses, at least [`LINE_WITNESS_MIN`] each. The record's line
/// entries then hold at most `max(LINE_WITNESS_BUDGET, LINE_WITNESS_MIN × lines)` witnesses.
pub fn line_witness_limit(files: &[FileReport]) -> Option<usize> {
    let lines = files.iter().flat_map(|f| &f.lines).filter(|l| !l.witnesses.is_empty());
    let (n, total) = lines.fold((0usize, 0usize), |(n, t), l| (n + 1, t + l.witnesses.len()));
    (total > LINE_WITNESS_BUDGET).then(|| (LINE_WITNESS_BUDGET / n.max(1)).max(LINE_WITNESS_MIN))
}

/// The gate's verdict. INCONCLUSIVE blocks merge exactly like FAIL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    Pass,
    PassWithCaveat,
    Inconclusive,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::PassWithCaveat => "PASS_WITH_CAVEAT",
            Verdict::Inconclusive => "INCONCLUSIVE",
            Verdict::Fail => "FAIL",
        }
    }
    /// Does this verdict block merge?
    pub fn blocks(self) -> bool {
        matches!(self, Verdict::Inconclusive | Verdict::Fail)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The decision table's reason codes, one row each: everything about a code is here,
/// and the rest is derived from it — [`ReasonCode`] and its [`as_str`](ReasonCode::as_str)
/// (also its serialised form), [`verdict`](ReasonCode::verdict) and
/// [`is_about_the_patchs_evidence`](ReasonCode::is_about_the_patchs_evidence); the caveat
/// [`Signal`]s that key `policy.signals` (`gate::config::Signals`: their config keys, their
/// parsing and its errors); and the docs' codes table (the one between the
/// `reason-codes:begin`/`end` markers, in `docs/evidence-record.md`), which a test checks
/// against this one.
///
/// A row: the variant and its one-line description (its doc comment), then
/// - `code`: the code as the record and the config spell it (two rows may share one:
///   `blind_lines` is a caveat, or INCONCLUSIVE under `strict_lines`);
/// - `verdict`: the verdict the reason alone leads to, before policy;
/// - `signal` (only for a caveat `policy.signals` can set): the signal's place among the
///   config's keys — the order a config serialises them and an unknown key's error lists
///   them, kept from when each was a field; a new signal takes the next place;
/// - `about_evidence`: whether the reason is about what the patch did to the evidence that
///   judges it (docs/security.md, "Agent-proofing"): the trust rules and the weakening signals. The
///   App names these in the pull-request comment and annotates their places, besides the
///   check run's summary.
///
/// The rows are in the decision table's order (README, "How it decides"): the order of the
/// variants, in which the first reason that applies decides.
macro_rules! reason_codes {
    (@signal) => { None };
    (@signal $place:literal) => { Some(Signal::at_place($place)) };
    ($(
        $(#[$doc:meta])*
        $variant:ident {
            code: $code:literal,
            verdict: $verdict:ident,
            $(signal: $place:literal,)?
            about_evidence: $about:literal $(,)?
        }
    )*) => {
        /// A reason's stable code (see `reason_codes!` for the table it comes from). The
        /// order of the variants is the order of the decision table (README, "How it
        /// decides"): the first reason that applies decides.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum ReasonCode {
            $($(#[$doc])* $variant,)*
        }

        impl ReasonCode {
            /// Every code, in table order.
            pub const ALL: &'static [ReasonCode] = &[$(ReasonCode::$variant),*];

            /// The code as it appears in the record (`blind_lines` for both strict and caveat).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ReasonCode::$variant => $code,)*
                }
            }

            /// The verdict this reason alone leads to, before `policy.signals`.
            pub const fn verdict(self) -> Verdict {
                match self {
                    $(ReasonCode::$variant => Verdict::$verdict,)*
                }
            }

            /// Reasons about what the patch did to the evidence that judges it (docs/security.md,
            /// "Agent-proofing"): the trust rules and the weakening signals. The App names them
            /// in the pull-request comment and annotates their places, besides the check run's
            /// summary.
            pub const fn is_about_the_patchs_evidence(self) -> bool {
                match self {
                    $(ReasonCode::$variant => $about,)*
                }
            }

            /// The `policy.signals` key that sets what this reason does, when it is a caveat
            /// signal.
            pub const fn signal(self) -> Option<Signal> {
                match self {
                    $(ReasonCode::$variant => reason_codes!(@signal $($place)?),)*
                }
            }
        }

        /// A caveat signal: a reason whose effect `policy.signals` sets (`off`, `caveat`,
        /// `inconclusive`), keyed by its code. Ordered by its place among the config's keys.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Signal {
            $($(
                #[doc = concat!("`policy.signals.", $code, "`: [`ReasonCode::", stringify!($variant), "`].")]
                $variant = $place,
            )?)*
        }

        impl Signal {
            /// How many signals there are.
            pub const COUNT: usize = [$($($place,)?)*].len();

            /// The signal at a place among the config's keys (a gap or a place past the last
            /// fails the build, where `ALL` is built).
            const fn at_place(place: usize) -> Signal {
                match place {
                    $($($place => Signal::$variant,)?)*
                    _ => panic!("the signals' places are 0, 1, 2, … without a gap"),
                }
            }

            /// The reason this signal is.
            pub const fn code(self) -> ReasonCode {
                match self as usize {
                    $($($place => ReasonCode::$variant,)?)*
                    _ => unreachable!(),
                }
            }
        }
    };
}

reason_codes! {
    /// Row 1: evidence missing or unreadable.
    MissingEvidence { code: "missing_evidence", verdict: Inconclusive, about_evidence: false }
    /// Row 1 (Trust): the patch changes what produced or shaped the evidence.
    EvidenceConfigChanged { code: "evidence_config_changed", verdict: Inconclusive, about_evidence: true }
    /// Row 1 (Trust): the evidence is not about this head (another commit, or none of its files).
    EvidenceMismatch { code: "evidence_mismatch", verdict: Inconclusive, about_evidence: true }
    /// Row 1 (Trust): the patch freezes a test that witnesses its own changed lines.
    SelfFreeze { code: "self_freeze", verdict: Inconclusive, about_evidence: true }
    /// Row 2: the ledger is invalid.
    InvalidLedger { code: "invalid_ledger", verdict: Inconclusive, about_evidence: false }
    /// Row 3: a stable test failed on head.
    Failed { code: "failed", verdict: Fail, about_evidence: false }
    /// Row 4: a ledger entry is past its expiry.
    Expired { code: "expired", verdict: Inconclusive, about_evidence: false }
    /// Row 5: no witness covers any changed line.
    Uncovered { code: "uncovered", verdict: Inconclusive, about_evidence: false }
    /// Row 6: every witness is frozen or not stable.
    FrozenOnly { code: "frozen_only", verdict: Inconclusive, about_evidence: false }
    /// `strict_lines`: some changed lines have no stable witness (INCONCLUSIVE).
    BlindLinesStrict { code: "blind_lines", verdict: Inconclusive, about_evidence: false }
    /// Row 7: some witnesses are frozen.
    SomeFrozen { code: "some_frozen", verdict: PassWithCaveat, signal: 5, about_evidence: false }
    /// Caveat: the patch edits the ledger (listed entry by entry).
    LedgerEdited { code: "ledger_edited", verdict: PassWithCaveat, signal: 3, about_evidence: true }
    /// Caveat: some changed line's only stable witnesses are tests the patch adds.
    SelfWitness { code: "self_witness", verdict: PassWithCaveat, signal: 1, about_evidence: true }
    /// Caveat: the patch adds retries, sleeps, skips; widens tolerances; removes assertions or tests.
    WeakenedTest { code: "weakened_test", verdict: PassWithCaveat, signal: 0, about_evidence: true }
    /// Caveat: some changed lines (or files) have no stable witness.
    BlindLines { code: "blind_lines", verdict: PassWithCaveat, signal: 4, about_evidence: false }
    /// Caveat: lines witnessed only in fixture setup/teardown.
    PhaseOnlyWitness { code: "phase_only_witness", verdict: PassWithCaveat, signal: 2, about_evidence: false }
    /// Caveat: a test stable on base needed a rerun on head (failed, then passed).
    HeadFlaky { code: "head_flaky", verdict: PassWithCaveat, signal: 7, about_evidence: false }
    /// Caveat: a test that ran none of the changed lines failed on head, where the patch cannot
    /// have changed what it ran: flakiness on unchanged code, not a failure of the patch.
    FlakyUnchanged { code: "flaky_unchanged", verdict: PassWithCaveat, signal: 8, about_evidence: false }
    /// Caveat: no head test results were given, so failures were not checked.
    NoResults { code: "no_results", verdict: PassWithCaveat, signal: 6, about_evidence: false }
    /// Row 8 for a patch whose changes need no evidence.
    NoExecutableChange { code: "no_executable_change", verdict: Pass, about_evidence: false }
    /// Row 8.
    AllStable { code: "all_stable", verdict: Pass, about_evidence: false }
}

impl Serialize for ReasonCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Signal {
    /// Every signal, in the order of their places: a config's keys.
    pub const ALL: [Signal; Signal::COUNT] = {
        let mut all = [Signal::at_place(0); Signal::COUNT];
        let mut place = 1;
        while place < Signal::COUNT {
            all[place] = Signal::at_place(place);
            place += 1;
        }
        all
    };

    /// `policy.signals`' keys, in order.
    pub const KEYS: [&'static str; Signal::COUNT] = {
        let mut keys = [""; Signal::COUNT];
        let mut place = 0;
        while place < Signal::COUNT {
            keys[place] = Signal::ALL[place].as_str();
            place += 1;
        }
        keys
    };

    /// The signal's key: its reason's code.
    pub const fn as_str(self) -> &'static str {
        self.code().as_str()
    }

    /// The signal a `policy.signals` key names.
    pub fn from_key(key: &str) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.as_str() == key)
    }
}

impl Serialize for Signal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// How heavily a verdict weighs when reasons are ordered: blocking (FAIL and
/// INCONCLUSIVE, between which the table's order decides), caveat, pass.
pub fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Fail | Verdict::Inconclusive => 2,
        Verdict::PassWithCaveat => 1,
        Verdict::Pass => 0,
    }
}

/// One reason, with a sentence a person or an agent can act on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reason {
    pub code: ReasonCode,
    /// The verdict this reason alone leads to, after policy (`policy.signals`).
    pub verdict: Verdict,
    /// True when `policy.signals` made this caveat INCONCLUSIVE.
    pub escalated: bool,
    pub message: String,
    /// Where, when the reason is about a place in an input or the patch.
    pub locations: Vec<Location>,
    /// The tests the reason is about.
    pub tests: Vec<TestId>,
}

impl Reason {
    pub fn new(code: ReasonCode, message: impl Into<String>) -> Self {
        Reason {
            code,
            verdict: code.verdict(),
            escalated: false,
            message: message.into(),
            locations: Vec::new(),
            tests: Vec::new(),
        }
    }
    pub fn at(mut self, locations: Vec<Location>) -> Self {
        self.locations = locations;
        self
    }
    pub fn tests(mut self, tests: Vec<TestId>) -> Self {
        self.tests = tests;
        self
    }
}

/// How a test stands as a witness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WitnessStatus {
    Stable,
    /// In the ledger.
    Frozen,
    /// Found unstable by the probe.
    Unstable,
    /// Failed every probe run: broken on base, not evidence.
    FailingOnBase,
    /// Its id joins no head result (an LCOV `TN:` name, a Bazel label that the JUnit
    /// does not carry): whether it passed is unknown, so it is blind, never stable.
    Unjoined,
    /// Failed and then passed on a rerun in the head run: unstable on this evidence.
    HeadFlaky,
}

impl WitnessStatus {
    pub fn is_stable(self) -> bool {
        self == WitnessStatus::Stable
    }
}

/// The class of one changed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineClass {
    /// At least one stable witness.
    Stable,
    /// Witnessed, but only by frozen, unstable or failing-on-base tests.
    FrozenOnly,
    /// Executable, but no test executed it.
    Uncovered,
    /// Excluded from measurement (`# pragma: no cover`): blind.
    Excluded,
    /// Ran only at import time (coverage's empty context): no test witnesses it,
    /// but something ran it, so it is not blind.
    ImportTime,
    /// Not executable (blank, comment): needs no witness.
    NotExecutable,
}

impl LineClass {
    pub fn is_blind(self) -> bool {
        matches!(self, LineClass::FrozenOnly | LineClass::Uncovered | LineClass::Excluded)
    }
}

/// One witness of one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineWitness {
    pub test: TestId,
    pub status: WitnessStatus,
    pub phases: BTreeSet<Phase>,
}

/// One changed executable line (or attributed deletion). Its record lists its witnesses (the
/// first few, in a large record: `line_witness_limit`) by index into its file's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineReport {
    pub line: u32,
    pub class: LineClass,
    pub witnesses: Vec<LineWitness>,
}

impl LineReport {
    /// The witnesses the record lists: all, or the first `limit` by node id.
    pub fn listed_witnesses(&self, limit: Option<usize>) -> impl Iterator<Item = &LineWitness> {
        self.witnesses.iter().take(limit.unwrap_or(usize::MAX))
    }
}

/// A pure deletion as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeletionReport {
    pub old_start: u32,
    pub old_count: u32,
    /// New-side line directly above (0: top of file).
    pub after: u32,
    /// Whether it was attributed to its neighbours (`attribute_deletions`).
    pub attributed: bool,
    /// The class it got when attributed, or when it deletes only blank/comment lines.
    pub class: Option<LineClass>,
}

/// How a touched file was accounted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileEvidence {
    /// Needs no evidence (`no_evidence_reason` says why): it matches `no_evidence_paths`, is
    /// test code, is never executed by a test (a type stub, a marker file, tool
    /// configuration), or the patch deletes it.
    NotNeeded,
    /// No content change (pure rename, mode change) or only blank/comment lines.
    NoExecutableChange,
    /// Measured by coverage: see `lines`.
    Measured,
    /// Needs evidence but none can exist: see `blind_reason`.
    Blind,
}

/// One file of the patch, accounted for. In memory every line keeps all its witnesses (the
/// verdict, the annotations and the comment read them); the record lists each test once per
/// file (`witnesses`: test and status) and each line's witnesses (its first `witness_limit`)
/// by index there, with their phases and the line's `witness_count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    pub path: String,
    pub old_path: Option<String>,
    pub status: crate::gate::patch::FileStatus,
    pub evidence: FileEvidence,
    pub blind_reason: Option<String>,
    /// For `not_needed`: why the file needs no evidence.
    pub no_evidence_reason: Option<String>,
    /// The patch deletes this file and it held code: it needs no evidence (nothing of it is
    /// left to run), but a test that used it may fail on head because of it — so no head
    /// failure is taken for flakiness on unchanged code, nor a head run for a run of the
    /// base's code. Not in the record.
    pub deletes_code: bool,
    /// How many witnesses each line lists in the record (`None`: all): the report's
    /// `line_witness_limit`. Not in the record itself.
    pub witness_limit: Option<usize>,
    /// Coverage's path for this file when it was mapped by suffix.
    pub coverage_path: Option<String>,
    pub changed_lines: Vec<u32>,
    pub executable_changed_lines: Vec<u32>,
    pub stable_lines: Vec<u32>,
    pub uncovered_lines: Vec<u32>,
    pub frozen_only_lines: Vec<u32>,
    pub excluded_lines: Vec<u32>,
    /// Executable changed lines that ran only at import time.
    pub import_time_lines: Vec<u32>,
    pub lines: Vec<LineReport>,
    pub deletions: Vec<DeletionReport>,
}

/// A file as the record has it: [`FileReport`]'s fields, its witness table, and its lines
/// with their listed witnesses as indices into that table.
#[derive(Serialize)]
struct FileRecord<'a> {
    path: &'a str,
    old_path: &'a Option<String>,
    status: crate::gate::patch::FileStatus,
    evidence: FileEvidence,
    blind_reason: &'a Option<String>,
    no_evidence_reason: &'a Option<String>,
    coverage_path: &'a Option<String>,
    changed_lines: &'a [u32],
    executable_changed_lines: &'a [u32],
    stable_lines: &'a [u32],
    uncovered_lines: &'a [u32],
    frozen_only_lines: &'a [u32],
    excluded_lines: &'a [u32],
    import_time_lines: &'a [u32],
    witnesses: Vec<WitnessEntry<'a>>,
    lines: Vec<LineRecord<'a>>,
    deletions: &'a [DeletionReport],
}

/// A test in a file's witness table.
#[derive(Serialize)]
struct WitnessEntry<'a> {
    test: &'a TestId,
    status: WitnessStatus,
}

#[derive(Serialize)]
struct LineRecord<'a> {
    line: u32,
    class: LineClass,
    witnesses: Vec<WitnessRef<'a>>,
    witness_count: usize,
}

/// One listed witness of a line: its index in the file's `witnesses`, and the phases in
/// which it ran the line.
#[derive(Serialize)]
struct WitnessRef<'a> {
    witness: usize,
    phases: &'a BTreeSet<Phase>,
}

impl Serialize for FileReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Only the listed witnesses enter the table, so it is bounded by the lines too.
        let table: std::collections::BTreeMap<&TestId, WitnessStatus> = self
            .lines
            .iter()
            .flat_map(|l| l.listed_witnesses(self.witness_limit))
            .map(|w| (&w.test, w.status))
            .collect();
        let index: std::collections::BTreeMap<&TestId, usize> =
            table.keys().enumerate().map(|(i, t)| (*t, i)).collect();
        FileRecord {
            path: &self.path,
            old_path: &self.old_path,
            status: self.status,
            evidence: self.evidence,
            blind_reason: &self.blind_reason,
            no_evidence_reason: &self.no_evidence_reason,
            coverage_path: &self.coverage_path,
            changed_lines: &self.changed_lines,
            executable_changed_lines: &self.executable_changed_lines,
            stable_lines: &self.stable_lines,
            uncovered_lines: &self.uncovered_lines,
            frozen_only_lines: &self.frozen_only_lines,
            excluded_lines: &self.excluded_lines,
            import_time_lines: &self.import_time_lines,
            witnesses: table
                .iter()
                .map(|(test, status)| WitnessEntry { test, status: *status })
                .collect(),
            lines: self
                .lines
                .iter()
                .map(|l| LineRecord {
                    line: l.line,
                    class: l.class,
                    witnesses: l
                        .listed_witnesses(self.witness_limit)
                        .map(|w| WitnessRef {
                            witness: index[&w.test],
                            phases: &w.phases,
                        })
                        .collect(),
                    witness_count: l.witnesses.len(),
                })
                .collect(),
            deletions: &self.deletions,
        }
        .serialize(s)
    }
}

impl FileReport {
    pub fn is_blind(&self) -> bool {
        self.evidence == FileEvidence::Blind
            || !self.uncovered_lines.is_empty()
            || !self.frozen_only_lines.is_empty()
            || !self.excluded_lines.is_empty()
    }
}

/// Witnesses over all changed lines, by status (node ids without phase).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Witnesses {
    pub stable: Vec<TestId>,
    pub frozen: Vec<TestId>,
    pub unstable: Vec<TestId>,
    pub failing_on_base: Vec<TestId>,
    /// Witnesses whose id no head result carries (LCOV, Bazel evidence).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub unjoined: Vec<TestId>,
    /// Failed and then passed on a rerun in the head run.
    pub head_flaky: Vec<TestId>,
}

/// Someone who cannot see this patch's effect, and what they must do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlindOwner {
    /// The owner as the ledger (or CODEOWNERS) names it.
    pub owner: String,
    /// The GitHub handle to mention, when the owner is one or the config maps it.
    pub handle: Option<String>,
    pub tests: Vec<TestId>,
    /// Why each is blind, one sentence each.
    pub why: Vec<String>,
    /// What to do: `re-probe`, `fix`, `renew`, `add-test`.
    pub actions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpiredEntry {
    pub test: String,
    pub owner: String,
    pub expires: String,
    pub days_past: i64,
    /// The probe in this evidence showed every test under the entry stable.
    pub waived_by_probe: bool,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeTest {
    pub test: TestId,
    pub failures: u32,
    pub runs: u32,
    pub stability: Stability,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeReport {
    pub k: u32,
    /// Smallest failure rate that K runs reveal with 90 % chance (None: K too small).
    pub min_detectable_rate_90: Option<f64>,
    /// "not shown unstable at p ≥ x" — how stable results are worded.
    pub power: String,
    pub complete: bool,
    pub seed: Option<u64>,
    /// Tests the probe found unstable or broken, and every witness's counts.
    pub tests: Vec<ProbeTest>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeadFailure {
    pub test: String,
    pub outcome: Option<Outcome>,
    pub status: Option<WitnessStatus>,
    pub message: Option<String>,
    pub source: String,
    /// Whether this failure fails the gate (a stable test) or is ignored (frozen, unstable, failing on base).
    pub counts: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ResultsReport {
    pub given: bool,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    pub skipped: usize,
    pub xfailed: usize,
    pub xpassed: usize,
    pub collection_errors: usize,
    pub failures: Vec<HeadFailure>,
    /// JUnit cases that matched no node id, listed, never guessed.
    pub unmatched: Vec<String>,
    /// Tests that were rerun in the head run (failed attempts before their outcome).
    pub reran: Vec<RerunTest>,
}

/// A test that needed reruns on head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RerunTest {
    pub test: TestId,
    /// Failed attempts before the last one.
    pub reruns: u32,
    /// The last attempt's outcome: a pass here makes the test `head_flaky`.
    pub outcome: Outcome,
    pub source: String,
}

/// sha256 of one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputDigest {
    /// `diff`, `ledger`, `config`, `coverage`, `results`, `probe`, `meta`.
    pub role: String,
    pub path: String,
    pub sha256: String,
}

impl InputDigest {
    pub fn of(role: &str, path: &str, bytes: &[u8]) -> Self {
        use sha2::Digest;
        InputDigest {
            role: role.into(),
            path: path.into(),
            sha256: hex::encode(sha2::Sha256::digest(bytes)),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

/// The evidence record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub tool: Tool,
    pub verdict: Verdict,
    /// Every reason that applies, blocking ones (FAIL, INCONCLUSIVE — also a caveat
    /// that policy made INCONCLUSIVE) first, then caveats, then PASS, each group in
    /// decision-table order; the first decides.
    pub reasons: Vec<Reason>,
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
    /// The date the ledger's expiries were judged against (UTC).
    pub today: String,
    pub witnesses: Witnesses,
    pub files: Vec<FileReport>,
    /// How many witnesses each line of `files` lists (`None`: every one): see
    /// `line_witness_limit`.
    pub line_witness_limit: Option<usize>,
    pub blind_owners: Vec<BlindOwner>,
    pub expired: Vec<ExpiredEntry>,
    /// Tests the probe found unstable that witness changed lines but have no ledger entry (no owner).
    pub unowned_unstable: Vec<TestId>,
    /// The patch's own edits of the ledger, entry by entry (empty when the head ledger is unknown).
    pub ledger_changes: Vec<crate::gate::ledger::LedgerChange>,
    pub probe: Option<ProbeReport>,
    pub results: ResultsReport,
    pub coverage: Option<CoverageSummary>,
    pub inputs: Vec<InputDigest>,
    /// Things the reader should know that are not reasons (path mapping, ignored contexts).
    pub notes: Vec<String>,
    /// The flake history's judgement of the witnesses it knew (absent without a history).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<crate::gate::history::HistoryReport>,
    /// What the frozen and not-stable witnesses leave blind across the whole codebase, from a
    /// blindness map of the base branch (absent when none is known, or no witness is in it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codebase: Option<CodebaseBlindness>,
}

/// The codebase-wide cost of this patch's frozen and not-stable witnesses, from the blindness
/// map of a full-suite evidence of the base branch
/// ([`crate::gate::blindness::CodebaseMap::for_witnesses`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodebaseBlindness {
    /// The branch and the commit the map is of, when known (the App knows both; a map given
    /// to `flakegate check --blindness` names the commit its evidence ran on, if any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    /// The day the map was made (UTC).
    pub date: chrono::NaiveDate,
    /// The pull request whose merge brought the map (its evidence), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<u64>,
    /// Each frozen or not-stable witness of the patch the map knows, with the lines of the
    /// whole codebase it alone witnesses (nothing stable guards them while it is not evidence).
    pub tests: Vec<CodebaseWitness>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodebaseWitness {
    pub test: TestId,
    pub only_witness_lines: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoverageSummary {
    pub format: crate::gate::coverage::CoverageFormat,
    pub measured_files: usize,
    pub mapped_paths: Vec<(String, String)>,
}

impl Report {
    /// The first reason, which decides the verdict.
    pub fn first_reason(&self) -> Option<&Reason> {
        self.reasons.first()
    }
    #[cfg(test)]
    pub fn has(&self, code: &str) -> bool {
        self.reasons.iter().any(|r| r.code.as_str() == code)
    }
    #[cfg(test)]
    pub fn codes(&self) -> Vec<&'static str> {
        self.reasons.iter().map(|r| r.code.as_str()).collect()
    }
}

/// Line numbers as ranges: `3-5, 9`.
pub fn line_list(lines: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = lines[i];
        let mut end = start;
        while i + 1 < lines.len() && lines[i + 1] == end + 1 {
            i += 1;
            end = lines[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests;
