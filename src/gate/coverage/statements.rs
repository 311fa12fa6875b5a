//! Which lines of a Python module are statements, found as coverage.py finds them: the
//! `.coverage` data file records the lines that ran but, unlike `coverage json`, not the
//! statements, so without this a docstring, an `else:` line or the second line of a call
//! would look like code nothing ran.
//!
//! coverage.py's `PythonParser` takes the lines of the compiled bytecode's line table,
//! maps each to the first line of its logical line (tokenize's multi-line map), and drops
//! docstrings and excluded lines. flakegate does not compile Python; it parses the head's
//! source with `rustpython-parser` (a real Python parser: an AST shaped like CPython's
//! `ast`, and a lexer that gives the logical lines) and keeps the statements CPython 3.11
//! emits code for: every statement's first line, decorators, `except` and `case` lines,
//! but not `global`/`nonlocal`, a bare annotation in a function, `else:`/`finally:`
//! (no node of their own), nor code after a `return`/`raise`/`break`/`continue` or in the
//! branch of a constant test (CPython removes it). Exclusions are coverage.py's: its
//! default patterns, the suite an excluded line's `:` opens, and a whole definition whose
//! decorator or `def` line is excluded.
//!
//! Hostile input is bounded before anything is built: the size, the block nesting and an
//! upper bound of each expression's nesting are checked on the token stream (the parser's
//! tree is dropped recursively), so a deep or huge file is refused, never a crash.

use rustpython_parser::ast::{self, Constant, Expr, Ranged, Stmt};
use rustpython_parser::lexer::lex;
use rustpython_parser::{Mode, Tok};
use std::collections::BTreeSet;
use std::sync::LazyLock;

/// Largest source classified (the faces read at most 4 MiB of a source file).
pub const MAX_SOURCE_BYTES: usize = 8 << 20;
/// Deepest block nesting classified (CPython refuses more than 100 indentation levels).
pub const MAX_BLOCK_DEPTH: usize = 100;
/// Most nesting-capable tokens (operators, attribute dots, trailers) in one element of an
/// expression: an upper bound of its tree's depth (CPython's own limit is lower).
pub const MAX_EXPR_DEPTH: usize = 1000;

/// coverage.py's default `exclude_lines` (`coverage.config.DEFAULT_EXCLUDE`, 7.x), joined
/// as coverage.py joins them. A project's own `exclude_lines` are not in the data file.
const DEFAULT_EXCLUDE: [&str; 3] = [
    r"#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(cover|COVER)",
    r"^\s*(((async )?def .*?)?[\])]+(\s*->.*?)?:\s*)?\.\.\.\s*(#|$)",
    r"^\s*if (typing\.)?TYPE_CHECKING:",
];

static EXCLUDE: LazyLock<regex::Regex> = LazyLock::new(|| {
    let joined: Vec<String> = DEFAULT_EXCLUDE.iter().map(|p| format!("(?:{p})")).collect();
    regex::Regex::new(&format!("(?m){}", joined.join("|"))).expect("coverage.py's default exclusions compile")
});

/// Why a source was not classified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatementsError {
    #[error("{bytes} bytes is over the {MAX_SOURCE_BYTES} bytes classified")]
    TooLarge { bytes: usize },
    #[error("line {line}: nested deeper than flakegate classifies ({what})")]
    TooDeep { line: u32, what: &'static str },
    #[error("line {line}: cannot parse as Python: {message}")]
    Syntax { line: u32, message: String },
}

/// The statements and excluded lines of one module, as coverage.py reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PythonStatements {
    /// First lines of the executable statements, excluded lines and docstrings left out.
    pub statements: BTreeSet<u32>,
    /// Excluded lines (coverage.py's `excluded_lines`).
    pub excluded: BTreeSet<u32>,
    /// Per physical line (index `line - 1`): the first line of its logical line, for the
    /// lines of multi-line statements (0: the line is its own).
    first: Vec<u32>,
}

