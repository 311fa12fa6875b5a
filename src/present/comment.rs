//! The one sticky pull-request comment's body: who is blind and what they are asked to do,
//! expired freezes, unowned unstable tests, and what the patch did to its own evidence — or
//! that the blind spot is gone. Nothing to say and no earlier comment: no comment.

use super::actions;
use super::markdown;
use super::words::{line_ranges, locations, truncate};
use crate::gate::config::{handle_for, Config};
use crate::gate::report::{Report, Verdict};
use crate::github::OUTPUT_MAX_BYTES;
use serde::Serialize;
use std::collections::BTreeSet;

/// The hidden marker the sticky comment starts with; the App finds its comment by it.
pub const COMMENT_MARKER: &str = "<!-- flakegate:comment -->";

#[derive(Serialize)]
struct PatchReasonCtx {
    code: &'static str,
    blocks: bool,
    message: String,
    at: Vec<String>,
}

#[derive(Serialize)]
struct OwnerCtx {
    /// Our markdown: the handle when mentioned, else the name in bold.
    who: String,
    tests: Vec<String>,
    why: Vec<String>,
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
    /// Our markdown: the handle when mentioned, else the name in bold.
    who: String,
    expires: String,
    days_past: i64,
    waived: bool,
    /// The probe shows the test failing every run on base: broken, not flaky.
    broken: bool,
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
/// on the pull request, if any; `check_run` the web address of the check run it summarises.
pub(crate) fn comment_body(
    report: &Report,
    config: &Config,
    previous: Option<&str>,
    check_run: Option<&str>,
) -> Option<String> {
    let owners_mentioned = actions::mention(config, actions::owners_block(report));
    let mut owners: Vec<OwnerCtx> = report
        .blind_owners
        .iter()
        .map(|o| {
            let tests: BTreeSet<&str> = o.tests.iter().map(|t| t.as_str()).collect();
            let why: BTreeSet<&str> = o.why.iter().map(|w| w.as_str()).collect();
            OwnerCtx {
                who: actions::who(&o.owner, o.handle.as_deref(), owners_mentioned),
                lines: lines_of(report, &tests),
                history: history_of(report, &tests),
                tests: tests.into_iter().map(str::to_string).collect(),
                why: why.into_iter().map(str::to_string).collect(),
            }
        })
        .collect();
    let key = |o: &OwnerCtx| o.who.trim_start_matches(['@', '*']).to_lowercase();
    owners.sort_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.tests.cmp(&b.tests)));
    let mut expired: Vec<ExpiredCtx> = report
        .expired
        .iter()
        .map(|e| {
            let handle = handle_for(&e.owner, config);
            let must_act = actions::expired_block(report) && !e.waived_by_probe;
            ExpiredCtx {
                test: e.test.clone(),
                who: actions::who(&e.owner, handle.as_deref(), actions::mention(config, must_act)),
                expires: e.expires.clone(),
                days_past: e.days_past,
                waived: e.waived_by_probe,
                broken: actions::broken_on_base(report, &e.test),
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
            code: r.code.as_str(),
            blocks: r.verdict.blocks(),
            message: r.message.clone(),
            at: locations(&r.locations, 5),
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
                headline => actions::headline(report),
                blocks => report.verdict.blocks(),
                check_run => minijinja::Value::from_safe_string(match check_run {
                    Some(url) => format!("[the `flakegate` check run]({})", url.replace(['(', ')', ' ', '<', '>'], "")),
                    None => "the `flakegate` check run".to_string(),
                }),
                head_sha => report.head_sha,
                state => state,
                owners => owners,
                actions => minijinja::Value::from_serialize(actions::actions(report, config)),
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
