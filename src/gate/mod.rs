//! The evidence gate: the pure decision. Plain data in, a [`Report`] out.
//!
//! The gate owns everything flakegate decides: reading each input from text
//! or bytes (the patch, coverage, test results, the probe, the ledger, the
//! config, CODEOWNERS), attributing witnesses to changed lines, the trust
//! rules, and the decision table of the README's "How it decides". Nothing in
//! here performs I/O, reads the clock, or knows about HTTP, GitHub or a
//! database: readers take `&str`, `&[u8]` or `impl Read`, `today` is passed in,
//! and every bad input is an [`InputError`] naming file, line and column. The
//! command line and the App are two faces over [`evaluate`].
//!
//! Where things are: `input` is what the gate decides on ([`GateInput`],
//! [`Evidence`]); `verdict` is the decision, one function per row of the
//! table, over the per-line witnesses of `attribution.rs`; `report` is the
//! evidence record it returns. The readers are [`patch`], [`coverage`],
//! [`results`], [`probe`], [`ledger`] (also the patch's ledger edits),
//! [`config`] and [`codeowners`]; `trust` holds the trust rules and the test
//! weakenings; `inert` makes untrusted strings safe to show; `nodeid` is
//! pytest's node ids and coverage contexts; [`error`] is [`InputError`] and its
//! [`Location`]. [`blindness`] maps a whole suite's coverage: which code only frozen or
//! unstable tests witness.
//!
//! This file only declares the modules and re-exports what the faces use most.

pub(crate) mod attribution;
pub mod blindness;
pub mod codeowners;
pub mod config;
pub mod coverage;
pub mod error;
pub(crate) mod expiry;
pub(crate) mod history;
pub(crate) mod inert;
pub(crate) mod input;
pub(crate) mod json_spans;
pub mod ledger;
pub(crate) mod nodeid;
pub mod patch;
pub mod probe;
pub(crate) mod report;
pub mod results;
pub(crate) mod scopes;
pub(crate) mod trust;
pub(crate) mod verdict;

pub use error::{InputError, Location};
pub use history::{HistoryPolicy, Observation, RunKind, Source};
pub use input::{Evidence, GateInput};
pub use ledger::Ledger;
pub use nodeid::TestId;
pub use patch::Patch;
pub use report::Report;
pub use verdict::evaluate;

pub(crate) use report::InputDigest;
