//! From K runs' results to the probe's output: pure, no I/O, no clock.
//!
//! A run is usable when it ended on its own, wrote results that could be read
//! and matched, and collected the same set of tests as the others (the most
//! common set; ties go to the larger set). Counts are taken over the usable
//! runs only, by the gate's own [`probe::from_runs`], so a probe JSON and the
//! same result files read by `flakegate check --probe DIR` agree. When more
//! than half the runs are unusable, or fewer than two are usable, the probe
//! is inconclusive and reports no counts at all.

use crate::gate::ledger::Ledger;
use crate::gate::nodeid::TestId;
use crate::gate::probe::{self, Stability};
use crate::gate::results::{Outcome, TestResults};
use crate::probe::exec::{secs, RunEnd};
use crate::probe::seed::{self, Seed};
use chrono::NaiveDate;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The format version of the probe JSON.
pub const FORMAT_VERSION: u32 = 1;
/// The chance with which the probe's power is stated.
pub const CONFIDENCE: f64 = 0.9;

/// What was read from one run's results location.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultsRead {
    /// No results file, or an empty one.
    Missing,
    /// The file could not be read or parsed: why.
    Unreadable(String),
    Parsed(TestResults),
}

/// One run, executed or imported, with its results read.
#[derive(Debug, Clone)]
pub struct RunInput {
    /// 1-based position among the probe's runs.
    pub index: u32,
    /// The results file, when it outlives the probe (`--keep`, `--from`).
    pub source: Option<String>,
    pub end: RunEnd,
    pub results: ResultsRead,
    /// The last lines of the run's output, for unusable runs.
    pub log_tail: Option<String>,
    pub duration: Option<Duration>,
}

/// Everything besides the runs that shapes the output.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    pub today: NaiveDate,
    /// Ledger suggestions expire `days` after `today`.
    pub days: u32,
    pub seed: Option<&'a Seed>,
    /// The probed command (None for `--from`).
    pub command: Option<&'a [String]>,
    /// Tests the runs were restricted to (`--only`, `--witnesses-of`).
    pub only: Option<&'a [TestId]>,
    /// The ledger, so that frozen tests get no suggestion.
    pub ledger: Option<&'a Ledger>,
    /// How later commands should name the probe file (`--out`), for hints.
    pub probe_file: Option<&'a str>,
}

/// `{"test", "failures", "runs"}`: the gate's probe JSON entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Count {
    pub test: TestId,
    pub failures: u32,
    pub runs: u32,
}

/// One test's counts over the usable runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestCounts {
    pub test: TestId,
    /// Usable runs in which it failed (errors included).
    pub failures: u32,
    /// Usable runs in which it passed or failed (skips and xfails excluded).
    pub runs: u32,
    /// `stable_passing`, `broken_on_base`, `unstable`, or `skipped` (no pass/fail outcome in any run).
    pub stability: &'static str,
    /// Passed (xpassed included): `runs - failures`.
    pub passes: u32,
    /// Of the failures, those in setup or teardown.
    pub errors: u32,
    /// Skipped or xfailed.
    pub skips: u32,
    /// Runs (of all attempted) with no record of this test.
    pub missing: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed_runs: Vec<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_runs: Vec<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// The ledger entry that freezes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frozen_by: Option<String>,
}

/// One run's fate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub index: u32,
    pub usable: bool,
    /// `ok`, `timed_out`, `crashed`, `unreadable` or `different_tests`.
    pub status: &'static str,
    /// How the command ended.
    pub end: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Tests with a record in this run.
    pub tests: usize,
    /// Of those, failed.
    pub failed: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_secs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,
}

/// What K runs can show.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Power {
    pub confidence: f64,
    /// The smallest failure rate K runs reveal with `confidence` (None: K too small).
    pub min_detectable_rate: Option<f64>,
    /// How stable results are worded.
    pub statement: String,
}

