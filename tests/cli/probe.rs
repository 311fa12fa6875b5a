//! `flakegate probe` end to end: live runs of the tiny pytest project in
//! `tests/fixtures/probe-project/` (report-log and JUnit), `--jobs`, `--from`,
//! unusable runs (crash, timeout, fewer tests), inconclusive probes, `--only`,
//! `--witnesses-of`, and the probe JSON fed to `flakegate check`.
//!
//! The tests need Python 3 with the pinned pytest and pytest-reportlog:
//! `tests/fixtures/probe-project/ensure-venv.sh` finds or builds it (once per
//! test binary). Without python3 these tests fail; they never skip.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::support::copy_dir;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python with pytest and pytest-reportlog, found or built once.
fn python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let script = root().join("tests/fixtures/probe-project/ensure-venv.sh");
        let out = Command::new("bash")
            .arg(&script)
            .output()
            .expect("run bash for ensure-venv.sh");
        assert!(
            out.status.success(),
            "{} failed — the probe tests need python3 (with venv and pip) and, the first time, PyPI:\n{}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        assert!(path.is_file(), "ensure-venv.sh printed {path:?}, which is not a file");
        path
    })
}

/// A scratch copy of a fixture project (runs never share a working tree).
fn project(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("tests/fixtures").join(name), dir.path());
    dir
}

fn pytest_reportlog() -> Vec<String> {
    vec![
        python().display().to_string(),
        "-m".into(),
        "pytest".into(),
        "-q".into(),
        "--report-log={results}".into(),
    ]
}

fn pytest_junit() -> Vec<String> {
    vec![
        python().display().to_string(),
        "-m".into(),
        "pytest".into(),
        "-q".into(),
        "--junitxml={results}".into(),
        "-o".into(),
        "junit_family=xunit1".into(),
    ]
}

