//! Everything that turns a report into text people read, computed without any I/O: the check
//! run and its annotations, the sticky pull-request comment, the table of a head several pull
//! requests share, the expired-freezes issue, and the evidence record for a terminal, as
//! markdown or as JSON. Strings from the pull request go out inert (`gate::inert`), and every
//! field is cut to GitHub's limits here; `worker::post` sends what this makes and
//! `cli::check` prints it.

mod actions;
pub(crate) mod annotations;
pub(crate) mod blindness;
pub(crate) mod check_run;
pub mod comment;
pub(crate) mod expired_freezes;
#[cfg(test)]
mod gfm;
pub(crate) mod ledger_upkeep;
pub(crate) mod links;
pub(crate) mod markdown;
pub(crate) mod record;
#[cfg(test)]
mod rendered_tests;
pub(crate) mod sarif;
pub(crate) mod shared_head;
pub(crate) mod terminal;
#[cfg(test)]
mod test_cases;
mod words;
pub(crate) mod workflow_commands;
