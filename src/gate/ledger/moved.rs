//! Freezes and probe runs follow a moved test file. A ledger entry names a test by its file's
//! path; when the patch moves that file (git reports a rename, with or without edits), the test
//! still is the one the ledger froze, and must not count as a stable witness under its new node
//! id. The entry is read with the new path for this judgement, and a note says the ledger still
//! names the old one. Likewise the base probe ran the moved tests under their old ids: those
//! runs are theirs ([`follow_probe`]), so a flaky test cannot shed its history by moving.

use super::Ledger;
use crate::gate::nodeid::TestId;
use crate::gate::patch::{FileStatus, Patch};
use crate::gate::probe::Probe;

/// The test files the patch moves: (old path, new path).
fn moves(patch: &Patch) -> impl Iterator<Item = (&str, &str)> {
    patch
        .files
        .iter()
        .filter(|f| f.status == FileStatus::Renamed)
        .filter_map(|f| f.old_path.as_deref().map(|old| (old, f.path.as_str())))
}

/// The probe with each run of a moved test file's tests also counted under the new path;
/// `None` when the probe ran no test of a moved file.
pub fn follow_probe(probe: &Probe, patch: &Patch) -> Option<Probe> {
    let mut added = Vec::new();
    for (old, new) in moves(patch) {
        for (t, counts) in &probe.tests {
            if t.file() == old {
                let moved = TestId::new(format!("{new}{}", &t.as_str()[old.len()..]));
                if !probe.tests.contains_key(&moved) {
                    added.push((moved, *counts));
                }
            }
        }
    }
    if added.is_empty() {
        return None;
    }
    let mut p = probe.clone();
    p.tests.extend(added);
    Some(p)
}

/// The ledger with every freeze of a moved test file carried to the file's new path, and a
/// note per moved file; `None` when the patch moves no frozen test file.
pub fn follow_moves(ledger: &Ledger, patch: &Patch) -> Option<(Ledger, Vec<String>)> {
    let mut moved = ledger.clone();
    let mut notes = Vec::new();
    for (old, new) in moves(patch) {
        let mut carried = Vec::new();
        for e in moved.entries.iter_mut() {
            let rest = if e.test == old {
                Some("")
            } else {
                e.test.strip_prefix(old).filter(|r| r.starts_with("::"))
            };
            if let Some(rest) = rest {
                carried.push(e.test.clone());
                e.test = format!("{new}{rest}");
            }
        }
        if carried.is_empty() {
            continue;
        }
        notes.push(format!(
            "the patch moves {old} to {}, and the ledger freezes {} by the old path: the freeze{} still hold{} for the moved test{} (judged as {}); update the ledger to name the new path",
            new,
            carried.join(", "),
            if carried.len() == 1 { "" } else { "s" },
            if carried.len() == 1 { "s" } else { "" },
            if carried.len() == 1 { "" } else { "s" },
            carried
                .iter()
                .map(|t| format!("{new}{}", &t[old.len()..]))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    (!notes.is_empty()).then_some((moved, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::patch::test_support::file_change;

    #[test]
    fn a_freeze_follows_its_renamed_file() {
        let text = r#"{"frozen": [
  {"test": "tests/test_refunds.py::test_gateway_retry", "owner": "@shop/payments", "expires": "2026-12-09"},
  {"test": "tests/test_refunds_more.py::test_x", "owner": "@shop/payments", "expires": "2026-12-09"}
]}"#;
        let ledger = super::super::parse_ledger("l.json", text, None).unwrap();
        let mut fc = file_change("tests/payments/test_refunds.py", &[], &[]);
        fc.status = FileStatus::Renamed;
        fc.old_path = Some("tests/test_refunds.py".into());
        let (l, notes) = follow_moves(
            &ledger,
            &Patch {
                files: vec![fc.clone()],
            },
        )
        .unwrap();
        assert!(l.is_frozen(&TestId::new("tests/payments/test_refunds.py::test_gateway_retry")));
        assert!(!l.is_frozen(&TestId::new("tests/payments/test_refunds.py::test_other")));
        // A file whose name merely starts with the old path keeps its entry.
        assert_eq!(l.entries[1].test, "tests/test_refunds_more.py::test_x");
        assert!(
            notes[0].contains("moves tests/test_refunds.py to tests/payments/test_refunds.py"),
            "{notes:?}"
        );
        // No rename, no frozen file moved: nothing to follow.
        // The probe's runs of the moved tests count under the new path too.
        let probe = crate::gate::probe::Probe {
            k: 5,
            tests: [(
                TestId::new("tests/test_refunds.py::test_gateway_retry"),
                crate::gate::probe::ProbeCounts { failures: 2, runs: 5 },
            )]
            .into(),
            complete: true,
            seed: None,
        };
        let followed = follow_probe(
            &probe,
            &Patch {
                files: vec![fc.clone()],
            },
        )
        .unwrap();
        assert_eq!(
            followed.tests[&TestId::new("tests/payments/test_refunds.py::test_gateway_retry")].failures,
            2
        );
        fc.old_path = Some("tests/test_cart.py".into());
        assert!(follow_probe(
            &probe,
            &Patch {
                files: vec![fc.clone()]
            }
        )
        .is_none());
        assert!(follow_moves(&ledger, &Patch { files: vec![fc] }).is_none());
    }
}