/// Byte offset → 1-based line.
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    fn of(&self, offset: usize) -> u32 {
        self.starts.partition_point(|&s| s <= offset) as u32
    }

    fn count(&self) -> usize {
        self.starts.len()
    }
}

impl PythonStatements {
    /// Classify `source` (the head's text of a module).
    pub fn parse(source: &str) -> Result<PythonStatements, StatementsError> {
        if source.len() > MAX_SOURCE_BYTES {
            return Err(StatementsError::TooLarge { bytes: source.len() });
        }
        // Universal newlines, as Python reads a source file.
        let text = source.replace("\r\n", "\n").replace('\r', "\n");
        let lines = Lines::new(&text);
        let tokens = tokens(&text, &lines)?;
        let values = value_lines(&tokens, &lines);
        let mut s = PythonStatements {
            first: multiline_map(&tokens, &lines),
            ..Default::default()
        };
        let body = match rustpython_parser::parse_tokens(tokens.into_iter().map(Ok), Mode::Module, "<source>") {
            Ok(ast::Mod::Module(m)) => m.body,
            Ok(_) => Vec::new(),
            Err(e) => {
                return Err(StatementsError::Syntax {
                    line: lines.of(e.offset.to_usize()),
                    message: e.error.to_string(),
                })
            }
        };
        if body.is_empty() {
            return Ok(s);
        }
        let excluded = s.exclusions(&text, &lines, &body, &values);
        let mut docstrings = BTreeSet::new();
        let mut raw = BTreeSet::new();
        let mut walk = Walk {
            lines: &lines,
            docstrings: &mut docstrings,
            raw: &mut raw,
        };
        walk.docstring(&body);
        walk.block(&body, Scope::Module, true);
        let ignore: BTreeSet<u32> = excluded.union(&docstrings).copied().collect();
        s.statements = raw
            .difference(&ignore)
            .map(|&l| s.first_line(l))
            .filter(|l| !ignore.contains(l))
            .collect();
        s.excluded = excluded;
        Ok(s)
    }

    /// The first line of the statement that holds `line` (coverage.py's `first_line`).
    pub fn first_line(&self, line: u32) -> u32 {
        match self.first.get((line as usize).wrapping_sub(1)) {
            Some(&f) if f != 0 => f,
            _ => line,
        }
    }

    /// coverage.py's `excluded`: lines its patterns match, the suites their `:` opens, and
    /// whole definitions whose decorator or `def` line is excluded.
    fn exclusions(&self, text: &str, lines: &Lines, body: &[Stmt], values: &[bool]) -> BTreeSet<u32> {
        let mut excluded = BTreeSet::new();
        for m in EXCLUDE.find_iter(text) {
            for l in lines.of(m.start())..=lines.of(m.end()) {
                excluded.insert(self.first_line(l));
            }
        }
        if !excluded.is_empty() {
            self.exclude_suites(text, lines, &mut excluded);
        }
        let mut excluded: BTreeSet<u32> = excluded.into_iter().map(|l| self.first_line(l)).collect();
        if !excluded.is_empty() {
            // A continuation line with a value on it has code of its own in CPython's line table.
            let coded = |l: u32| self.first_line(l) != l && values.get(l as usize - 1).copied().unwrap_or(false);
            exclude_definitions(body, lines, &mut excluded, &coded);
        }
        excluded
    }

