//! GitHub's pull-request files listing (`GET /repos/…/pulls/N/files`: a JSON
//! array of entries, each with its hunks as `patch`) → [`Patch`]. The hunks
//! are checked and read by the same scanner and hunk reader as a unified diff.

use super::model::{FileChange, FileStatus, Patch};
use super::unified::{lines_of, normalize_eol, scan_hunks, show, skip_blank, Cursor};
use crate::gate::error::{InputError, Location};
use serde::Deserialize;

/// Parse GitHub's pull-request files listing (a JSON array of diff entries).
///
/// Each entry's `patch` is hunk text only. Without `patch`:
/// - `changes > 0`: the lines are unknown (GitHub omits the patch of very
///   large files) → `lines_known: false`;
/// - `changes == 0`: there are no line changes to know. Such an entry is a
///   pure rename, a mode change (`changed` → [`FileStatus::ModeOnly`]), an
///   empty file, or a binary file. `modified` with no line changes can only
///   be binary; `added`/`removed` are binary unless `sha` is git's empty
///   blob; a `renamed`/`copied` binary with changed content cannot be told
///   from a pure rename and is reported as not binary.
///
/// `unchanged` entries are kept as `Modified` with no lines.
pub fn parse_github_files(file: &str, json: &str) -> Result<Patch, InputError> {
    let body = json.strip_prefix('\u{feff}').unwrap_or(json);
    let entries: Vec<GhEntry> = serde_json::from_str(body).map_err(|e| InputError::json(file, &e))?;
    let mut files = Vec::with_capacity(entries.len());
    for (i, e) in entries.into_iter().enumerate() {
        files.push(gh_file(file, json, i, e)?);
    }
    Ok(Patch { files })
}

/// The blob id of the empty file (`git hash-object /dev/null`).
const EMPTY_BLOB: &str = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";

