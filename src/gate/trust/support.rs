//! The patch's test code as the head has it, parsed ([`TestCode`]): the test modules the
//! patch touches, and the `conftest.py`, `__init__.py` and helper modules of their test
//! packages. It answers whether a test checks anything: by itself (an `assert`, a
//! `pytest.raises`, an `assert…` call, a `raise`), through the helpers, fixtures and harnesses
//! it calls (followed [`MAX_DEPTH`] calls deep), or as a property-based test (hypothesis's
//! `@given`: the check is that no unexpected exception escapes the calls it makes).

use super::python::{self, callee_name, decorator_name, Function, Module};
use crate::gate::patch::{FileChange, FileStatus, Patch};
use rustpython_parser::ast::{Expr, Stmt};
use std::collections::BTreeMap;

/// How many calls deep a test's helpers are followed.
pub const MAX_DEPTH: usize = 3;

/// The parsed head test code: repository path → module.
#[derive(Default)]
pub struct TestCode {
    pub modules: BTreeMap<String, Module>,
}

/// Does a test check something, and how?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checks {
    /// An assertion (or `raise`, `pytest.raises`, …) in its own body.
    Itself,
    /// Through a helper or fixture it calls (the chain of names, the test's own call first).
    Through(Vec<String>),
    /// A property-based test (`@given`): it fails when a call raises.
    Property,
    /// Nothing.
    Nothing,
}

impl TestCode {
    /// Parse the head's test sources; where the face had none for a file the patch adds,
    /// its text is the diff's (all of a new file is in it). A file that does not parse is left
    /// out: the rules then read the diff alone.
    pub fn new(patch: &Patch, sources: &BTreeMap<String, String>) -> TestCode {
        let mut modules = BTreeMap::new();
        for (path, text) in sources {
            if let Some(m) = Module::parse(path, text) {
                modules.insert(path.clone(), m);
            }
        }
        for fc in &patch.files {
            if fc.status == FileStatus::Added && fc.path.ends_with(".py") && !modules.contains_key(&fc.path) {
                if let Some(m) = Module::parse(&fc.path, &added_text(fc)) {
                    modules.insert(fc.path.clone(), m);
                }
            }
        }
        TestCode { modules }
    }

    pub fn module(&self, path: &str) -> Option<&Module> {
        self.modules.get(path)
    }

    /// How the test function `qualname` of `path` checks something.
    pub fn checks(&self, path: &str, qualname: &str) -> Option<Checks> {
        let m = self.modules.get(path)?;
        let fs = m.functions();
        let f = fs.iter().find(|f| f.qualname == qualname)?;
        if body_checks(f.body) {
            return Some(Checks::Itself);
        }
        let mut seen = Vec::new();
        if let Some(chain) = self.through(m, f, MAX_DEPTH, &mut seen) {
            return Some(Checks::Through(chain));
        }
        if is_property_test(f) && calls_anything(f.body) {
            return Some(Checks::Property);
        }
        Some(Checks::Nothing)
    }

    /// The helper chain through which `f` checks something, if one does within `depth` calls.
    fn through(
        &self,
        m: &Module,
        f: &Function<'_>,
        depth: usize,
        seen: &mut Vec<(String, String)>,
    ) -> Option<Vec<String>> {
        if depth == 0 {
            return None;
        }
        for name in referenced(f) {
            for (hm, h) in self.resolve(m, &name) {
                let key = (hm.path.clone(), h.qualname.clone());
                if seen.contains(&key) {
                    continue;
                }
                seen.push(key);
                if body_checks(h.body) {
                    return Some(vec![h.qualname.clone()]);
                }
                if let Some(mut rest) = self.through(hm, &h, depth - 1, seen) {
                    rest.insert(0, h.qualname.clone());
                    return Some(rest);
                }
            }
        }
        None
    }

    /// The functions a name used in module `m` may be: defined in `m` itself; else imported
    /// from a module of the test code; else one of the same name in a `conftest.py` above `m`
    /// or in any module of its test package (fixtures and helpers reach a test that way).
    fn resolve<'s>(&'s self, m: &'s Module, name: &str) -> Vec<(&'s Module, Function<'s>)> {
        let last = name.rsplit('.').next().unwrap_or(name);
        let own: Vec<_> = m
            .functions()
            .into_iter()
            .filter(|f| f.name == last)
            .map(|f| (m, f))
            .collect();
        if !own.is_empty() {
            return own;
        }
        let qualified = m.qualify(name);
        if qualified != name {
            let (module, func) = qualified.rsplit_once('.').unwrap_or(("", &qualified));
            let path = format!("{}.py", module.replace('.', "/"));
            let init = format!("{}/__init__.py", module.replace('.', "/"));
            for (p, other) in &self.modules {
                if p == &path || p == &init || p.ends_with(&format!("/{path}")) {
                    let found: Vec<_> = other
                        .functions()
                        .into_iter()
                        .filter(|f| f.name == func)
                        .map(|f| (other, f))
                        .collect();
                    if !found.is_empty() {
                        return found;
                    }
                }
            }
        }
        let top = m.path.split('/').next().unwrap_or("");
        self.modules
            .values()
            .filter(|o| o.path != m.path && o.path.split('/').next() == Some(top))
            .flat_map(|o| {
                o.functions()
                    .into_iter()
                    .filter(|f| f.name == last)
                    .map(move |f| (o, f))
            })
            .collect()
    }
}