    /// coverage.py's token pass: a `:` at bracket depth 0 ending a statement that holds an
    /// excluded line excludes the suite after it (each statement's first token's end line),
    /// up to the next statement indented no deeper.
    fn exclude_suites(&self, text: &str, lines: &Lines, excluded: &mut BTreeSet<u32>) {
        let mut indent = 0usize;
        let mut exclude_indent = 0usize;
        let mut excluding = false;
        let mut first_line = 0u32;
        let mut nesting = 0i64;
        // The text was lexed once already without error.
        for (tok, range) in lex(text, Mode::Module).flatten() {
            let start = lines.of(range.start().to_usize());
            let end = lines.of(range.end().to_usize().max(range.start().to_usize() + 1) - 1);
            match tok {
                Tok::Indent => indent += 1,
                Tok::Dedent => indent = indent.saturating_sub(1),
                Tok::Colon if nesting == 0 && !excluding && excluded.range(first_line..=end).next().is_some() => {
                    excluded.insert(end);
                    exclude_indent = indent;
                    excluding = true;
                }
                Tok::Lpar | Tok::Lsqb | Tok::Lbrace => nesting += 1,
                Tok::Rpar | Tok::Rsqb | Tok::Rbrace => nesting -= 1,
                Tok::Newline => first_line = 0,
                _ => {}
            }
            if is_code(&tok) && first_line == 0 {
                first_line = start;
                if excluding && indent <= exclude_indent {
                    excluding = false;
                }
                if excluding {
                    excluded.insert(end);
                }
            }
        }
    }
}

/// A token tokenize reports with text (not a newline, indentation or the end; the lexer
/// built without `full-lexer` drops comments and blank lines).
fn is_code(tok: &Tok) -> bool {
    !matches!(tok, Tok::Newline | Tok::Indent | Tok::Dedent | Tok::EndOfFile)
}

/// Lex `text`, bounding the block nesting and each expression's nesting.
fn tokens(text: &str, lines: &Lines) -> Result<Vec<(Tok, rustpython_parser::text_size::TextRange)>, StatementsError> {
    let mut out = Vec::new();
    let mut indent = 0usize;
    // Per open bracket (and the statement itself): nesting-capable tokens in the current
    // element; `total` is their sum, an upper bound of the expression tree's depth here.
    let mut elements: Vec<usize> = vec![0];
    let mut total = 0usize;
    for t in lex(text, Mode::Module) {
        let (tok, range) = t.map_err(|e| {
            // An error at the end of a line (an unterminated string) is reported past its newline.
            let at = e.location.to_usize();
            let at = if at > 0 && text.as_bytes().get(at - 1) == Some(&b'\n') {
                at - 1
            } else {
                at
            };
            StatementsError::Syntax {
                line: lines.of(at),
                message: e.error.to_string(),
            }
        })?;
        let line = || lines.of(range.start().to_usize());
        match &tok {
            Tok::Indent => {
                indent += 1;
                if indent > MAX_BLOCK_DEPTH {
                    return Err(StatementsError::TooDeep {
                        line: line(),
                        what: "blocks",
                    });
                }
            }
            Tok::Dedent => indent = indent.saturating_sub(1),
            Tok::Lpar | Tok::Lsqb | Tok::Lbrace => {
                elements.push(0);
                if elements.len() > MAX_EXPR_DEPTH {
                    return Err(StatementsError::TooDeep {
                        line: line(),
                        what: "brackets",
                    });
                }
            }
            Tok::Rpar | Tok::Rsqb | Tok::Rbrace => {
                if elements.len() > 1 {
                    total -= elements.pop().unwrap_or(0);
                }
                // A call or subscript nests its target one level deeper.
                bump(&mut elements, &mut total);
            }
            Tok::Comma | Tok::Semi | Tok::Newline => {
                let top = elements.last_mut().expect("the statement's element is never popped");
                total -= *top;
                *top = 0;
            }
            t if nests(t) => bump(&mut elements, &mut total),
            _ => {}
        }
        if total > MAX_EXPR_DEPTH {
            return Err(StatementsError::TooDeep {
                line: line(),
                what: "expression",
            });
        }
        out.push((tok, range));
    }
    Ok(out)
}

fn bump(elements: &mut [usize], total: &mut usize) {
    if let Some(top) = elements.last_mut() {
        *top += 1;
        *total += 1;
    }
}

