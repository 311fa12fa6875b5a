//! The check run's fields, computed without any I/O: queued while evidence is awaited; completed
//! with conclusion, title, summary, the evidence record as text, annotations on blind lines
//! ([`super::annotations`]) and the buttons; INCONCLUSIVE when no verdict could be reached
//! (saying why, or, for an internal failure, only where an operator finds why); cancelled when
//! a merge group leaves the queue first. `worker::post` sends them.

use super::actions;
use super::annotations::annotations;
use super::links;
use super::markdown;
use super::record::json;
use super::words::{cut_at_word, cut_chars, truncate};
use crate::gate::config::{CaveatConclusion, Config};
use crate::gate::inert;
use crate::gate::report::{Report, Verdict};
use crate::github::event::RequestedAction;
use crate::github::{CheckAction, CheckOutput, CheckRunFields, CheckStatus, Conclusion, OUTPUT_MAX_BYTES, TITLE_LIMIT};

/// The check run's conclusion for a verdict: INCONCLUSIVE blocks exactly like FAIL.
pub fn conclusion(verdict: Verdict, config: &Config) -> Conclusion {
    match verdict {
        Verdict::Pass => Conclusion::Success,
        Verdict::PassWithCaveat => match config.policy.caveat_conclusion {
            CaveatConclusion::Success => Conclusion::Success,
            CaveatConclusion::Neutral => Conclusion::Neutral,
            CaveatConclusion::Failure => Conclusion::Failure,
        },
        Verdict::Inconclusive | Verdict::Fail => Conclusion::Failure,
    }
}

/// The check run for a judged head: conclusion, title, summary, the evidence
/// record as text, annotations (most important first) and the buttons.
pub fn completed(report: &Report, config: &Config, head: &str) -> CheckRunFields {
    let summary = match markdown::markdown(report, config, "check-summary.md.j2", None) {
        Ok(s) => s,
        // The bundled template always renders; never publish nothing if it does not.
        Err(e) => format!(
            "## {} — {}\n\n(the summary template failed to render: {e:#})\n",
            report.verdict,
            first_message(report)
        ),
    };
    let mut f = CheckRunFields::new(head, CheckStatus::Completed);
    f.conclusion = Some(conclusion(report.verdict, config));
    f.output = Some(CheckOutput {
        title: title(report),
        summary: truncate(&summary, OUTPUT_MAX_BYTES),
        text: Some(text(report, OUTPUT_MAX_BYTES)),
        annotations: annotations(report),
    });
    f.actions = actions();
    f
}

/// The check run while the head waits for its evidence.
pub fn queued(head: &str, config: &Config) -> CheckRunFields {
    let artifact = &config.evidence.artifact;
    let from = if config.evidence.workflows.is_empty() {
        "a workflow run".to_owned()
    } else {
        let names: Vec<String> = config.evidence.workflows.iter().map(|w| inert::code(w)).collect();
        format!("workflow {}", names.join(" or "))
    };
    let summary = format!(
        "Waiting for the evidence artifact {} from {from} on {}.\n\n\
         The [evidence workflow]({}) uploads it; the verdict follows when that run completes.",
        inert::code(artifact),
        inert::code(head),
        links::evidence_workflow()
    );
    let mut f = CheckRunFields::new(head, CheckStatus::Queued);
    f.output = Some(CheckOutput {
        title: cut_chars(
            &format!("waiting for evidence: artifact {}", inert::one_line(artifact, 100)),
            TITLE_LIMIT,
        ),
        summary,
        text: None,
        annotations: Vec::new(),
    });
    f
}

/// INCONCLUSIVE because the evaluation could not be done: blocks (`failure`) and says why.
pub fn inconclusive(head: &str, why: &str) -> CheckRunFields {
    // `why` may quote the pull request (a path, a parser's view of a line): inert, as a code block.
    let why_line = inert::one_line(why.lines().next().unwrap_or(why), 150);
    let summary = format!(
        "## INCONCLUSIVE — no verdict could be reached\n\n{}\n\n\
         flakegate never passes a change it could not judge. Fix the cause above, then use **Re-evaluate** or \
         re-run the evidence workflow.\n",
        inert::code_block(why)
    );
    let mut f = CheckRunFields::new(head, CheckStatus::Completed);
    f.conclusion = Some(Conclusion::Failure);
    f.output = Some(CheckOutput {
        title: format!("INCONCLUSIVE: {why_line}"),
        summary: truncate(&summary, OUTPUT_MAX_BYTES),
        text: None,
        annotations: Vec::new(),
    });
    f.actions = actions();
    f
}

