//! Table tests of the decision on small hand-built inputs; the fixture
//! project's real evidence is exercised in `tests/`.

use super::*;
use crate::gate::coverage::{Coverage, CoverageFormat, FileCoverage};
use crate::gate::error::InputError;
use crate::gate::input::Meta;
use crate::gate::ledger::FreezeEntry;
use crate::gate::nodeid::Phase;
use crate::gate::patch::{AddedLine, Deletion, FileChange, FileStatus, Patch, Scope};
use crate::gate::probe::ProbeCounts;
use crate::gate::results::{TestResult, TestResults};
use chrono::NaiveDate;
use std::collections::BTreeSet;

const FILE: &str = "src/shop/refunds.py";
const STABLE: &str = "tests/test_refunds.py::test_refund";
const FLAKY: &str = "tests/test_refunds.py::test_flaky";
const FROZEN: &str = "tests/test_refunds.py::TestSlow::test_slow";

fn date(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

fn file_change(lines: &[(u32, &str)]) -> FileChange {
    FileChange {
        path: FILE.into(),
        old_path: None,
        status: FileStatus::Modified,
        binary: false,
        lines_known: true,
        unreadable: None,
        added: lines
            .iter()
            .map(|(l, t)| AddedLine {
                line: *l,
                text: t.to_string(),
                scope: Scope::Unknown,
            })
            .collect(),
        deletions: vec![],
        removed: vec![],
        context: vec![],
    }
}

/// Coverage of FILE: line → witnesses (test, phase); `missing` lines are executable but unrun.
fn coverage(lines: &[(u32, &[(&str, Phase)])], missing: &[u32]) -> Coverage {
    coverage_in(FILE, lines, missing)
}

fn coverage_in(file: &str, lines: &[(u32, &[(&str, Phase)])], missing: &[u32]) -> Coverage {
    let mut fc = FileCoverage {
        has_statements: true,
        ..Default::default()
    };
    for (line, ws) in lines {
        fc.executed.insert(*line);
        for (t, p) in ws.iter() {
            fc.witnesses
                .entry(*line)
                .or_default()
                .entry(TestId::new(*t))
                .or_default()
                .insert(*p);
        }
    }
    fc.missing = missing.iter().copied().collect();
    Coverage {
        format: CoverageFormat::Json,
        files: [(file.to_string(), fc)].into_iter().collect(),
        measured_files: 3,
        mapped_paths: vec![],
        foreign_contexts: vec![],
        has_test_contexts: true,
    }
}

fn entry(test: &str, owner: &str, expires: &str) -> FreezeEntry {
    FreezeEntry {
        test: test.into(),
        observed: None,
        reason: Some("slow".into()),
        owner: owner.into(),
        frozen_at: Some(date("2026-11-01")),
        expires: date(expires),
        line: 3,
    }
}

fn probe(k: u32, tests: &[(&str, u32)]) -> Probe {
    Probe {
        k,
        tests: tests
            .iter()
            .map(|(t, f)| (TestId::new(*t), ProbeCounts { failures: *f, runs: k }))
            .collect(),
        complete: true,
        seed: Some(1),
    }
}

fn results(outcomes: &[(&str, Outcome)]) -> TestResults {
    TestResults {
        tests: outcomes
            .iter()
            .map(|(t, o)| {
                (
                    TestId::new(*t),
                    TestResult {
                        outcome: *o,
                        phase: None,
                        message: None,
                        source: "r.jsonl:1".into(),
                        reruns: 0,
                    },
                )
            })
            .collect(),
        ..Default::default()
    }
}

struct Case {
    patch: Patch,
    coverage: Option<Coverage>,
    ledger: Result<Ledger, Vec<InputError>>,
    probe: Option<Probe>,
    results: Option<TestResults>,
    config: Config,
    ledger_edit: Option<crate::gate::ledger::edit::LedgerEdit>,
    codeowners: Option<crate::gate::codeowners::CodeOwners>,
    meta: Option<Meta>,
    head_sha: Option<String>,
    workflow: Option<String>,
    head_sources: std::collections::BTreeMap<String, String>,
}

impl Case {
    fn new(lines: &[(u32, &str)], cov: Coverage) -> Self {
        Case {
            patch: Patch {
                files: vec![file_change(lines)],
            },
            coverage: Some(cov),
            ledger: Ok(Ledger {
                entries: vec![entry(FROZEN, "@shop/slow", "2026-12-31")],
            }),
            probe: Some(probe(5, &[(STABLE, 0), (FLAKY, 2), (FROZEN, 0)])),
            results: Some(results(&[
                (STABLE, Outcome::Passed),
                (FLAKY, Outcome::Passed),
                (FROZEN, Outcome::Passed),
            ])),
            config: Config::default(),
            ledger_edit: None,
            codeowners: None,
            meta: None,
            head_sha: None,
            workflow: None,
            head_sources: Default::default(),
        }
    }
    fn run(&self) -> Report {
        let ev = Evidence {
            coverage: self.coverage.clone(),
            coverage_file: Some("coverage.json".into()),
            results: self.results.clone(),
            probe: self.probe.clone(),
            meta: self.meta.clone(),
            problems: vec![],
            ledger_edit: self.ledger_edit.clone(),
            codeowners: self.codeowners.clone(),
            head_sources: self.head_sources.clone(),
            test_sources: Default::default(),
            history: None,
        };
        evaluate(&GateInput {
            patch: &self.patch,
            ledger: &self.ledger,
            config: &self.config,
            evidence: &ev,
            today: date("2026-11-20"),
            base_sha: None,
            head_sha: self.head_sha.clone(),
            inputs: vec![InputDigest::of("meta", "evidence/meta.json", b"{}")],
            workflow: self.workflow.clone(),
        })
    }
}

const RUN: Phase = Phase::Run;

#[test]
#[allow(clippy::vec_init_then_push)] // one case per push reads as a table
fn decision_table() {
    let stable_cov = || coverage(&[(10, &[(STABLE, RUN)]), (11, &[(STABLE, RUN)])], &[]);
    let frozen_cov = || coverage(&[(10, &[(FLAKY, RUN), (FROZEN, RUN)])], &[]);
    let mixed_cov = || coverage(&[(10, &[(FLAKY, RUN), (STABLE, RUN)])], &[]);
    let code = [(10, "    total = a + b"), (11, "    return total")];

    let mut cases: Vec<(&str, Case, Verdict, &[&str])> = Vec::new();
    cases.push((
        "all stable",
        Case::new(&code, stable_cov()),
        Verdict::Pass,
        &["all_stable"],
    ));
    cases.push((
        "some frozen",
        Case::new(&code[..1], mixed_cov()),
        Verdict::PassWithCaveat,
        &["some_frozen"],
    ));
    cases.push((
        "frozen only",
        Case::new(&code[..1], frozen_cov()),
        Verdict::Inconclusive,
        &["frozen_only"],
    ));
    cases.push((
        "uncovered",
        Case::new(&code, coverage(&[], &[10, 11])),
        Verdict::Inconclusive,
        &["uncovered"],
    ));
    let mut c = Case::new(&code, stable_cov());
    c.results = Some(results(&[(STABLE, Outcome::Failed)]));
    cases.push(("failed", c, Verdict::Fail, &["failed"]));
    let mut c = Case::new(&code, stable_cov());
    c.results = Some(results(&[
        (STABLE, Outcome::Passed),
        (FLAKY, Outcome::Failed),
        (FROZEN, Outcome::Error),
    ]));
    cases.push((
        "frozen and unstable failures do not fail",
        c,
        Verdict::Pass,
        &["all_stable"],
    ));
    let mut c = Case::new(&code, stable_cov());
    c.ledger = Ok(Ledger {
        entries: vec![entry("tests/test_other.py::test_gone", "qa", "2026-11-19")],
    });
    cases.push(("expired", c, Verdict::Inconclusive, &["expired"]));
    let mut c = Case::new(&code, stable_cov());
    c.ledger = Ok(Ledger {
        entries: vec![entry("tests/test_other.py::test_gone", "qa", "2026-11-20")],
    });
    cases.push(("expires today still holds", c, Verdict::Pass, &["all_stable"]));
    let mut c = Case::new(&code, stable_cov());
    c.ledger = Ok(Ledger {
        entries: vec![entry(FROZEN, "qa", "2026-11-01")],
    });
    cases.push(("expired but probe shows it stable", c, Verdict::Pass, &["all_stable"]));
    let mut c = Case::new(&code, stable_cov());
    c.ledger = Err(vec![InputError::new(
        Location::at("ledger.json", 4, Some(7)),
        "missing field `owner`",
    )]);
    cases.push(("invalid ledger", c, Verdict::Inconclusive, &["invalid_ledger"]));
    let mut c = Case::new(&code, stable_cov());
    c.coverage = None;
    cases.push(("missing coverage", c, Verdict::Inconclusive, &["missing_evidence"]));
    let mut c = Case::new(&code, stable_cov());
    c.results = None;
    cases.push(("no results", c, Verdict::PassWithCaveat, &["no_results"]));
    cases.push((
        "comments need no evidence",
        Case::new(&[(12, "    # a note"), (13, "")], stable_cov()),
        Verdict::Pass,
        &["no_executable_change"],
    ));
    cases.push((
        "partly uncovered is a caveat",
        Case::new(&[(10, "x"), (20, "y")], coverage(&[(10, &[(STABLE, RUN)])], &[20])),
        Verdict::PassWithCaveat,
        &["blind_lines"],
    ));
    let mut c = Case::new(&[(10, "x"), (20, "y")], coverage(&[(10, &[(STABLE, RUN)])], &[20]));
    c.config.policy.strict_lines = true;
    cases.push(("strict lines", c, Verdict::Inconclusive, &["blind_lines"]));
    cases.push((
        "setup-only witness",
        Case::new(&code[..1], coverage(&[(10, &[(STABLE, Phase::Setup)])], &[])),
        Verdict::PassWithCaveat,
        &["phase_only_witness"],
    ));
    let mut c = Case::new(&code[..1], coverage(&[(10, &[(STABLE, Phase::Setup)])], &[]));
    c.config.policy.run_phase_only = true;
    cases.push((
        "run phase only: setup does not witness",
        c,
        Verdict::Inconclusive,
        &["uncovered"],
    ));
    let mut c = Case::new(&code, stable_cov());
    c.results = Some(results(&[(STABLE, Outcome::Failed)]));
    c.ledger = Ok(Ledger {
        entries: vec![entry("tests/test_other.py::test_gone", "qa", "2026-11-01")],
    });
    cases.push((
        "failed outranks expired, both reported",
        c,
        Verdict::Fail,
        &["failed", "expired"],
    ));

    for (name, case, verdict, codes) in cases {
        let r = case.run();
        assert_eq!(r.verdict, verdict, "{name}: {:#?}", r.reasons);
        assert_eq!(r.codes(), codes.to_vec(), "{name}");
    }
}

#[test]
fn broken_on_base_is_not_a_stable_witness_and_its_failure_is_ignored() {
    let mut c = Case::new(&[(10, "x")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    c.probe = Some(probe(5, &[(STABLE, 5)]));
    c.results = Some(results(&[(STABLE, Outcome::Failed)]));
    let r = c.run();
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert_eq!(r.codes(), ["frozen_only"]);
    assert_eq!(r.witnesses.failing_on_base, vec![TestId::new(STABLE)]);
    assert!(!r.results.failures[0].counts);
}

#[test]
fn per_line_classes_and_witness_lists() {
    let cov = coverage(
        &[
            (10, &[(STABLE, RUN)]),
            (11, &[(FLAKY, RUN)]),
            (12, &[(FROZEN, Phase::Setup), (FROZEN, RUN)]),
        ],
        &[13],
    );
    let r = Case::new(&[(10, "a"), (11, "b"), (12, "c"), (13, "d"), (14, "# c")], cov).run();
    let f = &r.files[0];
    assert_eq!(f.changed_lines, vec![10, 11, 12, 13, 14]);
    assert_eq!(f.executable_changed_lines, vec![10, 11, 12, 13]);
    assert_eq!(f.stable_lines, vec![10]);
    assert_eq!(f.frozen_only_lines, vec![11, 12]);
    assert_eq!(f.uncovered_lines, vec![13]);
    assert_eq!(r.witnesses.stable, vec![TestId::new(STABLE)]);
    assert_eq!(r.witnesses.frozen, vec![TestId::new(FROZEN)]);
    assert_eq!(r.witnesses.unstable, vec![TestId::new(FLAKY)]);
    assert_eq!(
        f.lines[2].witnesses[0].phases,
        BTreeSet::from([Phase::Setup, Phase::Run])
    );
    // The frozen test's owner is blind; the unstable test has no owner.
    assert_eq!(r.blind_owners.len(), 1);
    assert_eq!(r.blind_owners[0].handle.as_deref(), Some("@shop/slow"));
    assert_eq!(r.unowned_unstable, vec![TestId::new(FLAKY)]);
    assert_eq!(r.codes(), ["some_frozen", "blind_lines"]);
}

#[test]
fn owners_are_mentioned_only_as_handles() {
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(FROZEN, RUN), (STABLE, RUN)])], &[]));
    c.ledger = Ok(Ledger {
        entries: vec![entry(FROZEN, "billing-oncall", "2026-12-31")],
    });
    let r = c.run();
    assert_eq!(r.blind_owners[0].handle, None, "an unmapped name is never @-mentioned");
    c.config.owners.insert("billing-oncall".into(), "@acme/billing".into());
    let r = c.run();
    assert_eq!(r.blind_owners[0].handle.as_deref(), Some("@acme/billing"));
}

