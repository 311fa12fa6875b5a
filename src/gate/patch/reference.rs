//! The parser as it was before hunks were read in place (diffy reads each hunk, every line's text
//! and scope are built as owned strings), kept for the tests: the parser must give
//! the same [`Patch`] on every input, and the same error on every bad one.

use super::model::{AddedLine, ContextLine, Deletion, FileChange, FileStatus, Patch, RemovedLine, Scope};
use super::unified::{
    guarded, invalid_lines, normalize_eol, plain_binary, plain_names, scan, strip, Section, SectionKind,
};
use crate::gate::error::{InputError, Location};

/// The reference [`super::parse_unified`].
pub(crate) fn parse_unified(file: &str, text: &str) -> Result<Patch, InputError> {
    parse_marking(file, text, &[])
}

/// The reference [`super::parse_unified_bytes`].
pub(crate) fn parse_unified_bytes(file: &str, bytes: &[u8]) -> Result<Patch, InputError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_unified(file, text),
        Err(_) => parse_marking(file, &String::from_utf8_lossy(bytes), &invalid_lines(bytes)),
    }
}

fn parse_marking(file: &str, text: &str, bad: &[(usize, u8)]) -> Result<Patch, InputError> {
    let text = normalize_eol(text);
    let sections = scan(file, &text)?;
    let lines = |s: &Section| s.line..=s.line + text[s.start..s.end].trim_end_matches('\n').matches('\n').count();
    if let Some((line, byte)) = bad.iter().find(|(l, _)| !sections.iter().any(|s| lines(s).contains(l))) {
        return Err(InputError::new(
            Location::at(file, *line, None),
            format!("not UTF-8 text (invalid byte 0x{byte:02X}) outside any file of the diff"),
        ));
    }
    let mut files = Vec::with_capacity(sections.len());
    for s in &sections {
        let mut fc = build_file(file, &text, s)?;
        if let Some((line, byte)) = bad.iter().find(|(l, _)| lines(s).contains(l)) {
            fc.unreadable = Some(format!(
                "not UTF-8 text (invalid byte 0x{byte:02X} at {file}:{line}): its lines are shown decoded lossily and cannot be matched to evidence"
            ));
        }
        files.push(fc);
    }
    Ok(Patch { files })
}

