//! What the App publishes, computed without any I/O: the check run's fields
//! (queued while evidence is awaited; completed with conclusion, title, summary,
//! text with the evidence record, annotations on blind lines and action buttons;
//! INCONCLUSIVE when no verdict could be reached) and the body of the one sticky
//! pull-request comment. The GitHub client only sends these.

use crate::gate::config::handle_for;
use crate::gate::config::{is_handle, CaveatConclusion, Config};
use crate::gate::inert;
use crate::gate::report::{FileEvidence, FileReport, LineClass, LineWitness, Report, Verdict, WitnessStatus};
use crate::github::event::RequestedAction;
use crate::github::{
    Annotation, AnnotationLevel, CheckAction, CheckOutput, CheckRunFields, CheckStatus, Conclusion,
    ANNOTATION_MESSAGE_MAX_BYTES, ANNOTATION_RAW_DETAILS_MAX_BYTES, ANNOTATION_TITLE_MAX_CHARS, OUTPUT_MAX_BYTES,
    TITLE_LIMIT,
};
use crate::render;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The hidden marker the sticky comment starts with; the App finds its comment by it.
pub const COMMENT_MARKER: &str = "<!-- flakegate:comment -->";

/// Witnesses named in one annotation's message before "and N more".
const WITNESSES_NAMED: usize = 10;

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
    let summary = match render::markdown(report, "check-summary.md.j2", None) {
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
        summary: render::truncate(&summary, OUTPUT_MAX_BYTES),
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
         The evidence workflow (see `templates/workflows/flakegate-evidence.yml`) uploads it; the verdict follows \
         when that run completes.",
        inert::code(artifact),
        inert::code(head)
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
        summary: render::truncate(&summary, OUTPUT_MAX_BYTES),
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
        summary: render::truncate(&summary, OUTPUT_MAX_BYTES),
        text: None,
        annotations: Vec::new(),
    });
    f
}

fn first_message(report: &Report) -> &str {
    report.first_reason().map(|r| r.message.as_str()).unwrap_or("")
}

/// Cut `s` to at most `max` characters, ending with `…` when cut.
fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Title: the verdict and the first reason, at most [`TITLE_LIMIT`] characters.
pub fn title(report: &Report) -> String {
    // A plain-text field: one line.
    let first = inert::one_line(first_message(report), TITLE_LIMIT);
    let t = if first.is_empty() {
        report.verdict.to_string()
    } else {
        format!("{}: {first}", report.verdict)
    };
    cut_chars(&t, TITLE_LIMIT)
}

const TEXT_INTRO: &str = "The evidence record (schema in `docs/evidence-record.md`): the same JSON `flakegate check --format json` prints, for an agent to act on.\n\n";

