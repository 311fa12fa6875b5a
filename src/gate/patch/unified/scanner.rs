//! The strict line scanner of a unified diff: its structure checked line by line, each
//! file's section delimited (headers, then hunks whose counts must hold), every error
//! with its 1-based line and column. `unified.rs` hands each section to diffy and reads
//! its hunks; `github_files.rs` and the reference parser read hunks with the same
//! [`Cursor`].

use crate::gate::error::{InputError, Location};
use std::borrow::Cow;

const NO_NEWLINE: &str = "\\ No newline at end of file";

/// `\r\n` → `\n` (and a final lone `\r`). Only line ends change, so line
/// numbers and columns stay valid. Text of changed lines never keeps a
/// trailing `\r` anyway.
pub(crate) fn normalize_eol(text: &str) -> Cow<'_, str> {
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
pub(crate) struct Cursor<'a> {
    text: &'a str,
    /// Byte offset of the next line.
    pub(crate) pos: usize,
    /// Byte offset of the next line's end (its `\n`, or the end of the text).
    end: usize,
    /// 1-based number of the next line.
    pub(crate) line: usize,
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
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor {
            text,
            pos: 0,
            end: line_end(text, 0),
            line: 1,
            last_hunk: 0,
        }
    }
    /// The next line, without its `\n`.
    pub(crate) fn peek(&self) -> Option<&'a str> {
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

pub(crate) fn skip_blank(cur: &mut Cursor<'_>) {
    while cur.peek().is_some_and(is_blank) {
        cur.advance();
    }
}

/// A line, shortened and quoted for an error message.
pub(crate) fn show(l: &str) -> String {
    let mut s: String = l.chars().take(60).collect();
    if s.len() < l.len() {
        s.push('…');
    }
    format!("{s:?}")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SectionKind {
    /// Starts at `diff --git`; `prefixed` when its names carry `a/` and `b/`.
    Git { prefixed: bool },
    /// Starts at `---` (plain `diff -u`).
    Plain,
    /// A plain `Binary files X and Y differ` line (`diff -r` between files).
    PlainBinary,
}

/// One file's part of the input.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub(crate) kind: SectionKind,
    /// 1-based line of the section's first line.
    pub(crate) line: usize,
    /// Byte range in the (normalised) text.
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// Number of hunks the scanner counted.
    pub(crate) hunks: usize,
    /// Where the hunks start (`end` when there are none): the file's headers are
    /// `start..hunks_at`, its hunks `hunks_at..end`.
    pub(crate) hunks_at: usize,
}

type ScanError = (usize, Option<usize>, String);

/// Split `text` into file sections, checking the structure strictly.
pub(crate) fn scan(file: &str, text: &str) -> Result<Vec<Section>, InputError> {
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
pub(super) struct HunkHeader {
    pub(super) old_start: u32,
    pub(super) old_len: u32,
    pub(super) new_start: u32,
    pub(super) new_len: u32,
}

/// Hunks while the next line starts with `@@`. Line counts, not the text,
/// decide where a hunk ends. `what` names the input for the EOF message.
pub(crate) fn scan_hunks(cur: &mut Cursor<'_>, what: &str) -> Result<usize, ScanError> {
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
pub(super) fn parse_hunk_header(l: &str) -> Result<HunkHeader, (usize, String)> {
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
