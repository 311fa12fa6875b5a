//! The evidence gate: pure decision logic. Plain data in, a [`Report`] out.
//!
//! Nothing in here performs I/O, reads the clock, or knows about HTTP, GitHub
//! or a database: readers take `&str`/`impl Read` and `today` is passed in.
//! The command line and the App are two faces over [`evaluate`].

pub(crate) mod attribution;
pub mod codeowners;
pub mod config;
pub mod coverage;
pub mod error;
pub mod input;
pub(crate) mod json_spans;
pub mod ledger;
pub mod nodeid;
pub mod patch;
pub mod probe;
pub mod report;
pub mod results;
pub mod trust;
pub mod verdict;

pub use config::Policy;
pub use coverage::{Coverage, FileCoverage};
pub use error::{InputError, Location};
pub use input::{Evidence, GateInput, Meta};
pub use ledger::{FreezeEntry, Ledger};
pub use nodeid::{Phase, TestId};
pub use patch::{FileChange, FileStatus, Patch};
pub use probe::Probe;
pub use report::InputDigest;
pub use report::{Reason, ReasonCode, Report, Verdict};
pub use results::{Outcome, TestResults};
pub use verdict::evaluate;