#[derive(Deserialize)]
struct GhEntry {
    #[serde(default)]
    sha: Option<String>,
    filename: String,
    status: GhStatus,
    // Not used, but typed so that a wrong type is reported.
    #[serde(default)]
    #[allow(dead_code)]
    additions: Option<u64>,
    #[serde(default)]
    #[allow(dead_code)]
    deletions: Option<u64>,
    changes: u64,
    #[serde(default)]
    patch: Option<String>,
    #[serde(default)]
    previous_filename: Option<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum GhStatus {
    Added,
    Removed,
    Modified,
    Renamed,
    Copied,
    Changed,
    Unchanged,
}

fn gh_file(file: &str, json: &str, index: usize, e: GhEntry) -> Result<FileChange, InputError> {
    let patch = e.patch.as_deref().filter(|p| !p.is_empty());
    let no_lines = patch.is_none() && e.changes == 0;
    let old_path = match e.status {
        GhStatus::Renamed | GhStatus::Copied => match e.previous_filename {
            Some(p) => Some(p),
            None => {
                return Err(gh_error(
                    file,
                    json,
                    index,
                    "status",
                    format!(
                        "entry {index} ({}): expected `previous_filename` for a renamed or copied file",
                        e.filename
                    ),
                ))
            }
        },
        _ => None,
    };
    let empty_blob = e.sha.as_deref() == Some(EMPTY_BLOB);
    let (status, binary) = match e.status {
        GhStatus::Added => (FileStatus::Added, no_lines && !empty_blob),
        GhStatus::Removed => (FileStatus::Deleted, no_lines && !empty_blob),
        GhStatus::Modified => (FileStatus::Modified, no_lines),
        GhStatus::Renamed => (FileStatus::Renamed, false),
        GhStatus::Copied => (FileStatus::Copied, false),
        GhStatus::Changed if no_lines => (FileStatus::ModeOnly, false),
        GhStatus::Changed | GhStatus::Unchanged => (FileStatus::Modified, false),
    };
    let mut fc = FileChange {
        path: e.filename,
        old_path,
        status,
        binary,
        lines_known: patch.is_some() || e.changes == 0,
        unreadable: None,
        added: Vec::new(),
        deletions: Vec::new(),
        removed: Vec::new(),
        context: Vec::new(),
    };
    if let Some(p) = patch {
        let p = normalize_eol(p);
        let bad = |line: usize, col: Option<usize>, msg: String| {
            let col = col.map(|c| format!(", column {c}")).unwrap_or_default();
            gh_error(
                file,
                json,
                index,
                "patch",
                format!("entry {index} ({}): patch line {line}{col}: {msg}", fc.path),
            )
        };
        let mut cur = Cursor::new(&p);
        let hunks = scan_hunks(&mut cur, "patch").map_err(|(l, c, m)| bad(l, c, m))?;
        let hunks_end = cur.pos;
        skip_blank(&mut cur);
        if let Some(l) = cur.peek() {
            let msg = if hunks == 0 {
                format!("expected a hunk header `@@ -a,b +c,d @@`, found {}", show(l))
            } else {
                format!(
                    "unexpected line after a complete hunk: expected `@@` or the end of the patch, found {}",
                    show(l)
                )
            };
            return Err(bad(cur.line, None, msg));
        }
        let (added, deletions, removed, context) = lines_of(&p[..hunks_end]).map_err(|m| bad(1, None, m))?;
        fc.added = added;
        fc.deletions = deletions;
        fc.removed = removed;
        fc.context = context;
    }
    Ok(fc)
}

/// An error about entry `index`, located at its `key` when the positions can
/// be recovered (serde's typed parse has none once the text is valid JSON).
fn gh_error(file: &str, json: &str, index: usize, key: &str, msg: String) -> InputError {
    use crate::gate::json_spans::{self, JVal};
    let loc = json_spans::parse(file, json)
        .ok()
        .and_then(|root| match root.val {
            JVal::Arr(items) => items.into_iter().nth(index),
            _ => None,
        })
        .and_then(|entry| match entry.val {
            JVal::Obj(members) => members.into_iter().find(|m| m.key == key).map(|m| m.value.pos),
            _ => None,
        })
        .map_or_else(|| Location::file(file), |p| Location::at(file, p.line, Some(p.col)));
    InputError::new(loc, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gh_entry(extra: &str) -> String {
        format!(
            r#"[{{"sha": "abc", "filename": "f.py", "additions": 0, "deletions": 0, "blob_url": "", "raw_url": "", "contents_url": "", {extra}}}]"#
        )
    }

    #[test]
    fn github_status_rules() {
        let one = |extra: &str| parse_github_files("f.json", &gh_entry(extra)).unwrap().files.remove(0);
        let f = one(r#""status": "changed", "changes": 0"#);
        assert_eq!((f.status, f.binary, f.lines_known), (FileStatus::ModeOnly, false, true));
        let f = one(r#""status": "changed", "changes": 2, "patch": "@@ -1 +1 @@\n-a\n+b""#);
        assert_eq!((f.status, f.added_line_numbers()), (FileStatus::Modified, vec![1]));
        let f = one(r#""status": "modified", "changes": 0"#);
        assert_eq!((f.status, f.binary), (FileStatus::Modified, true));
        let f = one(r#""status": "added", "changes": 0"#);
        assert!(f.binary, "a non-empty blob with no lines is binary");
        let f = parse_github_files(
            "f.json",
            &gh_entry(r#""status": "added", "changes": 0"#).replace("\"abc\"", &format!("\"{EMPTY_BLOB}\"")),
        )
        .unwrap()
        .files
        .remove(0);
        assert!(!f.binary && f.lines_known, "the empty blob is an empty file");
        let f = one(r#""status": "modified", "changes": 9000"#);
        assert!(!f.lines_known && !f.binary);
        let f = one(r#""status": "renamed", "changes": 0, "previous_filename": "old.py""#);
        assert_eq!(
            (f.status, f.old_path.as_deref(), f.binary),
            (FileStatus::Renamed, Some("old.py"), false)
        );
    }

    #[test]
    fn github_errors() {
        let err = |json: &str| parse_github_files("f.json", json).unwrap_err();
        let e = err(r#"{"files": []}"#);
        assert_eq!(e.location.line, Some(1), "{e}");
        let e = err("[\n  {\"status\": \"added\", \"changes\": 1}\n]");
        assert!(e.message.contains("filename") && e.location.line == Some(2), "{e}");
        let e = err(&gh_entry(r#""status": "added", "changes": "1""#));
        assert!(e.message.contains("invalid type") && e.location.line == Some(1), "{e}");
        let e = err(&gh_entry(r#""status": "moved", "changes": 1"#));
        assert!(e.message.contains("unknown variant"), "{e}");
        let e = err(&gh_entry(r#""status": "renamed", "changes": 0"#));
        assert!(e.message.contains("previous_filename"), "{e}");
        let json = "[\n {\"sha\": null, \"filename\": \"f.py\", \"status\": \"modified\", \"changes\": 2,\n  \"patch\": \"@@ -1,2 +1,2 @@\\n-a\\n+b\"}\n]";
        let e = err(json);
        assert_eq!((e.location.line, e.location.column), (Some(3), Some(12)), "{e}");
        assert!(
            e.message.contains("patch line 1") && e.message.contains("expected 2 old-side"),
            "{e}"
        );
    }
}
