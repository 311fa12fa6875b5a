//! The probe engine behind `flakegate probe`: run the base tree's suite K times
//! on identical inputs and count, per test, how often it failed. A test failing
//! 0/K or K/K times is stable (K/K: broken on base); anything else is unstable
//! and is not evidence. The output is a probe JSON the gate reads (`check --probe`).
//!
//! The pieces: [`exec`] runs the command (no global state: a [`exec::RunPlan`]
//! holds everything), [`collect`] reads the result files, [`summary`] turns
//! them into counts (pure, `today` passed in), [`progress`] draws on stderr,
//! [`select`] picks the tests that witness a patch. The command line's flags
//! live in `cli::probe`.

pub mod collect;
pub mod exec;
pub mod progress;
pub mod seed;
pub mod select;
pub mod summary;
