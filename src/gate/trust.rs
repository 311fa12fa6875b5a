//! Trust: a patch must not be able to weaken its own gate. This module owns
//! the rule that evidence produced under configuration the patch itself
//! changes is not trusted (DESIGN.md, "Trust": `evidence_config_changed`).
//!
//! It looks only at the patch: the workflow files, the coverage and pytest
//! configuration, the flakegate config, and `# pragma: no cover` added to code.

use crate::gate::diff::{FileChange, Patch};
use crate::gate::report::{Reason, ReasonCode};
use crate::gate::Location;

/// Keys whose change alters what coverage measures or which tests pytest collects.
const EVIDENCE_KEYS: &[&str] = &[
    "[tool.coverage",
    "[coverage:",
    "[tool.pytest",
    "[tool:pytest",
    "[pytest]",
    "omit",
    "exclude_lines",
    "exclude_also",
    "relative_files",
    "dynamic_context",
    "--cov",
    "addopts",
    "testpaths",
    "python_files",
    "python_functions",
    "python_classes",
    "norecursedirs",
    "collect_ignore",
    "pytest_collection_modifyitems",
    "pytest_ignore_collect",
];

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Every text line the patch adds or (purely) deletes in this file.
fn touched_text(fc: &FileChange) -> impl Iterator<Item = (Option<u32>, &str)> {
    fc.added.iter().map(|l| (Some(l.line), l.text.as_str())).chain(
        fc.deletions
            .iter()
            .flat_map(|d| d.text.iter().map(|t| (None, t.as_str()))),
    )
}

/// Why this file's change makes the evidence untrustworthy, if it does.
fn controls_evidence(fc: &FileChange, config_path: &str) -> Option<(String, Option<u32>)> {
    let path = fc.path.as_str();
    let paths = std::iter::once(path).chain(fc.old_path.as_deref());
    for p in paths {
        if p.starts_with(".github/workflows/") {
            return Some((
                format!("{p} is a CI workflow: the evidence may have been produced by the workflow this patch changed"),
                None,
            ));
        }
        if p == config_path || p == ".github/flakegate.yml" {
            return Some((
                format!("{p} is flakegate's own configuration, which the patch may not change for itself"),
                None,
            ));
        }
        if matches!(file_name(p), ".coveragerc" | "pytest.ini") {
            return Some((format!("{p} configures coverage or test collection"), None));
        }
    }
    let name = file_name(path);
    if matches!(name, "pyproject.toml" | "setup.cfg" | "tox.ini" | "conftest.py") {
        if let Some((line, text)) = touched_text(fc).find(|(_, t)| EVIDENCE_KEYS.iter().any(|k| t.contains(k))) {
            return Some((
                format!("{path} changes coverage or collection settings ({})", text.trim()),
                line,
            ));
        }
    }
    if name.ends_with(".py") {
        if let Some(l) = fc
            .added
            .iter()
            .find(|l| l.text.contains("pragma: no cover") || l.text.contains("pragma:no cover"))
        {
            return Some((
                format!(
                    "{path}:{} excludes changed code from coverage (`# pragma: no cover`)",
                    l.line
                ),
                Some(l.line),
            ));
        }
    }
    None
}

