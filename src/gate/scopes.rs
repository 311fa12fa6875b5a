//! Python source structure from the head file's text, for attributing lines
//! coverage cannot attribute on its own: which physical lines form one logical
//! statement (a multi-line call, a signature spread over lines), and where each
//! `def` / `async def` / `class` has its header (decorators, signature) and its
//! body. Coverage.py records a definition's header only as it runs at import
//! time (context `""`), and a multi-line statement only at its first line; the
//! gate uses this map to give a header the witnesses of its body, and a
//! continuation line those of its statement.
//!
//! A small tokenizer, not a parser: strings (any prefix, triple-quoted, with
//! escapes), comments, brackets and backslash continuations are tracked so
//! that a `def` inside a string or a `#` inside a string fool nothing; blocks
//! come from indentation. It never fails: hostile or broken text (an
//! unterminated string, unbalanced brackets) gives some map, in linear time,
//! and the gate only uses it where coverage agrees (the definition ran).

/// Kind of a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    Function,
    Class,
}

/// One `def` / `async def` / `class` of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub kind: DefKind,
    pub name: String,
    /// First line of the header: the first decorator's line, else the `def`/`class` line.
    pub header_start: u32,
    /// The `def`/`class` keyword's line (the statement coverage.py reports).
    pub def_line: u32,
    /// The line of the colon that ends the signature.
    pub header_end: u32,
    /// The body's first and last lines (the colon's line when the body follows it
    /// on the same line); `None` when the file ends before any body.
    pub body: Option<(u32, u32)>,
}

/// The structure of one Python source file (1-based line numbers throughout).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMap {
    /// Per physical line (index `line - 1`): the first and last line of the
    /// logical statement it belongs to, or `None` for a blank or comment-only line.
    statement: Vec<Option<(u32, u32)>>,
    /// Per physical line that starts a statement: the statement's text on that line, trimmed.
    heads: Vec<Option<String>>,
    definitions: Vec<Definition>,
    /// Per physical line: the index of the innermost definition whose header holds it.
    header_owner: Vec<Option<usize>>,
}

/// One logical line while scanning.
struct Logical {
    first: u32,
    last: u32,
    indent: usize,
    /// The text of its first line, from the first non-blank character.
    head: String,
    /// The line of the first colon at bracket depth 0, and whether code follows it.
    colon: Option<(u32, bool)>,
}

impl SourceMap {
    /// Map `text` (the head file; any line ending).
    pub fn parse(text: &str) -> SourceMap {
        let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        let logicals = logical_lines(&lines);
        let mut statement = vec![None; lines.len()];
        let mut heads = vec![None; lines.len()];
        for l in &logicals {
            if let Some(h) = heads.get_mut(l.first as usize - 1) {
                *h = Some(l.head.trim_end().to_string());
            }
            for n in l.first..=l.last {
                if let Some(s) = statement.get_mut(n as usize - 1) {
                    *s = Some((l.first, l.last));
                }
            }
        }
        let definitions = definitions(&logicals);
        // Headers are disjoint logical lines, so this is linear; a later (inner) one wins.
        let mut header_owner = vec![None; lines.len()];
        for (k, d) in definitions.iter().enumerate() {
            for n in d.header_start..=d.header_end {
                if let Some(o) = header_owner.get_mut(n as usize - 1) {
                    *o = Some(k);
                }
            }
        }
        SourceMap {
            statement,
            heads,
            definitions,
            header_owner,
        }
    }

    /// The first and last line of the statement `line` belongs to (`None`: blank,
    /// comment-only, or past the end).
    pub fn statement_of(&self, line: u32) -> Option<(u32, u32)> {
        self.statement.get((line as usize).checked_sub(1)?).copied().flatten()
    }

    /// The text on the first line of the statement starting at `first`, trimmed.
    pub fn statement_head(&self, first: u32) -> Option<&str> {
        self.heads.get((first as usize).checked_sub(1)?)?.as_deref()
    }

    /// The innermost definition whose header (decorators and signature) holds `line`.
    pub fn header_holding(&self, line: u32) -> Option<&Definition> {
        let k = (*self.header_owner.get((line as usize).checked_sub(1)?)?)?;
        self.definitions.get(k)
    }

    #[cfg(test)]
    pub fn definitions(&self) -> &[Definition] {
        &self.definitions
    }
}

