//! Tests whose substance the patch takes away while they still run and pass, part of
//! `weakened_test`, read from the parsed head test code ([`TestCode`]) and the diff (only
//! what the patch adds counts):
//!
//! - a **stand-in**: the test code replaces the behaviour it checks — patches, rebinds or
//!   monkeypatches a name of the package under test that the patch changes (in a test, a
//!   fixture, a `conftest.py` or a test package's `__init__.py`), so the test checks its own
//!   stand-in. Replacing a collaborator (the clock, the network, the environment, a name the
//!   patch does not change) is ordinary mocking;
//! - a **computed expectation**: an assertion whose expected side is computed by the very call
//!   it checks (`expected = invoice.tax(); assert invoice.tax() == expected`). An expectation
//!   from an independent formula, or the same function on other arguments, is honest;
//! - a **demoted assertion**: a mismatch reported without failing (`if total != 12: warnings.warn(…)`,
//!   a log line, a print) while at most a weaker assert stays;
//! - a **removed case**: a parametrized case (`@pytest.mark.parametrize`, a fixture's `params`,
//!   `metafunc.parametrize`, hypothesis `@example`) the base ran is gone, or `max_examples` is
//!   lowered: the same as deleting a test.
//!
//! [`package`] says what the package under test is.

pub mod cases;
pub mod package;

use super::is_test_file;
use super::python::{self, Module};
use super::support::TestCode;
use super::weakening::Weakening;
use crate::gate::error::Location;
use crate::gate::patch::{FileChange, FileStatus, Patch};
use package::PackageUnderTest;
use rustpython_parser::ast::{self, CmpOp, Expr, Ranged, Stmt};
use std::collections::{BTreeMap, BTreeSet};

/// Every stand-in, computed expectation, demoted assertion and removed case the patch makes.
pub fn weakenings(patch: &Patch, code: &TestCode, head_sources: &BTreeMap<String, String>) -> Vec<Weakening> {
    let package = PackageUnderTest::of(patch, head_sources);
    let mut out = Vec::new();
    for fc in patch
        .files
        .iter()
        .filter(|f| f.status != FileStatus::Deleted && is_test_file(&f.path))
    {
        let Some(m) = code.module(&fc.path) else {
            continue;
        };
        let added: BTreeSet<u32> = fc.added.iter().map(|a| a.line).collect();
        if !package.is_empty() {
            stand_ins(m, &added, &package, &mut out);
        }
        computed_expectations(m, &added, &mut out);
        demoted_asserts(m, &added, &mut out);
        cases::removed_cases(fc, m, &mut out);
    }
    out
}

/// Does the node span a line the patch adds?
fn touches<N: Ranged>(m: &Module, added: &BTreeSet<u32>, node: &N) -> bool {
    let (a, b) = m.lines_of(node);
    added.range(a..=b).next().is_some()
}

fn at(m: &Module, line: u32) -> Location {
    Location::at(m.path.clone(), line as usize, None)
}

