//! Untrusted strings are inert in what `flakegate check` prints (issue 11, item 7): the
//! hostile pull request of `tests/common/hostile.rs` — diff text, a path, a node id and ledger
//! fields each carrying a mention, an `<img>`, a forged heading and an unclosed `<!--` —
//! rendered as markdown (the App's template) and as text.

use crate::hostile;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn check(h: &hostile::Hostile, format: &str) -> (i32, String, String) {
    let diff = h.dir.path().join("pr.diff");
    std::fs::write(&diff, &h.diff).unwrap();
    let ledger = h.dir.path().join("flake-ledger.json");
    std::fs::write(&ledger, &h.ledger).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .arg("check")
        .arg(h.evidence())
        .args(["--diff", diff.to_str().unwrap(), "--ledger", ledger.to_str().unwrap()])
        .args(["--today", "2026-11-20", "--format", format])
        .current_dir(root())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_channel_is_inert_in_the_markdown() {
    let h = hostile::build(&root().join("tests/fixtures"));
    let (code, md, err) = check(&h, "markdown");
    assert_eq!(code, 1, "FAIL (the hostile test failed): {err}\n{md}");
    let shown = hostile::assert_inert(&md, "--format markdown", 0);
    for channel in [
        hostile::DIFF_HANDLE,
        hostile::PATH_HANDLE,
        hostile::NODE_HANDLE,
        hostile::LEDGER_HANDLE,
    ] {
        assert!(
            shown.contains(&channel),
            "{channel} does not reach the markdown at all:\n{md}"
        );
    }
    // The path stays in one table row; the diff text stays in one reason line.
    let row = md
        .lines()
        .find(|l| l.starts_with("| ") && l.contains("path-owner"))
        .unwrap();
    assert!(row.starts_with("| `src/shop/x⏎## ✅ PASS"), "{row}");
    assert!(row.contains("⏎"), "{row}");
    let reason = md.lines().find(|l| l.contains("diff-owner")).unwrap();
    assert!(reason.contains("\\`\\`\\`"), "backticks escaped: {reason}");
}

#[test]
fn every_channel_is_one_line_in_the_text() {
    let h = hostile::build(&root().join("tests/fixtures"));
    let (code, text, err) = check(&h, "text");
    assert_eq!(code, 1, "{err}\n{text}");
    for l in text.lines() {
        assert!(!l.trim_start().starts_with("## ✅"), "forged line {l:?}:\n{text}");
        assert!(!l.contains('\u{1b}'));
    }
    assert!(text.contains("x⏎## ✅ PASS @path-owner"), "{text}");
}
