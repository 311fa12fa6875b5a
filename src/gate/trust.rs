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
    use crate::gate::diff::{AddedLine, FileStatus};

    fn change(path: &str, lines: &[&str]) -> FileChange {
        FileChange {
            path: path.into(),
            old_path: None,
            status: FileStatus::Modified,
            binary: false,
            lines_known: true,
            added: lines
                .iter()
                .enumerate()
                .map(|(i, t)| AddedLine {
                    line: i as u32 + 1,
                    text: t.to_string(),
                })
                .collect(),
            deletions: vec![],
        }
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