#[test]
fn files_are_all_accounted_for() {
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    let mut doc = file_change(&[(1, "# Title")]);
    doc.path = "docs/guide.md".into();
    let mut bin = file_change(&[]);
    bin.path = "assets/logo.png".into();
    bin.binary = true;
    let mut unmeasured = file_change(&[(1, "import os")]);
    unmeasured.path = "scripts/tool.py".into();
    unmeasured.status = FileStatus::Added;
    let mut huge = file_change(&[]);
    huge.path = "src/shop/huge.py".into();
    huge.lines_known = false;
    let mut renamed = file_change(&[]);
    renamed.path = "src/shop/new_name.py".into();
    renamed.old_path = Some("src/shop/old_name.py".into());
    renamed.status = FileStatus::Renamed;
    c.patch.files.extend([doc, bin, unmeasured, huge, renamed]);
    let r = c.run();
    let ev: Vec<_> = r.files.iter().map(|f| (f.path.as_str(), f.evidence)).collect();
    assert_eq!(
        ev,
        vec![
            (FILE, FileEvidence::Measured),
            ("docs/guide.md", FileEvidence::NotNeeded),
            ("assets/logo.png", FileEvidence::Blind),
            ("scripts/tool.py", FileEvidence::Blind),
            ("src/shop/huge.py", FileEvidence::Blind),
            ("src/shop/new_name.py", FileEvidence::NoExecutableChange),
        ]
    );
    assert_eq!(r.verdict, Verdict::PassWithCaveat);
    assert_eq!(r.codes(), ["blind_lines"]);
}