/// A ready-to-paste ledger entry; `owner` is left for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    pub test: TestId,
    pub observed: String,
    pub reason: Option<String>,
    pub owner: Option<String>,
    pub frozen_at: NaiveDate,
    pub expires: NaiveDate,
}

/// The probe's output; serialised, a superset of the gate's probe JSON
/// `{"k", "unstable": [{"test", "failures", "runs"}]}` with every test's
/// counts in `"tests"` and the `"seed"`. Inconclusive output has no `k`,
/// `unstable` or `tests`, so no reader can take it for counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeOutput {
    pub flakegate_probe: u32,
    pub inconclusive: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_inconclusive: Option<String>,
    /// Usable runs: the K the counts are over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k: Option<u32>,
    pub runs_attempted: u32,
    pub usable_runs: u32,
    pub seed: Option<u32>,
    pub seed_source: Option<String>,
    pub date: NaiveDate,
    pub command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<TestId>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<Power>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unstable: Option<Vec<Count>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken_on_base: Option<Vec<Count>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tests: Option<Vec<TestCounts>>,
    pub runs: Vec<RunReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger_suggestions: Option<Vec<Suggestion>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger_note: Option<String>,
}

impl ProbeOutput {
    /// 2-space JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("probe output serialises");
        s.push('\n');
        s
    }
}

/// "2/5 fail on clean base".
pub fn observed(failures: u32, runs: u32) -> String {
    format!("{failures}/{runs} fail on clean base")
}

/// What K runs show: "… not shown unstable at p ≥ 28.1 %" for K = 7.
pub fn power_of(k: u32) -> Power {
    let rate = probe::min_detectable_rate(k, CONFIDENCE);
    let statement = match rate {
        Some(r) => format!(
            "{k} runs show both outcomes of a test failing at a rate p ≥ {} with {:.0} % chance; a test that \
             passed every run is not shown unstable at p ≥ {}, and lower rates can hide",
            pct(r),
            CONFIDENCE * 100.0,
            pct(r)
        ),
        None => format!(
            "{k} runs cannot reveal any failure rate with {:.0} % chance; raise --runs",
            CONFIDENCE * 100.0
        ),
    };
    Power {
        confidence: CONFIDENCE,
        min_detectable_rate: rate.map(|r| (r * 1e4).ceil() / 1e4),
        statement,
    }
}

pub(crate) use crate::gate::probe::pct;

struct Classified<'a> {
    status: &'static str,
    detail: Option<String>,
    results: Option<&'a TestResults>,
}

fn classify(run: &RunInput) -> Classified<'_> {
    let unusable = |status, detail: String| Classified {
        status,
        detail: Some(detail),
        results: None,
    };
    let parsed = match &run.results {
        ResultsRead::Parsed(r) => Some(r),
        _ => None,
    };
    let partial = |r: Option<&TestResults>| match r {
        Some(r) if !r.tests.is_empty() => format!(" (results for {} tests written before)", r.tests.len()),
        _ => String::new(),
    };
    match &run.end {
        RunEnd::TimedOut { after } => {
            return unusable(
                "timed_out",
                format!("timed out after {}{}", secs(*after), partial(parsed)),
            );
        }
        RunEnd::SpawnFailed(e) => return unusable("crashed", format!("could not start the command: {e}")),
        _ => {}
    }
    let ended = match &run.end {
        RunEnd::Imported => "the run".to_string(),
        e => format!("the command ({})", e.describe()),
    };
    let r = match &run.results {
        ResultsRead::Missing => {
            let what = if run.end == RunEnd::Imported {
                "result file is empty".to_string()
            } else {
                format!("{ended} wrote no results")
            };
            return unusable("crashed", format!("crashed without results: {what}"));
        }
        ResultsRead::Unreadable(e) => return unusable("unreadable", format!("results unreadable: {e}")),
        ResultsRead::Parsed(r) => r,
    };
    if !r.unmatched.is_empty() {
        return Classified {
            status: "unreadable",
            detail: Some(format!(
                "{} JUnit test case{} could not be matched to pytest node ids (xunit2 records carry no file; \
                 use -o junit_family=xunit1 or --report-log)",
                r.unmatched.len(),
                if r.unmatched.len() == 1 { "" } else { "s" }
            )),
            results: None,
        };
    }
    if r.tests.is_empty() {
        let mut d = format!("crashed without results: {ended} recorded no test results");
        if let Some(c) = r.collection_errors.first() {
            d.push_str(&format!("; collection error in {}", c.nodeid));
            if let Some(m) = &c.message {
                d.push_str(&format!(": {m}"));
            }
        }
        return Classified {
            status: "crashed",
            detail: Some(d),
            results: None,
        };
    }
    if let Some(sig) = run.end.signal() {
        return Classified {
            status: "crashed",
            detail: Some(format!(
                "crashed: {} after results for {} tests",
                RunEnd::Exited {
                    code: None,
                    signal: Some(sig)
                }
                .describe(),
                r.tests.len()
            )),
            results: None,
        };
    }
    Classified {
        status: "ok",
        detail: None,
        results: Some(r),
    }
}

