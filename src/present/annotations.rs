//! The check run's annotations: blind lines (frozen-only, uncovered, excluded), blind files and
//! attributed blind deletions, and the places a trust rule or weakening signal names — most
//! important first, consecutive lines with the same witnesses merged, every field within
//! GitHub's limits.

use super::words::{capitalise, cut_chars, status_word};
use crate::gate::inert;
use crate::gate::report::{FileEvidence, FileReport, LineClass, LineWitness, Report, WitnessStatus};
use crate::github::{
    Annotation, AnnotationLevel, ANNOTATION_MESSAGE_MAX_BYTES, ANNOTATION_RAW_DETAILS_MAX_BYTES,
    ANNOTATION_TITLE_MAX_CHARS,
};
use std::collections::{BTreeMap, BTreeSet};

/// Witnesses named in one annotation's message before "and N more".
const WITNESSES_NAMED: usize = 10;

/// Sorted `(test, status)` pairs of a line's witnesses.
type WitnessKey = Vec<(String, WitnessStatus)>;

/// A line's witnesses as sorted `(test, status)` pairs: the merge key.
fn witness_key(ws: &[LineWitness]) -> WitnessKey {
    let set: BTreeSet<(String, WitnessStatus)> = ws.iter().map(|w| (w.test.as_str().to_string(), w.status)).collect();
    set.into_iter().collect()
}

/// The witnesses, plain text (GitHub shows an annotation's markup as it is); a witness no
/// probe measured is "not probed", never "stable".
fn name_witnesses(key: &[(String, WitnessStatus)], probed: bool) -> String {
    let mut names: Vec<String> = key
        .iter()
        .take(WITNESSES_NAMED)
        .map(|(t, s)| {
            let word = match s {
                WitnessStatus::Stable if !probed => "not probed",
                s => status_word(*s),
            };
            format!("{} ({word})", inert::one_line(t, inert::CODE_MAX_CHARS))
        })
        .collect();
    if key.len() > WITNESSES_NAMED {
        names.push(format!("and {} more", key.len() - WITNESSES_NAMED));
    }
    names.join(", ")
}

fn span(start: u32, end: u32) -> String {
    if start == end {
        format!("line {start}")
    } else {
        format!("lines {start}-{end}")
    }
}

/// Ranges of consecutive lines of `class` in `f` with the same witnesses.
fn runs(f: &FileReport, lines: &[u32]) -> Vec<(u32, u32, WitnessKey)> {
    let by_line: BTreeMap<u32, &[LineWitness]> = f.lines.iter().map(|l| (l.line, l.witnesses.as_slice())).collect();
    let sorted: BTreeSet<u32> = lines.iter().copied().collect();
    let mut out: Vec<(u32, u32, WitnessKey)> = Vec::new();
    for line in sorted {
        let key = witness_key(by_line.get(&line).copied().unwrap_or(&[]));
        match out.last_mut() {
            Some((_, end, k)) if *end + 1 == line && *k == key => *end = line,
            _ => out.push((line, line, key)),
        }
    }
    out
}

