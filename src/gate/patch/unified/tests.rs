use super::*;
use crate::gate::patch::Scope;
use proptest::prelude::*;
use serde_json::Value;
use std::path::PathBuf;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diffs")
}

pub(crate) fn corpus_file(name: &str) -> String {
    std::fs::read_to_string(corpus_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn expected() -> Value {
    serde_json::from_str(&corpus_file("expected.json")).unwrap()
}

/// Every `*.diff` of the corpus, by name.
fn corpus_diffs() -> Vec<(String, String)> {
    let mut v: Vec<_> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".diff"))
        .map(|n| {
            let t = corpus_file(&n);
            (n, t)
        })
        .collect();
    v.sort();
    v
}

fn status_name(s: FileStatus) -> String {
    serde_json::to_value(s).unwrap().as_str().unwrap().to_string()
}

fn nums(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap() as u32)
        .collect()
}

/// Compare one parsed file with an `expected.json` file record.
fn check_file(ctx: &str, got: &FileChange, want: &Value) {
    let status = want["status"].as_str().unwrap();
    let want_path = if status == "deleted" {
        &want["old_path"]
    } else {
        &want["new_path"]
    };
    assert_eq!(got.path, want_path.as_str().unwrap(), "{ctx}: path");
    let want_old = match status {
        "renamed" | "copied" => want["old_path"].as_str(),
        _ => None,
    };
    assert_eq!(got.old_path.as_deref(), want_old, "{ctx}: old_path");
    assert_eq!(status_name(got.status), status, "{ctx}: status");
    assert_eq!(got.binary, want["binary"].as_bool().unwrap(), "{ctx}: binary");
    assert!(got.lines_known, "{ctx}: lines_known");
    assert_eq!(
        got.added_line_numbers(),
        nums(&want["added_lines"]),
        "{ctx}: added lines"
    );
    let dels: Vec<(u32, u32)> = got
        .deletions
        .iter()
        .map(|d| (d.old_start, d.old_start + d.old_count - 1))
        .collect();
    let want_dels: Vec<(u32, u32)> = want["pure_deletions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap() as u32, p[1].as_u64().unwrap() as u32))
        .collect();
    assert_eq!(dels, want_dels, "{ctx}: pure deletions [first, last]");
    for d in &got.deletions {
        assert_eq!(d.text.len(), d.old_count as usize, "{ctx}: deletion text");
    }
    for a in &got.added {
        assert!(
            !a.text.ends_with('\r') && !a.text.ends_with('\n'),
            "{ctx}: line ending kept in {:?}",
            a.text
        );
    }
}

#[test]
fn corpus_matches_expected_json() {
    let exp = expected();
    let table = exp["diffs"].as_object().unwrap();
    let diffs = corpus_diffs();
    assert!(diffs.len() >= 15, "corpus missing? {} diffs", diffs.len());
    for (name, text) in &diffs {
        let want = table
            .get(name)
            .unwrap_or_else(|| panic!("{name} has no entry in expected.json"));
        let patch = parse_unified(name, text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want_files = want["files"].as_array().unwrap();
        assert_eq!(
            patch.files.len(),
            want_files.len(),
            "{name}: file count: {:?}",
            patch.files
        );
        for (i, (got, w)) in patch.files.iter().zip(want_files).enumerate() {
            check_file(&format!("{name}[{i}] {}", got.path), got, w);
        }
        // The scanner's hunk count per file, against `hunks`.
        let norm = normalize_eol(text);
        let sections = scan(name, &norm).unwrap();
        let hunks: Vec<u64> = sections.iter().map(|s| s.hunks as u64).collect();
        let want_hunks: Vec<u64> = want_files.iter().map(|f| f["hunks"].as_u64().unwrap()).collect();
        assert_eq!(hunks, want_hunks, "{name}: hunks per file");
        // Same result from bytes, and from the diff with CRLF line endings.
        assert_eq!(
            parse_unified_bytes(name, text.as_bytes()).unwrap(),
            patch,
            "{name}: bytes"
        );
        let crlf = text.replace('\n', "\r\n");
        assert_eq!(parse_unified(name, &crlf).unwrap(), patch, "{name}: CRLF-encoded diff");
    }
    for name in table.keys() {
        assert!(
            diffs.iter().any(|(n, _)| n == name),
            "expected.json names {name}, which is not in the corpus"
        );
    }
}

#[test]
fn corpus_line_texts() {
    let p = parse_unified("crlf.diff", &corpus_file("crlf.diff")).unwrap();
    assert_eq!(
        p.files[0].added,
        vec![AddedLine {
            line: 2,
            text: "SECOND".into(),
            scope: Scope::module(),
        }]
    );
    let p = parse_unified("no_newline.diff", &corpus_file("no_newline.diff")).unwrap();
    assert_eq!(
        p.files[1].added,
        vec![AddedLine {
            line: 3,
            text: "GAMMA".into(),
            scope: Scope::module(),
        }]
    );
    let p = parse_unified("header_like.diff", &corpus_file("header_like.diff")).unwrap();
    let texts: Vec<_> = p.files[0].added.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["++ y", "diff --git a/fake b/fake", "@@ -1 +1 @@"]);
    let p = parse_unified("multi_hunk.diff", &corpus_file("multi_hunk.diff")).unwrap();
    assert_eq!(
        p.files[0].deletions,
        vec![Deletion {
            old_start: 15,
            old_count: 2,
            after: 14,
            text: vec!["value_15 = 15".into(), "value_16 = 16".into()]
        }]
    );
    let mut u0 = parse_unified("u0.diff", &corpus_file("u0.diff")).unwrap();
    let mut p = p;
    // Only the context lines differ.
    assert!(u0.files.iter().all(|f| f.context.is_empty()));
    p.files
        .iter_mut()
        .chain(u0.files.iter_mut())
        .for_each(|f| f.context.clear());
    assert_eq!(u0.files, p.files, "-U0 and -U3 give the same lines");
    let p = parse_unified("deleted.diff", &corpus_file("deleted.diff")).unwrap();
    assert_eq!(
        (p.files[0].deletions[0].after, p.files[0].deletions[0].old_count),
        (0, 5)
    );
}

#[test]
fn renames_copies_modes_binary_quoting() {
    let d = "diff --git a/m.sh b/m.sh\nold mode 100644\nnew mode 100755\nindex b77b4eb..7061c57\n--- a/m.sh\n+++ b/m.sh\n@@ -1,2 +1,2 @@\n x\n-y\n+Y\n\
diff --git \"a/ta\\tb.txt\" \"b/ta\\tb.txt\"\nindex 8cc35a3..bac686b 100644\n--- \"a/ta\\tb.txt\"\n+++ \"b/ta\\tb.txt\"\n@@ -1 +1 @@\n-tab\n+tab2\n\
diff --git a/t.txt \"b/\\303\\251t\\303\\251 dir.txt\"\nsimilarity index 66%\nrename from t.txt\nrename to \"\\303\\251t\\303\\251 dir.txt\"\nindex de98044..7be73ce 100644\n--- a/t.txt\n+++ \"b/\\303\\251t\\303\\251 dir.txt\"\t\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n\
diff --git a/bin.dat b/bin.dat\nindex 3e71795..8d14728 100644\nGIT binary patch\nliteral 5\nMcmZ?wbYx^;00Zv;L;wH)\n\nliteral 5\nMcmZ?wbY*1z00Zv?L;wH)\n\n\
diff --git a/b.png b/c.png\nsimilarity index 100%\nrename from b.png\nrename to c.png\n";
    let p = parse_unified("x.diff", d).unwrap();
    let summary: Vec<_> = p
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.old_path.as_deref(), f.status, f.binary))
        .collect();
    assert_eq!(
        summary,
        [
            ("m.sh", None, FileStatus::Modified, false),
            ("ta\tb.txt", None, FileStatus::Modified, false),
            ("été dir.txt", Some("t.txt"), FileStatus::Renamed, false),
            ("bin.dat", None, FileStatus::Modified, true),
            ("c.png", Some("b.png"), FileStatus::Renamed, false),
        ]
    );
    assert_eq!(p.files[2].added_line_numbers(), [2]);
    assert_eq!(
        p.paths().collect::<Vec<_>>(),
        ["m.sh", "ta\tb.txt", "été dir.txt", "t.txt", "bin.dat", "c.png", "b.png"]
    );
}

