//! Probes from a CI matrix end to end: the evidence artifact's `probe/` holds one directory per
//! matrix job (`probe/probe-run-N/run-N.jsonl` and `probe/probe-run-N/meta.json`), as the shipped
//! workflow uploads it, made in a temp dir from the committed probe runs
//! (`tests/fixtures/probe/reportlog`). The CLI side is `tests/cli/probe_shards.rs`.

use crate::scenarios::{assert_inconclusive_saying, finish, open_then_evidence, record, start, summary, the_check};
use crate::shard_fixtures::write_shard;
use crate::support::app_harness::{case, stage_case, Case, ARTIFACT};
use crate::support::fake_repo::{ArtifactState, CheckRunState, FakeRepo};

/// A case whose flat probe passes (PASS_WITH_CAVEAT, success): a mismatch must turn it.
const CASE: &str = "some_frozen";
const PR: u64 = 21;
const RUN_ID: u64 = 2100;

/// The case's evidence with its probe as five one-run shards, each naming `base_of(N)`.
fn sharded_zip(c: &Case, base_of: impl Fn(u32) -> String) -> Vec<u8> {
    let probe = tempfile::tempdir().unwrap();
    for n in 1..=5 {
        let meta = format!("{{\"base_sha\": \"{}\", \"run\": {n}}}\n", base_of(n));
        write_shard(probe.path(), &format!("probe-run-{n}"), [n], &meta);
    }
    FakeRepo::zip_dirs(&[(&c.dir.join("evidence"), ""), (probe.path(), "probe")])
}

/// A fresh App judges `c` with `zip` as its evidence artifact; the completed check run.
async fn judge(c: &Case, zip: Option<Vec<u8>>) -> CheckRunState {
    let (app, repo) = start().await;
    // Staged with the flat probe; a sharded artifact replaces it.
    stage_case(&repo, PR, c, RUN_ID);
    if let Some(zip) = zip {
        repo.add_workflow_run(RUN_ID, ARTIFACT, ArtifactState::Zip(zip));
    }
    open_then_evidence(&app, PR, c, RUN_ID).await;
    let done = the_check(&repo, &c.head_sha);
    finish(app).await;
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_shards_of_one_base_conclude_as_the_flat_probe() {
    let c = case(CASE);
    let flat = judge(&c, None).await;
    let sharded = judge(&c, Some(sharded_zip(&c, |_| c.base_sha.clone()))).await;

    assert_eq!(flat.status, "completed", "{flat:#?}");
    assert_eq!(flat.conclusion.as_deref(), Some("success"), "{flat:#?}");
    assert_eq!(record(&flat)["verdict"], c.expected_verdict.as_str());
    assert_eq!(sharded.status, flat.status);
    assert_eq!(sharded.conclusion, flat.conclusion, "{sharded:#?}");
    assert_eq!(sharded.title, flat.title);
    let (r, f) = (record(&sharded), record(&flat));
    assert_eq!(r["verdict"], f["verdict"]);
    assert_eq!(r["reasons"], f["reasons"]);
    assert_eq!(r["witnesses"], f["witnesses"]);
    assert_eq!(r["probe"]["k"], 5, "{r}");
    // Every shard's meta.json is a probe input, named as the artifact names it.
    let inputs: Vec<&str> = r["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["path"].as_str())
        .collect();
    for n in 1..=5 {
        let meta = format!("flakegate-evidence/probe/probe-run-{n}/meta.json");
        assert!(inputs.contains(&meta.as_str()), "{meta} not in {inputs:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_shard_of_another_base_is_inconclusive_naming_the_mismatch() {
    let c = case(CASE);
    let other = "0000000000000000000000000000000000000000";
    assert_ne!(c.base_sha, other);
    let zip = sharded_zip(&c, |n| if n == 3 { other.to_string() } else { c.base_sha.clone() });
    let done = judge(&c, Some(zip)).await;
    assert_ne!(done.conclusion.as_deref(), Some("success"), "{done:#?}");
    assert_inconclusive_saying(&done, &["different base commits", "probe-run-3", other]);
    assert_eq!(record(&done)["verdict"], "INCONCLUSIVE");
    assert!(summary(&done).contains(&c.base_sha), "{}", summary(&done));
}
