//! The probe: the base tree's suite run K times. A test failing 0/K or K/K
//! times is stable; anything else is unstable and is not evidence.

use crate::gate::error::{InputError, Location};
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
pub fn pct(r: f64) -> String {
    let tenths = (r * 1000.0 - 1e-6).ceil();
    if tenths % 10.0 == 0.0 {
        format!("{:.0} %", tenths / 10.0)
    } else {
        format!("{:.1} %", tenths / 10.0)
    }
}

/// Chance that K runs of a test failing with rate p show both outcomes:
/// 1 − p^K − (1 − p)^K.
pub fn detection_chance(p: f64, k: u32) -> f64 {
    let k = f64::from(k);
    1.0 - p.powf(k) - (1.0 - p).powf(k)
}

/// The smallest failure rate p ≤ 0.5 that K runs reveal with at least
/// `confidence` chance (e.g. 0.9), or None when no rate does (K too small).
pub fn min_detectable_rate(k: u32, confidence: f64) -> Option<f64> {
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
    use crate::gate::json_spans::{self, JVal, Member, Node, Pos};
    let root = json_spans::parse(file, text)?;
    let err = |p: Pos, msg: String| InputError::new(Location::at(file, p.line, Some(p.col)), msg);
    let JVal::Obj(top) = &root.val else {
        return Err(err(
            root.pos,
            format!(
                "expected a probe JSON object {{\"k\": K, \"unstable\": [...]}}, found {}",
                root.val.kind()
            ),
        ));
    };
    fn get<'a>(ms: &'a [Member], key: &str) -> Option<&'a Node> {
        ms.iter().rev().find(|m| m.key == key).map(|m| &m.value)
    }
    fn uint(n: &Node) -> Option<u64> {
        match &n.val {
            JVal::Num(x) => x.as_u64(),
            _ => None,
        }
    }
    let k_node = get(top, "k").ok_or_else(|| {
        err(
            root.pos,
            "missing field \"k\": expected the number of probe runs".into(),
        )
    })?;
    let k = match uint(k_node).and_then(|k| u32::try_from(k).ok()) {
        Some(k) if k > 0 => k,
        _ => {
            return Err(err(
                k_node.pos,
                format!(
                    "expected \"k\" to be a positive integer (the number of probe runs), found {}",
                    show(&k_node.val)
                ),
            ))
        }
    };
    let seed = match get(top, "seed") {
        None => None,
        Some(Node { val: JVal::Null, .. }) => None,
        Some(n) => Some(uint(n).ok_or_else(|| {
            err(
                n.pos,
                format!(
                    "expected \"seed\" to be a non-negative integer or null, found {}",
                    show(&n.val)
                ),
            )
        })?),
    };

    // One entry: counts with their position.
    let counts = |test: &str, n: &Node, body: &[Member]| -> Result<ProbeCounts, InputError> {
        let num = |key: &str| -> Result<u32, InputError> {
            let v = get(body, key).ok_or_else(|| {
                err(
                    n.pos,
                    format!("entry for {test:?} is missing {key:?}: expected an integer"),
                )
            })?;
            uint(v).and_then(|x| u32::try_from(x).ok()).ok_or_else(|| {
                err(
                    v.pos,
                    format!("expected {key:?} to be a non-negative integer, found {}", show(&v.val)),
                )
            })
        };
        let failures = num("failures")?;
        let runs = num("runs")?;
        let at = get(body, "failures").map(|v| v.pos).unwrap_or(n.pos);
        if failures > runs {
            return Err(err(
                at,
                format!("{test:?}: failures ({failures}) is more than runs ({runs})"),
            ));
        }
        if runs > k {
            let at = get(body, "runs").map(|v| v.pos).unwrap_or(n.pos);
            return Err(err(at, format!("{test:?}: runs ({runs}) is more than k ({k})")));
        }
        Ok(ProbeCounts { failures, runs })
    };
    let list = |name: &str, n: &Node| -> Result<Vec<(TestId, ProbeCounts, Pos)>, InputError> {
        let mut out = Vec::new();
        match &n.val {
            JVal::Arr(items) => {
                for item in items {
                    let JVal::Obj(body) = &item.val else {
                        return Err(err(
                            item.pos,
                            format!(
                                "expected an entry {{\"test\", \"failures\", \"runs\"}} in {name:?}, found {}",
                                item.val.kind()
                            ),
                        ));
                    };
                    let t = get(body, "test")
                        .ok_or_else(|| err(item.pos, format!("entry in {name:?} is missing \"test\"")))?;
                    let JVal::Str(test) = &t.val else {
                        return Err(err(
                            t.pos,
                            format!("expected \"test\" to be a node id string, found {}", t.val.kind()),
                        ));
                    };
                    if test.is_empty() {
                        return Err(err(t.pos, "\"test\" is empty: expected a node id".into()));
                    }
                    out.push((TestId::new(test.clone()), counts(test, item, body)?, t.pos));
                }
            }
            JVal::Obj(members) if name == "tests" => {
                for m in members {
                    let JVal::Obj(body) = &m.value.val else {
                        return Err(err(
                            m.value.pos,
                            format!(
                                "expected {{\"failures\", \"runs\"}} for {:?}, found {}",
                                m.key,
                                m.value.val.kind()
                            ),
                        ));
                    };
                    if m.key.is_empty() {
                        return Err(err(m.key_pos, "empty test name: expected a node id".into()));
                    }
                    out.push((TestId::new(m.key.clone()), counts(&m.key, &m.value, body)?, m.key_pos));
                }
            }
            other => {
                return Err(err(
                    n.pos,
                    format!(
                        "expected {name:?} to be an array of {{\"test\", \"failures\", \"runs\"}}, found {}",
                        other.kind()
                    ),
                ))
            }
        }
        Ok(out)
    };
    let dedupe = |name: &str,
                  entries: Vec<(TestId, ProbeCounts, Pos)>|
     -> Result<BTreeMap<TestId, (ProbeCounts, Pos)>, InputError> {
        let mut map: BTreeMap<TestId, (ProbeCounts, Pos)> = BTreeMap::new();
        for (t, c, p) in entries {
            if let Some((_, first)) = map.get(&t) {
                return Err(err(
                    p,
                    format!("{t} appears twice in {name:?} (first at line {})", first.line),
                ));
            }
            map.insert(t, (c, p));
        }
        Ok(map)
    };

    let unstable = match get(top, "unstable") {
        Some(Node { val: JVal::Null, .. }) | None => None,
        Some(n) => Some(dedupe("unstable", list("unstable", n)?)?),
    };
    let all = match get(top, "tests") {
        Some(Node { val: JVal::Null, .. }) | None => None,
        Some(n) => Some(dedupe("tests", list("tests", n)?)?),
    };
    let (tests, complete) = match (all, unstable) {
        (None, None) => {
            return Err(err(
                root.pos,
                "missing field \"unstable\": expected {\"k\": K, \"unstable\": [...]}".into(),
            ))
        }
        // Entries with no runs say nothing about a test: it was not probed.
        (None, Some(u)) => (
            u.into_iter()
                .filter(|(_, (c, _))| c.runs > 0)
                .map(|(t, (c, _))| (t, c))
                .collect(),
            false,
        ),
        (Some(all), u) => {
            for (t, (c, p)) in u.into_iter().flatten() {
                match all.get(&t) {
                    Some((a, _)) if *a == c => {}
                    Some((a, _)) => {
                        return Err(err(
                            p,
                            format!(
                                "{t}: \"unstable\" says {}/{} but \"tests\" says {}/{}",
                                c.failures, c.runs, a.failures, a.runs
                            ),
                        ))
                    }
                    None => return Err(err(p, format!("{t} is in \"unstable\" but not in \"tests\""))),
                }
            }
            (
                all.into_iter()
                    .filter(|(_, (c, _))| c.runs > 0)
                    .map(|(t, (c, _))| (t, c))
                    .collect(),
                true,
            )
        }
    };
    Ok(Probe {
        k,
        tests,
        complete,
        seed,
    })
}