#[test]
fn header_only_git_sections() {
    // `git diff -w` prints `diff --git` + `index` for whitespace-only changes;
    // `--no-prefix` keeps names as they are; a symlink is a one-line file.
    let d = "diff --git a/ws.py b/ws.py\nindex 1111111..2222222 100644\n\n\
diff --git src/np.py src/np.py\nindex 1111111..2222222 100644\n--- src/np.py\n+++ src/np.py\n@@ -1 +1,2 @@\n x\n+y\n\
diff --git a/ln b/ln\nnew file mode 120000\nindex 0000000..3333333\n--- /dev/null\n+++ b/ln\n@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n\
diff --git a/old name.py b/new name.py\nold mode 100644\nnew mode 100755\nsimilarity index 100%\nrename from old name.py\nrename to new name.py\n";
    let p = parse_unified("h.diff", d).unwrap();
    let summary: Vec<_> = p
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.old_path.as_deref(), f.status, f.added_line_numbers()))
        .collect();
    assert_eq!(
        summary,
        [
            ("ws.py", None, FileStatus::Modified, vec![]),
            ("src/np.py", None, FileStatus::Modified, vec![2]),
            ("ln", None, FileStatus::Added, vec![1]),
            ("new name.py", Some("old name.py"), FileStatus::Renamed, vec![]),
        ]
    );
    assert_eq!(p.files[2].added[0].text, "target");
    check_err(
        "diff --git a/x b/x\nold mode 100644\n\nnew mode 100755\n",
        3,
        None,
        "blank line",
    );
}

