//! The patch: which files a pull request touches and which new-side lines it
//! adds. Reads git's unified diff text and GitHub's pull-request files listing.
//!
//! ## Why diffy, and what this file does itself
//!
//! The per-file work (git extended headers: renames, copies, modes, `Binary
//! files … differ`, `GIT binary patch`; C-style quoted names with octal
//! escapes; hunk bodies and `\ No newline at end of file`) is done by
//! **diffy 0.5**'s git-aware `PatchSet` parser (`ParseOptions::gitdiff()`).
//! It was chosen over the `unidiff` crate, which silently drops renamed,
//! binary and mode-only files and reports a renamed file under its old path.
//!
//! diffy is permissive by design (it follows GNU patch), which a gate cannot
//! be, so a strict line scanner ([`scan`]) runs first, splits the input into
//! one section per file and hands diffy one section at a time. The scanner
//! exists because diffy 0.5.2, measured on the corpus in
//! `tests/fixtures/diffs/` and on hand-made variants:
//! - silently skips text it does not understand: leading garbage, garbage
//!   between files, and even a `+` line after a hunk whose header count is
//!   already used up (an added line lost without an error);
//! - reports errors as byte offsets relative to an inner slice it does not
//!   expose (and for git sections not at all), so no line number can be
//!   recovered; the scanner reports 1-based line (and column);
//! - fails on diffs whose own line endings are CRLF (`new mode 100755\r` is
//!   "invalid file mode", `rename to x\r` an invalid name), so CRLF is
//!   normalised to LF first (line numbers are unchanged);
//! - returns an error for empty input and, in git mode, for a plain
//!   `---`/`+++` diff; sections are dispatched to the right mode instead;
//! - keeps the `a/`/`b/` prefixes, which are stripped here.
//!
//! Both passes are linear in the input.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use crate::gate::error::{InputError, Location};

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
/// it, found from the diff alone (see [`scopes_of_side`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The hunk does not show which block the line is in (and for lines with no code).
    #[default]
    Unknown,
    /// Inside these blocks, outermost first (`["TestCart", "test_total"]`; empty: module level).
    /// `complete` is false when the hunk (and its `@@` header) shows only the innermost ones.
    Known { names: Vec<String>, complete: bool },
}

impl Scope {
    /// Module level: inside no `def` or `class`.
    pub fn module() -> Self {
        Scope::Known {
            names: Vec::new(),
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

/// Parse git's unified diff text (`git diff`, GitHub's diff media type).
/// `file` names the input in errors.
///
/// Accepts `git diff` output (any mix of text, binary, renamed, copied,
/// mode-only files; CRLF or LF line endings) and plain `diff -u` output
/// (`---`/`+++` without `diff --git`). Empty (or blank) input is an empty
/// patch. Anything else — leading text such as an e-mail preamble, stray
/// lines between files, a hunk shorter or longer than its header says — is
/// an [`InputError`] with the 1-based line.
pub fn parse_unified(file: &str, text: &str) -> Result<Patch, InputError> {
    let text = normalize_eol(text);
    let sections = scan(file, &text)?;
    let mut files = Vec::with_capacity(sections.len());
    for s in &sections {
        files.push(build_file(file, &text, s)?);
    }
    Ok(Patch { files })
}

/// [`parse_unified`] on raw bytes.
///
/// Non-UTF-8 input is rejected, naming the line and column of the first
/// invalid byte. Decoding lossily is not done anywhere: `GIT binary patch`
/// payloads are base85 (ASCII), so valid diffs never need it there, and
/// quietly altering a path or a changed line's text would be worse than a
/// clear error. (A source file in a legacy 8-bit encoding therefore makes
/// the diff unreadable; convert it, or ask for lossy decoding of hunk text.)
pub fn parse_unified_bytes(file: &str, bytes: &[u8]) -> Result<Patch, InputError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_unified(file, text),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            // `good` is valid UTF-8, so this cannot fail; fall back to bytes anyway.
            let col =
                std::str::from_utf8(&good[line_start..]).map_or(good.len() - line_start, |s| s.chars().count()) + 1;
            let byte = bytes.get(e.valid_up_to()).copied().unwrap_or(0);
            Err(InputError::new(
                Location::at(file, line, Some(col)),
                format!("not UTF-8 text (invalid byte 0x{byte:02X}): expected a UTF-8 encoded diff"),
            ))
        }
    }
}

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

// ---------------------------------------------------------------------------
// GitHub files listing

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
        let parsed = guarded(|| diffy::Patch::from_str(&p).map_err(|e| e.to_string()))
            .and_then(|r| r)
            .map_err(|m| bad(1, None, format!("could not be parsed: {m}")))?;
        if parsed.hunks().len() != hunks {
            return Err(bad(
                1,
                None,
                format!(
                    "internal parser disagreement ({} vs {hunks} hunks); please report this input",
                    parsed.hunks().len()
                ),
            ));
        }
        let (added, deletions, removed, context) = lines_of(parsed.hunks()).map_err(|m| bad(1, None, m))?;
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

// ---------------------------------------------------------------------------
// The scanner: strict structure, line numbers, section boundaries.

const NO_NEWLINE: &str = "\\ No newline at end of file";

/// `\r\n` → `\n` (and a final lone `\r`). Only line ends change, so line
/// numbers and columns stay valid. Text of changed lines never keeps a
/// trailing `\r` anyway.
fn normalize_eol(text: &str) -> Cow<'_, str> {
    if !text.contains('\r') {
        return Cow::Borrowed(text);
    }
    let mut s = text.replace("\r\n", "\n");
    if s.ends_with('\r') {
        s.pop();
    }
    Cow::Owned(s)
}

/// A line reader over LF text.
#[derive(Clone)]
struct Cursor<'a> {
    text: &'a str,
    /// Byte offset of the next line.
    pos: usize,
    /// 1-based number of the next line.
    line: usize,
    /// Line of the last hunk header read (for error messages).
    last_hunk: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            text,
            pos: 0,
            line: 1,
            last_hunk: 0,
        }
    }
    /// The next line, without its `\n`.
    fn peek(&self) -> Option<&'a str> {
        let rest = self.text.get(self.pos..).filter(|r| !r.is_empty())?;
        Some(match rest.find('\n') {
            Some(i) => &rest[..i],
            None => rest,
        })
    }
    fn advance(&mut self) {
        let rest = self.text.get(self.pos..).unwrap_or("");
        self.pos = match rest.find('\n') {
            Some(i) => self.pos + i + 1,
            None => self.text.len(),
        };
        self.line += 1;
    }
}

fn is_blank(l: &str) -> bool {
    l.trim().is_empty()
}

fn skip_blank(cur: &mut Cursor<'_>) {
    while cur.peek().is_some_and(is_blank) {
        cur.advance();
    }
}

