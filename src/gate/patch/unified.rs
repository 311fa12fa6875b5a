//! git's unified diff text (`git diff`, GitHub's diff media type, plain
//! `diff -u`) → [`Patch`].
//!
//! ## Why diffy, and what this file does itself
//!
//! The per-file headers (git extended headers: renames, copies, modes, `Binary
//! files … differ`, `GIT binary patch`; C-style quoted names with octal
//! escapes) are read by **diffy 0.5**'s git-aware `PatchSet` parser
//! (`ParseOptions::gitdiff()`). It was chosen over the `unidiff` crate, which
//! silently drops renamed, binary and mode-only files and reports a renamed file
//! under its old path.
//!
//! diffy is permissive by design (it follows GNU patch), which a gate cannot
//! be, so a strict line scanner ([`scan`]) runs first, splits the input into
//! one section per file and hands diffy one section's headers at a time. The
//! scanner exists because diffy 0.5.2, measured on the corpus in
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
//! The hunks, once the scanner has checked them, are read here ([`lines_of`]):
//! diffy builds a list of every line of every hunk before the model can be built
//! from it, an allocation per hunk and one more pass that a 100 MB diff pays in
//! full (issue 12). The reading is the one diffy did, and a test keeps the
//! previous parser (`reference.rs`) to show the two agree on every input.
//!
//! Both passes are linear in the input.

use super::model::{AddedLine, ContextLine, Deletion, FileChange, FileStatus, Patch, RemovedLine};
use super::scope::SideReader;
use crate::gate::error::{InputError, Location};
use std::borrow::Cow;

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
    parse_marking(file, text, &[])
}

/// [`parse_unified`], with the files whose sections hold one of `bad` (1-based lines of the
/// input that were not UTF-8, each with its first bad byte) marked unreadable.
fn parse_marking(file: &str, text: &str, bad: &[(usize, u8)]) -> Result<Patch, InputError> {
    let text = normalize_eol(text);
    let sections = scan(file, &text)?;
    // Each section's lines, first to last.
    let lines = |s: &Section| s.line..=s.line + text[s.start..s.end].trim_end_matches('\n').matches('\n').count();
    if let Some((line, byte)) = bad.iter().find(|(l, _)| !sections.iter().any(|s| lines(s).contains(l))) {
        // Outside every file's section the scanner accepts only blank lines: no file to blame.
        return Err(InputError::new(
            Location::at(file, *line, None),
            format!("not UTF-8 text (invalid byte 0x{byte:02X}) outside any file of the diff"),
        ));
    }
    let build = |sections: &[Section]| -> Result<Vec<FileChange>, InputError> {
        let mut files = Vec::with_capacity(sections.len());
        for s in sections {
            let mut fc = build_file(file, &text, s)?;
            if let Some((line, byte)) = bad.iter().find(|(l, _)| lines(s).contains(l)) {
                fc.unreadable = Some(format!(
                    "not UTF-8 text (invalid byte 0x{byte:02X} at {file}:{line}): its lines are shown decoded lossily and cannot be matched to evidence"
                ));
            }
            files.push(fc);
        }
        Ok(files)
    };
    let files = in_parallel(&sections, text.len(), build)?;
    Ok(Patch { files })
}

/// Below this many bytes a diff is read on the calling thread alone. (Tests read every
/// diff of two files or more on threads, which the reference parser reads in one.)
#[cfg(not(test))]
const PARALLEL_FROM: usize = 4 << 20;
#[cfg(test)]
const PARALLEL_FROM: usize = 1;