/// Annotations on the blind lines, most important first: frozen-only lines,
/// then uncovered, then excluded, then blind files, then attributed blind
/// deletions; within a class in file order, then by line.
pub fn annotations(report: &Report) -> Vec<Annotation> {
    let blocks = report.verdict.blocks();
    let probed = report.probe.is_some();
    let (mut out, caveats) = patch_reason_annotations(report);
    for f in &report.files {
        for (start, end, key) in runs(f, &f.frozen_only_lines) {
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: start,
                end_line: end,
                annotation_level: if blocks {
                    AnnotationLevel::Failure
                } else {
                    AnnotationLevel::Warning
                },
                title: Some(format!("Frozen-only: {}", span(start, end))),
                message: format!(
                    "Only tests that are not evidence execute {}: {}. A green run of them says nothing about this change. Add a stable test that executes it, or have the owners fix the tests and remove their freeze.",
                    span(start, end),
                    if key.is_empty() { "no test executes this line".to_string() } else { name_witnesses(&key, probed) }
                ),
            });
        }
    }
    for f in &report.files {
        for (start, end, _) in runs(f, &f.uncovered_lines) {
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: start,
                end_line: end,
                annotation_level: AnnotationLevel::Warning,
                title: Some(format!("Uncovered: {}", span(start, end))),
                message: format!(
                    "No test executes this line ({} changed by this patch). Add a test that exercises it.",
                    span(start, end)
                ),
            });
        }
    }
    for f in &report.files {
        for (start, end, key) in runs(f, &f.excluded_lines) {
            let who = if key.is_empty() {
                String::new()
            } else {
                format!(" (recorded witnesses: {})", name_witnesses(&key, probed))
            };
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: start,
                end_line: end,
                annotation_level: AnnotationLevel::Warning,
                title: Some(format!("Excluded from coverage: {}", span(start, end))),
                message: format!(
                    "{} is excluded from coverage measurement (for example # pragma: no cover), so no test can witness it{who}. Remove the exclusion and cover it with a test.",
                    capitalise(&span(start, end))
                ),
            });
        }
    }
    for f in &report.files {
        if f.evidence == FileEvidence::Blind {
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: 1,
                end_line: 1,
                annotation_level: AnnotationLevel::Warning,
                title: Some("Blind file".into()),
                message: format!(
                    "No test can witness this file's change: {}. Make it measurable (for example include it in coverage) or list it in policy.no_evidence_paths if it truly needs no evidence.",
                    inert::plain(f.blind_reason.as_deref().unwrap_or("no evidence can exist for it"), inert::TEXT_MAX_CHARS)
                ),
            });
        }
    }
    for f in &report.files {
        for d in &f.deletions {
            let Some(class) = d.class.filter(|c| d.attributed && c.is_blind()) else {
                continue;
            };
            let line = d.after.max(1);
            let old_end = d.old_start + d.old_count.saturating_sub(1);
            let how = match class {
                LineClass::FrozenOnly => "only tests that are not evidence execute the lines around it",
                LineClass::Excluded => "the lines around it are excluded from coverage",
                _ => "no test executes the lines around it",
            };
            out.push(Annotation {
                path: f.path.clone(),
                raw_details: None,
                start_line: line,
                end_line: line,
                annotation_level: AnnotationLevel::Notice,
                title: Some("Blind deletion".into()),
                message: format!(
                    "Old lines {}-{old_end} were deleted here and {how}. Add a stable test that executes this code.",
                    d.old_start
                ),
            });
        }
    }
    out.extend(caveats);
    out.into_iter().map(within_limits).collect()
}

/// What ends an annotation field cut to GitHub's limit.
const ANNOTATION_CUT: &str = "\n… cut here: GitHub takes at most 64 KiB here; the check run's summary has the rest.";

/// `a` within GitHub's limits on an annotation (a reason may quote a changed line of any
/// length): message and raw details cut at a character boundary with a note, the title cut
/// with `…`.
fn within_limits(mut a: Annotation) -> Annotation {
    a.message = inert::cap_bytes(&a.message, ANNOTATION_MESSAGE_MAX_BYTES, ANNOTATION_CUT);
    a.raw_details = a
        .raw_details
        .map(|r| inert::cap_bytes(&r, ANNOTATION_RAW_DETAILS_MAX_BYTES, ANNOTATION_CUT));
    a.title = a.title.map(|t| cut_chars(&t, ANNOTATION_TITLE_MAX_CHARS));
    a
}

/// Annotations at the places a trust rule or weakening signal names (a weakened assert, an
/// edited workflow, a self-witnessed line): the blocking ones, which lead the list, and the
/// caveats, which close it. Only places in files the patch leaves in the head tree can be
/// annotated; the rest (a deleted test file, the evidence's own meta.json) are in the summary.
fn patch_reason_annotations(report: &Report) -> (Vec<Annotation>, Vec<Annotation>) {
    let annotatable: BTreeSet<&str> = report
        .files
        .iter()
        .filter(|f| f.status != crate::gate::patch::FileStatus::Deleted)
        .map(|f| f.path.as_str())
        .collect();
    let (mut blocking, mut caveats) = (Vec::new(), Vec::new());
    for r in report.reasons.iter().filter(|r| r.code.is_about_the_patchs_evidence()) {
        let mut seen = BTreeSet::new();
        for l in &r.locations {
            if !annotatable.contains(l.file.as_str()) {
                continue;
            }
            let line = l.line.unwrap_or(1).max(1) as u32;
            if !seen.insert((l.file.clone(), line)) {
                continue;
            }
            let a = Annotation {
                path: l.file.clone(),
                raw_details: None,
                start_line: line,
                end_line: line,
                annotation_level: if r.verdict.blocks() {
                    AnnotationLevel::Failure
                } else {
                    AnnotationLevel::Warning
                },
                title: Some(format!(
                    "{}: {}",
                    r.code.as_str(),
                    if l.line.is_some() {
                        format!("line {line}")
                    } else {
                        "file".into()
                    }
                )),
                message: inert::plain(&r.message, ANNOTATION_MESSAGE_MAX_BYTES),
            };
            if r.verdict.blocks() {
                blocking.push(a);
            } else {
                caveats.push(a);
            }
        }
    }
    (blocking, caveats)
}

#[cfg(test)]
mod tests;
