//! Checks a patch defeats while keeping them, part of `weakened_test`:
//! hand-written retries (a loop around an assertion whose failure an
//! `except` or `suppress` absorbs), assertions swallowed (`try`/`except` that does
//! not re-raise, `contextlib.suppress`, `pytest.raises(AssertionError)` around a
//! check), and assertions loosened in place (`==` made a membership, inequality,
//! range or truthiness test; `pytest.raises` broadened or stripped of `match=`;
//! mock's and unittest's asserts made weaker). Read from the diff alone, as
//! [`super::weakening`] reads it: the new side the hunks show, and the removed
//! lines of the same test.

use super::is_test_file;
use super::weakening::{
    checks_something, code_part, indent, is_code, is_ident, new_side, test_of, NewLine, Weakening, TOLERANCE_CALLS,
};
use crate::gate::error::Location;
use crate::gate::patch::{AddedLine, FileChange, FileStatus, Patch, RemovedLine, Scope};

/// Retries, swallowed assertions and assertions loosened in place, in the patch's test files.
pub fn weakenings(patch: &Patch) -> Vec<Weakening> {
    let mut out = Vec::new();
    for fc in patch
        .files
        .iter()
        .filter(|f| f.status != FileStatus::Deleted && is_test_file(&f.path))
    {
        let view = new_side(fc);
        let blocks = Blocks::new(&view);
        absorbed_failures(fc, &blocks, &mut out);
        loosened_in_place(fc, &mut out);
    }
    out
}

/// The code lines of the new side the diff shows, with the run of consecutive
/// lines each belongs to: the block structure is read only within a run.
struct Blocks<'a> {
    lines: Vec<&'a NewLine<'a>>,
    run: Vec<usize>,
}

impl<'a> Blocks<'a> {
    fn new(view: &'a [NewLine<'a>]) -> Self {
        let (mut lines, mut run) = (Vec::new(), Vec::new());
        let (mut r, mut prev) = (0, None);
        for l in view {
            if prev.is_some_and(|p: u32| l.line != p + 1) {
                r += 1;
            }
            prev = Some(l.line);
            if is_code(l.text) {
                lines.push(l);
                run.push(r);
            }
        }
        Blocks { lines, run }
    }
    fn stmt(&self, k: usize) -> &'a str {
        code_part(self.lines[k].text).trim()
    }
    fn indent(&self, k: usize) -> usize {
        indent(self.lines[k].text)
    }
    /// The line that opens the block `k` is in (the nearest less-indented code line above, in the same run).
    fn parent(&self, k: usize) -> Option<usize> {
        let ind = self.indent(k);
        (0..k)
            .rev()
            .take_while(|&j| self.run[j] == self.run[k])
            .find(|&j| self.indent(j) < ind)
    }
    /// The body of the block `k` opens, as far as the run shows it.
    fn body(&self, k: usize) -> std::ops::Range<usize> {
        let ind = self.indent(k);
        let end = (k + 1..self.lines.len())
            .find(|&j| self.run[j] != self.run[k] || self.indent(j) <= ind)
            .unwrap_or(self.lines.len());
        k + 1..end
    }
    /// The first line of `range` that checks something.
    fn first_check(&self, range: std::ops::Range<usize>) -> Option<usize> {
        range.into_iter().find(|&j| checks_something(self.lines[j].text))
    }
    /// The `for`/`while` loop around `k`, inside the function `k` is in.
    fn enclosing_loop(&self, k: usize) -> Option<usize> {
        let mut at = k;
        while let Some(p) = self.parent(at) {
            let s = self.stmt(p);
            if starts_word(s, "def") || starts_word(s, "async def") || starts_word(s, "class") {
                return None;
            }
            if starts_word(s, "for") || starts_word(s, "while") || starts_word(s, "async for") {
                return Some(p);
            }
            at = p;
        }
        None
    }
    /// The test (or helper) function `k` is in, when the run shows its `def`.
    fn function(&self, k: usize) -> Option<&'a str> {
        let mut at = k;
        while let Some(p) = self.parent(at) {
            if let Some(name) = crate::gate::patch::scope::block_name(self.stmt(p)) {
                if !self.stmt(p).starts_with("class") {
                    return Some(name);
                }
            }
            at = p;
        }
        None
    }
}