#[test]
fn plain_unified_diffs() {
    let d = "--- a/src/x.py\t2024-01-01 00:00:00.000000000 +0000\n+++ b/src/x.py\t2024-01-02 00:00:00.000000000 +0000\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n\
diff -ru base/new.py head/new.py\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+n\n\
--- base/lib/y.py\n+++ head/lib/y.py\n@@ -3,2 +3 @@\n k\n--- x\n\
Binary files base/img.png and head/img.png differ\n";
    let p = parse_unified("plain.diff", d).unwrap();
    let summary: Vec<_> = p.files.iter().map(|f| (f.path.as_str(), f.status, f.binary)).collect();
    assert_eq!(
        summary,
        [
            ("src/x.py", FileStatus::Modified, false),
            ("new.py", FileStatus::Added, false),
            ("lib/y.py", FileStatus::Modified, false),
            ("img.png", FileStatus::Modified, true),
        ]
    );
    assert_eq!(
        p.files[2].deletions,
        vec![Deletion {
            old_start: 4,
            old_count: 1,
            after: 3,
            text: vec!["-- x".into()]
        }]
    );
}

#[test]
fn replacement_is_not_a_pure_deletion() {
    let d = "--- a/f\n+++ b/f\n@@ -1,6 +1,4 @@\n-a\n-b\n+B\n c\n+C\n-d\n e\n-f\n";
    let p = parse_unified("r.diff", d).unwrap();
    assert_eq!(p.files[0].added_line_numbers(), [1, 3]);
    assert_eq!(
        p.files[0].deletions,
        vec![Deletion {
            old_start: 6,
            old_count: 1,
            after: 4,
            text: vec!["f".into()]
        }]
    );
}

#[test]
fn odd_binary_lines_are_errors_not_panics() {
    check_err("Binary files differ\n", 1, None, "two names");
    check_err("Binary files /dev/null and /dev/null differ\n", 1, None, "two names");
    check_err("--- \n+++ \n@@ -1 +1 @@\n-a\n+b\n", 1, None, "file name");
}

/// (input, line, column or None, a word of the message)
fn check_err(input: &str, line: usize, col: Option<usize>, word: &str) {
    let e = parse_unified("in.diff", input).unwrap_err();
    assert_eq!(e.location.file, "in.diff");
    assert_eq!(
        (e.location.line, e.location.column),
        (Some(line), col),
        "{input:?}: {e}"
    );
    assert!(e.message.contains(word), "{input:?}: {e} (wanted {word:?})");
    assert!(e.message.contains("expected"), "{e}");
}

