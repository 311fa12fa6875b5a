//! Python test code as the trust rules read it: a module parsed with the RustPython
//! parser (a real AST: lines of Python are too easy to dress up), its imports, and the
//! functions and classes in it, with the small expression helpers the rules share
//! (dotted names, calls, normalised source text, line numbers).

use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
use rustpython_parser::Parse;
use std::collections::BTreeMap;

/// One parsed module.
pub struct Module {
    pub path: String,
    source: String,
    /// Byte offset of each line's start.
    line_starts: Vec<usize>,
    pub body: Vec<Stmt>,
    /// Local name → the dotted name it was imported as (`pricing` → `shop.pricing`,
    /// `apply_tax` → `shop.pricing.apply_tax`), from every import of the module.
    pub imports: BTreeMap<String, String>,
}

/// A function of a module (a method too: `Class.method`), as the rules need it.
pub struct Function<'m> {
    /// `name`, or `Class.name` for a method.
    pub qualname: String,
    pub name: &'m str,
    pub line: u32,
    pub end_line: u32,
    pub decorators: &'m [Expr],
    pub args: &'m ast::Arguments,
    pub body: &'m [Stmt],
}

impl Module {
    /// Parse `source`; `None` when it is not valid Python (the rules then fall back to the diff).
    pub fn parse(path: &str, source: &str) -> Option<Module> {
        let body = ast::Suite::parse(source, path).ok()?;
        let mut line_starts = vec![0];
        line_starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        let mut m = Module {
            path: path.to_string(),
            source: source.to_string(),
            line_starts,
            body,
            imports: BTreeMap::new(),
        };
        m.imports = imports_of(&m.body, package_of(path).as_deref());
        Some(m)
    }

    /// The module's source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The 1-based line of a byte offset.
    pub fn line_at(&self, offset: usize) -> u32 {
        self.line_starts.partition_point(|&s| s <= offset) as u32
    }

    /// The first and last line of a node.
    pub fn lines_of<N: Ranged>(&self, node: &N) -> (u32, u32) {
        let r = node.range();
        let end = usize::from(r.end()).saturating_sub(1).max(usize::from(r.start()));
        (self.line_at(r.start().into()), self.line_at(end))
    }

    /// A node's source text with its whitespace removed: two spellings of one expression compare equal.
    pub fn text<N: Ranged>(&self, node: &N) -> String {
        let r = node.range();
        self.source
            .get(usize::from(r.start())..usize::from(r.end()))
            .unwrap_or("")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    }

    /// The node's source as written, shortened for a message.
    pub fn snippet<N: Ranged>(&self, node: &N) -> String {
        let r = node.range();
        let t = self
            .source
            .get(usize::from(r.start())..usize::from(r.end()))
            .unwrap_or("");
        let one_line: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
        if one_line.chars().count() > 80 {
            format!("{}…", one_line.chars().take(79).collect::<String>())
        } else {
            one_line
        }
    }

    /// Every function of the module: top level, methods (one class deep, nested classes too),
    /// and functions defined inside functions (by their own name).
    pub fn functions(&self) -> Vec<Function<'_>> {
        let mut out = Vec::new();
        self.collect_functions(&self.body, None, &mut out);
        out
    }

    fn collect_functions<'m>(&'m self, stmts: &'m [Stmt], class: Option<&str>, out: &mut Vec<Function<'m>>) {
        for s in stmts {
            let (name, decorators, args, body) = match s {
                Stmt::FunctionDef(f) => (f.name.as_str(), &f.decorator_list[..], &*f.args, &f.body[..]),
                Stmt::AsyncFunctionDef(f) => (f.name.as_str(), &f.decorator_list[..], &*f.args, &f.body[..]),
                Stmt::ClassDef(c) => {
                    self.collect_functions(&c.body, Some(c.name.as_str()), out);
                    continue;
                }
                _ => continue,
            };
            let (line, end_line) = self.lines_of(s);
            out.push(Function {
                qualname: class.map_or_else(|| name.to_string(), |c| format!("{c}.{name}")),
                name,
                line,
                end_line,
                decorators,
                args,
                body,
            });
            self.collect_functions(body, None, out);
        }
    }

    /// The module-level assignment of `name` (`CASES = [...]`), when there is one.
    pub fn module_value(&self, name: &str) -> Option<&Expr> {
        self.body.iter().rev().find_map(|s| match s {
            Stmt::Assign(a)
                if a.targets
                    .iter()
                    .any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == name)) =>
            {
                Some(&*a.value)
            }
            Stmt::AnnAssign(a) if matches!(&*a.target, Expr::Name(n) if n.id.as_str() == name) => a.value.as_deref(),
            _ => None,
        })
    }

    /// `name` with its first part read through the module's imports (`pricing.apply_tax` →
    /// `shop.pricing.apply_tax`).
    pub fn qualify(&self, dotted: &str) -> String {
        let (head, rest) = dotted.split_once('.').map_or((dotted, None), |(h, r)| (h, Some(r)));
        match (self.imports.get(head), rest) {
            (Some(q), Some(r)) => format!("{q}.{r}"),
            (Some(q), None) => q.clone(),
            (None, _) => dotted.to_string(),
        }
    }
}