fn starts_word(s: &str, word: &str) -> bool {
    s.strip_prefix(word)
        .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t', '(', ':']))
}

/// Exception names that catch a failed assertion (`AssertionError` and its bases).
fn catches_assertion_error(names: &str) -> Option<String> {
    names
        .split(|c: char| !(is_ident(c) || c == '.'))
        .filter(|n| !n.is_empty() && *n != "as")
        .find(|n| {
            matches!(
                n.rsplit('.').next(),
                Some("AssertionError" | "Exception" | "BaseException")
            )
        })
        .map(str::to_owned)
}

/// What an `except` clause catches of a failed assertion: `None` when it lets it through.
fn except_catches(stmt: &str) -> Option<String> {
    let rest = stmt.strip_prefix("except")?;
    if !(rest.starts_with([' ', '\t', ':', '(', '*'])) {
        return None;
    }
    let rest = rest.trim_start_matches('*').trim();
    let rest = rest.strip_suffix(':').unwrap_or(rest);
    let rest = rest.split(" as ").next().unwrap_or(rest).trim();
    if rest.is_empty() {
        return Some("everything".into());
    }
    catches_assertion_error(rest)
}

/// The arguments of the first call of `callee` in `code`, without the parentheses.
fn call_args<'c>(code: &'c str, callee: &str) -> Option<&'c str> {
    let mut from = 0;
    while let Some(i) = code[from..].find(callee).map(|i| i + from) {
        from = i + callee.len();
        if code[..i].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let open = from;
        let mut depth = 1;
        for (j, c) in code[open..].char_indices() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(&code[open..open + j]);
                    }
                }
                _ => {}
            }
        }
        return Some(&code[open..]);
    }
    None
}

/// The first positional argument of a call's argument text.
fn first_arg(args: &str) -> &str {
    let mut depth = 0;
    for (i, c) in args.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => return args[..i].trim(),
            _ => {}
        }
    }
    args.trim()
}

/// A `with` that absorbs a failed assertion inside it: `suppress(AssertionError)`,
/// or `pytest.raises`/`assertRaises` expecting `AssertionError` (or a base of it).
fn with_absorbs(stmt: &str) -> Option<String> {
    if !(starts_word(stmt, "with") || starts_word(stmt, "async with")) {
        return None;
    }
    if let Some(args) = call_args(stmt, "suppress(") {
        if let Some(n) = catches_assertion_error(args) {
            return Some(format!("`suppress({n})`"));
        }
    }
    for callee in ["raises(", "assertRaises("] {
        if let Some(args) = call_args(stmt, callee) {
            if let Some(n) = catches_assertion_error(first_arg(args)) {
                return Some(format!("`{}{n})`", callee));
            }
        }
    }
    None
}

/// Does the handler body re-raise unconditionally (`raise`, `pytest.fail`, `self.fail` at its top level)?
fn reraises(b: &Blocks<'_>, body: std::ops::Range<usize>) -> bool {
    let Some(top) = body.clone().next().map(|j| b.indent(j)) else {
        return false;
    };
    body.filter(|&j| b.indent(j) == top).any(|j| {
        let s = b.stmt(j);
        starts_word(s, "raise") || s.starts_with("pytest.fail(") || s.starts_with("self.fail(")
    })
}