/// The stand-ins the patch adds in module `m`.
fn stand_ins(m: &Module, added: &BTreeSet<u32>, package: &PackageUnderTest, out: &mut Vec<Weakening>) {
    let mut found: Vec<(u32, String, String)> = Vec::new();
    python::walk_stmts(&m.body, &mut |s| {
        if !touches(m, added, s) {
            return;
        }
        // Rebinding by assignment: `pricing.apply_tax = …`, `sys.modules["shop.pricing"] = …`,
        // or a name imported from the package bound to something else.
        let targets: Vec<&Expr> = match s {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AnnAssign(a) => vec![&*a.target],
            Stmt::AugAssign(a) => vec![&*a.target],
            _ => Vec::new(),
        };
        let line = m.lines_of(s).0;
        for t in targets {
            for t in flatten_targets(t) {
                if let Some(name) = rebound(m, t, package) {
                    found.push((line, name, m.snippet(s)));
                }
            }
        }
        // A `def` or `class` that rebinds an imported name of the package (its header added).
        let (defined, body_start) = match s {
            Stmt::FunctionDef(f) => (Some(f.name.as_str()), f.body.first().map(|b| m.lines_of(b).0)),
            Stmt::AsyncFunctionDef(f) => (Some(f.name.as_str()), f.body.first().map(|b| m.lines_of(b).0)),
            Stmt::ClassDef(c) => (Some(c.name.as_str()), c.body.first().map(|b| m.lines_of(b).0)),
            _ => (None, None),
        };
        if let Some(name) = defined {
            let header_added = added
                .range(line..body_start.unwrap_or(line + 1).max(line + 1))
                .next()
                .is_some();
            if let Some(q) = m.imports.get(name).filter(|q| header_added && package.changes(q)) {
                found.push((line, q.clone(), format!("def {name}(…)")));
            }
        }
        // Patching calls, in statements and decorators alike.
        for e in python::own_exprs(s) {
            python::walk_expr(e, &mut |x| {
                if let Expr::Call(c) = x {
                    if !touches(m, added, c) {
                        return;
                    }
                    for name in patched(m, c) {
                        if package.changes(&name) {
                            found.push((m.lines_of(c).0, name, m.snippet(c)));
                        }
                    }
                }
            });
        }
    });
    found.sort();
    found.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    for (line, name, what) in found {
        out.push(Weakening {
            location: at(m, line),
            what: format!(
                "replaces the code under test with a stand-in: `{what}` swaps out `{name}`, which the patch changes, so the tests check the stand-in, not the change (mock a collaborator instead)"
            ),
        });
    }
}

fn flatten_targets(t: &Expr) -> Vec<&Expr> {
    match t {
        Expr::Tuple(x) => x.elts.iter().flat_map(flatten_targets).collect(),
        Expr::List(x) => x.elts.iter().flat_map(flatten_targets).collect(),
        Expr::Starred(x) => flatten_targets(&x.value),
        other => vec![other],
    }
}

/// The package name an assignment target rebinds, when it is one the patch changes.
fn rebound(m: &Module, t: &Expr, package: &PackageUnderTest) -> Option<String> {
    match t {
        Expr::Attribute(_) => {
            let q = m.qualify(&python::dotted(t)?);
            package.changes(&q).then_some(q)
        }
        // sys.modules["shop.pricing"] = fake
        Expr::Subscript(s) => {
            let key = python::str_const(&s.slice)?;
            let holder = m.qualify(&python::dotted(&s.value)?);
            (holder == "sys.modules" && package.changes(key)).then(|| key.to_string())
        }
        Expr::Name(n) => {
            let q = m.imports.get(n.id.as_str())?;
            package.changes(q).then(|| q.clone())
        }
        _ => None,
    }
}