#[test]
fn errors_name_the_line() {
    let multi = corpus_file("multi_hunk.diff");
    // Truncated inside the first hunk: reported at that hunk's header (line 5).
    let truncated: String = multi.lines().take(8).map(|l| format!("{l}\n")).collect();
    check_err(&truncated, 5, None, "truncated");
    // Cut right after the file headers.
    check_err(
        "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n",
        5,
        None,
        "hunk header",
    );
    // A bad hunk header: column of the bad count.
    check_err(
        &multi.replace("@@ -12,8 +12,6 @@", "@@ -12,x +12,6 @@"),
        13,
        Some(8),
        "old-side line count",
    );
    check_err(
        &multi.replace("@@ -12,8 +12,6 @@", "@@ -12,8 12,6 @@"),
        13,
        Some(9),
        "` +`",
    );
    check_err(
        &multi.replace("@@ -12,8 +12,6 @@", "@@ -12,8 +12,6"),
        13,
        Some(15),
        "` @@`",
    );
    // A hunk shorter than its header, followed by the next hunk.
    check_err(
        &multi.replace("@@ -12,8 +12,6 @@", "@@ -12,9 +12,7 @@"),
        22,
        None,
        "expected 9",
    );
    // An added line beyond the header's count (diffy alone would drop it).
    check_err(
        &format!("{}+extra\n", corpus_file("copy.diff")),
        13,
        None,
        "complete hunk",
    );
    // Garbage before, between, inside headers.
    check_err("From 123 Mon Sep 17 00:00:00 2001\n", 1, None, "file header");
    check_err(
        &format!("{}garbage\n{}", corpus_file("copy.diff"), corpus_file("crlf.diff")),
        13,
        None,
        "complete hunk",
    );
    check_err("diff --git a/x b/x\nfoo bar\n", 2, None, "extended header");
    check_err(
        "diff --git a/x b/x\nold mode 100644\nnew mode 777\n",
        3,
        Some(10),
        "file mode",
    );
    check_err(
        "diff --git a/x b/y\nrename from x\n--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n",
        2,
        None,
        "rename to",
    );
    check_err("--- a/x\n@@ -1 +1 @@\n", 2, None, "+++");
    check_err("@@ -1 +1 @@\n-a\n+b\n", 1, None, "file header");
    check_err("diff --cc f\n", 1, Some(1), "combined");
    // Body line of the wrong kind, and overflow.
    check_err("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n*b\n", 5, None, "hunk line");
    check_err(
        "--- a/x\n+++ b/x\n@@ -1 +4294967295,2 @@\n-a\n+b\n+c\n",
        3,
        Some(8),
        "at most 4294967295",
    );
    check_err(
        "--- a/x\n+++ b/x\n@@ -1 +99999999999 @@\n-a\n+b\n",
        3,
        Some(8),
        "at most 4294967295",
    );
    // Hunks out of order.
    check_err(
        "--- a/x\n+++ b/x\n@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-a\n+b\n",
        6,
        None,
        "in order",
    );
    // CRLF line endings keep line numbers.
    check_err(&truncated.replace('\n', "\r\n"), 5, None, "truncated");
}

#[test]
fn a_non_utf8_file_is_unreadable_and_the_rest_is_read_exactly() {
    let good = corpus_file("combined.diff");
    let exact = parse_unified("c.diff", &good).unwrap();
    // A Latin-1 file appended: `café` with `é` as the single byte 0xE9.
    let mut bytes = good.clone().into_bytes();
    let latin1_at = good.lines().count() + 7;
    bytes.extend_from_slice(b"diff --git a/src/legacy.py b/src/legacy.py\nindex 1111111..2222222 100644\n--- a/src/legacy.py\n+++ b/src/legacy.py\n@@ -1,2 +1,2 @@\n-name = 'cafe'\n+name = 'caf\xe9'\n x = 1\n");
    let p = parse_unified_bytes("c.diff", &bytes).unwrap();
    assert_eq!(
        p.files[..exact.files.len()],
        exact.files[..],
        "the other files are read exactly"
    );
    let f = p.files.last().unwrap();
    assert_eq!(f.path, "src/legacy.py");
    assert_eq!(f.added[0].text, "name = 'caf\u{fffd}'", "decoded lossily for display");
    let why = f.unreadable.as_deref().unwrap();
    assert!(why.contains(&format!("0xE9 at c.diff:{latin1_at}")), "{why}");
    assert!(p.files[..exact.files.len()].iter().all(|f| f.unreadable.is_none()));

    // An invalid byte in a file's header makes that file unreadable too (its path is lossy).
    let p = parse_unified_bytes(
        "h.diff",
        b"diff --git a/caf\xe9.py b/caf\xe9.py\n--- a/caf\xe9.py\n+++ b/caf\xe9.py\n@@ -1 +1 @@\n-a\n+b\n",
    )
    .unwrap();
    assert_eq!(p.files[0].path, "caf\u{fffd}.py");
    assert!(p.files[0].unreadable.as_deref().unwrap().contains("h.diff:1"));

    // Outside any file the scanner accepts nothing: unusable input, with the line.
    let e = parse_unified_bytes("bad.diff", b"\xff").unwrap_err();
    assert_eq!(e.location.line, Some(1), "{e}");
}