/// `build` over `sections`, cut into runs of about equal size read on threads of their
/// own when the diff is large (files are independent once the scanner has split
/// them), the files in diff order. The result is the sequential one: the files, or
/// the error of the first file (in diff order) that has one.
fn in_parallel<F>(sections: &[Section], bytes: usize, build: F) -> Result<Vec<FileChange>, InputError>
where
    F: Fn(&[Section]) -> Result<Vec<FileChange>, InputError> + Sync,
{
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    if threads < 2 || bytes < PARALLEL_FROM || sections.len() < 2 {
        return build(sections);
    }
    // Cut where the sections' sizes add up to each thread's share.
    let share = bytes / threads + 1;
    let mut runs: Vec<&[Section]> = Vec::with_capacity(threads);
    let (mut from, mut size) = (0, 0);
    for (i, s) in sections.iter().enumerate() {
        size += s.end - s.start;
        if size >= share {
            runs.push(&sections[from..=i]);
            (from, size) = (i + 1, 0);
        }
    }
    if from < sections.len() {
        runs.push(&sections[from..]);
    }
    let results: Vec<_> = std::thread::scope(|scope| {
        let build = &build;
        // A run whose thread cannot be started is built on this thread instead.
        let handles: Vec<_> = runs[1..]
            .iter()
            .map(|&run| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || build(run))
                    .map_err(|_| run)
            })
            .collect();
        let first = build(runs[0]);
        std::iter::once(first)
            .chain(handles.into_iter().map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                Err(run) => build(run),
            }))
            .collect()
    });
    let mut files = Vec::with_capacity(sections.len());
    for r in results {
        files.extend(r?);
    }
    Ok(files)
}

/// [`parse_unified`] on raw bytes.
///
/// A diff is bytes: a source file in a legacy 8-bit encoding (Latin-1, say) puts bytes that
/// are not UTF-8 into its hunks. Such a file does not make the whole patch unreadable: its
/// text is decoded lossily (U+FFFD for each invalid sequence, which never swallows a line
/// break), for display only, and the file is marked [`FileChange::unreadable`] — blind, with
/// the line of its first invalid byte — while every other file is read exactly.
pub fn parse_unified_bytes(file: &str, bytes: &[u8]) -> Result<Patch, InputError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_unified(file, text),
        Err(_) => parse_marking(file, &String::from_utf8_lossy(bytes), &invalid_lines(bytes)),
    }
}

/// The 1-based lines of `bytes` that are not UTF-8, each with its first invalid byte.
pub(super) fn invalid_lines(bytes: &[u8]) -> Vec<(usize, u8)> {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, l)| match std::str::from_utf8(l) {
            Ok(_) => None,
            Err(e) => Some((i + 1, l[e.valid_up_to()])),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The scanner: strict structure, line numbers, section boundaries.

const NO_NEWLINE: &str = "\\ No newline at end of file";

/// `\r\n` → `\n` (and a final lone `\r`). Only line ends change, so line
/// numbers and columns stay valid. Text of changed lines never keeps a
/// trailing `\r` anyway.
pub(super) fn normalize_eol(text: &str) -> Cow<'_, str> {
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
pub(super) struct Cursor<'a> {
    text: &'a str,
    /// Byte offset of the next line.
    pub(super) pos: usize,
    /// Byte offset of the next line's end (its `\n`, or the end of the text).
    end: usize,
    /// 1-based number of the next line.
    pub(super) line: usize,
    /// Line of the last hunk header read (for error messages).
    last_hunk: usize,
}

/// Where the line starting at `pos` ends: its `\n`, or the end of the text.
fn line_end(text: &str, pos: usize) -> usize {
    text.as_bytes()
        .get(pos..)
        .and_then(|rest| memchr::memchr(b'\n', rest))
        .map_or(text.len(), |i| pos + i)
}

impl<'a> Cursor<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Cursor {
            text,
            pos: 0,
            end: line_end(text, 0),
            line: 1,
            last_hunk: 0,
        }
    }
    /// The next line, without its `\n`.
    pub(super) fn peek(&self) -> Option<&'a str> {
        (self.pos < self.text.len()).then(|| &self.text[self.pos..self.end])
    }
    fn advance(&mut self) {
        if self.pos < self.text.len() {
            self.pos = (self.end + 1).min(self.text.len());
            self.end = line_end(self.text, self.pos);
        }
        self.line += 1;
    }
}

fn is_blank(l: &str) -> bool {
    l.trim().is_empty()
}

pub(super) fn skip_blank(cur: &mut Cursor<'_>) {
    while cur.peek().is_some_and(is_blank) {
        cur.advance();
    }
}

