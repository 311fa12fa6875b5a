//! What the App writes for the ledger's upkeep: the body of its ledger pull request (each
//! change with its evidence, the owners concerned mentioned, what still waits for runs), the
//! section the expired-freezes issue gains (that pull request, or — without the permission to
//! open it — the change as a ready-to-apply patch and the command that makes it, and the probe
//! runs asked for or refused), and the patch itself. Test ids, owners and evidence come from
//! the ledger and the history: they go out inert.

use super::words::unmentioned;
use crate::gate::config::{handle_for, Config, Mentions};
use crate::gate::inert;
use crate::gate::ledger::maintain::{Change, Plan};
use crate::github::OUTPUT_MAX_BYTES;

/// The hidden marker the ledger pull request's body starts with.
pub const LEDGER_PULL_MARKER: &str = "<!-- flakegate:ledger-upkeep -->";

/// The ledger pull request's title.
pub const LEDGER_PULL_TITLE: &str = "flakegate: keep the freeze ledger from its evidence";

/// The commit message of the ledger pull request's one commit.
pub const LEDGER_COMMIT_MESSAGE: &str =
    "flakegate: prune, renew and propose freezes from the evidence\n\nWritten by flakegate's ledger upkeep \
     (flakegate ledger maintain does the same on the command line); the pull request lists each change with its \
     evidence.";

/// An owner as the App writes them: mentioned when they have a handle and `mentions` allows it.
fn who(owner: &str, config: &Config) -> String {
    match handle_for(owner, config) {
        Some(h) if config.mentions != Mentions::Never => h,
        _ => unmentioned(owner),
    }
}

fn change_line(c: &Change, config: &Config) -> String {
    match c {
        Change::Prune {
            test, owner, evidence, ..
        } => format!(
            "- **prune** {} (owner {}): {}",
            inert::code(test),
            who(owner, config),
            inert::text(evidence)
        ),
        Change::Renew {
            test,
            owner,
            was,
            expires,
            evidence,
        } => format!(
            "- **renew** {} (owner {}) from {was} to {expires}: still unstable, {}",
            inert::code(test),
            who(owner, config),
            inert::text(evidence)
        ),
        Change::Freeze {
            test,
            owner,
            expires,
            evidence,
        } => match owner {
            Some(o) => format!(
                "- **freeze** {} until {expires}, owner {} (CODEOWNERS of its file): {}",
                inert::code(test),
                who(o, config),
                inert::text(evidence)
            ),
            None => format!(
                "- **freeze** {} until {expires}: {} — **no owner**: no CODEOWNERS rule names one, so the entry \
                 says `\"owner\": null` and the ledger fails until a person names the owner (flakegate never \
                 invents one)",
                inert::code(test),
                inert::text(evidence)
            ),
        },
    }
}

fn pending_lines(plan: &Plan, config: &Config) -> Vec<String> {
    plan.pending
        .iter()
        .map(|p| {
            let owner = p
                .owner
                .as_deref()
                .map(|o| format!(" (owner {})", who(o, config)))
                .unwrap_or_default();
            format!("- {}{owner}: {}", inert::code(&p.test), inert::text(&p.why))
        })
        .collect()
}

/// The ledger pull request's body for `plan`, on `branch`'s ledger at `ledger`.
pub fn ledger_pull_body(plan: &Plan, ledger: &str, branch: &str, config: &Config) -> String {
    let mut out = format!(
        "{LEDGER_PULL_MARKER}\nflakegate keeps {} on {} from its evidence: the base probes and head runs of \
         every pull request it judged (the flake history) and the probe runs it asked the evidence workflow \
         for. Each change below says what it rests on; merging it is a person's decision.\n\n### Changes\n\n",
        inert::code(ledger),
        inert::code(branch)
    );
    for c in &plan.changes {
        out.push_str(&change_line(c, config));
        out.push('\n');
    }
    let waiting = pending_lines(plan, config);
    if !waiting.is_empty() {
        out.push_str("\n### Not decided yet\n\n");
        out.push_str(&waiting.join("\n"));
        out.push('\n');
    }
    out.push_str(
        "\nThis pull request's own flakegate check judges it like any other: the ledger edit is listed entry by \
         entry (`ledger_edited`) for the reviewer to accept. flakegate updates it in place as the evidence \
         changes, rebased on the ledger as the default branch has it, and closes it when nothing is left to \
         change; a commit of yours on its branch stops it from touching the branch again.\n",
    );
    super::words::truncate(&out, OUTPUT_MAX_BYTES)
}

