//! The real release diff (cachetools 6.1.0 → 6.2.0, `tests/fixtures/release/`) through the App
//! end to end: the fake GitHub holds the pull request (the release's `git diff`), the head's
//! `src/cachetools/__init__.py` (fetched through the contents API to attribute the new methods'
//! `def` lines) and the evidence artifact. The App must say what `flakegate check --base` says
//! (`tests/cli/release.rs`): PASS, the def lines witnessed by their bodies' tests, `__version__`
//! an import-time line.

use crate::support::app_harness::*;
use crate::support::fake_repo::{ArtifactState, FakeRepo};
use flakegate::store::RetryPolicy;
use serde_json::{json, Value};
use std::process::Command;

const PR: u64 = 11;
const RUN_ID: u64 = 4_200_777;
const BASE: &str = "6100000000000000000000000000000000000000";
const HEAD: &str = "6200000000000000000000000000000000000000";
const MODULE: &str = "src/cachetools/__init__.py";

/// The 6.2.0 module: the committed 6.1.0 text with the release's diff applied by git.
fn head_module() -> Vec<u8> {
    let rel = fixtures().join("release/cachetools");
    let t = tempfile::tempdir().unwrap();
    let dst = t.path().join(MODULE);
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::copy(rel.join("base").join(MODULE), &dst).unwrap();
    let out = Command::new("git")
        .args(["apply", &format!("--include={MODULE}")])
        .arg(rel.join("diff.patch"))
        .current_dir(t.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git apply: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(dst).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_release_diff_passes_through_the_app_with_its_headers_witnessed() {
    let rel = fixtures().join("release/cachetools");
    let app = App::start(RetryPolicy::default()).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    repo.put_file(HEAD, MODULE, &head_module());
    let diff = std::fs::read_to_string(rel.join("diff.patch")).unwrap();
    repo.add_pull(PR, BASE, HEAD, &diff);
    repo.add_workflow_run(
        RUN_ID,
        ARTIFACT,
        ArtifactState::Zip(FakeRepo::zip_dir(&rel.join("evidence"))),
    );
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
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"));
    let text = runs[0].text.as_deref().unwrap();
    let start = text.find("```json\n").unwrap() + "```json\n".len();
    let end = start + text[start..].find("\n```").unwrap();
    let record: Value = serde_json::from_str(&text[start..end]).unwrap();
    assert_eq!(record["verdict"], "PASS", "{:#}", record["reasons"]);
    assert_eq!(record["reasons"][0]["code"], "all_stable");
    let f = record["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files array: {}", &text[..text.len().min(3000)]))
        .iter()
        .find(|f| f["path"] == MODULE)
        .unwrap_or_else(|| panic!("{MODULE} not in the record: {record:#}"));
    assert_eq!(f["import_time_lines"], json!([15]), "{f:#}");
    assert_eq!(
        f["stable_lines"],
        json!([291, 292, 299, 300, 301, 302, 303, 305, 306, 307, 308, 309, 310, 311, 312, 317]),
        "{f:#}"
    );
    assert!(
        record["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["role"] == "source" && i["path"] == format!("{HEAD}:{MODULE}").as_str()),
        "{:#}",
        record["inputs"]
    );
    // An honest release asks nothing of anyone: no comment.
    assert!(repo.comments(PR).is_empty());
    app.fake.verify().await;
}
