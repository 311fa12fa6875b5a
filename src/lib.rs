//! flakegate decides whether a pull request has *evidence* of being correct: it maps
//! the patch's changed lines to the tests that execute them (per-test coverage
//! contexts), checks those tests against a committed freeze ledger and a probe of the
//! base tree, and refuses PASS when the only witnesses are frozen or unstable tests.
//!
//! The layers, each importing only those below it (`docs/design.md` has the whole
//! picture; `scripts/check-imports.py` enforces it):
//!
//! - **faces** — [`cli`] (the command line; `cli::serve` is the App's composition
//!   root), [`server`] (the App's HTTP face: verify, dedupe, queue) and [`worker`]
//!   (claim a job → typed event → fetch → assemble → publish);
//! - **adapters** — [`evidence`] (evidence from disk, and `evidence::assemble`, the one
//!   pipeline both faces run), [`present`] (everything that turns a report into text people
//!   read: the check run, the comment, the expired-freezes issue, the terminal and markdown
//!   renderings; pure), [`github`] (events, types, client), [`store`] (the durable job
//!   queue), `probe` (running a suite K times), `app_config`;
//! - **the gate** — [`gate`]: pure decision logic, plain data in, a `Report` out;
//! - **leaves** — [`runtime`] (clock, shutdown), [`metrics`] (what `/metrics` shows).

// The public surface is only what the binary, the integration tests, the benches, the examples
// and the fuzz targets (`fuzz/`, a crate of its own) name: each module is `pub` only when such a
// path goes through it, and its other modules and items are crate-private, so the dead-code lint
// sees everything else.
mod app_config;
pub mod cli;
pub mod evidence;
pub mod gate;
pub mod github;
pub mod metrics;
pub mod present;
mod probe;
pub mod runtime;
pub mod server;
pub mod store;
pub mod worker;
