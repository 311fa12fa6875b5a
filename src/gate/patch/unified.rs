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
//! full (docs/performance.md, "The diff parser"). The reading is the one diffy did, and a test keeps the
//! previous parser (`reference.rs`) to show the two agree on every input.
//!
//! Both passes are linear in the input.
//!
//! The scanner is `unified/scanner.rs`; this file holds the entry points and the
//! reading of each section.

mod scanner;

use super::model::{AddedLine, ContextLine, Deletion, FileChange, FileStatus, Patch, RemovedLine};
use super::scope::SideReader;
use crate::gate::error::{InputError, Location};
use scanner::parse_hunk_header;
pub(super) use scanner::{normalize_eol, scan, scan_hunks, show, skip_blank, Cursor, Section, SectionKind};

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
