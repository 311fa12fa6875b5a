//! How a patch weakens its tests (`weakened_test`: retries, sleeps, skips,
//! widened tolerances, removed assertions or tests, no-ops, new tests that
//! assert nothing), and whether it adds or modifies a given test (for
//! `self_witness`). Read from the diff alone: the hunks, their Python scopes.

use super::is_test_file;
use super::support::{Checks, TestCode};
use crate::gate::error::Location;
use crate::gate::nodeid::TestId;
use crate::gate::patch::{AddedLine, FileChange, FileStatus, Patch, RemovedLine, Scope};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// One way the patch weakens a test, with where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weakening {
    pub location: Location,
    pub what: String,
}

/// Added lines that weaken a test: (needles, what it is). Matched on the line's code,
/// not on comments.
const WEAKENING_ADDED: &[(&[&str], &str)] = &[
    (
        &[
            "mark.flaky",
            "@flaky",
            "reruns=",
            "rerunfailures",
            "@retry",
            "tenacity",
            "backoff.on_exception",
        ],
        "adds retries",
    ),
    (&["time.sleep(", "asyncio.sleep(", " sleep("], "adds a sleep"),
    (
        &[
            "mark.skip",
            "mark.xfail",
            "pytest.skip(",
            "pytest.xfail(",
            "unittest.skip",
            "@skip",
            "pytest.importorskip(",
            ".skipTest(",
        ],
        MARKERS,
    ),
];

const MARKERS: &str = "adds a skip or xfail";

/// Does the added marker line `l` apply only to tests the patch adds: a decorator
/// of a new `def test…` (or of a class the patch adds), or a call inside a new test.
fn marks_new_test(
    fc: &FileChange,
    view: &[NewLine<'_>],
    l: &AddedLine,
    new_defs: &HashSet<&str>,
    new_test: &dyn Fn(&Scope) -> bool,
) -> bool {
    if !code_part(&l.text).trim_start().starts_with('@') {
        return new_test(&l.scope);
    }
    // The decorated definition: the first `def`/`class` line below, the lines between contiguous.
    let Some(i) = view.iter().position(|v| v.line == l.line) else {
        return false;
    };
    let mut prev = l.line;
    for v in &view[i + 1..] {
        if v.line != prev + 1 {
            return false;
        }
        prev = v.line;
        let Some(name) = crate::gate::patch::scope::block_name(code_part(v.text)) else {
            continue;
        };
        if !v.added {
            return false;
        }
        if test_def_name(v.text).is_some() {
            return fc.status == FileStatus::Added || new_defs.contains(name);
        }
        // A class may hold existing tests moved into it: only a class of a new file is new.
        return fc.status == FileStatus::Added;
    }
    false
}

pub(super) fn code_part(text: &str) -> &str {
    // Good enough for the signals: cut at a `#` that is not inside quotes.
    let mut in_s: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (in_s, c) {
            (None, '#') => return &text[..i],
            (None, '\'' | '"') => in_s = Some(c),
            (Some(q), c) if c == q => in_s = None,
            _ => {}
        }
    }
    text
}

/// Does the line carry code (not blank, not only a comment)?
pub(super) fn is_code(text: &str) -> bool {
    !code_part(text).trim().is_empty()
}

fn is_assert(text: &str) -> bool {
    let t = code_part(text).trim_start();
    t.starts_with("assert ") || t.starts_with("assert(") || t.contains("self.assert") || t.contains("pytest.raises(")
}

pub(super) fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifiers of a line's code, in order (string contents included: good enough).
fn identifiers(code: &str) -> impl Iterator<Item = &str> {
    code.split(|c: char| !is_ident(c)).filter(|w| !w.is_empty())
}

/// Does this line check something: `assert`, any `assert…` call (unittest's
/// `self.assertEqual`, mock's `.assert_called_once_with`, `assert_allclose`,
/// …), `pytest.raises`/`warns`/`fail`/`deprecated_call`, `self.fail`, or
/// `raise AssertionError`?
pub(super) fn checks_something(text: &str) -> bool {
    let code = code_part(text);
    identifiers(code).any(|w| w.starts_with("assert") || w == "AssertionError")
        || [
            "pytest.raises",
            "pytest.warns",
            "pytest.fail",
            "pytest.deprecated_call",
            "self.fail(",
        ]
        .iter()
        .any(|n| code.contains(n))
}