/// The text of a file the patch adds: its added lines.
fn added_text(fc: &FileChange) -> String {
    let mut s = String::new();
    for l in &fc.added {
        s.push_str(&l.text);
        s.push('\n');
    }
    s
}

/// Names a check may count: `assert…` callees (unittest, mock, numpy), pytest's.
fn is_check_call(call: &rustpython_parser::ast::ExprCall) -> bool {
    let Some(name) = callee_name(call) else {
        return false;
    };
    let dotted = python::dotted(&call.func).unwrap_or_default();
    name.starts_with("assert")
        || name.starts_with("Assert")
        || matches!(name, "fail" | "raises" | "warns" | "deprecated_call")
            && (dotted.starts_with("pytest.") || dotted.starts_with("self.") || dotted == name)
}

/// Does this body check something itself: an `assert`, a `raise`, a check call, a
/// `with pytest.raises(…)`?
pub fn body_checks(body: &[Stmt]) -> bool {
    let mut found = false;
    python::walk_stmts(body, &mut |s| {
        match s {
            // `assert True` checks nothing.
            Stmt::Assert(a) if is_truthy_constant(&a.test) => {}
            Stmt::Assert(_) | Stmt::Raise(_) => found = true,
            _ => {}
        }
        for e in python::own_exprs(s) {
            python::walk_expr(e, &mut |x| {
                if let Expr::Call(c) = x {
                    found |= is_check_call(c);
                }
            });
        }
    });
    found
}

/// A constant that is true (`True`, `1`, `"x"`): an assertion of it cannot fail.
fn is_truthy_constant(e: &Expr) -> bool {
    use rustpython_parser::ast::Constant;
    match e {
        Expr::Constant(c) => match &c.value {
            Constant::Bool(b) => *b,
            Constant::Str(s) => !s.is_empty(),
            Constant::Int(i) => i.to_string() != "0",
            Constant::Float(f) => *f != 0.0,
            Constant::Ellipsis => true,
            _ => false,
        },
        Expr::Tuple(t) => !t.elts.is_empty(),
        _ => false,
    }
}

/// A hypothesis property test: decorated `@given(…)` (also `hypothesis.given`).
pub fn is_property_test(f: &Function<'_>) -> bool {
    f.decorators
        .iter()
        .filter_map(decorator_name)
        .any(|d| d == "given" || d.ends_with(".given"))
}

/// Does the body call anything (a property test that calls nothing checks nothing)?
fn calls_anything(body: &[Stmt]) -> bool {
    let mut found = false;
    python::exprs_in(body, &mut |_, e| found |= matches!(e, Expr::Call(_)));
    found
}

/// The names a function uses that may be helpers: what it calls, what it passes on (a
/// checker handed to a harness), and the fixtures it requests by parameter.
fn referenced(f: &Function<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |n: String| {
        if !out.contains(&n) {
            out.push(n);
        }
    };
    python::exprs_in(f.body, &mut |_, e| match e {
        Expr::Call(c) => {
            if let Some(d) = python::dotted(&c.func) {
                push(d.trim_start_matches("self.").trim_start_matches("cls.").to_string());
            } else if let Some(n) = callee_name(c) {
                push(n.to_string());
            }
        }
        Expr::Name(n) => push(n.id.to_string()),
        _ => {}
    });
    for p in python::params(f.args) {
        if !matches!(p, "self" | "cls") {
            push(p.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(files: &[(&str, &str)]) -> TestCode {
        let sources = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
        TestCode::new(&Patch::default(), &sources)
    }

    #[test]
    fn follows_helpers_fixtures_and_knows_property_tests() {
        let c = code(&[
            (
                "tests/test_a.py",
                "from hypothesis import given, strategies as st\nfrom tests.support import check_total\nfrom shop.pricing import apply_tax\n\n\
def _roundtrip(x):\n    return check_total(x)\n\n\
def test_direct():\n    assert apply_tax(1) == 1.2\n\n\
def test_helper():\n    _roundtrip(3)\n\n\
def test_fixture(checked_cart):\n    checked_cart.add(1)\n\n\
@given(st.floats())\ndef test_property(x):\n    apply_tax(x)\n\n\
@given(st.floats())\ndef test_property_empty(x):\n    pass\n\n\
def test_nothing():\n    apply_tax(2)\n\n\
def test_deep():\n    a()\n\ndef a():\n    b()\n\ndef b():\n    c()\n\ndef c():\n    d()\n\ndef d():\n    assert x\n\n\ndef test_trivial():\n    assert True\n",
            ),
            (
                "tests/support.py",
                "def check_total(x):\n    if x < 0:\n        raise AssertionError(x)\n",
            ),
            (
                "tests/conftest.py",
                "import pytest\n\n@pytest.fixture\ndef checked_cart():\n    cart = []\n    yield cart\n    assert cart\n",
            ),
        ]);
        let got = |q: &str| c.checks("tests/test_a.py", q).unwrap();
        assert_eq!(got("test_direct"), Checks::Itself);
        assert_eq!(
            got("test_helper"),
            Checks::Through(vec!["_roundtrip".into(), "check_total".into()])
        );
        assert_eq!(got("test_fixture"), Checks::Through(vec!["checked_cart".into()]));
        assert_eq!(got("test_property"), Checks::Property);
        assert_eq!(got("test_property_empty"), Checks::Nothing);
        assert_eq!(got("test_nothing"), Checks::Nothing);
        // Four calls deep is past what is followed.
        assert_eq!(got("test_deep"), Checks::Nothing);
        // `assert True` checks nothing.
        assert_eq!(got("test_trivial"), Checks::Nothing);
    }
}
