//! Parametrized and generated cases the base ran and the head does not: the base's text of
//! a changed test file is rebuilt from the head's and the diff ([`super::base_text`]), both
//! are parsed, and each test's cases are compared — `@pytest.mark.parametrize` argument
//! values (a literal list, or a module-level list it names), a fixture's `params`,
//! `metafunc.parametrize` in `pytest_generate_tests`, hypothesis `@example`s, and
//! `@settings(max_examples=…)`. A case changed in place or added is not a removal.

use super::{at, base_text};
use crate::gate::patch::{FileChange, FileStatus};
use crate::gate::trust::python::{self, Module};
use crate::gate::trust::weakening::Weakening;
use rustpython_parser::ast::{self, Expr};
use std::collections::BTreeMap;

/// What one test (or fixture) runs as separate cases.
#[derive(Debug, Default, PartialEq)]
struct Cases {
    /// (source of the parametrize, its argument names) → each case's text, in order.
    sets: BTreeMap<String, Vec<String>>,
    /// `max_examples` of a property test, when set.
    max_examples: Option<i64>,
}

/// The cases of every function of a module, by qualified name.
fn cases_of(m: &Module) -> BTreeMap<String, Cases> {
    let mut out: BTreeMap<String, Cases> = BTreeMap::new();
    for f in m.functions() {
        let mut c = Cases::default();
        for d in f.decorators {
            let Expr::Call(call) = d else { continue };
            let name = python::callee_name(call).unwrap_or("");
            match name {
                "parametrize" => {
                    let names = python::arg(call, 0, "argnames").map(|e| m.text(e)).unwrap_or_default();
                    if let Some(values) = python::arg(call, 1, "argvalues") {
                        c.sets.insert(format!("parametrize {names}"), elements(m, values));
                    }
                }
                "fixture" => {
                    if let Some(values) = call
                        .keywords
                        .iter()
                        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "params"))
                    {
                        c.sets.insert("fixture params".into(), elements(m, &values.value));
                    }
                }
                "example" => c.sets.entry("@example".into()).or_default().push(m.text(d)),
                "settings" => {
                    c.max_examples = call
                        .keywords
                        .iter()
                        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "max_examples"))
                        .and_then(|k| python::int_const(&k.value));
                }
                _ => {}
            }
        }
        if f.name == "pytest_generate_tests" {
            python::exprs_in(f.body, &mut |_, e| {
                if let Expr::Call(call) = e {
                    if python::callee_name(call) == Some("parametrize") {
                        let names = python::arg(call, 0, "argnames").map(|e| m.text(e)).unwrap_or_default();
                        if let Some(values) = python::arg(call, 1, "argvalues") {
                            c.sets
                                .insert(format!("metafunc.parametrize {names}"), elements(m, values));
                        }
                    }
                }
            });
        }
        if !c.sets.is_empty() || c.max_examples.is_some() {
            out.insert(f.qualname.clone(), c);
        }
    }
    out
}

/// The cases an argument-values expression holds: a list or tuple literal's elements, those of
/// the module-level list a name refers to, the numbers of `range(n)` (also in a comprehension
/// over it), else the expression as one opaque case.
fn elements(m: &Module, e: &Expr) -> Vec<String> {
    match e {
        Expr::List(l) => l.elts.iter().map(|x| m.text(x)).collect(),
        Expr::Tuple(t) => t.elts.iter().map(|x| m.text(x)).collect(),
        Expr::Name(n) => match m.module_value(n.id.as_str()) {
            Some(v) if !matches!(v, Expr::Name(_)) => elements(m, v),
            _ => vec![m.text(e)],
        },
        Expr::Call(c) if python::dotted(&c.func).as_deref() == Some("range") => range_of(c)
            .map(|r| r.map(|i| i.to_string()).collect())
            .unwrap_or_else(|| vec![m.text(e)]),
        Expr::ListComp(lc) if lc.generators.len() == 1 && lc.generators[0].ifs.is_empty() => {
            match &lc.generators[0].iter {
                Expr::Call(c) if python::dotted(&c.func).as_deref() == Some("range") => match range_of(c) {
                    Some(r) => r.map(|i| format!("{}#{i}", m.text(&*lc.elt))).collect(),
                    None => vec![m.text(e)],
                },
                other => elements(m, other)
                    .into_iter()
                    .map(|x| format!("{}#{x}", m.text(&*lc.elt)))
                    .collect(),
            }
        }
        other => vec![m.text(other)],
    }
}

/// `range(a)`, `range(a, b)` of integer literals, at most 10 000 long.
fn range_of(c: &ast::ExprCall) -> Option<std::ops::Range<i64>> {
    let nums: Option<Vec<i64>> = c.args.iter().map(python::int_const).collect();
    let r = match nums?.as_slice() {
        [n] => 0..*n,
        [a, b] => *a..*b,
        _ => return None,
    };
    r.end.checked_sub(r.start).is_some_and(|n| n <= 10_000).then_some(r)
}

/// The cases the patch removes from tests it keeps.
pub fn removed_cases(fc: &FileChange, head: &Module, out: &mut Vec<Weakening>) {
    if matches!(fc.status, FileStatus::Added | FileStatus::Copied) || fc.removed.is_empty() {
        return;
    }
    let Some(base) = base_text(fc, head.source()).and_then(|t| Module::parse(&head.path, &t)) else {
        return;
    };
    let (before, after) = (cases_of(&base), cases_of(head));
    let heads: BTreeMap<String, u32> = head.functions().into_iter().map(|f| (f.qualname, f.line)).collect();
    for (test, old) in &before {
        // A test deleted outright is the deletion rule's.
        let Some(&line) = heads.get(test) else {
            continue;
        };
        let new = after.get(test);
        for (key, cases) in &old.sets {
            let kept: &[String] = new.and_then(|n| n.sets.get(key)).map_or(&[], Vec::as_slice);
            let gone: Vec<&String> = cases.iter().filter(|c| !kept.contains(c)).collect();
            let distinct = |v: &[String]| v.iter().collect::<std::collections::BTreeSet<_>>().len();
            if gone.is_empty() || distinct(kept) >= distinct(cases) {
                continue;
            }
            out.push(Weakening {
                location: at(head, line),
                what: format!(
                    "removes {} case{} of `{test}` that the base ran ({key}: {}{}): the same as deleting a test",
                    gone.len(),
                    if gone.len() == 1 { "" } else { "s" },
                    gone.iter()
                        .take(3)
                        .map(|g| format!("`{g}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if gone.len() > 3 { ", …" } else { "" }
                ),
            });
        }
        if let (Some(was), now) = (old.max_examples, new.and_then(|n| n.max_examples)) {
            if now.is_some_and(|n| n < was) {
                out.push(Weakening {
                    location: at(head, line),
                    what: format!(
                        "lowers `max_examples` of `{test}` from {was} to {}: fewer generated cases than the base ran",
                        now.unwrap_or(0)
                    ),
                });
            }
        }
    }
}
