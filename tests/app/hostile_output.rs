//! What the App posts when the pull request is hostile (inert strings, GitHub's size limits, a
//! diff that is not UTF-8; docs/security.md, "The App's defences"), end to end: real corpus
//! entries (`tests/fixtures/corpus/`), their diffs changed the way an attacker with push access
//! would change them, through the real router, store, worker and client against the fake
//! GitHub — which checks every body against GitHub's OpenAPI subset and its size limits
//! (`support::fake_github::github_limits`).

use crate::support::app_harness::*;
use crate::support::fake_repo::{ArtifactState, CheckRunState, CommentState, FakeRepo};
use flakegate::store::RetryPolicy;
use serde_json::Value;
use std::path::PathBuf;

const PR: u64 = 9;
const RUN_ID: u64 = 4_300_001;

fn entry(name: &str) -> PathBuf {
    fixtures().join("corpus").join(name)
}

fn shas(dir: &std::path::Path) -> (String, String) {
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("evidence/meta.json")).unwrap()).unwrap();
    (
        meta["base_sha"].as_str().unwrap().to_owned(),
        meta["head_sha"].as_str().unwrap().to_owned(),
    )
}

fn diff_of(name: &str) -> String {
    std::fs::read_to_string(entry(name).join("diff.patch")).unwrap()
}

/// Judge corpus entry `name` with its diff replaced by `diff` (served as `bytes` when given,
/// which need not be UTF-8): the pull request opens, its evidence run completes, the worker
/// runs until idle. Returns the App (to verify), the repository, the one check run and the
/// comments on the pull request.
async fn judge(name: &str, diff: &str, bytes: Option<&[u8]>) -> (App, FakeRepo, CheckRunState, Vec<CommentState>) {
    let dir = entry(name);
    let (base, head) = shas(&dir);
    let app = App::start(RetryPolicy::default()).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    repo.put_file(&base, LEDGER_PATH, &base_ledger());
    repo.put_file(&head, LEDGER_PATH, &base_ledger());
    repo.add_pull(PR, &base, &head, diff);
    if let Some(b) = bytes {
        repo.set_diff_bytes(PR, b);
    }
    repo.add_workflow_run(RUN_ID, ARTIFACT, ArtifactState::Zip(evidence_zip(&dir, true)));
    app.deliver("pull_request", &pull_request_event("opened", PR, &base, &head))
        .await;
    app.deliver(
        "workflow_run",
        &workflow_run_completed(RUN_ID, &head, WORKFLOW, &[(PR, base.as_str())]),
    )
    .await;
    app.worker.run_until_idle().await.unwrap();
    let runs = repo.check_runs();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let run = runs[0].clone();
    assert_eq!(run.status, "completed", "{run:#?}");
    let comments = repo.comments(PR);
    (app, repo, run, comments)
}

/// The evidence record: the check run's `text` holds it in a fenced json block.
fn record(run: &CheckRunState) -> Value {
    let text = run.text.as_deref().unwrap_or("");
    let start = text.find("```json\n").expect("a json block") + "```json\n".len();
    let end = start + text[start..].find("\n```").expect("the block closes");
    serde_json::from_str(&text[start..end]).expect("the block is JSON")
}