/// Calls whose keyword arguments set a tolerance.
pub(super) const TOLERANCE_CALLS: &[&str] = &[
    "approx(",
    "assertAlmostEqual(",
    "assertNotAlmostEqual(",
    "isclose(",
    "allclose(",
    "assert_almost_equal(",
];
/// Tolerance keywords; for `places` and `decimal` a smaller value is looser.
const TOLERANCE_KEYS: &[&str] = &[
    "rel", "abs", "rel_tol", "abs_tol", "rtol", "atol", "delta", "places", "decimal",
];

/// The tolerance keywords a line sets, with their values (`None`: not a number literal).
fn tolerances(text: &str) -> Vec<(&'static str, Option<f64>, String)> {
    let code = code_part(text);
    if !TOLERANCE_CALLS.iter().any(|c| code.contains(c)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for key in TOLERANCE_KEYS {
        let mut from = 0;
        while let Some(i) = code[from..].find(key).map(|i| i + from) {
            from = i + key.len();
            if code[..i].chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let rest = code[from..].trim_start();
            let Some(rest) = rest.strip_prefix('=').filter(|r| !r.starts_with('=')) else {
                continue;
            };
            let rest = rest.trim_start();
            let end = rest.find([',', ')', ' ']).unwrap_or(rest.len());
            let raw = rest[..end].to_string();
            out.push((*key, raw.parse::<f64>().ok(), raw));
            break;
        }
    }
    out
}

pub(super) fn test_def_name(text: &str) -> Option<&str> {
    let name = crate::gate::patch::scope::block_name(code_part(text))?;
    let t = code_part(text).trim_start();
    (name.starts_with("test") && !t.starts_with("class")).then_some(name)
}

/// The test function a scope is in: its innermost `test…` name.
pub(super) fn test_of(scope: &Scope) -> Option<&str> {
    scope
        .names()
        .iter()
        .rev()
        .find(|n| n.starts_with("test"))
        .map(String::as_str)
}

/// One line of the new side as the diff shows it.
pub(super) struct NewLine<'a> {
    pub(super) line: u32,
    pub(super) text: &'a str,
    pub(super) added: bool,
}

/// The new side as far as the hunks show it (added and context lines, ascending).
pub(super) fn new_side(fc: &FileChange) -> Vec<NewLine<'_>> {
    let mut v: Vec<NewLine<'_>> = fc
        .added
        .iter()
        .map(|a| NewLine {
            line: a.line,
            text: &a.text,
            added: true,
        })
        .chain(fc.context.iter().map(|c| NewLine {
            line: c.line,
            text: &c.text,
            added: false,
        }))
        .collect();
    v.sort_by_key(|l| l.line);
    v
}

pub(super) fn indent(text: &str) -> usize {
    text.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 8 } else { 1 })
        .sum()
}

/// How many brackets the line's code opens, less those it closes (quoted text skipped).
fn bracket_delta(text: &str) -> i32 {
    let mut depth = 0;
    let mut in_s: Option<char> = None;
    for c in code_part(text).chars() {
        match (in_s, c) {
            (None, '\'' | '"') => in_s = Some(c),
            (Some(q), c) if c == q => in_s = None,
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            _ => {}
        }
    }
    depth
}

/// The body of the function whose `def` is `view[at]`, when the diff shows all
/// of it: the body lines' texts, or `None` when a hunk ends inside it (the file
/// goes on past what the diff shows).
fn visible_body<'a>(fc: &FileChange, view: &[NewLine<'a>], at: usize) -> Option<Vec<&'a str>> {
    let def = view[at].text;
    let def_indent = indent(def);
    // The signature may span lines; a body on the `def` line itself is the whole body.
    let mut depth = bracket_delta(def);
    if depth <= 0 && !code_part(def).trim_end().ends_with(':') {
        return Some(vec![def]);
    }
    let mut body = Vec::new();
    let mut prev = view[at].line;
    for l in &view[at + 1..] {
        if l.line != prev + 1 {
            break;
        }
        prev = l.line;
        if depth > 0 {
            depth += bracket_delta(l.text);
            continue;
        }
        if !is_code(l.text) {
            continue;
        }
        if indent(l.text) <= def_indent {
            return Some(body);
        }
        body.push(l.text);
    }
    // The hunk ends inside the function: all of it is shown only for a new
    // file, or at the end of the file (a hunk ends on an added line only
    // there, when the diff has context lines at all).
    let last_added = view.iter().rev().find(|l| l.line == prev).is_some_and(|l| l.added);
    let whole = fc.status == FileStatus::Added || (last_added && !fc.context.is_empty());
    whole.then_some(body)
}

/// Every way the patch weakens its test files (`weakened_test`), read from the diff alone.
#[cfg(test)]
pub fn weakenings(patch: &Patch) -> Vec<Weakening> {
    weakenings_in(patch, &TestCode::default())
}

