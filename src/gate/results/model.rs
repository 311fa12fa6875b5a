//! The results model: one [`TestResult`] per node id of a run, plus its
//! collection errors and the JUnit cases no node id matched.

use crate::gate::nodeid::{Phase, TestId};
use serde::Serialize;
use std::collections::BTreeMap;

/// The outcome of one test in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    /// The test body (call phase) failed.
    Failed,
    /// Setup or teardown raised (pytest's "error").
    Error,
    Skipped,
    XFailed,
    XPassed,
}

impl Outcome {
    /// Does this outcome count as a failure of the test?
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::Error)
    }
}

/// One test's result in one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestResult {
    pub outcome: Outcome,
    /// For `Error`: the phase that raised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The first line of the failure message, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Where the record came from (file:line).
    pub source: String,
    /// Earlier attempts of this test in the same run that failed before this
    /// one (pytest-rerunfailures' `rerun` reports; JUnit's repeated test cases
    /// and `<flakyFailure>`/`<rerunFailure>` elements). 0: it ran once.
    #[serde(skip_serializing_if = "is_zero")]
    pub reruns: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TestResult {
    /// Failed, then passed on a rerun in the same run: unstable on this evidence.
    pub fn is_head_flaky(&self) -> bool {
        self.reruns > 0 && !self.outcome.is_failure()
    }
}

/// A collection error: a module that could not be imported/collected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CollectionError {
    /// The collector's node id (usually a test file path).
    pub nodeid: String,
    pub message: Option<String>,
    pub source: String,
}

/// The results of one run (or several result files of the same run merged).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TestResults {
    pub tests: BTreeMap<TestId, TestResult>,
    pub collection_errors: Vec<CollectionError>,
    /// JUnit test cases that could not be matched to a node id, reported,
    /// never guessed: (source, classname, name, why).
    pub unmatched: Vec<UnmatchedCase>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnmatchedCase {
    pub source: String,
    pub classname: String,
    pub name: String,
    pub why: String,
    /// The case's outcome: an unmatched failure still fails the gate.
    pub outcome: Outcome,
    pub message: Option<String>,
}

impl TestResults {
    /// The tests that failed and then passed on a rerun in this run.
    #[cfg(test)]
    pub fn head_flaky(&self) -> impl Iterator<Item = (&TestId, &TestResult)> {
        self.tests.iter().filter(|(_, r)| r.is_head_flaky())
    }
    /// Merge another file's results of the same run into this one.
    pub fn merge(&mut self, other: TestResults) {
        self.tests.extend(other.tests);
        self.collection_errors.extend(other.collection_errors);
        self.unmatched.extend(other.unmatched);
    }
}

/// The first non-empty line of a text, trimmed.
pub(super) fn first_line(s: &str) -> Option<String> {
    s.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
}