// size: one table of every kind of file no test can execute, read best whole.
#[test]
fn what_no_test_can_execute_needs_no_evidence() {
    // Each file alone beside a stably witnessed line: (path, status, added lines, binary) →
    // evidence, and whether the reason names it.
    let deleted = |path: &str, text: &[&str], binary: bool| {
        let mut f = file_change(&[]);
        f.path = path.into();
        f.status = FileStatus::Deleted;
        f.binary = binary;
        if !binary {
            f.deletions = vec![Deletion {
                old_start: 1,
                old_count: text.len() as u32,
                after: 0,
                text: text.iter().map(|t| t.to_string()).collect(),
            }];
        }
        f
    };
    let added = |path: &str, lines: &[(u32, &str)], status: FileStatus| {
        let mut f = file_change(lines);
        f.path = path.into();
        f.status = status;
        f
    };
    let table: Vec<(FileChange, FileEvidence, Option<&str>)> = vec![
        // A stub, new or edited, beside its module or alone: never imported at run time.
        (
            added(
                "src/shop/refunds.pyi",
                &[(1, "def refund(x: int) -> int: ...")],
                FileStatus::Added,
            ),
            FileEvidence::NotNeeded,
            Some("type stub"),
        ),
        (
            added(
                "src/shop/_native.pyi",
                &[(3, "    def total(self) -> int: ...")],
                FileStatus::Modified,
            ),
            FileEvidence::NotNeeded,
            Some("type stub"),
        ),
        (
            added("src/shop/py.typed", &[(1, "partial")], FileStatus::Added),
            FileEvidence::NotNeeded,
            Some("py.typed"),
        ),
        (
            added(".gitattributes", &[(1, "*.py diff=python")], FileStatus::Modified),
            FileEvidence::NotNeeded,
            Some("git metadata"),
        ),
        (
            added("mypy.ini", &[(2, "strict = True")], FileStatus::Modified),
            FileEvidence::NotNeeded,
            Some("type-checker"),
        ),
        // Deleted files: nothing is left to execute, whatever they held.
        (
            deleted("src/shop/legacy.py", &["def old():", "    return 1"], false),
            FileEvidence::NotNeeded,
            Some("deleted file"),
        ),
        (
            deleted("assets/logo.png", &[], true),
            FileEvidence::NotNeeded,
            Some("deleted file"),
        ),
        (
            deleted("src/shop/legacy.pyi", &["def old() -> int: ..."], false),
            FileEvidence::NotNeeded,
            Some("type stub"),
        ),
        // Kept: a deleted file of comments only has no executable change; a test file needs no
        // evidence as test code; a binary or unmeasured file that stays is blind.
        (
            deleted("src/shop/notes.py", &["# nothing", ""], false),
            FileEvidence::NoExecutableChange,
            None,
        ),
        (
            deleted(
                "tests/test_legacy.py",
                &["def test_old():", "    assert old() == 1"],
                false,
            ),
            FileEvidence::NotNeeded,
            Some("test code"),
        ),
        (
            {
                let mut f = added("assets/logo.png", &[], FileStatus::Modified);
                f.binary = true;
                f
            },
            FileEvidence::Blind,
            None,
        ),
        (
            added("src/shop/rates.json", &[(1, "{\"rate\": 2}")], FileStatus::Modified),
            FileEvidence::Blind,
            None,
        ),
    ];
    for (f, want, reason) in table {
        let path = f.path.clone();
        let mut c = Case::new(&[(10, "    total = a + b")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
        c.patch.files.push(f);
        let r = c.run();
        let got = r.files.iter().find(|x| x.path == path).unwrap();
        assert_eq!(got.evidence, want, "{path}");
        match reason {
            Some(needle) => assert!(
                got.no_evidence_reason.as_deref().is_some_and(|w| w.contains(needle)),
                "{path}: {:?}",
                got.no_evidence_reason
            ),
            None => assert_eq!(got.no_evidence_reason, None, "{path}"),
        }
        let codes = match want {
            FileEvidence::Blind => vec!["blind_lines"],
            // Deleting a test is the trust rules' to judge.
            _ if path.starts_with("tests/") => vec!["weakened_test"],
            _ => vec!["all_stable"],
        };
        assert_eq!(r.codes(), codes, "{path}");
    }

    // Alone, they need nothing: PASS, no_executable_change — no "add a test for them".
    let mut c = Case::new(&[], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    c.patch.files = vec![
        added(
            "src/shop/refunds.pyi",
            &[(1, "def refund(x: int) -> int: ...")],
            FileStatus::Modified,
        ),
        added("src/shop/py.typed", &[(1, "partial")], FileStatus::Added),
        deleted("src/shop/legacy.py", &["def old():", "    return 1"], false),
    ];
    let r = c.run();
    assert_eq!(r.codes(), ["no_executable_change"], "{:#?}", r.reasons);
    assert!(r.blind_owners.is_empty());
    // The deletion of a file of code is a note: what used it fails on head.
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("src/shop/legacy.py is deleted") && n.contains("fails on head")),
        "{:#?}",
        r.notes
    );
    // Without coverage a stub still needs none (only the module would).
    c.coverage = None;
    let r = c.run();
    assert!(
        r.files.iter().all(|f| f.evidence != FileEvidence::Blind),
        "{:#?}",
        r.files
    );
}

#[test]
fn a_deleted_file_of_code_may_have_failed_what_used_it() {
    // A test that ran no changed line failed; the patch deleted a module it may have used:
    // not flakiness on unchanged code, the failure counts.
    let mut c = elsewhere_fails(Case::new(
        &[(10, "    total = a + b")],
        coverage(&[(10, &[(STABLE, RUN)])], &[]),
    ));
    let mut gone = file_change(&[]);
    gone.path = "src/shop/legacy.py".into();
    gone.status = FileStatus::Deleted;
    gone.deletions = vec![Deletion {
        old_start: 1,
        old_count: 1,
        after: 0,
        text: vec!["def old(): return 1".into()],
    }];
    c.patch.files.push(gone);
    let r = c.run();
    assert_eq!(r.codes()[0], "failed", "{:#?}", r.reasons);
    assert!(r.files[1].deletes_code);
    assert!(!crate::gate::history::untouched_tests_ran_base_code(&r));
    // A deleted stub cannot: flakiness on unchanged code.
    let mut c = elsewhere_fails(Case::new(
        &[(10, "    total = a + b")],
        coverage(&[(10, &[(STABLE, RUN)])], &[]),
    ));
    let mut stub = file_change(&[]);
    stub.path = "src/shop/legacy.pyi".into();
    stub.status = FileStatus::Deleted;
    c.patch.files.push(stub);
    assert_eq!(c.run().codes(), ["flaky_unchanged"]);
}

#[test]
fn deletions() {
    let del = |text: &str| Deletion {
        old_start: 20,
        old_count: 1,
        after: 19,
        text: vec![text.into()],
    };
    let cov = coverage(&[(19, &[(STABLE, RUN)]), (20, &[(FROZEN, RUN)])], &[]);
    // Only a deletion, not attributed: nothing can witness it.
    let mut c = Case::new(&[], cov.clone());
    c.patch.files[0].deletions = vec![del("    check(x)")];
    let r = c.run();
    assert_eq!(r.codes(), ["uncovered"]);
    assert!(!r.files[0].deletions[0].attributed);
    // Attributed to the lines above and below.
    c.config.policy.attribute_deletions = true;
    let r = c.run();
    assert_eq!(r.codes(), ["some_frozen"], "{:#?}", r.reasons);
    assert!(r.files[0].deletions[0].attributed);
    assert_eq!(r.witnesses.stable, vec![TestId::new(STABLE)]);
    // Deleting a comment needs nothing.
    let mut c = Case::new(&[], cov);
    c.patch.files[0].deletions = vec![del("    # old note")];
    assert_eq!(c.run().codes(), ["no_executable_change"]);
}

#[test]
fn coverage_from_elsewhere_and_without_contexts() {
    let mut c = Case::new(&[(10, "a")], coverage(&[], &[]));
    c.coverage.as_mut().unwrap().files.clear();
    let r = c.run();
    assert_eq!(r.codes()[0], "evidence_mismatch", "{:#?}", r.reasons);
    assert!(
        r.reasons[0].message.starts_with("coverage.json measures 3 files"),
        "{}",
        r.reasons[0].message
    );
    assert_eq!(r.reasons[0].locations[0].file, "coverage.json");
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    c.coverage.as_mut().unwrap().has_test_contexts = false;
    assert_eq!(c.run().codes()[0], "missing_evidence");
}

#[test]
fn data_file_without_statements_uses_the_line_text() {
    let mut cov = coverage(&[(10, &[(STABLE, RUN)])], &[]);
    cov.files.get_mut(FILE).unwrap().has_statements = false;
    let r = Case::new(&[(10, "a = 1"), (11, "b = 2"), (12, "  # note"), (13, "    )")], cov).run();
    assert_eq!(r.files[0].executable_changed_lines, vec![10, 11]);
    assert_eq!(r.files[0].uncovered_lines, vec![11]);
}

#[test]
fn an_unmatched_junit_failure_still_fails() {
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    let mut res = results(&[(STABLE, Outcome::Passed)]);
    res.unmatched.push(crate::gate::results::UnmatchedCase {
        source: "junit.xml:7".into(),
        classname: "tests.test_other".into(),
        name: "test_x".into(),
        why: "no node id from coverage matches".into(),
        outcome: Outcome::Failed,
        message: Some("assert 1 == 2".into()),
    });
    res.unmatched.push(crate::gate::results::UnmatchedCase {
        source: "junit.xml:9".into(),
        classname: "tests.test_other".into(),
        name: "test_skipped".into(),
        why: "no node id from coverage matches".into(),
        outcome: Outcome::Skipped,
        message: None,
    });
    c.results = Some(res);
    let r = c.run();
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.codes(), ["failed"]);
    assert_eq!(r.results.unmatched.len(), 2);
}

