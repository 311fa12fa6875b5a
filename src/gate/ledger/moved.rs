//! Freezes follow a moved test file. A ledger entry names a test by its file's path; when the
//! patch moves that file (git reports a rename, with or without edits), the test still is the
//! one the ledger froze, and must not count as a stable witness under its new node id. The
//! entry is read with the new path for this judgement, and a note says the ledger still
//! names the old one.

use super::Ledger;
use crate::gate::patch::{FileStatus, Patch};

/// The ledger with every freeze of a moved test file carried to the file's new path, and a
/// note per moved file; `None` when the patch moves no frozen test file.
pub fn follow_moves(ledger: &Ledger, patch: &Patch) -> Option<(Ledger, Vec<String>)> {
    let mut moved = ledger.clone();
    let mut notes = Vec::new();
    for fc in patch.files.iter().filter(|f| f.status == FileStatus::Renamed) {
        let Some(old) = fc.old_path.as_deref() else {
            continue;
        };
        let mut carried = Vec::new();
        for e in moved.entries.iter_mut() {
            let rest = if e.test == old {
                Some("")
            } else {
                e.test.strip_prefix(old).filter(|r| r.starts_with("::"))
            };
            if let Some(rest) = rest {
                carried.push(e.test.clone());
                e.test = format!("{}{rest}", fc.path);
            }
        }
        if carried.is_empty() {
            continue;
        }
        notes.push(format!(
            "the patch moves {old} to {}, and the ledger freezes {} by the old path: the freeze{} still hold{} for the moved test{} (judged as {}); update the ledger to name the new path",
            fc.path,
            carried.join(", "),
            if carried.len() == 1 { "" } else { "s" },
            if carried.len() == 1 { "s" } else { "" },
            if carried.len() == 1 { "" } else { "s" },
            carried
                .iter()
                .map(|t| format!("{}{}", fc.path, &t[old.len()..]))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    (!notes.is_empty()).then_some((moved, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::nodeid::TestId;
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
        let (l, notes) = follow_moves(&ledger, &Patch { files: vec![fc.clone()] }).unwrap();
        assert!(l.is_frozen(&TestId::new("tests/payments/test_refunds.py::test_gateway_retry")));
        assert!(!l.is_frozen(&TestId::new("tests/payments/test_refunds.py::test_other")));
        // A file whose name merely starts with the old path keeps its entry.
        assert_eq!(l.entries[1].test, "tests/test_refunds_more.py::test_x");
        assert!(notes[0].contains("moves tests/test_refunds.py to tests/payments/test_refunds.py"), "{notes:?}");
        // No rename, no frozen file moved: nothing to follow.
        fc.old_path = Some("tests/test_cart.py".into());
        assert!(follow_moves(&ledger, &Patch { files: vec![fc] }).is_none());
    }
}