/// What a patching call replaces, as dotted names: `monkeypatch.setattr(obj, "name", v)`,
/// `monkeypatch.setattr("a.b.name", v)`, `setattr(obj, "name", v)`, `mock.patch("a.b.name")`,
/// `patch.object(obj, "name")`, `patch.multiple(obj, name=…)`, `monkeypatch.delattr(…)`,
/// `monkeypatch.setitem(sys.modules, "a.b", …)`, `patch.dict(sys.modules, {"a.b": …})`.
fn patched(m: &Module, c: &ast::ExprCall) -> Vec<String> {
    let Some(name) = python::callee_name(c) else {
        return Vec::new();
    };
    let dotted = python::dotted(&c.func).map(|d| m.qualify(&d)).unwrap_or_default();
    let obj_attr = |obj: &Expr, attr: &Expr| -> Option<String> {
        let attr = python::str_const(attr)?;
        let obj = python::dotted(obj).map(|d| m.qualify(&d))?;
        Some(format!("{obj}.{attr}"))
    };
    let is_patch = dotted.ends_with("patch") || dotted == "patch";
    let mut out = Vec::new();
    match name {
        "setattr" | "delattr" => {
            let string_target = c.args.first().and_then(python::str_const);
            let whole = if name == "setattr" { 2 } else { 1 };
            match string_target {
                // monkeypatch.setattr("a.b.name", value), monkeypatch.delattr("a.b.name")
                Some(target) if c.args.len() <= whole => out.push(target.to_string()),
                _ => out.extend(c.args.first().zip(c.args.get(1)).and_then(|(o, a)| obj_attr(o, a))),
            }
        }
        "patch" if is_patch => out.extend(
            python::arg(c, 0, "target")
                .and_then(python::str_const)
                .map(String::from),
        ),
        "object" if dotted.ends_with("patch.object") => {
            out.extend(c.args.first().zip(c.args.get(1)).and_then(|(o, a)| obj_attr(o, a)))
        }
        "multiple" if dotted.ends_with("patch.multiple") => {
            let target = c.args.first().and_then(|t| {
                python::str_const(t)
                    .map(String::from)
                    .or_else(|| python::dotted(t).map(|d| m.qualify(&d)))
            });
            if let Some(t) = target {
                out.extend(
                    c.keywords
                        .iter()
                        .filter_map(|k| k.arg.as_ref())
                        .map(|k| format!("{t}.{k}")),
                );
            }
        }
        "setitem" | "delitem" => {
            let holder = c.args.first().and_then(python::dotted).map(|d| m.qualify(&d));
            if holder.as_deref() == Some("sys.modules") {
                out.extend(c.args.get(1).and_then(python::str_const).map(String::from));
            }
        }
        "dict" if dotted.ends_with("patch.dict") => {
            let holder = c.args.first().and_then(|t| {
                python::str_const(t)
                    .map(String::from)
                    .or_else(|| python::dotted(t).map(|d| m.qualify(&d)))
            });
            if holder.as_deref() == Some("sys.modules") {
                if let Some(Expr::Dict(d)) = c.args.get(1) {
                    out.extend(d.keys.iter().flatten().filter_map(python::str_const).map(String::from));
                }
                out.extend(c.keywords.iter().filter_map(|k| k.arg.as_ref()).map(|k| k.to_string()));
            }
        }
        _ => {}
    }
    out
}

/// Calls that only wrap or convert a value: the expectation's own computation is inside them.
const PASS_THROUGH: &[&str] = &[
    "round",
    "int",
    "float",
    "str",
    "bool",
    "abs",
    "len",
    "list",
    "tuple",
    "set",
    "sorted",
    "dict",
    "Decimal",
    "approx",
    "pytest.approx",
    "repr",
    "sum",
    "min",
    "max",
    "frozenset",
    "bytes",
];

/// The assertions the patch adds or feeds whose expected side the checked call computes.
fn computed_expectations(m: &Module, added: &BTreeSet<u32>, out: &mut Vec<Weakening>) {
    for f in m.functions() {
        // Names bound once in the function: `expected = invoice.tax()`.
        let mut bound: BTreeMap<String, Vec<&Stmt>> = BTreeMap::new();
        python::walk_stmts(f.body, &mut |s| {
            if let Stmt::Assign(a) = s {
                for t in &a.targets {
                    if let Expr::Name(n) = t {
                        bound.entry(n.id.to_string()).or_default().push(s);
                    }
                }
            }
        });
        let value_of = |name: &str| -> Option<(&Expr, &Stmt)> {
            match bound.get(name).map(Vec::as_slice) {
                Some([s]) => match s {
                    Stmt::Assign(a) => Some((&*a.value, *s)),
                    _ => None,
                },
                _ => None,
            }
        };
        python::walk_stmts(f.body, &mut |s| {
            for (lhs, rhs) in compared_pairs(s) {
                let (l, l_from) = expand(m, lhs, &value_of);
                let (r, r_from) = expand(m, rhs, &value_of);
                let patch_made_it =
                    touches(m, added, s) || l_from.iter().chain(&r_from).any(|st| touches(m, added, *st));
                if !patch_made_it {
                    continue;
                }
                let Some(shared) = shared_computation(m, l, r) else {
                    continue;
                };
                out.push(Weakening {
                    location: at(m, m.lines_of(s).0),
                    what: format!(
                        "computes the expected value with the code under test in `{}`: both sides of `{}` come from `{shared}`, so the assertion cannot fail (compute the expectation independently)",
                        f.qualname,
                        m.snippet(s)
                    ),
                });
            }
        });
    }
}