fn failed_count(r: &TestResults) -> usize {
    r.tests.values().filter(|t| t.outcome.is_failure()).count()
}

fn name_list(ids: &[&TestId], n: usize) -> String {
    let mut s: Vec<String> = ids.iter().take(n).map(|t| t.to_string()).collect();
    if ids.len() > n {
        s.push(format!("and {} more", ids.len() - n));
    }
    s.join(", ")
}

/// Compute the probe's output from its runs.
pub fn summarize(runs: &[RunInput], opts: &Options<'_>) -> ProbeOutput {
    let attempted = runs.len() as u32;
    let mut classified: Vec<Classified<'_>> = runs.iter().map(classify).collect();
    let reference = reference_tests(&mut classified);
    let usable: Vec<(u32, &TestResults)> = runs
        .iter()
        .zip(&classified)
        .filter_map(|(run, c)| c.results.map(|r| (run.index, r)))
        .collect();
    let usable_n = usable.len() as u32;

    let mut out = ProbeOutput {
        flakegate_probe: FORMAT_VERSION,
        inconclusive: false,
        why_inconclusive: None,
        k: None,
        runs_attempted: attempted,
        usable_runs: usable_n,
        seed: opts.seed.map(|s| s.value),
        seed_source: opts.seed.map(|s| s.source.clone()),
        date: opts.today,
        command: opts.command.map(|c| c.to_vec()),
        only: opts.only.map(|o| o.to_vec()),
        power: None,
        unstable: None,
        broken_on_base: None,
        tests: None,
        runs: run_reports(runs, &classified),
        ledger_suggestions: None,
        ledger_note: None,
    };
    if let Some(why) = why_inconclusive(attempted, usable_n, &out.runs, opts) {
        out.inconclusive = true;
        out.why_inconclusive = Some(why);
        return out;
    }

    let tests = test_counts(&reference, &usable, runs, opts);
    let pick = |st: &str| -> Vec<Count> {
        tests
            .iter()
            .filter(|t| t.stability == st)
            .map(|t| Count {
                test: t.test.clone(),
                failures: t.failures,
                runs: t.runs,
            })
            .collect()
    };
    let (suggestions, note) = ledger_suggestions(&tests, opts);
    out.k = Some(usable_n);
    out.power = Some(power_of(usable_n));
    out.unstable = Some(pick("unstable"));
    out.broken_on_base = Some(pick("broken_on_base"));
    out.tests = Some(tests);
    out.ledger_suggestions = Some(suggestions);
    out.ledger_note = note;
    out
}