/// Every way the patch weakens its test files (`weakened_test`): read from the diff, and
/// from the head's test code where there is some (a new test that calls an asserting helper,
/// fixture or harness, or a property-based test, asserts something).
pub fn weakenings_in(patch: &Patch, code: &TestCode) -> Vec<Weakening> {
    let mut out = Vec::new();
    for fc in patch
        .files
        .iter()
        .filter(|f| is_test_file(&f.path) || f.old_path.as_deref().is_some_and(is_test_file))
    {
        let at = |line: u32| Location::at(fc.path.clone(), line as usize, None);
        if fc.status == FileStatus::Deleted {
            out.push(Weakening {
                location: Location::file(fc.path.clone()),
                what: "deletes a test file".into(),
            });
            continue;
        }
        let new_file = fc.status == FileStatus::Added;
        let added_defs: HashSet<&str> = fc.added.iter().filter_map(|a| test_def_name(&a.text)).collect();
        let removed_defs: HashSet<&str> = fc.removed.iter().filter_map(|r| test_def_name(&r.text)).collect();
        // Tests the patch adds (a `def` the base did not have): their checks are new, not loosened ones.
        let new_defs: HashSet<&str> = added_defs.difference(&removed_defs).copied().collect();
        let removed_index = RemovedIndex::new(fc);
        let new_test = |scope: &Scope| new_file || test_of(scope).is_some_and(|t| new_defs.contains(&t));
        let view = new_side(fc);
        for l in &fc.added {
            let code = code_part(&l.text);
            for (needles, what) in WEAKENING_ADDED {
                // A marker on a test the patch adds weakens nothing: that test was never evidence.
                let on_new_test = *what == MARKERS && marks_new_test(fc, &view, l, &new_defs, &new_test);
                if !on_new_test && needles.iter().any(|n| code.contains(n)) {
                    out.push(Weakening {
                        location: at(l.line),
                        what: format!("{what}: `{}`", l.text.trim()),
                    });
                }
            }
            if let Some(what) = widened_tolerance(&removed_index, l, &new_test) {
                out.push(Weakening {
                    location: at(l.line),
                    what,
                });
            }
        }
        // Assertions removed: more assert lines leave than arrive.
        let removed_asserts: Vec<_> = fc.removed.iter().filter(|r| is_assert(&r.text)).collect();
        let added_asserts = fc.added.iter().filter(|a| is_assert(&a.text)).count();
        if removed_asserts.len() > added_asserts {
            let first = removed_asserts[0];
            out.push(Weakening {
                location: at_removed(fc, first.line),
                what: format!(
                    "removes {} assertion{} (e.g. `{}` at base line {})",
                    removed_asserts.len() - added_asserts,
                    if removed_asserts.len() - added_asserts == 1 {
                        ""
                    } else {
                        "s"
                    },
                    first.text.trim(),
                    first.line
                ),
            });
        }
        // Test functions deleted.
        for r in &fc.removed {
            if let Some(name) = test_def_name(&r.text) {
                if !added_defs.contains(&name) {
                    out.push(Weakening {
                        location: at_removed(fc, r.line),
                        what: format!("deletes the test `{name}` (base line {})", r.line),
                    });
                }
            }
        }
        // Tests added that check nothing, and existing tests turned into no-ops.
        let view = new_side(fc);
        for (i, l) in view.iter().enumerate() {
            let Some(name) = test_def_name(l.text).filter(|_| l.added) else {
                continue;
            };
            // From the parsed head: its helpers, fixtures and harnesses followed.
            let parsed = code.module(&fc.path).and_then(|m| {
                let f = m
                    .functions()
                    .into_iter()
                    .filter(|f| f.name == name && f.line <= l.line && l.line <= f.end_line)
                    .max_by_key(|f| f.line)?;
                code.checks(&fc.path, &f.qualname)
            });
            let asserts_nothing = match parsed {
                Some(c) => c == Checks::Nothing,
                None => visible_body(fc, &view, i).is_some_and(|body| !body.iter().any(|t| checks_something(t))),
            };
            if asserts_nothing {
                out.push(Weakening {
                    location: at(l.line),
                    what: format!(
                        "adds a test that asserts nothing: `{name}` has no assert, pytest.raises/warns/fail or assert… call, and calls no helper, fixture or harness that has one ({} calls deep); nor is it a property-based test (`@given`)",
                        super::support::MAX_DEPTH
                    ),
                });
            }
        }
        for (i, l) in view.iter().enumerate().filter(|(_, l)| l.added) {
            if let Some(what) = no_op(fc, &view, i, &new_test) {
                out.push(Weakening {
                    location: at(l.line),
                    what,
                });
            }
        }
    }
    out
}