/// The (actual, expected) pairs an equality check compares: `assert a == b`,
/// `assertEqual(a, b)`, `assert_equal`/`assert_allclose`/`assertAlmostEqual`(a, b).
fn compared_pairs(s: &Stmt) -> Vec<(&Expr, &Expr)> {
    let mut out = Vec::new();
    match s {
        Stmt::Assert(a) => {
            if let Expr::Compare(c) = &*a.test {
                if c.ops.len() == 1 && matches!(c.ops[0], CmpOp::Eq | CmpOp::Is) {
                    out.push((&*c.left, &c.comparators[0]));
                }
            }
        }
        Stmt::Expr(e) => {
            if let Expr::Call(c) = &*e.value {
                let name = python::callee_name(c).unwrap_or("");
                let lower = name.to_ascii_lowercase();
                if lower.starts_with("assert")
                    && (lower.contains("equal") || lower.contains("close") || lower.contains("almost"))
                    && !lower.contains("not")
                    && c.args.len() >= 2
                {
                    out.push((&c.args[0], &c.args[1]));
                }
            }
        }
        _ => {}
    }
    out
}

type ValueOf<'f, 'a> = dyn Fn(&str) -> Option<(&'a Expr, &'a Stmt)> + 'f;

/// An expression with a local name bound once replaced by its value (a few levels), and
/// pass-through wrappers (`round(…)`, `pytest.approx(…)`) taken off; and the assignments read.
fn expand<'a>(m: &Module, e: &'a Expr, value_of: &ValueOf<'_, 'a>) -> (&'a Expr, Vec<&'a Stmt>) {
    let mut e = e;
    let mut from = Vec::new();
    for _ in 0..4 {
        match e {
            Expr::Name(n) => match value_of(n.id.as_str()) {
                Some((v, s)) => {
                    from.push(s);
                    e = v;
                }
                None => break,
            },
            Expr::Call(c)
                if python::dotted(&c.func).is_some_and(|d| {
                    PASS_THROUGH.contains(&m.qualify(&d).as_str()) || PASS_THROUGH.contains(&d.as_str())
                }) && !c.args.is_empty() =>
            {
                e = &c.args[0];
            }
            _ => break,
        }
    }
    (e, from)
}

/// The call (or attribute read) both sides are computed by, when the expected side is the
/// actual one recomputed: the same call with the same arguments on both sides.
fn shared_computation(m: &Module, l: &Expr, r: &Expr) -> Option<String> {
    let computes = |e: &Expr| {
        matches!(
            e,
            Expr::Call(_) | Expr::Attribute(_) | Expr::Subscript(_) | Expr::Name(_)
        )
    };
    let (lt, rt) = (m.text(l), m.text(r));
    if computes(l) && lt == rt {
        return Some(m.snippet(l));
    }
    // The checked call, found again inside the expectation's computation (or the other way).
    for (a, b) in [(l, r), (r, l)] {
        if let Expr::Call(_) = a {
            let at = m.text(a);
            let mut inside = false;
            python::walk_expr(b, &mut |x| inside |= matches!(x, Expr::Call(_)) && m.text(x) == at);
            if inside {
                return Some(m.snippet(a));
            }
        }
    }
    None
}

/// Callees that only report: a warning, a log record, a print, a report section.
fn reports(e: &Expr, m: &Module) -> bool {
    let Expr::Call(c) = e else {
        return false;
    };
    let name = python::callee_name(c).unwrap_or("");
    // What the method is called on, as written (`logging.getLogger(__name__)`, `log`, `sys.stderr`).
    let receiver = match &*c.func {
        Expr::Attribute(a) => {
            let r = m.text(&*a.value);
            python::dotted(&a.value)
                .map_or(r, |d| m.qualify(&d))
                .to_ascii_lowercase()
        }
        _ => String::new(),
    };
    matches!(
        name,
        "warn" | "print" | "record_property" | "add_report_section" | "write" | "pprint"
    ) && (name != "write" || receiver.ends_with("stderr") || receiver.ends_with("stdout"))
        || {
            // `log.info`, `logger.warning`, `logging.getLogger(__name__).error` (not `catalog.add`).
            let last = receiver.rsplit('.').next().unwrap_or("");
            last.contains("logger") || matches!(last, "log" | "logging" | "_log") || last.ends_with("_log")
        }
        || receiver == "warnings"
}

