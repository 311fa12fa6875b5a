//! The probe: the base tree's suite run K times. A test failing 0/K or K/K
//! times is stable; anything else is unstable and is not evidence.

use crate::gate::error::{InputError, Location};
use crate::gate::json_spans::{self, JVal, Member, Node, Pos};
use crate::gate::nodeid::TestId;
use crate::gate::results::{Outcome, TestResults};
use serde::Serialize;
use std::collections::BTreeMap;

/// One test's counts over the probe's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProbeCounts {
    pub failures: u32,
    /// Runs in which the test had a pass/fail outcome (skips and absences excluded).
    pub runs: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    /// 0 failures in its runs.
    StablePassing,
    /// Failed every run: broken on base, not flaky — and not evidence either.
    BrokenOnBase,
    /// Neither 0/K nor K/K.
    Unstable,
}

impl ProbeCounts {
    pub fn stability(&self) -> Stability {
        if self.failures == 0 {
            Stability::StablePassing
        } else if self.failures >= self.runs {
            Stability::BrokenOnBase
        } else {
            Stability::Unstable
        }
    }
}

/// The probe over the base tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    pub k: u32,
    /// Per-test counts. When read from a probe JSON that lists only the
    /// unstable tests, only those are here and `complete` is false.
    pub tests: BTreeMap<TestId, ProbeCounts>,
    /// True when `tests` holds every test the probe ran (stable ones too).
    pub complete: bool,
    /// The seed the runs used, when known.
    pub seed: Option<u64>,
}

impl Probe {
    pub fn stability(&self, test: &TestId) -> Option<Stability> {
        self.tests.get(test).map(|c| c.stability())
    }
    pub fn is_unstable(&self, test: &TestId) -> bool {
        self.stability(test) == Some(Stability::Unstable)
    }
    /// Did this probe run the test and find it stable (0/K or K/K)?
    pub fn shows_stable(&self, test: &TestId) -> bool {
        matches!(
            self.stability(test),
            Some(Stability::StablePassing | Stability::BrokenOnBase)
        )
    }
}

/// A rate as a percentage, rounded up to a tenth (never claims more than K runs show): 0.28045 → "28.1 %".
pub(crate) fn pct(r: f64) -> String {
    let tenths = (r * 1000.0 - 1e-6).ceil();
    if tenths % 10.0 == 0.0 {
        format!("{:.0} %", tenths / 10.0)
    } else {
        format!("{:.1} %", tenths / 10.0)
    }
}

/// The smallest failure rate that `runs` passing runs in a row would have shown (one failure
/// at least) with 90 % chance: 1 − 0.1^(1/runs). 40 runs: 5.6 %; 212 runs: 1.1 %.
pub fn unseen_rate(runs: u64) -> Option<f64> {
    (runs > 0).then(|| 1.0 - 0.1_f64.powf(1.0 / runs as f64))
}

/// "0 of 40 runs failed: not shown unstable at p ≥ 5.6 % (90 % chance)"; for a test that failed
/// before them, "passed the last 40 runs in a row: …".
pub fn passing_statement(runs: u64, failed_before: bool) -> String {
    let head = if failed_before {
        format!("passed the last {runs} runs in a row")
    } else {
        format!("0 of {runs} runs failed")
    };
    match unseen_rate(runs) {
        Some(r) => format!("{head}: not shown unstable at p ≥ {} (90 % chance)", pct(r)),
        None => head,
    }
}

/// Chance that K runs of a test failing with rate p show both outcomes:
/// 1 − p^K − (1 − p)^K.
pub(crate) fn detection_chance(p: f64, k: u32) -> f64 {
    let k = f64::from(k);
    1.0 - p.powf(k) - (1.0 - p).powf(k)
}

