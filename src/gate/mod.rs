//! The evidence gate: pure decision logic. Plain data in, a [`Report`] out.
//!
//! Nothing in here performs I/O, reads the clock, or knows about HTTP, GitHub
//! or a database: readers take `&str`/`impl Read` and `today` is passed in.
//! The command line and the App are two faces over [`evaluate`].

pub mod codeowners;
pub mod config;
pub mod coverage;
pub mod diff;
pub mod ledger;
pub mod nodeid;
pub mod probe;
pub mod report;
pub mod results;
pub mod trust;
pub mod verdict;

pub use config::Policy;
pub use coverage::{Coverage, FileCoverage};
pub use diff::{FileChange, FileStatus, Patch};
pub use ledger::{FreezeEntry, Ledger};
pub use nodeid::{Phase, TestId};
pub use probe::Probe;
pub use report::InputDigest;
pub use report::{Reason, ReasonCode, Report, Verdict};
pub use results::{Outcome, TestResults};
pub use verdict::{evaluate, Evidence, GateInput, Meta};

/// Where in an input file something is: the file's display name, and a
/// 1-based line and column where the format has them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
}

impl Location {
    pub fn file(file: impl Into<String>) -> Self {
        Location {
            file: file.into(),
            line: None,
            column: None,
        }
    }
    pub fn at(file: impl Into<String>, line: usize, column: Option<usize>) -> Self {
        Location {
            file: file.into(),
            line: Some(line),
            column,
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        Ok(())
    }
}

/// A bad input: which file, where, and what was expected. Every reader in
/// `gate` returns this, so the command line and the App report it alike.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("{location}: {message}")]
pub struct InputError {
    pub location: Location,
    pub message: String,
}

impl InputError {
    pub fn new(location: Location, message: impl Into<String>) -> Self {
        InputError {
            location,
            message: message.into(),
        }
    }

    /// Wrap a serde_json error, keeping its line and column.
    pub fn json(file: &str, err: &serde_json::Error) -> Self {
        let location = if err.line() > 0 {
            Location::at(file, err.line(), Some(err.column()))
        } else {
            Location::file(file)
        };
        // serde_json appends " at line X column Y"; we carry that in Location.
        let msg = err.to_string();
        let msg = match msg.rfind(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        InputError::new(location, msg)
    }
}
