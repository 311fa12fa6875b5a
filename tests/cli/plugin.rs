//! The pytest plugin `python/pytest-flakegate/` end to end, against real pytest, coverage.py
//! and pytest-xdist: its own tests (pytester), `pytest --flakegate=DIR` on
//! `tests/fixtures/plugin-project/` (in one process and with `-n 2`) judged by `flakegate
//! check`, `flakegate probe` driving it with `--flakegate-results={results}`, and its wheel.
//!
//! The venv is `target/pyvenv-plugin`, built once from the pins in
//! `python/pytest-flakegate/requirements-test.txt` by
//! `tests/fixtures/probe-project/ensure-venv.sh` (PyPI the first time); the plugin is
//! installed into it from a copy of its folder, once per test binary. Without python3 these
//! tests fail; they never skip.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::support::{copy_dir, git};

const PACKAGE: &str = "python/pytest-flakegate";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A copy of the plugin's source folder (what is committed: no build/ or egg-info of an
/// earlier install in place).
fn package_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = root().join(PACKAGE);
    for f in ["pyproject.toml", "README.md"] {
        std::fs::copy(from.join(f), dir.path().join(f)).unwrap();
    }
    for d in ["src", "tests"] {
        copy_dir(&from.join(d), &dir.path().join(d));
    }
    dir
}

fn run(cmd: &mut Command) -> Output {
    cmd.env("PYTHONDONTWRITEBYTECODE", "1");
    for v in [
        "PYTEST_ADDOPTS",
        "PYTEST_PLUGINS",
        "GITHUB_EVENT_PATH",
        "GITHUB_SHA",
        "GITHUB_WORKFLOW_REF",
    ] {
        cmd.env_remove(v);
    }
    cmd.output().expect("run a command")
}

fn ok(what: &str, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The venv's Python, with the plugin installed from this checkout.
fn python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let script = root().join("tests/fixtures/probe-project/ensure-venv.sh");
        let out = run(Command::new("bash").arg(&script).args([
            &format!("{PACKAGE}/requirements-test.txt"),
            "pyvenv-plugin",
            "pytest,coverage,xdist,pytest_cov,setuptools",
        ]));
        let path = PathBuf::from(
            ok(
                "ensure-venv.sh (needs python3 with venv and pip, and PyPI the first time)",
                &out,
            )
            .trim(),
        );
        assert!(path.is_file(), "ensure-venv.sh printed {path:?}, which is not a file");
        let src = package_copy();
        ok(
            "pip install the plugin",
            &run(Command::new(&path)
                .args(["-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"])
                .args(["--no-build-isolation", "--force-reinstall"])
                .arg(src.path())),
        );
        path
    })
}

fn pytest(cwd: &Path, args: &[&str]) -> Output {
    run(Command::new(python())
        .args(["-m", "pytest"])
        .args(args)
        .current_dir(cwd))
}

fn flakegate(cwd: &Path, args: &[&str]) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(args)
        .current_dir(cwd))
}

#[test]
fn the_plugins_own_tests_pass() {
    let src = package_copy();
    let out = pytest(src.path(), &["-p", "no:cacheprovider", "tests"]);
    let stdout = ok("the plugin's tests", &out);
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        last.contains(" passed") && !last.contains("failed") && !last.contains("skipped"),
        "{last}"
    );
}

#[test]
fn its_wheel_holds_the_module_and_the_entry_point() {
    let src = package_copy();
    let out_dir = tempfile::tempdir().unwrap();
    ok(
        "pip wheel",
        &run(Command::new(python())
            .args(["-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps"])
            .args(["--no-build-isolation", "-w"])
            .arg(out_dir.path())
            .arg(src.path())),
    );
    let wheels: Vec<PathBuf> = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    let name = wheels[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(name.starts_with("pytest_flakegate-0.1.0-py3-none-any"), "{name}");
    // A wheel is a zip; Python's zipfile lists it and reads the entry points.
    let listing = ok(
        "read the wheel",
        &run(Command::new(python())
            .args([
                "-c",
                "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nprint('\\n'.join(z.namelist()))\n\
                 print([z.read(n).decode() for n in z.namelist() if n.endswith('entry_points.txt')][0])",
            ])
            .arg(&wheels[0])),
    );
    for module in ["plugin", "evidence", "meta", "reportlog", "__init__"] {
        assert!(listing.contains(&format!("pytest_flakegate/{module}.py")), "{listing}");
    }
    assert!(
        listing.contains("[pytest11]") && listing.contains("flakegate = pytest_flakegate.plugin"),
        "{listing}"
    );
    assert!(!listing.contains("tests/"), "the wheel ships no tests:\n{listing}");
}

/// The fixture project in a git repository: the base commit, then the head, which changes
/// `add`'s and `mul`'s bodies. Returns the checkout and the diff base...head.
fn project() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("tests/fixtures/plugin-project"), dir.path());
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "base"]);
    let ops = dir.path().join("src/calc/ops.py");
    let text = std::fs::read_to_string(&ops).unwrap();
    let head = text
        .replace("return a + b", "return b + a")
        .replace("product = a * b", "product = b * a");
    assert_ne!(head, text);
    std::fs::write(&ops, head).unwrap();
    git(dir.path(), &["commit", "-q", "-a", "-m", "head"]);
    let diff = crate::git_cmd::git_output(dir.path(), &["diff", "HEAD~1", "HEAD"]);
    (dir, diff)
}

