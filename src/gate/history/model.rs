//! The flake history's data: what the store keeps and hands back, and what the report says.
//! Plain data, shared by the config, the evidence, the report and the judgement (`history.rs`).

use crate::gate::nodeid::TestId;
use crate::gate::probe::Stability;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The recovery rule, as the report and the docs state it.
pub const RECOVERY: &str = "a test seen unstable stays unstable until it passes, in a row after its last failure, as many runs as a test failing at the rate it showed up to that failure would pass with under 5 % chance — and at least history.recovery_runs — or until its failures leave the window";

/// The chance, at the rate a test showed, that it passes the whole recovery streak: the rule
/// clears a test only when a streak that long was unlikely for it.
const RECOVERY_CHANCE: f64 = 0.05;

/// `history` in `.github/flakegate.yml`: how long observations count, and the recovery rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryPolicy {
    /// Observations older than this many days are dropped. Default 90.
    pub window_days: u32,
    /// The fewest passing runs in a row, after its last failure, that clear a test seen
    /// unstable. Default 50: a test still failing 4.5 % of its runs or more fails among 50 with
    /// 90 % chance. A test that failed more rarely needs more (the rule `RECOVERY` states).
    pub recovery_runs: u32,
}

impl Default for HistoryPolicy {
    fn default() -> Self {
        HistoryPolicy {
            window_days: 90,
            recovery_runs: 50,
        }
    }
}

impl HistoryPolicy {
    pub fn is_default(&self) -> bool {
        *self == HistoryPolicy::default()
    }
}

/// Passing runs in a row after its last failure that clear a test seen unstable ([`RECOVERY`]):
/// enough that a test failing at the rate it showed up to that failure (its failures over its
/// runs until then) would pass them all with under 5 % chance, and at least `recovery_runs`.
/// A 2 % test needs 149; a test that failed once in 500 runs, 1,497 — a rare failure takes
/// many runs to show fixed, so it stays unstable until its failures leave the window.
pub fn runs_to_recover(th: &TestHistory, recovery_runs: u32) -> u64 {
    let floor = u64::from(recovery_runs.max(1));
    let until_failure = th.runs.saturating_sub(th.passes_since_failure);
    if th.failures == 0 || until_failure == 0 || th.failures >= until_failure {
        return floor;
    }
    let rate = th.failures as f64 / until_failure as f64;
    // ln(0.05) / ln(1 - rate): finite and positive for 0 < rate < 1.
    let needed = (RECOVERY_CHANCE.ln() / (-rate).ln_1p()).ceil();
    floor.max(needed as u64)
}

/// Which kind of run an observation comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// A run of the base tree's suite (or its witnesses) by the probe.
    Probe,
    /// The head run: for a test that executed no changed line, a run of the base's code.
    Head,
}

impl RunKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Probe => "probe",
            RunKind::Head => "head",
        }
    }
    pub fn parse(s: &str) -> Option<RunKind> {
        match s {
            "probe" => Some(RunKind::Probe),
            "head" => Some(RunKind::Head),
            _ => None,
        }
    }
}

/// Where an observation was made: the audit trail every instability the report cites carries.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Source {
    /// The commit whose code ran.
    pub sha: String,
    pub kind: RunKind,
    /// The pull request whose evidence it came from, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr: Option<u64>,
    /// The workflow run, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<u64>,
    /// The run's attempt (a re-run is a new attempt of the same run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The UTC date it was recorded.
    pub date: NaiveDate,
}

impl Source {
    /// "#481, run 9912 (attempt 2), probe of 1a2b3c4, 2026-11-02".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(pr) = self.pr {
            parts.push(format!("#{pr}"));
        }
        if let Some(run) = self.run_id {
            match self.attempt {
                Some(a) if a > 1 => parts.push(format!("run {run} (attempt {a})")),
                _ => parts.push(format!("run {run}")),
            }
        }
        let short: String = self.sha.chars().take(7).collect();
        let what = match self.kind {
            RunKind::Probe => format!("probe of {short}"),
            RunKind::Head => format!("head run on {short}'s code"),
        };
        parts.push(what);
        parts.push(self.date.to_string());
        parts.join(", ")
    }
}

/// What one evidence shows of one test on one sha: its passing and failing runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    pub test: TestId,
    pub passes: u32,
    pub failures: u32,
    pub source: Source,
}

/// What the history knows of one test within its window, not counting this evidence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestHistory {
    /// Pass/fail runs in the window (fork pull requests' passes excluded).
    pub runs: u64,
    pub failures: u64,
    /// The oldest day of the window with an observation of the test.
    pub since: Option<NaiveDate>,
    /// The latest failure on a sha where the test also passed: the instability's source.
    pub unstable_on: Option<Source>,
    /// The latest failure.
    pub last_failure: Option<Source>,
    /// Passing runs recorded after the latest failure.
    pub passes_since_failure: u64,
    /// Passes and failures on this evidence's base sha.
    pub on_base: (u64, u64),
    /// Passes and failures on this evidence's head sha (earlier attempts of its run).
    #[serde(default)]
    pub on_head: (u64, u64),
    /// The latest failure on the head sha, when there is one.
    #[serde(default)]
    pub head_failure: Option<Source>,
}

/// The history the store holds for the tests this evidence names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    pub tests: BTreeMap<TestId, TestHistory>,
    /// `history.window_days`: observations older than this are not here.
    pub window_days: u32,
    /// `history.recovery_runs`.
    pub recovery_runs: u32,
    /// Observations the store holds for the repository in all (for the report).
    pub observations: u64,
}

/// How the history and this evidence's probe judge one test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgement {
    pub stability: Stability,
    /// Pass/fail runs the judgement rests on (history and this probe).
    pub runs: u64,
    pub failures: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<NaiveDate>,
    /// Where the instability (or the latest failure) was seen; `None` when this probe alone shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen: Option<Source>,
    /// This evidence's probe did not run the test: the judgement is the history's alone.
    pub history_only: bool,
    /// Unstable by the recovery rule alone: the passing runs in a row it still needs to clear.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovers_after: Option<u64>,
    /// Stable on the history: what its passing runs in a row since its last failure (all its
    /// runs, when it never failed) rule out — "0 of 212 runs failed: not shown unstable at
    /// p ≥ 1.1 % (90 % chance)".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<String>,
}

impl Judgement {
    /// "failed 3 of 212 runs since 2026-11-02 (last: #481, run 9912, …)": what it rests on.
    pub fn runs_text(&self) -> String {
        let mut out = format!("failed {} of {} runs", self.failures, self.runs);
        if let Some(d) = self.since {
            out.push_str(&format!(" since {d}"));
        }
        if let Some(s) = &self.seen {
            out.push_str(&format!(" (last: {})", s.describe()));
        }
        out
    }
}

/// What the report says of the history: per witness (and per failing head test) it knew, the
/// runs and failures its judgement rests on and where a failure was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryReport {
    pub window_days: u32,
    pub recovery_runs: u32,
    pub recovery: &'static str,
    pub tests: Vec<TestStanding>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestStanding {
    pub test: TestId,
    #[serde(flatten)]
    pub judgement: Judgement,
    /// Its latest failure on this head's code (an earlier attempt of the run), when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_failure: Option<Source>,
}

impl TestStanding {
    /// "failed 3 of 212 runs since 2026-11-02 (last: #481, run 9912, …)".
    pub fn describe(&self) -> String {
        let j = &self.judgement;
        let mut out = j.runs_text();
        if let Some(p) = &j.power {
            out.push_str(&format!("; {p}"));
        }
        if j.history_only {
            out.push_str("; not in this probe: judged on history alone");
        }
        out
    }
}
