//! The check run's fields on real fixture cases: conclusions, titles, buttons, the evidence
//! record as text (cut to GitHub's limit and still JSON), INCONCLUSIVE saying why — and, for an
//! internal failure, saying only where an operator finds why.

use super::*;
use crate::gate::report::{LineClass, LineReport, Reason, ReasonCode};
use crate::github::{Annotation, ACTION_DESCRIPTION_LIMIT, ACTION_IDENTIFIER_LIMIT, ACTION_LABEL_LIMIT, MAX_ACTIONS};
use crate::present::test_cases::{case, case_with};

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
    // The title is the verdict, its deciding reason's label and the first action, cut at a
    // word; a reason's message (which may quote the pull request at any length) is not in it.
    let mut r = case("frozen_only");
    r.reasons[0].message = "é".repeat(500);
    let t = title(&r);
    assert!(t.chars().count() <= TITLE_LIMIT, "{t}");
    assert_eq!(
        t,
        "INCONCLUSIVE: only frozen or unstable tests execute the changed lines — add a stable test that executes the blind lines"
    );
    assert_eq!(cut_at_word("one two three", 10), "one two…");
    assert_eq!(cut_at_word("averyveryverylongword", 10).chars().count(), 10);
    r.reasons.clear();
    r.blind_owners.clear();
    assert_eq!(title(&r), "INCONCLUSIVE");
}

#[test]
fn check_output_snapshots() {
    for name in ["some_frozen", "frozen_only", "uncovered"] {
        let out = check_output(&case(name), &Config::default());
        insta::with_settings!({snapshot_path => "../../../tests/snapshots", prepend_module_to_snapshot => true}, {
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
    assert!(json(&r).len() > OUTPUT_MAX_BYTES);
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
        .map(|i| Reason::new(ReasonCode::FrozenOnly, format!("{i} {}", "x".repeat(1000))))
        .collect();
    let t = text(&r, OUTPUT_MAX_BYTES);
    assert!(t.len() <= OUTPUT_MAX_BYTES);
    let compact = json_block(&t);
    assert!(compact["reasons_omitted"].as_u64().unwrap() > 0);
    assert!(!compact["reasons"].as_array().unwrap().is_empty());
}

#[test]
fn inconclusive_is_failure_and_says_why() {
    let f = inconclusive("abc", "GitHub said 500");
    assert_eq!(f.conclusion, Some(Conclusion::Failure));
    let out = f.output.unwrap();
    assert!(out.title.starts_with("INCONCLUSIVE"));
    assert!(out.summary.contains("GitHub said 500"));
}

/// An internal failure blocks like any INCONCLUSIVE, keeps the buttons, and names only the
/// delivery an operator looks for; a hostile id stays inert.
#[test]
fn an_internal_error_names_the_delivery_and_nothing_else() {
    let f = internal_error("abc", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    assert_eq!(f.conclusion, Some(Conclusion::Failure));
    assert_eq!(f.actions, actions());
    let out = f.output.unwrap();
    assert_eq!(
        out.title,
        "INCONCLUSIVE: an internal error stopped the evaluation (delivery 72d3162e-cc78-11e3-81ab-4c9367dc0958)"
    );
    assert!(out.title.chars().count() <= TITLE_LIMIT);
    assert!(
        out.summary.contains("`72d3162e-cc78-11e3-81ab-4c9367dc0958`"),
        "{}",
        out.summary
    );
    assert!(out.summary.contains("**Re-evaluate**"), "{}", out.summary);
    let hostile = internal_error("abc", "x`\n## ✅ PASS @octocat");
    let out = hostile.output.unwrap();
    assert!(!out.title.contains('\n'));
    assert!(out.summary.contains("``x`⏎## ✅ PASS @octocat``"), "{}", out.summary);
}

/// A 1,504-line diff whose every line 200 tests run, 6,400 in all: the record is bounded
/// (a few witnesses per line), and the check run's text, summary and annotations stay within
/// GitHub's limits whatever its size.
#[test]
fn a_record_of_thousands_of_witnesses_per_line_fits_the_check_run() {
    use crate::gate::report::{line_witness_limit, LineWitness, WitnessStatus};
    let mut r = case("some_frozen");
    let f = r.files[0].clone();
    r.files.clear();
    for i in 0..32 {
        let mut f = f.clone();
        f.path = format!("src/shop/module_{i:02}.py");
        f.stable_lines = (1..=47).collect();
        f.lines = (1..=47)
            .map(|line| LineReport {
                line,
                class: LineClass::Stable,
                witnesses: (0..200)
                    .map(|k| LineWitness {
                        test: crate::gate::TestId::new(format!("tests/test_module_{i:02}.py::test_case_{k:04}")),
                        status: WitnessStatus::Stable,
                        phases: [crate::gate::nodeid::Phase::Run].into_iter().collect(),
                    })
                    .collect(),
            })
            .collect();
        r.files.push(f);
    }
    r.line_witness_limit = line_witness_limit(&r.files);
    assert_eq!(r.line_witness_limit, Some(3));
    for f in &mut r.files {
        f.witness_limit = r.line_witness_limit;
    }
    let record = json(&r);
    assert!(record.len() < 2 << 20, "{}", record.len());
    let out = check_output(&r, &Config::default());
    assert!(out.text.len() <= OUTPUT_MAX_BYTES, "{}", out.text.len());
    assert!(out.summary.len() <= OUTPUT_MAX_BYTES, "{}", out.summary.len());
    assert_eq!(json_block(&out.text)["verdict"], r.verdict.to_string());
    for a in &out.annotations {
        assert!(a.message.len() <= crate::github::ANNOTATION_MESSAGE_MAX_BYTES);
    }
    // The text output lists the same witnesses per line, and how many more.
    let text =
        crate::present::record::render(&r, &Config::default(), crate::present::record::Format::Text, None).unwrap();
    assert!(
        text.contains(
            "tests/test_module_00.py::test_case_0000 (stable), tests/test_module_00.py::test_case_0001 (stable), \
             tests/test_module_00.py::test_case_0002 (stable), and 197 more"
        ),
        "{}",
        &text[..2000]
    );
}
