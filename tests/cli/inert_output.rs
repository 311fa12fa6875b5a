//! Untrusted strings are inert in what `flakegate check` prints: the
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

/// `ledger lint` and `ledger expiring` print a ledger's fields (a pull request's ledger, in
/// CI) one entry a line, with control characters (a terminal escape, a newline) replaced.
#[test]
fn ledger_fields_are_one_line_on_the_terminal() {
    let t = tempfile::tempdir().unwrap();
    let ledger = t.path().join("flake-ledger.json");
    let entry = serde_json::json!({"frozen": [{
        "test": "tests/test_pricing.py::test_apply_tax",
        "owner": "qa\u{1b}[2J\nEXPIRED 1999-01-01 forged",
        "reason": "r",
        "frozen_at": "2026-11-01",
        "expires": "2026-11-10",
    }]});
    std::fs::write(&ledger, serde_json::to_vec_pretty(&entry).unwrap()).unwrap();
    for args in [
        vec!["ledger", "lint", ledger.to_str().unwrap(), "--today", "2026-11-20"],
        vec![
            "ledger",
            "expiring",
            "--ledger",
            ledger.to_str().unwrap(),
            "--today",
            "2026-11-20",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
            .args(&args)
            .current_dir(t.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: expired\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!stdout.contains('\u{1b}'), "{args:?}: {stdout:?}");
        assert!(
            stdout.lines().all(|l| !l.starts_with("EXPIRED 1999")),
            "{args:?}: {stdout}"
        );
        assert!(
            stdout.contains("qa\u{fffd}[2J⏎EXPIRED 1999-01-01 forged"),
            "{args:?}: {stdout}"
        );
    }
}

/// As GitHub Actions workflow commands (`--format github`), the hostile pull request's strings
/// cannot end a command early nor start one of their own: every line is one of ours, the path's
/// newline is `%0A` inside its `file=` property, and the verdict comes last.
#[test]
fn workflow_commands_keep_every_hostile_string_inside_its_own_command() {
    let h = hostile::build(&root().join("tests/fixtures"));
    let (code, out, err) = check(&h, "github");
    assert_eq!(code, 1, "blocking, as in markdown: {err}\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() >= 2, "{out}");
    for l in &lines {
        let ours = ["::error ", "::warning ", "::notice "].iter().any(|p| l.starts_with(p));
        assert!(ours, "a line that is not one of our commands: {l:?}\n{out}");
        let (props, message) = l.split_once("::").and_then(|(_, r)| r.split_once("::")).unwrap();
        assert!(!props.contains('\r') && !message.contains('\r'), "{l:?}");
        assert!(props.split(',').all(|p| p.contains('=')), "{l:?}");
    }
    assert!(
        out.contains("file=src/shop/x%0A"),
        "the path's newline is escaped in its property:\n{out}"
    );
    let last = lines.last().unwrap();
    assert!(last.starts_with("::error title=flakegate::INCONCLUSIVE: "), "{last}");
    assert!(last.ends_with(". This blocks merge."), "{last}");
}
