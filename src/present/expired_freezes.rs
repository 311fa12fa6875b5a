//! The expired-freezes issue: its body (the ledger entries past or near their expiry, their
//! owners mentioned when they have a handle), the body it is closed with, its title and the
//! marker the App finds it by. The ledger upkeep's section (`ledger_upkeep`) is appended.

use super::markdown;
use super::words::{truncate, unmentioned};
use crate::gate::blindness::CodebaseMap;
use crate::gate::config::is_handle;
use crate::gate::inert;
use crate::github::OUTPUT_MAX_BYTES;
use serde::Serialize;

/// The hidden marker the expired-freezes issue starts with; the App finds its issue by it.
pub const EXPIRED_FREEZES_MARKER: &str = "<!-- flakegate:expired-freezes -->";

/// The expired-freezes issue's title (the same every time: the body says what changed).
pub const EXPIRED_FREEZES_TITLE: &str = "flakegate: frozen tests past or near their expiry";

#[derive(Serialize)]
struct ExpiringCtx {
    test: String,
    who: String,
    mention: bool,
    expires: String,
    expired: bool,
    days_past: i64,
    days_left: i64,
    line: usize,
}

/// One owner's row of what their freezes leave blind.
#[derive(Serialize)]
struct BlindCtx {
    who: String,
    lines: usize,
    /// `path` (lines), most first, at most three.
    files: Vec<(String, usize)>,
    /// How many other files hold the rest.
    more_files: usize,
}

/// Where the blindness numbers come from.
#[derive(Serialize)]
struct MapCtx {
    sha: String,
    date: String,
    pull_request: Option<u64>,
}

/// Per owner of the listed entries, in the order they are first listed: the lines of the
/// mapped branch only their frozen tests witness, and the files with the most.
fn blind_rows(notice: &crate::gate::expiry::ExpiryNotice, map: &CodebaseMap) -> Vec<BlindCtx> {
    let mut rows: Vec<BlindCtx> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for e in &notice.entries {
        if !seen.insert(e.owner.as_str()) {
            continue;
        }
        let owner = map.summary.owners.iter().find(|o| o.owner == e.owner);
        rows.push(BlindCtx {
            who: e.handle.clone().unwrap_or_else(|| unmentioned(&e.owner)),
            lines: owner.map_or(0, |o| o.blind_lines),
            files: owner.map(|o| o.top_files.clone()).unwrap_or_default(),
            more_files: owner.map_or(0, |o| o.files_blinded.saturating_sub(o.top_files.len())),
        });
    }
    rows
}

/// The body of the expired-freezes issue for `notice`, read from `ledger` on `branch` on `today`.
/// An expired freeze blocks every pull request, so its owners must act: they are mentioned
/// unless `mentions` is `never`.
pub fn expired_freezes_body(
    notice: &crate::gate::expiry::ExpiryNotice,
    ledger: &str,
    branch: &str,
    today: chrono::NaiveDate,
    mentions: crate::gate::config::Mentions,
    blind: Option<&CodebaseMap>,
    upkeep: &str,
) -> String {
    let notify = mentions != crate::gate::config::Mentions::Never;
    let entries: Vec<ExpiringCtx> = notice
        .entries
        .iter()
        .map(|e| ExpiringCtx {
            test: e.test.clone(),
            mention: notify && e.handle.is_some(),
            who: e.handle.clone().unwrap_or_else(|| unmentioned(&e.owner)),
            expires: e.expires.to_string(),
            expired: e.expired,
            days_past: e.days_past,
            days_left: e.days_left,
            line: e.line,
        })
        .collect();
    let mentions: Vec<&str> = notice
        .mentions
        .iter()
        .map(String::as_str)
        .filter(|h| notify && is_handle(h))
        .collect();
    let mut env = markdown::environment();
    env.add_template("expired-freezes.md.j2", markdown::EXPIRED_FREEZES)
        .expect("the bundled expired-freezes template parses");
    let body = env
        .get_template("expired-freezes.md.j2")
        .and_then(|t| {
            t.render(minijinja::context! {
                marker => minijinja::Value::from_safe_string(EXPIRED_FREEZES_MARKER.to_string()),
                today => today.to_string(),
                ledger => ledger,
                branch => branch,
                warning_days => notice.warning_days,
                unmapped => notify && notice.entries.iter().any(|e| e.handle.is_none()),
                mentions => mentions,
                docs => minijinja::Value::from_safe_string(super::links::docs()),
                entries => entries,
                blind => blind.map(|m| blind_rows(notice, m)),
                map => blind.map(|m| MapCtx {
                    sha: m.sha.chars().take(12).collect(),
                    date: m.date.to_string(),
                    pull_request: m.pull_request,
                }),
            })
        })
        .expect("the bundled expired-freezes template renders");
    let body = if body.ends_with('\n') { body } else { body + "\n" };
    truncate(&(body + upkeep), OUTPUT_MAX_BYTES)
}

/// The body the expired-freezes issue is closed with: no freeze has expired or is about to.
pub fn expired_freezes_closed_body(ledger: &str, branch: &str, today: chrono::NaiveDate) -> String {
    format!(
        "{EXPIRED_FREEZES_MARKER}\n✅ As of {today}, no entry of {} on {} has expired or expires soon: closing. \
         flakegate opens a new issue when one does.\n",
        inert::code(ledger),
        inert::code(branch)
    )
}