fn show(v: &crate::gate::json_spans::JVal) -> String {
    use crate::gate::json_spans::JVal;
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
pub fn from_runs(runs: &[TestResults]) -> Probe {
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
pub struct ProbeShard {
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
pub fn merge_shards(shards: &[ProbeShard]) -> Result<Probe, InputError> {
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
mod tests {
    use super::*;
    use crate::gate::results::{parse_junit, parse_reportlog};
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    fn dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/probe")
    }
    fn read(p: PathBuf) -> String {
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn power_matches_design() {
        assert!(
            (detection_chance(0.05, 10) - 0.40).abs() < 0.005,
            "{}",
            detection_chance(0.05, 10)
        );
        assert!(
            (detection_chance(0.05, 50) - 0.92).abs() < 0.005,
            "{}",
            detection_chance(0.05, 50)
        );
        assert_eq!(detection_chance(0.5, 2), 0.5);
        assert!(detection_chance(0.3, u32::MAX).is_finite());

        assert_eq!(min_detectable_rate(2, 0.9), None);
        assert!((min_detectable_rate(2, 0.5).unwrap() - 0.5).abs() < 1e-6);
        assert_eq!(min_detectable_rate(1, 0.1), None);
        assert_eq!(min_detectable_rate(0, 0.1), None);
        assert_eq!(min_detectable_rate(10, f64::NAN), None);
        for (k, c) in [(5, 0.9), (10, 0.9), (50, 0.9), (50, 0.92), (200, 0.99), (10, 0.4)] {
            let p = min_detectable_rate(k, c).unwrap();
            assert!(p > 0.0 && p <= 0.5);
            assert!(detection_chance(p, k) >= c, "k={k} c={c} p={p}");
            assert!(
                detection_chance(p * (1.0 - 1e-9), k) < c,
                "k={k} c={c}: {p} is not the smallest"
            );
        }
        // Probe power: p = 5 % is shown with 92 % at K = 50, so the 0.9 threshold lies just below 5 %.
        let p = min_detectable_rate(50, 0.9).unwrap();
        assert!(p > 0.04 && p < 0.05, "{p}");
        // K = 10 reaches 40 % at about 5 %.
        assert!((min_detectable_rate(10, 0.40).unwrap() - 0.05).abs() < 0.002);
    }

    /// The committed probe runs (5 runs of the base; report-log and xunit1 of the
    /// same runs, xunit2 from a second set) against scripts/probe_counts.py's
    /// independent count in expected.json.
    /// The fixture probe's five report-log runs split over two shards merge to the same
    /// counts as read together; another base sha or another collection is an error.
    #[test]
    fn shards_merge_only_the_same_collection_at_the_same_base() {
        let run = |n: u32| {
            let f = format!("run-{n}.jsonl");
            parse_reportlog(&f, &read(dir().join("reportlog").join(&f))).unwrap()
        };
        let all: Vec<TestResults> = (1..=5).map(run).collect();
        let shard = |name: &str, sha: Option<&str>, runs: &[TestResults]| ProbeShard {
            name: name.into(),
            base_sha: sha.map(str::to_string),
            runs: runs.to_vec(),
        };
        let a = shard("probe/a", Some("abc123"), &all[..2]);
        let b = shard("probe/b", Some("ABC123"), &all[2..]);
        assert_eq!(merge_shards(&[a.clone(), b.clone()]).unwrap(), from_runs(&all));
        assert_eq!(merge_shards(&[a.clone(), b.clone()]).unwrap().k, 5);

        let e = merge_shards(&[a.clone(), shard("probe/c", Some("def456"), &all[2..])]).unwrap_err();
        assert_eq!(e.location.file, "probe/c/meta.json");
        assert!(
            e.message.contains("different base commits") && e.message.contains("def456"),
            "{e}"
        );

        let e = merge_shards(&[a.clone(), shard("probe/d", None, &all[2..])]).unwrap_err();
        assert!(e.message.contains("\"base_sha\""), "{e}");

        let mut fewer = all[3].clone();
        let gone = fewer.tests.keys().next().cloned().unwrap();
        fewer.tests.remove(&gone);
        let e = merge_shards(&[a.clone(), shard("probe/e", Some("abc123"), &[fewer])]).unwrap_err();
        assert_eq!(e.location.file, "probe/e");
        assert!(
            e.message.contains("collected different tests") && e.message.contains(gone.as_str()),
            "{e}"
        );

        let e = merge_shards(&[a, shard("probe/f", Some("abc123"), &[])]).unwrap_err();
        assert!(e.message.contains("no result files"), "{e}");
    }

    #[test]
    fn fixture_probe_three_formats() {
        let want = parse_probe_json("expected.json", &read(dir().join("expected.json"))).unwrap();
        assert_eq!(want.k, 5);
        assert!(want.complete);
        let runs = |sub: &str, ext: &str, known: &BTreeSet<TestId>| -> Vec<TestResults> {
            (1..=5)
                .map(|n| {
                    let name = format!("{sub}/run-{n}.{ext}");
                    let text = read(dir().join(&name));
                    let r = if ext == "jsonl" {
                        parse_reportlog(&name, &text)
                    } else {
                        parse_junit(&name, &text, known)
                    };
                    let r = r.unwrap();
                    assert!(r.unmatched.is_empty(), "{name}: {:?}", r.unmatched);
                    r
                })
                .collect()
        };
        let rl = runs("reportlog", "jsonl", &BTreeSet::new());
        let known: BTreeSet<TestId> = rl.iter().flat_map(|r| r.tests.keys().cloned()).collect();
        // Skipped and xfailed tests: probe_counts.py counts every run that reported the
        // test; from_runs counts only runs with a pass/fail outcome, so it leaves them out.
        let never_decided: BTreeSet<TestId> = known
            .iter()
            .filter(|t| {
                rl.iter()
                    .all(|r| matches!(r.tests[*t].outcome, Outcome::Skipped | Outcome::XFailed))
            })
            .cloned()
            .collect();
        assert_eq!(
            never_decided.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
            vec![
                "tests/test_util.py::test_legacy_currency",
                "tests/test_util.py::test_round_half_up"
            ]
        );
        let mut expected = want.clone();
        expected.tests.retain(|t, _| !never_decided.contains(t));
        for (name, got) in [
            ("reportlog", from_runs(&rl)),
            (
                "junit-xunit1",
                from_runs(&runs("junit-xunit1", "xml", &BTreeSet::new())),
            ),
            ("junit-xunit2", from_runs(&runs("junit-xunit2", "xml", &known))),
        ] {
            assert_eq!(got, expected, "{name}");
            let g = TestId::new("tests/test_refunds.py::test_gateway_retry");
            assert_eq!(got.tests[&g], ProbeCounts { failures: 2, runs: 5 });
            assert!(got.is_unstable(&g));
            let b = TestId::new("tests/test_refunds.py::test_refund_rounding_broken");
            assert_eq!(got.stability(&b), Some(Stability::BrokenOnBase));
            assert!(got.shows_stable(&b));
            assert!(!got.shows_stable(&TestId::new("tests/test_util.py::test_legacy_currency")));
        }
        // The short form (only "k" and "unstable") is incomplete.
        let text = read(dir().join("expected.json"));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let short = serde_json::json!({"k": v["k"], "unstable": v["unstable"]}).to_string();
        let p = parse_probe_json("p.json", &short).unwrap();
        assert!(!p.complete);
        assert_eq!(p.tests.len(), 1);
        assert!(p.is_unstable(&TestId::new("tests/test_refunds.py::test_gateway_retry")));
    }

    #[test]
    fn from_runs_counts() {
        use crate::gate::results::TestResult;
        let run = |o: &[(&str, Outcome)]| TestResults {
            tests: o
                .iter()
                .map(|(t, o)| {
                    (
                        TestId::new(*t),
                        TestResult {
                            outcome: *o,
                            phase: None,
                            message: None,
                            source: String::new(),
                            reruns: 0,
                        },
                    )
                })
                .collect(),
            ..Default::default()
        };
        let p = from_runs(&[
            run(&[
                ("a::x", Outcome::Passed),
                ("a::e", Outcome::Error),
                ("a::s", Outcome::Skipped),
                ("a::xp", Outcome::XPassed),
            ]),
            run(&[
                ("a::x", Outcome::Failed),
                ("a::e", Outcome::Error),
                ("a::s", Outcome::XFailed),
            ]),
            run(&[("a::e", Outcome::Passed), ("a::xp", Outcome::XPassed)]),
        ]);
        assert_eq!(p.k, 3);
        assert!(p.complete);
        assert_eq!(p.seed, None);
        assert_eq!(p.tests[&TestId::new("a::x")], ProbeCounts { failures: 1, runs: 2 });
        assert_eq!(p.tests[&TestId::new("a::e")], ProbeCounts { failures: 2, runs: 3 });
        assert_eq!(p.tests[&TestId::new("a::xp")], ProbeCounts { failures: 0, runs: 2 });
        assert!(!p.tests.contains_key(&TestId::new("a::s")));
        assert_eq!(from_runs(&[]).k, 0);
        // A base run in which a test failed and passed on a rerun shows it unstable.
        let mut flaky = run(&[("a::f", Outcome::Passed), ("a::g", Outcome::Failed)]);
        for t in flaky.tests.values_mut() {
            t.reruns = 1;
        }
        let p = from_runs(&[flaky, run(&[("a::f", Outcome::Passed), ("a::g", Outcome::Failed)])]);
        assert_eq!(p.tests[&TestId::new("a::f")], ProbeCounts { failures: 1, runs: 3 });
        assert_eq!(p.stability(&TestId::new("a::f")), Some(Stability::Unstable));
        // Failed in every attempt of every run: still broken on base, not unstable.
        assert_eq!(p.tests[&TestId::new("a::g")], ProbeCounts { failures: 3, runs: 3 });
        assert_eq!(p.stability(&TestId::new("a::g")), Some(Stability::BrokenOnBase));
    }

    #[test]
    fn probe_json_forms() {
        let p = parse_probe_json(
            "p.json",
            r#"{"k": 5, "seed": 7, "extra": {"ignored": true},
                "unstable": [{"test": "t.py::a", "failures": 2, "runs": 5, "note": "x"}],
                "tests": [{"test": "t.py::a", "failures": 2, "runs": 5}, {"test": "t.py::b", "failures": 0, "runs": 5},
                          {"test": "t.py::never", "failures": 0, "runs": 0}]}"#,
        )
        .unwrap();
        assert_eq!((p.k, p.seed, p.complete, p.tests.len()), (5, Some(7), true, 2));
        assert!(p.shows_stable(&TestId::new("t.py::b")));
        assert!(!p.shows_stable(&TestId::new("t.py::never")));
        let p = parse_probe_json("p.json", "{\"k\": 3, \"unstable\": [], \"seed\": null}").unwrap();
        assert_eq!((p.k, p.seed, p.complete, p.tests.len()), (3, None, false, 0));
    }

    #[test]
    fn probe_json_errors() {
        let cases: &[(&str, &str, usize, usize, &str)] = &[
            ("syntax", "{\"k\": 5,\n \"unstable\": [}", 2, 15, "expected value"),
            ("not object", "[]", 1, 1, "expected a probe JSON object"),
            ("no k", "{\"unstable\": []}", 1, 1, "missing field \"k\""),
            ("k zero", "{\"k\": 0, \"unstable\": []}", 1, 7, "positive integer"),
            ("k float", "{\"k\": 2.5, \"unstable\": []}", 1, 7, "found 2.5"),
            ("k negative", "{\"k\": -1, \"unstable\": []}", 1, 7, "positive integer"),
            ("k string", "{\"k\": \"5\", \"unstable\": []}", 1, 7, "found \"5\""),
            ("k huge", "{\"k\": 99999999999, \"unstable\": []}", 1, 7, "positive integer"),
            ("no unstable", "{\"k\": 5}", 1, 1, "missing field \"unstable\""),
            ("unstable not array", "{\"k\": 5, \"unstable\": 3}", 1, 22, "to be an array"),
            ("entry not object", "{\"k\": 5, \"unstable\": [\n 1]}", 2, 2, "expected an entry"),
            ("no test", "{\"k\": 5, \"unstable\": [\n {\"failures\": 1, \"runs\": 2}]}", 2, 2, "missing \"test\""),
            ("test type", "{\"k\": 5, \"unstable\": [{\"test\": 5, \"failures\": 1, \"runs\": 2}]}", 1, 32, "\"test\" to be a node id string"),
            ("no runs", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": 1}]}", 1, 23, "missing \"runs\""),
            ("failures type", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": -1, \"runs\": 2}]}", 1, 52, "non-negative integer"),
            ("failures > runs", "{\"k\": 5, \"unstable\": [\n{\"test\": \"t::a\", \"failures\": 3, \"runs\": 2}]}", 2, 30, "failures (3) is more than runs (2)"),
            ("runs > k", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": 3, \"runs\": 6}]}", 1, 63, "more than k"),
            ("duplicate", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": 1, \"runs\": 2},\n {\"test\": \"t::a\", \"failures\": 1, \"runs\": 2}]}", 2, 11, "appears twice"),
            ("disagree", "{\"k\": 5, \"unstable\": [{\"test\": \"t::a\", \"failures\": 1, \"runs\": 2}], \"tests\": {\"t::a\": {\"failures\": 2, \"runs\": 2}}}", 1, 32, "\"tests\" says 2/2"),
            ("seed", "{\"k\": 5, \"unstable\": [], \"seed\": \"x\"}", 1, 34, "\"seed\""),
        ];
        for (name, text, line, col, msg) in cases {
            let e = parse_probe_json("p.json", text).expect_err(name);
            assert_eq!(
                (e.location.line, e.location.column),
                (Some(*line), Some(*col)),
                "{name}: {e}"
            );
            assert!(e.message.contains(msg), "{name}: {e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn probe_json_never_panics(s in "\\PC*") {
            let _ = parse_probe_json("p", &s);
        }
        #[test]
        fn probe_jsonish_never_panics(s in "[{}\\[\\]\":, a-z0-9.e-]{0,100}") {
            let _ = parse_probe_json("p", &s);
            let _ = parse_probe_json("p", &format!("{{\"k\": 3, \"unstable\": [{s}]}}"));
        }
        #[test]
        fn min_rate_is_a_boundary(k in 0u32..500, c in 0.0f64..1.0) {
            if let Some(p) = min_detectable_rate(k, c) {
                proptest::prop_assert!(p > 0.0 && p <= 0.5);
                proptest::prop_assert!(detection_chance(p, k) >= c);
            } else {
                proptest::prop_assert!(detection_chance(0.5, k) < c);
            }
        }
    }
}