/// The change from `old` to `new` of the file at `path`, as a patch `git apply` takes.
pub fn ledger_patch(old: &str, new: &str, path: &str) -> String {
    let patch = diffy::create_patch(old, new).to_string();
    let body: Vec<&str> = patch.lines().skip(2).collect();
    format!("--- a/{path}\n+++ b/{path}\n{}\n", body.join("\n"))
}

/// What the App did for the ledger's upkeep this time, for the expired-freezes issue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpkeepNote {
    /// The open ledger pull request.
    pub pull: Option<u64>,
    /// Without the permission to open it: the change, as a patch of the ledger file.
    pub patch: Option<String>,
    /// The tests probe runs were asked for.
    pub asked: Vec<String>,
    /// Why something could not be done, one sentence each (a dispatch refused, a branch left alone).
    pub problems: Vec<String>,
}

impl UpkeepNote {
    pub fn is_empty(&self) -> bool {
        self == &UpkeepNote::default()
    }
}

/// The expired-freezes issue's section on the upkeep (empty when there is nothing to say).
pub fn upkeep_section(note: &UpkeepNote, plan: Option<&Plan>, config: &Config) -> String {
    if note.is_empty() && plan.is_none_or(|p| p.pending.is_empty()) {
        return String::new();
    }
    let mut out = String::from("\n### Keeping the ledger\n\n");
    if let Some(n) = note.pull {
        out.push_str(&format!(
            "flakegate proposes the changes the evidence supports in #{n}: review and merge it to prune, renew \
             or add the entries it lists.\n\n"
        ));
    }
    if let (Some(patch), Some(plan)) = (&note.patch, plan) {
        out.push_str(
            "flakegate could not open its pull request (the App needs **Contents: write** and **Pull requests: \
             write**; see the README). The change the evidence supports:\n\n",
        );
        for c in &plan.changes {
            out.push_str(&change_line(c, config));
            out.push('\n');
        }
        let fence = "`".repeat(longest_backticks(patch).max(2) + 1);
        out.push_str(&format!(
            "\nApply it with `git apply` (or make it with `flakegate ledger maintain --history FILE`, from a \
             history the command line keeps):\n\n{fence}diff\n{}{fence}\n\n",
            patch
        ));
    }
    if let Some(plan) = plan {
        let waiting = pending_lines(plan, config);
        if !waiting.is_empty() {
            out.push_str("Not decided yet:\n\n");
            out.push_str(&waiting.join("\n"));
            out.push_str("\n\n");
        }
    }
    if !note.asked.is_empty() {
        let tests: Vec<String> = note.asked.iter().map(|t| inert::code(t)).collect();
        out.push_str(&format!(
            "Probe runs asked of the evidence workflow on the default branch for: {}.\n\n",
            tests.join(", ")
        ));
    }
    for p in &note.problems {
        out.push_str(&format!("⚠️ {}\n\n", inert::text(p)));
    }
    out
}

/// The expired-freezes issue's body when no freeze expires but the upkeep has something only
/// the issue can carry (`section`).
pub fn upkeep_only_body(ledger: &str, branch: &str, today: chrono::NaiveDate, section: &str) -> String {
    let body = format!(
        "{}\nAs of {today}, no entry of {} on {} has expired or expires soon.\n{section}",
        super::expired_freezes::EXPIRED_FREEZES_MARKER,
        inert::code(ledger),
        inert::code(branch)
    );
    super::words::truncate(&body, OUTPUT_MAX_BYTES)
}

fn longest_backticks(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests;
