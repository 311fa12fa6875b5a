//! The agent-proofing corpus (`tests/fixtures/corpus/`) through the App, end to end: for each
//! entry, the fake GitHub holds the pull request (its real `git diff`), the ledger at the base
//! and at the head (as the entry's commit leaves it), and a completed run of the evidence
//! workflow whose artifact is the entry's evidence plus the base probe. The webhooks go through
//! the real router, store and worker; the verdict and reason codes the App publishes must be the
//! ones `flakegate check --base` gives (`tests/cli/corpus.rs`) — the library and the App agree.

use crate::support::app_harness::*;
use crate::support::fake_repo::{ArtifactState, FakeRepo};
use chrono::NaiveDate;
use flakegate::store::RetryPolicy;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const PR: u64 = 7;
const RUN_ID: u64 = 4_200_001;

struct Entry {
    name: String,
    dir: PathBuf,
    case: Value,
    base: String,
    head: String,
}

fn entries() -> Vec<Entry> {
    let mut out: Vec<Entry> = std::fs::read_dir(fixtures().join("corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("case.json").is_file())
        .map(|dir| {
            let read = |rel: &str| -> Value {
                serde_json::from_str(&std::fs::read_to_string(dir.join(rel)).unwrap()).unwrap()
            };
            let meta = read("evidence/meta.json");
            Entry {
                name: dir.file_name().unwrap().to_string_lossy().into_owned(),
                case: read("case.json"),
                base: meta["base_sha"].as_str().unwrap().to_owned(),
                head: meta["head_sha"].as_str().unwrap().to_owned(),
                dir,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The head tree's ledger: the project's with the entry's patch applied (by git, to the
/// project's ledger written into a scratch dir; the patch's other files are left out), or
/// `None` when the patch deletes it.
fn head_ledger(e: &Entry) -> Option<Vec<u8>> {
    let t = tempfile::tempdir().unwrap();
    let ledger = t.path().join(LEDGER_PATH);
    std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
    std::fs::write(&ledger, base_ledger()).unwrap();
    let out = Command::new("git")
        .args(["apply", "--unsafe-paths", &format!("--include={LEDGER_PATH}")])
        .arg(e.dir.join("diff.patch"))
        .current_dir(t.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: git apply: {}",
        e.name,
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(ledger).ok()
}

/// The head tree's changed Python files and its test package (the project with the entry's
/// whole patch applied by git), as the contents API serves them at the head: the App reads
/// them to give a definition's header the witnesses of its body, and to read the tests.
fn head_sources(e: &Entry) -> Vec<(String, Vec<u8>)> {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let t = tempfile::tempdir().unwrap();
    copy(&fixtures().join("project"), t.path());
    let out = Command::new("git")
        .args(["apply", "--unsafe-paths"])
        .arg(e.dir.join("diff.patch"))
        .current_dir(t.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: git apply: {}",
        e.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let diff = std::fs::read_to_string(e.dir.join("diff.patch")).unwrap();
    let mut paths: Vec<String> = diff
        .lines()
        .filter_map(|l| l.strip_prefix("+++ b/").or_else(|| l.strip_prefix("rename to ")))
        .filter(|p| p.ends_with(".py"))
        .map(str::to_owned)
        .collect();
    // The test package's other modules (conftest.py, __init__.py, helpers): the trust rules
    // follow a test into them.
    for entry in std::fs::read_dir(t.path().join("tests")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".py") {
            paths.push(format!("tests/{name}"));
        }
    }
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|p| std::fs::read(t.path().join(&p)).ok().map(|b| (p, b)))
        .collect()
}

/// The evidence record: the check run's `text` holds it in a fenced json block.
fn json_block(text: &str) -> Value {
    let Some(start) = text.find("```json\n").map(|i| i + "```json\n".len()) else {
        return Value::Null;
    };
    let end = text[start..].find("\n```").map_or(text.len(), |i| start + i);
    serde_json::from_str(&text[start..end]).unwrap_or(Value::Null)
}

fn codes(record: &Value) -> Vec<String> {
    record["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_entry_gets_its_verdict_from_the_app() {
    let mut wrong = Vec::new();
    let all = entries();
    assert!(all.len() >= 41, "corpus: {} entries", all.len());
    for e in &all {
        let app = App::start(RetryPolicy::default()).await;
        // The App's clock says the entry's `today` (the harness starts at 2026-11-20 12:00 UTC).
        let today = NaiveDate::parse_from_str(e.case["today"].as_str().unwrap(), "%Y-%m-%d").unwrap();
        let start = NaiveDate::from_ymd_opt(2026, 11, 20).unwrap();
        app.advance(Duration::from_secs(86_400 * (today - start).num_days() as u64));
        let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
        repo.put_file(&e.base, LEDGER_PATH, &base_ledger());
        if let Some(l) = head_ledger(e) {
            repo.put_file(&e.head, LEDGER_PATH, &l);
        }
        for (path, bytes) in head_sources(e) {
            repo.put_file(&e.head, &path, &bytes);
        }
        let diff = std::fs::read_to_string(e.dir.join("diff.patch")).unwrap();
        repo.add_pull(PR, &e.base, &e.head, &diff);
        repo.add_workflow_run(RUN_ID, ARTIFACT, ArtifactState::Zip(evidence_zip(&e.dir, true)));

        app.deliver("pull_request", &pull_request_event("opened", PR, &e.base, &e.head))
            .await;
        app.deliver(
            "workflow_run",
            &workflow_run_completed(RUN_ID, &e.head, WORKFLOW, &[(PR, e.base.as_str())]),
        )
        .await;
        app.worker.run_until_idle().await.unwrap();

        let runs = repo.check_runs();
        assert_eq!(runs.len(), 1, "{}: {runs:#?}", e.name);
        let run = &runs[0];
        let want_verdict = e.case["expected_verdict"].as_str().unwrap();
        let want_codes: Vec<String> = serde_json::from_value(e.case["expected_codes"].clone()).unwrap();
        let want_conclusion = match want_verdict {
            "PASS" | "PASS_WITH_CAVEAT" => "success",
            _ => "failure",
        };
        let record = json_block(run.text.as_deref().unwrap_or(""));
        let got_codes = if record.is_null() { vec![] } else { codes(&record) };
        let title = run.title.clone().unwrap_or_default();
        if run.status != "completed"
            || run.conclusion.as_deref() != Some(want_conclusion)
            || !title.starts_with(want_verdict)
            || record["verdict"] != want_verdict
            || got_codes != want_codes
        {
            wrong.push(format!(
                "{}: {} {:?} \"{title}\" codes {got_codes:?}; want {want_conclusion} {want_verdict} {want_codes:?}",
                e.name, run.status, run.conclusion
            ));
        }
        // The App read the head's source, so the new def's header lines have
        // the witnesses of its body (without it they would be import-time lines).
        if e.name == "honest_extract_method" {
            let f = record["files"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["path"] == "src/shop/pricing.py")
                .unwrap();
            assert_eq!(f["stable_lines"], serde_json::json!([15, 16, 17, 18, 20, 27]), "{f:#}");
            assert_eq!(f["import_time_lines"], serde_json::json!([]), "{f:#}");
            let source = format!("{}:src/shop/pricing.py", e.head);
            assert!(
                record["inputs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|i| i["role"] == "source" && i["path"] == source.as_str()),
                "{:#}",
                record["inputs"]
            );
        }
        if e.name == "adv_import_time_only" {
            let f = &record["files"][0];
            assert_eq!(f["import_time_lines"], serde_json::json!([3, 5]), "{f:#}");
        }
        if e.name == "adv_import_time_breaks" {
            // The failing tax tests ran no changed line by their contexts, but the changed line
            // ran at import time: the patch may have changed what they ran, so it is blamed.
            let f = &record["files"][0];
            assert_eq!(f["import_time_lines"], serde_json::json!([8]), "{f:#}");
            let failed = record["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["code"] == "failed")
                .expect("a failed reason");
            assert!(
                failed["tests"]
                    .to_string()
                    .contains("tests/test_pricing.py::test_apply_tax"),
                "{failed:#}"
            );
            assert_eq!(run.conclusion.as_deref(), Some("failure"));
        }
        // Where the patch weakened a test, the check run annotates the line.
        if e.name == "adv_sleep" {
            assert!(
                run.annotations
                    .iter()
                    .any(|a| a["path"] == "tests/test_pricing.py" && a["start_line"] == 13),
                "{:#?}",
                run.annotations
            );
        }
        // The comment: none for an honest patch (nothing to ask of anyone); for an adversarial
        // one, a single comment that names the verdict and what the patch did to its evidence.
        let comments = repo.comments(PR);
        let patch_code = want_codes.iter().find(|c| {
            ![
                "failed",
                "expired",
                "uncovered",
                "blind_lines",
                "some_frozen",
                "frozen_only",
            ]
            .contains(&c.as_str())
        });
        if e.name.starts_with("honest_") {
            assert!(comments.is_empty(), "{}: {comments:#?}", e.name);
        } else if let Some(patch_code) = patch_code {
            assert_eq!(comments.len(), 1, "{}: {comments:#?}", e.name);
            let body = &comments[0].body;
            assert!(body.contains(want_verdict), "{}: {body}", e.name);
            assert!(body.contains(&format!("`{patch_code}`")), "{}: {body}", e.name);
        } else if want_codes.iter().any(|c| c == "frozen_only") {
            // The frozen witness's owner is asked to act (adv_frozen_test_moved: the freeze
            // followed the moved file, under its new path).
            assert_eq!(comments.len(), 1, "{}: {comments:#?}", e.name);
            let body = &comments[0].body;
            assert!(
                body.contains(want_verdict) && body.contains("@shop/payments: fix"),
                "{}: {body}",
                e.name
            );
        } else {
            // Nothing the patch did to its own evidence (adv_import_time_only: no test speaks
            // for it): the blocking check run says so, and nobody is asked for anything.
            assert!(comments.is_empty(), "{}: {comments:#?}", e.name);
        }
        app.fake.verify().await;
    }
    assert!(
        wrong.is_empty(),
        "the App disagrees with the corpus:\n{}",
        wrong.join("\n")
    );
}

/// Evidence that is not about the head under review: the App names the workflow the
/// `workflow_run` payload says produced it (here not the one `meta.json` claims).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evidence_for_another_commit_names_the_workflow_from_the_payload() {
    let all = entries();
    let e = all.iter().find(|e| e.name == "honest_refactor").unwrap();
    let app = App::start(RetryPolicy::default()).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let head = "0123456789abcdef0123456789abcdef01234567";
    repo.put_file(&e.base, LEDGER_PATH, &base_ledger());
    repo.put_file(head, LEDGER_PATH, &base_ledger());
    let diff = std::fs::read_to_string(e.dir.join("diff.patch")).unwrap();
    repo.add_pull(PR, &e.base, head, &diff);
    let workflow = ".github/workflows/ci.yml";
    repo.add_workflow_run(RUN_ID, ARTIFACT, ArtifactState::Zip(evidence_zip(&e.dir, true)));
    app.deliver(
        "workflow_run",
        &workflow_run_completed(RUN_ID, head, workflow, &[(PR, e.base.as_str())]),
    )
    .await;
    app.worker.run_until_idle().await.unwrap();
    let runs = repo.check_runs();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    let record = json_block(runs[0].text.as_deref().unwrap());
    assert_eq!(record["verdict"], "INCONCLUSIVE", "{:#}", record["reasons"]);
    assert_eq!(codes(&record)[0], "evidence_mismatch", "{:#}", record["reasons"]);
    let m = record["reasons"][0]["message"].as_str().unwrap();
    assert!(m.contains(&e.head) && m.contains(head), "{m}");
    assert!(m.contains(workflow), "the workflow from the payload: {m}");
    let comments = repo.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].body.contains("`evidence_mismatch`"), "{}", comments[0].body);
    app.fake.verify().await;
}