#[test]
fn probe_power_is_worded_as_a_bound() {
    let r = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[])).run();
    let p = r.probe.unwrap();
    assert!(p.power.contains("not shown unstable at p ≥"), "{}", p.power);
    let rate = p.min_detectable_rate_90.unwrap();
    assert!(crate::gate::probe::detection_chance(rate, 5) >= 0.9 - 1e-9);
}

/// The patch's own ledger edit: the ledger as it found it → as it leaves it.
fn edit(before: &Ledger, after: &Ledger) -> Option<crate::gate::ledger::edit::LedgerEdit> {
    Some(crate::gate::ledger::edit::LedgerEdit {
        before: before.clone(),
        after: after.clone(),
    })
}

#[test]
fn the_patch_may_not_freeze_its_own_witnesses() {
    let cov = coverage(&[(10, &[(STABLE, RUN), (FROZEN, RUN)])], &[]);
    let mut c = Case::new(&[(10, "a")], cov);
    let base = c.ledger.clone().unwrap();
    // Unchanged ledger: nothing to report.
    c.ledger_edit = edit(&base, &base);
    assert_eq!(c.run().codes(), ["some_frozen"]);
    // Freezing the only stable witness of its own line.
    let mut head = base.clone();
    head.entries.push(entry(STABLE, "@me", "2027-01-31"));
    c.ledger_edit = edit(&base, &head);
    let r = c.run();
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert_eq!(r.codes(), ["self_freeze", "some_frozen", "ledger_edited"]);
    assert_eq!(r.reasons[0].tests, vec![TestId::new(STABLE)]);
    assert_eq!(r.ledger_changes.len(), 1);
    // Extending the freeze of a witness is a self-freeze too.
    let mut head = base.clone();
    head.entries[0].expires = date("2027-06-30");
    c.ledger_edit = edit(&base, &head);
    assert_eq!(c.run().codes()[0], "self_freeze");
    // Freezing an unrelated test is reported, not blocking.
    let mut head = base;
    head.entries
        .push(entry("tests/test_other.py::test_unrelated", "@me", "2027-01-31"));
    c.ledger_edit = edit(&c.ledger.clone().unwrap(), &head);
    let r = c.run();
    assert_eq!(r.verdict, Verdict::PassWithCaveat);
    assert_eq!(r.codes(), ["some_frozen", "ledger_edited"]);
}

#[test]
fn edits_landed_on_the_base_since_the_branch_point_are_not_the_patchs() {
    // The patch leaves the ledger as it found it; the base has since renewed the freeze of a
    // witness, frozen another witness and dropped an entry. Judged with the base's ledger, no
    // edit is the patch's: no self_freeze, no ledger_edited.
    let cov = coverage(&[(10, &[(STABLE, RUN), (FROZEN, RUN)])], &[]);
    let mut c = Case::new(&[(10, "a")], cov);
    let found = Ledger {
        entries: vec![
            entry(FROZEN, "@shop/slow", "2026-11-25"),
            entry("tests/test_other.py::test_gone", "@me", "2026-12-01"),
        ],
    };
    let mut tip = c.ledger.clone().unwrap();
    tip.entries.push(entry(STABLE, "@shop/stable", "2026-12-31"));
    c.ledger = Ok(tip.clone());
    c.ledger_edit = edit(&found, &found);
    let r = c.run();
    assert_eq!(r.codes(), ["frozen_only"], "{:#?}", r.reasons);
    assert!(r.ledger_changes.is_empty());
    // What the patch did itself is still its own: extending the freeze it found.
    let mut leaves = found.clone();
    leaves.entries[0].expires = date("2027-01-31");
    c.ledger_edit = edit(&found, &leaves);
    let r = c.run();
    assert_eq!(r.codes()[0], "self_freeze");
    assert_eq!(r.ledger_changes.len(), 1);
    assert_eq!(r.ledger_changes[0].detail, "expires 2026-11-25 → 2027-01-31");
    // The verdict is still the base tip's ledger's: it freezes STABLE, which the patch's
    // ledger does not.
    assert_eq!(r.codes(), ["self_freeze", "frozen_only", "ledger_edited"]);
}