/// Items 3 and 5: a check whose failure an `except` or a `with` absorbs —
/// inside a loop a retry, elsewhere a swallowed assertion.
fn absorbed_failures(fc: &FileChange, b: &Blocks<'_>, out: &mut Vec<Weakening>) {
    let at = |line: u32| Location::at(fc.path.clone(), line as usize, None);
    for k in 0..b.lines.len() {
        let s = b.stmt(k);
        // (the line that absorbs, what it absorbs, the check it absorbs, the block holding the check)
        let found = if let Some(caught) = except_catches(s) {
            let Some(t) = try_of(b, k) else { continue };
            let Some(check) = b.first_check(t + 1..k) else {
                continue;
            };
            if reraises(b, b.body(k)) {
                continue;
            }
            let what = if caught == "everything" {
                "a bare `except:`".to_string()
            } else {
                format!("`except {caught}`")
            };
            (t, what, check, vec![t, k])
        } else if let Some(what) = with_absorbs(s) {
            // Expecting AssertionError from a call tests that call (mock's `assert_called_with`,
            // a helper's invariant check); around an `assert` statement it absorbs the check.
            let check = if s.contains("suppress(") {
                b.first_check(b.body(k))
            } else {
                b.body(k).find(|&j| starts_word(b.stmt(j), "assert"))
            };
            let Some(check) = check else {
                continue;
            };
            (k, what, check, vec![k])
        } else {
            continue;
        };
        let (block, what, check, structure) = found;
        let lp = b.enclosing_loop(block);
        // The patch made this: it added the loop, the `try`/`with` or the `except`, or put the check there.
        let made = structure.iter().chain(lp.iter()).any(|&j| b.lines[j].added) || b.lines[check].added;
        if !made {
            continue;
        }
        let in_fn = b.function(k).map_or(String::new(), |f| format!(" in `{f}`"));
        let check_text = b.lines[check].text.trim();
        let check_line = b.lines[check].line;
        let absorber = b.lines[*structure.last().unwrap_or(&k)].line;
        match lp {
            Some(l) => out.push(Weakening {
                location: at(b.lines[l].line),
                what: format!(
                    "retries its assertion{in_fn}: `{}` re-runs `{check_text}` (line {check_line}) while {what} (line {absorber}) absorbs its failure",
                    b.stmt(l)
                ),
            }),
            None => out.push(Weakening {
                location: at(absorber),
                what: format!(
                    "swallows its assertion{in_fn}: {what} (line {absorber}) absorbs the failure of `{check_text}` (line {check_line})"
                ),
            }),
        }
    }
}

/// The `try:` an `except` line `k` belongs to.
fn try_of(b: &Blocks<'_>, k: usize) -> Option<usize> {
    let ind = b.indent(k);
    for j in (0..k).rev() {
        if b.run[j] != b.run[k] || b.indent(j) < ind {
            return None;
        }
        if b.indent(j) > ind {
            continue;
        }
        let s = b.stmt(j);
        if s == "try:" {
            return Some(j);
        }
        if !(starts_word(s, "except") || s.starts_with("except*")) {
            return None;
        }
    }
    None
}

/// `code` with the text inside brackets and string literals blanked (`_`), same length:
/// what is left is the statement's top level.
fn top_level(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in code.chars() {
        let keep = match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
                false
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    false
                }
                '(' | '[' | '{' => {
                    depth += 1;
                    depth == 1
                }
                ')' | ']' | '}' => {
                    depth -= 1;
                    depth == 0
                }
                _ => depth == 0,
            },
        };
        let ch = if keep { c } else { '_' };
        for _ in 0..c.len_utf8() {
            out.push(if ch.is_ascii() { ch } else { '_' });
        }
    }
    out
}

/// An `assert` statement's test: its first operand and its top-level comparison
/// operators (`==`, `in`, `<`, …; none for a truthiness test). The message after
/// a top-level `,` is left out.
fn comparison(code: &str) -> Option<(String, Vec<&'static str>)> {
    let t = code.trim_start();
    let expr = t.strip_prefix("assert").filter(|r| r.starts_with([' ', '(']))?;
    let flat = top_level(expr);
    let end = flat.find(',').unwrap_or(flat.len());
    let (expr, flat) = (&expr[..end], &flat[..end]);
    let mut ops = Vec::new();
    let mut first = None;
    let bytes = flat.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let two = flat.get(i..i + 2).unwrap_or("");
        let (op, len): (&'static str, usize) = match two {
            "==" => ("==", 2),
            "!=" => ("!=", 2),
            "<=" => ("<=", 2),
            ">=" => (">=", 2),
            _ if bytes[i] == b'<' => ("<", 1),
            _ if bytes[i] == b'>' => (">", 1),
            _ => {
                let rest = &flat[i..];
                let word = [
                    (" not in ", "not in"),
                    (" is not ", "is not"),
                    (" in ", "in"),
                    (" is ", "is"),
                ]
                .into_iter()
                .find(|(w, _)| rest.starts_with(w));
                match word {
                    Some((w, op)) => (op, w.len() - 1),
                    None => {
                        i += 1;
                        continue;
                    }
                }
            }
        };
        first.get_or_insert(i);
        ops.push(op);
        i += len;
    }
    let lhs = expr[..first.unwrap_or(expr.len())].trim().to_string();
    Some((lhs, ops))
}