/// What a key's tolerances were on the removed lines: the loosest and the
/// tightest number (value, as written), and the values that are no number.
#[derive(Default)]
struct KeyBefore {
    lo: Option<(f64, String)>,
    hi: Option<(f64, String)>,
    unparsed: BTreeSet<String>,
}

/// What the removed code lines of one scope held, for judging a tolerance added there.
#[derive(Default)]
struct Before {
    keys: BTreeMap<&'static str, KeyBefore>,
    /// Some removed line compared or checked something (`==`, `assert`, …).
    compares: bool,
}

impl Before {
    fn add(&mut self, r: &RemovedLine) {
        self.compares |= checks_something(&r.text) || code_part(&r.text).contains("==");
        for (key, value, raw) in tolerances(&r.text) {
            let k = self.keys.entry(key).or_default();
            match value {
                Some(v) => {
                    if k.lo.as_ref().is_none_or(|(lo, _)| v < *lo) {
                        k.lo = Some((v, raw.clone()));
                    }
                    if k.hi.as_ref().is_none_or(|(hi, _)| v > *hi) {
                        k.hi = Some((v, raw));
                    }
                }
                None => {
                    k.unparsed.insert(raw);
                }
            }
        }
    }
}

/// The removed lines of a file, by scope, for [`widened_tolerance`]: built once, so
/// that judging every added line stays linear.
#[derive(Default)]
struct RemovedIndex {
    all: Before,
    unknown: Before,
    by_scope: HashMap<std::sync::Arc<[String]>, Before>,
    texts: HashSet<String>,
}

impl RemovedIndex {
    fn new(fc: &FileChange) -> Self {
        let mut ix = RemovedIndex::default();
        for r in fc.removed.iter().filter(|r| is_code(&r.text)) {
            ix.texts.insert(r.text.trim().to_string());
            ix.all.add(r);
            match &r.scope {
                Scope::Unknown => ix.unknown.add(r),
                Scope::Known { names, .. } => ix.by_scope.entry(names.clone()).or_default().add(r),
            }
        }
        ix
    }
    /// What the lines that may have been in the same function as `scope` held.
    fn around(&self, scope: &Scope) -> Vec<&Before> {
        match scope {
            Scope::Unknown => vec![&self.all],
            Scope::Known { names, .. } => self.by_scope.get(names).into_iter().chain([&self.unknown]).collect(),
        }
    }
}

/// Does this added line widen a tolerance of an existing check: an exact
/// comparison made approximate, or a `rel`/`abs`/`places`/… made looser?
fn widened_tolerance(ix: &RemovedIndex, l: &AddedLine, new_test: &dyn Fn(&Scope) -> bool) -> Option<String> {
    let now = tolerances(&l.text);
    if now.is_empty() || new_test(&l.scope) || ix.texts.contains(l.text.trim()) {
        return None;
    }
    let before = ix.around(&l.scope);
    let text = l.text.trim();
    if before.iter().all(|b| b.keys.is_empty()) {
        // No tolerance before: an exact comparison made approximate, unless nothing was replaced.
        return before
            .iter()
            .any(|b| b.compares)
            .then(|| format!("widens a tolerance (an exact comparison becomes approximate): `{text}`"));
    }
    for (key, value, raw) in &now {
        let olds: Vec<&KeyBefore> = before.iter().filter_map(|b| b.keys.get(key)).collect();
        if olds.is_empty() {
            return Some(format!("widens a tolerance (adds `{key}={raw}`): `{text}`"));
        }
        let smaller_is_looser = matches!(*key, "places" | "decimal");
        for old in olds {
            // The old value this one is looser than, if any.
            let looser_than = match value {
                Some(v) if smaller_is_looser => old.hi.as_ref().filter(|(hi, _)| v < hi),
                Some(v) => old.lo.as_ref().filter(|(lo, _)| v > lo),
                None => None,
            };
            if let Some((_, old_raw)) = looser_than {
                return Some(format!("widens a tolerance ({key} {old_raw} → {raw}): `{text}`"));
            }
            // A value that is no number (or compared with one) cannot be ranked: a change is reported.
            let other = match value {
                Some(_) => old.unparsed.iter().next(),
                None => old
                    .lo
                    .iter()
                    .chain(&old.hi)
                    .map(|(_, r)| r)
                    .chain(&old.unparsed)
                    .find(|r| *r != raw),
            };
            if let Some(old_raw) = other {
                return Some(format!(
                    "changes a tolerance ({key} {old_raw} → {raw}) that cannot be compared: `{text}`"
                ));
            }
        }
    }
    None
}

