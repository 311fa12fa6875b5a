//! The GitHub App end to end, offline: signed webhooks into the real router, the real store
//! (SQLite in a temp dir, and PostgreSQL for the store contract), the real worker and GitHub
//! client against a fake GitHub that checks every request against GitHub's OpenAPI subset
//! (`tests/fixtures/github/`), and the deployment files. One test binary: each file here is a
//! module; `support` holds the fakes and the harness.

mod blindness_report;
mod codebase_map;
mod corpus;
mod deploy;
mod end_to_end;
mod expired_freezes;
#[path = "../common/git.rs"]
mod git_cmd;
mod github_client;
mod history;
mod history_store;
#[path = "../common/hostile.rs"]
mod hostile;
mod hostile_output;
mod leases;
mod ledger_upkeep;
mod logs;
mod merge_queue;
mod metrics;
mod probe_shards;
mod release;
mod retention;
mod scale;
mod scenarios;
mod setup;
#[path = "../common/probe_shards.rs"]
mod shard_fixtures;
mod statements;
mod stolen_verdicts;
mod store;
mod support;
mod webhook;