/// Does `code` mention `expr` as a whole (not inside a longer identifier)?
fn mentions(code: &str, expr: &str) -> bool {
    if expr.is_empty() {
        return false;
    }
    let mut from = 0;
    while let Some(i) = code[from..].find(expr).map(|i| i + from) {
        from = i + expr.len();
        let before = code[..i].chars().next_back();
        let after = code[from..].chars().next();
        let joins = |c: Option<char>, edge: Option<char>| c.is_some_and(is_ident) && edge.is_some_and(is_ident);
        if !joins(before, expr.chars().next()) && !joins(after, expr.chars().next_back()) {
            return true;
        }
    }
    false
}

/// A literal (number, string, `None`/`True`/`False`): no subject of its own.
fn is_literal(expr: &str) -> bool {
    let e = expr.trim();
    e.parse::<f64>().is_ok()
        || e.starts_with(['"', '\''])
        || matches!(e, "None" | "True" | "False")
        || e.chars().all(|c| c.is_ascii_digit() || "._-+".contains(c))
}

/// mock's call assertions, strongest first.
fn mock_strength(method: &str) -> Option<u8> {
    Some(match method {
        "assert_called_once_with" | "assert_awaited_once_with" => 4,
        "assert_called_with" | "assert_awaited_with" | "assert_has_calls" | "assert_has_awaits" => 3,
        "assert_any_call" | "assert_any_await" | "assert_called_once" | "assert_awaited_once" => 2,
        "assert_called" | "assert_awaited" => 1,
        _ => return None,
    })
}

/// Every `receiver.assert_…(` call of a line: (receiver, method).
fn assert_calls(code: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find(".assert").map(|i| i + from) {
        from = i + 1;
        let start = code[..i]
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_ident(*c) || *c == '.')
            .last()
            .map_or(i, |(j, _)| j);
        let m_end = code[i + 1..]
            .find(|c: char| !is_ident(c))
            .map_or(code.len(), |j| i + 1 + j);
        if code[m_end..].starts_with('(') {
            out.push((&code[start..i], &code[i + 1..m_end]));
        }
    }
    out
}

const UNITTEST_EXACT: &[&str] = &[
    "assertEqual",
    "assertEquals",
    "assertListEqual",
    "assertDictEqual",
    "assertTupleEqual",
    "assertSetEqual",
    "assertSequenceEqual",
    "assertMultiLineEqual",
    "assertCountEqual",
    "assertIs",
];
const UNITTEST_LOOSE: &[&str] = &[
    "assertTrue",
    "assertFalse",
    "assertIn",
    "assertIsNotNone",
    "assertNotEqual",
    "assertGreater",
    "assertGreaterEqual",
    "assertLess",
    "assertLessEqual",
    "assertIsInstance",
    "assertIsNot",
    "assertNotIn",
];