/// A statement that only reports (or does nothing).
fn only_reports(body: &[Stmt], m: &Module) -> bool {
    !body.is_empty()
        && body.iter().all(|s| match s {
            Stmt::Expr(e) => reports(&e.value, m) || python::str_const(&e.value).is_some(),
            Stmt::Pass(_) => true,
            _ => false,
        })
        && body.iter().any(|s| matches!(s, Stmt::Expr(e) if reports(&e.value, m)))
}

/// The checks the patch turns into reports: an `if` on a mismatch (or a conditional
/// expression) whose only effect is a warning, a log line or a print.
fn demoted_asserts(m: &Module, added: &BTreeSet<u32>, out: &mut Vec<Weakening>) {
    for f in m
        .functions()
        .into_iter()
        .filter(|f| f.name.starts_with("test") || f.qualname.contains(".test"))
    {
        // Operands the function still asserts on exactly: a report beside them is a debug aid.
        let mut asserted: Vec<String> = Vec::new();
        python::walk_stmts(f.body, &mut |s| {
            if let Stmt::Assert(a) = s {
                if let Expr::Compare(c) = &*a.test {
                    if c.ops.len() == 1 && matches!(c.ops[0], CmpOp::Eq | CmpOp::Is | CmpOp::In) {
                        asserted.push(format!("{}|{}", m.text(&*c.left), m.text(&c.comparators[0])));
                        asserted.push(format!("{}|{}", m.text(&c.comparators[0]), m.text(&*c.left)));
                    }
                }
            }
        });
        let still_asserted = |test: &Expr| match test {
            Expr::Compare(c) if c.ops.len() == 1 => {
                asserted.contains(&format!("{}|{}", m.text(&*c.left), m.text(&c.comparators[0])))
            }
            _ => false,
        };
        python::walk_stmts(f.body, &mut |s| {
            let (test, demoted) = match s {
                Stmt::If(i) if touches(m, added, s) => (
                    &*i.test,
                    only_reports(&i.body, m) && (i.orelse.is_empty() || only_reports(&i.orelse, m)),
                ),
                Stmt::Expr(e) if touches(m, added, s) => match &*e.value {
                    Expr::IfExp(x) => (&*x.test, reports(&x.body, m) || reports(&x.orelse, m)),
                    _ => return,
                },
                _ => return,
            };
            if demoted && !still_asserted(test) {
                out.push(Weakening {
                    location: at(m, m.lines_of(s).0),
                    what: format!(
                        "turns a check into a report in `{}`: when `{}` the test only warns or logs, and passes",
                        f.qualname,
                        m.snippet(test)
                    ),
                });
            }
        });
    }
}

/// The base's text of a changed file, rebuilt from the head's text and the diff: the head's
/// lines the patch did not add, with the removed lines put back at their old numbers. `None`
/// when the diff does not fit the text.
pub fn base_text(fc: &FileChange, head: &str) -> Option<String> {
    let added: BTreeSet<u32> = fc.added.iter().map(|a| a.line).collect();
    let head_lines: Vec<&str> = head.lines().collect();
    for a in &fc.added {
        let at = (a.line as usize).checked_sub(1).and_then(|i| head_lines.get(i));
        if at.map(|t| t.trim_end_matches('\r')) != Some(a.text.trim_end_matches('\r')) {
            return None;
        }
    }
    let mut kept = head_lines
        .iter()
        .enumerate()
        .filter(|(i, _)| !added.contains(&(*i as u32 + 1)))
        .map(|(_, t)| *t);
    let removed: BTreeMap<u32, &str> = fc.removed.iter().map(|r| (r.line, r.text.as_str())).collect();
    let total = head_lines.len() - added.len() + removed.len();
    let mut out = String::new();
    for old in 1..=total as u32 {
        let line = match removed.get(&old) {
            Some(t) => *t,
            None => kept.next()?,
        };
        out.push_str(line);
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests;