/// Split the file into logical lines, tracking strings, comments, brackets and
/// backslash continuations.
fn logical_lines(lines: &[&str]) -> Vec<Logical> {
    let mut out = Vec::new();
    let mut cur: Option<Logical> = None;
    let mut depth: usize = 0;
    // An open string: its quote character and whether it is triple-quoted.
    let mut string: Option<(char, bool)> = None;
    for (i, raw) in lines.iter().enumerate() {
        let n = i as u32 + 1;
        let chars: Vec<char> = raw.chars().collect();
        let mut j = 0;
        let mut continued = false;
        if cur.is_none() && string.is_none() {
            let start = chars.iter().position(|c| !matches!(c, ' ' | '\t' | '\x0c'));
            match start {
                Some(s) if chars[s] != '#' => {
                    let indent = chars[..s].iter().map(|&c| if c == '\t' { 8 } else { 1 }).sum();
                    cur = Some(Logical {
                        first: n,
                        last: n,
                        indent,
                        head: chars[s..].iter().collect(),
                        colon: None,
                    });
                    j = s;
                }
                // Blank or comment-only: no statement.
                _ => continue,
            }
        }
        let Some(l) = cur.as_mut() else { continue };
        l.last = n;
        while j < chars.len() {
            let c = chars[j];
            if let Some((q, triple)) = string {
                if c == '\\' {
                    j += 2;
                    continue;
                }
                if c == q {
                    if !triple {
                        string = None;
                    } else if chars.get(j + 1) == Some(&q) && chars.get(j + 2) == Some(&q) {
                        string = None;
                        j += 3;
                        continue;
                    }
                }
                j += 1;
                continue;
            }
            match c {
                '#' => break,
                '\'' | '"' => {
                    let triple = chars.get(j + 1) == Some(&c) && chars.get(j + 2) == Some(&c);
                    string = Some((c, triple));
                    j += if triple { 3 } else { 1 };
                    continue;
                }
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                ':' if depth == 0 && l.colon.is_none() && chars.get(j + 1) != Some(&'=') => {
                    let rest_is_code = chars[j + 1..]
                        .iter()
                        .find(|c| !c.is_whitespace())
                        .is_some_and(|&c| c != '#' && c != '\\');
                    l.colon = Some((n, rest_is_code));
                }
                '\\' if j + 1 == chars.len() => continued = true,
                _ => {}
            }
            j += 1;
        }
        // A single-quoted string cannot span lines (unless escaped at its end, handled above).
        if let Some((_, false)) = string {
            if !raw.ends_with('\\') {
                string = None;
            }
        }
        if depth == 0 && string.is_none() && !continued {
            out.extend(cur.take());
        }
    }
    out.extend(cur.take());
    out
}

/// The word after `def `, `async def ` or `class `, when the logical line starts a definition.
fn definition_head(head: &str) -> Option<(DefKind, String)> {
    let rest = head
        .strip_prefix("async")
        .filter(|r| r.starts_with(char::is_whitespace));
    let (kind, rest) = if let Some(r) = rest.map(str::trim_start).unwrap_or(head).strip_prefix("def") {
        (DefKind::Function, r)
    } else if let Some(r) = head.strip_prefix("class") {
        (DefKind::Class, r)
    } else {
        return None;
    };
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let name: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some((kind, name))
}

/// The definitions, their decorators and their bodies (by indentation).
fn definitions(logicals: &[Logical]) -> Vec<Definition> {
    let mut defs: Vec<Definition> = Vec::new();
    // Open definitions awaiting the end of their body: (indent, index in defs).
    let mut open: Vec<(usize, usize)> = Vec::new();
    // Decorators seen just above, at this indent: (indent, first line).
    let mut decorators: Option<(usize, u32)> = None;
    for l in logicals {
        while open.last().is_some_and(|&(indent, _)| l.indent <= indent) {
            open.pop();
        }
        // Every open definition whose body holds this line extends to its end.
        for &(_, k) in &open {
            if let Some(b) = defs[k].body.as_mut() {
                b.1 = l.last;
            } else {
                defs[k].body = Some((l.first, l.last));
            }
        }
        if l.head.starts_with('@') {
            if decorators.is_none_or(|(i, _)| i != l.indent) {
                decorators = Some((l.indent, l.first));
            }
            continue;
        }
        let decorated = decorators.take().filter(|&(i, _)| i == l.indent).map(|(_, f)| f);
        let Some((kind, name)) = definition_head(&l.head) else {
            continue;
        };
        let (header_end, inline) = l.colon.unwrap_or((l.last, false));
        defs.push(Definition {
            kind,
            name,
            header_start: decorated.unwrap_or(l.first),
            def_line: l.first,
            header_end,
            body: inline.then_some((header_end, l.last)),
        });
        if !inline {
            open.push((l.indent, defs.len() - 1));
        }
    }
    defs
}

#[cfg(test)]
mod tests;