#[test]
fn caveat_signals_weakened_tests_and_self_witnesses() {
    // A sleep added to a test file: caveat, with the line.
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    let mut t = file_change(&[(5, "    time.sleep(1)")]);
    t.path = "tests/test_refunds.py".into();
    c.patch.files.push(t);
    let r = c.run();
    assert_eq!(r.verdict, Verdict::PassWithCaveat);
    assert!(r.codes().contains(&"weakened_test"), "{:?}", r.codes());
    let w = r.reasons.iter().find(|x| x.code.as_str() == "weakened_test").unwrap();
    assert_eq!(w.locations[0].to_string(), "tests/test_refunds.py:5");

    // The changed line's only stable witness is a test the patch adds.
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    let mut t = file_change(&[(1, "def test_refund():"), (2, "    assert refund(1) == 1")]);
    t.path = "tests/test_refunds.py".into();
    c.patch.files.push(t);
    let r = c.run();
    assert_eq!(r.codes(), ["self_witness"], "{:#?}", r.reasons);
    assert!(
        r.reasons[0].message.contains("adds or modifies"),
        "{}",
        r.reasons[0].message
    );
    // A worse verdict is never upgraded by a caveat.
    c.results = Some(results(&[(STABLE, Outcome::Failed)]));
    assert_eq!(c.run().verdict, Verdict::Fail);
}

#[test]
fn codeowners_of_blind_lines_are_blind_owners() {
    let mut c = Case::new(&[(10, "x"), (20, "y")], coverage(&[(10, &[(STABLE, RUN)])], &[20]));
    c.codeowners = Some(crate::gate::codeowners::CodeOwners::parse(
        "* @org/all\nsrc/shop/ @shop/core payments-lead\n",
    ));
    let r = c.run();
    let owners: Vec<(&str, Option<&str>)> = r
        .blind_owners
        .iter()
        .map(|o| (o.owner.as_str(), o.handle.as_deref()))
        .collect();
    assert_eq!(owners, [("@shop/core", Some("@shop/core")), ("payments-lead", None)]);
    assert!(
        r.blind_owners[0].why[0].contains("src/shop/refunds.py lines 20 have no stable witness"),
        "{:?}",
        r.blind_owners[0].why
    );
    assert_eq!(r.blind_owners[0].actions, ["add-test"]);
    // Nothing blind: nobody named.
    let mut c = Case::new(&[(10, "x")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    c.codeowners = Some(crate::gate::codeowners::CodeOwners::parse("* @org/all\n"));
    assert!(c.run().blind_owners.is_empty());
}

/// The fixture project's `src/shop/pricing.py:28` (`return amount` in `discount()`), changed.
const PRICING: &str = "src/shop/pricing.py";
const DISCOUNT_NONE: &str = "tests/test_pricing.py::test_discount[none]";
const DISCOUNT_NEW: &str = "tests/test_pricing.py::test_discount_unknown_code_rounds";

fn pricing_case(diff: &str, witnesses: &[(&str, Phase)]) -> Case {
    let mut c = Case::new(&[], coverage_in(PRICING, &[(28, witnesses)], &[]));
    c.patch = crate::gate::patch::parse_unified("diff", diff).unwrap();
    c.probe = Some(probe(5, &[(DISCOUNT_NONE, 0), (DISCOUNT_NEW, 0)]));
    c.results = Some(results(&[
        (DISCOUNT_NONE, Outcome::Passed),
        (DISCOUNT_NEW, Outcome::Passed),
    ]));
    c
}

#[test]
fn a_new_test_beside_an_unmodified_witness_is_not_self_witness() {
    use crate::gate::trust::weakening::tests::{NEW_TEST_BESIDE_AN_OLD_ONE, PARAM_CASE_CHANGED};
    // The changed line has an independent witness: the existing, untouched test_discount.
    let r = pricing_case(NEW_TEST_BESIDE_AN_OLD_ONE, &[(DISCOUNT_NONE, RUN), (DISCOUNT_NEW, RUN)]).run();
    assert_eq!(r.verdict, Verdict::Pass, "{:#?}", r.reasons);
    assert_eq!(r.codes(), ["all_stable"]);
    // Only the new test witnesses it: the patch vouches for itself.
    let r = pricing_case(NEW_TEST_BESIDE_AN_OLD_ONE, &[(DISCOUNT_NEW, RUN)]).run();
    assert_eq!(r.codes(), ["self_witness"], "{:#?}", r.reasons);
    assert_eq!(r.reasons[0].tests, vec![TestId::new(DISCOUNT_NEW)]);
    // The patch changes test_discount's own cases: a modified test is the patch's too.
    let r = pricing_case(PARAM_CASE_CHANGED, &[(DISCOUNT_NONE, RUN)]).run();
    assert_eq!(r.codes(), ["self_witness"], "{:#?}", r.reasons);
    assert_eq!(r.reasons[0].locations[0].to_string(), "src/shop/pricing.py:28");
}

fn caveats_case() -> Case {
    // A sleep added to a test (weakened_test) next to a line with a frozen and a stable witness (some_frozen).
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN), (FROZEN, RUN)])], &[]));
    let mut t = file_change(&[(5, "    time.sleep(1)")]);
    t.path = "tests/test_other.py".into();
    c.patch.files.push(t);
    c
}

#[test]
fn policy_signals_turn_caveats_off_or_inconclusive() {
    use crate::gate::config::SignalLevel::*;
    use crate::gate::report::Signal;
    let r = caveats_case().run();
    assert_eq!(r.verdict, Verdict::PassWithCaveat);
    assert_eq!(r.codes(), ["some_frozen", "weakened_test"]);
    assert!(r.reasons.iter().all(|x| !x.escalated));

    // Inconclusive: the escalated reason sorts with the blocking ones, and decides.
    let mut c = caveats_case();
    c.config.policy.signals.set(Signal::WeakenedTest, Inconclusive);
    let r = c.run();
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert_eq!(r.codes(), ["weakened_test", "some_frozen"]);
    assert_eq!(r.reasons[0].verdict, Verdict::Inconclusive);
    assert!(r.reasons[0].escalated);
    assert_eq!(r.reasons[1].verdict, Verdict::PassWithCaveat);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["reasons"][0]["verdict"], "INCONCLUSIVE");
    assert_eq!(json["reasons"][0]["escalated"], true);
    assert_eq!(json["reasons"][1]["escalated"], false);

    // A worse verdict is never upgraded, and keeps its place before the escalated reason.
    c.results = Some(results(&[(STABLE, Outcome::Failed)]));
    let r = c.run();
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.codes(), ["failed", "weakened_test", "some_frozen"]);

    // Off: dropped from the verdict, said in the notes.
    let mut c = caveats_case();
    c.config.policy.signals.set(Signal::WeakenedTest, Off);
    let r = c.run();
    assert_eq!(r.codes(), ["some_frozen"]);
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("policy.signals.weakened_test is off")),
        "{:?}",
        r.notes
    );
    c.config.policy.signals.set(Signal::SomeFrozen, Off);
    let r = c.run();
    assert_eq!(r.verdict, Verdict::Pass);
    assert_eq!(r.codes(), ["all_stable"]);
    assert!(
        r.reasons[0].message.contains("turned off some_frozen, weakened_test"),
        "{}",
        r.reasons[0].message
    );

    // Off never lowers a blocking reason: strict blind lines stay INCONCLUSIVE.
    let mut c = Case::new(&[(10, "x"), (20, "y")], coverage(&[(10, &[(STABLE, RUN)])], &[20]));
    c.config.policy.strict_lines = true;
    c.config.policy.signals.set(Signal::BlindLines, Off);
    assert_eq!(c.run().verdict, Verdict::Inconclusive);
    // blind_lines: inconclusive is strict_lines.
    let mut c = Case::new(&[(10, "x"), (20, "y")], coverage(&[(10, &[(STABLE, RUN)])], &[20]));
    c.config.policy.signals.set(Signal::BlindLines, Inconclusive);
    let r = c.run();
    assert_eq!((r.verdict, r.codes()), (Verdict::Inconclusive, vec!["blind_lines"]));
    // Caveat is the default.
    let mut c = caveats_case();
    c.config.policy.signals.set(Signal::WeakenedTest, Caveat);
    assert_eq!(c.run().verdict, Verdict::PassWithCaveat);
}

