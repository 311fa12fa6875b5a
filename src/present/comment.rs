//! The one sticky pull-request comment's body: who is blind and what they are asked to do,
//! expired freezes, unowned unstable tests, and what the patch did to its own evidence — or
//! that the blind spot is gone. Nothing to say and no earlier comment: no comment.

use super::markdown;
use super::words::{line_ranges, truncate, unmentioned};
use crate::gate::config::{handle_for, is_handle, Config};
use crate::gate::inert;
use crate::gate::report::{Report, Verdict};
use crate::github::OUTPUT_MAX_BYTES;
use serde::Serialize;
use std::collections::BTreeSet;

/// The hidden marker the sticky comment starts with; the App finds its comment by it.
pub const COMMENT_MARKER: &str = "<!-- flakegate:comment -->";

fn todo(action: &str) -> String {
    match action {
        "re-probe" => "re-probe: run the tests on base again (`flakegate probe`) and update their ledger entries with what it shows".into(),
        "fix" => "fix: make the tests stable, then remove their freeze so they witness changes again".into(),
        "renew" => "renew: the freeze has expired; re-probe and renew the entry, or fix the test and remove it".into(),
        "add-test" => "add-test: add a stable test that executes the named lines".into(),
        // The template shows these as our own markdown: anything else is made inert.
        other => inert::text(other),
    }
}

#[derive(Serialize)]
struct PatchReasonCtx {
    code: String,
    blocks: bool,
    message: String,
    at: Vec<String>,
}

#[derive(Serialize)]
struct OwnerCtx {
    who: String,
    mention: bool,
    tests: Vec<String>,
    why: Vec<String>,
    todo: Vec<String>,
    lines: Vec<String>,
    /// Per test the flake history knew: what its judgement rests on ("test: failed 3 of 212 …").
    history: Vec<String>,
}

/// "`test`: failed 3 of 212 runs since 2026-11-02 (last: #481, run 9912, …)" per test of
/// `tests` the report's flake history judged.
fn history_of(report: &Report, tests: &BTreeSet<&str>) -> Vec<String> {
    let Some(h) = &report.history else {
        return Vec::new();
    };
    h.tests
        .iter()
        .filter(|s| tests.contains(&s.test.as_str()))
        .map(|s| format!("{}: {}", s.test, s.describe()))
        .collect()
}

#[derive(Serialize)]
struct ExpiredCtx {
    test: String,
    who: String,
    mention: bool,
    expires: String,
    days_past: i64,
    waived: bool,
}

/// Where the given tests are the only witnesses of blind lines: `path:ranges`.
fn lines_of(report: &Report, tests: &BTreeSet<&str>) -> Vec<String> {
    let mut out = Vec::new();
    for f in &report.files {
        let lines: Vec<u32> = f
            .lines
            .iter()
            .filter(|l| l.class.is_blind() && l.witnesses.iter().any(|w| tests.contains(w.test.as_str())))
            .map(|l| l.line)
            .collect::<BTreeSet<u32>>()
            .into_iter()
            .collect();
        if !lines.is_empty() {
            out.push(format!("{}:{}", f.path, line_ranges(&lines)));
        }
    }
    out
}

/// The sticky comment's body, or None when there is nothing to say and no
/// earlier comment to correct. `previous` is the body of the comment already
/// on the pull request, if any.
pub(crate) fn comment_body(report: &Report, config: &Config, previous: Option<&str>) -> Option<String> {
    let mut owners: Vec<OwnerCtx> = report
        .blind_owners
        .iter()
        .map(|o| {
            let handle = o.handle.as_deref().filter(|h| is_handle(h));
            let tests: BTreeSet<&str> = o.tests.iter().map(|t| t.as_str()).collect();
            let actions: BTreeSet<&str> = o.actions.iter().map(|a| a.as_str()).collect();
            let why: BTreeSet<&str> = o.why.iter().map(|w| w.as_str()).collect();
            OwnerCtx {
                who: handle.map(str::to_string).unwrap_or_else(|| unmentioned(&o.owner)),
                mention: handle.is_some(),
                lines: lines_of(report, &tests),
                history: history_of(report, &tests),
                tests: tests.into_iter().map(str::to_string).collect(),
                why: why.into_iter().map(str::to_string).collect(),
                todo: actions.into_iter().map(todo).collect(),
            }
        })
        .collect();
    let key = |o: &OwnerCtx| o.who.trim_start_matches('@').to_lowercase();
    owners.sort_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.tests.cmp(&b.tests)));
    let mut expired: Vec<ExpiredCtx> = report
        .expired
        .iter()
        .map(|e| {
            let handle = handle_for(&e.owner, config).filter(|h| is_handle(h));
            ExpiredCtx {
                test: e.test.clone(),
                mention: handle.is_some(),
                who: handle.unwrap_or_else(|| unmentioned(&e.owner)),
                expires: e.expires.clone(),
                days_past: e.days_past,
                waived: e.waived_by_probe,
            }
        })
        .collect();
    expired.sort_by(|a, b| a.test.cmp(&b.test).then_with(|| a.expires.cmp(&b.expires)));
    let unowned: Vec<String> = report
        .unowned_unstable
        .iter()
        .map(|t| t.as_str().to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let unowned_history = history_of(report, &unowned.iter().map(String::as_str).collect());

    // What the patch did to its own evidence: the agent author must undo it, or a reviewer
    // must accept it — either way it is said here, not only in the check run.
    let patch_reasons: Vec<PatchReasonCtx> = report
        .reasons
        .iter()
        .filter(|r| r.code.is_about_the_patchs_evidence())
        .map(|r| PatchReasonCtx {
            code: r.code.as_str().to_string(),
            blocks: r.verdict.blocks(),
            message: r.message.clone(),
            at: r.locations.iter().take(5).map(|l| l.to_string()).collect(),
        })
        .collect();

    let something_to_say =
        !owners.is_empty() || !expired.is_empty() || !unowned.is_empty() || !patch_reasons.is_empty();
    let state = if something_to_say {
        "blind"
    } else if previous.is_none() {
        return None;
    } else if report.verdict == Verdict::Pass {
        "gone"
    } else {
        "cleared"
    };

    let mut env = markdown::environment();
    env.add_template("comment.md.j2", markdown::COMMENT)
        .expect("the bundled comment template parses");
    let body = env
        .get_template("comment.md.j2")
        .and_then(|t| {
            t.render(minijinja::context! {
                marker => minijinja::Value::from_safe_string(COMMENT_MARKER.to_string()),
                verdict => report.verdict.as_str(),
                blocks => report.verdict.blocks(),
                head_sha => report.head_sha,
                state => state,
                owners => owners,
                expired => expired,
                unowned => unowned,
                unowned_history => unowned_history,
                patch_reasons => patch_reasons,
            })
        })
        .expect("the bundled comment template renders");
    let body = if body.ends_with('\n') { body } else { body + "\n" };
    Some(truncate(&body, OUTPUT_MAX_BYTES))
}

/// Whether the comment must be edited: bodies differ beyond trailing whitespace.
pub(crate) fn comment_changed(old: &str, new: &str) -> bool {
    let norm = |s: &str| -> Vec<String> { s.trim_end().lines().map(|l| l.trim_end().to_string()).collect() };
    norm(old) != norm(new)
}

#[cfg(test)]
mod tests;