/// A line, shortened and quoted for an error message.
fn show(l: &str) -> String {
    let mut s: String = l.chars().take(60).collect();
    if s.len() < l.len() {
        s.push('…');
    }
    format!("{s:?}")
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum SectionKind {
    /// Starts at `diff --git`; `prefixed` when its names carry `a/` and `b/`.
    Git { prefixed: bool },
    /// Starts at `---` (plain `diff -u`).
    Plain,
    /// A plain `Binary files X and Y differ` line (`diff -r` between files).
    PlainBinary,
}

/// One file's part of the input.
#[derive(Debug, Clone)]
struct Section {
    kind: SectionKind,
    /// 1-based line of the section's first line.
    line: usize,
    /// Byte range in the (normalised) text.
    start: usize,
    end: usize,
    /// Number of hunks the scanner counted.
    hunks: usize,
}

type ScanError = (usize, Option<usize>, String);

/// Split `text` into file sections, checking the structure strictly.
fn scan(file: &str, text: &str) -> Result<Vec<Section>, InputError> {
    let mut cur = Cursor::new(text);
    let mut sections = Vec::new();
    let err = |(line, col, msg): ScanError| InputError::new(Location::at(file, line, col), msg);
    // The last complete hunk, for a better message about what follows it.
    let mut after_hunk: Option<usize> = None;
    loop {
        skip_blank(&mut cur);
        let Some(l) = cur.peek() else { break };
        let (line, start) = (cur.line, cur.pos);
        let section = if l.starts_with("diff --git ") {
            scan_git(&mut cur).map_err(err)?
        } else if l.starts_with("diff --cc ") || l.starts_with("diff --combined ") {
            return Err(err((
                line,
                Some(1),
                "combined diff (of a merge commit) is not supported: expected a two-way `diff --git` diff".into(),
            )));
        } else if l.starts_with("--- ") {
            scan_plain(&mut cur).map_err(err)?
        } else if l.starts_with("diff ") {
            // The command line `diff -r` prints before each file: not data.
            cur.advance();
            after_hunk = None;
            continue;
        } else if l.starts_with("Binary files ") && l.ends_with(" differ") {
            cur.advance();
            (SectionKind::PlainBinary, 0)
        } else {
            let msg = match after_hunk {
                Some(h) => format!(
                    "unexpected line after a complete hunk (the hunk at line {h} has all the lines its header announces): expected `@@`, `diff --git` or `---`, found {}",
                    show(l)
                ),
                None => format!("expected a file header (`diff --git` or `---`), found {}", show(l)),
            };
            return Err(err((line, None, msg)));
        };
        let (kind, hunks) = section;
        after_hunk = if hunks > 0 { Some(cur.last_hunk) } else { None };
        sections.push(Section {
            kind,
            line,
            start,
            end: cur.pos,
            hunks,
        });
    }
    Ok(sections)
}

const MODES: [&str; 4] = ["100644", "100755", "120000", "160000"];

/// A `diff --git` section: extended headers, then `---`/`+++` and hunks, or a
/// binary marker or payload, or nothing (rename, mode change, empty file).
fn scan_git(cur: &mut Cursor<'_>) -> Result<(SectionKind, usize), ScanError> {
    let first = cur.peek().unwrap_or("");
    let start_line = cur.line;
    let rest = first.strip_prefix("diff --git ").unwrap_or("");
    let prefixed =
        (rest.starts_with("a/") || rest.starts_with("\"a/")) && (rest.contains(" b/") || rest.contains(" \"b/"));
    let kind = SectionKind::Git { prefixed };
    cur.advance();
    let (mut rename_from, mut rename_to, mut copy_from, mut copy_to) = (None, None, None, None);
    let pairs = |rf: Option<usize>, rt: Option<usize>, cf: Option<usize>, ct: Option<usize>| -> Result<(), ScanError> {
        match (rf, rt) {
            (Some(l), None) => return Err((l, None, "expected `rename to` after `rename from`".into())),
            (None, Some(l)) => return Err((l, None, "expected `rename from` before `rename to`".into())),
            _ => {}
        }
        match (cf, ct) {
            (Some(l), None) => Err((l, None, "expected `copy to` after `copy from`".into())),
            (None, Some(l)) => Err((l, None, "expected `copy from` before `copy to`".into())),
            _ => Ok(()),
        }
    };
    loop {
        let Some(l) = cur.peek() else {
            pairs(rename_from, rename_to, copy_from, copy_to)?;
            return Ok((kind, 0));
        };
        let line = cur.line;
        if is_blank(l) {
            // Blank lines may separate files, but not split one file's headers.
            let mut ahead = cur.clone();
            skip_blank(&mut ahead);
            if ahead.peek().is_some_and(|n| !n.starts_with("diff ")) {
                return Err((line, None, format!("expected the next git extended header, `---` or `diff --git` in the header of the file at line {start_line}, found a blank line")));
            }
        }
        if l.starts_with("diff ") || is_blank(l) {
            pairs(rename_from, rename_to, copy_from, copy_to)?;
            return Ok((kind, 0));
        }
        if l.starts_with("--- ") {
            break;
        }
        if l.starts_with("+++ ") {
            return Err((line, None, "expected a `---` line before the `+++` line".into()));
        }
        if l.starts_with("@@") {
            return Err((
                line,
                None,
                format!("expected `---` and `+++` file headers before the hunk (file at line {start_line})"),
            ));
        }
        let mode = ["old mode ", "new mode ", "new file mode ", "deleted file mode "]
            .iter()
            .find_map(|p| l.strip_prefix(p).map(|m| (p.len(), m)));
        if let Some((at, m)) = mode {
            if !MODES.contains(&m) {
                return Err((
                    line,
                    Some(at + 1),
                    format!("expected a file mode (one of {}), found {}", MODES.join(", "), show(m)),
                ));
            }
        } else if l.starts_with("rename from ") {
            rename_from = Some(line);
        } else if l.starts_with("rename to ") {
            rename_to = Some(line);
        } else if l.starts_with("copy from ") {
            copy_from = Some(line);
        } else if l.starts_with("copy to ") {
            copy_to = Some(line);
        } else if l.starts_with("index ") || l.starts_with("similarity index ") || l.starts_with("dissimilarity index ")
        {
        } else if l.starts_with("Binary files ") {
            pairs(rename_from, rename_to, copy_from, copy_to)?;
            cur.advance();
            return Ok((kind, 0));
        } else if l == "GIT binary patch" {
            pairs(rename_from, rename_to, copy_from, copy_to)?;
            cur.advance();
            // The payload: `literal N`/`delta N` blocks of base85 lines, blank-separated.
            while cur.peek().is_some_and(is_binary_payload) {
                cur.advance();
            }
            return Ok((kind, 0));
        } else {
            return Err((
                line,
                None,
                format!(
                    "expected a git extended header (`index`, `new file mode`, `rename from`, …), `---` or `diff --git` in the header of the file at line {start_line}, found {}",
                    show(l)
                ),
            ));
        }
        cur.advance();
    }
    pairs(rename_from, rename_to, copy_from, copy_to)?;
    let hunks = scan_file_headers_and_hunks(cur)?;
    Ok((kind, hunks))
}

/// A `---` section of a plain unified diff.
fn scan_plain(cur: &mut Cursor<'_>) -> Result<(SectionKind, usize), ScanError> {
    let hunks = scan_file_headers_and_hunks(cur)?;
    Ok((SectionKind::Plain, hunks))
}

/// `--- old`, `+++ new`, then one or more hunks.
fn scan_file_headers_and_hunks(cur: &mut Cursor<'_>) -> Result<usize, ScanError> {
    let minus_line = cur.line;
    cur.advance(); // `--- `
    match cur.peek() {
        Some(l) if l.starts_with("+++ ") => cur.advance(),
        Some(l) => {
            return Err((
                cur.line,
                None,
                format!(
                    "expected the `+++` file header after the `---` line {minus_line}, found {}",
                    show(l)
                ),
            ))
        }
        None => {
            return Err((
                cur.line,
                None,
                format!("expected the `+++` file header after the `---` line {minus_line}, found the end of the input"),
            ))
        }
    }
    let hunks = scan_hunks(cur, "input")?;
    if hunks == 0 {
        let found = cur.peek().map_or("the end of the input".to_string(), show);
        return Err((
            cur.line,
            None,
            format!("expected a hunk header `@@ -a,b +c,d @@` after the `+++` line, found {found}"),
        ));
    }
    Ok(hunks)
}

fn is_binary_payload(l: &str) -> bool {
    const B85: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
    let b = l.as_bytes();
    l.is_empty()
        || l.strip_prefix("literal ")
            .or_else(|| l.strip_prefix("delta "))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1..].iter().all(|c| B85.contains(c)))
}

#[derive(Debug, Clone, Copy)]
struct HunkHeader {
    old_start: u32,
    old_len: u32,
    new_start: u32,
    new_len: u32,
}

/// Hunks while the next line starts with `@@`. Line counts, not the text,
/// decide where a hunk ends. `what` names the input for the EOF message.
fn scan_hunks(cur: &mut Cursor<'_>, what: &str) -> Result<usize, ScanError> {
    let mut n = 0;
    let mut prev: Option<HunkHeader> = None;
    while let Some(l) = cur.peek().filter(|l| l.starts_with("@@")) {
        let hline = cur.line;
        let h = parse_hunk_header(l).map_err(|(i, m)| (hline, Some(l[..i].chars().count() + 1), m))?;
        if let Some(p) = prev {
            if p.old_start as u64 + p.old_len as u64 > h.old_start as u64
                || p.new_start as u64 + p.new_len as u64 > h.new_start as u64
            {
                return Err((
                    hline,
                    None,
                    "expected hunks in order: this hunk overlaps or precedes the previous one".into(),
                ));
            }
        }
        cur.last_hunk = hline;
        cur.advance();
        scan_hunk_body(cur, hline, h, what)?;
        prev = Some(h);
        n += 1;
    }
    Ok(n)
}