/// Tokens that can nest an expression one level deeper than its neighbours.
fn nests(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::Plus
            | Tok::Minus
            | Tok::Star
            | Tok::Slash
            | Tok::DoubleSlash
            | Tok::Percent
            | Tok::At
            | Tok::DoubleStar
            | Tok::Vbar
            | Tok::Amper
            | Tok::CircumFlex
            | Tok::LeftShift
            | Tok::RightShift
            | Tok::Tilde
            | Tok::Dot
            | Tok::Not
            | Tok::Await
            | Tok::Lambda
            | Tok::If
            | Tok::Else
            | Tok::Yield
            | Tok::ColonEqual
            | Tok::String { .. }
    )
}

/// Per line: a name, number or string starts on it (not a string that continues the one
/// before it: implicit concatenation is one constant, loaded at its first line).
fn value_lines(tokens: &[(Tok, rustpython_parser::text_size::TextRange)], lines: &Lines) -> Vec<bool> {
    let mut out = vec![false; lines.count()];
    let mut after_string = false;
    for (tok, range) in tokens {
        let string = matches!(tok, Tok::String { .. });
        let continues = string && after_string;
        after_string = string;
        if !continues
            && matches!(
                tok,
                Tok::Name { .. } | Tok::Int { .. } | Tok::Float { .. } | Tok::Complex { .. } | Tok::String { .. }
            )
        {
            if let Some(slot) = out.get_mut(lines.of(range.start().to_usize()) as usize - 1) {
                *slot = true;
            }
        }
    }
    out
}

/// tokenize's multi-line map: each line of a logical line that spans several lines → its
/// first line (coverage.py's `multiline_map_from_tokens`).
fn multiline_map(tokens: &[(Tok, rustpython_parser::text_size::TextRange)], lines: &Lines) -> Vec<u32> {
    let mut first = vec![0u32; lines.count()];
    let mut first_line = 0u32;
    for (tok, range) in tokens {
        if matches!(tok, Tok::Newline) {
            let end = lines.of(range.start().to_usize());
            if first_line != 0 && end != first_line {
                for l in first_line..=end {
                    if let Some(slot) = first.get_mut(l as usize - 1) {
                        *slot = first_line;
                    }
                }
            }
            first_line = 0;
        } else if is_code(tok) && first_line == 0 {
            first_line = lines.of(range.start().to_usize());
        }
    }
    first
}

/// Exclusions carry from a definition's decorators and `def`/`class` line to its whole
/// body; an irrefutable `case` whose body is excluded is excluded too.
fn exclude_definitions(body: &[Stmt], lines: &Lines, excluded: &mut BTreeSet<u32>, coded: &dyn Fn(u32) -> bool) {
    for stmt in body {
        let (decorators, children): (&[Expr], Vec<&[Stmt]>) = match stmt {
            Stmt::FunctionDef(d) => (&d.decorator_list, vec![&d.body]),
            Stmt::AsyncFunctionDef(d) => (&d.decorator_list, vec![&d.body]),
            Stmt::ClassDef(d) => (&d.decorator_list, vec![&d.body]),
            other => (&[], children(other)),
        };
        let def_line = line_of(lines, stmt);
        if matches!(
            stmt,
            Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_) | Stmt::ClassDef(_)
        ) {
            let first = decorators.iter().map(|d| line_of(lines, d)).min().unwrap_or(def_line);
            if excluded.range(first..=def_line).next().is_some() {
                excluded.extend(first..=end_line_of(lines, stmt));
            }
        }
        for child in children {
            exclude_definitions(child, lines, excluded, coded);
        }
        if let Stmt::Match(m) = stmt {
            for case in &m.cases {
                let (Some(first), Some(last)) = (case.body.first(), case.body.last()) else {
                    continue;
                };
                if !is_irrefutable(case) {
                    continue;
                }
                let body_lines = line_of(lines, first)..=end_line_of(lines, last);
                let mut raw = BTreeSet::new();
                let mut docstrings = BTreeSet::new();
                Walk {
                    lines,
                    docstrings: &mut docstrings,
                    raw: &mut raw,
                }
                .block(&case.body, Scope::Function, true);
                // coverage.py compares the line table's lines, continuation lines included.
                let continued: Vec<u32> = body_lines.clone().filter(|&l| coded(l)).collect();
                let in_body: Vec<u32> = raw
                    .into_iter()
                    .chain(continued)
                    .filter(|l| body_lines.contains(l))
                    .collect();
                if !in_body.is_empty() && in_body.iter().all(|l| excluded.contains(l)) {
                    excluded.extend(line_of(lines, &case.pattern)..=end_line_of(lines, &case.pattern));
                }
            }
        }
    }
}