/// A line, shortened and quoted for an error message.
pub(super) fn show(l: &str) -> String {
    let mut s: String = l.chars().take(60).collect();
    if s.len() < l.len() {
        s.push('…');
    }
    format!("{s:?}")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SectionKind {
    /// Starts at `diff --git`; `prefixed` when its names carry `a/` and `b/`.
    Git { prefixed: bool },
    /// Starts at `---` (plain `diff -u`).
    Plain,
    /// A plain `Binary files X and Y differ` line (`diff -r` between files).
    PlainBinary,
}

/// One file's part of the input.
#[derive(Debug, Clone)]
pub(super) struct Section {
    pub(super) kind: SectionKind,
    /// 1-based line of the section's first line.
    pub(super) line: usize,
    /// Byte range in the (normalised) text.
    pub(super) start: usize,
    pub(super) end: usize,
    /// Number of hunks the scanner counted.
    pub(super) hunks: usize,
    /// Where the hunks start (`end` when there are none): the file's headers are
    /// `start..hunks_at`, its hunks `hunks_at..end`.
    pub(super) hunks_at: usize,
}

type ScanError = (usize, Option<usize>, String);

/// Split `text` into file sections, checking the structure strictly.
pub(super) fn scan(file: &str, text: &str) -> Result<Vec<Section>, InputError> {
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
            (SectionKind::PlainBinary, 0, cur.pos)
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
        let (kind, hunks, hunks_at) = section;
        after_hunk = if hunks > 0 { Some(cur.last_hunk) } else { None };
        sections.push(Section {
            kind,
            line,
            start,
            end: cur.pos,
            hunks,
            hunks_at,
        });
    }
    Ok(sections)
}

const MODES: [&str; 4] = ["100644", "100755", "120000", "160000"];

/// A section's kind, its number of hunks and where they start (the section's
/// end when it has none).
type Scanned = (SectionKind, usize, usize);

/// A `diff --git` section: extended headers, then `---`/`+++` and hunks, or a
/// binary marker or payload, or nothing (rename, mode change, empty file).
fn scan_git(cur: &mut Cursor<'_>) -> Result<Scanned, ScanError> {
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
            return Ok((kind, 0, cur.pos));
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
            return Ok((kind, 0, cur.pos));
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
            return Ok((kind, 0, cur.pos));
        } else if l == "GIT binary patch" {
            pairs(rename_from, rename_to, copy_from, copy_to)?;
            cur.advance();
            // The payload: `literal N`/`delta N` blocks of base85 lines, blank-separated.
            while cur.peek().is_some_and(is_binary_payload) {
                cur.advance();
            }
            return Ok((kind, 0, cur.pos));
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
    let (hunks, at) = scan_file_headers_and_hunks(cur)?;
    Ok((kind, hunks, at))
}

/// A `---` section of a plain unified diff.
fn scan_plain(cur: &mut Cursor<'_>) -> Result<Scanned, ScanError> {
    let (hunks, at) = scan_file_headers_and_hunks(cur)?;
    Ok((SectionKind::Plain, hunks, at))
}