fn scan_hunk_body(cur: &mut Cursor<'_>, hline: usize, h: HunkHeader, what: &str) -> Result<(), ScanError> {
    let (mut old, mut new) = (0u32, 0u32);
    // `\ No newline at end of file` seen after a context / removed / added line.
    let (mut nonl_ctx, mut nonl_del, mut nonl_ins) = (false, false, false);
    let mut last: Option<u8> = None;
    let short = |old: u32, new: u32| {
        format!(
            "expected {} old-side and {} new-side lines for the hunk at line {hline}, found {old} and {new}",
            h.old_len, h.new_len
        )
    };
    loop {
        let complete = old == h.old_len && new == h.new_len;
        let Some(l) = cur.peek() else {
            if complete {
                return Ok(());
            }
            return Err((
                hline,
                None,
                format!("{}: the {what} ends early (truncated?)", short(old, new)),
            ));
        };
        let c = l.as_bytes().first().copied().unwrap_or(b'\n');
        if c == b'\\' && l.starts_with(NO_NEWLINE) {
            let flag = match last {
                Some(b' ') => &mut nonl_ctx,
                Some(b'-') => &mut nonl_del,
                Some(b'+') => &mut nonl_ins,
                _ => {
                    return Err((
                        cur.line,
                        None,
                        "expected a hunk line before `\\ No newline at end of file`".into(),
                    ))
                }
            };
            if *flag {
                return Err((
                    cur.line,
                    None,
                    "expected at most one `\\ No newline at end of file` per side of a hunk".into(),
                ));
            }
            *flag = true;
            last = Some(b'\\');
            cur.advance();
            continue;
        }
        if complete {
            return Ok(());
        }
        let line = cur.line;
        if nonl_ctx {
            return Err((
                line,
                None,
                format!(
                    "{}: a context line without a final newline must be the hunk's last line",
                    short(old, new)
                ),
            ));
        }
        match c {
            b' ' | b'\n' => {
                if old == h.old_len || new == h.new_len {
                    return Err((
                        line,
                        None,
                        format!("{}: a context line here exceeds the header's count", short(old, new)),
                    ));
                }
                old += 1;
                new += 1;
                last = Some(b' ');
            }
            b'-' => {
                if nonl_del || old == h.old_len {
                    return Err((
                        line,
                        None,
                        format!(
                            "{}: a removed line here exceeds the header's old-side count",
                            short(old, new)
                        ),
                    ));
                }
                old += 1;
                last = Some(b'-');
            }
            b'+' => {
                if nonl_ins || new == h.new_len {
                    return Err((
                        line,
                        None,
                        format!(
                            "{}: an added line here exceeds the header's new-side count",
                            short(old, new)
                        ),
                    ));
                }
                new += 1;
                last = Some(b'+');
            }
            _ => {
                return Err((
                    line,
                    None,
                    format!(
                        "expected a hunk line (starting with ` `, `-`, `+` or `\\`), found {}: {}",
                        show(l),
                        short(old, new)
                    ),
                ))
            }
        }
        cur.advance();
    }
}

/// `@@ -a[,b] +c[,d] @@[ context]`. Errors carry the byte index of the problem.
fn parse_hunk_header(l: &str) -> Result<HunkHeader, (usize, String)> {
    const SHAPE: &str = "`@@ -<start>[,<count>] +<start>[,<count>] @@`";
    if l.starts_with("@@@") {
        return Err((
            0,
            "combined diff hunk (`@@@`, of a merge commit) is not supported: expected a two-way hunk header".into(),
        ));
    }
    let b = l.as_bytes();
    let lit = |i: &mut usize, s: &str, what: &str| -> Result<(), (usize, String)> {
        if b.get(*i..*i + s.len()) == Some(s.as_bytes()) {
            *i += s.len();
            Ok(())
        } else {
            Err((*i, format!("expected {what} in the hunk header {SHAPE}")))
        }
    };
    let num = |i: &mut usize, what: &str| -> Result<u32, (usize, String)> {
        let start = *i;
        let mut v: u32 = 0;
        while let Some(d) = b.get(*i).filter(|d| d.is_ascii_digit()) {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add((d - b'0') as u32))
                .ok_or((
                    start,
                    format!("expected a line number of at most {} in the hunk header", u32::MAX),
                ))?;
            *i += 1;
        }
        if *i == start {
            return Err((start, format!("expected {what} (digits) in the hunk header {SHAPE}")));
        }
        Ok(v)
    };
    let range = |i: &mut usize, side: &str| -> Result<(u32, u32), (usize, String)> {
        let at = *i;
        let start = num(i, &format!("the {side} start line"))?;
        let len = if b.get(*i) == Some(&b',') {
            *i += 1;
            num(i, &format!("the {side} line count"))?
        } else {
            1
        };
        if start == 0 && len > 0 {
            return Err((
                at,
                format!("expected a {side} start line of at least 1 for a non-empty range"),
            ));
        }
        if start.checked_add(len).is_none() {
            return Err((
                at,
                format!("expected a line number of at most {} in the hunk header", u32::MAX),
            ));
        }
        Ok((start, len))
    };
    let mut i = 0;
    lit(&mut i, "@@ -", "`@@ -`")?;
    let (old_start, old_len) = range(&mut i, "old-side")?;
    lit(&mut i, " +", "` +`")?;
    let (new_start, new_len) = range(&mut i, "new-side")?;
    lit(&mut i, " @@", "` @@`")?;
    Ok(HunkHeader {
        old_start,
        old_len,
        new_start,
        new_len,
    })
}

// ---------------------------------------------------------------------------
// Sections → FileChange (through diffy)

/// Run a third-party parser on untrusted input without letting a panic in it
/// escape (the crate promises never to panic on bad input).
fn guarded<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
    std::panic::catch_unwind(f).map_err(|_| "the diff parser failed on this input".to_string())
}

fn build_file(file: &str, text: &str, s: &Section) -> Result<FileChange, InputError> {
    let body = &text[s.start..s.end];
    let fail = |msg: String| InputError::new(Location::at(file, s.line, None), msg);
    if s.kind == SectionKind::PlainBinary {
        return plain_binary(body.trim_end()).map_err(fail);
    }
    let git = matches!(s.kind, SectionKind::Git { .. });
    let opts = if git {
        diffy::patch_set::ParseOptions::gitdiff()
    } else {
        diffy::patch_set::ParseOptions::unidiff()
    };
    let parsed = guarded(move || {
        let mut set = diffy::patch_set::PatchSet::parse(body, opts);
        let first = set.next();
        let extra = set.next().is_some();
        (first, extra)
    })
    .map_err(&fail)?;
    let fp = match parsed {
        (Some(Ok(fp)), false) => fp,
        (Some(Err(e)), _) => return Err(fail(format!("in the file that starts here: {e}"))),
        _ => {
            return Err(fail(
                "internal parser disagreement on the file that starts here; please report this input".into(),
            ))
        }
    };
    use diffy::patch_set::FileOperation as Op;
    let hunks: &[diffy::Hunk<'_, str>] = fp.patch().as_text().map_or(&[], |p| p.hunks());
    if hunks.len() != s.hunks {
        return Err(fail(format!(
            "internal parser disagreement ({} vs {} hunks); please report this input",
            hunks.len(),
            s.hunks
        )));
    }
    let binary = fp.patch().is_binary();
    let (status, path, old_path) = match (fp.operation(), &s.kind) {
        (Op::Rename { from, to }, _) => (FileStatus::Renamed, to.to_string(), Some(from.to_string())),
        (Op::Copy { from, to }, _) => (FileStatus::Copied, to.to_string(), Some(from.to_string())),
        (Op::Create(p), SectionKind::Git { prefixed }) => (FileStatus::Added, strip(p, "b/", *prefixed), None),
        (Op::Delete(p), SectionKind::Git { prefixed }) => (FileStatus::Deleted, strip(p, "a/", *prefixed), None),
        (Op::Modify { modified, .. }, SectionKind::Git { prefixed }) => {
            let mode_only = hunks.is_empty()
                && !binary
                && fp.old_mode().is_some()
                && fp.new_mode().is_some()
                && fp.old_mode() != fp.new_mode();
            let status = if mode_only {
                FileStatus::ModeOnly
            } else {
                FileStatus::Modified
            };
            (status, strip(modified, "b/", *prefixed), None)
        }
        (Op::Create(p), _) => (FileStatus::Added, plain_names(None, Some(p)).1, None),
        (Op::Delete(p), _) => (FileStatus::Deleted, plain_names(Some(p), None).0, None),
        (Op::Modify { original, modified }, _) => (
            FileStatus::Modified,
            plain_names(Some(original), Some(modified)).1,
            None,
        ),
    };
    if path.is_empty() || path == "/dev/null" || old_path.as_deref().is_some_and(|p| p.is_empty() || p == "/dev/null") {
        return Err(fail(
            "expected a file name in the headers of the file that starts here".into(),
        ));
    }
    let (added, deletions, removed, context) = lines_of(hunks).map_err(fail)?;
    Ok(FileChange {
        path,
        old_path,
        status,
        binary,
        lines_known: true,
        added,
        deletions,
        removed,
        context,
    })
}

fn strip(p: &str, prefix: &str, on: bool) -> String {
    if on { p.strip_prefix(prefix).unwrap_or(p) } else { p }.to_string()
}

/// Repository paths from a plain diff's names: `a/x`/`b/x` lose their
/// prefixes; `base/x`/`head/x` (as `diff -ru base head` writes) lose their
/// first component; anything else is kept as written.
fn plain_names(old: Option<&str>, new: Option<&str>) -> (String, String) {
    let a_ok = old.is_none_or(|o| o.starts_with("a/"));
    let b_ok = new.is_none_or(|n| n.starts_with("b/"));
    let tail = |p: &str| p.split_once('/').map(|(_, t)| t.to_string());
    let (o, n) = (old.unwrap_or(""), new.unwrap_or(""));
    if a_ok && b_ok {
        return (strip(o, "a/", true), strip(n, "b/", true));
    }
    if let (Some(to), Some(tn)) = (tail(o), tail(n)) {
        if to == tn && o != n && !to.is_empty() {
            return (to, tn);
        }
    }
    (o.to_string(), n.to_string())
}

/// `Binary files X and Y differ` outside a git header (`diff -r`).
fn plain_binary(l: &str) -> Result<FileChange, String> {
    let expected = || {
        format!(
            "expected `Binary files <old> and <new> differ` with two names, found {}",
            show(l)
        )
    };
    // Not slices by length: `Binary files differ` has the prefix and suffix overlapping.
    let inner = l
        .strip_prefix("Binary files ")
        .and_then(|r| r.strip_suffix(" differ"))
        .ok_or_else(expected)?;
    let splits: Vec<(&str, &str)> = inner
        .match_indices(" and ")
        .map(|(i, _)| (&inner[..i], &inner[i + 5..]))
        .collect();
    let pick = match splits.as_slice() {
        [one] => Some(*one),
        many => many.iter().copied().find(|(o, n)| {
            *o == "/dev/null" || *n == "/dev/null" || o.split_once('/').map(|x| x.1) == n.split_once('/').map(|x| x.1)
        }),
    };
    let Some((o, n)) =
        pick.filter(|(o, n)| !(o.is_empty() || n.is_empty() || (*o == "/dev/null" && *n == "/dev/null")))
    else {
        return Err(expected());
    };
    let (status, path) = match (o == "/dev/null", n == "/dev/null") {
        (true, false) => (FileStatus::Added, plain_names(None, Some(n)).1),
        (false, true) => (FileStatus::Deleted, plain_names(Some(o), None).0),
        _ => (FileStatus::Modified, plain_names(Some(o), Some(n)).1),
    };
    Ok(FileChange {
        path,
        old_path: None,
        status,
        binary: true,
        lines_known: true,
        added: Vec::new(),
        deletions: Vec::new(),
        removed: Vec::new(),
        context: Vec::new(),
    })
}

fn line_text(t: &str) -> String {
    t.strip_suffix('\n').unwrap_or(t).trim_end_matches('\r').to_string()
}

fn to_u32(n: usize) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("expected line numbers of at most {}, found {n}", u32::MAX))
}