/// The package a file is in, dotted (`tests/unit/test_a.py` → `tests.unit`), for relative imports.
fn package_of(path: &str) -> Option<String> {
    let dir = path.rsplit_once('/')?.0;
    Some(dir.replace('/', "."))
}

/// Local name → dotted name, from every `import` and `from … import` of the module (also
/// inside functions: a test may import what it patches where it patches it).
fn imports_of(body: &[Stmt], package: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk_stmts(body, &mut |s| match s {
        Stmt::Import(i) => {
            for a in &i.names {
                let name = a.name.as_str();
                match &a.asname {
                    Some(as_) => out.insert(as_.to_string(), name.to_string()),
                    // `import shop.pricing` binds `shop`.
                    None => {
                        let first = name.split('.').next().unwrap_or(name);
                        out.insert(first.to_string(), first.to_string())
                    }
                };
            }
        }
        Stmt::ImportFrom(f) => {
            let level = f.level.map_or(0, |l| l.to_u32());
            let module = f.module.as_ref().map_or("", |m| m.as_str());
            let base = if level == 0 {
                module.to_string()
            } else {
                let mut parts: Vec<&str> = package.unwrap_or("").split('.').filter(|p| !p.is_empty()).collect();
                for _ in 1..level {
                    parts.pop();
                }
                if !module.is_empty() {
                    parts.push(module);
                }
                parts.join(".")
            };
            for a in &f.names {
                let local = a.asname.as_ref().unwrap_or(&a.name).to_string();
                let full = if base.is_empty() {
                    a.name.to_string()
                } else {
                    format!("{base}.{}", a.name)
                };
                out.insert(local, full);
            }
        }
        _ => {}
    });
    out
}

/// `a.b.c` of a name or attribute chain; `None` for anything else (a call, a subscript).
pub fn dotted(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => dotted(&a.value).map(|d| format!("{d}.{}", a.attr)),
        _ => None,
    }
}

/// The last name of what a call calls (`self.check_total` → `check_total`, `Harness().run` → `run`).
pub fn callee_name(call: &ast::ExprCall) -> Option<&str> {
    match &*call.func {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.as_str()),
        _ => None,
    }
}

/// A string constant's value.
pub fn str_const(e: &Expr) -> Option<&str> {
    match e {
        Expr::Constant(c) => match &c.value {
            ast::Constant::Str(s) => Some(s.as_str()),
            _ => None,
        },
        _ => None,
    }
}

/// An integer constant's value, when it fits.
pub fn int_const(e: &Expr) -> Option<i64> {
    match e {
        Expr::Constant(c) => match &c.value {
            ast::Constant::Int(i) => i.to_string().parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// A call's argument: positional `pos`, or the keyword `key`.
pub fn arg<'e>(call: &'e ast::ExprCall, pos: usize, key: &str) -> Option<&'e Expr> {
    call.args.get(pos).or_else(|| {
        call.keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == key))
            .map(|k| &k.value)
    })
}

/// Every statement in `stmts` and the blocks nested in them (function and class bodies too), in order.
pub fn walk_stmts<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in stmts {
        f(s);
        for block in blocks(s) {
            walk_stmts(block, f);
        }
    }
}