/// The reference set of tests: the most common among runs with results (ties go to the
/// larger set). A run that collected another set is made unusable (`different_tests`).
fn reference_tests<'a>(classified: &mut [Classified<'a>]) -> BTreeSet<&'a TestId> {
    let mut sets: BTreeMap<BTreeSet<&TestId>, u32> = BTreeMap::new();
    for c in classified.iter() {
        if let Some(r) = c.results {
            *sets.entry(r.tests.keys().collect()).or_default() += 1;
        }
    }
    let reference: BTreeSet<&TestId> = sets
        .iter()
        .max_by(|(a, na), (b, nb)| na.cmp(nb).then(a.len().cmp(&b.len())).then(b.cmp(a)))
        .map(|(s, _)| s.clone())
        .unwrap_or_default();
    for c in classified.iter_mut() {
        let Some(r) = c.results else { continue };
        let got: BTreeSet<&TestId> = r.tests.keys().collect();
        if got != reference {
            let fewer: Vec<&TestId> = reference.difference(&got).copied().collect();
            let extra: Vec<&TestId> = got.difference(&reference).copied().collect();
            let mut parts = Vec::new();
            if !fewer.is_empty() {
                parts.push(format!("{} fewer ({})", fewer.len(), name_list(&fewer, 5)));
            }
            if !extra.is_empty() {
                parts.push(format!("{} extra ({})", extra.len(), name_list(&extra, 5)));
            }
            let mut d = format!(
                "collected a different set of tests: {} tests where the other runs have {}; {}",
                got.len(),
                reference.len(),
                parts.join(", ")
            );
            if let Some(ce) = r.collection_errors.first() {
                d.push_str(&format!("; collection error in {}", ce.nodeid));
            }
            c.status = "different_tests";
            c.detail = Some(d);
            c.results = None;
        }
    }
    reference
}