/// The check run's `text`: a short intro and the evidence record in a fenced
/// JSON block, at most `limit` bytes. When the record does not fit, a compact
/// record (`verdict` and `reasons`) takes its place, with a note saying so.
pub fn text(report: &Report, limit: usize) -> String {
    let record = render::json(report);
    let fence = json_fence(&record);
    let full = format!("{TEXT_INTRO}{fence}json\n{record}{fence}\n");
    if full.len() <= limit {
        return full;
    }
    let note = format!(
        "The full evidence record is {} bytes, more than GitHub allows here; below is a compact record with the verdict and reasons only. Run `flakegate check --format json` on the evidence for all of it.\n\n",
        render::json(report).len()
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

fn status_word(s: WitnessStatus) -> &'static str {
    match s {
        WitnessStatus::Stable => "stable",
        WitnessStatus::Frozen => "frozen",
        WitnessStatus::Unstable => "unstable",
        WitnessStatus::FailingOnBase => "fails on base",
        WitnessStatus::Unjoined => "no head result under this id",
        WitnessStatus::HeadFlaky => "flaky on head",
    }
}

/// Sorted `(test, status)` pairs of a line's witnesses.
type WitnessKey = Vec<(String, WitnessStatus)>;

/// A line's witnesses as sorted `(test, status)` pairs: the merge key.
fn witness_key(ws: &[LineWitness]) -> WitnessKey {
    let set: BTreeSet<(String, WitnessStatus)> = ws.iter().map(|w| (w.test.as_str().to_string(), w.status)).collect();
    set.into_iter().collect()
}

fn name_witnesses(key: &[(String, WitnessStatus)]) -> String {
    let mut names: Vec<String> = key
        .iter()
        .take(WITNESSES_NAMED)
        .map(|(t, s)| format!("`{t}` ({})", status_word(*s)))
        .collect();
    if key.len() > WITNESSES_NAMED {
        names.push(format!("and {} more", key.len() - WITNESSES_NAMED));
    }
    names.join(", ")
}

fn span(start: u32, end: u32) -> String {
    if start == end {
        format!("line {start}")
    } else {
        format!("lines {start}-{end}")
    }
}

/// Ranges of consecutive lines of `class` in `f` with the same witnesses.
fn runs(f: &FileReport, lines: &[u32]) -> Vec<(u32, u32, WitnessKey)> {
    let by_line: BTreeMap<u32, &[LineWitness]> = f.lines.iter().map(|l| (l.line, l.witnesses.as_slice())).collect();
    let sorted: BTreeSet<u32> = lines.iter().copied().collect();
    let mut out: Vec<(u32, u32, WitnessKey)> = Vec::new();
    for line in sorted {
        let key = witness_key(by_line.get(&line).copied().unwrap_or(&[]));
        match out.last_mut() {
            Some((_, end, k)) if *end + 1 == line && *k == key => *end = line,
            _ => out.push((line, line, key)),
        }
    }
    out
}

/// Annotations on the blind lines, most important first: frozen-only lines,
/// then uncovered, then excluded, then blind files, then attributed blind
/// deletions; within a class in file order, then by line.
pub fn annotations(report: &Report) -> Vec<Annotation> {
    let blocks = report.verdict.blocks();
    let (mut out, caveats) = patch_reason_annotations(report);
    for f in &report.files {
        for (start, end, key) in runs(f, &f.frozen_only_lines) {
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: start,
                end_line: end,
                annotation_level: if blocks {
                    AnnotationLevel::Failure
                } else {
                    AnnotationLevel::Warning
                },
                title: Some(format!("Frozen-only: {}", span(start, end))),
                message: format!(
                    "Only tests that are not evidence execute {}: {}. A green run of them says nothing about this change. Add a stable test that executes it, or have the owners fix the tests and remove their freeze.",
                    span(start, end),
                    if key.is_empty() { "no test executes this line".to_string() } else { name_witnesses(&key) }
                ),
            });
        }
    }
    for f in &report.files {
        for (start, end, _) in runs(f, &f.uncovered_lines) {
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: start,
                end_line: end,
                annotation_level: AnnotationLevel::Warning,
                title: Some(format!("Uncovered: {}", span(start, end))),
                message: format!(
                    "No test executes this line ({} changed by this patch). Add a test that exercises it.",
                    span(start, end)
                ),
            });
        }
    }
    for f in &report.files {
        for (start, end, key) in runs(f, &f.excluded_lines) {
            let who = if key.is_empty() {
                String::new()
            } else {
                format!(" (recorded witnesses: {})", name_witnesses(&key))
            };
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: start,
                end_line: end,
                annotation_level: AnnotationLevel::Warning,
                title: Some(format!("Excluded from coverage: {}", span(start, end))),
                message: format!(
                    "{} is excluded from coverage measurement (for example `# pragma: no cover`), so no test can witness it{who}. Remove the exclusion and cover it with a test.",
                    capitalise(&span(start, end))
                ),
            });
        }
    }
    for f in &report.files {
        if f.evidence == FileEvidence::Blind {
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: 1,
                end_line: 1,
                annotation_level: AnnotationLevel::Warning,
                title: Some("Blind file".into()),
                message: format!(
                    "No test can witness this file's change: {}. Make it measurable (for example include it in coverage) or list it in `policy.no_evidence_paths` if it truly needs no evidence.",
                    f.blind_reason.as_deref().unwrap_or("no evidence can exist for it")
                ),
            });
        }
    }
    for f in &report.files {
        for d in &f.deletions {
            let Some(class) = d.class.filter(|c| d.attributed && c.is_blind()) else {
                continue;
            };
            let line = d.after.max(1);
            let old_end = d.old_start + d.old_count.saturating_sub(1);
            let how = match class {
                LineClass::FrozenOnly => "only tests that are not evidence execute the lines around it",
                LineClass::Excluded => "the lines around it are excluded from coverage",
                _ => "no test executes the lines around it",
            };
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: line,
                end_line: line,
                annotation_level: AnnotationLevel::Notice,
                title: Some("Blind deletion".into()),
                message: format!(
                    "Old lines {}-{old_end} were deleted here and {how}. Add a stable test that executes this code.",
                    d.old_start
                ),
            });
        }
    }
    out.extend(caveats);
    out.into_iter().map(within_limits).collect()
}

/// What ends an annotation field cut to GitHub's limit.
const ANNOTATION_CUT: &str = "\n… cut here: GitHub takes at most 64 KiB here; the check run's summary has the rest.";

/// `a` within GitHub's limits on an annotation (a reason may quote a changed line of any
/// length): message and raw details cut at a character boundary with a note, the title cut
/// with `…`.
fn within_limits(mut a: Annotation) -> Annotation {
    a.message = inert::cap_bytes(&a.message, ANNOTATION_MESSAGE_MAX_BYTES, ANNOTATION_CUT);
    a.raw_details = a
        .raw_details
        .map(|r| inert::cap_bytes(&r, ANNOTATION_RAW_DETAILS_MAX_BYTES, ANNOTATION_CUT));
    a.title = a.title.map(|t| cut_chars(&t, ANNOTATION_TITLE_MAX_CHARS));
    a
}