/// `flakegate probe` on the base commit, driving the plugin's results-only mode.
fn probe_base(checkout: &Path, out: &Path) {
    git(checkout, &["checkout", "-q", "HEAD~1"]);
    let py = python().display().to_string();
    let probe = flakegate(
        checkout,
        &[
            "probe",
            "--runs",
            "3",
            "--seed",
            "7",
            "--out",
            &out.display().to_string(),
            "--",
            &py,
            "-m",
            "pytest",
            "-q",
            "--flakegate-results={results}",
        ],
    );
    ok("flakegate probe", &probe);
    git(checkout, &["checkout", "-q", "-"]);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(json["k"], 3, "{json}");
    assert_eq!(json["tests"].as_array().map(Vec::len), Some(5), "{json}");
    assert!(
        json["tests"].as_array().unwrap().iter().all(|t| t["passes"] == 3),
        "{json}"
    );
}

/// The witnesses of `line` of src/calc/ops.py in the record: (test, phases).
fn witnesses(record: &Value, line: u64) -> Vec<(String, Vec<String>)> {
    let file = record["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "src/calc/ops.py")
        .unwrap_or_else(|| panic!("no src/calc/ops.py in {record}"));
    let tests: Vec<&str> = file["witnesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["test"].as_str().unwrap())
        .collect();
    let l = file["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"] == line)
        .unwrap_or_else(|| panic!("no line {line} in {file}"));
    let mut out: Vec<(String, Vec<String>)> = l["witnesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            let phases = w["phases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap().to_string())
                .collect();
            (tests[w["witness"].as_u64().unwrap() as usize].to_string(), phases)
        })
        .collect();
    out.sort();
    out
}

/// `pytest EXTRA --flakegate=evidence` on the head, then `flakegate check` on it.
fn evidence_judged(extra: &[&str]) {
    let (checkout, diff) = project();
    let dir = checkout.path();
    let scratch = tempfile::tempdir().unwrap();
    let probe_json = scratch.path().join("probe.json");
    probe_base(dir, &probe_json);

    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["--flakegate=evidence", "--flakegate-cov=src"]);
    let out = pytest(dir, &args);
    let stdout = ok("pytest --flakegate", &out);
    assert!(stdout.contains("flakegate: evidence written to"), "{stdout}");
    let evidence = dir.join("evidence");
    let mut entries: Vec<String> = walk(&evidence);
    entries.sort();
    assert_eq!(entries, ["coverage.json", "meta.json", "results/head.jsonl"]);
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(evidence.join("meta.json")).unwrap()).unwrap();
    assert_eq!(
        meta["head_sha"].as_str(),
        Some(git(dir, &["rev-parse", "HEAD"]).as_str())
    );

    let diff_file = scratch.path().join("pr.diff");
    std::fs::write(&diff_file, diff).unwrap();
    let check = flakegate(
        dir,
        &[
            "check",
            "evidence",
            "--diff",
            &diff_file.display().to_string(),
            "--probe",
            &probe_json.display().to_string(),
            "--format",
            "json",
        ],
    );
    let record: Value = serde_json::from_str(&ok("flakegate check", &check)).unwrap();
    assert_eq!(record["verdict"], "PASS", "{record}");
    let run = || vec!["run".to_string()];
    let setup = || vec!["setup".to_string()];
    // mul's body: the tests that called it.
    assert_eq!(
        witnesses(&record, 6),
        [
            ("tests/test_ops.py::test_mul".to_string(), run()),
            ("tests/test_ops.py::test_mul_by_two[1]".to_string(), run()),
            ("tests/test_ops.py::test_mul_by_two[2]".to_string(), run()),
        ]
    );
    // add's body: test_add, and the `two` fixture in the setup of each parametrized case.
    assert_eq!(
        witnesses(&record, 2),
        [
            ("tests/test_ops.py::test_add".to_string(), run()),
            ("tests/test_ops.py::test_mul_by_two[1]".to_string(), setup()),
            ("tests/test_ops.py::test_mul_by_two[2]".to_string(), setup()),
        ]
    );
    let stable: Vec<&str> = record["witnesses"]["stable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(stable.len(), 4, "{stable:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().to_string();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()).into_iter().map(|n| format!("{name}/{n}")));
        } else {
            out.push(name);
        }
    }
    out
}

