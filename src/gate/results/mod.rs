//! Test results of a run: pytest's report-log JSON lines (`reportlog.rs`) and
//! JUnit XML, xunit1 and xunit2 (`junit.rs`), reduced to one outcome per node
//! id. [`parse_any`] sniffs which one a file is. The model (`model.rs`, which
//! both readers build) is re-exported here.

mod junit;
mod model;
mod reportlog;

pub use junit::parse_junit;
pub use model::{CollectionError, Outcome, TestResult, TestResults, UnmatchedCase};
pub use reportlog::parse_reportlog;

use crate::gate::error::{InputError, Location};
use crate::gate::nodeid::TestId;
use std::collections::BTreeSet;

/// Which format a result file is in, sniffed from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultFormat {
    ReportLog,
    JUnit,
}

/// Sniff the format: XML (`<`) → JUnit, JSON lines (`{`) → report-log.
pub(crate) fn sniff(text: &str) -> Option<ResultFormat> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('<') {
        Some(ResultFormat::JUnit)
    } else if t.starts_with('{') {
        Some(ResultFormat::ReportLog)
    } else {
        None
    }
}

/// Parse either format, sniffed.
pub fn parse_any(file: &str, text: &str, known: &BTreeSet<TestId>) -> Result<TestResults, InputError> {
    match sniff(text) {
        Some(ResultFormat::JUnit) => parse_junit(file, text, known),
        Some(ResultFormat::ReportLog) => parse_reportlog(file, text),
        None => Err(InputError::new(
            Location::at(file, 1, Some(1)),
            "expected a pytest report-log (JSON lines) or JUnit XML file",
        )),
    }
}

#[cfg(test)]
mod tests;
