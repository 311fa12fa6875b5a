//! A hostile pull request, shared by the `cli` and `app` test binaries: the
//! corpus entry `adv_sleep` (real git diff, real pytest and coverage.py evidence) with an
//! attacker's strings put into each channel that reaches what flakegate renders:
//!
//! - **diff text** quoted in a reason: the added `time.sleep` line carries backticks (to end
//!   the code span), a mention, an `<img>` and an unclosed `<!--`;
//! - **path**: a file added under a name with a newline, a forged `## ✅ PASS` heading, a
//!   mention, an `<img>` and `<!--` — its diff section made by real git (`git diff --cached`);
//! - **node id**: a failing test's node id and message in the head results;
//! - **ledger field**: an entry's owner and test in the base ledger, and (for the App) an
//!   entry the head ledger adds — the patch's own edit, so its diff carries it
//!   ([`Hostile::ledger_section`]).
//!
//! Each channel names its own handle, so a test can say which channel leaked.

// Each test binary uses its own part of this file.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Each channel's handle (never to be mentioned live).
pub const DIFF_HANDLE: &str = "@diff-owner";
pub const PATH_HANDLE: &str = "@path-owner";
pub const NODE_HANDLE: &str = "@node-owner";
pub const LEDGER_HANDLE: &str = "@ledger-owner";
pub const HEAD_LEDGER_HANDLE: &str = "@head-ledger-owner";

/// The hostile file's name as git stores it.
pub const PATH: &str = "src/shop/x\n## ✅ PASS @path-owner <img src=p> <!--.py";
/// The failing test's node id.
pub const NODE_ID: &str = "tests/test_pricing.py::test_apply_tax[``` @node-owner <img src=n> <!--]";

pub struct Hostile {
    /// Holds `evidence/` (coverage.json, results/, meta.json).
    pub dir: tempfile::TempDir,
    pub diff: Vec<u8>,
    /// The base ledger: the project's, one entry's owner hostile.
    pub ledger: Vec<u8>,
    /// The head ledger: the base one plus an entry the patch adds.
    pub head_ledger: Vec<u8>,
    /// The diff of the ledger file, base → head (the whole file replaced), for a diff that
    /// carries the head ledger's entry as the patch's own edit.
    pub ledger_section: Vec<u8>,
    pub base_sha: String,
    pub head_sha: String,
}