#[test]
fn evidence_for_another_head_is_a_mismatch_naming_its_file_and_workflow() {
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    c.head_sha = Some("1111111111111111111111111111111111111111".into());
    c.meta = Some(Meta {
        head_sha: Some("2222222".into()),
        workflow: Some(".github/workflows/flakegate-evidence.yml".into()),
        ..Meta::default()
    });
    let r = c.run();
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert_eq!(r.codes(), ["evidence_mismatch"]);
    let m = &r.reasons[0].message;
    assert!(m.starts_with("evidence/meta.json says the evidence, produced by .github/workflows/flakegate-evidence.yml, is for commit 2222222"), "{m}");
    assert!(
        m.contains("re-run .github/workflows/flakegate-evidence.yml on the head commit"),
        "{m}"
    );
    assert_eq!(r.reasons[0].locations[0].file, "evidence/meta.json");
    // The caller's workflow wins over meta.json's.
    c.workflow = Some(".github/workflows/ci.yml".into());
    assert!(c.run().reasons[0].message.contains("re-run .github/workflows/ci.yml"));
    // Same commit, abbreviated: no reason.
    c.meta.as_mut().unwrap().head_sha = Some("1111111".into());
    assert_eq!(c.run().codes(), ["all_stable"]);
    // Sorted right after evidence_config_changed.
    assert!(ReasonCode::EvidenceConfigChanged < ReasonCode::EvidenceMismatch);
    assert!(ReasonCode::EvidenceMismatch < ReasonCode::SelfFreeze);
}

#[test]
fn only_the_evidence_workflow_distrusts_the_evidence_when_it_is_known() {
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    let mut wf = file_change(&[(3, "    runs-on: ubuntu-24.04")]);
    wf.path = ".github/workflows/release.yml".into();
    c.patch.files.push(wf);
    // Unknown workflow: any workflow edit distrusts the evidence.
    assert_eq!(c.run().codes()[0], "evidence_config_changed");
    // Known, and another one: a note only, and the file (under `.github/`) needs no coverage.
    c.workflow = Some(".github/workflows/flakegate-evidence.yml".into());
    let r = c.run();
    assert!(!r.has("evidence_config_changed"), "{:#?}", r.reasons);
    assert_eq!(r.verdict, Verdict::Pass, "{:#?}", r.reasons);
    assert!(
        r.notes.iter().any(|n| n.contains(".github/workflows/release.yml")),
        "{:?}",
        r.notes
    );
    // meta.json's workflow is not trusted to narrow it (the patch's workflow may write it).
    c.workflow = None;
    c.meta = Some(Meta {
        workflow: Some(".github/workflows/flakegate-evidence.yml".into()),
        ..Meta::default()
    });
    assert_eq!(c.run().codes()[0], "evidence_config_changed");
    // Known, and the patch edits it.
    c.workflow = Some(".github/workflows/release.yml".into());
    let r = c.run();
    assert_eq!(r.codes()[0], "evidence_config_changed");
    assert!(r.reasons[0]
        .message
        .contains(".github/workflows/release.yml is the workflow that produced the evidence"));
}

#[test]
fn files_the_trust_rules_judge_need_no_coverage() {
    // A .coveragerc outside `.github/` and outside no_evidence_paths: the trust rule reports
    // it, and it is not also a blind file asking for a test.
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    let mut rc = file_change(&[(1, "[run]"), (2, "omit = src/app.py")]);
    rc.path = ".coveragerc".into();
    c.patch.files.push(rc);
    let r = c.run();
    assert_eq!(r.codes(), ["evidence_config_changed"], "{:#?}", r.reasons);
}

#[test]
fn an_xfail_on_head_of_a_test_that_always_passed_on_base_is_a_failure() {
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    c.results = Some(results(&[(STABLE, Outcome::XFailed), (FROZEN, Outcome::XFailed)]));
    let r = c.run();
    assert_eq!(r.verdict, Verdict::Fail, "{:#?}", r.reasons);
    assert_eq!(r.reasons[0].tests, vec![TestId::new(STABLE)]);
    let f = r.results.failures.iter().find(|f| f.test == STABLE).unwrap();
    assert!(f.counts);
    assert!(
        f.message
            .as_deref()
            .unwrap()
            .contains("passed in all 5 base probe runs"),
        "{f:?}"
    );
    // The frozen test's xfail does not count (frozen), and neither does an xfail of a test the
    // probe never saw pass (it xfails on base too, or was not probed).
    assert!(!r.results.failures.iter().any(|f| f.test == FROZEN && f.counts));
    let mut never_passed = probe(5, &[(FLAKY, 2)]);
    never_passed
        .tests
        .insert(TestId::new(STABLE), ProbeCounts { failures: 0, runs: 0 });
    c.probe = Some(never_passed);
    assert_eq!(c.run().verdict, Verdict::Pass, "{:#?}", c.run().reasons);
}

/// The head's `src/shop/refunds.py` in the import-time tests: a decorated function with a
/// multi-line signature, and a module constant.
const REFUNDS_HEAD: &str =
    "\"\"\"Refunds.\"\"\"\n\nLIMIT = 10\n\n@cache\ndef refund(\n    amount,\n):\n    return amount\n";

/// Coverage of [`REFUNDS_HEAD`] as coverage.py records it: the constant, the decorator and the
/// `def` ran only at import time, the body under a test.
fn refunds_head_coverage(has_statements: bool) -> Coverage {
    let mut cov = coverage(&[(9, &[(STABLE, RUN)])], &[]);
    let fc = cov.files.get_mut(FILE).unwrap();
    fc.has_statements = has_statements;
    for line in [1, 3, 5, 6] {
        fc.executed.insert(line);
        fc.import_time.insert(line);
    }
    cov
}

#[test]
fn import_time_lines_are_their_own_class_and_not_blind() {
    // A changed constant beside a changed, tested body line: PASS, the constant listed as import time.
    let r = Case::new(
        &[(3, "LIMIT = 10"), (9, "    return amount")],
        refunds_head_coverage(true),
    )
    .run();
    assert_eq!(r.codes(), ["all_stable"], "{:#?}", r.reasons);
    assert_eq!(r.files[0].import_time_lines, vec![3]);
    assert_eq!(r.files[0].executable_changed_lines, vec![3, 9]);
    assert!(r.files[0].uncovered_lines.is_empty() && !r.files[0].is_blind());
    let l3 = r.files[0].lines.iter().find(|l| l.line == 3).unwrap();
    assert_eq!((l3.class, l3.witnesses.len()), (LineClass::ImportTime, 0));
    // Only import-time lines: nothing speaks for the patch.
    let r = Case::new(&[(3, "LIMIT = 10")], refunds_head_coverage(true)).run();
    assert_eq!(r.codes(), ["uncovered"], "{:#?}", r.reasons);
    assert!(
        r.reasons[0]
            .message
            .contains("1 ran only at import time: src/shop/refunds.py:3"),
        "{}",
        r.reasons[0].message
    );
    assert_eq!(r.reasons[0].locations.len(), 1);
    // An import-time line and a missing one: still uncovered, both named.
    let mut cov = refunds_head_coverage(true);
    cov.files.get_mut(FILE).unwrap().missing.insert(12);
    let r = Case::new(&[(3, "LIMIT = 10"), (12, "x = 1")], cov).run();
    assert_eq!(r.codes(), ["uncovered"], "{:#?}", r.reasons);
    assert_eq!(r.files[0].uncovered_lines, vec![12]);
    assert_eq!(r.reasons[0].locations.len(), 2);
}