fn flakegate(cwd: &Path, args: &[String], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_flakegate"));
    cmd.args(args).current_dir(cwd).env("PYTHONDONTWRITEBYTECODE", "1");
    for v in [
        "PROBE_CRASH_RUNS",
        "PROBE_HANG_RUNS",
        "PROBE_FEWER_RUNS",
        "PYTEST_ADDOPTS",
        "FLAKEGATE_RUN_INDEX",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run flakegate")
}

struct Probed {
    code: i32,
    json: Value,
    stdout: String,
    stderr: String,
}

/// `flakegate probe ARGS --out OUT -- CMD` in `cwd`; the JSON is read from OUT.
fn probe(cwd: &Path, args: &[&str], cmd: &[String], env: &[(&str, &str)]) -> Probed {
    let out_file = cwd.join(format!("probe-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&out_file);
    let mut all: Vec<String> = vec!["probe".into()];
    if !args.contains(&"--today") {
        all.extend(["--today".to_string(), "2026-11-20".to_string()]);
    }
    all.extend(args.iter().map(|s| s.to_string()));
    all.push("--out".into());
    all.push(out_file.display().to_string());
    if !cmd.is_empty() {
        all.push("--".into());
        all.extend(cmd.iter().cloned());
    }
    let out = flakegate(cwd, &all, env);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let text = std::fs::read_to_string(&out_file).unwrap_or_else(|e| {
        panic!(
            "no probe JSON written ({e}); exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        )
    });
    let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("probe JSON does not parse: {e}\n{text}"));
    Probed {
        code: out.status.code().unwrap_or(-1),
        json,
        stdout,
        stderr,
    }
}

const T: &str = "tests/test_probe.py::";

fn tests_of(j: &Value) -> BTreeMap<String, Value> {
    j["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("no \"tests\" in {j:#}"))
        .iter()
        .map(|t| (t["test"].as_str().unwrap().to_string(), t.clone()))
        .collect()
}

/// (failures, runs, stability) of one test.
fn counts(j: &Value, name: &str) -> (u64, u64, String) {
    let t = tests_of(j)
        .remove(&format!("{T}{name}"))
        .unwrap_or_else(|| panic!("{name} not in probe: {j:#}"));
    (
        t["failures"].as_u64().unwrap(),
        t["runs"].as_u64().unwrap(),
        t["stability"].as_str().unwrap().to_string(),
    )
}

/// The parts of a probe that depend only on the tests' outcomes.
fn outcome_view(j: &Value) -> Value {
    let tests: Vec<Value> = j["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut t = t.clone();
            let o = t.as_object_mut().unwrap();
            o.remove("replay");
            o.remove("first_failure");
            t
        })
        .collect();
    serde_json::json!({
        "k": j["k"], "tests": tests, "unstable": j["unstable"], "broken_on_base": j["broken_on_base"],
        "ledger_suggestions": j["ledger_suggestions"], "power": j["power"], "seed": j["seed"],
    })
}

fn run_of(j: &Value, index: u64) -> Value {
    j["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["index"] == index)
        .cloned()
        .unwrap()
}

#[test]
fn live_report_log_probe_counts_exactly() {
    let dir = project("probe-project");
    let p = probe(dir.path(), &["--runs", "6", "--seed", "7"], &pytest_reportlog(), &[]);
    assert_eq!(p.code, 0, "{}\n{}", p.stdout, p.stderr);
    let j = &p.json;
    assert_eq!(j["k"], 6);
    assert_eq!(j["runs_attempted"], 6);
    assert_eq!(j["usable_runs"], 6);
    assert_eq!(j["inconclusive"], false);
    assert_eq!(j["seed"], 7);
    assert_eq!(j["seed_source"], "--seed");
    assert_eq!(j["date"], "2026-11-20");

    assert_eq!(counts(j, "test_stable"), (0, 6, "stable_passing".into()));
    assert_eq!(counts(j, "test_unstable"), (3, 6, "unstable".into()));
    assert_eq!(counts(j, "test_broken"), (6, 6, "broken_on_base".into()));
    assert_eq!(counts(j, "test_setup_error"), (6, 6, "broken_on_base".into()));
    assert_eq!(counts(j, "test_skipped"), (0, 0, "skipped".into()));
    assert_eq!(counts(j, "test_seed_is_shared"), (0, 6, "stable_passing".into()));
    assert_eq!(counts(j, "test_param[1]"), (0, 6, "stable_passing".into()));
    // The hash seed is the same in every run, so a hash-order dependent test is stable either way.
    let (f, r, _) = counts(j, "test_hash_order_is_seeded");
    assert!(r == 6 && (f == 0 || f == 6), "{f}/{r}");

    let all = tests_of(j);
    let unstable = &all[&format!("{T}test_unstable")];
    assert_eq!(unstable["failed_runs"], serde_json::json!([2, 4, 6]));
    assert_eq!(unstable["passes"], 3);
    assert_eq!(unstable["missing"], 0);
    assert!(
        unstable["first_failure"]
            .as_str()
            .is_some_and(|m| m.contains("is even")),
        "{unstable:#}"
    );
    let py = python().display().to_string();
    assert_eq!(
        unstable["replay"],
        format!("replay: FLAKEGATE_SEED=7 PYTHONHASHSEED=7 {py} -m pytest -q 'tests/test_probe.py::test_unstable'")
    );
    assert_eq!(all[&format!("{T}test_setup_error")]["errors"], 6);
    assert_eq!(all[&format!("{T}test_skipped")]["skips"], 6);
    assert!(all[&format!("{T}test_stable")].get("replay").is_none());

    assert_eq!(
        j["unstable"],
        serde_json::json!([{"test": format!("{T}test_unstable"), "failures": 3, "runs": 6}])
    );
    let broken: Vec<&str> = j["broken_on_base"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["test"].as_str().unwrap())
        .filter(|t| !t.ends_with("test_hash_order_is_seeded"))
        .collect();
    assert_eq!(broken, vec![format!("{T}test_broken"), format!("{T}test_setup_error")]);

    // Ready-to-paste ledger entries: never an invented owner.
    let sug = j["ledger_suggestions"].as_array().unwrap();
    // test_unstable, test_broken, test_setup_error, and test_hash_order_is_seeded if this seed breaks it.
    assert_eq!(sug.len(), 3 + usize::from(f == 6), "{sug:#?}");
    let u = sug.iter().find(|s| s["test"] == format!("{T}test_unstable")).unwrap();
    assert_eq!(
        u,
        &serde_json::json!({"test": format!("{T}test_unstable"), "observed": "3/6 fail on clean base", "reason": null,
                            "owner": null, "frozen_at": "2026-11-20", "expires": "2026-12-04"})
    );
    let b = sug.iter().find(|s| s["test"] == format!("{T}test_broken")).unwrap();
    assert_eq!(b["observed"], "6/6 fail on clean base");
    assert!(b["reason"].as_str().unwrap().contains("broken on base"));
    assert!(j["ledger_note"].as_str().unwrap().contains("never invents"));

    // Probe power: K = 6 reveals p ≥ 33 % with 90 % chance.
    let power = &j["power"];
    assert_eq!(power["confidence"], 0.9);
    let rate = power["min_detectable_rate"].as_f64().unwrap();
    let chance = |p: f64| 1.0 - p.powi(6) - (1.0 - p).powi(6);
    assert!(chance(rate) >= 0.9 - 1e-6 && chance(rate - 0.01) < 0.9, "rate {rate}");
    assert!(
        power["statement"]
            .as_str()
            .unwrap()
            .contains("not shown unstable at p ≥"),
        "{power:#}"
    );

    // With --out the terminal gets the text summary; progress went to stderr as plain lines.
    assert!(p.stdout.contains("unstable (1):"), "{}", p.stdout);
    assert!(
        p.stdout.contains("replay: FLAKEGATE_SEED=7 PYTHONHASHSEED=7"),
        "{}",
        p.stdout
    );
    assert!(p.stdout.contains("not shown unstable at p ≥"), "{}", p.stdout);
    assert!(
        p.stderr.contains("flakegate probe: run 6 of 6 done") || p.stderr.contains("done (6/6)"),
        "{}",
        p.stderr
    );

    // The gate reads it: a complete probe with the seed.
    let text = serde_json::to_string(j).unwrap();
    let gp = flakegate::gate::probe::parse_probe_json("probe.json", &text).expect("the gate reads the probe JSON");
    assert_eq!(gp.k, 6);
    assert!(gp.complete);
    assert_eq!(gp.seed, Some(7));
    let id = flakegate::gate::TestId::new(format!("{T}test_unstable"));
    assert!(gp.is_unstable(&id));
    assert!(gp.shows_stable(&flakegate::gate::TestId::new(format!("{T}test_stable"))));
}

#[test]
fn jobs_2_gives_the_same_counts_as_jobs_1() {
    let dir = project("probe-project");
    let one = probe(
        dir.path(),
        &["--runs", "4", "--seed", "3", "--jobs", "1"],
        &pytest_reportlog(),
        &[],
    );
    let two = probe(
        dir.path(),
        &["--runs", "4", "--seed", "3", "--jobs", "2"],
        &pytest_reportlog(),
        &[],
    );
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert_eq!(two.code, 0, "{}", two.stderr);
    assert_eq!(outcome_view(&one.json), outcome_view(&two.json));
    assert_eq!(counts(&two.json, "test_unstable"), (2, 4, "unstable".into()));
}

#[test]
fn junit_results_mode_gives_the_report_log_counts() {
    let dir = project("probe-project");
    let log = probe(dir.path(), &["--runs", "4", "--seed", "5"], &pytest_reportlog(), &[]);
    let xml = probe(dir.path(), &["--runs", "4", "--seed", "5"], &pytest_junit(), &[]);
    assert_eq!(xml.code, 0, "{}\n{}", xml.stdout, xml.stderr);
    let view = |j: &Value| -> Vec<(String, Value, Value, Value, Value)> {
        tests_of(j)
            .into_values()
            .map(|t| {
                (
                    t["test"].as_str().unwrap().to_string(),
                    t["failures"].clone(),
                    t["runs"].clone(),
                    t["skips"].clone(),
                    t["stability"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(view(&log.json), view(&xml.json));
    assert_eq!(xml.json["unstable"], log.json["unstable"]);
    assert_eq!(counts(&xml.json, "test_unstable"), (2, 4, "unstable".into()));
}

#[test]
fn from_saved_files_equals_the_live_probe() {
    let dir = project("probe-project");
    let keep = dir.path().join("runs");
    let keep_s = keep.display().to_string();
    let live = probe(
        dir.path(),
        &["--runs", "5", "--seed", "11", "--keep", &keep_s],
        &pytest_reportlog(),
        &[],
    );
    assert_eq!(live.code, 0, "{}", live.stderr);
    for i in 1..=5 {
        assert!(keep.join(format!("run-{i}.jsonl")).is_file(), "run-{i}.jsonl kept");
        assert!(
            keep.join(format!("logs/run-{i}.log")).is_file(),
            "logs/run-{i}.log kept"
        );
        assert_eq!(
            run_of(&live.json, i)["results"],
            keep.join(format!("run-{i}.jsonl")).display().to_string()
        );
    }
    let from = probe(dir.path(), &["--from", &keep_s, "--seed", "11"], &[], &[]);
    assert_eq!(from.code, 0, "{}", from.stderr);
    assert_eq!(outcome_view(&from.json), outcome_view(&live.json));
    assert_eq!(from.json["command"], Value::Null);
    assert_eq!(counts(&from.json, "test_unstable"), (2, 5, "unstable".into()));

    // `flakegate check --probe DIR` reads the same files: the same counts.
    let gate_dir = flakegate::evidence::EvidenceSources {
        probe: Some(keep.clone()),
        ..Default::default()
    };
    let loaded =
        flakegate::evidence::load_evidence(&gate_dir, &flakegate::gate::Patch::default(), None, &Default::default());
    let gp = loaded.evidence.probe.expect("gate reads the kept runs");
    for t in from.json["tests"].as_array().unwrap() {
        // (The gate keeps no entry for a test with no pass/fail outcome, e.g. one skipped every run.)
        let c = gp.tests.get(&flakegate::gate::TestId::new(t["test"].as_str().unwrap()));
        assert_eq!(
            c.map(|c| (u64::from(c.failures), u64::from(c.runs))).unwrap_or((0, 0)),
            (t["failures"].as_u64().unwrap(), t["runs"].as_u64().unwrap())
        );
    }

    // --keep refuses a directory that already holds runs.
    let again = flakegate(
        dir.path(),
        &[
            "probe".into(),
            "--runs".into(),
            "2".into(),
            "--keep".into(),
            keep_s.clone(),
            "--".into(),
            "true".into(),
        ],
        &[],
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));
}

#[test]
fn a_crashing_run_is_reported_and_left_out() {
    let dir = project("probe-project");
    let p = probe(
        dir.path(),
        &["--runs", "4", "--seed", "1"],
        &pytest_reportlog(),
        &[("PROBE_CRASH_RUNS", "2")],
    );
    assert_eq!(p.code, 0, "{}\n{}", p.stdout, p.stderr);
    let r = run_of(&p.json, 2);
    assert_eq!(r["usable"], false);
    assert_eq!(r["status"], "crashed");
    assert!(r["detail"].as_str().unwrap().contains("signal 6"), "{r:#}");
    assert_eq!(p.json["k"], 3);
    assert_eq!(p.json["usable_runs"], 3);
    // Runs 1, 3, 4 count: the unstable test fails in run 4 only.
    assert_eq!(counts(&p.json, "test_unstable"), (1, 3, "unstable".into()));
    assert_eq!(
        tests_of(&p.json)[&format!("{T}test_unstable")]["failed_runs"],
        serde_json::json!([4])
    );
    assert!(p.stdout.contains("run 2: crashed"), "{}", p.stdout);
}

#[test]
fn a_timed_out_run_is_reported() {
    let dir = project("probe-project");
    let t = std::time::Instant::now();
    let p = probe(
        dir.path(),
        &["--runs", "3", "--seed", "1", "--jobs", "3", "--timeout-per-run", "10"],
        &pytest_reportlog(),
        &[("PROBE_HANG_RUNS", "1")],
    );
    assert!(
        t.elapsed().as_secs() < 40,
        "the hanging run was not killed: {:?}",
        t.elapsed()
    );
    assert_eq!(p.code, 0, "{}\n{}", p.stdout, p.stderr);
    let r = run_of(&p.json, 1);
    assert_eq!(r["status"], "timed_out", "{r:#}");
    assert!(r["detail"].as_str().unwrap().contains("timed out after 10"), "{r:#}");
    assert_eq!(p.json["k"], 2);
    assert_eq!(run_of(&p.json, 2)["status"], "ok");
}

#[test]
fn a_run_collecting_fewer_tests_is_reported() {
    let dir = project("probe-project");
    let p = probe(
        dir.path(),
        &["--runs", "4", "--seed", "1"],
        &pytest_reportlog(),
        &[("PROBE_FEWER_RUNS", "3")],
    );
    assert_eq!(p.code, 0, "{}", p.stderr);
    let r = run_of(&p.json, 3);
    assert_eq!(r["status"], "different_tests", "{r:#}");
    let d = r["detail"].as_str().unwrap();
    assert!(d.contains("1 fewer") && d.contains("test_sometimes_collected"), "{d}");
    assert_eq!(p.json["k"], 3);
    let t = &tests_of(&p.json)[&format!("{T}test_sometimes_collected")];
    assert_eq!(t["missing"], 1);
    assert_eq!(t["missing_runs"], serde_json::json!([3]));
    assert_eq!(t["runs"], 3);
}

#[test]
fn too_many_unusable_runs_make_the_probe_inconclusive() {
    let dir = project("probe-project");
    let p = probe(
        dir.path(),
        &["--runs", "3", "--seed", "1"],
        &pytest_reportlog(),
        &[("PROBE_CRASH_RUNS", "1,3")],
    );
    assert_eq!(p.code, 1, "{}", p.stderr);
    let j = &p.json;
    assert_eq!(j["inconclusive"], true);
    assert!(
        j["why_inconclusive"]
            .as_str()
            .unwrap()
            .contains("2 of 3 runs are unusable"),
        "{j:#}"
    );
    for key in ["k", "unstable", "tests", "ledger_suggestions"] {
        assert!(
            j.get(key).is_none(),
            "an inconclusive probe must not carry {key:?}: {j:#}"
        );
    }
    assert!(p.stdout.contains("INCONCLUSIVE"), "{}", p.stdout);
    // The gate cannot take it for counts.
    let text = serde_json::to_string(j).unwrap();
    assert!(flakegate::gate::probe::parse_probe_json("probe.json", &text).is_err());

    // A command that never writes results: every run crashed without results, with a hint.
    let none = probe(
        dir.path(),
        &["--runs", "2", "--seed", "1"],
        &["sh".into(), "-c".into(), "exit 0".into()],
        &[],
    );
    assert_eq!(none.code, 1);
    assert_eq!(run_of(&none.json, 1)["status"], "crashed");
    assert!(run_of(&none.json, 1)["detail"]
        .as_str()
        .unwrap()
        .contains("without results"));
    assert!(
        none.json["why_inconclusive"]
            .as_str()
            .unwrap()
            .contains("--report-log={results}"),
        "{:#}",
        none.json
    );
}

#[test]
fn only_restricts_the_runs_to_the_named_tests() {
    let dir = project("probe-project");
    let p = probe(
        dir.path(),
        &[
            "--runs",
            "4",
            "--seed",
            "2",
            "--only",
            &format!("{T}test_unstable"),
            &format!("{T}test_stable"),
        ],
        &pytest_reportlog(),
        &[],
    );
    assert_eq!(p.code, 0, "{}", p.stderr);
    let names: Vec<String> = tests_of(&p.json).into_keys().collect();
    assert_eq!(names, vec![format!("{T}test_stable"), format!("{T}test_unstable")]);
    assert_eq!(p.json["only"].as_array().unwrap().len(), 2);
    assert_eq!(counts(&p.json, "test_unstable"), (2, 4, "unstable".into()));
    assert!(p.json["command"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| !w.as_str().unwrap().contains("test_unstable")));
}

#[test]
fn witnesses_of_probes_only_the_tests_that_execute_the_patch() {
    let dir = project("project");
    let counter = dir.path().join("counter");
    std::fs::write(&counter, "0").unwrap();
    let ex = root().join("examples/shop");
    let p = probe(
        dir.path(),
        &[
            "--runs",
            "3",
            "--seed",
            "0",
            "--witnesses-of",
            "--diff",
            &ex.join("pr.diff").display().to_string(),
            "--coverage",
            &ex.join("evidence/coverage.json").display().to_string(),
            "--ledger",
            &ex.join("flake-ledger.json").display().to_string(),
        ],
        &pytest_reportlog(),
        &[("SHOP_FLAKY_COUNTER", &counter.display().to_string())],
    );
    assert_eq!(p.code, 0, "{}\n{}", p.stdout, p.stderr);
    let tests = tests_of(&p.json);
    let names: Vec<&str> = tests.keys().map(|s| s.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "tests/test_refunds.py::test_gateway_retry",
            "tests/test_refunds.py::test_refund_amount",
            "tests/test_refunds.py::test_refund_rounding_broken"
        ]
    );
    // The counter alternates from 0 over sequential runs: run 2 fails.
    let g = &tests["tests/test_refunds.py::test_gateway_retry"];
    assert_eq!((g["failures"].as_u64(), g["runs"].as_u64()), (Some(1), Some(3)));
    assert_eq!(g["frozen_by"], "tests/test_refunds.py::test_gateway_retry");
    assert_eq!(
        tests["tests/test_refunds.py::test_refund_rounding_broken"]["stability"],
        "broken_on_base"
    );
    // Both non-stable witnesses are frozen already: nothing to suggest.
    assert_eq!(p.json["ledger_suggestions"], serde_json::json!([]));
}

#[test]
fn a_probe_json_feeds_check_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let ex = root().join("examples/shop");
    let p = probe(
        tmp.path(),
        &[
            "--from",
            &ex.join("evidence/probe").display().to_string(),
            "--seed",
            "0",
        ],
        &[],
        &[],
    );
    assert_eq!(p.code, 0, "{}", p.stderr);
    assert_eq!(p.json["k"], 5);
    assert_eq!(
        p.json["unstable"],
        serde_json::json!([{"test": "tests/test_refunds.py::test_gateway_retry", "failures": 2, "runs": 5}])
    );
    let probe_json = tmp.path().join("probe.json");
    std::fs::write(&probe_json, serde_json::to_string_pretty(&p.json).unwrap()).unwrap();

    let check = |probe: &Path| -> (i32, Value) {
        let args: Vec<String> = vec![
            "check".into(),
            ex.join("evidence").display().to_string(),
            "--diff".into(),
            ex.join("pr.diff").display().to_string(),
            "--ledger".into(),
            ex.join("flake-ledger.json").display().to_string(),
            "--probe".into(),
            probe.display().to_string(),
            "--today".into(),
            "2026-11-20".into(),
            "--format".into(),
            "json".into(),
        ];
        let out = flakegate(&root(), &args, &[]);
        let json: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("check printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code().unwrap_or(-1), json)
    };
    let (code, with_json) = check(&probe_json);
    let (code_dir, with_dir) = check(&ex.join("evidence/probe"));
    assert_eq!(code, 0, "{with_json:#}");
    assert_eq!(with_json["verdict"], "PASS_WITH_CAVEAT", "{with_json:#}");
    assert_eq!(
        (code, &with_json["verdict"], &with_json["reasons"]),
        (code_dir, &with_dir["verdict"], &with_dir["reasons"])
    );
    assert_eq!(with_json["probe"]["tests"], with_dir["probe"]["tests"]);
    assert_eq!(with_json["probe"]["complete"], true);
    assert_eq!(with_json["probe"]["seed"], 0);
}

#[test]
fn bad_probe_invocations_are_unusable() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["probe".to_string()];
        all.extend(args.iter().map(|s| s.to_string()));
        let out = flakegate(tmp.path(), &all, &[]);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (code, err) = run(&["--runs", "5"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no test command"), "{err}");
    let (code, err) = run(&["--runs", "1", "--", "true"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("at least 2"), "{err}");
    let (code, err) = run(&["--from", "/nonexistent/runs"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no such file"), "{err}");
    let (code, _) = run(&["--seed", "1", "--seed-rotation", "daily", "--", "true"]);
    assert_eq!(code, Some(2));
}

#[test]
fn rotated_seeds_are_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = root().join("examples/shop/evidence/probe").display().to_string();
    let weekly = probe(tmp.path(), &["--from", &runs, "--seed-rotation", "weekly"], &[], &[]);
    assert_eq!(weekly.json["seed_source"], "weekly rotation (2026-W47)");
    let same_week = probe(
        tmp.path(),
        &["--from", &runs, "--seed-rotation", "weekly", "--today", "2026-11-22"],
        &[],
        &[],
    );
    assert_eq!(same_week.json["seed"], weekly.json["seed"]);
    let daily = probe(tmp.path(), &["--from", &runs, "--seed-rotation", "daily"], &[], &[]);
    assert_eq!(daily.json["seed_source"], "daily rotation (2026-11-20)");
    let replay = tests_of(&daily.json)["tests/test_refunds.py::test_gateway_retry"]["replay"]
        .as_str()
        .unwrap()
        .to_string();
    let seed = daily.json["seed"].as_u64().unwrap();
    assert_eq!(
        replay,
        format!(
            "replay: FLAKEGATE_SEED={seed} PYTHONHASHSEED={seed} pytest 'tests/test_refunds.py::test_gateway_retry'"
        )
    );
    // Without a seed, result files from elsewhere have none.
    let none = probe(tmp.path(), &["--from", &runs], &[], &[]);
    assert_eq!(none.json["seed"], Value::Null);
}
