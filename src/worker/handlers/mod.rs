//! What each kind of work does, one file per kind, each an `impl Worker` block that `dispatch`
//! routes to: a pull request's head gets a queued check run (`pull_request`); its evidence
//! deadline comes due (`evidence_timeout`); a workflow run brings evidence and every open pull
//! request at its head is judged (`workflow_run`); a check run is asked for again or its
//! buttons pressed (`check_run`); a merge queue's group is checked (`merge_group`); the
//! expired-freezes issue is kept up to date on a push and by the periodic sweep (`sweep`), with
//! the ledger's upkeep beside it (`ledger_upkeep`); a merge into the default branch maps what
//! its freezes leave blind (`codebase_map`).

mod check_run;
mod codebase_map;
mod evidence_timeout;
mod ledger_upkeep;
mod merge_group;
mod pull_request;
mod sweep;
mod workflow_run;
