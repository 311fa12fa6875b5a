//! The map in a few numbers, for a message that names owners (the App's issue of expired
//! freezes): per owner their blind lines, their three files with the most, their soonest
//! expiry; per frozen or not-stable test the lines only it witnesses. [`CodebaseMap`] is that
//! summary kept for a branch at a commit, which a pull request's check reads for its witnesses.

use super::model::BlindnessMap;
use crate::gate::nodeid::TestId;
use crate::gate::report::{CodebaseBlindness, CodebaseWitness};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// How many files [`OwnerSummary::top_files`] names.
pub const TOP_FILES: usize = 3;

/// [`BlindnessMap::summary`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlindnessSummary {
    /// Every owner of a freeze, most blind lines first.
    pub owners: Vec<OwnerSummary>,
    /// Every frozen or not-stable witness, most only-witness lines first.
    pub tests: Vec<TestSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerSummary {
    pub owner: String,
    pub blind_lines: usize,
    /// At most three files (`TOP_FILES`), most blind lines first: (path, blind lines).
    pub top_files: Vec<(String, usize)>,
    /// How many files hold blind lines of theirs.
    #[serde(default)]
    pub files_blinded: usize,
    pub soonest_expiry: Option<NaiveDate>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSummary {
    pub test: TestId,
    /// The owner of its freeze; `None` for a test that is not stable but not frozen.
    pub owner: Option<String>,
    pub only_witness_lines: usize,
}

impl BlindnessMap {
    /// The map in a few numbers.
    pub fn summary(&self) -> BlindnessSummary {
        BlindnessSummary {
            owners: self
                .owners
                .iter()
                .map(|o| OwnerSummary {
                    owner: o.owner.clone(),
                    blind_lines: o.blind_lines,
                    top_files: o.files.iter().take(TOP_FILES).cloned().collect(),
                    files_blinded: o.files.len(),
                    soonest_expiry: o.soonest_expiry,
                })
                .collect(),
            tests: self
                .tests
                .iter()
                .map(|t| TestSummary {
                    test: t.test.clone(),
                    owner: t.freeze.as_ref().map(|f| f.owner.clone()),
                    only_witness_lines: t.only_witness_lines,
                })
                .collect(),
        }
    }

    /// The summary of one owner, if they own a freeze.
    pub fn owner_summary(&self, owner: &str) -> Option<OwnerSummary> {
        self.summary().owners.into_iter().find(|o| o.owner == owner)
    }
}

/// A branch's blindness in a few numbers, kept between judgements: the summary of the map of a
/// full-suite evidence of the branch at `sha`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodebaseMap {
    /// The branch mapped (empty when unknown: a map file given to `check`).
    pub branch: String,
    /// The commit of the branch the evidence stands for (empty when unknown).
    pub sha: String,
    /// The day the map was made (UTC).
    pub date: NaiveDate,
    /// The pull request whose merge made `sha`, whose head's evidence the map read.
    pub pull_request: Option<u64>,
    /// The commit the evidence was run on, and its workflow run.
    pub evidence_head: String,
    pub run_id: u64,
    /// When the merge happened, as GitHub said: a map of an older merge never replaces a newer.
    pub merged_at: Option<String>,
    /// Lines witnessed by a stable test, blind, and run by no test.
    pub witnessed: usize,
    pub blind: usize,
    pub uncovered: usize,
    pub summary: BlindnessSummary,
}

impl CodebaseMap {
    /// The map of `map` for `branch` at `sha`.
    pub fn of(map: &BlindnessMap, branch: &str, sha: &str, date: NaiveDate) -> CodebaseMap {
        CodebaseMap {
            branch: branch.to_owned(),
            sha: sha.to_owned(),
            date,
            pull_request: None,
            evidence_head: String::new(),
            run_id: 0,
            merged_at: None,
            witnessed: map.totals.witnessed,
            blind: map.totals.blind,
            uncovered: map.totals.uncovered,
            summary: map.summary(),
        }
    }

    /// What `tests` (a patch's frozen and not-stable witnesses) leave blind across the
    /// codebase: those the map knows, in the order given; `None` when it knows none of them.
    pub fn for_witnesses<'a>(&self, tests: impl IntoIterator<Item = &'a TestId>) -> Option<CodebaseBlindness> {
        let tests: Vec<CodebaseWitness> = tests
            .into_iter()
            .filter_map(|t| {
                let known = self.summary.tests.iter().find(|s| &s.test == t)?;
                Some(CodebaseWitness {
                    test: t.clone(),
                    only_witness_lines: known.only_witness_lines,
                })
            })
            .collect();
        let known = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        (!tests.is_empty()).then(|| CodebaseBlindness {
            branch: known(&self.branch),
            sha: known(&self.sha),
            date: self.date,
            pull_request: self.pull_request,
            tests,
        })
    }

    /// What decides whether a message quoting these owners' numbers must be edited: the commit
    /// mapped and each one's blind lines and files (not the day it was made, nor others' numbers).
    pub fn blind_key<'a>(&self, owners: impl IntoIterator<Item = &'a str>) -> String {
        let owners: std::collections::BTreeSet<&str> = owners.into_iter().collect();
        let mut key = format!("{}\n", self.sha);
        for o in self.summary.owners.iter().filter(|o| owners.contains(o.owner.as_str())) {
            key.push_str(&format!(
                "{}\t{}\t{:?}\t{}\n",
                o.owner, o.blind_lines, o.top_files, o.files_blinded
            ));
        }
        key
    }

    /// Whether this map may replace `older` (stored before): a map of an earlier merge may not.
    pub fn replaces(&self, older: &CodebaseMap) -> bool {
        match (&self.merged_at, &older.merged_at) {
            // Both as GitHub writes them (ISO 8601, UTC): their order is the text's.
            (Some(new), Some(old)) => new >= old,
            _ => true,
        }
    }
}
