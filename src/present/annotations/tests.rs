//! Annotations on real fixture cases and hand-made reports: their order and merging, the
//! places a patch weakened its own evidence, and GitHub's limits on a huge quoted line.

use super::*;
use crate::gate::config::Config;
use crate::gate::report::{DeletionReport, LineReport, Verdict};
use crate::gate::TestId;
use crate::present::test_cases::{case, fixtures, report_of};

/// A reason quoting a 70 KB changed line: the annotation at its place stays within GitHub's
/// 64 KiB, cut on a character boundary with a note.
#[test]
fn a_huge_quoted_line_is_cut_to_githubs_annotation_limit() {
    let mut r = report_of(&fixtures().join("corpus/adv_sleep"), &Config::default());
    let reason = r
        .reasons
        .iter_mut()
        .find(|x| x.code == crate::gate::report::ReasonCode::WeakenedTest)
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
