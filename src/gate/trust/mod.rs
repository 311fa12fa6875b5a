//! Trust: a patch must not be able to weaken its own gate. This file owns the
//! rule that evidence produced under configuration the patch itself changes is
//! not trusted (`evidence_config_changed`, row 1 of the decision table in the
//! README's "How it decides"). It looks only at the patch: the workflow files,
//! the coverage and pytest configuration, the flakegate config, and
//! `# pragma: no cover` added to code; [`tooling`] adds pytest hooks and
//! plugins, the test tooling in dependency files and code that writes the
//! evidence.
//!
//! [`weakening`] finds what the patch does to its tests (`weakened_test`, and
//! which tests it touches, for `self_witness`), [`checks`] the checks it defeats in place,
//! and [`substance`] the tests it empties while they still pass (stand-ins, computed
//! expectations, demoted assertions, removed cases), reading the head's test code parsed
//! ([`python`], [`support`]); the patch's edits of the ledger are diffed in `ledger.rs`.

pub mod checks;
pub mod python;
pub mod substance;
pub mod support;
pub mod tooling;
pub mod weakening;

use crate::gate::error::Location;
use crate::gate::patch::{FileChange, Patch};
use crate::gate::report::{Reason, ReasonCode};

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

/// The workflow file path in the form the patch names it: `./` and a
/// `@ref` suffix dropped, and an `owner/repo/` prefix (`github.workflow_ref`) cut.
pub fn normalize_workflow(w: &str) -> Option<String> {
    let w = w.trim();
    let w = w.split_once('@').map_or(w, |(p, _)| p);
    let w = w.strip_prefix("./").unwrap_or(w);
    let w = match w.find("/.github/") {
        Some(i) if !w.starts_with(".github/") => &w[i + 1..],
        _ => w,
    };
    (!w.is_empty()).then(|| w.to_string())
}

/// What the patch's change to one file means for the evidence.
enum Control {
    /// The evidence is not trusted: why, and the line when there is one.
    Distrust(String, Option<u32>),
    /// Worth a note, not a reason (another workflow than the evidence's).
    Note(String),
}

