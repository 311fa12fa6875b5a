//! The client's pure parts: base64, path encoding, and GitHub's limits checked before a request is sent.

use super::checks::validate_fields;
use super::contents::base64_decode;
use super::issues::validate_comment;
use super::*;

#[test]
fn base64_and_paths() {
    assert_eq!(base64_decode("aGVs\nbG8=\n").unwrap(), b"hello");
    assert_eq!(base64_decode("").unwrap(), b"");
    assert!(base64_decode("a*b").is_none());
    assert_eq!(encode_path(".github/flake gate.yml"), ".github/flake%20gate.yml");
}

fn annotation(message: String) -> Annotation {
    Annotation {
        path: "a.py".into(),
        start_line: 1,
        end_line: 1,
        annotation_level: AnnotationLevel::Warning,
        title: Some("t".into()),
        message,
        raw_details: None,
    }
}

fn fields(summary: String, annotations: Vec<Annotation>) -> CheckRunFields {
    let mut f = CheckRunFields::new("h", CheckStatus::Completed);
    f.conclusion = Some(Conclusion::Failure);
    f.output = Some(CheckOutput {
        title: "INCONCLUSIVE".into(),
        summary,
        text: None,
        annotations,
    });
    f
}

/// GitHub's limits hold before a request is sent: in bytes where GitHub counts bytes.
#[test]
fn over_limit_fields_are_refused_before_sending() {
    let ok = fields(
        "é".repeat(OUTPUT_MAX_BYTES / 2),
        vec![annotation("x".repeat(ANNOTATION_MESSAGE_MAX_BYTES))],
    );
    assert!(validate_fields(&ok).is_ok());
    let err = |f: &CheckRunFields| validate_fields(f).unwrap_err().to_string();
    // 40,000 characters, 80,000 bytes.
    let e = err(&fields("é".repeat(40_000), vec![]));
    assert!(e.contains("output.summary is 80000 bytes"), "{e}");
    let e = err(&fields(
        String::new(),
        vec![annotation("x".repeat(ANNOTATION_MESSAGE_MAX_BYTES + 1))],
    ));
    assert!(e.contains("annotation 0 (a.py:1): message is 65537 bytes"), "{e}");
    let mut a = annotation("m".into());
    a.raw_details = Some("ü".repeat(ANNOTATION_RAW_DETAILS_MAX_BYTES));
    assert!(err(&fields(String::new(), vec![a])).contains("raw_details"));
    let mut a = annotation("m".into());
    a.title = Some("t".repeat(ANNOTATION_TITLE_MAX_CHARS + 1));
    assert!(err(&fields(String::new(), vec![a])).contains("title is over 255"));
    let mut f = fields(String::new(), vec![]);
    f.output.as_mut().unwrap().title = "t".repeat(TITLE_LIMIT + 1);
    assert!(err(&f).contains("output.title"));
    let mut f = fields(String::new(), vec![]);
    f.actions = (0..4)
        .map(|i| CheckAction {
            label: format!("l{i}"),
            description: "d".into(),
            identifier: format!("i{i}"),
        })
        .collect();
    assert!(err(&f).contains("4 actions"));
    f.actions.truncate(1);
    f.actions[0].identifier = "i".repeat(ACTION_IDENTIFIER_LIMIT + 1);
    assert!(err(&f).contains("length limits"));
    assert!(validate_comment(&"é".repeat(COMMENT_MAX_CHARS)).is_ok());
    assert!(validate_comment(&"é".repeat(COMMENT_MAX_CHARS + 1)).is_err());
}