/// The statement bodies directly inside `stmt` (not a definition's).
fn children(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::For(s) => vec![&s.body, &s.orelse],
        Stmt::AsyncFor(s) => vec![&s.body, &s.orelse],
        Stmt::While(s) => vec![&s.body, &s.orelse],
        Stmt::If(s) => vec![&s.body, &s.orelse],
        Stmt::With(s) => vec![&s.body],
        Stmt::AsyncWith(s) => vec![&s.body],
        Stmt::Match(s) => s.cases.iter().map(|c| c.body.as_slice()).collect(),
        Stmt::Try(s) => {
            let mut v: Vec<&[Stmt]> = vec![&s.body];
            v.extend(s.handlers.iter().map(handler_body));
            v.extend([s.orelse.as_slice(), s.finalbody.as_slice()]);
            v
        }
        Stmt::TryStar(s) => {
            let mut v: Vec<&[Stmt]> = vec![&s.body];
            v.extend(s.handlers.iter().map(handler_body));
            v.extend([s.orelse.as_slice(), s.finalbody.as_slice()]);
            v
        }
        _ => Vec::new(),
    }
}

fn handler_body(h: &ast::ExceptHandler) -> &[Stmt] {
    let ast::ExceptHandler::ExceptHandler(h) = h;
    &h.body
}

/// coverage.py's `_case_is_irrefutable`: a wildcard or bare capture, no guard.
fn is_irrefutable(case: &ast::MatchCase) -> bool {
    if case.guard.is_some() {
        return false;
    }
    let mut p = &case.pattern;
    while let ast::Pattern::MatchOr(o) = p {
        match o.patterns.last() {
            Some(last) => p = last,
            None => return false,
        }
    }
    while let ast::Pattern::MatchAs(ast::PatternMatchAs {
        pattern: Some(inner), ..
    }) = p
    {
        p = inner;
    }
    matches!(p, ast::Pattern::MatchAs(ast::PatternMatchAs { pattern: None, .. }))
}

fn line_of(lines: &Lines, node: &impl Ranged) -> u32 {
    lines.of(node.range().start().to_usize())
}

fn end_line_of(lines: &Lines, node: &impl Ranged) -> u32 {
    let r = node.range();
    lines.of(r.end().to_usize().max(r.start().to_usize() + 1) - 1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Module,
    Class,
    Function,
}

/// The walk that finds the lines CPython emits code for, and the docstrings.
struct Walk<'a> {
    lines: &'a Lines,
    docstrings: &'a mut BTreeSet<u32>,
    raw: &'a mut BTreeSet<u32>,
}