/// `evidence_config_changed` reasons for a patch (INCONCLUSIVE, each naming the file).
pub fn evidence_config_changes(patch: &Patch, config_path: &str) -> Vec<Reason> {
    patch
        .files
        .iter()
        .filter_map(|fc| {
            let (why, line) = controls_evidence(fc, config_path)?;
            let loc = match line {
                Some(l) => Location::at(fc.path.clone(), l as usize, None),
                None => Location::file(fc.path.clone()),
            };
            Some(
                Reason::new(
                    ReasonCode::EvidenceConfigChanged,
                    format!("evidence not trusted: {why}; land that change on its own first, then this patch is judged under it"),
                )
                .at(vec![loc]),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::diff::FileStatus;

    fn change(path: &str, lines: &[&str]) -> FileChange {
        super::weakening_tests::fc(path, lines, &[])
    }

    #[test]
    fn what_controls_the_evidence() {
        let cases: &[(&str, &[&str], bool)] = &[
            (".github/workflows/ci.yml", &["  run: pytest"], true),
            (".github/flakegate.yml", &["policy: {}"], true),
            (".coveragerc", &["omit = src/shop/refunds.py"], true),
            ("sub/pytest.ini", &["addopts = -q"], true),
            ("pyproject.toml", &["omit = [\"src/shop/refunds.py\"]"], true),
            ("pyproject.toml", &["version = \"1.2.0\""], false),
            ("setup.cfg", &["[coverage:run]"], true),
            ("tests/conftest.py", &["collect_ignore = [\"test_refunds.py\"]"], true),
            ("tests/conftest.py", &["    return Cart()"], false),
            ("src/shop/refunds.py", &["    if x:  # pragma: no cover"], true),
            ("src/shop/refunds.py", &["    return round(x, 2)"], false),
            ("docs/workflows.md", &["see .github/workflows"], false),
        ];
        for (path, lines, flagged) in cases {
            let patch = Patch {
                files: vec![change(path, lines)],
            };
            let got = evidence_config_changes(&patch, ".github/flakegate.yml");
            assert_eq!(!got.is_empty(), *flagged, "{path} {lines:?}: {got:?}");
            if *flagged {
                assert_eq!(got[0].code.as_str(), "evidence_config_changed");
                assert!(got[0].message.contains(path), "{}", got[0].message);
            }
        }
    }

    #[test]
    fn a_renamed_workflow_counts_by_its_old_path() {
        let mut fc = change("ci-old.yml", &[]);
        fc.old_path = Some(".github/workflows/ci.yml".into());
        fc.status = FileStatus::Renamed;
        assert_eq!(
            evidence_config_changes(&Patch { files: vec![fc] }, ".github/flakegate.yml").len(),
            1
        );
    }
}

/// How the patch changes one ledger entry (the base ledger is the one in force).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerChangeKind {
    Added,
    Removed,
    /// `expires` moved later.
    Extended,
    OwnerChanged,
    /// Anything else (reason, observed, an earlier expiry).
    Edited,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LedgerChange {
    pub test: String,
    pub kind: LedgerChangeKind,
    /// What changed, in words: "expires 2026-12-09 → 2027-03-01".
    pub detail: String,
    /// The entry's line in the head ledger (0 for a removal).
    pub line: usize,
}

impl LedgerChange {
    /// Does this change make a test frozen (or frozen for longer) than the base says?
    pub fn freezes_more(&self) -> bool {
        matches!(self.kind, LedgerChangeKind::Added | LedgerChangeKind::Extended)
    }
}

/// The patch's ledger edits, entry by entry, sorted by test.
pub fn ledger_changes(base: &crate::gate::Ledger, head: &crate::gate::Ledger) -> Vec<LedgerChange> {
    use std::collections::BTreeMap;
    let b: BTreeMap<&str, &crate::gate::FreezeEntry> = base.entries.iter().map(|e| (e.test.as_str(), e)).collect();
    let h: BTreeMap<&str, &crate::gate::FreezeEntry> = head.entries.iter().map(|e| (e.test.as_str(), e)).collect();
    let mut out = Vec::new();
    for (test, he) in &h {
        match b.get(test) {
            None => out.push(LedgerChange {
                test: test.to_string(),
                kind: LedgerChangeKind::Added,
                detail: format!("frozen until {} (owner {})", he.expires, he.owner),
                line: he.line,
            }),
            Some(be) => {
                let (kind, detail) = if he.expires > be.expires {
                    (
                        LedgerChangeKind::Extended,
                        format!("expires {} → {}", be.expires, he.expires),
                    )
                } else if he.owner != be.owner {
                    (
                        LedgerChangeKind::OwnerChanged,
                        format!("owner {} → {}", be.owner, he.owner),
                    )
                } else if he.expires != be.expires
                    || he.reason != be.reason
                    || he.observed != be.observed
                    || he.frozen_at != be.frozen_at
                {
                    (
                        LedgerChangeKind::Edited,
                        "reason, observation or dates edited".to_string(),
                    )
                } else {
                    continue;
                };
                out.push(LedgerChange {
                    test: test.to_string(),
                    kind,
                    detail,
                    line: he.line,
                });
            }
        }
    }
    for (test, be) in &b {
        if !h.contains_key(test) {
            out.push(LedgerChange {
                test: test.to_string(),
                kind: LedgerChangeKind::Removed,
                detail: format!("was frozen until {} (owner {})", be.expires, be.owner),
                line: 0,
            });
        }
    }
    out.sort_by(|a, b| a.test.cmp(&b.test));
    out
}

#[cfg(test)]
mod ledger_change_tests {
    use super::*;
    use crate::gate::{FreezeEntry, Ledger};

    fn e(test: &str, owner: &str, expires: &str) -> FreezeEntry {
        FreezeEntry {
            test: test.into(),
            observed: None,
            reason: None,
            owner: owner.into(),
            frozen_at: None,
            expires: expires.parse().unwrap(),
            line: 2,
        }
    }

    #[test]
    fn entry_by_entry() {
        let base = Ledger {
            entries: vec![
                e("t.py::a", "x", "2026-12-01"),
                e("t.py::b", "x", "2026-12-01"),
                e("t.py::c", "x", "2026-12-01"),
                e("t.py::d", "x", "2026-12-01"),
            ],
        };
        let head = Ledger {
            entries: vec![
                e("t.py::a", "x", "2027-01-01"),
                e("t.py::b", "y", "2026-12-01"),
                e("t.py::d", "x", "2026-12-01"),
                e("t.py::n", "z", "2026-12-24"),
            ],
        };
        let got: Vec<(String, LedgerChangeKind)> = ledger_changes(&base, &head)
            .into_iter()
            .map(|c| (c.test, c.kind))
            .collect();
        assert_eq!(
            got,
            vec![
                ("t.py::a".into(), LedgerChangeKind::Extended),
                ("t.py::b".into(), LedgerChangeKind::OwnerChanged),
                ("t.py::c".into(), LedgerChangeKind::Removed),
                ("t.py::n".into(), LedgerChangeKind::Added),
            ]
        );
        assert!(ledger_changes(&base, &base).is_empty());
    }
}

/// Is this a pytest test file (or its configuration)?
pub fn is_test_file(path: &str) -> bool {
    let name = file_name(path);
    name.ends_with(".py")
        && (path.starts_with("tests/")
            || path.contains("/tests/")
            || name.starts_with("test_")
            || name.ends_with("_test.py")
            || name == "conftest.py")
}

/// One way the patch weakens a test, with where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weakening {
    pub location: Location,
    pub what: String,
}

/// Added lines that weaken a test: (needles, what it is). Matched on the line's code,
/// not on comments.
const WEAKENING_ADDED: &[(&[&str], &str)] = &[
    (
        &[
            "mark.flaky",
            "@flaky",
            "reruns=",
            "rerunfailures",
            "@retry",
            "tenacity",
            "backoff.on_exception",
        ],
        "adds retries",
    ),
    (&["time.sleep(", "asyncio.sleep(", " sleep("], "adds a sleep"),
    (
        &[
            "mark.skip",
            "mark.xfail",
            "pytest.skip(",
            "pytest.xfail(",
            "unittest.skip",
            "@skip",
            "pytest.importorskip(",
        ],
        "adds a skip or xfail",
    ),
];

fn code_part(text: &str) -> &str {
    // Good enough for the signals: cut at a `#` that is not inside quotes.
    let mut in_s: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (in_s, c) {
            (None, '#') => return &text[..i],
            (None, '\'' | '"') => in_s = Some(c),
            (Some(q), c) if c == q => in_s = None,
            _ => {}
        }
    }
    text
}

fn is_assert(text: &str) -> bool {
    let t = code_part(text).trim_start();
    t.starts_with("assert ") || t.starts_with("assert(") || t.contains("self.assert") || t.contains("pytest.raises(")
}

fn widens_tolerance(text: &str) -> bool {
    let t = code_part(text);
    (t.contains("approx(") && (t.contains("rel=") || t.contains("abs=")))
        || (t.contains("assertAlmostEqual(") && (t.contains("places=") || t.contains("delta=")))
        || (t.contains("isclose(") && (t.contains("rel_tol=") || t.contains("abs_tol=")))
}

fn test_def_name(text: &str) -> Option<&str> {
    let t = code_part(text).trim_start();
    let t = t.strip_prefix("async ").unwrap_or(t);
    let rest = t.strip_prefix("def ")?;
    let name = &rest[..rest.find('(')?];
    name.starts_with("test").then_some(name)
}

/// Every way the patch weakens its test files (`weakened_test`).
pub fn weakenings(patch: &Patch) -> Vec<Weakening> {
    let mut out = Vec::new();
    for fc in patch
        .files
        .iter()
        .filter(|f| is_test_file(&f.path) || f.old_path.as_deref().is_some_and(is_test_file))
    {
        let at = |line: u32| Location::at(fc.path.clone(), line as usize, None);
        if fc.status == crate::gate::diff::FileStatus::Deleted {
            out.push(Weakening {
                location: Location::file(fc.path.clone()),
                what: "deletes a test file".into(),
            });
            continue;
        }
        for l in &fc.added {
            let code = code_part(&l.text);
            for (needles, what) in WEAKENING_ADDED {
                if needles.iter().any(|n| code.contains(n)) {
                    out.push(Weakening {
                        location: at(l.line),
                        what: format!("{what}: `{}`", l.text.trim()),
                    });
                }
            }
            if widens_tolerance(&l.text) && !fc.removed.iter().any(|r| r.text.trim() == l.text.trim()) {
                out.push(Weakening {
                    location: at(l.line),
                    what: format!("sets a tolerance: `{}`", l.text.trim()),
                });
            }
        }
        // Assertions removed: more assert lines leave than arrive.
        let removed_asserts: Vec<_> = fc.removed.iter().filter(|r| is_assert(&r.text)).collect();
        let added_asserts = fc.added.iter().filter(|a| is_assert(&a.text)).count();
        if removed_asserts.len() > added_asserts {
            let first = removed_asserts[0];
            out.push(Weakening {
                location: Location::at(format!("{} (base)", fc.path), first.line as usize, None),
                what: format!(
                    "removes {} assertion{} (e.g. `{}`)",
                    removed_asserts.len() - added_asserts,
                    if removed_asserts.len() - added_asserts == 1 {
                        ""
                    } else {
                        "s"
                    },
                    first.text.trim()
                ),
            });
        }
        // Test functions deleted.
        let added_defs: Vec<&str> = fc.added.iter().filter_map(|a| test_def_name(&a.text)).collect();
        for r in &fc.removed {
            if let Some(name) = test_def_name(&r.text) {
                if !added_defs.contains(&name) {
                    out.push(Weakening {
                        location: Location::at(format!("{} (base)", fc.path), r.line as usize, None),
                        what: format!("deletes the test `{name}`"),
                    });
                }
            }
        }
    }
    out
}

/// Tests the patch itself adds: a new test file's tests, and `def test_…` lines it adds.
/// (A test whose body alone changes is not seen: the diff does not say which
/// function a hunk is in.)
pub fn tests_added_by(patch: &Patch, test: &crate::gate::TestId) -> bool {
    let file = test.file();
    let Some(fc) = patch.files.iter().find(|f| f.path == file) else {
        return false;
    };
    if fc.status == crate::gate::diff::FileStatus::Added {
        return true;
    }
    let name = test.base().rsplit("::").next().unwrap_or("");
    fc.added.iter().any(|a| test_def_name(&a.text) == Some(name))
}

#[cfg(test)]
mod weakening_tests {
    use super::*;
    use crate::gate::diff::{AddedLine, FileStatus, RemovedLine};

    pub(super) fn fc(path: &str, added: &[&str], removed: &[&str]) -> FileChange {
        FileChange {
            path: path.into(),
            old_path: None,
            status: FileStatus::Modified,
            binary: false,
            lines_known: true,
            added: added
                .iter()
                .enumerate()
                .map(|(i, t)| AddedLine {
                    line: i as u32 + 10,
                    text: t.to_string(),
                })
                .collect(),
            deletions: vec![],
            removed: removed
                .iter()
                .enumerate()
                .map(|(i, t)| RemovedLine {
                    line: i as u32 + 10,
                    text: t.to_string(),
                })
                .collect(),
        }
    }

    fn whats(f: FileChange) -> Vec<String> {
        weakenings(&Patch { files: vec![f] })
            .into_iter()
            .map(|w| w.what)
            .collect()
    }

    #[test]
    fn signals() {
        let t = "tests/test_refunds.py";
        let flagged: &[(&[&str], &[&str], &str)] = &[
            (&["@pytest.mark.flaky(reruns=3)"], &[], "adds retries"),
            (&["    time.sleep(0.5)"], &[], "adds a sleep"),
            (&["@pytest.mark.xfail(reason='flaky')"], &[], "adds a skip or xfail"),
            (&["@pytest.mark.skipif(True, reason='x')"], &[], "adds a skip or xfail"),
            (
                &["    assert total == pytest.approx(10, rel=0.5)"],
                &["    assert total == 10"],
                "sets a tolerance",
            ),
            (&[], &["    assert refund == 5"], "removes 1 assertion"),
            (
                &[],
                &["def test_refund_amount():"],
                "deletes the test `test_refund_amount`",
            ),
        ];
        for (added, removed, want) in flagged {
            let got = whats(fc(t, added, removed));
            assert!(
                got.iter().any(|w| w.starts_with(want)),
                "{added:?} {removed:?}: {got:?}"
            );
        }
        // Honest edits stay quiet.
        let quiet: &[(&[&str], &[&str])] = &[
            (&["    assert refund == 6"], &["    assert refund == 5"]),
            (&["def test_new_case():", "    assert f(2) == 4"], &[]),
            (&["    # time.sleep is not needed here"], &[]),
        ];
        for (added, removed) in quiet {
            assert_eq!(
                whats(fc(t, added, removed)),
                Vec::<String>::new(),
                "{added:?} {removed:?}"
            );
        }
        // Not a test file: not a test weakening.
        assert!(whats(fc("src/shop/refunds.py", &["    time.sleep(1)"], &[])).is_empty());
        let mut gone = fc(t, &[], &[]);
        gone.status = FileStatus::Deleted;
        assert_eq!(whats(gone), ["deletes a test file"]);
    }

    #[test]
    fn tests_the_patch_adds() {
        let p = Patch {
            files: vec![fc("tests/test_a.py", &["def test_new(x):", "    assert x"], &[])],
        };
        assert!(tests_added_by(
            &p,
            &crate::gate::TestId::new("tests/test_a.py::test_new[1]")
        ));
        assert!(!tests_added_by(
            &p,
            &crate::gate::TestId::new("tests/test_a.py::test_old")
        ));
        assert!(!tests_added_by(
            &p,
            &crate::gate::TestId::new("tests/test_b.py::test_new")
        ));
    }
}
