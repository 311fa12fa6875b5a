//! A release adding modules in every shape where a line is not a statement
//! (`tests/fixtures/statements/`) through the App end to end, once with the run's
//! coverage.json in the evidence artifact and once with its `.coverage` data file: the
//! App fetches the head's sources through the contents API and classifies the data file's
//! statements with them, so both records give the same verdict, reasons and lines. (The
//! release here adds the hand-written shapes module; `tests/cli/statements.rs` adds the
//! generated ones too.)

use crate::git_cmd::git_output as git;
use crate::support::app_harness::*;
use crate::support::fake_repo::{ArtifactState, FakeRepo};
use flakegate::store::RetryPolicy;
use serde_json::Value;

const PR: u64 = 21;
const RUN_ID: u64 = 4_300_001;
const BASE: &str = "7100000000000000000000000000000000000000";
const HEAD: &str = "7200000000000000000000000000000000000000";

/// The release's diff (the package and its tests added) and the head's files.
fn release() -> (String, Vec<(String, Vec<u8>)>) {
    let out = fixtures().join("statements/out");
    let t = tempfile::tempdir().unwrap();
    let repo = t.path();
    std::fs::write(repo.join("README.md"), "statements\n").unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "base"]);
    let mut files = Vec::new();
    for dir in ["src/stmts", "tests"] {
        std::fs::create_dir_all(repo.join(dir)).unwrap();
        for e in std::fs::read_dir(out.join(dir)).unwrap() {
            let p = e.unwrap().path();
            // The shapes module and the tests (the generated modules are `flakegate check`'s,
            // tests/cli/statements.rs: here the record must fit the check run's text).
            let name = p.file_name().unwrap().to_string_lossy();
            if ["__init__.py", "shapes.py", "test_stmts.py"].contains(&name.as_ref()) {
                let rel = format!("{dir}/{}", p.file_name().unwrap().to_string_lossy());
                let bytes = std::fs::read(&p).unwrap();
                std::fs::write(repo.join(&rel), &bytes).unwrap();
                files.push((rel, bytes));
            }
        }
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "head"]);
    (git(repo, &["diff", "HEAD~1...HEAD"]), files)
}

/// The record the App posts when the artifact holds `coverage` (a file of the fixture's
/// line-mode run) and the run's report-log.
async fn record(coverage: &str) -> Value {
    let (diff, files) = release();
    let run = fixtures().join("statements/out/line");
    let t = tempfile::tempdir().unwrap();
    std::fs::copy(run.join(coverage), t.path().join(coverage)).unwrap();
    copy_tree(&run.join("results"), &t.path().join("results"));
    let app = App::start(RetryPolicy::default()).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    for (path, bytes) in &files {
        repo.put_file(HEAD, path, bytes);
    }
    repo.add_pull(PR, BASE, HEAD, &diff);
    repo.add_workflow_run(RUN_ID, ARTIFACT, ArtifactState::Zip(FakeRepo::zip_dir(t.path())));
    app.deliver("pull_request", &pull_request_event("opened", PR, BASE, HEAD))
        .await;
    app.deliver(
        "workflow_run",
        &workflow_run_completed(RUN_ID, HEAD, WORKFLOW, &[(PR, BASE)]),
    )
    .await;
    app.worker.run_until_idle().await.unwrap();
    let runs = repo.check_runs();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let text = runs[0].text.as_deref().unwrap();
    let start = text.find("```json\n").unwrap() + "```json\n".len();
    let end = start + text[start..].find("\n```").unwrap();
    app.fake.verify().await;
    serde_json::from_str(&text[start..end]).unwrap()
}

fn judged(v: &Value) -> Value {
    let files: Vec<Value> = v["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files: {v:#}"))
        .iter()
        .map(|f| {
            serde_json::json!({
                "path": f["path"], "lines": f["lines"], "stable": f["stable_lines"],
                "uncovered": f["uncovered_lines"], "frozen_only": f["frozen_only_lines"],
            })
        })
        .collect();
    serde_json::json!({"verdict": v["verdict"], "reasons": v["reasons"], "files": files})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_file_and_coverage_json_give_one_record_through_the_app() {
    let json = record("coverage.json").await;
    let db = record(".coverage").await;
    assert_eq!(db["coverage"]["format"], "data_file", "{db:#}");
    assert_eq!(judged(&json), judged(&db));
    let shapes = db["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "src/stmts/shapes.py")
        .unwrap();
    // Docstring lines 1 and 3, `else:` of `try` (47), `finally:` (49), a literal's entry (17).
    for line in [1, 3, 17, 47, 49] {
        assert!(
            !shapes["uncovered_lines"].as_array().unwrap().contains(&line.into()),
            "shapes.py:{line} is blind: {shapes:#}"
        );
    }
    assert!(
        db["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["role"] == "source" && i["path"] == format!("{HEAD}:src/stmts/shapes.py").as_str()),
        "{:#}",
        db["inputs"]
    );
}
