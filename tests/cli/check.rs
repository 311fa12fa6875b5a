//! `flakegate check` end to end on the fixture project's real evidence
//! (produced by pytest, pytest-cov, coverage.py, pytest-reportlog and git;
//! regenerate with `bash tests/fixtures/regen.sh`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures")
}

fn flakegate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run flakegate")
}

struct Run {
    code: i32,
    json: Value,
    stderr: String,
}

fn check_json(args: &[&str]) -> Run {
    let mut all = vec!["check", "--format", "json"];
    all.extend_from_slice(args);
    let out = flakegate(&all);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr: {stderr}; stdout: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    Run {
        code: out.status.code().unwrap_or(-1),
        json,
        stderr,
    }
}

struct Case {
    name: String,
    dir: PathBuf,
    verdict: String,
    codes: Vec<String>,
    today: String,
    /// (policy as JSON, expected verdict, expected codes)
    variants: Vec<(Value, String, Vec<String>)>,
}

impl Case {
    fn ledger(&self) -> PathBuf {
        let own = self.dir.join("ledger.json");
        if own.is_file() {
            own
        } else {
            fixtures().join("project/.github/flake-ledger.json")
        }
    }
    fn args(&self, coverage: &Path, results: &Path) -> Vec<String> {
        vec![
            "--diff".into(),
            self.dir.join("diff.patch").display().to_string(),
            "--ledger".into(),
            self.ledger().display().to_string(),
            "--coverage".into(),
            coverage.display().to_string(),
            "--results".into(),
            results.display().to_string(),
            "--probe".into(),
            fixtures().join("probe/reportlog").display().to_string(),
            "--today".into(),
            self.today.clone(),
        ]
    }
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures().join("cases")).expect("tests/fixtures/cases exists") {
        let dir = entry.unwrap().path();
        let meta: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap()).unwrap();
        out.push(Case {
            name: meta["name"].as_str().unwrap().to_string(),
            verdict: meta["expected_verdict"].as_str().unwrap().to_string(),
            codes: meta["expected_codes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect(),
            today: meta["today"].as_str().unwrap().to_string(),
            variants: meta["policy_variants"]
                .as_array()
                .map(|vs| {
                    vs.iter()
                        .map(|v| {
                            let codes = v["expected_codes"].as_array().unwrap();
                            (
                                v["policy"].clone(),
                                v["expected_verdict"].as_str().unwrap().to_string(),
                                codes.iter().map(|c| c.as_str().unwrap().to_string()).collect(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
            dir,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(out.len() >= 9, "expected the fixture cases, found {}", out.len());
    out
}

fn codes(v: &Value) -> Vec<String> {
    v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .collect()
}

fn run_case(case: &Case, coverage: &Path, results: &Path) -> Run {
    let args = case.args(coverage, results);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    check_json(&args)
}

#[test]
fn every_case_gets_its_expected_verdict_and_codes() {
    for case in cases() {
        let ev = case.dir.join("evidence");
        let run = run_case(&case, &ev.join("coverage.json"), &ev.join("results"));
        let got = codes(&run.json);
        assert_eq!(
            run.json["verdict"],
            case.verdict.as_str(),
            "{}: reasons {:#}\n{}",
            case.name,
            run.json["reasons"],
            run.stderr
        );
        assert_eq!(got, case.codes, "{}: {:#}", case.name, run.json["reasons"]);
        let blocks = matches!(case.verdict.as_str(), "FAIL" | "INCONCLUSIVE");
        assert_eq!(run.code, if blocks { 1 } else { 0 }, "{}: exit status", case.name);
        for (policy, verdict, want) in &case.variants {
            let t = tempfile::tempdir().unwrap();
            let config = t.path().join("flakegate.yml");
            // JSON is YAML: the policy block as the config file's `policy`.
            std::fs::write(&config, serde_json::json!({ "policy": policy }).to_string()).unwrap();
            let mut args = case.args(&ev.join("coverage.json"), &ev.join("results"));
            args.extend(["--config".to_string(), config.display().to_string()]);
            let run = check_json(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
            assert_eq!(
                run.json["verdict"],
                verdict.as_str(),
                "{} with {policy}: {:#}",
                case.name,
                run.json["reasons"]
            );
            assert_eq!(&codes(&run.json), want, "{} with {policy}", case.name);
        }
    }
}

/// The witnesses per changed line, as a comparable value.
fn line_witnesses(v: &Value) -> Value {
    let files: Vec<Value> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| serde_json::json!({"path": f["path"], "evidence": f["evidence"], "lines": f["lines"], "stable": f["stable_lines"], "uncovered": f["uncovered_lines"], "frozen_only": f["frozen_only_lines"]}))
        .collect();
    serde_json::json!({"files": files, "witnesses": v["witnesses"], "verdict": v["verdict"]})
}

#[test]
fn coverage_json_and_data_file_give_the_same_witnesses() {
    for case in cases() {
        let ev = case.dir.join("evidence");
        let json = run_case(&case, &ev.join("coverage.json"), &ev.join("results"));
        let db = run_case(&case, &ev.join(".coverage"), &ev.join("results"));
        assert_eq!(db.json["coverage"]["format"], "data_file", "{}", case.name);
        assert_eq!(
            line_witnesses(&json.json),
            line_witnesses(&db.json),
            "{}: coverage.json vs .coverage",
            case.name
        );
    }
}

#[test]
fn report_log_and_junit_results_agree() {
    for case in cases() {
        let ev = case.dir.join("evidence");
        let base = run_case(&case, &ev.join("coverage.json"), &ev.join("results"));
        for junit in ["xunit1.xml", "xunit2.xml"] {
            let run = run_case(&case, &ev.join("coverage.json"), &case.dir.join("junit").join(junit));
            assert_eq!(
                run.json["verdict"], base.json["verdict"],
                "{} with {junit}: {:#}",
                case.name, run.json["reasons"]
            );
            assert_eq!(
                run.json["results"]["failures"].as_array().map(|a| a.len()),
                base.json["results"]["failures"].as_array().map(|a| a.len()),
                "{} with {junit}",
                case.name
            );
            assert_eq!(
                run.json["results"]["unmatched"],
                serde_json::json!([]),
                "{} with {junit}",
                case.name
            );
        }
    }
}

#[test]
fn the_evidence_directory_is_read_as_the_artifact_lays_it_out() {
    let case = cases().into_iter().find(|c| c.name == "frozen_only").unwrap();
    let ev = case.dir.join("evidence");
    let run = check_json(&[
        ev.to_str().unwrap(),
        "--diff",
        case.dir.join("diff.patch").to_str().unwrap(),
        "--ledger",
        case.ledger().to_str().unwrap(),
        "--probe",
        fixtures().join("probe/reportlog").to_str().unwrap(),
        "--today",
        &case.today,
    ]);
    assert_eq!(run.json["verdict"], "INCONCLUSIVE");
    assert_eq!(codes(&run.json), ["frozen_only"]);
    let roles: Vec<&str> = run.json["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["role"].as_str().unwrap())
        .collect();
    for role in ["diff", "ledger", "coverage", "results", "probe", "meta"] {
        assert!(roles.contains(&role), "{role} missing from inputs: {roles:?}");
    }
    assert!(
        run.json["head_sha"].as_str().is_some_and(|s| s.len() == 40),
        "head sha from meta.json"
    );
    assert_eq!(run.json["blind_owners"][0]["handle"], "@shop/payments");
    assert_eq!(run.json["probe"]["k"], 5);
}

#[test]
fn the_quick_start_example_works() {
    let run = check_json(&[
        "examples/shop/evidence",
        "--diff",
        "examples/shop/pr.diff",
        "--ledger",
        "examples/shop/flake-ledger.json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json["verdict"], "PASS_WITH_CAVEAT", "{:#}", run.json["reasons"]);
    assert!(!run.json["blind_owners"].as_array().unwrap().is_empty());
}

#[test]
fn text_and_markdown_render() {
    let case = cases().into_iter().find(|c| c.name == "some_frozen").unwrap();
    let ev = case.dir.join("evidence");
    let mut args = vec!["check".to_string(), "--format".into(), "text".into()];
    args.extend(case.args(&ev.join("coverage.json"), &ev.join("results")));
    let out = flakegate(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("flakegate: PASS_WITH_CAVEAT"), "{text}");
    assert!(text.contains("some_frozen"), "{text}");
    args[2] = "markdown".into();
    let out = flakegate(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let md = String::from_utf8(out.stdout).unwrap();
    insta::assert_snapshot!("some_frozen_markdown", md);
}

#[test]
fn templates_can_be_overridden() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(
        t.path().join("check-summary.md.j2"),
        "verdict={{ r.verdict }} first={{ r.reasons[0].code }}",
    )
    .unwrap();
    let out = flakegate(&[
        "check",
        "examples/shop/evidence",
        "--diff",
        "examples/shop/pr.diff",
        "--ledger",
        "examples/shop/flake-ledger.json",
        "--format",
        "markdown",
        "--templates",
        t.path().to_str().unwrap(),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "verdict=PASS_WITH_CAVEAT first=some_frozen\n"
    );
    // A broken template is unusable input, reported with its name.
    std::fs::write(t.path().join("check-summary.md.j2"), "{{ r.no_such_field.x }}").unwrap();
    let out = flakegate(&[
        "check",
        "examples/shop/evidence",
        "--diff",
        "examples/shop/pr.diff",
        "--format",
        "markdown",
        "--templates",
        t.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("check-summary.md.j2"));
}

/// Files no test can execute — a type stub beside its module, a `py.typed` marker, a deleted
/// module — need no evidence: each is listed with why, the patch stays PASS, and the deleted
/// module is a note (a test that still used it would fail on head).
#[test]
fn stubs_markers_and_deleted_files_need_no_evidence() {
    let dir = fixtures().join("cases/all_stable");
    let mut diff = std::fs::read_to_string(dir.join("diff.patch")).unwrap();
    diff.push_str(
        "diff --git a/src/shop/pricing.pyi b/src/shop/pricing.pyi\nnew file mode 100644\nindex 0000000..1111111\n\
         --- /dev/null\n+++ b/src/shop/pricing.pyi\n@@ -0,0 +1,2 @@\n+def apply_tax(amount: int) -> int: ...\n\
         +def tax_rate() -> float: ...\n\
         diff --git a/src/shop/py.typed b/src/shop/py.typed\nnew file mode 100644\nindex 0000000..2222222\n\
         --- /dev/null\n+++ b/src/shop/py.typed\n@@ -0,0 +1 @@\n+partial\n\
         diff --git a/src/shop/legacy_rates.py b/src/shop/legacy_rates.py\ndeleted file mode 100644\nindex 3333333..0000000\n\
         --- a/src/shop/legacy_rates.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def legacy_rate():\n-    return 0.2\n",
    );
    let t = tempfile::tempdir().unwrap();
    let patch = t.path().join("pr.diff");
    std::fs::write(&patch, diff).unwrap();
    let ev = dir.join("evidence");
    let ledger = fixtures().join("project/.github/flake-ledger.json");
    let probe = fixtures().join("probe/reportlog");
    let run = check_json(&[
        "--diff",
        patch.to_str().unwrap(),
        "--ledger",
        ledger.to_str().unwrap(),
        "--coverage",
        ev.join("coverage.json").to_str().unwrap(),
        "--results",
        ev.join("results").to_str().unwrap(),
        "--probe",
        probe.to_str().unwrap(),
        "--today",
        "2026-11-20",
    ]);
    let v = &run.json;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(codes(v), ["all_stable"], "{:#}", v["reasons"]);
    let file = |path: &str| {
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("{path}: {:#}", v["files"]))
            .clone()
    };
    for (path, why) in [
        ("src/shop/pricing.pyi", "type stub"),
        ("src/shop/py.typed", "py.typed"),
        ("src/shop/legacy_rates.py", "deleted file"),
    ] {
        let f = file(path);
        assert_eq!(f["evidence"], "not_needed", "{f:#}");
        assert!(f["no_evidence_reason"].as_str().unwrap().contains(why), "{f:#}");
        assert_eq!(f["blind_reason"], Value::Null);
    }
    assert_eq!(file("src/shop/pricing.py")["no_evidence_reason"], Value::Null);
    assert_eq!(v["blind_owners"], serde_json::json!([]));
    let notes = v["notes"].to_string();
    assert!(notes.contains("src/shop/legacy_rates.py is deleted"), "{notes}");
}

fn flakegate_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run flakegate")
}

/// Inside a repository, `check` reads its `.github/flake-ledger.json` and
/// `.github/flakegate.yml` by default, as `probe` and `ledger` do.
#[test]
fn check_reads_the_repositorys_ledger_and_config_by_default() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path();
    let ev = root().join("examples/shop/evidence");
    let diff = root().join("examples/shop/pr.diff");
    let args = [
        "check",
        "--format",
        "json",
        ev.to_str().unwrap(),
        "--diff",
        diff.to_str().unwrap(),
    ];
    let json = |out: &Output| -> Value {
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    };
    // No ledger anywhere: nothing is frozen, so nobody is named.
    let bare = json(&flakegate_in(repo, &args));
    assert!(bare["blind_owners"].as_array().unwrap().is_empty(), "{bare:#}");

    std::fs::create_dir(repo.join(".github")).unwrap();
    std::fs::copy(
        root().join("examples/shop/flake-ledger.json"),
        repo.join(".github/flake-ledger.json"),
    )
    .unwrap();
    let out = flakegate_in(repo, &args);
    assert_eq!(out.status.code(), Some(0));
    let with_ledger = json(&out);
    assert_eq!(with_ledger["verdict"], "PASS_WITH_CAVEAT");
    assert_eq!(
        with_ledger["blind_owners"][0]["handle"], "@shop/payments",
        "{with_ledger:#}"
    );

    std::fs::write(
        repo.join(".github/flakegate.yml"),
        "policy:\n  signals:\n    some_frozen: inconclusive\n",
    )
    .unwrap();
    let out = flakegate_in(repo, &args);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["verdict"], "INCONCLUSIVE");
}

/// A mistyped evidence directory is a usage error (exit 2), not missing evidence.
#[test]
fn a_mistyped_evidence_directory_is_a_usage_error() {
    let out = flakegate(&["check", "examples/shop/evidense", "--diff", "examples/shop/pr.diff"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("examples/shop/evidense: no such evidence directory"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// `--format sarif` is a SARIF 2.1.0 log that OASIS's schema accepts, for every case: one rule
/// per reason code (ids unique, each linked to its explanation), every result under a known
/// rule, and a result on each changed line the record calls frozen-only or uncovered.
#[test]
fn sarif_is_valid_and_puts_each_blind_line_on_the_files_view() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("sarif/sarif-schema-2.1.0.json")).unwrap())
            .unwrap();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .unwrap();
    // The schema is enforced: a log of another version, or a result without its message, fails.
    assert!(!validator.is_valid(&serde_json::json!({"version": "2.0.0", "runs": []})));
    let no_message = serde_json::json!({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
        "results": [{"ruleId": "x"}]}]});
    assert!(!validator.is_valid(&no_message));
    let mut lines_seen = 0;
    for case in cases() {
        let (coverage, results) = (
            case.dir.join("evidence/coverage.json"),
            case.dir.join("evidence/results"),
        );
        let record = run_case(&case, &coverage, &results).json;
        let mut args = vec!["check".to_owned(), "--format".to_owned(), "sarif".to_owned()];
        args.extend(case.args(&coverage, &results));
        let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let out = flakegate(&args);
        let log: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{}: not JSON ({e}): {}",
                case.name,
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let errors: Vec<String> = validator
            .iter_errors(&log)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", case.name);
        let run = &log["runs"][0];
        assert_eq!(run["properties"]["verdict"], record["verdict"], "{}", case.name);
        let rules: Vec<&str> = run["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        let unique: std::collections::BTreeSet<&str> = rules.iter().copied().collect();
        assert_eq!(unique.len(), rules.len(), "rule ids are unique");
        for r in run["tool"]["driver"]["rules"].as_array().unwrap() {
            assert!(r["helpUri"].as_str().unwrap().contains("reasons.md#"), "{r}");
        }
        let found: Vec<(String, u64, &str)> = run["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let id = r["ruleId"].as_str().unwrap();
                assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize], id, "{}", case.name);
                let loc = &r["locations"][0]["physicalLocation"];
                (
                    loc["artifactLocation"]["uri"].as_str().unwrap().to_owned(),
                    loc["region"]["startLine"].as_u64().unwrap(),
                    id,
                )
            })
            .collect();
        for f in record["files"].as_array().unwrap() {
            let path = f["path"].as_str().unwrap();
            for class in ["frozen_only_lines", "uncovered_lines"] {
                for line in f[class].as_array().into_iter().flatten() {
                    let line = line.as_u64().unwrap();
                    // A run of lines is one result starting at its first line.
                    let covered = found.iter().any(|(p, start, _)| p == path && *start <= line);
                    assert!(
                        covered,
                        "{}: {path}:{line} ({class}) has no result in {found:?}",
                        case.name
                    );
                    lines_seen += 1;
                }
            }
        }
    }
    assert!(lines_seen > 0, "some case has blind lines to show");
}
