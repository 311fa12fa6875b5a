//! The package under test, as far as a stand-in matters: the Python modules the patch
//! changes (outside its tests) and, in each, the names whose code it changes — a `def` or a
//! `class` (and its methods) holding a changed line, a module-level name assigned on one.
//! Read from the head's source when the face has it, else from the diff's scopes.

use crate::gate::patch::{FileStatus, Patch, Scope};
use crate::gate::trust::is_test_file;
use crate::gate::trust::python::Module;
use rustpython_parser::ast::{Expr, Stmt};
use std::collections::{BTreeMap, BTreeSet};

/// Changed names per module.
#[derive(Debug, Default)]
pub struct PackageUnderTest {
    /// Dotted module (`shop.pricing`) → the names the patch changes in it (`apply_tax`,
    /// `Cart`, `Cart.subtotal`); `None`: the module changed where the diff cannot say which
    /// name (every name of it counts).
    modules: BTreeMap<String, Option<BTreeSet<String>>>,
}

/// `src/shop/pricing.py` → `shop.pricing`; `shop/__init__.py` → `shop`.
pub fn module_name(path: &str) -> Option<String> {
    let p = path.strip_suffix(".py")?;
    // The import root: after the last `src/` (`packages/a/src/a/x.py`), or a leading `lib/`.
    let p = match p.rfind("src/") {
        Some(i) if i == 0 || p[..i].ends_with('/') => &p[i + 4..],
        _ => p.strip_prefix("lib/").unwrap_or(p),
    };
    let p = p.strip_suffix("/__init__").unwrap_or(p);
    (!p.is_empty() && p != "__init__").then(|| p.replace('/', "."))
}

impl PackageUnderTest {
    pub fn of(patch: &Patch, head_sources: &BTreeMap<String, String>) -> Self {
        let mut modules = BTreeMap::new();
        for fc in patch
            .files
            .iter()
            .filter(|f| f.status != FileStatus::Deleted && !is_test_file(&f.path))
        {
            let Some(name) = module_name(&fc.path) else {
                continue;
            };
            let added: BTreeSet<u32> = fc.added.iter().map(|a| a.line).collect();
            let mut names = BTreeSet::new();
            let mut unknown = false;
            let parsed = head_sources.get(&fc.path).and_then(|t| Module::parse(&fc.path, t));
            match &parsed {
                Some(m) => changed_in_source(m, &added, &mut names),
                None => {
                    for a in &fc.added {
                        unknown |= from_scope(&a.scope, &a.text, &mut names);
                    }
                }
            }
            for r in &fc.removed {
                unknown |= from_scope(&r.scope, &r.text, &mut names);
            }
            if fc.added.is_empty() && fc.removed.is_empty() {
                continue;
            }
            modules.insert(name, if unknown { None } else { Some(names) });
        }
        PackageUnderTest { modules }
    }

    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// Does replacing `dotted` (`shop.pricing.apply_tax`, `shop.cart.Cart.subtotal`,
    /// `shop.pricing`) replace code the patch changes? A name is matched against the module it
    /// is in by its full dotted path, or — when the test code imported it some way the rules
    /// did not follow — by the module's last parts (`pricing.apply_tax`).
    pub fn changes(&self, dotted: &str) -> bool {
        for (module, names) in &self.modules {
            let rest = if dotted == module {
                Some("")
            } else if let Some(r) = dotted.strip_prefix(module.as_str()).and_then(|r| r.strip_prefix('.')) {
                Some(r)
            } else {
                // A dotted suffix of the module's name (`shop.pricing` for `libs.shop.pricing`); one
                // part alone (`cart`) is as likely a local variable as the module.
                module
                    .match_indices('.')
                    .map(|(i, _)| &module[i + 1..])
                    .filter(|suffix| suffix.contains('.'))
                    .find_map(|suffix| {
                        if dotted == suffix {
                            Some("")
                        } else {
                            dotted.strip_prefix(suffix).and_then(|r| r.strip_prefix('.'))
                        }
                    })
            };
            let Some(rest) = rest else {
                continue;
            };
            // The whole module replaced.
            if rest.is_empty() {
                return true;
            }
            let Some(names) = names else {
                return true;
            };
            let mut parts = rest.split('.');
            let first = parts.next().unwrap_or("");
            let two = parts.next().map(|second| format!("{first}.{second}"));
            let hit = match &two {
                // A method: that method changed, or the name is a function that changed.
                Some(two) => names.contains(two) || (names.contains(first) && !is_class_name(names, first)),
                // A class or function as a whole: it (or a method of it) changed.
                None => names.contains(first),
            };
            if hit {
                return true;
            }
        }
        self.changes_where_used(dotted)
    }

    /// A changed name patched where another module of the package uses it
    /// (`shop.cart.apply_tax` for `apply_tax` of `shop.pricing`, imported by `shop.cart`).
    fn changes_where_used(&self, dotted: &str) -> bool {
        let parts: Vec<&str> = dotted.split('.').collect();
        if parts.len() < 3 {
            return false;
        }
        let last = parts[parts.len() - 1];
        let method = format!("{}.{last}", parts[parts.len() - 2]);
        self.modules.iter().any(|(module, names)| {
            module.split('.').next() == Some(parts[0])
                && names
                    .as_ref()
                    .is_some_and(|n| (n.contains(last) && !is_class_name(n, last)) || n.contains(&method))
        })
    }
}

