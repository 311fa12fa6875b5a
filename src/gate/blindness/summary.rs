//! The map in a few numbers, for a message that names owners (the App's issue of expired
//! freezes): per owner their blind lines, their three files with the most, their soonest
//! expiry; per frozen or not-stable test the lines only it witnesses.

use super::model::BlindnessMap;
use crate::gate::nodeid::TestId;
use chrono::NaiveDate;
use serde::Serialize;

/// How many files [`OwnerSummary::top_files`] names.
pub const TOP_FILES: usize = 3;

/// [`BlindnessMap::summary`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlindnessSummary {
    /// Every owner of a freeze, most blind lines first.
    pub owners: Vec<OwnerSummary>,
    /// Every frozen or not-stable witness, most only-witness lines first.
    pub tests: Vec<TestSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OwnerSummary {
    pub owner: String,
    pub blind_lines: usize,
    /// At most three files (`TOP_FILES`), most blind lines first: (path, blind lines).
    pub top_files: Vec<(String, usize)>,
    pub soonest_expiry: Option<NaiveDate>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
