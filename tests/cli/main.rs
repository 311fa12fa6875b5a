//! The command line end to end: the `flakegate` binary run on the real fixtures under
//! `tests/fixtures/` (evidence, git checkouts, live pytest probes), its output and exit status
//! checked. One test binary: each file here is a module.

mod bad_input;
mod blindness;
mod check;
mod conventions;
mod corpus;
#[path = "../common/coverage_oracle.rs"]
mod coverage_oracle;
mod coverage_readers;
mod git_base;
#[path = "../common/git.rs"]
mod git_cmd;
mod history;
#[path = "../common/hostile.rs"]
mod hostile;
mod inert_output;
mod lcov;
mod ledger_edit;
mod plugin;
mod probe;
mod probe_shards;
mod release;
mod reruns;
#[path = "../common/probe_shards.rs"]
mod shard_fixtures;
mod statements;
mod support;