/// Each run's fate, as the output lists it.
fn run_reports(runs: &[RunInput], classified: &[Classified<'_>]) -> Vec<RunReport> {
    runs.iter()
        .zip(classified)
        .map(|(run, c)| {
            let parsed = match &run.results {
                ResultsRead::Parsed(r) => Some(r),
                _ => None,
            };
            RunReport {
                index: run.index,
                usable: c.results.is_some(),
                status: c.status,
                end: run.end.describe(),
                detail: c.detail.clone(),
                tests: parsed.map(|r| r.tests.len()).unwrap_or(0),
                failed: parsed.map(failed_count).unwrap_or(0),
                results: run.source.clone(),
                duration_secs: run.duration.map(|d| (d.as_secs_f64() * 10.0).round() / 10.0),
                log_tail: if c.results.is_none() {
                    run.log_tail.clone()
                } else {
                    None
                },
            }
        })
        .collect()
}

/// Why the runs cannot give counts: more than half unusable, or fewer than two usable
/// (with a hint when no run wrote results where the probe reads them).
fn why_inconclusive(attempted: u32, usable_n: u32, reports: &[RunReport], opts: &Options<'_>) -> Option<String> {
    let unusable_n = attempted - usable_n;
    if usable_n >= 2 && unusable_n * 2 <= attempted {
        return None;
    }
    let mut why = if attempted == 0 {
        "no runs".to_string()
    } else if unusable_n * 2 > attempted {
        format!(
            "{unusable_n} of {attempted} runs are unusable (more than half): the counts would describe \
             the harness, not the tests"
        )
    } else {
        format!("only {usable_n} of {attempted} runs are usable: at least 2 are needed to tell stable from unstable")
    };
    let no_results = reports.iter().filter(|r| r.status == "crashed" && r.tests == 0).count();
    if attempted > 0 && no_results == attempted as usize {
        if let Some(cmd) = opts.command {
            if !cmd.iter().any(|w| w.contains(crate::probe::exec::PLACEHOLDER)) {
                why.push_str(
                    "; no run wrote results to $FLAKEGATE_RESULTS — pass --report-log={results} \
                     (pytest-reportlog), --flakegate-results={results} (pytest-flakegate) or \
                     --junitxml={results} to pytest",
                );
            }
        }
    }
    Some(why)
}

/// Every test of the reference set, counted over the usable runs; one with no pass/fail
/// outcome in any run (skipped, xfailed) has no counts in the gate's probe.
fn test_counts(
    reference: &BTreeSet<&TestId>,
    usable: &[(u32, &TestResults)],
    runs: &[RunInput],
    opts: &Options<'_>,
) -> Vec<TestCounts> {
    let results: Vec<TestResults> = usable.iter().map(|(_, r)| (*r).clone()).collect();
    let counts = probe::from_runs(&results);
    let mut tests = Vec::new();
    for id in reference.iter().copied() {
        let c = counts
            .tests
            .get(id)
            .copied()
            .unwrap_or(probe::ProbeCounts { failures: 0, runs: 0 });
        let mut failed_runs = Vec::new();
        let mut first_failure = None;
        let (mut errors, mut skips) = (0, 0);
        for (index, r) in usable {
            if let Some(t) = r.tests.get(id) {
                if t.outcome.is_failure() {
                    failed_runs.push(*index);
                    if first_failure.is_none() {
                        first_failure = t.message.clone();
                    }
                }
                match t.outcome {
                    Outcome::Error => errors += 1,
                    Outcome::Skipped | Outcome::XFailed => skips += 1,
                    _ => {}
                }
            }
        }
        let missing_runs: Vec<u32> = runs
            .iter()
            .filter(|run| match &run.results {
                ResultsRead::Parsed(r) => !r.tests.contains_key(id),
                _ => true,
            })
            .map(|run| run.index)
            .collect();
        let stability = if c.runs == 0 {
            "skipped"
        } else {
            match c.stability() {
                Stability::StablePassing => "stable_passing",
                Stability::BrokenOnBase => "broken_on_base",
                Stability::Unstable => "unstable",
            }
        };
        let frozen_by = opts
            .ledger
            .and_then(|l| l.entries_for(id).next())
            .map(|e| e.test.clone());
        tests.push(TestCounts {
            test: id.clone(),
            failures: c.failures,
            runs: c.runs,
            stability,
            passes: c.runs - c.failures,
            errors,
            skips,
            missing: missing_runs.len() as u32,
            replay: (c.failures > 0).then(|| seed::replay_line(opts.seed.map(|s| s.value), opts.command, id.as_str())),
            failed_runs,
            missing_runs,
            first_failure,
            frozen_by,
        });
    }
    tests
}

/// Ledger entries to paste for the unstable and broken tests not frozen yet, and the
/// note that their owner is left for a human.
fn ledger_suggestions(tests: &[TestCounts], opts: &Options<'_>) -> (Vec<Suggestion>, Option<String>) {
    let expires = opts.today + chrono::Days::new(u64::from(opts.days));
    let suggestions: Vec<Suggestion> = tests
        .iter()
        .filter(|t| t.frozen_by.is_none() && matches!(t.stability, "unstable" | "broken_on_base"))
        .map(|t| Suggestion {
            test: t.test.clone(),
            observed: observed(t.failures, t.runs),
            reason: (t.stability == "broken_on_base").then(|| {
                "broken on base: failed every probe run (fix it; a freeze only records who owns it)".to_string()
            }),
            owner: None,
            frozen_at: opts.today,
            expires,
        })
        .collect();
    let note = if suggestions.is_empty() {
        None
    } else {
        let file = opts.probe_file.unwrap_or("probe.json");
        Some(format!(
            "owner is left null: flakegate never invents one, and a ledger with a null owner does not validate. \
             Fill in owner (and reason), or run: flakegate ledger add NODEID --owner OWNER --reason REASON --probe {file}"
        ))
    };
    (suggestions, note)
}

/// The human summary of a probe.
pub fn render_text(o: &ProbeOutput) -> String {
    let mut s = String::new();
    let seed = match (&o.seed, &o.seed_source) {
        (Some(v), Some(src)) => format!("seed {v}, {src}"),
        (Some(v), None) => format!("seed {v}"),
        _ => "seed unknown".into(),
    };
    s.push_str(&format!(
        "flakegate probe: {} of {} runs usable ({seed})\n",
        o.usable_runs, o.runs_attempted
    ));
    let bad: Vec<&RunReport> = o.runs.iter().filter(|r| !r.usable).collect();
    if !bad.is_empty() {
        s.push_str(&format!("\nunusable runs ({}):\n", bad.len()));
        for r in bad {
            s.push_str(&format!(
                "  run {}: {}: {}\n",
                r.index,
                r.status,
                r.detail.as_deref().unwrap_or(&r.end)
            ));
            if let Some(p) = &r.results {
                s.push_str(&format!("    results: {p}\n"));
            }
            if let Some(t) = &r.log_tail {
                for l in t.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev() {
                    s.push_str(&format!("    | {l}\n"));
                }
            }
        }
    }
    if o.inconclusive {
        s.push_str(&format!(
            "\nINCONCLUSIVE: {}\n",
            o.why_inconclusive.as_deref().unwrap_or("")
        ));
        return s;
    }
    let tests = o.tests.as_deref().unwrap_or(&[]);
    if let Some(p) = &o.power {
        s.push_str(&format!("power: {}\n", p.statement));
    }
    let section = |s: &mut String, title: &str, st: &str| {
        let ts: Vec<&TestCounts> = tests.iter().filter(|t| t.stability == st).collect();
        if ts.is_empty() {
            return;
        }
        s.push_str(&format!("\n{title} ({}):\n", ts.len()));
        for t in ts {
            let runs = t
                .failed_runs
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            s.push_str(&format!(
                "  {}  {}/{} failed (run{} {runs})",
                t.test,
                t.failures,
                t.runs,
                if t.failed_runs.len() == 1 { "" } else { "s" }
            ));
            if let Some(f) = &t.frozen_by {
                s.push_str(&format!("  [frozen: {f}]"));
            }
            s.push('\n');
            if let Some(m) = &t.first_failure {
                s.push_str(&format!("    first failure: {m}\n"));
            }
            if let Some(r) = &t.replay {
                s.push_str(&format!("    {r}\n"));
            }
        }
    };
    section(&mut s, "unstable", "unstable");
    section(&mut s, "broken on base", "broken_on_base");
    let stable = tests.iter().filter(|t| t.stability == "stable_passing").count();
    let rate = o.power.as_ref().and_then(|p| p.min_detectable_rate);
    s.push_str(&format!(
        "\nstable: {stable} test{} passed every usable run{}\n",
        if stable == 1 { "" } else { "s" },
        match rate {
            Some(r) => format!(": not shown unstable at p ≥ {}", pct(r)),
            None => ": too few runs to show anything".into(),
        }
    ));
    let skipped: Vec<&TestCounts> = tests.iter().filter(|t| t.stability == "skipped").collect();
    if !skipped.is_empty() {
        s.push_str(&format!(
            "skipped or xfailed in every run ({}): not probed\n",
            skipped.len()
        ));
        for t in skipped {
            s.push_str(&format!("  {}\n", t.test));
        }
    }
    let missing: Vec<&TestCounts> = tests.iter().filter(|t| t.missing > 0).collect();
    if !missing.is_empty() {
        s.push_str(&format!("\nmissing from some runs ({}):\n", missing.len()));
        for t in missing.iter().take(20) {
            let runs = t
                .missing_runs
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            s.push_str(&format!(
                "  {}  missing in {} run{} ({runs})\n",
                t.test,
                t.missing,
                if t.missing == 1 { "" } else { "s" }
            ));
        }
        if missing.len() > 20 {
            s.push_str(&format!("  and {} more\n", missing.len() - 20));
        }
    }
    if let Some(sug) = o.ledger_suggestions.as_ref().filter(|v| !v.is_empty()) {
        s.push_str(&format!(
            "\nnot frozen yet ({}): ledger entries to paste once an owner is named (owner left null):\n",
            sug.len()
        ));
        for e in sug {
            let json = serde_json::to_string(e).expect("suggestion serialises");
            s.push_str(&format!("  {json}\n"));
        }
        if let Some(n) = &o.ledger_note {
            s.push_str(&format!("  ({n})\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests;