impl Hostile {
    pub fn evidence(&self) -> PathBuf {
        self.dir.path().join("evidence")
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// `git diff --cached` of a new file named [`PATH`] in a fresh repository: git's own quoting
/// of a name with a newline.
fn hostile_path_section() -> Vec<u8> {
    let t = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(t.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    git(&["init", "-q"]);
    let file = t.path().join(PATH);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "def f():\n    return 1\n").unwrap();
    git(&["add", "-A"]);
    git(&["diff", "--cached"])
}

/// Build the hostile pull request from `fixtures` (`tests/fixtures`).
pub fn build(fixtures: &Path) -> Hostile {
    let entry = fixtures.join("corpus/adv_sleep");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&entry.join("evidence"), &dir.path().join("evidence"));

    // Diff text: the line the weakening rule quotes.
    let diff = std::fs::read_to_string(entry.join("diff.patch")).unwrap();
    let line = format!("+    time.sleep(0.01)  # ``` {DIFF_HANDLE} <img src=d> <!-- ```\n");
    let diff = diff.replace("+    time.sleep(0.01)\n", &line);
    assert!(diff.contains(DIFF_HANDLE));
    let mut diff = diff.into_bytes();
    let section = hostile_path_section();
    assert!(
        section.starts_with(b"diff --git \""),
        "git quotes the name: {}",
        String::from_utf8_lossy(&section)
    );
    diff.extend_from_slice(&section);

    // Node id: one more (failing) test report, shaped as pytest-reportlog writes one.
    let log = dir.path().join("evidence/results/report-log.jsonl");
    let mut text = std::fs::read_to_string(&log).unwrap();
    let report = json!({
        "nodeid": NODE_ID,
        "location": ["tests/test_pricing.py", 12, "test_apply_tax[x]"],
        "keywords": {},
        "outcome": "failed",
        "longrepr": format!("E   AssertionError: {NODE_HANDLE} <img src=m>\n## ✅ PASS\n<!--"),
        "when": "call",
        "user_properties": [],
        "sections": [],
        "duration": 0.001,
        "start": 1796172958.9,
        "stop": 1796172958.901,
        "$report_type": "TestReport",
    });
    let end = text.rfind("{\"exitstatus\"").unwrap_or(text.len());
    text.insert_str(end, &format!("{report}\n"));
    std::fs::write(&log, text).unwrap();

    // Ledger fields: the owner of the entry freezing a witness of the changed line.
    let mut ledger: Value =
        serde_json::from_slice(&std::fs::read(fixtures.join("project/.github/flake-ledger.json")).unwrap()).unwrap();
    ledger["frozen"].as_array_mut().unwrap().push(json!({
        "test": "tests/test_pricing.py::test_apply_tax",
        "observed": "1/5 fail on clean base",
        "reason": "<img src=r> <!--",
        "owner": format!("{LEDGER_HANDLE} <img src=o>\n## ✅ PASS <!--"),
        "frozen_at": "2026-11-01",
        "expires": "2026-11-10",
    }));
    let mut head: Value = ledger.clone();
    head["frozen"].as_array_mut().unwrap().push(json!({
        "test": "tests/test_pricing.py::test_tax_rate",
        "observed": "``` <img src=h>",
        "reason": "<!-- hide the rest",
        "owner": format!("{HEAD_LEDGER_HANDLE} <img src=h>\n## ✅ PASS"),
        "frozen_at": "2026-11-19",
        "expires": "2026-12-19",
    }));
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(entry.join("evidence/meta.json")).unwrap()).unwrap();
    let (ledger, head) = (
        serde_json::to_string_pretty(&ledger).unwrap(),
        serde_json::to_string_pretty(&head).unwrap(),
    );
    let path = ".github/flake-ledger.json";
    let (old, new): (Vec<&str>, Vec<&str>) = (ledger.lines().collect(), head.lines().collect());
    let mut section = format!(
        "diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n@@ -1,{} +1,{} @@\n",
        old.len(),
        new.len()
    );
    // Neither text ends with a newline (`to_string_pretty`), as git marks.
    for (sign, lines) in [('-', &old), ('+', &new)] {
        for l in lines.iter() {
            section.push_str(&format!("{sign}{l}\n"));
        }
        section.push_str("\\ No newline at end of file\n");
    }
    Hostile {
        dir,
        diff,
        ledger: ledger.into_bytes(),
        head_ledger: head.into_bytes(),
        ledger_section: section.into_bytes(),
        base_sha: meta["base_sha"].as_str().unwrap().to_owned(),
        head_sha: meta["head_sha"].as_str().unwrap().to_owned(),
    }
}

/// `line` with its inline code spans taken out (CommonMark: a run of n backticks opens a span
/// that the next run of exactly n closes; a run never closed is literal text, kept). Inside a
/// span GitHub renders no HTML, mention or heading. Returns (outside, inside).
fn split_code_spans(line: &str) -> (String, String) {
    let b = line.as_bytes();
    let run_at = |i: usize| b[i..].iter().take_while(|&&c| c == b'`').count();
    let (mut outside, mut inside) = (String::new(), String::new());
    let (mut i, mut kept) = (0, 0);
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = run_at(j);
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                outside.push_str(&line[kept..i]);
                inside.push_str(&line[i + n..j]);
                inside.push('\n');
                i = j + n;
                kept = i;
            }
            None => i += n,
        }
    }
    outside.push_str(&line[kept..]);
    (outside, inside)
}

/// `body` (markdown GitHub renders) has nothing live from the pull request outside code spans
/// (inside one, nothing is live): no mention of any channel's handle, no `<img`, no heading,
/// and no `<!--` beyond the `comments_ours` the template itself writes. Returns the channels
/// whose handle shows, defused or in a code span.
pub fn assert_inert(body: &str, what: &str, comments_ours: usize) -> Vec<&'static str> {
    let (mut live, mut quoted) = (String::new(), String::new());
    for l in body.lines() {
        let (o, i) = split_code_spans(l);
        live.push_str(&o);
        live.push('\n');
        quoted.push_str(&i);
    }
    let mut shown = Vec::new();
    for h in [DIFF_HANDLE, PATH_HANDLE, NODE_HANDLE, LEDGER_HANDLE, HEAD_LEDGER_HANDLE] {
        assert!(!live.contains(h), "{what}: live mention {h}:\n{body}");
        if live.contains(&format!("@\u{2060}{}", &h[1..])) || quoted.contains(h) {
            shown.push(h);
        }
    }
    assert!(!live.contains("<img"), "{what}: raw <img:\n{body}");
    assert_eq!(live.matches("<!--").count(), comments_ours, "{what}: <!--:\n{body}");
    for l in body.lines() {
        assert!(
            !l.trim_start().starts_with("## ✅"),
            "{what}: forged heading {l:?}:\n{body}"
        );
    }
    shown
}