/// The statement blocks directly inside a statement.
pub fn blocks(s: &Stmt) -> Vec<&[Stmt]> {
    match s {
        Stmt::FunctionDef(x) => vec![&x.body],
        Stmt::AsyncFunctionDef(x) => vec![&x.body],
        Stmt::ClassDef(x) => vec![&x.body],
        Stmt::For(x) => vec![&x.body, &x.orelse],
        Stmt::AsyncFor(x) => vec![&x.body, &x.orelse],
        Stmt::While(x) => vec![&x.body, &x.orelse],
        Stmt::If(x) => vec![&x.body, &x.orelse],
        Stmt::With(x) => vec![&x.body],
        Stmt::AsyncWith(x) => vec![&x.body],
        Stmt::Match(x) => x.cases.iter().map(|c| &c.body[..]).collect(),
        Stmt::Try(x) => {
            let mut v: Vec<&[Stmt]> = vec![&x.body, &x.orelse, &x.finalbody];
            v.extend(
                x.handlers
                    .iter()
                    .map(|ast::ExceptHandler::ExceptHandler(h)| &h.body[..]),
            );
            v
        }
        Stmt::TryStar(x) => {
            let mut v: Vec<&[Stmt]> = vec![&x.body, &x.orelse, &x.finalbody];
            v.extend(
                x.handlers
                    .iter()
                    .map(|ast::ExceptHandler::ExceptHandler(h)| &h.body[..]),
            );
            v
        }
        _ => Vec::new(),
    }
}

/// The expressions a statement holds itself (not those of its nested blocks).
pub fn own_exprs(s: &Stmt) -> Vec<&Expr> {
    let mut v: Vec<&Expr> = Vec::new();
    match s {
        Stmt::FunctionDef(x) => {
            v.extend(&x.decorator_list);
            v.extend(defaults(&x.args));
        }
        Stmt::AsyncFunctionDef(x) => {
            v.extend(&x.decorator_list);
            v.extend(defaults(&x.args));
        }
        Stmt::ClassDef(x) => {
            v.extend(&x.decorator_list);
            v.extend(&x.bases);
        }
        Stmt::Return(x) => v.extend(x.value.as_deref()),
        Stmt::Delete(x) => v.extend(&x.targets),
        Stmt::Assign(x) => {
            v.extend(&x.targets);
            v.push(&x.value);
        }
        Stmt::AugAssign(x) => {
            v.push(&x.target);
            v.push(&x.value);
        }
        Stmt::AnnAssign(x) => {
            v.push(&x.target);
            v.extend(x.value.as_deref());
        }
        Stmt::For(x) => {
            v.push(&x.target);
            v.push(&x.iter);
        }
        Stmt::AsyncFor(x) => {
            v.push(&x.target);
            v.push(&x.iter);
        }
        Stmt::While(x) => v.push(&x.test),
        Stmt::If(x) => v.push(&x.test),
        Stmt::With(x) => v.extend(x.items.iter().map(|i| &i.context_expr)),
        Stmt::AsyncWith(x) => v.extend(x.items.iter().map(|i| &i.context_expr)),
        Stmt::Match(x) => v.push(&x.subject),
        Stmt::Raise(x) => v.extend(x.exc.as_deref()),
        Stmt::Try(x) => v.extend(
            x.handlers
                .iter()
                .filter_map(|ast::ExceptHandler::ExceptHandler(h)| h.type_.as_deref()),
        ),
        Stmt::Assert(x) => {
            v.push(&x.test);
            v.extend(x.msg.as_deref());
        }
        Stmt::Expr(x) => v.push(&x.value),
        _ => {}
    }
    v
}

fn defaults(a: &ast::Arguments) -> impl Iterator<Item = &Expr> {
    a.posonlyargs
        .iter()
        .chain(&a.args)
        .chain(&a.kwonlyargs)
        .filter_map(|x| x.default.as_deref())
}

/// Every expression inside `e`, `e` first.
pub fn walk_expr<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    f(e);
    for c in children(e) {
        walk_expr(c, f);
    }
}

/// The expressions of comprehension clauses (`for t in it if c`).
fn gens(g: &[ast::Comprehension]) -> Vec<&Expr> {
    g.iter()
        .flat_map(|c| std::iter::once(&c.target).chain(std::iter::once(&c.iter)).chain(&c.ifs))
        .collect()
}

