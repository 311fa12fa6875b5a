//! The verdict as SARIF 2.1.0 (`flakegate check --format sarif`), for GitHub's code scanning:
//! uploaded with `github/codeql-action/upload-sarif`, its results show on the pull request's
//! Files view. One rule per reason code, linked to its explanation; results on the changed
//! lines no stable test witnesses (frozen-only, uncovered, excluded from measurement) and at
//! every place a reason names (a weakened assertion, an expired ledger entry…). A reason that
//! names no place is the check run's to say, not code scanning's.

use super::links;
use crate::gate::inert;
use crate::gate::report::{ReasonCode, Report, Verdict};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// SARIF's level for a verdict.
fn level(v: Verdict) -> &'static str {
    match v {
        Verdict::Inconclusive | Verdict::Fail => "error",
        Verdict::PassWithCaveat => "warning",
        Verdict::Pass => "note",
    }
}

/// Consecutive lines as `(start, end)` runs.
fn runs(lines: &[u32]) -> Vec<(u32, u32)> {
    let sorted: BTreeSet<u32> = lines.iter().copied().collect();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for l in sorted {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == l => *end = l,
            _ => out.push((l, l)),
        }
    }
    out
}

fn location(path: &str, start: u32, end: u32) -> Value {
    json!({ "physicalLocation": {
        "artifactLocation": { "uri": path },
        "region": { "startLine": start.max(1), "endLine": end.max(start).max(1) }
    }})
}

/// The report as a SARIF log.
pub fn sarif(report: &Report) -> String {
    let mut codes: Vec<ReasonCode> = Vec::new();
    for c in ReasonCode::ALL {
        if !codes.iter().any(|k| k.as_str() == c.as_str()) {
            codes.push(*c);
        }
    }
    let rules: Vec<Value> = codes
        .iter()
        .map(|c| {
            json!({
                "id": c.as_str(),
                "shortDescription": { "text": c.as_str().replace('_', " ") },
                "helpUri": links::reason(*c),
                "defaultConfiguration": { "level": level(c.verdict()) },
            })
        })
        .collect();
    let index = |code: &str| codes.iter().position(|c| c.as_str() == code).unwrap_or(0);
    // The rule a line class is reported under: the reason the report gives for it.
    let present = |candidates: &[&'static str]| {
        candidates
            .iter()
            .find(|c| report.reasons.iter().any(|r| r.code.as_str() == **c))
            .copied()
    };
    let mut results: Vec<Value> = Vec::new();
    let mut line_result = |code: &str, v: Verdict, text: String, path: &str, (start, end): (u32, u32)| {
        results.push(json!({
            "ruleId": code,
            "ruleIndex": index(code),
            "level": level(v),
            "message": { "text": text },
            "locations": [location(path, start, end)],
        }));
    };
    let verdict_of = |code: &str| {
        report
            .reasons
            .iter()
            .find(|r| r.code.as_str() == code)
            .map_or(Verdict::PassWithCaveat, |r| r.verdict)
    };
    for f in &report.files {
        let path = inert::one_line(&f.path, inert::TEXT_MAX_CHARS);
        let frozen = present(&["frozen_only", "blind_lines", "some_frozen"]).unwrap_or("frozen_only");
        for run in runs(&f.frozen_only_lines) {
            let text = "Only frozen or unstable tests execute this changed code: a green run of them says nothing about it. Add a stable test that executes it.";
            line_result(frozen, verdict_of(frozen), text.to_owned(), &path, run);
        }
        let uncovered = present(&["uncovered", "blind_lines"]).unwrap_or("uncovered");
        for run in runs(&f.uncovered_lines) {
            let text = "No test executes this changed code. Add a test that executes it.";
            line_result(uncovered, verdict_of(uncovered), text.to_owned(), &path, run);
        }
        for run in runs(&f.excluded_lines) {
            let text = "This changed code is excluded from coverage, so no test can witness it.";
            line_result(uncovered, verdict_of(uncovered), text.to_owned(), &path, run);
        }
    }
    for r in &report.reasons {
        let message = inert::plain(&r.message, inert::TEXT_MAX_CHARS);
        for l in r.locations.iter().filter(|l| l.line.is_some()) {
            let line = l.line.and_then(|n| u32::try_from(n).ok()).unwrap_or(1);
            let path = inert::one_line(&l.file, inert::TEXT_MAX_CHARS);
            line_result(r.code.as_str(), r.verdict, message.clone(), &path, (line, line));
        }
    }
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "flakegate",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": links::HOMEPAGE,
                "rules": rules,
            }},
            "results": results,
            "properties": { "verdict": report.verdict.as_str() },
        }],
    });
    let mut s = serde_json::to_string_pretty(&log).expect("a SARIF log always serialises");
    s.push('\n');
    s
}