/// Why this file's change makes the evidence untrustworthy, if it does.
/// `workflow` is the workflow file that produced the evidence, when known.
fn controls_evidence(fc: &FileChange, config_path: &str, workflow: Option<&str>) -> Option<Control> {
    let path = fc.path.as_str();
    let paths = std::iter::once(path).chain(fc.old_path.as_deref());
    let mut note = None;
    for p in paths {
        match workflow {
            Some(wf) if p == wf => {
                return Some(Control::Distrust(
                    format!("{p} is the workflow that produced the evidence, and the patch changes it"),
                    None,
                ));
            }
            Some(wf) if p.starts_with(".github/actions/") => {
                return Some(Control::Distrust(
                    format!("{p} is a local action that the workflow which produced the evidence ({wf}) can run"),
                    None,
                ));
            }
            Some(wf) if p.starts_with(".github/workflows/") => {
                note = Some(Control::Note(format!(
                    "the patch changes the CI workflow {p}; the evidence came from {wf}, so that edit does not affect it"
                )));
            }
            None if p.starts_with(".github/workflows/") => {
                return Some(Control::Distrust(
                    format!(
                        "{p} is a CI workflow: the evidence may have been produced by the workflow this patch changed"
                    ),
                    None,
                ));
            }
            _ => {}
        }
        if p == config_path || p == ".github/flakegate.yml" {
            return Some(Control::Distrust(
                format!("{p} is flakegate's own configuration, which the patch may not change for itself"),
                None,
            ));
        }
        if matches!(file_name(p), ".coveragerc" | "pytest.ini") {
            return Some(Control::Distrust(
                format!("{p} configures coverage or test collection"),
                None,
            ));
        }
    }
    if note.is_some() {
        return note;
    }
    let name = file_name(path);
    if matches!(name, "pyproject.toml" | "setup.cfg" | "tox.ini" | "conftest.py") {
        if let Some((line, text)) = touched_text(fc).find(|(_, t)| EVIDENCE_KEYS.iter().any(|k| t.contains(k))) {
            return Some(Control::Distrust(
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
            return Some(Control::Distrust(
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

/// `evidence_config_changed` reasons for a patch (INCONCLUSIVE, each naming the
/// file), and notes about changes that do not touch the evidence.
///
/// `workflow` is the workflow file that produced the evidence. When it is
/// known, only an edit of that file or of a local action (`.github/actions/`)
/// distrusts the evidence, and an edit of any other workflow is a note; when
/// it is unknown, an edit of any `.github/workflows/` file distrusts it.
pub fn evidence_config_changes(patch: &Patch, config_path: &str, workflow: Option<&str>) -> (Vec<Reason>, Vec<String>) {
    let workflow = workflow.and_then(normalize_workflow);
    let mut reasons = Vec::new();
    let mut notes = Vec::new();
    for fc in &patch.files {
        match controls_evidence(fc, config_path, workflow.as_deref()) {
            Some(Control::Distrust(why, line)) => {
                let loc = match line {
                    Some(l) => Location::at(fc.path.clone(), l as usize, None),
                    None => Location::file(fc.path.clone()),
                };
                reasons.push(
                    Reason::new(
                        ReasonCode::EvidenceConfigChanged,
                        format!("evidence not trusted: {why}; land that change on its own first, then this patch is judged under it"),
                    )
                    .at(vec![loc]),
                );
            }
            Some(Control::Note(n)) => notes.push(n),
            None => {}
        }
        let t = tooling::tooling(fc);
        if !t.distrust.is_empty() {
            let at = |f: &tooling::Finding| match f.line {
                Some(l) => Location::at(fc.path.clone(), l as usize, None),
                None => Location::file(fc.path.clone()),
            };
            let list: Vec<String> = t
                .distrust
                .iter()
                .take(3)
                .map(|f| format!("{} {}", at(f), f.what))
                .collect();
            let more = match t.distrust.len() {
                n if n > 3 => format!("; and {} more", n - 3),
                _ => String::new(),
            };
            reasons.push(
                Reason::new(
                    ReasonCode::EvidenceConfigChanged,
                    format!(
                        "evidence not trusted: {}{more}; land that change on its own first, then this patch is judged under it",
                        list.join("; ")
                    ),
                )
                .at(t.distrust.iter().map(at).collect()),
            );
        }
        notes.extend(t.notes);
    }
    (reasons, notes)
}

/// Dependency manifests the trust rules read (requirements, pyproject.toml,
/// setup.cfg, tox.ini, Pipfile, lock files): they need no test evidence themselves.
pub fn is_dependency_file(path: &str) -> bool {
    tooling::is_dependency_manifest(path)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::patch::FileStatus;

    fn change(path: &str, lines: &[&str]) -> FileChange {
        crate::gate::patch::test_support::file_change(path, lines, &[])
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
            let (got, _) = evidence_config_changes(&patch, ".github/flakegate.yml", None);
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
            evidence_config_changes(&Patch { files: vec![fc] }, ".github/flakegate.yml", None)
                .0
                .len(),
            1
        );
    }

    #[test]
    fn a_known_evidence_workflow_narrows_what_counts() {
        let wf = Some(".github/workflows/flakegate-evidence.yml");
        let patch = |path: &str| Patch {
            files: vec![change(path, &["  run: pytest -x"])],
        };
        // The evidence's own workflow, and local actions it can run: not trusted, named as such.
        for (path, says) in [
            (
                ".github/workflows/flakegate-evidence.yml",
                "is the workflow that produced the evidence",
            ),
            (".github/actions/setup/action.yml", "local action"),
        ] {
            let (r, notes) = evidence_config_changes(&patch(path), ".github/flakegate.yml", wf);
            assert_eq!(r.len(), 1, "{path}");
            assert!(
                r[0].message.contains(path) && r[0].message.contains(says),
                "{}",
                r[0].message
            );
            assert!(notes.is_empty());
        }
        // Another workflow: a note, not a reason (a false alarm is a defect).
        let (r, notes) = evidence_config_changes(&patch(".github/workflows/release.yml"), ".github/flakegate.yml", wf);
        assert!(r.is_empty(), "{r:?}");
        assert!(notes[0].contains(".github/workflows/release.yml"), "{notes:?}");
        // Unknown: every workflow counts, local actions as before do not.
        let (r, _) = evidence_config_changes(&patch(".github/workflows/release.yml"), ".github/flakegate.yml", None);
        assert_eq!(r.len(), 1);
        let (r, _) = evidence_config_changes(
            &patch(".github/actions/setup/action.yml"),
            ".github/flakegate.yml",
            None,
        );
        assert!(r.is_empty());
        // The workflow as github.workflow_ref writes it.
        let (r, _) = evidence_config_changes(
            &patch(".github/workflows/flakegate-evidence.yml"),
            ".github/flakegate.yml",
            Some("acme/shop/.github/workflows/flakegate-evidence.yml@refs/pull/7/merge"),
        );
        assert_eq!(r.len(), 1);
        // The flakegate config still counts with a known workflow.
        let (r, _) = evidence_config_changes(&patch(".github/flakegate.yml"), ".github/flakegate.yml", wf);
        assert_eq!(r.len(), 1);
    }
}