type FileLines = (Vec<AddedLine>, Vec<Deletion>, Vec<RemovedLine>, Vec<ContextLine>);

/// Added lines, pure deletions, every removed line and the context lines of a file's hunks.
fn lines_of(hunks: &[diffy::Hunk<'_, str>]) -> Result<FileLines, String> {
    use diffy::Line;
    let mut added = Vec::new();
    let mut deletions = Vec::new();
    let mut removed = Vec::new();
    let mut context = Vec::new();
    for h in hunks {
        // An empty range's start names the line before it (`@@ -15,2 +14,0 @@`).
        let mut old = h.old_range().start() + usize::from(h.old_range().is_empty());
        let mut new = h.new_range().start() + usize::from(h.new_range().is_empty());
        let lines = h.lines();
        let (old_scopes, new_scopes) = scopes_of_hunk(lines, h.function_context());
        let mut i = 0;
        while i < lines.len() {
            match lines[i] {
                Line::Context(t) => {
                    context.push(ContextLine {
                        old_line: to_u32(old)?,
                        line: to_u32(new)?,
                        text: line_text(t),
                    });
                    old += 1;
                    new += 1;
                    i += 1;
                }
                Line::Insert(t) => {
                    added.push(AddedLine {
                        line: to_u32(new)?,
                        text: line_text(t),
                        scope: new_scopes[i].clone(),
                    });
                    new += 1;
                    i += 1;
                }
                Line::Delete(_) => {
                    let j = i + lines[i..].iter().take_while(|l| matches!(l, Line::Delete(_))).count();
                    for (k, l) in lines[i..j].iter().enumerate() {
                        if let Line::Delete(t) = l {
                            removed.push(RemovedLine {
                                line: to_u32(old + k)?,
                                text: line_text(t),
                                scope: old_scopes[i + k].clone(),
                            });
                        }
                    }
                    let replaced = (i > 0 && matches!(lines[i - 1], Line::Insert(_)))
                        || matches!(lines.get(j), Some(Line::Insert(_)));
                    if !replaced {
                        let text = lines[i..j]
                            .iter()
                            .map(|l| match l {
                                Line::Delete(t) | Line::Context(t) | Line::Insert(t) => line_text(t),
                            })
                            .collect();
                        deletions.push(Deletion {
                            old_start: to_u32(old)?,
                            old_count: to_u32(j - i)?,
                            after: to_u32(new.saturating_sub(1))?,
                            text,
                        });
                    }
                    old += j - i;
                    i = j;
                }
            }
        }
    }
    Ok((added, deletions, removed, context))
}

// ---------------------------------------------------------------------------
// Scopes: which `def`/`class` a changed line is in, from the hunk alone.

/// The scope of each line of a hunk, on its own side: `(old side, new side)`,
/// both indexed like `lines` (an entry for a line not on that side is
/// [`Scope::Unknown`]). See [`scopes_of_side`].
fn scopes_of_hunk(lines: &[diffy::Line<'_, str>], header: Option<&str>) -> (Vec<Scope>, Vec<Scope>) {
    use diffy::Line;
    let side = |old_side: bool| {
        let on_side = |l: &Line<'_, str>| match l {
            Line::Context(_) => true,
            Line::Delete(_) => old_side,
            Line::Insert(_) => !old_side,
        };
        let idx: Vec<usize> = (0..lines.len()).filter(|&i| on_side(&lines[i])).collect();
        let texts: Vec<String> = idx
            .iter()
            .map(|&i| match lines[i] {
                Line::Context(t) | Line::Insert(t) | Line::Delete(t) => line_text(t),
            })
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut out = vec![Scope::Unknown; lines.len()];
        for (k, scope) in scopes_of_side(&texts, header).into_iter().enumerate() {
            out[idx[k]] = scope;
        }
        out
    };
    (side(true), side(false))
}

/// Leading whitespace as a column (a tab advances to the next multiple of 8);
/// `None` for a line with no code (blank or only a comment).
fn code_indent(t: &str) -> Option<usize> {
    let mut col = 0;
    for c in t.chars() {
        match c {
            ' ' => col += 1,
            '\t' => col = col / 8 * 8 + 8,
            '\x0c' => {}
            '#' => return None,
            _ => return Some(col),
        }
    }
    None
}

/// The name a `def`, `async def` or `class` line opens.
pub fn block_name(t: &str) -> Option<&str> {
    let t = t.trim_start();
    let t = t
        .strip_prefix("async")
        .filter(|r| r.starts_with([' ', '\t']))
        .map_or(t, str::trim_start);
    let rest = t
        .strip_prefix("def")
        .or_else(|| t.strip_prefix("class"))
        .filter(|r| r.starts_with([' ', '\t']))?
        .trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The scope of each line of one side of a hunk, `texts` being that side's
/// lines in order (context lines and that side's changed lines) and `header`
/// the text after the hunk header's `@@ … @@`.
///
/// A line is inside the nearest less-indented line above it, and that one
/// inside the nearest less-indented line above it, up to a line at column 0:
/// the `def`/`class` lines of that chain are the scope. (Lines with no code —
/// blank, comment — stay [`Scope::Unknown`]; a line opening with a closing
/// bracket belongs to the line that opened it.) A line in a decorator belongs
/// to the `def` or `class` the decorator decorates, found further down the hunk.
/// When the chain stops short of column 0 at the top of the hunk, the header
/// supplies the enclosing `def`/`class` when it shows one (git's default
/// header is the last column-0 line above the hunk; with a `diff=python`
/// driver it is the nearest `def`/`class` at any depth, which this reads as
/// the outermost); below a `class` header the chain is complete only when the
/// hunk shows the method. What the hunk cannot show
/// stays unknown: a chain with no block in it, a decorator whose `def` lies
/// past the hunk's end. A line inside a triple-quoted string is where the line
/// that opened the string is (a hunk that starts inside a string misreads it).
pub fn scopes_of_side(texts: &[&str], header: Option<&str>) -> Vec<Scope> {
    struct Open {
        indent: usize,
        name: Option<String>,
        is_def: bool,
        decorator: bool,
    }
    // Lines waiting for the `def` a decorator decorates: (decorator's indent,
    // names around the decorator, complete, the lines). One group per
    // decorator chain, so that waiting stays linear.
    type Pending = (usize, Vec<String>, bool, Vec<usize>);
    let mut pending: Vec<Pending> = Vec::new();
    let wait = |pending: &mut Vec<Pending>, at: usize, names: Vec<String>, complete: bool, line: usize| match pending
        .last_mut()
    {
        Some(p) if p.0 == at && p.1 == names && p.2 == complete => p.3.push(line),
        _ => pending.push((at, names, complete, vec![line])),
    };
    let mut out = vec![Scope::Unknown; texts.len()];
    let mut stack: Vec<Open> = Vec::new();
    // Lines whose scope came from the header, while no column-0 line has confirmed it.
    let mut tentative: Vec<usize> = Vec::new();
    let header = header.map(|h| h.trim_end_matches(['\n', '\r']));
    let header_block = header
        .filter(|h| !h.starts_with([' ', '\t']))
        .and_then(|h| block_name(h).map(|n| (n.to_string(), h.trim_start().starts_with("class"))));
    // Names of the first `n` open lines, completed by the header when they stop
    // short of column 0; and whether the header was used.
    let around = |stack: &[Open], n: usize, indent: usize| -> (Vec<String>, bool, bool) {
        let open = &stack[..n];
        let mut names: Vec<String> = open.iter().filter_map(|o| o.name.clone()).collect();
        let lowest = open.first().map_or(indent, |o| o.indent);
        let mut complete = lowest == 0;
        let mut used = false;
        if !complete {
            if let Some((h, is_class)) = &header_block {
                names.insert(0, h.clone());
                used = true;
                // Below a `def` everything is that function's; below a `class`, only a
                // method shown in the hunk says which method the line is in.
                complete = !is_class || open.first().is_some_and(|o| o.is_def);
            }
        }
        (names, complete, used)
    };
    let known = |names: Vec<String>, complete: bool| {
        if complete || !names.is_empty() {
            Scope::Known { names, complete }
        } else {
            Scope::Unknown
        }
    };
    // Inside a triple-quoted string: its delimiter and the line that opened it.
    let mut in_string: Option<(&str, usize)> = None;
    let mut string_lines: Vec<(usize, usize)> = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        if let Some((delim, opener)) = in_string {
            string_lines.push((i, opener));
            if t.matches(delim).count() % 2 == 1 {
                in_string = None;
            }
            continue;
        }
        let Some(indent) = code_indent(t) else { continue };
        if let Some(delim) = opens_string(t) {
            in_string = Some((delim, i));
        }
        let trimmed = t.trim_start();
        let closing = trimmed.starts_with([')', ']', '}']);
        let name = if closing { None } else { block_name(t) };
        let decorator = !closing && trimmed.starts_with('@');
        if !closing {
            // Decorated lines wait for their `def`: it comes at the decorator's indent.
            pending.retain(|(at, names, complete, lines)| {
                if *at < indent || (*at == indent && decorator) {
                    return true;
                }
                if *at == indent {
                    if let Some(n) = name {
                        let mut names = names.clone();
                        names.push(n.to_string());
                        for k in lines {
                            out[*k] = Scope::Known {
                                names: names.clone(),
                                complete: *complete,
                            };
                        }
                    }
                }
                false
            });
        }
        let eff = if closing { indent + 1 } else { indent };
        while stack.last().is_some_and(|o| o.indent >= eff) {
            stack.pop();
        }
        if let Some(d) = stack.iter().position(|o| o.decorator) {
            let (names, complete, _) = around(&stack, d, stack[d].indent);
            wait(&mut pending, stack[d].indent, names, complete, i);
        } else if decorator {
            let (names, complete, _) = around(&stack, stack.len(), indent);
            wait(&mut pending, indent, names, complete, i);
        } else {
            let (mut names, complete, used) = around(&stack, stack.len(), eff);
            if let Some(n) = name {
                names.push(n.to_string());
            }
            out[i] = known(names, complete);
            if used {
                tentative.push(i);
            }
        }
        if indent == 0 {
            if closing {
                // A bracket opened at column 0 above the hunk closes here: the lines
                // read under the header were in it — in a decorator (git's header
                // skips `@` lines), so they belong to the `def` that follows.
                for k in tentative.drain(..) {
                    out[k] = Scope::Unknown;
                    wait(&mut pending, 0, Vec::new(), true, k);
                }
            } else {
                tentative.clear();
            }
        }
        if !closing {
            stack.push(Open {
                indent,
                name: name.map(str::to_string),
                is_def: name.is_some() && !trimmed.starts_with("class"),
                decorator,
            });
        }
    }
    // A string's lines are where the line that opened it is.
    for (i, opener) in string_lines {
        out[i] = out[opener].clone();
    }
    out
}

/// The triple quote a line leaves open (an odd number of them), if any.
fn opens_string(t: &str) -> Option<&'static str> {
    let (at, delim) = ["\"\"\"", "'''"]
        .into_iter()
        .filter_map(|d| t.find(d).map(|i| (i, d)))
        .min_by_key(|(i, _)| *i)?;
    if t[..at].contains('#') {
        return None;
    }
    (t.matches(delim).count() % 2 == 1).then_some(delim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;
    use std::path::PathBuf;

    fn corpus_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diffs")
    }

    fn corpus_file(name: &str) -> String {
        std::fs::read_to_string(corpus_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn expected() -> Value {
        serde_json::from_str(&corpus_file("expected.json")).unwrap()
    }

    /// Every `*.diff` of the corpus, by name.
    fn corpus_diffs() -> Vec<(String, String)> {
        let mut v: Vec<_> = std::fs::read_dir(corpus_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".diff"))
            .map(|n| {
                let t = corpus_file(&n);
                (n, t)
            })
            .collect();
        v.sort();
        v
    }

    fn status_name(s: FileStatus) -> String {
        serde_json::to_value(s).unwrap().as_str().unwrap().to_string()
    }

    fn nums(v: &Value) -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap() as u32)
            .collect()
    }

    /// Compare one parsed file with an `expected.json` file record.
    fn check_file(ctx: &str, got: &FileChange, want: &Value) {
        let status = want["status"].as_str().unwrap();
        let want_path = if status == "deleted" {
            &want["old_path"]
        } else {
            &want["new_path"]
        };
        assert_eq!(got.path, want_path.as_str().unwrap(), "{ctx}: path");
        let want_old = match status {
            "renamed" | "copied" => want["old_path"].as_str(),
            _ => None,
        };
        assert_eq!(got.old_path.as_deref(), want_old, "{ctx}: old_path");
        assert_eq!(status_name(got.status), status, "{ctx}: status");
        assert_eq!(got.binary, want["binary"].as_bool().unwrap(), "{ctx}: binary");
        assert!(got.lines_known, "{ctx}: lines_known");
        assert_eq!(
            got.added_line_numbers(),
            nums(&want["added_lines"]),
            "{ctx}: added lines"
        );
        let dels: Vec<(u32, u32)> = got
            .deletions
            .iter()
            .map(|d| (d.old_start, d.old_start + d.old_count - 1))
            .collect();
        let want_dels: Vec<(u32, u32)> = want["pure_deletions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap() as u32, p[1].as_u64().unwrap() as u32))
            .collect();
        assert_eq!(dels, want_dels, "{ctx}: pure deletions [first, last]");
        for d in &got.deletions {
            assert_eq!(d.text.len(), d.old_count as usize, "{ctx}: deletion text");
        }
        for a in &got.added {
            assert!(
                !a.text.ends_with('\r') && !a.text.ends_with('\n'),
                "{ctx}: line ending kept in {:?}",
                a.text
            );
        }
    }

    #[test]
    fn corpus_matches_expected_json() {
        let exp = expected();
        let table = exp["diffs"].as_object().unwrap();
        let diffs = corpus_diffs();
        assert!(diffs.len() >= 15, "corpus missing? {} diffs", diffs.len());
        for (name, text) in &diffs {
            let want = table
                .get(name)
                .unwrap_or_else(|| panic!("{name} has no entry in expected.json"));
            let patch = parse_unified(name, text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let want_files = want["files"].as_array().unwrap();
            assert_eq!(
                patch.files.len(),
                want_files.len(),
                "{name}: file count: {:?}",
                patch.files
            );
            for (i, (got, w)) in patch.files.iter().zip(want_files).enumerate() {
                check_file(&format!("{name}[{i}] {}", got.path), got, w);
            }
            // The scanner's hunk count per file, against `hunks`.
            let norm = normalize_eol(text);
            let sections = scan(name, &norm).unwrap();
            let hunks: Vec<u64> = sections.iter().map(|s| s.hunks as u64).collect();
            let want_hunks: Vec<u64> = want_files.iter().map(|f| f["hunks"].as_u64().unwrap()).collect();
            assert_eq!(hunks, want_hunks, "{name}: hunks per file");
            // Same result from bytes, and from the diff with CRLF line endings.
            assert_eq!(
                parse_unified_bytes(name, text.as_bytes()).unwrap(),
                patch,
                "{name}: bytes"
            );
            let crlf = text.replace('\n', "\r\n");
            assert_eq!(parse_unified(name, &crlf).unwrap(), patch, "{name}: CRLF-encoded diff");
        }
        for name in table.keys() {
            assert!(
                diffs.iter().any(|(n, _)| n == name),
                "expected.json names {name}, which is not in the corpus"
            );
        }
    }

    #[test]
    fn corpus_line_texts() {
        let p = parse_unified("crlf.diff", &corpus_file("crlf.diff")).unwrap();
        assert_eq!(
            p.files[0].added,
            vec![AddedLine {
                line: 2,
                text: "SECOND".into(),
                scope: Scope::module(),
            }]
        );
        let p = parse_unified("no_newline.diff", &corpus_file("no_newline.diff")).unwrap();
        assert_eq!(
            p.files[1].added,
            vec![AddedLine {
                line: 3,
                text: "GAMMA".into(),
                scope: Scope::module(),
            }]
        );
        let p = parse_unified("header_like.diff", &corpus_file("header_like.diff")).unwrap();
        let texts: Vec<_> = p.files[0].added.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(texts, ["++ y", "diff --git a/fake b/fake", "@@ -1 +1 @@"]);
        let p = parse_unified("multi_hunk.diff", &corpus_file("multi_hunk.diff")).unwrap();
        assert_eq!(
            p.files[0].deletions,
            vec![Deletion {
                old_start: 15,
                old_count: 2,
                after: 14,
                text: vec!["value_15 = 15".into(), "value_16 = 16".into()]
            }]
        );
        let mut u0 = parse_unified("u0.diff", &corpus_file("u0.diff")).unwrap();
        let mut p = p;
        // Only the context lines differ.
        assert!(u0.files.iter().all(|f| f.context.is_empty()));
        p.files
            .iter_mut()
            .chain(u0.files.iter_mut())
            .for_each(|f| f.context.clear());
        assert_eq!(u0.files, p.files, "-U0 and -U3 give the same lines");
        let p = parse_unified("deleted.diff", &corpus_file("deleted.diff")).unwrap();
        assert_eq!(
            (p.files[0].deletions[0].after, p.files[0].deletions[0].old_count),
            (0, 5)
        );
    }

    #[test]
    fn github_files_agree_with_the_git_diff() {
        let gh = parse_github_files("github-files.json", &corpus_file("github-files.json")).unwrap();
        let git = parse_unified("combined.diff", &corpus_file("combined.diff")).unwrap();
        assert_eq!(gh.files.len(), git.files.len());
        for g in &gh.files {
            let d = git
                .files
                .iter()
                .find(|f| f.path == g.path)
                .unwrap_or_else(|| panic!("{} not in combined.diff", g.path));
            assert_eq!(
                (g.status, &g.old_path, g.binary),
                (d.status, &d.old_path, d.binary),
                "{}",
                g.path
            );
            if g.path == "data/huge.csv" {
                assert!(
                    !g.lines_known && g.added.is_empty(),
                    "GitHub omits the patch of huge files"
                );
                continue;
            }
            assert!(g.lines_known, "{}", g.path);
            assert_eq!(g.added, d.added, "{}", g.path);
            assert_eq!(g.deletions, d.deletions, "{}", g.path);
        }
    }

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

    #[test]
    fn renames_copies_modes_binary_quoting() {
        let d = "diff --git a/m.sh b/m.sh\nold mode 100644\nnew mode 100755\nindex b77b4eb..7061c57\n--- a/m.sh\n+++ b/m.sh\n@@ -1,2 +1,2 @@\n x\n-y\n+Y\n\
diff --git \"a/ta\\tb.txt\" \"b/ta\\tb.txt\"\nindex 8cc35a3..bac686b 100644\n--- \"a/ta\\tb.txt\"\n+++ \"b/ta\\tb.txt\"\n@@ -1 +1 @@\n-tab\n+tab2\n\
diff --git a/t.txt \"b/\\303\\251t\\303\\251 dir.txt\"\nsimilarity index 66%\nrename from t.txt\nrename to \"\\303\\251t\\303\\251 dir.txt\"\nindex de98044..7be73ce 100644\n--- a/t.txt\n+++ \"b/\\303\\251t\\303\\251 dir.txt\"\t\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n\
diff --git a/bin.dat b/bin.dat\nindex 3e71795..8d14728 100644\nGIT binary patch\nliteral 5\nMcmZ?wbYx^;00Zv;L;wH)\n\nliteral 5\nMcmZ?wbY*1z00Zv?L;wH)\n\n\
diff --git a/b.png b/c.png\nsimilarity index 100%\nrename from b.png\nrename to c.png\n";
        let p = parse_unified("x.diff", d).unwrap();
        let summary: Vec<_> = p
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.old_path.as_deref(), f.status, f.binary))
            .collect();
        assert_eq!(
            summary,
            [
                ("m.sh", None, FileStatus::Modified, false),
                ("ta\tb.txt", None, FileStatus::Modified, false),
                ("été dir.txt", Some("t.txt"), FileStatus::Renamed, false),
                ("bin.dat", None, FileStatus::Modified, true),
                ("c.png", Some("b.png"), FileStatus::Renamed, false),
            ]
        );
        assert_eq!(p.files[2].added_line_numbers(), [2]);
        assert_eq!(
            p.paths().collect::<Vec<_>>(),
            ["m.sh", "ta\tb.txt", "été dir.txt", "t.txt", "bin.dat", "c.png", "b.png"]
        );
    }

    #[test]
    fn header_only_git_sections() {
        // `git diff -w` prints `diff --git` + `index` for whitespace-only changes;
        // `--no-prefix` keeps names as they are; a symlink is a one-line file.
        let d = "diff --git a/ws.py b/ws.py\nindex 1111111..2222222 100644\n\n\
diff --git src/np.py src/np.py\nindex 1111111..2222222 100644\n--- src/np.py\n+++ src/np.py\n@@ -1 +1,2 @@\n x\n+y\n\
diff --git a/ln b/ln\nnew file mode 120000\nindex 0000000..3333333\n--- /dev/null\n+++ b/ln\n@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n\
diff --git a/old name.py b/new name.py\nold mode 100644\nnew mode 100755\nsimilarity index 100%\nrename from old name.py\nrename to new name.py\n";
        let p = parse_unified("h.diff", d).unwrap();
        let summary: Vec<_> = p
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.old_path.as_deref(), f.status, f.added_line_numbers()))
            .collect();
        assert_eq!(
            summary,
            [
                ("ws.py", None, FileStatus::Modified, vec![]),
                ("src/np.py", None, FileStatus::Modified, vec![2]),
                ("ln", None, FileStatus::Added, vec![1]),
                ("new name.py", Some("old name.py"), FileStatus::Renamed, vec![]),
            ]
        );
        assert_eq!(p.files[2].added[0].text, "target");
        check_err(
            "diff --git a/x b/x\nold mode 100644\n\nnew mode 100755\n",
            3,
            None,
            "blank line",
        );
    }

    #[test]
    fn plain_unified_diffs() {
        let d = "--- a/src/x.py\t2024-01-01 00:00:00.000000000 +0000\n+++ b/src/x.py\t2024-01-02 00:00:00.000000000 +0000\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n\
diff -ru base/new.py head/new.py\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+n\n\
--- base/lib/y.py\n+++ head/lib/y.py\n@@ -3,2 +3 @@\n k\n--- x\n\
Binary files base/img.png and head/img.png differ\n";
        let p = parse_unified("plain.diff", d).unwrap();
        let summary: Vec<_> = p.files.iter().map(|f| (f.path.as_str(), f.status, f.binary)).collect();
        assert_eq!(
            summary,
            [
                ("src/x.py", FileStatus::Modified, false),
                ("new.py", FileStatus::Added, false),
                ("lib/y.py", FileStatus::Modified, false),
                ("img.png", FileStatus::Modified, true),
            ]
        );
        assert_eq!(
            p.files[2].deletions,
            vec![Deletion {
                old_start: 4,
                old_count: 1,
                after: 3,
                text: vec!["-- x".into()]
            }]
        );
    }

    #[test]
    fn replacement_is_not_a_pure_deletion() {
        let d = "--- a/f\n+++ b/f\n@@ -1,6 +1,4 @@\n-a\n-b\n+B\n c\n+C\n-d\n e\n-f\n";
        let p = parse_unified("r.diff", d).unwrap();
        assert_eq!(p.files[0].added_line_numbers(), [1, 3]);
        assert_eq!(
            p.files[0].deletions,
            vec![Deletion {
                old_start: 6,
                old_count: 1,
                after: 4,
                text: vec!["f".into()]
            }]
        );
    }

    #[test]
    fn odd_binary_lines_are_errors_not_panics() {
        check_err("Binary files differ\n", 1, None, "two names");
        check_err("Binary files /dev/null and /dev/null differ\n", 1, None, "two names");
        check_err("--- \n+++ \n@@ -1 +1 @@\n-a\n+b\n", 1, None, "file name");
    }

    #[test]
    fn empty_input_is_an_empty_patch() {
        assert_eq!(parse_unified("e.diff", "").unwrap(), Patch::default());
        assert_eq!(parse_unified("e.diff", "\n\r\n  \n").unwrap(), Patch::default());
        assert_eq!(parse_unified_bytes("e.diff", b"").unwrap(), Patch::default());
        assert_eq!(parse_github_files("e.json", "[]").unwrap(), Patch::default());
    }

    /// (input, line, column or None, a word of the message)
    fn check_err(input: &str, line: usize, col: Option<usize>, word: &str) {
        let e = parse_unified("in.diff", input).unwrap_err();
        assert_eq!(e.location.file, "in.diff");
        assert_eq!(
            (e.location.line, e.location.column),
            (Some(line), col),
            "{input:?}: {e}"
        );
        assert!(e.message.contains(word), "{input:?}: {e} (wanted {word:?})");
        assert!(e.message.contains("expected"), "{e}");
    }

    #[test]
    fn errors_name_the_line() {
        let multi = corpus_file("multi_hunk.diff");
        // Truncated inside the first hunk: reported at that hunk's header (line 5).
        let truncated: String = multi.lines().take(8).map(|l| format!("{l}\n")).collect();
        check_err(&truncated, 5, None, "truncated");
        // Cut right after the file headers.
        check_err(
            "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n",
            5,
            None,
            "hunk header",
        );
        // A bad hunk header: column of the bad count.
        check_err(
            &multi.replace("@@ -12,8 +12,6 @@", "@@ -12,x +12,6 @@"),
            13,
            Some(8),
            "old-side line count",
        );
        check_err(
            &multi.replace("@@ -12,8 +12,6 @@", "@@ -12,8 12,6 @@"),
            13,
            Some(9),
            "` +`",
        );
        check_err(
            &multi.replace("@@ -12,8 +12,6 @@", "@@ -12,8 +12,6"),
            13,
            Some(15),
            "` @@`",
        );
        // A hunk shorter than its header, followed by the next hunk.
        check_err(
            &multi.replace("@@ -12,8 +12,6 @@", "@@ -12,9 +12,7 @@"),
            22,
            None,
            "expected 9",
        );
        // An added line beyond the header's count (diffy alone would drop it).
        check_err(
            &format!("{}+extra\n", corpus_file("copy.diff")),
            13,
            None,
            "complete hunk",
        );
        // Garbage before, between, inside headers.
        check_err("From 123 Mon Sep 17 00:00:00 2001\n", 1, None, "file header");
        check_err(
            &format!("{}garbage\n{}", corpus_file("copy.diff"), corpus_file("crlf.diff")),
            13,
            None,
            "complete hunk",
        );
        check_err("diff --git a/x b/x\nfoo bar\n", 2, None, "extended header");
        check_err(
            "diff --git a/x b/x\nold mode 100644\nnew mode 777\n",
            3,
            Some(10),
            "file mode",
        );
        check_err(
            "diff --git a/x b/y\nrename from x\n--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n",
            2,
            None,
            "rename to",
        );
        check_err("--- a/x\n@@ -1 +1 @@\n", 2, None, "+++");
        check_err("@@ -1 +1 @@\n-a\n+b\n", 1, None, "file header");
        check_err("diff --cc f\n", 1, Some(1), "combined");
        // Body line of the wrong kind, and overflow.
        check_err("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n*b\n", 5, None, "hunk line");
        check_err(
            "--- a/x\n+++ b/x\n@@ -1 +4294967295,2 @@\n-a\n+b\n+c\n",
            3,
            Some(8),
            "at most 4294967295",
        );
        check_err(
            "--- a/x\n+++ b/x\n@@ -1 +99999999999 @@\n-a\n+b\n",
            3,
            Some(8),
            "at most 4294967295",
        );
        // Hunks out of order.
        check_err(
            "--- a/x\n+++ b/x\n@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-a\n+b\n",
            6,
            None,
            "in order",
        );
        // CRLF line endings keep line numbers.
        check_err(&truncated.replace('\n', "\r\n"), 5, None, "truncated");
    }

    #[test]
    fn non_utf8_is_rejected_with_its_line() {
        let mut bytes = corpus_file("multi_hunk.diff").into_bytes();
        // Line 9 is `+value_03 = 300  # changed`; make its `3` a Latin-1 byte.
        let at = bytes.windows(4).position(|w| w == b"+val").unwrap() + 10;
        bytes[at] = 0xE9;
        let e = parse_unified_bytes("bad.diff", &bytes).unwrap_err();
        assert_eq!((e.location.line, e.location.column), (Some(9), Some(11)), "{e}");
        assert!(e.message.contains("not UTF-8"), "{e}");
        let e = parse_unified_bytes("bad.diff", b"\xff").unwrap_err();
        assert_eq!((e.location.line, e.location.column), (Some(1), Some(1)));
    }

    /// A unified diff built from an edit script, with its true answer.
    /// Old and new lines are all distinct, so any minimal diff of the two files
    /// marks exactly the inserted lines as added and the deleted as removed.
    fn generated(
        keep: &[bool],
        inserts: &[u8],
        context: usize,
        final_newline: bool,
    ) -> (String, Vec<u32>, Vec<(u32, u32, u32)>) {
        let mut old = Vec::new();
        let mut new = Vec::new();
        let mut want_added = Vec::new();
        let mut want_dels = Vec::new(); // (old_start, count, after)
        let (mut block_dels, mut block_ins, mut block_start) = (0u32, 0u32, 0u32);
        let flush = |dels: &mut u32, ins: &mut u32, start: u32, new_len: usize, want: &mut Vec<(u32, u32, u32)>| {
            if *dels > 0 && *ins == 0 {
                want.push((start, *dels, new_len as u32));
            }
            *dels = 0;
            *ins = 0;
        };
        for gap in 0..=keep.len() {
            for k in 0..inserts.get(gap).copied().unwrap_or(0) {
                new.push(format!("new {gap}.{k}"));
                want_added.push(new.len() as u32);
                block_ins += 1;
            }
            if gap == keep.len() {
                break;
            }
            old.push(format!("old {gap}"));
            if keep[gap] {
                flush(&mut block_dels, &mut block_ins, block_start, new.len(), &mut want_dels);
                new.push(format!("old {gap}"));
            } else {
                if block_dels == 0 {
                    block_start = old.len() as u32;
                }
                block_dels += 1;
            }
        }
        if final_newline {
            // A trailing block's `after` is the last new line before it.
            let new_before_trailing = new.len() - block_ins as usize;
            flush(
                &mut block_dels,
                &mut block_ins,
                block_start,
                new_before_trailing,
                &mut want_dels,
            );
        } else {
            // Both files end in the same line without a newline (a context
            // line followed by `\ No newline at end of file`).
            flush(&mut block_dels, &mut block_ins, block_start, new.len(), &mut want_dels);
            old.push("end".into());
            new.push("end".into());
        }
        let join = |v: &[String]| {
            let mut s = v.join("\n");
            if final_newline && !v.is_empty() {
                s.push('\n');
            }
            s
        };
        let (o, n) = (join(&old), join(&new));
        if o == n {
            return (String::new(), Vec::new(), Vec::new());
        }
        let mut opts = diffy::DiffOptions::new();
        opts.set_context_len(context);
        let patch = opts.create_patch(&o, &n).to_string();
        let patch = patch.replacen(
            "--- original\n+++ modified\n",
            "diff --git a/f.py b/f.py\nindex 1111111..2222222 100644\n--- a/f.py\n+++ b/f.py\n",
            1,
        );
        (patch, want_added, want_dels)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn never_panics_on_arbitrary_text(s in "(?s).{0,400}") {
            let _ = parse_unified("p.diff", &s);
        }

        #[test]
        fn never_panics_on_diff_like_text(lines in prop::collection::vec(
            prop_oneof![
                Just("diff --git a/x b/x".to_string()), Just("--- a/x".to_string()), Just("+++ b/x".to_string()),
                Just("--- /dev/null".to_string()), Just("+++ /dev/null".to_string()), Just("new file mode 100644".to_string()),
                Just("rename from x".to_string()), Just("rename to y".to_string()), Just("GIT binary patch".to_string()),
                Just("literal 5".to_string()), Just("Binary files a/x and b/x differ".to_string()),
                Just("Binary files differ".to_string()),
                Just("Binary files /dev/null and  differ".to_string()),
                Just("\\ No newline at end of file".to_string()), Just(String::new()), Just("old mode 100644".to_string()),
                "@@ -[0-9]{1,2}(,[0-9])? \\+[0-9]{1,2}(,[0-9])? @@.{0,3}", "[ +-][a-z\"\\\\]{0,4}", "\"[ab]/[a-z\\\\0-7]{0,6}\"",
            ], 0..40)) {
            let _ = parse_unified("p.diff", &lines.join("\n"));
        }

        #[test]
        fn never_panics_on_arbitrary_bytes(b in prop::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse_unified_bytes("p.diff", &b);
        }

        #[test]
        fn never_panics_on_mutated_corpus(pick in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>(),
                                          edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..6)) {
            let diffs = corpus_diffs();
            let (_, text) = &diffs[pick.index(diffs.len())];
            let mut b = text.clone().into_bytes();
            for (at, byte, op) in edits {
                let i = at.index(b.len() + 1);
                match op {
                    0 => b.insert(i, byte),
                    1 if i < b.len() => { b.remove(i); }
                    _ if i < b.len() => b[i] = byte,
                    _ => {}
                }
            }
            let _ = parse_unified_bytes("m.diff", &b);
            let n = cut.index(b.len() + 1);
            let _ = parse_unified_bytes("m.diff", &b[..n]);
            if let Ok(s) = std::str::from_utf8(&b[..n]) {
                if let Ok(p) = parse_unified("m.diff", s) {
                    for f in &p.files {
                        prop_assert!(f.added.windows(2).all(|w| w[0].line < w[1].line));
                    }
                }
            }
        }

        #[test]
        fn generated_diffs_give_the_true_lines(keep in prop::collection::vec(any::<bool>(), 0..30),
                                               inserts in prop::collection::vec(prop_oneof![3 => Just(0u8), 1 => 1u8..3], 0..31),
                                               context in 0usize..4, final_newline in any::<bool>(), crlf in any::<bool>()) {
            let (patch, want_added, want_dels) = generated(&keep, &inserts, context, final_newline);
            let patch = if crlf { patch.replace('\n', "\r\n") } else { patch };
            let p = parse_unified("g.diff", &patch).map_err(|e| TestCaseError::fail(format!("{e}\n{patch}")))?;
            if patch.is_empty() {
                prop_assert!(p.files.is_empty());
                return Ok(());
            }
            prop_assert_eq!(p.files.len(), 1, "{}", patch);
            let f = &p.files[0];
            prop_assert_eq!(f.added_line_numbers(), want_added, "{}", patch);
            for a in &f.added {
                prop_assert!(a.text.starts_with("new "), "{:?}", a.text);
            }
            let dels: Vec<_> = f.deletions.iter().map(|d| (d.old_start, d.old_count, d.after)).collect();
            prop_assert_eq!(dels, want_dels, "{}", patch);
        }
    }
}