/// How the added check `a` loosens the removed check `r` of the same test, if it does.
fn loosening(r: &str, a: &str) -> Option<String> {
    let (r, a) = (code_part(r).trim(), code_part(a).trim());
    // mock: a call assertion made weaker on the same mock.
    for (recv, m_old) in assert_calls(r) {
        let Some(old) = mock_strength(m_old) else { continue };
        for (recv2, m_new) in assert_calls(a) {
            if recv2 == recv && mock_strength(m_new).is_some_and(|new| new < old) {
                return Some(format!("weakens `{recv}.{m_old}` to `{m_new}`"));
            }
        }
    }
    // unittest: an exact comparison made a truthiness, membership or ordering test of the same value.
    let methods = |code: &str| -> Vec<String> { assert_calls(code).into_iter().map(|(_, m)| m.to_string()).collect() };
    let (mr, ma) = (methods(r), methods(a));
    if let Some(old) = mr.iter().find(|m| UNITTEST_EXACT.contains(&m.as_str())) {
        let new = ma.iter().find(|m| UNITTEST_LOOSE.contains(&m.as_str()));
        let subject = call_args(r, &format!("{old}(")).map(first_arg).unwrap_or("");
        if let Some(new) = new.filter(|_| !ma.iter().any(|m| UNITTEST_EXACT.contains(&m.as_str()))) {
            if mentions(a, subject) {
                return Some(format!("weakens `{old}` to `{new}`"));
            }
        }
    }
    // pytest.raises / assertRaises: a broader exception, or the message check dropped.
    let raises = |code: &str| -> Option<(String, bool)> {
        for callee in ["raises(", "assertRaisesRegex(", "assertRaises("] {
            if let Some(args) = call_args(code, callee) {
                let regex = callee == "assertRaisesRegex(" || args.contains("match=");
                return Some((first_arg(args).to_string(), regex));
            }
        }
        None
    };
    if let (Some((old, old_match)), Some((new, new_match))) = (raises(r), raises(a)) {
        if catches_assertion_error(&old).is_none() {
            if let Some(broad) = catches_assertion_error(&new) {
                return Some(format!("broadens the expected exception from `{old}` to `{broad}`"));
            }
        }
        if old_match && !new_match {
            return Some(format!("drops the message check (`match=`) of the expected `{old}`"));
        }
    }
    // assert: `==` made a membership, inequality, range or truthiness test of the same subject.
    let (Some((lhs, ops_r)), Some((_, ops_a))) = (comparison(r), comparison(a)) else {
        return None;
    };
    if ops_r != ["=="] || ops_a.iter().any(|o| matches!(*o, "==" | "is")) {
        return None;
    }
    let rhs = r
        .strip_prefix("assert")
        .and_then(|e| {
            let flat = top_level(e);
            let i = flat.find("==")?;
            let end = flat[i..].find(',').map_or(e.len(), |j| i + j);
            Some(e[i + 2..end].trim().to_string())
        })
        .unwrap_or_default();
    let subject_kept = [lhs.as_str(), rhs.as_str()]
        .iter()
        .any(|s| !is_literal(s) && mentions(a, s));
    if !subject_kept {
        return None;
    }
    Some(if ops_a.is_empty() {
        "turns an exact comparison (`==`) into a truthiness test".to_string()
    } else {
        let mut ops = ops_a.clone();
        ops.dedup();
        format!("loosens an exact comparison (`==`) into `{}`", ops.join("`, `"))
    })
}

/// An assert of an existing test replaced by a weaker one.
fn loosened_in_place(fc: &FileChange, out: &mut Vec<Weakening>) {
    let new_file = matches!(fc.status, FileStatus::Added | FileStatus::Copied);
    if new_file {
        return;
    }
    let added_texts: std::collections::HashSet<&str> = fc.added.iter().map(|a| a.text.trim()).collect();
    let removed_texts: std::collections::HashSet<&str> = fc.removed.iter().map(|r| r.text.trim()).collect();
    let removed: Vec<&RemovedLine> = fc
        .removed
        .iter()
        .filter(|r| checks_something(&r.text) && !added_texts.contains(r.text.trim()))
        .collect();
    if removed.is_empty() {
        return;
    }
    // A test the patch adds (its `def` not on the old side) replaces nothing.
    let removed_defs: std::collections::HashSet<&str> = fc
        .removed
        .iter()
        .filter_map(|r| super::weakening::test_def_name(&r.text))
        .collect();
    let added_defs: std::collections::HashSet<&str> = fc
        .added
        .iter()
        .filter_map(|a| super::weakening::test_def_name(&a.text))
        .filter(|d| !removed_defs.contains(d))
        .collect();
    let same_test = |a: &Scope, r: &Scope| match (test_of(a), test_of(r)) {
        (Some(x), Some(y)) => x == y,
        _ => !a.is_known() || !r.is_known(),
    };
    for a in fc.added.iter().filter(|a: &&AddedLine| {
        checks_something(&a.text)
            && !removed_texts.contains(a.text.trim())
            && !TOLERANCE_CALLS.iter().any(|c| code_part(&a.text).contains(c))
            && !test_of(&a.scope).is_some_and(|t| added_defs.contains(t))
    }) {
        let hit = removed
            .iter()
            .filter(|r| same_test(&a.scope, &r.scope))
            .find_map(|r| loosening(&r.text, &a.text).map(|why| (r, why)));
        if let Some((r, why)) = hit {
            let in_test = test_of(&a.scope).map_or(String::new(), |t| format!(" in `{t}`"));
            out.push(Weakening {
                location: Location::at(fc.path.clone(), a.line as usize, None),
                what: format!(
                    "loosens an assertion in place{in_test}: {why} (`{}` at base line {} is now `{}`)",
                    r.text.trim(),
                    r.line,
                    a.text.trim()
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests;
