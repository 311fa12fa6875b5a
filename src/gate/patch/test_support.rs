//! Hand-built patches for the gate's unit tests.

use super::model::{AddedLine, FileChange, FileStatus, RemovedLine};
use super::scope::scopes_of_side;

/// A file change whose added lines (and removed lines) are each one hunk
/// side without context, numbered from 10, their scopes read from them.
pub(crate) fn file_change(path: &str, added: &[&str], removed: &[&str]) -> FileChange {
    let scopes = |lines: &[&str]| scopes_of_side(lines, None);
    let (add_scopes, rem_scopes) = (scopes(added), scopes(removed));
    FileChange {
        path: path.into(),
        old_path: None,
        status: FileStatus::Modified,
        binary: false,
        lines_known: true,
        unreadable: None,
        added: added
            .iter()
            .zip(add_scopes)
            .enumerate()
            .map(|(i, (t, scope))| AddedLine {
                line: i as u32 + 10,
                text: t.to_string(),
                scope,
            })
            .collect(),
        deletions: vec![],
        removed: removed
            .iter()
            .zip(rem_scopes)
            .enumerate()
            .map(|(i, (t, scope))| RemovedLine {
                line: i as u32 + 10,
                text: t.to_string(),
                scope,
            })
            .collect(),
        context: vec![],
    }
}
