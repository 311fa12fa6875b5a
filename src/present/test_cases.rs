//! The real gate on the committed fixtures, for the tests of what the App publishes: a case of
//! `tests/fixtures/cases/`, or an entry of the agent-proofing corpus.

use crate::evidence::EvidenceSources;
use crate::gate::config::Config;
use crate::gate::report::Report;
use crate::gate::GateInput;
use std::path::PathBuf;

pub(super) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Run the real gate on a committed fixture case, as `tests/cli/check.rs` does.
pub(super) fn case_with(name: &str, config: &Config) -> Report {
    report_of(&fixtures().join("cases").join(name), config)
}

/// The gate on a fixture directory (a case, or an entry of the agent-proofing corpus).
pub(super) fn report_of(dir: &std::path::Path, config: &Config) -> Report {
    report_probed(dir, config, true)
}

/// [`report_of`], with the shared base probe or without any (`probed`).
pub(super) fn report_probed(dir: &std::path::Path, config: &Config, probed: bool) -> Report {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap()).unwrap();
    let today = chrono::NaiveDate::parse_from_str(meta["today"].as_str().unwrap(), "%Y-%m-%d").unwrap();
    let patch_bytes = std::fs::read(dir.join("diff.patch")).unwrap();
    let patch = crate::gate::patch::parse_patch("diff.patch", &patch_bytes).unwrap();
    let own = dir.join("ledger.json");
    let ledger_path = if own.is_file() {
        own
    } else {
        fixtures().join("project/.github/flake-ledger.json")
    };
    let ledger_text = std::fs::read_to_string(&ledger_path).unwrap();
    let ledger = crate::gate::ledger::parse_ledger("flake-ledger.json", &ledger_text, config.policy.max_freeze_days);
    let ev = dir.join("evidence");
    let sources = EvidenceSources {
        dir: None,
        coverage: Some(ev.join("coverage.json")),
        results: vec![ev.join("results")],
        probe: probed.then(|| fixtures().join("probe/reportlog")),
        meta: None,
        read_once: None,
    };
    let loaded = crate::evidence::load_evidence(&sources, &patch, ledger.as_ref().ok(), &Default::default());
    let input = GateInput {
        patch: &patch,
        ledger: &ledger,
        config,
        evidence: &loaded.evidence,
        today,
        base_sha: None,
        head_sha: Some("0123456789abcdef0123456789abcdef01234567".into()),
        inputs: Vec::new(),
        workflow: None,
    };
    crate::gate::evaluate(&input)
}

/// Every fixture directory the gate can be run on: the cases, then the corpus, by name.
pub(super) fn all_fixture_dirs() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for group in ["cases", "corpus"] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures().join(group))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|d| d.join("case.json").is_file() && d.join("diff.patch").is_file())
            .collect();
        dirs.sort();
        for d in dirs {
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, d));
        }
    }
    out
}

pub(super) fn case(name: &str) -> Report {
    case_with(name, &Config::default())
}

/// The blindness map of a fixture's full-suite evidence with the shared base probe, kept as
/// the App keeps the default branch's (`main` at the fixture's head, merged with #7).
pub(super) fn codebase_map(dir: &std::path::Path, config: &Config) -> crate::gate::blindness::CodebaseMap {
    let own = dir.join("ledger.json");
    let ledger_path = if own.is_file() {
        own
    } else {
        fixtures().join("project/.github/flake-ledger.json")
    };
    let ledger = crate::gate::ledger::parse_ledger(
        "flake-ledger.json",
        &std::fs::read_to_string(&ledger_path).unwrap(),
        None,
    )
    .unwrap();
    let ev = dir.join("evidence");
    let sources = EvidenceSources {
        dir: None,
        coverage: Some(ev.join("coverage.json")),
        results: vec![ev.join("results")],
        probe: Some(fixtures().join("probe/reportlog")),
        meta: None,
        read_once: None,
    };
    let loaded = crate::evidence::load_every_file(&sources, Some(&ledger)).evidence;
    let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 20).unwrap();
    let input = crate::gate::blindness::BlindnessInput {
        coverage: loaded.coverage.as_ref().unwrap(),
        coverage_file: "coverage.json",
        ledger: &ledger,
        stab: crate::gate::history::Stabilities::new(loaded.probe.as_ref(), None),
        results: loaded.results.as_ref(),
        policy: &config.policy,
        sources: &Default::default(),
        today,
    };
    let map = crate::gate::blindness::map(&input).unwrap();
    let mut kept =
        crate::gate::blindness::CodebaseMap::of(&map, "main", "0123456789abcdef0123456789abcdef01234567", today);
    kept.pull_request = Some(7);
    kept
}