/// GitHub's limits: a 70 KB changed line, quoted by the reason that names it, becomes an
/// annotation within GitHub's 64 KiB (cut with a note); the summary, text and comment stay within
/// theirs.
/// The fake GitHub refuses any request over a limit, and `verify` fails on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_70_kb_changed_line_is_posted_within_githubs_limits() {
    let long = format!("    time.sleep(0.01)  # {}", "x".repeat(70_000));
    let diff = diff_of("adv_sleep").replace("+    time.sleep(0.01)\n", &format!("+{long}\n"));
    assert!(diff.len() > 70_000);
    let (app, _repo, run, comments) = judge("adv_sleep", &diff, None).await;
    assert_eq!(run.conclusion.as_deref(), Some("success"), "PASS_WITH_CAVEAT");
    let weakened = run
        .annotations
        .iter()
        .find(|a| a["path"] == "tests/test_pricing.py" && a["start_line"] == 13)
        .unwrap_or_else(|| panic!("{:#?}", run.annotations));
    let message = weakened["message"].as_str().unwrap();
    assert!(message.len() <= 64 * 1024, "{}", message.len());
    assert!(message.contains("time.sleep(0.01)  # xxxx"), "the line is quoted");
    assert!(message.contains("cut here"), "and cut with a note");
    for a in &run.annotations {
        assert!(a["message"].as_str().unwrap().len() <= 64 * 1024);
        assert!(a["title"].as_str().unwrap_or("").chars().count() <= 255);
    }
    assert!(run.summary.as_deref().unwrap().len() <= 65_535);
    assert!(run.text.as_deref().unwrap().len() <= 65_535);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].body.chars().count() <= 65_536);
    app.fake.verify().await;
}

/// A diff that is not UTF-8: a Latin-1 file anywhere in the pull request's diff makes that file
/// blind, with the diff line of its first invalid byte, and the rest of the patch is judged as
/// usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latin1_file_in_the_diff_is_blind_not_fatal() {
    let diff = diff_of("honest_bug_fix");
    let bad_line = diff.lines().count() + 7;
    let mut bytes = diff.clone().into_bytes();
    bytes.extend_from_slice(
        b"diff --git a/src/shop/legacy.py b/src/shop/legacy.py\nindex 1111111..2222222 100644\n--- a/src/shop/legacy.py\n+++ b/src/shop/legacy.py\n@@ -1,2 +1,2 @@\n-NAME = 'cafe'\n+NAME = 'caf\xe9'\n X = 1\n",
    );
    let (app, _repo, run, _) = judge("honest_bug_fix", &diff, Some(&bytes)).await;
    let r = record(&run);
    assert_eq!(r["verdict"], "PASS_WITH_CAVEAT", "{:#}", r["reasons"]);
    assert_eq!(r["reasons"][0]["code"], "blind_lines", "{:#}", r["reasons"]);
    let files = r["files"].as_array().unwrap();
    let legacy = files
        .iter()
        .find(|f| f["path"] == "src/shop/legacy.py")
        .unwrap_or_else(|| panic!("{files:#?}"));
    assert_eq!(legacy["evidence"], "blind");
    let why = legacy["blind_reason"].as_str().unwrap();
    assert!(
        why.contains("not UTF-8") && why.contains(&format!(":{bad_line}")),
        "{why}"
    );
    let pricing = files.iter().find(|f| f["path"] == "src/shop/pricing.py").unwrap();
    assert_eq!(pricing["evidence"], "measured", "the rest is judged");
    assert!(
        run.annotations
            .iter()
            .any(|a| a["path"] == "src/shop/legacy.py" && a["title"] == "Blind file"),
        "{:#?}",
        run.annotations
    );
    app.fake.verify().await;
}

