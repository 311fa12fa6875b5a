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