impl Walk<'_> {
    /// The lines of `body`'s docstring, if its first statement is a string.
    fn docstring(&mut self, body: &[Stmt]) {
        if let Some(Stmt::Expr(e)) = body.first() {
            if let Expr::Constant(ast::ExprConstant {
                value: Constant::Str(_),
                ..
            }) = e.value.as_ref()
            {
                self.docstrings
                    .extend(line_of(self.lines, e)..=end_line_of(self.lines, e));
            }
        }
    }

    /// The statements of a block; `live`: the block is reachable. Code after a statement
    /// that never completes is not compiled; docstrings are still found there.
    fn block(&mut self, body: &[Stmt], scope: Scope, live: bool) {
        let mut live = live;
        for stmt in body {
            self.stmt(stmt, scope, live);
            if live && terminates(stmt) {
                live = false;
            }
        }
    }

    fn stmt(&mut self, stmt: &Stmt, scope: Scope, live: bool) {
        let line = line_of(self.lines, stmt);
        let emits = match stmt {
            Stmt::Global(_) | Stmt::Nonlocal(_) => false,
            // A bare annotation of a local name is not evaluated.
            Stmt::AnnAssign(a) => !(scope == Scope::Function && a.value.is_none() && a.target.is_name_expr()),
            _ => true,
        };
        if live && emits {
            self.raw.insert(line);
        }
        match stmt {
            Stmt::FunctionDef(ast::StmtFunctionDef {
                decorator_list, body, ..
            })
            | Stmt::AsyncFunctionDef(ast::StmtAsyncFunctionDef {
                decorator_list, body, ..
            }) => {
                self.decorators(decorator_list, live);
                self.docstring(body);
                self.block(body, Scope::Function, live);
            }
            Stmt::ClassDef(c) => {
                self.decorators(&c.decorator_list, live);
                self.docstring(&c.body);
                self.block(&c.body, Scope::Class, live);
            }
            Stmt::If(s) => {
                let (body, orelse) = branches(constant_truth(&s.test));
                self.block(&s.body, scope, live && body);
                self.block(&s.orelse, scope, live && orelse);
            }
            Stmt::While(s) => {
                let (body, orelse) = branches(constant_truth(&s.test));
                self.block(&s.body, scope, live && body);
                self.block(&s.orelse, scope, live && orelse);
            }
            Stmt::Match(m) => {
                for case in &m.cases {
                    if live {
                        self.raw.insert(line_of(self.lines, &case.pattern));
                    }
                    self.block(&case.body, scope, live);
                }
            }
            Stmt::Try(ast::StmtTry {
                body,
                handlers,
                orelse,
                finalbody,
                ..
            })
            | Stmt::TryStar(ast::StmtTryStar {
                body,
                handlers,
                orelse,
                finalbody,
                ..
            }) => {
                self.block(body, scope, live);
                for h in handlers {
                    if live {
                        self.raw.insert(line_of(self.lines, h));
                    }
                    self.block(handler_body(h), scope, live);
                }
                self.block(orelse, scope, live && !block_terminates(body));
                self.block(finalbody, scope, live);
                // The `finally` block's exceptional copy ends with a re-raise located at its
                // last statement, even one that emits no code of its own (`x: int`).
                if let (true, Some(last)) = (live && !block_terminates(finalbody), last_visited(finalbody)) {
                    self.raw.insert(line_of(self.lines, last));
                }
            }
            other => {
                for child in children(other) {
                    self.block(child, scope, live);
                }
            }
        }
    }

    fn decorators(&mut self, decorators: &[Expr], live: bool) {
        if live {
            self.raw.extend(decorators.iter().map(|d| line_of(self.lines, d)));
        }
    }
}

/// The statement CPython's compiler visits last in `body`, whose location the code it
/// emits after the block takes (`None`: that code is placed at no line of its own).
/// Branches folded away are visited too.
fn last_visited(body: &[Stmt]) -> Option<&Stmt> {
    let last = body.last()?;
    match last {
        Stmt::If(s) if !s.orelse.is_empty() => last_visited(&s.orelse),
        Stmt::If(s) => last_visited(&s.body),
        Stmt::Match(m) => m.cases.last().and_then(|c| last_visited(&c.body)),
        Stmt::For(_) | Stmt::AsyncFor(_) | Stmt::While(_) | Stmt::Try(_) | Stmt::TryStar(_) => None,
        other => Some(other),
    }
}