#[cfg(test)]
mod scope_tests {
    use super::*;

    fn known(names: &[&str], complete: bool) -> Scope {
        Scope::Known {
            names: names.iter().map(|n| n.to_string()).collect(),
            complete,
        }
    }

    fn scopes(text: &str, header: Option<&str>) -> Vec<Scope> {
        let lines: Vec<&str> = text.lines().collect();
        scopes_of_side(&lines, header)
    }

    #[test]
    fn blocks_around_a_line() {
        let src = "class TestCart:\n    def test_total(self):\n        cart = Cart()\n\n        def helper():\n            return 1\n        assert cart.total() == 12.0\n    x = 1\nY = 2\n";
        let s = scopes(src, None);
        assert_eq!(s[0], known(&["TestCart"], true));
        assert_eq!(s[1], known(&["TestCart", "test_total"], true));
        assert_eq!(s[2], known(&["TestCart", "test_total"], true));
        assert_eq!(s[3], Scope::Unknown, "a blank line has no scope");
        assert_eq!(s[5], known(&["TestCart", "test_total", "helper"], true));
        assert_eq!(s[6], known(&["TestCart", "test_total"], true));
        assert_eq!(s[7], known(&["TestCart"], true), "class body");
        assert_eq!(s[8], Scope::module());
    }