/// The smallest failure rate p ≤ 0.5 that K runs reveal with at least
/// `confidence` chance (e.g. 0.9), or None when no rate does (K too small).
pub(crate) fn min_detectable_rate(k: u32, confidence: f64) -> Option<f64> {
    if !confidence.is_finite() || detection_chance(0.5, k) < confidence {
        return None;
    }
    // detection_chance is increasing on (0, 0.5]: bisect for the boundary,
    // keeping `hi` a rate that reaches the confidence.
    let (mut lo, mut hi) = (0.0_f64, 0.5_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if detection_chance(mid, k) >= confidence {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Parse a probe JSON: `{"k": K, "unstable": [{"test","failures","runs"}]}`,
/// optionally with `"tests"` (every probed test: a list of the same shape, or
/// an object `{nodeid: {"failures", "runs"}}`) and `"seed"`.
/// Unknown extra fields are allowed (a superset is fine).
pub fn parse_probe_json(file: &str, text: &str) -> Result<Probe, InputError> {
    let root = json_spans::parse(file, text)?;
    let p = ProbeJson { file };
    let JVal::Obj(top) = &root.val else {
        return Err(p.err(
            root.pos,
            format!(
                "expected a probe JSON object {{\"k\": K, \"unstable\": [...]}}, found {}",
                root.val.kind()
            ),
        ));
    };
    let k = p.k(&root, top)?;
    let seed = p.seed(top)?;
    let section = |name: &str| match get(top, name) {
        Some(Node { val: JVal::Null, .. }) | None => Ok(None),
        Some(n) => p.entries(name, n, k).and_then(|e| p.dedupe(name, e)).map(Some),
    };
    let unstable = section("unstable")?;
    let all = section("tests")?;
    let (tests, complete) = p.combine(root.pos, all, unstable)?;
    Ok(Probe {
        k,
        tests,
        complete,
        seed,
    })
}

/// A section's entries by test, each with where its name is.
type Entries = BTreeMap<TestId, (ProbeCounts, Pos)>;

/// The last member named `key` (JSON's later duplicate wins).
fn get<'a>(ms: &'a [Member], key: &str) -> Option<&'a Node> {
    ms.iter().rev().find(|m| m.key == key).map(|m| &m.value)
}

fn uint(n: &Node) -> Option<u64> {
    match &n.val {
        JVal::Num(x) => x.as_u64(),
        _ => None,
    }
}

/// Reading one probe JSON, its errors located in `file`.
struct ProbeJson<'a> {
    file: &'a str,
}