/// Which branches of an `if`/`while` are compiled: (body, else).
fn branches(truth: Option<bool>) -> (bool, bool) {
    match truth {
        Some(true) => (true, false),
        Some(false) => (false, true),
        None => (true, true),
    }
}

/// The value of a test CPython folds at compile time (coverage.py's
/// `is_constant_test_expr`), `None` when it is not constant.
fn constant_truth(e: &Expr) -> Option<bool> {
    match e {
        Expr::Constant(c) => Some(match &c.value {
            Constant::None => false,
            Constant::Bool(b) => *b,
            Constant::Str(s) => !s.is_empty(),
            Constant::Bytes(b) => !b.is_empty(),
            Constant::Int(i) => i.sign() != rustpython_parser::ast::bigint::Sign::NoSign,
            Constant::Float(f) => *f != 0.0,
            Constant::Complex { real, imag } => *real != 0.0 || *imag != 0.0,
            Constant::Tuple(t) => !t.is_empty(),
            Constant::Ellipsis => true,
        }),
        Expr::Name(n) => match n.id.as_str() {
            "True" | "__debug__" => Some(true),
            "False" | "None" => Some(false),
            _ => None,
        },
        Expr::UnaryOp(u) if u.op == ast::UnaryOp::Not => constant_truth(&u.operand).map(|v| !v),
        Expr::BoolOp(b) => {
            let values: Option<Vec<bool>> = b.values.iter().map(constant_truth).collect();
            let values = values?;
            Some(if b.op == ast::BoolOp::Or {
                values.iter().any(|&v| v)
            } else {
                values.iter().all(|&v| v)
            })
        }
        _ => None,
    }
}

/// A block never completes normally: some statement of it never does.
fn block_terminates(body: &[Stmt]) -> bool {
    body.iter().any(terminates)
}

/// `stmt` never completes normally (control never reaches the next statement).
fn terminates(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Return(_) | Stmt::Raise(_) | Stmt::Break(_) | Stmt::Continue(_) => true,
        Stmt::If(s) => match constant_truth(&s.test) {
            Some(true) => block_terminates(&s.body),
            Some(false) => block_terminates(&s.orelse),
            None => block_terminates(&s.body) && block_terminates(&s.orelse),
        },
        Stmt::While(s) => match constant_truth(&s.test) {
            Some(true) => !breaks(&s.body),
            Some(false) => block_terminates(&s.orelse),
            None => false,
        },
        Stmt::For(ast::StmtFor { body, orelse, .. }) | Stmt::AsyncFor(ast::StmtAsyncFor { body, orelse, .. }) => {
            !breaks(body) && block_terminates(orelse)
        }
        Stmt::Try(ast::StmtTry {
            body,
            handlers,
            orelse,
            finalbody,
            ..
        })
        | Stmt::TryStar(ast::StmtTryStar {
            body,
            handlers,
            orelse,
            finalbody,
            ..
        }) => {
            let through_body = !block_terminates(body) && !block_terminates(orelse);
            let through_handler = handlers.iter().any(|h| !block_terminates(handler_body(h)));
            block_terminates(finalbody) || !(through_body || through_handler)
        }
        Stmt::Match(m) => {
            m.cases.last().is_some_and(is_irrefutable) && m.cases.iter().all(|c| block_terminates(&c.body))
        }
        _ => false,
    }
}

/// A `break` of this loop in `body` (not of a loop nested in it, not in a definition).
fn breaks(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Break(_) => true,
        // A nested loop's `else` is still this loop's body.
        Stmt::For(f) => breaks(&f.orelse),
        Stmt::AsyncFor(f) => breaks(&f.orelse),
        Stmt::While(w) => breaks(&w.orelse),
        Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_) | Stmt::ClassDef(_) => false,
        other => children(other).into_iter().any(breaks),
    })
}

#[cfg(test)]
mod tests;
