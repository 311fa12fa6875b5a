//! The agent-proofing corpus (`tests/fixtures/corpus/`, made by `tests/fixtures/regen.sh`):
//! patches that try to weaken their own gate, and honest patches that must stay PASS.
//!
//! Each entry is replayed as the real commit it was generated from — the fixture project
//! committed as the base, the entry's `diff.patch` applied and committed with the identities
//! and dates regen.sh uses — so the head sha is the one the evidence's `meta.json` names. Then
//! `flakegate check --base REV` runs inside that checkout on the entry's evidence (which names
//! the workflow that produced it) and the shared base probe.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::copy_dir;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus_dir() -> PathBuf {
    root().join("tests/fixtures/corpus")
}

fn git(dir: &Path, date: &str, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Shop Fixture")
        .env("GIT_AUTHOR_EMAIL", "fixtures@shop.invalid")
        .env("GIT_COMMITTER_NAME", "Shop Fixture")
        .env("GIT_COMMITTER_EMAIL", "fixtures@shop.invalid")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .env("TZ", "UTC")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

struct Entry {
    name: String,
    dir: PathBuf,
    case: Value,
    meta: Value,
}

fn entries() -> Vec<Entry> {
    let mut out: Vec<Entry> = std::fs::read_dir(corpus_dir())
        .expect("tests/fixtures/corpus exists (bash tests/fixtures/regen.sh)")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("case.json").is_file())
        .map(|dir| {
            let read = |rel: &str| -> Value {
                let p = dir.join(rel);
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap())
                    .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            };
            Entry {
                name: dir.file_name().unwrap().to_string_lossy().into_owned(),
                case: read("case.json"),
                meta: read("evidence/meta.json"),
                dir,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The entry's base and head commits, rebuilt exactly as regen.sh made them.
fn replay(e: &Entry) -> (tempfile::TempDir, String, String) {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path();
    copy_dir(&root().join("tests/fixtures/project"), repo);
    let base_date = "2026-11-18T09:00:00Z";
    git(repo, base_date, &["init", "-q", "-b", "main"]);
    git(repo, base_date, &["add", "-A"]);
    git(repo, base_date, &["commit", "-q", "-m", "shop: base"]);
    let base = git(repo, base_date, &["rev-parse", "HEAD"]);
    let head_date = "2026-11-19T10:00:00Z";
    let patch = e.dir.join("diff.patch");
    git(repo, head_date, &["apply", "--index", patch.to_str().unwrap()]);
    git(repo, head_date, &["commit", "-q", "-m", &format!("shop: {}", e.name)]);
    let head = git(repo, head_date, &["rev-parse", "HEAD"]);
    (t, base, head)
}

fn check_base(repo: &Path, base: &str, e: &Entry) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["check", "--format", "json", "--base", base])
        .arg("--today")
        .arg(e.case["today"].as_str().unwrap())
        .arg(e.dir.join("evidence"))
        .arg("--probe")
        .arg(root().join("tests/fixtures/probe/reportlog"))
        .current_dir(repo)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "{}: {err}: {}{}",
            e.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn codes(v: &Value) -> Vec<String> {
    v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_corpus_is_complete() {
    let names: Vec<String> = entries().into_iter().map(|e| e.name).collect();
    for want in [
        "adv_self_freeze",
        "adv_ledger_extended",
        "adv_workflow_edited",
        "adv_coveragerc_omit",
        "adv_pragma_no_cover",
        "adv_assertion_free_test",
        "adv_sleep",
        "adv_flaky_reruns",
        "adv_xfail",
        "adv_assert_deleted",
        "adv_tolerance_widened",
        "adv_test_file_deleted",
        "honest_bug_fix",
        "honest_refactor",
        "honest_docs",
        "honest_new_test",
        "honest_new_test_skipif",
        "honest_extract_method",
        "honest_import_constant",
        "adv_import_time_only",
        "adv_import_time_breaks",
        "adv_retry_loop",
        "adv_assert_loosened",
        "adv_assert_swallowed",
        "adv_conftest_hook",
        "adv_requirements_plugin",
        "adv_writes_evidence",
        "honest_table_test",
        "honest_conftest_fixture",
        "honest_dependency_added",
        "adv_monkeypatch_under_test",
        "adv_stand_in_package_init",
        "adv_expected_from_code",
        "adv_assert_demoted",
        "adv_param_case_removed",
        "adv_assertion_free_helper",
        "adv_frozen_test_moved",
        "honest_monkeypatch_collaborator",
        "honest_property_test",
        "honest_independent_expectation",
        "honest_param_case_added",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "corpus entry {want} missing: {names:?}"
        );
    }
}

#[test]
fn every_entry_gives_its_expected_verdict_and_codes_from_check_base() {
    let mut wrong = Vec::new();
    for e in entries() {
        let (t, base, head) = replay(&e);
        assert_eq!(
            head, e.meta["head_sha"],
            "{}: replaying diff.patch did not reproduce the generated head commit",
            e.name
        );
        assert_eq!(base, e.meta["base_sha"], "{}: base commit differs", e.name);
        let v = check_base(t.path(), &base, &e);
        let want_verdict = e.case["expected_verdict"].as_str().unwrap();
        let want_codes: Vec<String> = serde_json::from_value(e.case["expected_codes"].clone()).unwrap();
        let honest = e.name.starts_with("honest_");
        assert!(
            !honest || want_verdict == "PASS",
            "{}: an honest entry must expect PASS",
            e.name
        );
        assert!(
            honest || want_verdict != "PASS",
            "{}: an adversarial entry must not expect PASS",
            e.name
        );
        if v["verdict"] != want_verdict || codes(&v) != want_codes {
            wrong.push(format!(
                "{}: got {} {:?}, want {want_verdict} {want_codes:?}\n{:#}",
                e.name,
                v["verdict"],
                codes(&v),
                v["reasons"]
            ));
        }
        assert_eq!(v["head_sha"], head.as_str(), "{}", e.name);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// Every reason of an adversarial entry points at a file (and, where the trick is on a line, the
/// line), so an agent — or the reviewer — can go straight to it.
#[test]
fn adversarial_reasons_name_the_file_and_line() {
    let want: &[(&str, &str, &str, Option<u64>)] = &[
        (
            "adv_workflow_edited",
            "evidence_config_changed",
            ".github/workflows/flakegate-evidence.yml",
            None,
        ),
        ("adv_coveragerc_omit", "evidence_config_changed", ".coveragerc", None),
        (
            "adv_pragma_no_cover",
            "evidence_config_changed",
            "src/shop/util.py",
            Some(17),
        ),
        ("adv_sleep", "weakened_test", "tests/test_pricing.py", Some(13)),
        ("adv_flaky_reruns", "weakened_test", "tests/test_pricing.py", Some(10)),
        ("adv_xfail", "weakened_test", "tests/test_cart.py", Some(10)),
        (
            "adv_tolerance_widened",
            "weakened_test",
            "tests/test_pricing.py",
            Some(11),
        ),
        ("adv_assert_deleted", "weakened_test", "tests/test_util.py", None),
        ("adv_test_file_deleted", "weakened_test", "tests/test_util.py", None),
        ("adv_assertion_free_test", "self_witness", "src/shop/util.py", Some(21)),
        ("adv_retry_loop", "weakened_test", "tests/test_pricing.py", Some(11)),
        (
            "adv_assert_loosened",
            "weakened_test",
            "tests/test_pricing.py",
            Some(11),
        ),
        (
            "adv_assert_swallowed",
            "weakened_test",
            "tests/test_pricing.py",
            Some(13),
        ),
        (
            "adv_conftest_hook",
            "evidence_config_changed",
            "tests/conftest.py",
            Some(9),
        ),
        (
            "adv_requirements_plugin",
            "evidence_config_changed",
            "requirements-dev.txt",
            Some(2),
        ),
        (
            "adv_writes_evidence",
            "evidence_config_changed",
            "tests/test_pricing.py",
            Some(13),
        ),
    ];
    let all = entries();
    for (name, code, file, line) in want {
        let e = all.iter().find(|e| e.name == *name).unwrap();
        let (t, base, _) = replay(e);
        let v = check_base(t.path(), &base, e);
        let r = v["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["code"] == *code)
            .unwrap_or_else(|| panic!("{name}: no {code}: {:#}", v["reasons"]));
        let locs = r["locations"].as_array().cloned().unwrap_or_default();
        assert!(
            locs.iter()
                .any(|l| l["file"] == *file && line.is_none_or(|n| l["line"].as_u64() == Some(n))),
            "{name}: {code} does not point at {file}:{line:?}: {r:#}"
        );
    }
}

/// The self-freeze names the frozen test; the extended ledger lists each extension entry by
/// entry, and the base ledger (expired) still decides.
#[test]
fn ledger_tricks_are_reported_entry_by_entry() {
    let all = entries();
    let e = all.iter().find(|e| e.name == "adv_self_freeze").unwrap();
    let (t, base, _) = replay(e);
    let v = check_base(t.path(), &base, e);
    assert_eq!(v["reasons"][0]["tests"][0], "tests/test_pricing.py::test_apply_tax");
    assert_eq!(v["ledger_changes"][0]["kind"], "added", "{:#}", v["ledger_changes"]);

    let e = all.iter().find(|e| e.name == "adv_ledger_extended").unwrap();
    let (t, base, _) = replay(e);
    let v = check_base(t.path(), &base, e);
    let changes = v["ledger_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 3, "{changes:#?}");
    assert!(changes.iter().all(|c| c["kind"] == "extended"), "{changes:#?}");
    assert_eq!(
        v["blind_owners"][0]["handle"], "@shop/payments",
        "{:#}",
        v["blind_owners"]
    );
}

/// `policy.signals` decides what a caveat signal does: each caveat entry becomes INCONCLUSIVE
/// when its signal is set to `inconclusive`, and PASS (with a note) when every signal it raises
/// is `off`. Trust rules are not signals: no policy makes them pass.
#[test]
fn policy_signals_escalate_or_silence_the_caveats() {
    for e in entries()
        .into_iter()
        .filter(|e| e.case["expected_verdict"] == "PASS_WITH_CAVEAT")
    {
        let want: Vec<String> = serde_json::from_value(e.case["expected_codes"].clone()).unwrap();
        for (value, verdict) in [("inconclusive", "INCONCLUSIVE"), ("off", "PASS")] {
            let (t, base, _) = replay(&e);
            let signals: String = want.iter().map(|c| format!("    {c}: {value}\n")).collect();
            let config = t.path().join("policy.yml");
            std::fs::write(&config, format!("policy:\n  signals:\n{signals}")).unwrap();
            let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
                .args(["check", "--format", "json", "--base", &base])
                .arg("--today")
                .arg(e.case["today"].as_str().unwrap())
                .arg("--config")
                .arg(&config)
                .arg(e.dir.join("evidence"))
                .arg("--probe")
                .arg(root().join("tests/fixtures/probe/reportlog"))
                .current_dir(t.path())
                .output()
                .unwrap();
            let v: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|err| panic!("{}: {err}: {}", e.name, String::from_utf8_lossy(&out.stderr)));
            assert_eq!(v["verdict"], verdict, "{} with {value}: {:#}", e.name, v["reasons"]);
            if value == "off" {
                let notes = v["notes"].as_array().unwrap();
                for c in &want {
                    assert!(
                        notes
                            .iter()
                            .any(|n| n.as_str().unwrap().contains(&format!("policy.signals.{c} is off"))),
                        "{}: no note for {c}: {notes:#?}",
                        e.name
                    );
                }
            } else {
                assert!(
                    v["reasons"][0]["escalated"] == true,
                    "{}: {:#}",
                    e.name,
                    v["reasons"][0]
                );
            }
        }
    }
}

#[test]
fn a_trust_rule_is_not_a_signal_policy_can_turn_off() {
    let all = entries();
    let e = all.iter().find(|e| e.name == "adv_workflow_edited").unwrap();
    let (t, base, _) = replay(e);
    let config = t.path().join("policy.yml");
    std::fs::write(&config, "policy:\n  signals:\n    evidence_config_changed: off\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["check", "--format", "json", "--base", &base, "--config"])
        .arg(&config)
        .arg(e.dir.join("evidence"))
        .current_dir(t.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("evidence_config_changed") && err.contains("policy.yml"),
        "{err}"
    );
}

/// The agent-proofing table (docs/security.md, "Agent-proofing") states the corpus's
/// outcomes: it must not drift from them.
#[test]
fn the_security_table_says_what_the_corpus_expects() {
    let page = std::fs::read_to_string(root().join("docs/security.md")).unwrap();
    let section = page
        .split("## Agent-proofing")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/security.md has an Agent-proofing section");
    let mut documented: Vec<(String, String)> = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| the patch") && !l.starts_with("| ---"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            (cells[1].to_owned(), cells[2].trim_end_matches(" |").replace('`', ""))
        })
        .collect();
    let mut expected: Vec<(String, String)> = entries()
        .iter()
        .map(|e| {
            let codes: Vec<String> = serde_json::from_value(e.case["expected_codes"].clone()).unwrap();
            (
                e.case["expected_verdict"].as_str().unwrap().to_owned(),
                codes.join(", "),
            )
        })
        .collect();
    documented.sort();
    expected.sort();
    assert_eq!(documented, expected);
}

fn entry(name: &str) -> Entry {
    entries().into_iter().find(|e| e.name == name).unwrap()
}

fn file<'a>(v: &'a Value, path: &str) -> &'a Value {
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap()
}

fn nums(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect()
}

/// Import-time lines and definition headers on the real evidence: a new `def`'s header lines (which coverage attributes
/// only to import time) are witnessed by the tests that run its body; an import and a module
/// constant are `import_time`, not blind; a patch of import-time lines alone is `uncovered`.
#[test]
fn import_time_lines_and_definition_headers() {
    const APPLY_TAX_TESTS: [&str; 3] = [
        "tests/test_cart.py::TestCart::test_stocked_total",
        "tests/test_cart.py::TestCart::test_total",
        "tests/test_pricing.py::test_apply_tax",
    ];
    let e = entry("honest_extract_method");
    let (t, base, _) = replay(&e);
    let v = check_base(t.path(), &base, &e);
    assert_eq!(codes(&v), ["all_stable"]);
    let f = file(&v, "src/shop/pricing.py");
    // 15-18: `def _with_tax(` and its signature; 19 the docstring (no statement); 20 the body; 27 the call.
    assert_eq!(nums(&f["executable_changed_lines"]), [15, 16, 17, 18, 20, 27]);
    assert_eq!(nums(&f["stable_lines"]), [15, 16, 17, 18, 20, 27]);
    assert!(nums(&f["import_time_lines"]).is_empty());
    let def_line = f["lines"].as_array().unwrap().iter().find(|l| l["line"] == 15).unwrap();
    // Each listed witness is an index into the file's table of witnesses.
    let tests: Vec<&str> = def_line["witnesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            f["witnesses"][w["witness"].as_u64().unwrap() as usize]["test"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(tests, APPLY_TAX_TESTS);
    assert_eq!(def_line["witness_count"], APPLY_TAX_TESTS.len());
    assert!(
        v["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["role"] == "source" && i["path"] == "HEAD:src/shop/pricing.py"),
        "{:#}",
        v["inputs"]
    );

    // Without the head source (a diff file, no --base) coverage.json's function region still
    // gives the def line its body's witnesses; the signature's continuation lines are no
    // statements then, and a note says the source was not read.
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["check", "--format", "json", "--today", "2026-11-20", "--diff"])
        .arg(e.dir.join("diff.patch"))
        .arg(e.dir.join("evidence"))
        .arg("--probe")
        .arg(root().join("tests/fixtures/probe/reportlog"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(codes(&v), ["all_stable"]);
    let f = file(&v, "src/shop/pricing.py");
    assert!(nums(&f["import_time_lines"]).is_empty());
    assert_eq!(nums(&f["stable_lines"]), [15, 20, 27]);
    assert!(
        v["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("source of src/shop/pricing.py was not read")),
        "{:#}",
        v["notes"]
    );

    let e = entry("honest_import_constant");
    let (t, base, _) = replay(&e);
    let v = check_base(t.path(), &base, &e);
    assert_eq!(codes(&v), ["all_stable"]);
    let f = file(&v, "src/shop/cart.py");
    assert_eq!(nums(&f["import_time_lines"]), [4, 6]);
    assert_eq!(nums(&f["stable_lines"]), [23, 24, 28]);
    assert!(nums(&f["uncovered_lines"]).is_empty());

    let e = entry("adv_import_time_only");
    let (t, base, _) = replay(&e);
    let v = check_base(t.path(), &base, &e);
    assert_eq!(codes(&v), ["uncovered"]);
    let f = file(&v, "src/shop/util.py");
    assert_eq!(nums(&f["import_time_lines"]), [3, 5]);
    assert!(nums(&f["uncovered_lines"]).is_empty());
    let msg = v["reasons"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("2 ran only at import time: src/shop/util.py:3, src/shop/util.py:5"),
        "{msg}"
    );
}

/// The trust rules' messages: each says what the patch did, where; an honest dependency is a
/// note, and a requirements file is judged although the default `no_evidence_paths` match it.
#[test]
fn trust_messages_name_the_trick() {
    let all = entries();
    let want: &[(&str, &str, &[&str])] = &[
        (
            "adv_retry_loop",
            "weakened_test",
            &[
                "retries its assertion in `test_apply_tax`",
                "except AssertionError",
                "line 13",
            ],
        ),
        (
            "adv_assert_loosened",
            "weakened_test",
            &[
                "loosens an assertion in place in `test_apply_tax`",
                "into `in`",
                "base line 11",
            ],
        ),
        (
            "adv_assert_swallowed",
            "weakened_test",
            &["swallows its assertion in `test_apply_tax`", "(line 13)"],
        ),
        (
            "adv_conftest_hook",
            "evidence_config_changed",
            &["tests/conftest.py:9", "`pytest_runtest_makereport`", "wrapper=True"],
        ),
        (
            "adv_requirements_plugin",
            "evidence_config_changed",
            &["requirements-dev.txt:2", "adds `pytest-rerunfailures`"],
        ),
        (
            "adv_writes_evidence",
            "evidence_config_changed",
            &["tests/test_pricing.py:13", "names the evidence (`coverage.json`)"],
        ),
    ];
    for (name, code, says) in want {
        let e = all.iter().find(|e| e.name == *name).unwrap();
        let (t, base, _) = replay(e);
        let v = check_base(t.path(), &base, e);
        let r = v["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["code"] == *code)
            .unwrap_or_else(|| panic!("{name}: no {code}: {:#}", v["reasons"]));
        let m = r["message"].as_str().unwrap();
        for s in *says {
            assert!(m.contains(s), "{name}: {s:?} not in {m}");
        }
    }
    let e = all.iter().find(|e| e.name == "honest_dependency_added").unwrap();
    let (t, base, _) = replay(e);
    let v = check_base(t.path(), &base, e);
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| {
            let n = n.as_str().unwrap();
            n.starts_with("pyproject.toml changes dependencies (adds `babel`)")
        }),
        "{notes:#?}"
    );
    // The honest table test's file is the patch's only change: nothing about it is a weakening.
    let e = all.iter().find(|e| e.name == "honest_table_test").unwrap();
    let (t, base, _) = replay(e);
    let v = check_base(t.path(), &base, e);
    assert!(!v.to_string().contains("retries"), "{:#}", v["reasons"]);
}