/// The hunks of a GitHub files listing's `patch` (hunk text only), read as before.
pub(crate) fn lines_of_patch_text(p: &str) -> Result<FileLines, String> {
    let parsed = guarded(|| diffy::Patch::from_str(p).map_err(|e| e.to_string())).and_then(|r| r)?;
    lines_of(parsed.hunks())
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
        unreadable: None,
        added,
        deletions,
        removed,
        context,
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
pub(super) fn lines_of(hunks: &[diffy::Hunk<'_, str>]) -> Result<FileLines, String> {
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

/// The old `scopes_of_side`, names as owned strings per line.
mod old_scope {
    use super::Scope;

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
        let wait =
            |pending: &mut Vec<Pending>, at: usize, names: Vec<String>, complete: bool, line: usize| match pending
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
                Scope::Known {
                    names: names.into(),
                    complete,
                }
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
                                    names: names.clone().into(),
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
}
use old_scope::scopes_of_side;

mod tests {
    //! The parser against the reference on every diff under `tests/fixtures/`, on
    //! generated diffs, and on mutated and arbitrary input (errors included).

    use super::super::unified::tests::corpus_file;
    use super::super::unified::{lines_of, normalize_eol};
    use super::super::{parse_github_files, parse_unified, parse_unified_bytes};
    use crate::gate::patch::{FileChange, Patch};
    use proptest::prelude::*;
    use std::path::{Path, PathBuf};

    /// The same patch, or the same error (location and message).
    fn same(
        new: Result<Patch, crate::gate::error::InputError>,
        old: Result<Patch, crate::gate::error::InputError>,
        what: &str,
    ) {
        match (new, old) {
            (Ok(n), Ok(o)) => assert!(n == o, "{what}: the patches differ"),
            (Err(n), Err(o)) => assert_eq!(n.to_string(), o.to_string(), "{what}"),
            (n, o) => panic!(
                "{what}: new {:?}, previous {:?}",
                n.map(|_| "a patch"),
                o.map(|_| "a patch")
            ),
        }
    }

    fn agree(name: &str, bytes: &[u8]) {
        same(
            parse_unified_bytes(name, bytes),
            super::parse_unified_bytes(name, bytes),
            name,
        );
        if let Ok(text) = std::str::from_utf8(bytes) {
            same(parse_unified(name, text), super::parse_unified(name, text), name);
        }
    }

    fn fixture_diffs(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                fixture_diffs(&p, out);
            } else if p.extension().is_some_and(|x| x == "diff" || x == "patch") {
                out.push(p);
            }
        }
    }

    #[test]
    fn every_fixture_diff_parses_as_before() {
        let mut diffs = Vec::new();
        fixture_diffs(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
            &mut diffs,
        );
        assert!(diffs.len() >= 60, "fixtures missing? {} diffs", diffs.len());
        let mut files = 0;
        for p in &diffs {
            let name = p.display().to_string();
            let bytes = std::fs::read(p).unwrap();
            agree(&name, &bytes);
            let crlf = String::from_utf8_lossy(&bytes).replace('\n', "\r\n");
            agree(&name, crlf.as_bytes());
            files += parse_unified_bytes(&name, &bytes).map_or(0, |p| p.files.len());
        }
        assert!(files >= 100, "{files} files parsed");
    }

    #[test]
    fn github_listings_read_their_hunks_as_before() {
        let json = corpus_file("github-files.json");
        let p = parse_github_files("g.json", &json).unwrap();
        let entries: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
        let mut checked = 0;
        for (fc, e) in p.files.iter().zip(&entries) {
            let Some(patch) = e["patch"].as_str().filter(|p| !p.is_empty()) else {
                continue;
            };
            let (added, deletions, removed, context) = super::lines_of_patch_text(&normalize_eol(patch)).unwrap();
            assert_eq!(
                (&fc.added, &fc.deletions, &fc.removed, &fc.context),
                (&added, &deletions, &removed, &context),
                "{}",
                fc.path
            );
            checked += 1;
        }
        assert!(checked >= 3, "{checked} patches");
    }

    /// A Python-like line for scope reading: blocks, decorators, brackets, strings, comments.
    fn py_line() -> impl Strategy<Value = String> {
        let indent = prop_oneof![
            Just(""),
            Just("    "),
            Just("        "),
            Just("\t"),
            Just("  "),
            Just("            ")
        ];
        let fixed = prop::sample::select(vec![
            "def test_a(self):",
            "async def test_b():",
            "class TestC:",
            "class D(Base):",
            "def helper(",
            "):",
            ")",
            "]",
            "@pytest.mark.parametrize(",
            "@fixture",
            "assert x == 1",
            "x = \"\"\"doc",
            "\"\"\"",
            "'''",
            "s = '''one''' + \"\"\"two",
            "# comment",
            "",
            "pass",
            "return",
            "time.sleep(1)",
            "\u{0c}x = 1",
        ])
        .prop_map(str::to_string);
        let body = prop_oneof![3 => fixed, 1 => "[a-z_ (),:@#'\"]{0,12}"];
        (indent, body).prop_map(|(i, b)| format!("{i}{b}"))
    }

    /// A hunk (header with a section, lines marked context/removed/added) and its text.
    fn hunk_text() -> impl Strategy<Value = String> {
        let header = prop_oneof![
            Just(String::new()),
            Just(" class TestCart:".to_string()),
            Just(" def test_x(a):".to_string()),
            Just(" import pytest".to_string()),
            Just("    def nested(self):".to_string()),
            Just(" ".to_string()),
            "[ a-z():]{0,10}",
        ];
        let line = (0usize..3, py_line());
        (header, 0u32..50, 0u32..50, prop::collection::vec(line, 0..40)).prop_map(|(h, os, ns, lines)| {
            let (mut old, mut new) = (0, 0);
            let mut body = String::new();
            for (kind, text) in &lines {
                let mark = [' ', '-', '+'][*kind];
                match kind {
                    0 => (old, new) = (old + 1, new + 1),
                    1 => old += 1,
                    _ => new += 1,
                }
                body.push(mark);
                body.push_str(text);
                body.push('\n');
            }
            format!("@@ -{os},{old} +{ns},{new} @@{h}\n{body}")
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn hunks_read_as_before(hunks in prop::collection::vec(hunk_text(), 1..4)) {
            // Hunks in order: renumber each after the previous one.
            let mut text = String::new();
            let (mut o, mut n) = (1u32, 1u32);
            for h in &hunks {
                let (head, body) = h.split_once('\n').unwrap();
                let ranges = head.strip_prefix("@@ -").unwrap();
                let (old, rest) = ranges.split_once(" +").unwrap();
                let (new, section) = rest.split_once(" @@").unwrap();
                let ol: u32 = old.split_once(',').unwrap().1.parse().unwrap();
                let nl: u32 = new.split_once(',').unwrap().1.parse().unwrap();
                let os: u32 = old.split_once(',').unwrap().0.parse().unwrap();
                let ns: u32 = new.split_once(',').unwrap().0.parse().unwrap();
                let (so, sn) = (o + os, n + ns);
                text.push_str(&format!("@@ -{so},{ol} +{sn},{nl} @@{section}\n{body}"));
                (o, n) = (so + ol, sn + nl);
            }
            let diff = format!("diff --git a/tests/test_x.py b/tests/test_x.py\nindex 1..2 100644\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n{text}");
            agree("h.diff", diff.as_bytes());
            agree("h.diff", diff.replace('\n', "\r\n").as_bytes());
            let new = lines_of(&text);
            let old = super::lines_of_patch_text(&text);
            match (&new, &old) {
                (Ok(n), Ok(o)) => prop_assert!(n == o, "{}", text),
                (Err(_), Err(_)) => {}
                _ => prop_assert!(false, "{:?} vs {:?}\n{}", new.is_ok(), old.is_ok(), text),
            }
        }

        #[test]
        fn mutated_fixtures_parse_as_before(pick in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>(),
                                            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..6)) {
            let mut diffs = Vec::new();
            fixture_diffs(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"), &mut diffs);
            diffs.sort();
            let mut b = std::fs::read(&diffs[pick.index(diffs.len())]).unwrap();
            for (at, byte, op) in edits {
                let i = at.index(b.len() + 1);
                match op {
                    0 => b.insert(i, byte),
                    1 if i < b.len() => { b.remove(i); }
                    _ if i < b.len() => b[i] = byte,
                    _ => {}
                }
            }
            agree("m.diff", &b);
            agree("m.diff", &b[..cut.index(b.len() + 1)]);
        }

        #[test]
        fn diff_like_text_parses_as_before(lines in prop::collection::vec(
            prop_oneof![
                Just("diff --git a/x b/x".to_string()), Just("--- a/x".to_string()), Just("+++ b/x".to_string()),
                Just("--- /dev/null".to_string()), Just("+++ /dev/null".to_string()), Just("new file mode 100644".to_string()),
                Just("old mode 100644".to_string()), Just("new mode 100755".to_string()),
                Just("rename from x".to_string()), Just("rename to y".to_string()), Just("GIT binary patch".to_string()),
                Just("literal 5".to_string()), Just("Binary files a/x and b/x differ".to_string()),
                Just("\\ No newline at end of file".to_string()), Just(String::new()), Just("\r".to_string()),
                "@@ -[0-9]{1,2}(,[0-9])? \\+[0-9]{1,2}(,[0-9])? @@.{0,3}", "[ +-][a-z\"\\\\\r]{0,4}", "\"[ab]/[a-z\\\\0-7]{0,6}\"",
            ], 0..40)) {
            agree("p.diff", lines.join("\n").as_bytes());
        }
    }

    /// The parsed model of `scripts/gen-test-diff.py`'s shape, built here: many hunks of
    /// test edits with a `def` section header.
    #[test]
    fn a_generated_test_diff_parses_as_before() {
        let mut d = String::new();
        for f in 0..30 {
            let path = format!("tests/unit/test_m{f}.py");
            d.push_str(&format!(
                "diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
            ));
            let mut at = 1;
            for t in 0..20 {
                let section = if t > 0 {
                    format!(" def test_case_{}(cart):", t - 1)
                } else {
                    String::new()
                };
                d.push_str(&format!("@@ -{at},7 +{at},7 @@{section}\n \n \n def test_case_{t}(cart):\n-    total = cart.total()\n-    assert total == {t}.0\n+    time.sleep(0.1)\n+    assert total == pytest.approx({t}.0)\n     x = 1\n \n"));
                at += 12;
            }
        }
        agree("g.diff", d.as_bytes());
        let p: Vec<FileChange> = parse_unified("g.diff", &d).unwrap().files;
        assert_eq!(p.len(), 30);
        assert_eq!(p[0].added.len(), 40);
    }
}
