//! The patch model: the files a patch touches and, per file, the lines it adds,
//! removes and keeps, numbered on their sides. Both readers build it.

use serde::{Serialize, Serializer};
use std::sync::Arc;

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
    /// Only the file mode changed (e.g. `chmod +x`); no content change.
    ModeOnly,
}

/// A line the patch added, numbered on the new (head) side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AddedLine {
    pub line: u32,
    /// The line's text without the leading `+` and without the line ending.
    pub text: String,
    /// The Python `def`/`class` blocks the line sits in on the new side, as far as its hunk shows.
    pub scope: Scope,
}

/// Where a changed line sits in Python source: the `class`/`def` blocks around
/// it, found from the diff alone (see `scope::scopes_of_side`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The hunk does not show which block the line is in (and for lines with no code).
    #[default]
    Unknown,
    /// Inside these blocks, outermost first (`["TestCart", "test_total"]`; empty: module level).
    /// `complete` is false when the hunk (and its `@@` header) shows only the innermost ones.
    /// The lines of one block share one list (`Arc`): a big diff's lines would otherwise
    /// each carry their own copy of the same names.
    Known {
        #[serde(serialize_with = "names_as_list")]
        names: Arc<[String]>,
        complete: bool,
    },
}

fn names_as_list<S: Serializer>(names: &Arc<[String]>, s: S) -> Result<S::Ok, S::Error> {
    names[..].serialize(s)
}

impl Scope {
    /// Module level: inside no `def` or `class`.
    #[cfg(test)]
    pub fn module() -> Self {
        Scope::Known {
            names: Arc::from([]),
            complete: true,
        }
    }
    pub fn is_known(&self) -> bool {
        matches!(self, Scope::Known { .. })
    }
    /// The block names, outermost first (empty when unknown or at module level).
    pub fn names(&self) -> &[String] {
        match self {
            Scope::Known { names, .. } => names,
            Scope::Unknown => &[],
        }
    }
}

/// A context (unchanged) line of a hunk, with its numbers on both sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextLine {
    pub old_line: u32,
    /// New-side line number.
    pub line: u32,
    pub text: String,
}

/// A run of removed lines with no added line in its place (a pure deletion).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deletion {
    /// First removed line, old side, 1-based.
    pub old_start: u32,
    /// How many consecutive lines were removed.
    pub old_count: u32,
    /// The surviving new-side line directly above the deletion (0 when the
    /// deletion is at the top of the file). The line below is `after + 1`,
    /// when the file has one.
    pub after: u32,
    /// The removed lines' text.
    pub text: Vec<String>,
}

/// A line the patch removed, numbered on the old (base) side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemovedLine {
    pub line: u32,
    pub text: String,
    /// The Python `def`/`class` blocks the line sat in on the old side, as far as its hunk shows.
    pub scope: Scope,
}

/// One file of the patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// Repository-relative path on the new side (the old path for a deleted file).
    pub path: String,
    /// The old path, for renames and copies.
    pub old_path: Option<String>,
    pub status: FileStatus,
    pub binary: bool,
    /// False when the changed lines are unknown (GitHub omits `patch` for huge files).
    pub lines_known: bool,
    /// Why the file's lines cannot be read exactly (its diff text is not UTF-8: a Latin-1
    /// source file, say). Its text is decoded lossily, for display only; the file is blind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// Added lines, ascending by line number.
    pub added: Vec<AddedLine>,
    /// Pure deletions, ascending.
    pub deletions: Vec<Deletion>,
    /// Every removed line (pure deletions and replaced lines), old-side numbers:
    /// what the trust rules read to see an assertion loosened or removed.
    pub removed: Vec<RemovedLine>,
    /// The hunks' context lines, ascending: with `added` (new side) or `removed`
    /// (old side) they are all of the file the diff shows.
    pub context: Vec<ContextLine>,
}

impl FileChange {
    pub fn added_line_numbers(&self) -> Vec<u32> {
        self.added.iter().map(|l| l.line).collect()
    }
}

/// A whole patch, files in diff order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Patch {
    pub files: Vec<FileChange>,
}

impl Patch {
    /// Every repository path the patch names (new and old paths).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files
            .iter()
            .flat_map(|f| std::iter::once(f.path.as_str()).chain(f.old_path.as_deref()))
    }
}