/// `--- old`, `+++ new`, then one or more hunks; their number and where they start.
fn scan_file_headers_and_hunks(cur: &mut Cursor<'_>) -> Result<(usize, usize), ScanError> {
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
    let at = cur.pos;
    let hunks = scan_hunks(cur, "input")?;
    if hunks == 0 {
        let found = cur.peek().map_or("the end of the input".to_string(), show);
        return Err((
            cur.line,
            None,
            format!("expected a hunk header `@@ -a,b +c,d @@` after the `+++` line, found {found}"),
        ));
    }
    Ok((hunks, at))
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
pub(super) fn scan_hunks(cur: &mut Cursor<'_>, what: &str) -> Result<usize, ScanError> {
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
    // `what` names the number (`the {side} {what}`). Messages are formatted only for
    // an error: a diff has a header per hunk.
    let num = |i: &mut usize, side: &str, what: &str| -> Result<u32, (usize, String)> {
        let start = *i;
        let mut v: u32 = 0;
        while let Some(d) = b.get(*i).filter(|d| d.is_ascii_digit()) {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add((d - b'0') as u32))
                .ok_or_else(|| {
                    (
                        start,
                        format!("expected a line number of at most {} in the hunk header", u32::MAX),
                    )
                })?;
            *i += 1;
        }
        if *i == start {
            return Err((
                start,
                format!("expected the {side} {what} (digits) in the hunk header {SHAPE}"),
            ));
        }
        Ok(v)
    };
    let range = |i: &mut usize, side: &str| -> Result<(u32, u32), (usize, String)> {
        let at = *i;
        let start = num(i, side, "start line")?;
        let len = if b.get(*i) == Some(&b',') {
            *i += 1;
            num(i, side, "line count")?
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
pub(super) fn guarded<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
    std::panic::catch_unwind(f).map_err(|_| "the diff parser failed on this input".to_string())
}

/// One file: diffy reads its headers (names, modes, renames, binary markers), and
/// [`lines_of`] its hunks, which the scanner has checked.
fn build_file(file: &str, text: &str, s: &Section) -> Result<FileChange, InputError> {
    let body = &text[s.start..s.end];
    let headers = &text[s.start..s.hunks_at];
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
        let mut set = diffy::patch_set::PatchSet::parse(headers, opts);
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
    // diffy is given the headers only: it must see no hunk.
    let diffy_hunks = fp.patch().as_text().map_or(0, |p| p.hunks().len());
    if diffy_hunks != 0 {
        return Err(fail(format!(
            "internal parser disagreement ({diffy_hunks} hunks in the file's headers); please report this input"
        )));
    }
    let binary = fp.patch().is_binary();
    let (status, path, old_path) = match (fp.operation(), &s.kind) {
        (Op::Rename { from, to }, _) => (FileStatus::Renamed, to.to_string(), Some(from.to_string())),
        (Op::Copy { from, to }, _) => (FileStatus::Copied, to.to_string(), Some(from.to_string())),
        (Op::Create(p), SectionKind::Git { prefixed }) => (FileStatus::Added, strip(p, "b/", *prefixed), None),
        (Op::Delete(p), SectionKind::Git { prefixed }) => (FileStatus::Deleted, strip(p, "a/", *prefixed), None),
        (Op::Modify { modified, .. }, SectionKind::Git { prefixed }) => {
            let mode_only = s.hunks == 0
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
    let (added, deletions, removed, context) = lines_of(&text[s.hunks_at..s.end]).map_err(fail)?;
    Ok(FileChange {
        path,
        old_path,
        status,
        binary,
        lines_known: true,
        unreadable: None,
        added,
        deletions,
        removed,
        context,
    })
}

pub(super) fn strip(p: &str, prefix: &str, on: bool) -> String {
    if on { p.strip_prefix(prefix).unwrap_or(p) } else { p }.to_string()
}

/// Repository paths from a plain diff's names: `a/x`/`b/x` lose their
/// prefixes; `base/x`/`head/x` (as `diff -ru base head` writes) lose their
/// first component; anything else is kept as written.
pub(super) fn plain_names(old: Option<&str>, new: Option<&str>) -> (String, String) {
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
pub(super) fn plain_binary(l: &str) -> Result<FileChange, String> {
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
        unreadable: None,
        added: Vec::new(),
        deletions: Vec::new(),
        removed: Vec::new(),
        context: Vec::new(),
    })
}

/// A hunk line's text: without its `\n` and any `\r` before it.
fn line_text(t: &str) -> &str {
    t.strip_suffix('\n').unwrap_or(t).trim_end_matches('\r')
}

fn to_u32(n: usize) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("expected line numbers of at most {}, found {n}", u32::MAX))
}

pub(super) type FileLines = (Vec<AddedLine>, Vec<Deletion>, Vec<RemovedLine>, Vec<ContextLine>);

/// Which side of a hunk a line is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Context,
    Removed,
    Added,
}

/// The lines of `text` with their `\n` (the last one may lack it).
fn lines_with_ends(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', rest.as_bytes()).map_or(rest.len(), |i| i + 1);
        let (line, tail) = rest.split_at(end);
        rest = tail;
        Some(line)
    })
}