/// A unified diff built from an edit script, with its true answer.
/// Old and new lines are all distinct, so any minimal diff of the two files
/// marks exactly the inserted lines as added and the deleted as removed.
fn generated(
    keep: &[bool],
    inserts: &[u8],
    context: usize,
    final_newline: bool,
) -> (String, Vec<u32>, Vec<(u32, u32, u32)>) {
    let mut old = Vec::new();
    let mut new = Vec::new();
    let mut want_added = Vec::new();
    let mut want_dels = Vec::new(); // (old_start, count, after)
    let (mut block_dels, mut block_ins, mut block_start) = (0u32, 0u32, 0u32);
    let flush = |dels: &mut u32, ins: &mut u32, start: u32, new_len: usize, want: &mut Vec<(u32, u32, u32)>| {
        if *dels > 0 && *ins == 0 {
            want.push((start, *dels, new_len as u32));
        }
        *dels = 0;
        *ins = 0;
    };
    for gap in 0..=keep.len() {
        for k in 0..inserts.get(gap).copied().unwrap_or(0) {
            new.push(format!("new {gap}.{k}"));
            want_added.push(new.len() as u32);
            block_ins += 1;
        }
        if gap == keep.len() {
            break;
        }
        old.push(format!("old {gap}"));
        if keep[gap] {
            flush(&mut block_dels, &mut block_ins, block_start, new.len(), &mut want_dels);
            new.push(format!("old {gap}"));
        } else {
            if block_dels == 0 {
                block_start = old.len() as u32;
            }
            block_dels += 1;
        }
    }
    if final_newline {
        // A trailing block's `after` is the last new line before it.
        let new_before_trailing = new.len() - block_ins as usize;
        flush(
            &mut block_dels,
            &mut block_ins,
            block_start,
            new_before_trailing,
            &mut want_dels,
        );
    } else {
        // Both files end in the same line without a newline (a context
        // line followed by `\ No newline at end of file`).
        flush(&mut block_dels, &mut block_ins, block_start, new.len(), &mut want_dels);
        old.push("end".into());
        new.push("end".into());
    }
    let join = |v: &[String]| {
        let mut s = v.join("\n");
        if final_newline && !v.is_empty() {
            s.push('\n');
        }
        s
    };
    let (o, n) = (join(&old), join(&new));
    if o == n {
        return (String::new(), Vec::new(), Vec::new());
    }
    let mut opts = diffy::DiffOptions::new();
    opts.set_context_len(context);
    let patch = opts.create_patch(&o, &n).to_string();
    let patch = patch.replacen(
        "--- original\n+++ modified\n",
        "diff --git a/f.py b/f.py\nindex 1111111..2222222 100644\n--- a/f.py\n+++ b/f.py\n",
        1,
    );
    (patch, want_added, want_dels)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_text(s in "(?s).{0,400}") {
        let _ = parse_unified("p.diff", &s);
    }

    #[test]
    fn never_panics_on_diff_like_text(lines in prop::collection::vec(
        prop_oneof![
            Just("diff --git a/x b/x".to_string()), Just("--- a/x".to_string()), Just("+++ b/x".to_string()),
            Just("--- /dev/null".to_string()), Just("+++ /dev/null".to_string()), Just("new file mode 100644".to_string()),
            Just("rename from x".to_string()), Just("rename to y".to_string()), Just("GIT binary patch".to_string()),
            Just("literal 5".to_string()), Just("Binary files a/x and b/x differ".to_string()),
            Just("Binary files differ".to_string()),
            Just("Binary files /dev/null and  differ".to_string()),
            Just("\\ No newline at end of file".to_string()), Just(String::new()), Just("old mode 100644".to_string()),
            "@@ -[0-9]{1,2}(,[0-9])? \\+[0-9]{1,2}(,[0-9])? @@.{0,3}", "[ +-][a-z\"\\\\]{0,4}", "\"[ab]/[a-z\\\\0-7]{0,6}\"",
        ], 0..40)) {
        let _ = parse_unified("p.diff", &lines.join("\n"));
    }

    #[test]
    fn never_panics_on_arbitrary_bytes(b in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = parse_unified_bytes("p.diff", &b);
    }

    #[test]
    fn never_panics_on_mutated_corpus(pick in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>(),
                                      edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..6)) {
        let diffs = corpus_diffs();
        let (_, text) = &diffs[pick.index(diffs.len())];
        let mut b = text.clone().into_bytes();
        for (at, byte, op) in edits {
            let i = at.index(b.len() + 1);
            match op {
                0 => b.insert(i, byte),
                1 if i < b.len() => { b.remove(i); }
                _ if i < b.len() => b[i] = byte,
                _ => {}
            }
        }
        let _ = parse_unified_bytes("m.diff", &b);
        let n = cut.index(b.len() + 1);
        let _ = parse_unified_bytes("m.diff", &b[..n]);
        if let Ok(s) = std::str::from_utf8(&b[..n]) {
            if let Ok(p) = parse_unified("m.diff", s) {
                for f in &p.files {
                    prop_assert!(f.added.windows(2).all(|w| w[0].line < w[1].line));
                }
            }
        }
    }

    #[test]
    fn generated_diffs_give_the_true_lines(keep in prop::collection::vec(any::<bool>(), 0..30),
                                           inserts in prop::collection::vec(prop_oneof![3 => Just(0u8), 1 => 1u8..3], 0..31),
                                           context in 0usize..4, final_newline in any::<bool>(), crlf in any::<bool>()) {
        let (patch, want_added, want_dels) = generated(&keep, &inserts, context, final_newline);
        let patch = if crlf { patch.replace('\n', "\r\n") } else { patch };
        let p = parse_unified("g.diff", &patch).map_err(|e| TestCaseError::fail(format!("{e}\n{patch}")))?;
        if patch.is_empty() {
            prop_assert!(p.files.is_empty());
            return Ok(());
        }
        prop_assert_eq!(p.files.len(), 1, "{}", patch);
        let f = &p.files[0];
        prop_assert_eq!(f.added_line_numbers(), want_added, "{}", patch);
        for a in &f.added {
            prop_assert!(a.text.starts_with("new "), "{:?}", a.text);
        }
        let dels: Vec<_> = f.deletions.iter().map(|d| (d.old_start, d.old_count, d.after)).collect();
        prop_assert_eq!(dels, want_dels, "{}", patch);
    }
}

#[test]
fn a_parsed_diff_carries_scopes_on_both_sides() {
    let diff = "\
diff --git a/tests/test_cart.py b/tests/test_cart.py
--- a/tests/test_cart.py
+++ b/tests/test_cart.py
@@ -9,5 +9,5 @@ class TestCart:
 
     def test_total(self):
         cart = Cart()
-        cart.add(\"pen\", 2.5, qty=4)
+        cart.add(\"pen\", 2.5, qty=5)
         assert cart.total() == 12.0
";
    let p = parse_unified("d", diff).unwrap();
    let f = &p.files[0];
    assert_eq!(
        f.added[0].scope,
        super::super::scope::tests::known(&["TestCart", "test_total"], true)
    );
    assert_eq!(
        f.removed[0].scope,
        super::super::scope::tests::known(&["TestCart", "test_total"], true)
    );
    assert_eq!(f.context.len(), 4);
    assert_eq!((f.context[3].old_line, f.context[3].line), (13, 13));
}