/// Annotations at the places a trust rule or weakening signal names (a weakened assert, an
/// edited workflow, a self-witnessed line): the blocking ones, which lead the list, and the
/// caveats, which close it. Only places in files the patch leaves in the head tree can be
/// annotated; the rest (a deleted test file, the evidence's own meta.json) are in the summary.
fn patch_reason_annotations(report: &Report) -> (Vec<Annotation>, Vec<Annotation>) {
    let annotatable: BTreeSet<&str> = report
        .files
        .iter()
        .filter(|f| f.status != crate::gate::patch::FileStatus::Deleted)
        .map(|f| f.path.as_str())
        .collect();
    let (mut blocking, mut caveats) = (Vec::new(), Vec::new());
    for r in report.reasons.iter().filter(|r| r.code.is_about_the_patchs_evidence()) {
        let mut seen = BTreeSet::new();
        for l in &r.locations {
            if !annotatable.contains(l.file.as_str()) {
                continue;
            }
            let line = l.line.unwrap_or(1).max(1) as u32;
            if !seen.insert((l.file.clone(), line)) {
                continue;
            }
            let a = Annotation {
                path: l.file.clone(),
                raw_details: None,
                start_line: line,
                end_line: line,
                annotation_level: if r.verdict.blocks() {
                    AnnotationLevel::Failure
                } else {
                    AnnotationLevel::Warning
                },
                title: Some(format!(
                    "{}: {}",
                    r.code.as_str(),
                    if l.line.is_some() {
                        format!("line {line}")
                    } else {
                        "file".into()
                    }
                )),
                message: r.message.clone(),
            };
            if r.verdict.blocks() {
                blocking.push(a);
            } else {
                caveats.push(a);
            }
        }
    }
    (blocking, caveats)
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A name shown in the comment without notifying anyone: every `@` and `*` dropped (the
/// template shows it bold, as inert text).
fn unmentioned(name: &str) -> String {
    let clean: String = name.chars().filter(|&c| c != '@' && c != '*').collect();
    clean.trim().to_string()
}

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
            out.push(format!("{}:{}", f.path, render::line_ranges(&lines)));
        }
    }
    out
}

/// The sticky comment's body, or None when there is nothing to say and no
/// earlier comment to correct. `previous` is the body of the comment already
/// on the pull request, if any.
pub fn comment_body(report: &Report, config: &Config, previous: Option<&str>) -> Option<String> {
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

    let mut env = render::environment();
    env.add_template("comment.md.j2", render::COMMENT)
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
                patch_reasons => patch_reasons,
            })
        })
        .expect("the bundled comment template renders");
    let body = if body.ends_with('\n') { body } else { body + "\n" };
    Some(render::truncate(&body, OUTPUT_MAX_BYTES))
}

/// Whether the comment must be edited: bodies differ beyond trailing whitespace.
pub fn comment_changed(old: &str, new: &str) -> bool {
    let norm = |s: &str| -> Vec<String> { s.trim_end().lines().map(|l| l.trim_end().to_string()).collect() };
    norm(old) != norm(new)
}

/// One pull request's line in the table of a head several open pull requests share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedHeadLine<'a> {
    pub pr: u64,
    /// The base branch (a ref name: may hold backticks or `<`, never newlines).
    pub base_ref: &'a str,
    pub base_sha: &'a str,
    pub verdict: &'a str,
}