impl ProbeJson<'_> {
    fn err(&self, p: Pos, msg: String) -> InputError {
        InputError::new(Location::at(self.file, p.line, Some(p.col)), msg)
    }

    /// `"k"`: the number of runs, positive.
    fn k(&self, root: &Node, top: &[Member]) -> Result<u32, InputError> {
        let k_node = get(top, "k").ok_or_else(|| {
            self.err(
                root.pos,
                "missing field \"k\": expected the number of probe runs".into(),
            )
        })?;
        match uint(k_node).and_then(|k| u32::try_from(k).ok()) {
            Some(k) if k > 0 => Ok(k),
            _ => Err(self.err(
                k_node.pos,
                format!(
                    "expected \"k\" to be a positive integer (the number of probe runs), found {}",
                    show(&k_node.val)
                ),
            )),
        }
    }

    /// `"seed"`: absent, null or a non-negative integer.
    fn seed(&self, top: &[Member]) -> Result<Option<u64>, InputError> {
        match get(top, "seed") {
            None => Ok(None),
            Some(Node { val: JVal::Null, .. }) => Ok(None),
            Some(n) => uint(n).map(Some).ok_or_else(|| {
                self.err(
                    n.pos,
                    format!(
                        "expected \"seed\" to be a non-negative integer or null, found {}",
                        show(&n.val)
                    ),
                )
            }),
        }
    }

    /// One entry's counts (`n` is the entry, for where a missing count is reported).
    fn counts(&self, test: &str, n: &Node, body: &[Member], k: u32) -> Result<ProbeCounts, InputError> {
        let num = |key: &str| -> Result<u32, InputError> {
            let v = get(body, key).ok_or_else(|| {
                self.err(
                    n.pos,
                    format!("entry for {test:?} is missing {key:?}: expected an integer"),
                )
            })?;
            uint(v).and_then(|x| u32::try_from(x).ok()).ok_or_else(|| {
                self.err(
                    v.pos,
                    format!("expected {key:?} to be a non-negative integer, found {}", show(&v.val)),
                )
            })
        };
        let failures = num("failures")?;
        let runs = num("runs")?;
        let at = get(body, "failures").map(|v| v.pos).unwrap_or(n.pos);
        if failures > runs {
            return Err(self.err(
                at,
                format!("{test:?}: failures ({failures}) is more than runs ({runs})"),
            ));
        }
        if runs > k {
            let at = get(body, "runs").map(|v| v.pos).unwrap_or(n.pos);
            return Err(self.err(at, format!("{test:?}: runs ({runs}) is more than k ({k})")));
        }
        Ok(ProbeCounts { failures, runs })
    }

    /// A section's entries: a list of `{"test", "failures", "runs"}`, or (for `"tests"`)
    /// an object of node id → `{"failures", "runs"}`.
    fn entries(&self, name: &str, n: &Node, k: u32) -> Result<Vec<(TestId, ProbeCounts, Pos)>, InputError> {
        let mut out = Vec::new();
        match &n.val {
            JVal::Arr(items) => {
                for item in items {
                    let JVal::Obj(body) = &item.val else {
                        return Err(self.err(
                            item.pos,
                            format!(
                                "expected an entry {{\"test\", \"failures\", \"runs\"}} in {name:?}, found {}",
                                item.val.kind()
                            ),
                        ));
                    };
                    let t = get(body, "test")
                        .ok_or_else(|| self.err(item.pos, format!("entry in {name:?} is missing \"test\"")))?;
                    let JVal::Str(test) = &t.val else {
                        return Err(self.err(
                            t.pos,
                            format!("expected \"test\" to be a node id string, found {}", t.val.kind()),
                        ));
                    };
                    if test.is_empty() {
                        return Err(self.err(t.pos, "\"test\" is empty: expected a node id".into()));
                    }
                    out.push((TestId::new(test.clone()), self.counts(test, item, body, k)?, t.pos));
                }
            }
            JVal::Obj(members) if name == "tests" => {
                for m in members {
                    let JVal::Obj(body) = &m.value.val else {
                        return Err(self.err(
                            m.value.pos,
                            format!(
                                "expected {{\"failures\", \"runs\"}} for {:?}, found {}",
                                m.key,
                                m.value.val.kind()
                            ),
                        ));
                    };
                    if m.key.is_empty() {
                        return Err(self.err(m.key_pos, "empty test name: expected a node id".into()));
                    }
                    out.push((
                        TestId::new(m.key.clone()),
                        self.counts(&m.key, &m.value, body, k)?,
                        m.key_pos,
                    ));
                }
            }
            other => {
                return Err(self.err(
                    n.pos,
                    format!(
                        "expected {name:?} to be an array of {{\"test\", \"failures\", \"runs\"}}, found {}",
                        other.kind()
                    ),
                ))
            }
        }
        Ok(out)
    }

    /// The entries by test; a test listed twice is an error at its second place.
    fn dedupe(&self, name: &str, entries: Vec<(TestId, ProbeCounts, Pos)>) -> Result<Entries, InputError> {
        let mut map = Entries::new();
        for (t, c, p) in entries {
            if let Some((_, first)) = map.get(&t) {
                return Err(self.err(
                    p,
                    format!("{t} appears twice in {name:?} (first at line {})", first.line),
                ));
            }
            map.insert(t, (c, p));
        }
        Ok(map)
    }

    /// The probe's tests from its sections: every test when `"tests"` is given (and
    /// `"unstable"` must agree with it), else only the unstable ones. Entries with no
    /// runs say nothing about a test: it was not probed.
    fn combine(
        &self,
        root: Pos,
        all: Option<Entries>,
        unstable: Option<Entries>,
    ) -> Result<(BTreeMap<TestId, ProbeCounts>, bool), InputError> {
        let probed = |entries: Entries| {
            entries
                .into_iter()
                .filter(|(_, (c, _))| c.runs > 0)
                .map(|(t, (c, _))| (t, c))
                .collect()
        };
        match (all, unstable) {
            (None, None) => Err(self.err(
                root,
                "missing field \"unstable\": expected {\"k\": K, \"unstable\": [...]}".into(),
            )),
            (None, Some(u)) => Ok((probed(u), false)),
            (Some(all), u) => {
                for (t, (c, p)) in u.into_iter().flatten() {
                    match all.get(&t) {
                        Some((a, _)) if *a == c => {}
                        Some((a, _)) => {
                            return Err(self.err(
                                p,
                                format!(
                                    "{t}: \"unstable\" says {}/{} but \"tests\" says {}/{}",
                                    c.failures, c.runs, a.failures, a.runs
                                ),
                            ))
                        }
                        None => return Err(self.err(p, format!("{t} is in \"unstable\" but not in \"tests\""))),
                    }
                }
                Ok((probed(all), true))
            }
        }
    }
}

fn show(v: &JVal) -> String {
    match v {
        JVal::Num(n) => n.to_string(),
        JVal::Bool(b) => b.to_string(),
        JVal::Str(s) => format!("{s:?}"),
        other => other.kind().to_string(),
    }
}