/// Is `name` a class with changed methods listed (`Cart` when `Cart.subtotal` is listed)?
fn is_class_name(names: &BTreeSet<String>, name: &str) -> bool {
    let prefix = format!("{name}.");
    names.iter().any(|n| n.starts_with(&prefix))
}

/// The names of a changed line from its diff scope: the top-level `def`/`class` (and the
/// method), or the name a module-level line assigns. Returns true when it cannot tell.
fn from_scope(scope: &Scope, text: &str, names: &mut BTreeSet<String>) -> bool {
    let code = text.split('#').next().unwrap_or("").trim_end();
    if code.trim().is_empty() {
        return false;
    }
    match scope {
        Scope::Unknown => true,
        Scope::Known { names: n, .. } if n.is_empty() => {
            // Module level: `NAME = …` / `NAME: T = …`, or a `def`/`class` header.
            let t = code.trim_start();
            if let Some(b) = crate::gate::patch::scope::block_name(t) {
                names.insert(b.to_string());
                return false;
            }
            let lhs: String = t.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let after = t[lhs.len()..].trim_start();
            if !lhs.is_empty() && (after.starts_with('=') && !after.starts_with("==") || after.starts_with(':')) {
                names.insert(lhs);
                return false;
            }
            // An import or another statement: no name of the package's behaviour.
            !(t.starts_with("import ") || t.starts_with("from ") || t.starts_with('@') || t.starts_with(')'))
        }
        Scope::Known { names: n, .. } => {
            names.insert(n[0].clone());
            if n.len() > 1 {
                names.insert(format!("{}.{}", n[0], n[1]));
            }
            false
        }
    }
}

/// The names of the head's module whose code holds an added line.
fn changed_in_source(m: &Module, added: &BTreeSet<u32>, names: &mut BTreeSet<String>) {
    let hit = |a: u32, b: u32| added.range(a..=b).next().is_some();
    for s in &m.body {
        let (a, b) = m.lines_of(s);
        // Decorators sit above the node's first line.
        let decorated_from = match s {
            Stmt::FunctionDef(f) => f.decorator_list.first().map(|d| m.lines_of(d).0),
            Stmt::AsyncFunctionDef(f) => f.decorator_list.first().map(|d| m.lines_of(d).0),
            Stmt::ClassDef(c) => c.decorator_list.first().map(|d| m.lines_of(d).0),
            _ => None,
        };
        let a = decorated_from.map_or(a, |d| d.min(a));
        if !hit(a, b) {
            continue;
        }
        match s {
            Stmt::FunctionDef(f) => {
                names.insert(f.name.to_string());
            }
            Stmt::AsyncFunctionDef(f) => {
                names.insert(f.name.to_string());
            }
            Stmt::ClassDef(c) => {
                names.insert(c.name.to_string());
                for inner in &c.body {
                    let (x, y) = m.lines_of(inner);
                    let name = match inner {
                        Stmt::FunctionDef(f) => Some(f.name.as_str()),
                        Stmt::AsyncFunctionDef(f) => Some(f.name.as_str()),
                        _ => None,
                    };
                    if let Some(n) = name.filter(|_| hit(x, y)) {
                        names.insert(format!("{}.{n}", c.name));
                    }
                }
            }
            Stmt::Assign(x) => {
                for t in &x.targets {
                    if let Expr::Name(n) = t {
                        names.insert(n.id.to_string());
                    }
                }
            }
            Stmt::AnnAssign(x) => {
                if let Expr::Name(n) = &*x.target {
                    names.insert(n.id.to_string());
                }
            }
            Stmt::AugAssign(x) => {
                if let Expr::Name(n) = &*x.target {
                    names.insert(n.id.to_string());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::patch::test_support::file_change;

    #[test]
    fn module_names_and_changed_names() {
        assert_eq!(module_name("src/shop/pricing.py").as_deref(), Some("shop.pricing"));
        assert_eq!(module_name("shop/__init__.py").as_deref(), Some("shop"));
        assert_eq!(module_name("README.md"), None);
        let head = "import os\n\n\nclass Cart:\n    def add(self):\n        return 1\n\n    def subtotal(self):\n        return 2\n\n\ndef apply_tax(a):\n    return a\n";
        let mut fc = file_change("src/shop/cart.py", &[], &[]);
        fc.added = vec![crate::gate::patch::AddedLine {
            line: 9,
            text: "        return 2".into(),
            scope: Scope::Unknown,
        }];
        let sources = [("src/shop/cart.py".to_string(), head.to_string())].into();
        let p = PackageUnderTest::of(&Patch { files: vec![fc] }, &sources);
        assert!(p.changes("shop.cart.Cart.subtotal"));
        assert!(p.changes("shop.cart.Cart"));
        assert!(!p.changes("cart.Cart.subtotal"), "one part may be a local variable");
        assert!(p.changes("shop.cart"));
        assert!(!p.changes("shop.cart.Cart.add"));
        assert!(!p.changes("shop.cart.apply_tax"));
        assert!(!p.changes("time.time"));
        assert!(!p.changes("shop.pricing.apply_tax"));
        // Patched where another module of the package uses it.
        assert!(p.changes("shop.checkout.Cart.subtotal"));
        assert!(!p.changes("shop.checkout.Cart.add"));
        assert!(!p.changes("other.checkout.Cart.subtotal"));
    }
}
