//! The blindness map's data: what [`super::map`] returns and `--format json` prints
//! (docs/blindness.md).

use crate::gate::coverage::CoverageFormat;
use crate::gate::ledger::FreezeEntry;
use crate::gate::nodeid::TestId;
use crate::gate::report::WitnessStatus;
use chrono::NaiveDate;
use serde::Serialize;

/// How one measured line stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LineState {
    /// Some witness is stable.
    Witnessed,
    /// Every witness is frozen or not stable.
    Blind,
    /// No test witnesses it.
    Uncovered,
}

/// A blind line and the frozen or not-stable tests that are its only witnesses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct BlindLine {
    pub line: u32,
    #[schemars(with = "Vec<String>")]
    pub tests: Vec<TestId>,
}

/// One measured file: its lines by state, and the counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FileBlindness {
    /// The path as the coverage names it (repository-relative when the run used
    /// `relative_files`).
    pub path: String,
    pub witnessed: usize,
    pub blind: usize,
    pub uncovered: usize,
    /// Lines with a stable witness.
    pub witnessed_lines: Vec<u32>,
    /// Lines witnessed only by frozen or not-stable tests, each naming them.
    pub blind_lines: Vec<BlindLine>,
    /// Executable lines no test witnesses (including those that ran only at import time).
    pub uncovered_lines: Vec<u32>,
    /// Why the file's source is not shown, when it is not (set by the face that reads sources:
    /// outside the source tree, not found, not UTF-8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl FileBlindness {
    /// The state of `line`, when it is measured.
    pub fn state_of(&self, line: u32) -> Option<(LineState, &[TestId])> {
        if self.witnessed_lines.binary_search(&line).is_ok() {
            return Some((LineState::Witnessed, &[]));
        }
        if let Ok(i) = self.blind_lines.binary_search_by_key(&line, |b| b.line) {
            return Some((LineState::Blind, &self.blind_lines[i].tests));
        }
        self.uncovered_lines
            .binary_search(&line)
            .is_ok()
            .then_some((LineState::Uncovered, &[]))
    }
}

/// Lines of one file: how many, and as ranges of consecutive line numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FileLines {
    pub path: String,
    pub lines: usize,
    /// `[first, last]` pairs, ascending.
    pub ranges: Vec<(u32, u32)>,
}

/// A frozen or not-stable test that witnesses some measured line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TestBlindness {
    #[schemars(with = "String")]
    pub test: TestId,
    /// How it stands as a witness (`frozen`, `unstable`, `failing_on_base`, `head_flaky`, `unjoined`).
    pub status: WitnessStatus,
    /// The ledger entry that freezes it (its `test` may name a parametrised family).
    pub freeze: Option<FreezeRef>,
    /// Blind lines it witnesses (with or without other frozen or not-stable witnesses).
    pub blind_lines: usize,
    /// Blind lines it is the only witness of: what fixing or unfreezing it alone restores.
    pub only_witness_lines: usize,
    /// Those lines, file by file, most first.
    pub only_witness: Vec<FileLines>,
}

/// A ledger entry, as the map names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FreezeRef {
    /// The entry's `test` as the ledger writes it.
    pub test: String,
    pub owner: String,
    #[schemars(with = "String")]
    pub expires: NaiveDate,
    /// Past its expiry as of the map's `today`.
    pub expired: bool,
    /// The entry's line in the ledger file.
    pub ledger_line: usize,
}

impl FreezeRef {
    pub(super) fn of(e: &FreezeEntry, today: NaiveDate) -> Self {
        FreezeRef {
            test: e.test.clone(),
            owner: e.owner.clone(),
            expires: e.expires,
            expired: e.is_expired(today),
            ledger_line: e.line,
        }
    }
}

/// An owner of freezes and what their freezes blind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct OwnerBlindness {
    pub owner: String,
    /// Blind lines some test frozen by this owner witnesses.
    pub blind_lines: usize,
    /// Those lines' files, most first: (path, blind lines).
    pub files: Vec<(String, usize)>,
    /// The soonest expiry of this owner's freezes.
    #[schemars(with = "Option<String>")]
    pub soonest_expiry: Option<NaiveDate>,
    /// How many ledger entries this owner has.
    pub freezes: usize,
}

/// Totals over every measured file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Totals {
    pub files: usize,
    pub witnessed: usize,
    pub blind: usize,
    pub uncovered: usize,
}

/// The map: see the module's documentation and `docs/blindness.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct BlindnessMap {
    /// `flakegate.blindness/1` ([`super::SCHEMA`]).
    pub schema: String,
    #[schemars(with = "String")]
    pub today: NaiveDate,
    /// The commit the evidence ran on (its meta.json's `head_sha`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    #[schemars(with = "String")]
    pub coverage_format: CoverageFormat,
    pub totals: Totals,
    /// Every measured file, most blind lines first.
    pub files: Vec<FileBlindness>,
    /// Every frozen or not-stable test that witnesses a measured line, most only-witness lines first.
    pub tests: Vec<TestBlindness>,
    /// Every owner of a freeze, most blind lines first.
    pub owners: Vec<OwnerBlindness>,
    /// Freezes naming no test the coverage knows: they blind nothing that is measured.
    pub freezes_with_no_coverage: Vec<FreezeRef>,
    /// What the reader of the map should know (sources unread, paths outside the tree, …).
    pub notes: Vec<String>,
}