#[test]
fn a_definition_header_is_witnessed_by_its_body_with_the_head_source() {
    for has_statements in [true, false] {
        let changed: &[(u32, &str)] = &[(5, "@cache"), (7, "    amount,")];
        // Without the source the decorator ran only at import time; on a `.coverage` file the
        // continuation line counts as code nothing ran.
        let r = Case::new(changed, refunds_head_coverage(has_statements)).run();
        assert_eq!(r.codes(), ["uncovered"], "{has_statements}: {:#?}", r.reasons);
        assert_eq!(r.files[0].import_time_lines, vec![5]);
        // With it, both are the definition's header: the body's test witnesses them.
        let mut c = Case::new(changed, refunds_head_coverage(has_statements));
        c.head_sources.insert(FILE.into(), REFUNDS_HEAD.into());
        let r = c.run();
        assert_eq!(r.codes(), ["all_stable"], "{has_statements}: {:#?}", r.reasons);
        assert_eq!(r.files[0].stable_lines, vec![5, 7]);
        assert_eq!(r.files[0].lines[0].witnesses[0].test, TestId::new(STABLE));
        assert!(r.files[0].import_time_lines.is_empty());
    }
    // Without the source, coverage.json's function region gives the `def` line (only) its body's
    // witnesses; the decorator stays an import-time line.
    let mut cov = refunds_head_coverage(true);
    cov.files.get_mut(FILE).unwrap().regions = [(6, [9].into())].into();
    let r = Case::new(&[(5, "@cache"), (6, "def refund(")], cov).run();
    assert_eq!(r.codes(), ["all_stable"], "{:#?}", r.reasons);
    assert_eq!(
        (r.files[0].stable_lines.clone(), r.files[0].import_time_lines.clone()),
        (vec![6], vec![5])
    );
    // A source that does not match the coverage (the def line never ran) lends no witnesses.
    let mut cov = refunds_head_coverage(true);
    let fc = cov.files.get_mut(FILE).unwrap();
    fc.executed.remove(&6);
    fc.import_time.remove(&6);
    let mut c = Case::new(&[(5, "@cache")], cov);
    c.head_sources.insert(FILE.into(), REFUNDS_HEAD.into());
    let r = c.run();
    assert_eq!(r.codes(), ["uncovered"], "{:#?}", r.reasons);
    // A blank line inside the source is no code, whatever the diff says.
    let mut c = Case::new(&[(4, "")], refunds_head_coverage(false));
    c.head_sources.insert(FILE.into(), REFUNDS_HEAD.into());
    assert!(c.run().files[0].executable_changed_lines.is_empty());
}

#[test]
fn a_continuation_line_is_judged_as_its_statement_with_the_head_source() {
    // `x = f(` at 10 ran under a test; its argument line 11 is no statement in coverage.json.
    let src = "\n".repeat(9) + "x = f(\n    2,\n)\n";
    let cov = coverage(&[(10, &[(STABLE, RUN)])], &[]);
    let r = Case::new(&[(11, "    2,")], cov.clone()).run();
    assert_eq!(
        r.codes(),
        ["no_executable_change"],
        "without the source: {:#?}",
        r.reasons
    );
    let mut c = Case::new(&[(11, "    2,")], cov);
    c.head_sources.insert(FILE.into(), src);
    let r = c.run();
    assert_eq!(r.codes(), ["all_stable"], "{:#?}", r.reasons);
    assert_eq!(r.files[0].stable_lines, vec![11]);
}

/// A file whose diff text is not UTF-8 is blind with its reason (its lines were decoded
/// lossily, for display); documentation needs no evidence whatever its bytes; the rest of the
/// patch is judged as usual.
#[test]
fn an_unreadable_file_is_blind_and_the_rest_is_judged() {
    let mut c = Case::new(&[(10, "a")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    let why = "not UTF-8 text (invalid byte 0xE9 at pr.diff:7): its lines are shown decoded lossily";
    let mut code = file_change(&[(1, "name = 'caf\u{fffd}'")]);
    code.path = "src/shop/legacy.py".into();
    code.unreadable = Some(why.into());
    let mut test = file_change(&[(1, "    assert name == 'caf\u{fffd}'")]);
    test.path = "tests/test_legacy.py".into();
    test.unreadable = Some(why.into());
    let mut doc = file_change(&[(1, "caf\u{fffd}")]);
    doc.path = "docs/guide.md".into();
    doc.unreadable = Some(why.into());
    c.patch.files.extend([code, test, doc]);
    let r = c.run();
    let ev: Vec<_> = r
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.evidence, f.blind_reason.as_deref()))
        .collect();
    assert_eq!(
        ev,
        vec![
            (FILE, FileEvidence::Measured, None),
            ("src/shop/legacy.py", FileEvidence::Blind, Some(why)),
            ("tests/test_legacy.py", FileEvidence::Blind, Some(why)),
            ("docs/guide.md", FileEvidence::NotNeeded, None),
        ]
    );
    assert_eq!(r.verdict, Verdict::PassWithCaveat);
    assert_eq!(r.codes(), ["blind_lines"]);
}

const ELSEWHERE: &str = "tests/test_cart.py::test_total";

/// A case whose head run has `ELSEWHERE` failing: a test no changed line's coverage names.
fn elsewhere_fails(mut c: Case) -> Case {
    c.results = Some(results(&[
        (STABLE, Outcome::Passed),
        (FLAKY, Outcome::Passed),
        (ELSEWHERE, Outcome::Failed),
    ]));
    c.codeowners = Some(crate::gate::codeowners::CodeOwners::parse(
        "tests/test_cart.py @shop/cart\n",
    ));
    c
}

#[test]
fn a_head_failure_of_a_test_that_ran_no_changed_line_is_flaky_not_the_patchs() {
    let cov = || coverage(&[(10, &[(STABLE, RUN)])], &[]);
    let r = elsewhere_fails(Case::new(&[(10, "    total = a + b")], cov())).run();
    assert_eq!(r.codes(), ["flaky_unchanged"], "{:#?}", r.reasons);
    assert_eq!(r.verdict, Verdict::PassWithCaveat);
    let m = &r.reasons[0].message;
    assert!(
        m.contains(ELSEWHERE) && m.contains("@shop/cart") && m.contains("did not change"),
        "{m}"
    );
    let f = r.results.failures.iter().find(|f| f.test == ELSEWHERE).unwrap();
    assert!(!f.counts, "not counted as a stable test's failure");

    // Policy can make it block.
    let mut c = elsewhere_fails(Case::new(&[(10, "    total = a + b")], cov()));
    c.config =
        crate::gate::config::parse_config("c.yml", "policy:\n  signals:\n    flaky_unchanged: inconclusive\n").unwrap();
    assert_eq!(c.run().verdict, Verdict::Inconclusive);
}