/// Compute the probe from K runs' results (one `TestResults` per run).
/// A run counts for a test when the test passed, failed or errored in it
/// (xpassed counts as a pass); skipped and xfailed runs, and runs the test was
/// absent from, do not count. A failed attempt that a rerun plugin ran again
/// (`reruns`) counts as one more run, failed. Tests with no counted run are left out: a test
/// the probe never saw pass or fail is not shown stable.
pub(crate) fn from_runs(runs: &[TestResults]) -> Probe {
    let mut tests: BTreeMap<TestId, ProbeCounts> = BTreeMap::new();
    for run in runs {
        for (id, r) in &run.tests {
            let counted = match r.outcome {
                Outcome::Passed | Outcome::XPassed => Some(false),
                Outcome::Failed | Outcome::Error => Some(true),
                Outcome::Skipped | Outcome::XFailed => None,
            };
            if let Some(failed) = counted {
                let c = tests.entry(id.clone()).or_insert(ProbeCounts { failures: 0, runs: 0 });
                c.runs += 1;
                c.failures += u32::from(failed);
                // Each failed attempt that a rerun plugin ran again counts as a run of its
                // own that failed: a test that failed and passed within one base run is unstable.
                c.runs = c.runs.saturating_add(r.reruns);
                c.failures = c.failures.saturating_add(r.reruns);
            } else if r.reruns > 0 {
                let c = tests.entry(id.clone()).or_insert(ProbeCounts { failures: 0, runs: 0 });
                c.runs = c.runs.saturating_add(r.reruns);
                c.failures = c.failures.saturating_add(r.reruns);
            }
        }
    }
    Probe {
        k: u32::try_from(runs.len()).unwrap_or(u32::MAX),
        tests,
        complete: true,
        seed: None,
    }
}

/// One shard of a probe spread over parallel CI jobs: its runs and what its
/// `meta.json` says (`probe/<shard>/meta.json`).
#[derive(Debug, Clone)]
pub(crate) struct ProbeShard {
    /// The shard's directory, as errors name it.
    pub name: String,
    /// `meta.json`'s `base_sha`.
    pub base_sha: Option<String>,
    pub runs: Vec<TestResults>,
}

/// Merge the shards of one probe: every shard must name its base sha, all the
/// same, and have collected the same tests (the node ids of its runs, skipped
/// ones included); else a clear error naming both shards. The counts are then
/// [`from_runs`] over every shard's runs.
pub(crate) fn merge_shards(shards: &[ProbeShard]) -> Result<Probe, InputError> {
    let collected = |s: &ProbeShard| -> std::collections::BTreeSet<TestId> {
        s.runs.iter().flat_map(|r| r.tests.keys().cloned()).collect()
    };
    let Some(first) = shards.first() else {
        return Err(InputError::new(Location::file("probe"), "no probe shards"));
    };
    for s in shards {
        if s.base_sha.as_deref().is_none_or(|b| b.trim().is_empty()) {
            return Err(InputError::new(
                Location::file(format!("{}/meta.json", s.name)),
                "expected \"base_sha\" in the shard's meta.json: shards are merged only when each says which base commit it ran",
            ));
        }
        if s.runs.is_empty() {
            return Err(InputError::new(
                Location::file(&s.name),
                "probe shard has no result files (expected its base runs beside meta.json)",
            ));
        }
    }
    let base = first.base_sha.as_deref().unwrap_or_default();
    let want = collected(first);
    for s in &shards[1..] {
        let sha = s.base_sha.as_deref().unwrap_or_default();
        if !sha.eq_ignore_ascii_case(base) {
            return Err(InputError::new(
                Location::file(format!("{}/meta.json", s.name)),
                format!(
                    "probe shards ran different base commits: {} ran {sha}, {} ran {base}; every shard must probe the same base sha",
                    s.name, first.name
                ),
            ));
        }
        let got = collected(s);
        if got != want {
            let only = |a: &std::collections::BTreeSet<TestId>, b: &std::collections::BTreeSet<TestId>| {
                let v: Vec<&str> = a.difference(b).take(3).map(TestId::as_str).collect();
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.join(", ")
                }
            };
            return Err(InputError::new(
                Location::file(&s.name),
                format!(
                    "probe shards collected different tests: {} ran {} tests, {} ran {} (only in {}: {}; only in {}: {}); every shard must run the same collection",
                    s.name,
                    got.len(),
                    first.name,
                    want.len(),
                    s.name,
                    only(&got, &want),
                    first.name,
                    only(&want, &got)
                ),
            ));
        }
    }
    let runs: Vec<TestResults> = shards.iter().flat_map(|s| s.runs.iter().cloned()).collect();
    Ok(from_runs(&runs))
}

#[cfg(test)]
mod tests;