/// INCONCLUSIVE because of an internal failure (the store, the network, GitHub, a bug): nothing
/// the repository did or can fix, and its text may name the App's insides, so the check run
/// does not show it. It says what the repository can do and names the delivery under which the
/// worker logged the failure, for the App's operators.
pub fn internal_error(head: &str, delivery_id: &str) -> CheckRunFields {
    let summary = format!(
        "## INCONCLUSIVE — no verdict could be reached\n\n\
         An internal error stopped flakegate before it reached a verdict: a failure on the App's side or \
         GitHub's, not a problem in this repository's config, ledger, patch or evidence.\n\n\
         flakegate never passes a change it could not judge. Use **Re-evaluate** or re-run the evidence workflow \
         to try again. If it keeps failing, give the App's operators the delivery id {}: their logs say what \
         went wrong under it.\n",
        inert::code(delivery_id)
    );
    let mut f = CheckRunFields::new(head, CheckStatus::Completed);
    f.conclusion = Some(Conclusion::Failure);
    f.output = Some(CheckOutput {
        title: cut_chars(
            &format!(
                "INCONCLUSIVE: an internal error stopped the evaluation (delivery {})",
                inert::one_line(delivery_id, 100)
            ),
            TITLE_LIMIT,
        ),
        summary: truncate(&summary, OUTPUT_MAX_BYTES),
        text: None,
        annotations: Vec::new(),
    });
    f.actions = actions();
    f
}

/// A merge group's check run still pending when the group left the queue (`reason`: merged,
/// dequeued, invalidated): completed as `cancelled`, which never counts as passing.
pub fn cancelled(head: &str, reason: Option<&str>) -> CheckRunFields {
    let reason = inert::one_line(reason.unwrap_or("destroyed"), 40);
    let summary = format!(
        "The merge group at {} left the merge queue ({reason}) before its evidence was judged, so \
         this check ends here without a verdict. A new merge group gets its own check run.\n",
        inert::code(head)
    );
    let mut f = CheckRunFields::new(head, CheckStatus::Completed);
    f.conclusion = Some(Conclusion::Cancelled);
    f.output = Some(CheckOutput {
        title: cut_chars(
            &format!("cancelled: the merge group left the queue ({reason})"),
            TITLE_LIMIT,
        ),
        summary: truncate(&summary, OUTPUT_MAX_BYTES),
        text: None,
        annotations: Vec::new(),
    });
    f
}

fn first_message(report: &Report) -> &str {
    report.first_reason().map(|r| r.message.as_str()).unwrap_or("")
}

/// Title (plain text, at most [`TITLE_LIMIT`] characters): the verdict and its deciding
/// reason's label, then the first action asked for; the label is cut at a word, the action kept.
pub fn title(report: &Report) -> String {
    let head = actions::headline(report);
    let config = Config::default();
    let todo = actions::actions(report, &config)
        .into_iter()
        .next()
        .map(|a| a.short)
        .unwrap_or_default();
    if todo.is_empty() {
        return cut_at_word(&head, TITLE_LIMIT);
    }
    let room = TITLE_LIMIT.saturating_sub(todo.chars().count() + 3);
    format!("{} — {todo}", cut_at_word(&head, room))
}

/// The intro of the check run's `text`, linking to the record's schema.
fn text_intro() -> String {
    format!(
        "The evidence record ([its schema]({})): the same JSON `flakegate check --format json` prints, for an agent to act on.\n\n",
        links::doc("evidence-record.md", None)
    )
}

/// The check run's `text`: a short intro and the evidence record in a fenced
/// JSON block, at most `limit` bytes. When the record does not fit, a compact
/// record (`verdict` and `reasons`) takes its place, with a note saying so.
pub fn text(report: &Report, limit: usize) -> String {
    let record = json(report);
    let fence = json_fence(&record);
    let full = format!("{}{fence}json\n{record}{fence}\n", text_intro());
    if full.len() <= limit {
        return full;
    }
    let note = format!(
        "The full evidence record is {} bytes, more than GitHub allows here; below is a compact record with the verdict and reasons only. Run `flakegate check --format json` on the evidence for all of it.\n\n",
        record.len()
    );
    let mut reasons: Vec<serde_json::Value> = report
        .reasons
        .iter()
        .map(|r| {
            serde_json::json!({
                "code": r.code.as_str(),
                "verdict": r.verdict,
                "message": r.message,
            })
        })
        .collect();
    let total = reasons.len();
    loop {
        let compact = serde_json::json!({
            "schema_version": report.schema_version,
            "truncated": true,
            "verdict": report.verdict,
            "reasons": reasons,
            "reasons_omitted": total - reasons.len(),
            "base_sha": report.base_sha,
            "head_sha": report.head_sha,
        });
        let body = serde_json::to_string_pretty(&compact).expect("JSON values serialise");
        let fence = json_fence(&body);
        let out = format!("{note}{fence}json\n{body}\n{fence}\n");
        if out.len() <= limit || reasons.is_empty() {
            return out;
        }
        reasons.pop();
    }
}

/// The fence of a code block holding `json`: longer than any backtick run inside (a string
/// from the pull request may hold ```` ``` ````, which would end a shorter fence and let the
/// rest render as markdown). JSON strings escape newlines, so no line inside starts a fence.
fn json_fence(json: &str) -> String {
    let longest = json.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// The buttons on the check run.
fn actions() -> Vec<CheckAction> {
    vec![
        CheckAction {
            label: "Re-run evidence".into(),
            description: "Re-run the evidence workflow".into(),
            identifier: RequestedAction::Rerun.identifier().into(),
        },
        CheckAction {
            label: "Re-evaluate".into(),
            description: "Judge the latest evidence again".into(),
            identifier: RequestedAction::Reevaluate.identifier().into(),
        },
    ]
}

#[cfg(test)]
mod tests;