/// Added lines, pure deletions, every removed line and the context lines of a file's
/// hunks. `hunks` is the hunk text the scanner ([`scan_hunks`]) has checked: each hunk
/// header followed by exactly the lines it announces and `\ No newline at end of
/// file` markers (a line's text never keeps its line ending, so a marker changes
/// nothing here). Anything else is reported as a disagreement with the scanner.
///
/// One pass, and the texts are read in place: each line's text is copied once, into
/// the line the model keeps.
pub(super) fn lines_of(hunks: &str) -> Result<FileLines, String> {
    let disagreement = |what: &str| format!("internal parser disagreement ({what}); please report this input");
    let mut added = Vec::new();
    let mut deletions = Vec::new();
    let mut removed = Vec::new();
    let mut context = Vec::new();
    // One hunk's lines, and each side's texts: buffers reused from hunk to hunk.
    let mut lines: Vec<(Side, &str)> = Vec::new();
    let mut old_texts: Vec<&str> = Vec::new();
    let mut new_texts: Vec<&str> = Vec::new();
    let (mut sides, mut old_scopes, mut new_scopes) = (SideReader::default(), Vec::new(), Vec::new());
    let mut it = lines_with_ends(hunks).peekable();
    while let Some(header_line) = it.next() {
        let header_line = line_text(header_line);
        let h = parse_hunk_header(header_line).map_err(|_| disagreement("a hunk header"))?;
        // diffy's reading of the header's section text: what follows ` @@ `, if anything.
        let function_context = header_line
            .strip_prefix("@@ ")
            .and_then(|r| r.split_once(" @@"))
            .and_then(|(_, rest)| rest.strip_prefix(' '));
        lines.clear();
        old_texts.clear();
        new_texts.clear();
        while let Some(l) = it.next_if(|l| !l.starts_with("@@")) {
            let (side, t) = match l.as_bytes()[0] {
                b' ' => (Side::Context, &l[1..]),
                b'\n' => (Side::Context, l),
                b'-' => (Side::Removed, &l[1..]),
                b'+' => (Side::Added, &l[1..]),
                b'\\' => continue,
                _ => return Err(disagreement("a hunk line")),
            };
            let t = line_text(t);
            if side != Side::Added {
                old_texts.push(t);
            }
            if side != Side::Removed {
                new_texts.push(t);
            }
            lines.push((side, t));
        }
        if old_texts.len() != h.old_len as usize || new_texts.len() != h.new_len as usize {
            return Err(disagreement("a hunk's line count"));
        }
        sides.read(&old_texts, function_context, &mut old_scopes);
        sides.read(&new_texts, function_context, &mut new_scopes);
        // An empty range's start names the line before it (`@@ -15,2 +14,0 @@`).
        let mut old = h.old_start as usize + usize::from(h.old_len == 0);
        let mut new = h.new_start as usize + usize::from(h.new_len == 0);
        // Each line's index on its side.
        let (mut oi, mut ni) = (0, 0);
        let mut i = 0;
        while i < lines.len() {
            let (side, t) = lines[i];
            match side {
                Side::Context => {
                    context.push(ContextLine {
                        old_line: to_u32(old)?,
                        line: to_u32(new)?,
                        text: t.to_string(),
                    });
                    old += 1;
                    new += 1;
                    oi += 1;
                    ni += 1;
                    i += 1;
                }
                Side::Added => {
                    added.push(AddedLine {
                        line: to_u32(new)?,
                        text: t.to_string(),
                        scope: std::mem::take(&mut new_scopes[ni]),
                    });
                    new += 1;
                    ni += 1;
                    i += 1;
                }
                Side::Removed => {
                    let j = i + lines[i..].iter().take_while(|l| l.0 == Side::Removed).count();
                    for (k, &(_, t)) in lines[i..j].iter().enumerate() {
                        removed.push(RemovedLine {
                            line: to_u32(old + k)?,
                            text: t.to_string(),
                            scope: std::mem::take(&mut old_scopes[oi + k]),
                        });
                    }
                    let replaced =
                        (i > 0 && lines[i - 1].0 == Side::Added) || lines.get(j).is_some_and(|l| l.0 == Side::Added);
                    if !replaced {
                        deletions.push(Deletion {
                            old_start: to_u32(old)?,
                            old_count: to_u32(j - i)?,
                            after: to_u32(new.saturating_sub(1))?,
                            text: lines[i..j].iter().map(|&(_, t)| t.to_string()).collect(),
                        });
                    }
                    old += j - i;
                    oi += j - i;
                    i = j;
                }
            }
        }
    }
    Ok((added, deletions, removed, context))
}

#[cfg(test)]
pub(super) mod tests;