    #[test]
    fn the_header_completes_a_chain_cut_by_the_hunk() {
        let body = "        cart.add('pen', 2.5, qty=5)\n    def test_add(self):\n        pass\n";
        let s = scopes(body, Some("class TestCart:"));
        assert_eq!(s[0], known(&["TestCart"], false), "the method is not shown");
        assert_eq!(s[2], known(&["TestCart", "test_add"], true));
        let s = scopes(
            "    assert x == 1\n",
            Some("def test_discount(amount, code, expected):"),
        );
        assert_eq!(s[0], known(&["test_discount"], true));
        // No header, no block in view: unknown.
        assert_eq!(scopes("    assert x == 1\n", None)[0], Scope::Unknown);
        assert_eq!(scopes("    assert x == 1\n", Some("import pytest"))[0], Scope::Unknown);
        // A block in view but not reaching column 0, no header: incomplete.
        let s = scopes("    def test_a(self):\n        assert 1\n", None);
        assert_eq!(s[1], known(&["test_a"], false));
    }

    #[test]
    fn decorators_belong_to_what_they_decorate() {
        let src = "@pytest.mark.parametrize(\n    \"amount, code, expected\",\n    [\n        pytest.param(5, None, 5, id=\"none\"),\n    ],\n)\ndef test_discount(amount, code, expected):\n    assert discount(amount, code) == expected\n";
        let s = scopes(src, None);
        for (i, sc) in s.iter().enumerate() {
            assert_eq!(sc, &known(&["test_discount"], true), "line {i}");
        }
        // The decorated def is past the hunk's end: unknown.
        let s = scopes("@pytest.mark.flaky(reruns=3)\n", None);
        assert_eq!(s[0], Scope::Unknown);
        // A multi-line signature, closed at column 0.
        let s = scopes("def test_x(\n    a,\n):\n    pass\n", None);
        assert!(s.iter().all(|x| x == &known(&["test_x"], true)), "{s:?}");
    }

