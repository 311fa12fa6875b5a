//! The patch readers on hostile bytes: git's unified diff and GitHub's pull-request files
//! JSON (`parse_patch` picks by the first character), then the whole gate on the patch
//! with fixed, real evidence (the `all_stable` case), so scopes, the trust rules and
//! attribution see every patch the readers accept.
#![no_main]

#[path = "common.rs"]
mod common;

use flakegate::gate::coverage::{json::read_json, PathMatcher};
use flakegate::gate::ledger::parse_ledger;
use flakegate::gate::results::parse_reportlog;
use flakegate::gate::{evaluate, Evidence, GateInput, InputError, Ledger};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

struct Fixed {
    evidence: Evidence,
    ledger: Result<Ledger, Vec<InputError>>,
    config: flakegate::gate::config::Config,
}

fn fixed() -> &'static Fixed {
    static F: OnceLock<Fixed> = OnceLock::new();
    F.get_or_init(|| {
        let matcher = PathMatcher::new(common::PROJECT_PATHS.iter().copied());
        let cov = common::read_fixture("cases/all_stable/evidence/coverage.json");
        let coverage = read_json("coverage.json", cov.as_bytes(), &matcher).expect("fixture coverage");
        let log = common::read_fixture("cases/all_stable/evidence/results/report-log.jsonl");
        let results = parse_reportlog("report-log.jsonl", &log).expect("fixture report-log");
        let ledger_text = common::read_fixture("project/.github/flake-ledger.json");
        Fixed {
            evidence: Evidence {
                coverage: Some(coverage),
                coverage_file: Some("coverage.json".into()),
                results: Some(results),
                ..Evidence::default()
            },
            ledger: parse_ledger(".github/flake-ledger.json", &ledger_text, None),
            config: flakegate::gate::config::Config::default(),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let f = fixed();
    let Ok(patch) = flakegate::gate::patch::parse_patch("pr.diff", data) else {
        return;
    };
    for file in &patch.files {
        let lines = file.added_line_numbers();
        assert!(lines.iter().all(|&l| l >= 1), "{}: added line 0", file.path);
        assert!(
            lines.windows(2).all(|w| w[0] <= w[1]),
            "{}: added lines out of order",
            file.path
        );
    }
    let input = GateInput {
        patch: &patch,
        ledger: &f.ledger,
        config: &f.config,
        evidence: &f.evidence,
        today: common::today(),
        base_sha: None,
        head_sha: None,
        inputs: Vec::new(),
        workflow: None,
    };
    let report = evaluate(&input);
    // A report always has a deciding reason.
    assert!(report.first_reason().is_some(), "a report without a reason");
});