/// Inert strings: the hostile pull request of `tests/common/hostile.rs` (diff text, a path, a node
/// id, base and head ledger fields, each with a mention, an `<img>`, a forged heading and an
/// unclosed `<!--`) through the App: the posted comment and check-run summary show every
/// channel, and nothing of it is live; the one mention is the owner base CODEOWNERS names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_channel_of_a_hostile_pull_request_is_live_in_what_the_app_posts() {
    let h = crate::hostile::build(&fixtures());
    let app = App::start(RetryPolicy::default()).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    repo.put_file(&h.base_sha, LEDGER_PATH, &h.ledger);
    repo.put_file(&h.head_sha, LEDGER_PATH, &h.head_ledger);
    repo.put_file(&h.base_sha, ".github/CODEOWNERS", b"* @acme/reviewers\n");
    // A caveat mentions nobody by default: the base config asks for every owner, to show the one
    // live mention is a trusted source's.
    repo.put_file(&h.base_sha, ".github/flakegate.yml", b"mentions: always\n");
    // The head ledger's entry is the patch's own edit: its diff carries it.
    let diff = [h.diff.as_slice(), h.ledger_section.as_slice()].concat();
    repo.add_pull(PR, &h.base_sha, &h.head_sha, &String::from_utf8(diff).unwrap());
    repo.add_workflow_run(RUN_ID, ARTIFACT, ArtifactState::Zip(evidence_zip(h.dir.path(), true)));
    app.deliver(
        "pull_request",
        &pull_request_event("opened", PR, &h.base_sha, &h.head_sha),
    )
    .await;
    app.deliver(
        "workflow_run",
        &workflow_run_completed(RUN_ID, &h.head_sha, WORKFLOW, &[(PR, h.base_sha.as_str())]),
    )
    .await;
    app.worker.run_until_idle().await.unwrap();

    let runs = repo.check_runs();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let run = &runs[0];
    assert_eq!(run.status, "completed", "{run:#?}");
    let summary = run.summary.as_deref().unwrap();
    let shown = crate::hostile::assert_inert(summary, "check-run summary", 0);
    use crate::hostile::*;
    for channel in [DIFF_HANDLE, PATH_HANDLE, NODE_HANDLE, LEDGER_HANDLE, HEAD_LEDGER_HANDLE] {
        // An owner the summary asks to act is named without the `@` (and inert) when it is no
        // handle: the name reaches it all the same.
        assert!(
            shown.contains(&channel) || summary.contains(&format!("**{}", &channel[1..])),
            "{channel} does not reach the summary:\n{summary}"
        );
    }
    let title = run.title.as_deref().unwrap();
    assert!(!title.contains('\n'), "{title:?}");
    // The check run's text: the evidence record (which quotes the diff text as it is) in a code
    // block whose fence no backtick run inside can match.
    let text = run.text.as_deref().unwrap();
    let open = text
        .lines()
        .find(|l| l.starts_with("```") && l.ends_with("json"))
        .unwrap_or_else(|| panic!("{text}"));
    let fence = open.trim_end_matches("json");
    let start = text.find(open).unwrap() + open.len();
    let inside = &text[start..text.rfind(fence).unwrap()];
    assert!(inside.contains("``` @diff-owner"), "the record quotes the line exactly");
    assert!(!inside.contains(fence), "a run inside as long as the fence {fence:?}");
    assert!(text[..text.find(open).unwrap()].lines().all(|l| !l.contains('@')));

    let comments = repo.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let body = &comments[0].body;
    let shown = crate::hostile::assert_inert(body, "comment", 1);
    assert!(
        body.starts_with("<!-- flakegate:comment -->\n"),
        "the marker, ours: {body}"
    );
    for channel in [DIFF_HANDLE, PATH_HANDLE, HEAD_LEDGER_HANDLE] {
        assert!(
            shown.contains(&channel),
            "{channel} does not reach the comment:\n{body}"
        );
    }
    // A base-ledger owner that is no handle is named, bold, without its `@`, on one line.
    assert!(
        body.contains("- **ledger-owner &lt;img src=o&gt;⏎\\#\\# ✅ PASS &lt;\\!--**:"),
        "{body}"
    );
    // The one live mention: the owner base CODEOWNERS names, a trusted source.
    assert!(body.contains("- @acme/reviewers:"), "{body}");
    assert!(
        !body.contains("  - tests: \n"),
        "an owner through CODEOWNERS has no test list: {body}"
    );
    let live: Vec<&str> = body
        .split(|c: char| c.is_whitespace() || c == '(' || c == '*')
        .filter(|w| w.starts_with('@') && w.len() > 1 && !w.starts_with("@\u{2060}"))
        .collect();
    assert_eq!(live, ["@acme/reviewers:"], "{body}");
    app.fake.verify().await;
}