/// The check run of a head that several open pull requests share: `decisive`'s fields (the
/// worst verdict among them, which the check run shows), with every pull request's verdict
/// and base listed first. One pull request: `fields` unchanged.
pub fn shared_head(mut fields: CheckRunFields, lines: &[SharedHeadLine<'_>], decisive: u64) -> CheckRunFields {
    if lines.len() <= 1 {
        return fields;
    }
    let mut table = format!(
        "**{} open pull requests share this head commit.** The check shows the worst of their verdicts, that of \
         #{decisive}; each pull request's comment is about that pull request only.\n\n\
         | pull request | base | verdict |\n| --- | --- | --- |\n",
        lines.len()
    );
    for l in lines {
        let short: String = l.base_sha.chars().take(12).collect();
        table.push_str(&format!(
            "| #{} | {} {} | {} |\n",
            l.pr,
            inert::code_cell(l.base_ref),
            inert::code_cell(&short),
            inert::code_cell(l.verdict)
        ));
    }
    table.push('\n');
    if let Some(out) = &mut fields.output {
        out.summary = render::truncate(&format!("{table}{}", out.summary), OUTPUT_MAX_BYTES);
    }
    fields
}

// ---- the expired-freezes issue --------------------------------------------------------------

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

/// The body of the expired-freezes issue for `notice`, read from `ledger` on `branch` on `today`.
pub fn expired_freezes_body(
    notice: &crate::gate::expiry::ExpiryNotice,
    ledger: &str,
    branch: &str,
    today: chrono::NaiveDate,
) -> String {
    let entries: Vec<ExpiringCtx> = notice
        .entries
        .iter()
        .map(|e| ExpiringCtx {
            test: e.test.clone(),
            mention: e.handle.is_some(),
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
        .filter(|h| is_handle(h))
        .collect();
    let mut env = render::environment();
    env.add_template("expired-freezes.md.j2", render::EXPIRED_FREEZES)
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
                unmapped => notice.entries.iter().any(|e| e.handle.is_none()),
                mentions => mentions,
                entries => entries,
            })
        })
        .expect("the bundled expired-freezes template renders");
    let body = if body.ends_with('\n') { body } else { body + "\n" };
    render::truncate(&body, OUTPUT_MAX_BYTES)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::EvidenceSources;
    use crate::gate::report::{BlindOwner, DeletionReport, LineReport};
    use crate::gate::{GateInput, TestId};
    use crate::github::{ACTION_DESCRIPTION_LIMIT, ACTION_IDENTIFIER_LIMIT, ACTION_LABEL_LIMIT, MAX_ACTIONS};
    use std::path::PathBuf;

    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    #[test]
    fn a_shared_head_lists_every_pull_request_with_inert_base_names() {
        let mut f = inconclusive("abc", "why");
        let hostile = "x``y|z<img src=a>\n## PASS";
        let lines = [
            SharedHeadLine {
                pr: 3,
                base_ref: "main",
                base_sha: "0123456789abcdef",
                verdict: "INCONCLUSIVE",
            },
            SharedHeadLine {
                pr: 4,
                base_ref: hostile,
                base_sha: "fedcba9876543210",
                verdict: "PASS",
            },
        ];
        let title = f.output.as_ref().unwrap().title.clone();
        f = shared_head(f, &lines, 3);
        let out = f.output.unwrap();
        assert_eq!(out.title, title, "the title is the decisive verdict's");
        let table: Vec<&str> = out.summary.lines().filter(|l| l.starts_with("| #")).collect();
        assert_eq!(table.len(), 2, "{}", out.summary);
        assert_eq!(table[0], "| #3 | `main` `0123456789ab` | `INCONCLUSIVE` |");
        // One line, the backticks fenced by a longer run, the pipe escaped.
        assert_eq!(
            table[1],
            "| #4 | ```x``y\\|z<img src=a>⏎## PASS``` `fedcba987654` | `PASS` |"
        );
        assert!(out.summary.contains("that of #3"));
        // One pull request: unchanged.
        let one = inconclusive("abc", "why");
        assert_eq!(shared_head(one.clone(), &lines[..1], 3), one);
    }

    /// The evidence record's block in `text` is fenced past any backtick run a reason quotes.
    #[test]
    fn the_evidence_record_cannot_close_its_own_block() {
        let mut r = case("frozen_only");
        r.reasons[0].message = "adds a sleep: `time.sleep(1)  # ```` @octocat <img src=x>`".into();
        let t = text(&r, OUTPUT_MAX_BYTES);
        assert!(t.contains("\n`````json\n"), "{t}");
        assert!(t.ends_with("\n`````\n"), "{t}");
        assert_eq!(json_block(&t), serde_json::to_value(&r).unwrap());
        let compact = text(&r, 2000);
        assert!(compact.contains("`````json\n"), "{compact}");
    }

    /// An error that quotes the pull request is shown in a code block nothing inside can close;
    /// the title is one line.
    #[test]
    fn an_inconclusive_reason_is_quoted_inertly() {
        let why = "the patch: pr.diff:3: found \"<img src=x>\"\n```\n## ✅ PASS @octocat";
        let f = inconclusive("abc", why);
        let out = f.output.unwrap();
        assert!(
            out.title.starts_with("INCONCLUSIVE: the patch: pr.diff:3"),
            "{}",
            out.title
        );
        assert!(!out.title.contains('\n'));
        assert!(
            out.summary
                .contains("\n````text\nthe patch: pr.diff:3: found \"<img src=x>\"\n```\n## ✅ PASS @octocat\n````\n"),
            "{}",
            out.summary
        );
        let q = queued("abc", &Config::default());
        assert!(q.output.unwrap().summary.contains("`abc`"));
    }

    /// Run the real gate on a committed fixture case, as `tests/cli/check.rs` does.
    fn case_with(name: &str, config: &Config) -> Report {
        report_of(&fixtures().join("cases").join(name), config)
    }

    /// The gate on a fixture directory (a case, or an entry of the agent-proofing corpus).
    fn report_of(dir: &std::path::Path, config: &Config) -> Report {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap()).unwrap();
        let today = chrono::NaiveDate::parse_from_str(meta["today"].as_str().unwrap(), "%Y-%m-%d").unwrap();
        let patch_bytes = std::fs::read(dir.join("diff.patch")).unwrap();
        let patch = crate::gate::patch::parse_patch("diff.patch", &patch_bytes).unwrap();
        let own = dir.join("ledger.json");
        let ledger_path = if own.is_file() {
            own
        } else {
            fixtures().join("project/.github/flake-ledger.json")
        };
        let ledger_text = std::fs::read_to_string(&ledger_path).unwrap();
        let ledger =
            crate::gate::ledger::parse_ledger("flake-ledger.json", &ledger_text, config.policy.max_freeze_days);
        let ev = dir.join("evidence");
        let sources = EvidenceSources {
            dir: None,
            coverage: Some(ev.join("coverage.json")),
            results: vec![ev.join("results")],
            probe: Some(fixtures().join("probe/reportlog")),
            meta: None,
        };
        let loaded = crate::evidence::load_evidence(&sources, &patch, ledger.as_ref().ok(), &Default::default());
        let input = GateInput {
            patch: &patch,
            ledger: &ledger,
            config,
            evidence: &loaded.evidence,
            today,
            base_sha: None,
            head_sha: Some("0123456789abcdef0123456789abcdef01234567".into()),
            inputs: Vec::new(),
            workflow: None,
        };
        crate::gate::evaluate(&input)
    }

    /// The completed check run's fields, as the tests read them.
    struct Out {
        title: String,
        summary: String,
        text: String,
        conclusion: Conclusion,
        annotations: Vec<Annotation>,
        actions: Vec<CheckAction>,
    }

    fn check_output(report: &Report, config: &Config) -> Out {
        let f = completed(report, config, "0123456789abcdef0123456789abcdef01234567");
        let o = f.output.expect("a completed check run has output");
        Out {
            title: o.title,
            summary: o.summary,
            text: o.text.expect("and the record as text"),
            conclusion: f.conclusion.expect("and a conclusion"),
            annotations: o.annotations,
            actions: f.actions,
        }
    }

    fn case(name: &str) -> Report {
        case_with(name, &Config::default())
    }

    fn with_caveat(c: CaveatConclusion) -> Config {
        let mut config = Config::default();
        config.policy.caveat_conclusion = c;
        config
    }

    #[test]
    fn conclusion_per_verdict_and_caveat_setting() {
        let d = Config::default();
        assert_eq!(conclusion(Verdict::Pass, &d), Conclusion::Success);
        assert_eq!(conclusion(Verdict::PassWithCaveat, &d), Conclusion::Success);
        assert_eq!(conclusion(Verdict::Inconclusive, &d), Conclusion::Failure);
        assert_eq!(conclusion(Verdict::Fail, &d), Conclusion::Failure);
        for (c, want) in [
            (CaveatConclusion::Success, Conclusion::Success),
            (CaveatConclusion::Neutral, Conclusion::Neutral),
            (CaveatConclusion::Failure, Conclusion::Failure),
        ] {
            let config = with_caveat(c);
            assert_eq!(conclusion(Verdict::PassWithCaveat, &config), want, "{c:?}");
            assert_eq!(conclusion(Verdict::Pass, &config), Conclusion::Success, "{c:?}");
            assert_eq!(conclusion(Verdict::Inconclusive, &config), Conclusion::Failure, "{c:?}");
            assert_eq!(conclusion(Verdict::Fail, &config), Conclusion::Failure, "{c:?}");
        }
    }

    #[test]
    fn real_cases_get_their_conclusions() {
        for (name, verdict, want) in [
            ("all_stable", Verdict::Pass, Conclusion::Success),
            ("some_frozen", Verdict::PassWithCaveat, Conclusion::Success),
            ("frozen_only", Verdict::Inconclusive, Conclusion::Failure),
            ("failed", Verdict::Fail, Conclusion::Failure),
        ] {
            let r = case(name);
            assert_eq!(r.verdict, verdict, "{name}");
            let out = check_output(&r, &Config::default());
            assert_eq!(out.conclusion, want, "{name}");
            assert!(out.title.starts_with(verdict.as_str()), "{name}: {}", out.title);
        }
        let r = case_with("some_frozen", &with_caveat(CaveatConclusion::Neutral));
        assert_eq!(
            check_output(&r, &with_caveat(CaveatConclusion::Neutral)).conclusion,
            Conclusion::Neutral
        );
    }

    #[test]
    fn action_and_title_limits() {
        let acts = actions();
        assert!(acts.len() <= MAX_ACTIONS);
        let ids: Vec<&str> = acts.iter().map(|a| a.identifier.as_str()).collect();
        assert_eq!(
            ids,
            [
                RequestedAction::Rerun.identifier(),
                RequestedAction::Reevaluate.identifier()
            ]
        );
        for a in &acts {
            assert!(a.label.chars().count() <= ACTION_LABEL_LIMIT, "{a:?}");
            assert!(a.description.chars().count() <= ACTION_DESCRIPTION_LIMIT, "{a:?}");
            assert!(a.identifier.chars().count() <= ACTION_IDENTIFIER_LIMIT, "{a:?}");
            assert!(!a.label.is_empty() && !a.description.is_empty());
        }
        let mut r = case("some_frozen");
        r.reasons[0].message = "é".repeat(500);
        let t = title(&r);
        assert_eq!(t.chars().count(), TITLE_LIMIT);
        assert!(t.starts_with("PASS_WITH_CAVEAT: é") && t.ends_with('…'));
        r.reasons.clear();
        assert_eq!(title(&r), "PASS_WITH_CAVEAT");
    }

    #[test]
    fn check_output_snapshots() {
        for name in ["some_frozen", "frozen_only", "uncovered"] {
            let out = check_output(&case(name), &Config::default());
            insta::with_settings!({snapshot_path => "../tests/snapshots", prepend_module_to_snapshot => true}, {
                insta::assert_json_snapshot!(format!("check_{name}"), serde_json::json!({
                    "title": out.title,
                    "conclusion": out.conclusion,
                    "annotations": out.annotations,
                    "actions": out.actions,
                }));
            });
        }
    }

    #[test]
    fn text_embeds_the_evidence_record() {
        let r = case("frozen_only");
        let out = check_output(&r, &Config::default());
        let json = json_block(&out.text);
        assert_eq!(json, serde_json::to_value(&r).unwrap());
        assert!(out.summary.contains("INCONCLUSIVE"));
    }

    fn json_block(text: &str) -> serde_json::Value {
        let start = text.find("```json\n").expect("a json block") + "```json\n".len();
        let end = start + text[start..].find("\n```").expect("the block closes");
        serde_json::from_str(&text[start..end]).expect("the block is JSON")
    }

    /// A report with tens of thousands of blind lines.
    fn huge() -> Report {
        let mut r = case("frozen_only");
        let f = r.files[0].clone();
        r.files.clear();
        for i in 0..400 {
            let mut f = f.clone();
            f.path = format!("src/shop/generated_{i:03}_é.py");
            f.frozen_only_lines = (1..=200).collect();
            f.lines = (1..=200)
                .map(|line| LineReport {
                    line,
                    class: LineClass::FrozenOnly,
                    witnesses: f.lines[0].witnesses.clone(),
                })
                .collect();
            r.files.push(f);
        }
        r.notes = (0..2000).map(|i| format!("note {i}: {}", "ü".repeat(40))).collect();
        r
    }

    #[test]
    fn a_huge_report_is_cut_below_the_limit_and_stays_json() {
        let r = huge();
        assert!(render::json(&r).len() > OUTPUT_MAX_BYTES);
        let out = check_output(&r, &Config::default());
        assert!(out.summary.len() <= OUTPUT_MAX_BYTES, "{}", out.summary.len());
        assert!(out.summary.contains("cut here"));
        assert!(out.text.len() <= OUTPUT_MAX_BYTES, "{}", out.text.len());
        assert!(out.text.contains("more than GitHub allows"));
        let compact = json_block(&out.text);
        assert_eq!(compact["verdict"], "INCONCLUSIVE");
        assert_eq!(compact["truncated"], true);
        assert_eq!(compact["reasons"][0]["code"], "frozen_only");
        // Consecutive lines with the same witnesses merge: one annotation per file.
        assert_eq!(out.annotations.len(), 400);
        assert_eq!((out.annotations[0].start_line, out.annotations[0].end_line), (1, 200));

        // Even huge reasons leave valid JSON within the limit.
        let mut r = r;
        r.reasons = (0..200)
            .map(|i| crate::gate::Reason::new(crate::gate::ReasonCode::FrozenOnly, format!("{i} {}", "x".repeat(1000))))
            .collect();
        let t = text(&r, OUTPUT_MAX_BYTES);
        assert!(t.len() <= OUTPUT_MAX_BYTES);
        let compact = json_block(&t);
        assert!(compact["reasons_omitted"].as_u64().unwrap() > 0);
        assert!(!compact["reasons"].as_array().unwrap().is_empty());
    }

    /// A reason quoting a 70 KB changed line: the annotation at its place stays within GitHub's
    /// 64 KiB, cut on a character boundary with a note.
    #[test]
    fn a_huge_quoted_line_is_cut_to_githubs_annotation_limit() {
        let mut r = report_of(&fixtures().join("corpus/adv_sleep"), &Config::default());
        let reason = r
            .reasons
            .iter_mut()
            .find(|x| x.code == crate::gate::ReasonCode::WeakenedTest)
            .unwrap();
        reason.message = format!("adds a sleep: `time.sleep(0.01)  # {}`", "é".repeat(35_000));
        let a = annotations(&r);
        let w = a
            .iter()
            .find(|a| a.title.as_deref().is_some_and(|t| t.starts_with("weakened_test")))
            .unwrap();
        assert!(w.message.len() <= ANNOTATION_MESSAGE_MAX_BYTES, "{}", w.message.len());
        assert!(
            w.message.len() > ANNOTATION_MESSAGE_MAX_BYTES - 200,
            "{}",
            w.message.len()
        );
        assert!(w.message.ends_with(ANNOTATION_CUT));
        let mut long = w.clone();
        long.title = Some("t".repeat(300));
        long.raw_details = Some("x".repeat(70_000));
        let long = within_limits(long);
        assert_eq!(long.title.unwrap().chars().count(), ANNOTATION_TITLE_MAX_CHARS);
        assert!(long.raw_details.unwrap().len() <= ANNOTATION_RAW_DETAILS_MAX_BYTES);
    }

    #[test]
    fn annotations_are_ordered_by_importance_and_merged() {
        let mut r = case("frozen_only");
        let base = r.files[0].clone();
        let w = base.lines[0].witnesses.clone();
        let line = |line: u32, class: LineClass, witnesses: Vec<LineWitness>| LineReport { line, class, witnesses };
        let mut other = w.clone();
        other[0].test = TestId::new("tests/test_other.py::test_x");
        let mut a = base.clone();
        a.path = "a.py".into();
        a.uncovered_lines = vec![1, 2, 3, 7];
        a.excluded_lines = vec![9];
        a.frozen_only_lines = vec![20, 21, 22, 30];
        a.lines = vec![
            line(1, LineClass::Uncovered, vec![]),
            line(2, LineClass::Uncovered, vec![]),
            line(3, LineClass::Uncovered, vec![]),
            line(7, LineClass::Uncovered, vec![]),
            line(9, LineClass::Excluded, vec![]),
            line(20, LineClass::FrozenOnly, w.clone()),
            line(21, LineClass::FrozenOnly, w.clone()),
            line(22, LineClass::FrozenOnly, other.clone()),
            line(30, LineClass::FrozenOnly, w.clone()),
        ];
        a.deletions = vec![
            DeletionReport {
                old_start: 40,
                old_count: 2,
                after: 39,
                attributed: true,
                class: Some(LineClass::Uncovered),
            },
            DeletionReport {
                old_start: 50,
                old_count: 1,
                after: 49,
                attributed: true,
                class: Some(LineClass::Stable),
            },
        ];
        let mut b = base.clone();
        b.path = "b.py".into();
        b.evidence = FileEvidence::Blind;
        b.blind_reason = Some("not measured by coverage".into());
        b.frozen_only_lines = vec![5];
        b.lines = vec![line(5, LineClass::FrozenOnly, w.clone())];
        r.files = vec![a, b];
        let got: Vec<(String, u32, u32, AnnotationLevel, String)> = annotations(&r)
            .into_iter()
            .map(|x| {
                let kind = x.title.as_deref().unwrap().split(':').next().unwrap().to_string();
                (x.path, x.start_line, x.end_line, x.annotation_level, kind)
            })
            .collect();
        use AnnotationLevel::*;
        let want: Vec<(String, u32, u32, AnnotationLevel, String)> = [
            ("a.py", 20, 21, Failure, "Frozen-only"),
            ("a.py", 22, 22, Failure, "Frozen-only"),
            ("a.py", 30, 30, Failure, "Frozen-only"),
            ("b.py", 5, 5, Failure, "Frozen-only"),
            ("a.py", 1, 3, Warning, "Uncovered"),
            ("a.py", 7, 7, Warning, "Uncovered"),
            ("a.py", 9, 9, Warning, "Excluded from coverage"),
            ("b.py", 1, 1, Warning, "Blind file"),
            ("a.py", 39, 39, Notice, "Blind deletion"),
        ]
        .into_iter()
        .map(|(p, s, e, l, k)| (p.to_string(), s, e, l, k.to_string()))
        .collect();
        assert_eq!(got, want);
        let all = annotations(&r);
        assert!(all[0].message.contains("tests/test_refunds.py::test_gateway_retry"));
        assert!(all[4].message.contains("No test executes this line"));

        // Not blocking: frozen-only lines are warnings.
        r.verdict = Verdict::PassWithCaveat;
        assert_eq!(annotations(&r)[0].annotation_level, Warning);
    }

    fn snapshot_comment(name: &str, body: &str) {
        insta::with_settings!({snapshot_path => "../tests/snapshots", prepend_module_to_snapshot => true}, {
            insta::assert_snapshot!(name.to_string(), body);
        });
    }

    #[test]
    fn comment_snapshots() {
        for name in ["some_frozen", "frozen_only", "expired"] {
            let body = comment_body(&case(name), &Config::default(), None).expect(name);
            assert!(body.starts_with(COMMENT_MARKER), "{name}");
            snapshot_comment(&format!("comment_{name}"), &body);
        }
    }

    #[test]
    fn what_the_patch_did_to_its_evidence_is_annotated_where_it_did_it() {
        let r = report_of(&fixtures().join("corpus/adv_sleep"), &Config::default());
        let a = annotations(&r);
        let w = a
            .iter()
            .find(|a| a.title.as_deref().is_some_and(|t| t.starts_with("weakened_test")))
            .expect("annotated");
        assert_eq!((w.path.as_str(), w.start_line), ("tests/test_pricing.py", 13));
        assert_eq!(w.annotation_level, AnnotationLevel::Warning);
        assert!(w.message.contains("time.sleep"), "{}", w.message);

        // Blocking: first, as a failure.
        let r = report_of(&fixtures().join("corpus/adv_workflow_edited"), &Config::default());
        let a = annotations(&r);
        assert_eq!(a[0].path, ".github/workflows/flakegate-evidence.yml");
        assert_eq!(a[0].annotation_level, AnnotationLevel::Failure);
        let title = a[0].title.as_deref().unwrap();
        assert!(title.starts_with("evidence_config_changed"), "{title}");

        // A deleted test file has no head-side place to annotate.
        let r = report_of(&fixtures().join("corpus/adv_test_file_deleted"), &Config::default());
        assert!(annotations(&r).iter().all(|a| a.path != "tests/test_util.py"));
    }

    /// A patch that weakens its tests or changes what produced its evidence gets a comment even
    /// when no owner is blind: the agent author must undo it, or a reviewer accept it.
    #[test]
    fn the_comment_names_what_the_patch_did_to_its_own_evidence() {
        for name in ["adv_sleep", "adv_workflow_edited"] {
            let r = report_of(&fixtures().join("corpus").join(name), &Config::default());
            assert!(r.blind_owners.is_empty(), "{name}");
            let body = comment_body(&r, &Config::default(), None).expect(name);
            snapshot_comment(&format!("comment_{name}"), &body);
        }
        let body = comment_body(
            &report_of(&fixtures().join("corpus/adv_sleep"), &Config::default()),
            &Config::default(),
            None,
        )
        .unwrap();
        assert!(body.contains("`weakened_test` at `tests/test_pricing.py:13`"), "{body}");
        assert!(body.contains("does not block merge"), "{body}");
        // An honest patch: nothing to say, no comment.
        let r = report_of(&fixtures().join("corpus/honest_bug_fix"), &Config::default());
        assert_eq!(r.verdict, Verdict::Pass);
        assert!(comment_body(&r, &Config::default(), None).is_none());
    }

    #[test]
    fn a_name_that_is_not_a_handle_is_never_mentioned() {
        let r = case("some_frozen");
        let body = comment_body(&r, &Config::default(), None).unwrap();
        assert!(body.contains("@shop/payments"), "{body}");
        assert!(body.contains("**qa-oncall**"), "{body}");
        assert!(!body.contains("@qa-oncall"), "{body}");

        // A handle the report got wrong, or an owner that looks like a handle
        // but was not accepted as one, is shown without its `@`.
        let mut r = r;
        r.blind_owners = vec![BlindOwner {
            owner: "@not a handle".into(),
            handle: Some("@not a handle".into()),
            tests: vec![TestId::new("tests/t.py::t")],
            why: vec!["w".into()],
            actions: vec!["fix".into()],
        }];
        let body = comment_body(&r, &Config::default(), None).unwrap();
        assert!(!body.contains("@not"), "{body}");
        assert!(body.contains("**not a handle**"), "{body}");

        // A mapped owner is mentioned by its handle.
        let mut config = Config::default();
        config.owners.insert("qa-oncall".into(), "@acme/qa".into());
        let r = case_with("some_frozen", &config);
        let body = comment_body(&r, &config, None).unwrap();
        assert!(body.contains("@acme/qa"), "{body}");
    }

    #[test]
    fn the_comment_says_the_blind_spot_is_gone_after_a_pass() {
        let r = case("all_stable");
        assert_eq!(r.verdict, Verdict::Pass);
        assert!(r.blind_owners.is_empty() && r.expired.is_empty());
        assert_eq!(comment_body(&r, &Config::default(), None), None);
        let previous = comment_body(&case("some_frozen"), &Config::default(), None).unwrap();
        let body = comment_body(&r, &Config::default(), Some(&previous)).unwrap();
        assert!(body.starts_with(COMMENT_MARKER));
        assert!(body.contains("the blind spot is gone"), "{body}");
        assert!(!body.contains('@'), "{body}");
        assert!(comment_changed(&previous, &body));
        snapshot_comment("comment_gone", &body);
    }

    #[test]
    fn nothing_to_say_means_no_comment() {
        let r = case("uncovered");
        assert!(r.blind_owners.is_empty() && r.expired.is_empty());
        assert_eq!(comment_body(&r, &Config::default(), None), None);
        let body = comment_body(&r, &Config::default(), Some("old")).unwrap();
        assert!(body.contains("no owner is blind"), "{body}");
        assert!(!body.contains('@'), "{body}");
        assert_eq!(comment_body(&case("docs_only"), &Config::default(), None), None);
    }

    #[test]
    fn comments_are_deterministic_and_compared_without_trailing_space() {
        let mut r = case("some_frozen");
        let a = comment_body(&r, &Config::default(), None).unwrap();
        r.blind_owners.reverse();
        for o in &mut r.blind_owners {
            o.tests.reverse();
            o.actions.reverse();
        }
        let b = comment_body(&r, &Config::default(), None).unwrap();
        assert_eq!(a, b);
        assert!(!comment_changed(&a, &format!("{a}  \n\n")));
        assert!(!comment_changed("x  \ny\n", "x\ny"));
        assert!(comment_changed(&a, &a.replace("fix", "renew")));
    }
}