/// Does the added line `view[i]` turn an existing test into a no-op: `return`
/// as its first statement, or `pass`/`...` as its whole body where the old body was removed?
fn no_op(fc: &FileChange, view: &[NewLine<'_>], i: usize, new_test: &dyn Fn(&Scope) -> bool) -> Option<String> {
    let l = &view[i];
    let stmt = code_part(l.text).trim();
    let kind = match stmt {
        "return" | "return None" => "return",
        "pass" | "..." => "pass",
        _ => return None,
    };
    let scope = &fc.added.iter().find(|a| a.line == l.line)?.scope;
    let name = test_of(scope)?;
    if new_test(scope) || scope.names().last().map(String::as_str) != Some(name) {
        return None;
    }
    // The first statement: walking up, only blank lines, comments, a one-line
    // docstring or the end of a multi-line signature lie between it and the `def`.
    let mut prev = l.line;
    let mut first = false;
    for p in view[..i].iter().rev() {
        if p.line + 1 != prev {
            break;
        }
        prev = p.line;
        let t = code_part(p.text).trim();
        if t.is_empty() || is_docstring_line(t) || (t.starts_with([')', ']']) && t.ends_with(':')) {
            continue;
        }
        first = test_def_name(p.text) == Some(name);
        break;
    }
    if !first {
        return None;
    }
    if kind == "pass" {
        // `pass` first is a no-op only when nothing follows it in the body and the old body went.
        let def_indent = view[..i]
            .iter()
            .rev()
            .find(|p| test_def_name(p.text) == Some(name))
            .map_or(0, |p| indent(p.text));
        let mut prev = l.line;
        let mut rest_of_body = false;
        for n in &view[i + 1..] {
            if n.line != prev + 1 {
                break;
            }
            prev = n.line;
            if is_code(n.text) {
                rest_of_body = indent(n.text) > def_indent;
                break;
            }
        }
        let body_removed = fc
            .removed
            .iter()
            .any(|r| is_code(&r.text) && test_of(&r.scope) == Some(name) && test_def_name(&r.text).is_none());
        if rest_of_body || !body_removed {
            return None;
        }
    }
    Some(format!(
        "turns the test `{name}` into a no-op (`{stmt}` as its first statement)"
    ))
}

fn is_docstring_line(t: &str) -> bool {
    let t = t.trim_start_matches(['r', 'R', 'u', 'U']);
    (t.starts_with("\"\"\"") && t.len() >= 6 && t.ends_with("\"\"\""))
        || (t.starts_with(") && t.len() >= 6 && t.ends_with("))
}

/// Where a removed line was, as a head-side place an annotation can point at: the surviving
/// line that now stands where the removed run began (the file itself when it was deleted).
pub(super) fn at_removed(fc: &FileChange, old_line: u32) -> Location {
    if fc.status == FileStatus::Deleted {
        return Location::file(fc.path.clone());
    }
    let line = fc
        .deletions
        .iter()
        .find(|d| d.old_start <= old_line && old_line < d.old_start + d.old_count.max(1))
        .map(|d| d.after + 1)
        .unwrap_or(old_line);
    Location::at(fc.path.clone(), line.max(1) as usize, None)
}

/// Does the patch add or modify this test? A test is the patch's own when its
/// file is new (or copied), or when the patch changes a line of code inside
/// the test's function — its `def` line, a decorator, or its body — as the
/// hunks show it (see `patch::scope::scopes_of_side`). Lines without code
/// (blank, comment) do not count. A changed code line whose function the hunk
/// cannot show counts for every test of that file (conservative). Tests are
/// matched by function name (the last `::` part of the node id, without its
/// `[…]` parameters), not by class.
pub fn tests_touched_by(patch: &Patch, test: &TestId) -> bool {
    let file = test.file();
    let Some(fc) = patch.files.iter().find(|f| f.path == file) else {
        return false;
    };
    if matches!(fc.status, FileStatus::Added | FileStatus::Copied) {
        return true;
    }
    let name = test.base().rsplit("::").next().unwrap_or("");
    let changed = fc
        .added
        .iter()
        .map(|a| (a.text.as_str(), &a.scope))
        .chain(fc.removed.iter().map(|r| (r.text.as_str(), &r.scope)));
    changed.filter(|(t, _)| is_code(t)).any(|(_, scope)| match scope {
        Scope::Unknown => true,
        Scope::Known { names, complete } => {
            names.iter().any(|n| n == name)
                // Not in a test function the hunk shows, and not surely outside every one.
                || (!complete && !names.iter().any(|n| n.starts_with("test")))
        }
    })
}

#[cfg(test)]
pub(crate) mod tests;