    #[test]
    fn async_defs_and_tabs() {
        let s = scopes("async def test_io():\n\tawait x()\n", None);
        assert_eq!(s[1], known(&["test_io"], true));
        assert_eq!(block_name("    async  def  test_x(self):"), Some("test_x"));
        assert_eq!(block_name("define = 1"), None);
        assert_eq!(block_name("class_ = 2"), None);
    }

    #[test]
    fn strings_do_not_end_blocks() {
        let src =
            "def test_text():\n    s = \"\"\"\nheader\n  body\n\"\"\"\n    assert s\n    '''one''' and 1\n    x = 2\n";
        let s = scopes(src, None);
        for (i, sc) in s.iter().enumerate() {
            assert_eq!(sc, &known(&["test_text"], true), "line {i}: {src}");
        }
    }

    #[test]
    fn a_parsed_diff_carries_scopes_on_both_sides() {
        let diff = "\
diff --git a/tests/test_cart.py b/tests/test_cart.py
--- a/tests/test_cart.py
+++ b/tests/test_cart.py
@@ -9,5 +9,5 @@ class TestCart:
 
     def test_total(self):
         cart = Cart()
-        cart.add(\"pen\", 2.5, qty=4)
+        cart.add(\"pen\", 2.5, qty=5)
         assert cart.total() == 12.0
";
        let p = parse_unified("d", diff).unwrap();
        let f = &p.files[0];
        assert_eq!(f.added[0].scope, known(&["TestCart", "test_total"], true));
        assert_eq!(f.removed[0].scope, known(&["TestCart", "test_total"], true));
        assert_eq!(f.context.len(), 4);
        assert_eq!((f.context[3].old_line, f.context[3].line), (13, 13));
    }
}