#[test]
fn a_patch_that_could_have_reached_the_failing_test_still_fails() {
    // The failing test ran a changed line.
    let cov = coverage(&[(10, &[(STABLE, RUN), (ELSEWHERE, RUN)])], &[]);
    let mut c = elsewhere_fails(Case::new(&[(10, "    total = a + b")], cov));
    c.probe = Some(probe(5, &[(STABLE, 0), (FLAKY, 2), (FROZEN, 0), (ELSEWHERE, 0)]));
    let r = c.run();
    assert_eq!(r.codes()[0], "failed", "{:#?}", r.reasons);

    // A changed line ran at import time (a module constant every importer sees).
    let r = elsewhere_fails(Case::new(
        &[(3, "LIMIT = 10"), (9, "    return amount")],
        refunds_head_coverage(true),
    ))
    .run();
    assert_eq!(r.codes()[0], "failed", "{:#?}", r.reasons);

    // A changed file no coverage measures (a data file the test may read).
    let mut c = elsewhere_fails(Case::new(
        &[(10, "    total = a + b")],
        coverage(&[(10, &[(STABLE, RUN)])], &[]),
    ));
    let mut data = file_change(&[(1, "{\"rate\": 2}")]);
    data.path = "src/shop/rates.json".into();
    c.patch.files.push(data);
    let r = c.run();
    assert_eq!(r.codes()[0], "failed", "{:#?}", r.reasons);

    // A pure deletion in a measured file (what the test ran may be gone).
    let mut c = elsewhere_fails(Case::new(
        &[(10, "    total = a + b")],
        coverage(&[(10, &[(STABLE, RUN)])], &[]),
    ));
    c.patch.files[0].deletions.push(Deletion {
        old_start: 20,
        old_count: 1,
        after: 19,
        text: vec!["    audit(total)".into()],
    });
    let r = c.run();
    assert_eq!(r.codes()[0], "failed", "{:#?}", r.reasons);

    // Coverage without per-test contexts cannot say what the test ran.
    let mut cov = coverage(&[(10, &[(STABLE, RUN)])], &[]);
    cov.has_test_contexts = false;
    let r = elsewhere_fails(Case::new(&[(10, "    total = a + b")], cov)).run();
    assert!(r.codes().contains(&"failed"), "{:#?}", r.reasons);
}

/// A diff of `files` × `lines` changed lines, each file's line `j` witnessed (stably) by the
/// tests `pool[start(j) .. start(j) + per_line]` of that file's own pool of node ids.
fn big_case(files: usize, lines: u32, per_line: usize, start: impl Fn(u32) -> usize) -> Case {
    let mut cov = coverage(&[], &[]);
    cov.files.clear();
    let mut patch = Patch::default();
    let mut tests = Vec::new();
    for i in 0..files {
        let path = format!("src/shop/module_{i:03}.py");
        let mut fc = FileCoverage {
            has_statements: true,
            ..Default::default()
        };
        for j in 1..=lines {
            fc.executed.insert(j);
            let ws = fc.witnesses.entry(j).or_default();
            for k in start(j)..start(j) + per_line {
                let t = TestId::new(format!("tests/test_module_{i:03}.py::TestBehaviour::test_case_{k:04}"));
                ws.entry(t).or_default().insert(RUN);
            }
        }
        for ws in fc.witnesses.values() {
            tests.extend(ws.keys().cloned());
        }
        cov.files.insert(path.clone(), fc);
        let mut f = file_change(&(1..=lines).map(|j| (j, "    x = f(x)")).collect::<Vec<_>>());
        f.path = path;
        patch.files.push(f);
    }
    tests.sort();
    tests.dedup();
    let mut c = Case::new(&[], cov);
    c.patch = patch;
    c.ledger = Ok(Ledger::default());
    c.probe = None;
    c.results = Some(TestResults {
        tests: tests
            .into_iter()
            .map(|t| {
                let r = TestResult {
                    outcome: Outcome::Passed,
                    phase: None,
                    message: None,
                    source: "r.jsonl:1".into(),
                    reruns: 0,
                };
                (t, r)
            })
            .collect(),
        ..Default::default()
    });
    c
}

#[test]
fn a_huge_diffs_record_lists_a_few_witnesses_per_line_and_stays_small() {
    // 1,504 changed lines in 32 files; each line is run by 200 tests of its file: 6,400
    // witnesses, 300,800 line witnesses — listed in full, a record of tens of megabytes.
    let r = big_case(32, 47, 200, |_| 0).run();
    assert_eq!(r.codes(), ["all_stable"]);
    assert_eq!(r.witnesses.stable.len(), 6_400);
    let json = serde_json::to_string_pretty(&r).unwrap();
    assert!(json.len() < 2 << 20, "{} bytes", json.len());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["line_witness_limit"], 3);
    let f = &v["files"][7];
    let table = f["witnesses"].as_array().unwrap();
    for l in f["lines"].as_array().unwrap() {
        assert_eq!(l["witness_count"], 200);
        let listed: Vec<&str> = l["witnesses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| table[w["witness"].as_u64().unwrap() as usize]["test"].as_str().unwrap())
            .collect();
        // The first by node id, each once in the file's table.
        assert_eq!(
            listed,
            [0, 1, 2].map(|k| format!("tests/test_module_007.py::TestBehaviour::test_case_{k:04}"))
        );
    }
    assert_eq!(table.len(), 3);
    assert_eq!(table[0]["status"], "stable");

    // Lines whose first witnesses all differ fill the file's table: still about 2 MB.
    let r = big_case(32, 47, 150, |j| 3 * j as usize).run();
    let json = serde_json::to_string_pretty(&r).unwrap();
    assert!(json.len() < 2 << 20, "{} bytes", json.len());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["files"][0]["witnesses"].as_array().unwrap().len(), 3 * 47);

    // A small diff lists every witness of every line.
    let r = big_case(2, 10, 40, |_| 0).run();
    assert_eq!(r.line_witness_limit, None);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["line_witness_limit"], serde_json::Value::Null);
    assert_eq!(v["files"][1]["lines"][9]["witnesses"].as_array().unwrap().len(), 40);
    assert_eq!(v["files"][1]["witnesses"].as_array().unwrap().len(), 40);
}

#[test]
fn a_witness_the_probe_did_not_run_is_not_evidence() {
    // A witnesses-only probe that ran other tests than the patch's witnesses: STABLE has no
    // probe entry and no history knows it, so its stability is unknown — never a stable witness.
    let mut c = Case::new(&[(10, "    total = a + b")], coverage(&[(10, &[(STABLE, RUN)])], &[]));
    c.probe = Some(probe(5, &[(FLAKY, 0), (FROZEN, 0)]));
    let r = c.run();
    assert_eq!(r.verdict, Verdict::Inconclusive, "{:#?}", r.reasons);
    assert_eq!(r.codes()[0], "missing_evidence");
    assert_eq!(r.reasons[0].tests, [TestId::new(STABLE)]);
    assert!(
        r.reasons[0].message.contains("the probe did not run 1 witness"),
        "{}",
        r.reasons[0].message
    );
    // With it in the probe: PASS.
    c.probe = Some(probe(5, &[(STABLE, 0)]));
    assert_eq!(c.run().verdict, Verdict::Pass);
    // Without any probe, nothing says the probe skipped it (what a probe would add is said
    // elsewhere): judged as before.
    c.probe = None;
    assert_eq!(c.run().verdict, Verdict::Pass);
}
