//! The reason-code table against itself, against what it replaced, and against the
//! codes table of the docs.

use super::*;
use std::path::{Path, PathBuf};

#[test]
fn each_code_reads_as_it_always_has() {
    use ReasonCode::*;
    let rows: Vec<(&str, Verdict, Option<&str>, bool)> = ReasonCode::ALL
        .iter()
        .map(|c| {
            (
                c.as_str(),
                c.verdict(),
                c.signal().map(Signal::as_str),
                c.is_about_the_patchs_evidence(),
            )
        })
        .collect();
    use Verdict::*;
    assert_eq!(
        rows,
        [
            ("missing_evidence", Inconclusive, None, false),
            ("evidence_config_changed", Inconclusive, None, true),
            ("evidence_mismatch", Inconclusive, None, true),
            ("self_freeze", Inconclusive, None, true),
            ("invalid_ledger", Inconclusive, None, false),
            ("failed", Fail, None, false),
            ("expired", Inconclusive, None, false),
            ("uncovered", Inconclusive, None, false),
            ("frozen_only", Inconclusive, None, false),
            ("blind_lines", Inconclusive, None, false),
            ("some_frozen", PassWithCaveat, Some("some_frozen"), false),
            ("ledger_edited", PassWithCaveat, Some("ledger_edited"), true),
            ("self_witness", PassWithCaveat, Some("self_witness"), true),
            ("weakened_test", PassWithCaveat, Some("weakened_test"), true),
            ("blind_lines", PassWithCaveat, Some("blind_lines"), false),
            ("phase_only_witness", PassWithCaveat, Some("phase_only_witness"), false),
            ("head_flaky", PassWithCaveat, Some("head_flaky"), false),
            ("no_results", PassWithCaveat, Some("no_results"), false),
            ("no_executable_change", Pass, None, false),
            ("all_stable", Pass, None, false),
        ]
    );
    // The variants' order is the table's.
    assert!(ReasonCode::ALL.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(ReasonCode::ALL.first(), Some(&MissingEvidence));
    // The record spells the code, strict or not.
    let json = serde_json::to_string(&[BlindLinesStrict, BlindLines, AllStable]).unwrap();
    assert_eq!(json, r#"["blind_lines","blind_lines","all_stable"]"#);
}

#[test]
fn the_signals_are_the_caveats_in_the_configs_key_order() {
    assert_eq!(
        Signal::KEYS,
        [
            "weakened_test",
            "self_witness",
            "phase_only_witness",
            "ledger_edited",
            "blind_lines",
            "some_frozen",
            "no_results",
            "head_flaky",
        ]
    );
    for (place, signal) in Signal::ALL.into_iter().enumerate() {
        assert_eq!(signal as usize, place);
        assert_eq!(signal.code().signal(), Some(signal), "{signal:?}");
        assert_eq!(Signal::from_key(signal.as_str()), Some(signal));
        // Only a caveat is a knob: policy never lowers a blocking reason.
        assert_eq!(signal.code().verdict(), Verdict::PassWithCaveat, "{signal:?}");
    }
    assert!(Signal::ALL.windows(2).all(|w| w[0] < w[1]));
    let with_a_signal = ReasonCode::ALL.iter().filter(|c| c.signal().is_some()).count();
    assert_eq!(with_a_signal, Signal::COUNT);
    assert_eq!(Signal::from_key("failed"), None);
}

const BEGIN: &str = "<!-- reason-codes:begin -->";
const END: &str = "<!-- reason-codes:end -->";

/// README.md and docs/*.md: the files that may hold the marked codes table.
fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The rows of the one table between the markers: (code, marked a signal, verdict cell).
fn marked_table() -> (PathBuf, Vec<(String, bool, String)>) {
    let marked: Vec<(PathBuf, String)> = doc_files()
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            text.contains(BEGIN).then_some((p, text))
        })
        .collect();
    assert_eq!(
        marked.len(),
        1,
        "exactly one of README.md, docs/*.md marks the reason codes table with {BEGIN}: {:?}",
        marked.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    let (path, text) = marked.into_iter().next().unwrap();
    assert_eq!(text.matches(BEGIN).count(), 1, "{}", path.display());
    let (_, rest) = text.split_once(BEGIN).unwrap();
    let (table, _) = rest
        .split_once(END)
        .unwrap_or_else(|| panic!("{}: {BEGIN} without {END}", path.display()));
    let mut rows = Vec::new();
    for line in table.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(
            line.starts_with('|'),
            "{}: not a table row between the markers: {line}",
            path.display()
        );
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells[0] == "code" || cells[0].starts_with("---") {
            continue;
        }
        let (code, signal) = match cells[0].strip_suffix("*(signal)*") {
            Some(code) => (code.trim(), true),
            None => (cells[0], false),
        };
        let code = code
            .strip_prefix('`')
            .and_then(|c| c.strip_suffix('`'))
            .unwrap_or_else(|| panic!("{}: a row's first cell is a `code`: {line}", path.display()));
        rows.push((code.to_string(), signal, cells.get(1).unwrap_or(&"").to_string()));
    }
    (path, rows)
}

/// The docs' codes table lists every code once, in table order, marks exactly the
/// signals, and names each code's verdicts.
#[test]
fn the_docs_codes_table_is_the_code_table() {
    let (path, rows) = marked_table();
    let path = path.display();
    // Each code where it first decides (`blind_lines`: where it is strict).
    let mut codes: Vec<&str> = Vec::new();
    for c in ReasonCode::ALL {
        if !codes.contains(&c.as_str()) {
            codes.push(c.as_str());
        }
    }
    let documented: Vec<&str> = rows.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(documented, codes, "{path}: the codes, in decision-table order");
    for (code, marked, verdicts) in &rows {
        let variants: Vec<ReasonCode> = ReasonCode::ALL.iter().copied().filter(|c| c.as_str() == code).collect();
        let signal = variants.iter().any(|c| c.signal().is_some());
        assert_eq!(
            *marked, signal,
            "{path}: `{code}` is marked *(signal)* exactly when it is one"
        );
        let words: Vec<&str> = verdicts
            .split(|ch: char| !(ch.is_ascii_uppercase() || ch == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        for v in variants {
            assert!(
                words.contains(&v.verdict().as_str()),
                "{path}: `{code}` leads to {}, its row says {verdicts:?}",
                v.verdict()
            );
        }
    }
}