/// The direct sub-expressions of an expression.
pub fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::BoolOp(x) => x.values.iter().collect(),
        Expr::NamedExpr(x) => vec![&*x.target, &*x.value],
        Expr::BinOp(x) => vec![&*x.left, &*x.right],
        Expr::UnaryOp(x) => vec![&*x.operand],
        Expr::Lambda(x) => vec![&*x.body],
        Expr::IfExp(x) => vec![&*x.test, &*x.body, &*x.orelse],
        Expr::Dict(x) => x.keys.iter().flatten().chain(&x.values).collect(),
        Expr::Set(x) => x.elts.iter().collect(),
        Expr::ListComp(x) => std::iter::once(&*x.elt).chain(gens(&x.generators)).collect(),
        Expr::SetComp(x) => std::iter::once(&*x.elt).chain(gens(&x.generators)).collect(),
        Expr::DictComp(x) => [&*x.key, &*x.value].into_iter().chain(gens(&x.generators)).collect(),
        Expr::GeneratorExp(x) => std::iter::once(&*x.elt).chain(gens(&x.generators)).collect(),
        Expr::Await(x) => vec![&*x.value],
        Expr::Yield(x) => x.value.as_deref().into_iter().collect(),
        Expr::YieldFrom(x) => vec![&*x.value],
        Expr::Compare(x) => std::iter::once(&*x.left).chain(&x.comparators).collect(),
        Expr::Call(x) => std::iter::once(&*x.func)
            .chain(&x.args)
            .chain(x.keywords.iter().map(|k| &k.value))
            .collect(),
        Expr::FormattedValue(x) => std::iter::once(&*x.value).chain(x.format_spec.as_deref()).collect(),
        Expr::JoinedStr(x) => x.values.iter().collect(),
        Expr::Attribute(x) => vec![&*x.value],
        Expr::Subscript(x) => vec![&*x.value, &*x.slice],
        Expr::Starred(x) => vec![&*x.value],
        Expr::List(x) => x.elts.iter().collect(),
        Expr::Tuple(x) => x.elts.iter().collect(),
        Expr::Slice(x) => [&x.lower, &x.upper, &x.step]
            .into_iter()
            .flatten()
            .map(|b| &**b)
            .collect(),
        Expr::Constant(_) | Expr::Name(_) => Vec::new(),
    }
}

/// Every expression of the statements (and their nested blocks), with the statement holding it.
pub fn exprs_in<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt, &'a Expr)) {
    walk_stmts(stmts, &mut |s| {
        for e in own_exprs(s) {
            walk_expr(e, &mut |x| f(s, x));
        }
    });
}

/// The parameter names of a function.
pub fn params(a: &ast::Arguments) -> Vec<&str> {
    a.posonlyargs
        .iter()
        .chain(&a.args)
        .chain(&a.kwonlyargs)
        .map(|x| x.def.arg.as_str())
        .collect()
}

/// The dotted name a decorator applies (`pytest.mark.parametrize` of `@pytest.mark.parametrize(…)`).
pub fn decorator_name(d: &Expr) -> Option<String> {
    match d {
        Expr::Call(c) => dotted(&c.func),
        other => dotted(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_imports_functions_and_lines() {
        let src = "import shop.pricing as p\nfrom shop.cart import Cart\nfrom . import helpers\n\nclass TestX:\n    def test_a(self):\n        assert p.apply_tax(1) == 1.2\n\n\ndef test_b():\n    pass\n";
        let m = Module::parse("tests/unit/test_x.py", src).unwrap();
        assert_eq!(m.imports["p"], "shop.pricing");
        assert_eq!(m.imports["Cart"], "shop.cart.Cart");
        assert_eq!(m.imports["helpers"], "tests.unit.helpers");
        assert_eq!(m.qualify("p.apply_tax"), "shop.pricing.apply_tax");
        let fs = m.functions();
        let names: Vec<(&str, u32, u32)> = fs.iter().map(|f| (f.qualname.as_str(), f.line, f.end_line)).collect();
        assert_eq!(names, [("TestX.test_a", 6, 7), ("test_b", 10, 11)]);
        assert!(Module::parse("x.py", "def (:\n").is_none());
    }
}