#[test]
fn one_flag_evidence_is_judged_by_check() {
    evidence_judged(&[]);
}

#[test]
fn xdist_evidence_keeps_per_test_witnesses() {
    evidence_judged(&["-n", "2"]);
}

#[test]
fn an_evidence_directory_with_other_files_stops_pytest_before_any_test() {
    let (checkout, _) = project();
    let dir = checkout.path();
    std::fs::create_dir(dir.join("evidence")).unwrap();
    std::fs::write(dir.join("evidence/notes.md"), "mine").unwrap();
    let out = pytest(dir, &["--flakegate=evidence"]);
    assert_eq!(out.status.code(), Some(4), "pytest's usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("evidence: it exists and holds files this plugin does not write (notes.md)"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("passed"));
    assert_eq!(walk(&dir.join("evidence")), ["notes.md"]);
}

fn read_yaml(name: &str) -> serde_yaml_ng::Value {
    let text = std::fs::read_to_string(root().join(name)).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn run_text(job: &serde_yaml_ng::Value) -> String {
    job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Action's template: the App template's jobs with the plugin making the evidence, and a
/// `gate` job judging the artifact with action.yml.
#[test]
fn the_action_template_gates_on_the_plugins_evidence() {
    let app = read_yaml("templates/workflows/flakegate-evidence.yml");
    let w = read_yaml("templates/workflows/flakegate-gate-action.yml");
    let action = read_yaml("action.yml");
    // What the plugin does not change is the App template's, job for job.
    for job in ["seed", "witnesses"] {
        assert_eq!(w["jobs"][job], app["jobs"][job], "job {job}");
    }
    // The same triggers, but the App's ledger upkeep's dispatch: without the App nothing asks.
    for trigger in ["pull_request", "merge_group"] {
        assert_eq!(w["on"][trigger], app["on"][trigger], "trigger {trigger}");
    }
    assert!(w["on"]["workflow_dispatch"].is_null());
    let head = run_text(&w["jobs"]["head"]);
    assert!(head.contains("--flakegate=evidence --flakegate-cov=src"), "{head}");
    assert!(head.contains("#subdirectory=python/pytest-flakegate"), "{head}");
    assert!(!head.contains("--cov=") && !head.contains("--report-log"), "{head}");
    let probe = run_text(&w["jobs"]["probe"]);
    assert!(
        probe.contains("--flakegate-results=shard/run-${{ matrix.run }}.jsonl"),
        "{probe}"
    );
    let k: usize = w["env"]["K"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        w["jobs"]["probe"]["strategy"]["matrix"]["run"]
            .as_sequence()
            .unwrap()
            .len(),
        k
    );
    // meta.json is the plugin's: the evidence job only gathers the head's and the probe's parts.
    assert!(!run_text(&w["jobs"]["evidence"]).contains("meta.json"));

    let gate = &w["jobs"]["gate"];
    assert_eq!(gate["needs"].as_str(), Some("evidence"));
    let steps = gate["steps"].as_sequence().unwrap();
    let checkout = &steps[0];
    assert_eq!(checkout["uses"].as_str(), Some("actions/checkout@v4"));
    assert_eq!(
        checkout["with"]["fetch-depth"].as_u64(),
        Some(0),
        "--base needs history"
    );
    let download = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/download-artifact"))
        })
        .unwrap();
    let default_artifact = flakegate::gate::config::Config::default().evidence.artifact;
    assert_eq!(download["with"]["name"].as_str(), Some(default_artifact.as_str()));
    let uploaded = w["jobs"]["evidence"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .rev()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact"))
        })
        .unwrap();
    assert_eq!(uploaded["with"]["name"], download["with"]["name"]);
    let check = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("flakegate/flakegate@"))
        })
        .expect("the gate job uses the flakegate Action");
    assert_eq!(check["with"]["evidence"], download["with"]["path"]);
    // Every input it passes is one action.yml declares.
    for (key, _) in check["with"].as_mapping().unwrap() {
        let key = key.as_str().unwrap();
        assert!(!action["inputs"][key].is_null(), "action.yml has no input {key}");
    }
    // `--workflow` names this very file where the template says to copy it.
    assert_eq!(check["with"]["args"].as_str(), Some("--workflow ${{ env.WORKFLOW }}"));
    assert_eq!(
        w["env"]["WORKFLOW"].as_str(),
        Some(".github/workflows/flakegate-gate-action.yml")
    );
}
