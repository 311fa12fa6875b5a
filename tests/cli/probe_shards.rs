//! Probes from a CI matrix (docs/cli.md): `flakegate check --probe DIR` where DIR holds
//! one directory per job (`<shard>/meta.json` and that job's runs), made here from the
//! committed probe runs (tests/fixtures/probe, real pytest report-logs).

use crate::shard_fixtures::write_shard;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Shards `a` (runs 1–2) and `b` (runs 3–5), each with a meta.json naming `base_sha`.
fn shards(dir: &Path, base_a: &str, base_b: &str) {
    for (name, runs, sha) in [("a", 1..=2, base_a), ("b", 3..=5, base_b)] {
        write_shard(dir, name, runs, &format!("{{\"base_sha\": \"{sha}\", \"k\": 5}}\n"));
    }
}

fn check(probe: &Path) -> (i32, Value) {
    let case = fixtures().join("cases/frozen_only");
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args([
            "check",
            "--format",
            "json",
            "--diff",
            case.join("diff.patch").to_str().unwrap(),
            "--coverage",
            case.join("evidence/coverage.json").to_str().unwrap(),
            "--results",
            case.join("evidence/results").to_str().unwrap(),
            "--ledger",
            fixtures().join("project/.github/flake-ledger.json").to_str().unwrap(),
            "--probe",
            probe.to_str().unwrap(),
            "--today",
            "2026-11-20",
        ])
        .output()
        .unwrap();
    let json =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), json)
}

fn base_sha() -> String {
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("probe/meta.json")).unwrap()).unwrap();
    meta["base_sha"].as_str().unwrap().to_string()
}

#[test]
fn shards_of_one_probe_count_as_the_whole_probe() {
    let tmp = tempfile::tempdir().unwrap();
    let sha = base_sha();
    shards(tmp.path(), &sha, &sha);
    let (_, sharded) = check(tmp.path());
    let (_, whole) = check(&fixtures().join("probe/reportlog"));
    assert_eq!(sharded["probe"], whole["probe"]);
    assert_eq!(sharded["probe"]["k"], 5);
    assert_eq!(sharded["verdict"], whole["verdict"]);
    assert_eq!(sharded["witnesses"]["unstable"], whole["witnesses"]["unstable"]);
    // Each shard's meta.json and runs are digested as probe inputs.
    let probe_inputs: Vec<&str> = sharded["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["role"] == "probe")
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(probe_inputs.len(), 7, "{probe_inputs:?}");
    assert!(probe_inputs.iter().any(|p| p.ends_with("b/meta.json")));
}

#[test]
fn shards_of_different_bases_or_collections_are_unusable_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    shards(tmp.path(), &base_sha(), "0000000000000000000000000000000000000000");
    let (code, r) = check(tmp.path());
    assert_eq!((r["verdict"].as_str().unwrap(), code), ("INCONCLUSIVE", 1));
    let first = &r["reasons"][0];
    assert_eq!(first["code"], "missing_evidence");
    let msg = first["message"].as_str().unwrap();
    assert!(
        msg.contains("different base commits") && msg.contains("0000000000"),
        "{msg}"
    );
    assert!(first["locations"][0]["file"].as_str().unwrap().ends_with("b/meta.json"));

    // Same base, but shard b ran one test fewer (a run of another collection).
    let tmp = tempfile::tempdir().unwrap();
    let sha = base_sha();
    shards(tmp.path(), &sha, &sha);
    for n in 3..=5 {
        let p = tmp.path().join(format!("b/run-{n}.jsonl"));
        let kept: Vec<String> = std::fs::read_to_string(&p)
            .unwrap()
            .lines()
            .filter(|l| !l.contains("tests/test_util.py::test_round_half_up"))
            .map(str::to_string)
            .collect();
        std::fs::write(&p, kept.join("\n") + "\n").unwrap();
    }
    let (_, r) = check(tmp.path());
    assert_eq!(r["verdict"], "INCONCLUSIVE");
    let msg = r["reasons"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("collected different tests") && msg.contains("test_round_half_up"),
        "{msg}"
    );

    // A result file loose beside the shards is not silently merged or dropped.
    let tmp = tempfile::tempdir().unwrap();
    shards(tmp.path(), &sha, &sha);
    std::fs::copy(
        fixtures().join("probe/reportlog/run-1.jsonl"),
        tmp.path().join("run-9.jsonl"),
    )
    .unwrap();
    let (_, r) = check(tmp.path());
    assert_eq!(r["reasons"][0]["code"], "missing_evidence");
    assert!(r["reasons"][0]["message"]
        .as_str()
        .unwrap()
        .contains("beside probe shards"));
}

fn probe_from(dirs: &[PathBuf]) -> std::process::Output {
    let mut args = vec!["probe".to_string(), "--format".into(), "json".into(), "--from".into()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--today".into(), "2026-11-20".into()]);
    Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(&args)
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap()
}

#[test]
fn probe_from_shards_checks_their_base_sha() {
    let tmp = tempfile::tempdir().unwrap();
    let sha = base_sha();
    shards(tmp.path(), &sha, &sha);
    let dirs = [tmp.path().join("a"), tmp.path().join("b")];
    let out = probe_from(&dirs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    // meta.json is no run: five runs, all usable.
    assert_eq!(j["k"], 5, "{j}");

    let tmp = tempfile::tempdir().unwrap();
    shards(tmp.path(), &sha, "0000000000000000000000000000000000000000");
    let out = probe_from(&[tmp.path().join("a"), tmp.path().join("b")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("different base commits"), "{stderr}");
}
