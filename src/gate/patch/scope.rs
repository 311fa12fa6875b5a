//! Python scopes from the diff alone: which `def`/`class` blocks a hunk line
//! sits in ([`SideReader`]), so the trust rules can tell which test a
//! changed line belongs to without the source file.

use super::model::Scope;
use std::sync::Arc;

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
    // Most lines open nothing: one byte tells.
    if !matches!(t.as_bytes().first(), Some(b'a' | b'c' | b'd')) {
        return None;
    }
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

/// The scope of each line of one side of a hunk, `texts` being that side's
/// lines in order (context lines and that side's changed lines) and `header`
/// the text after the hunk header's `@@ … @@`.
///
/// A line is inside the nearest less-indented line above it, and that one
/// inside the nearest less-indented line above it, up to a line at column 0:
/// the `def`/`class` lines of that chain are the scope. (Lines with no code —
/// blank, comment — stay [`Scope::Unknown`]; a line opening with a closing
/// bracket belongs to the line that opened it.) A line in a decorator belongs
/// to the `def` or `class` the decorator decorates, found further down the hunk.
/// When the chain stops short of column 0 at the top of the hunk, the header
/// supplies the enclosing `def`/`class` when it shows one (git's default
/// header is the last column-0 line above the hunk; with a `diff=python`
/// driver it is the nearest `def`/`class` at any depth, which this reads as
/// the outermost); below a `class` header the chain is complete only when the
/// hunk shows the method. What the hunk cannot show
/// stays unknown: a chain with no block in it, a decorator whose `def` lies
/// past the hunk's end. A line inside a triple-quoted string is where the line
/// that opened the string is (a hunk that starts inside a string misreads it).
///
/// (The parser reads a file's hunks with one [`SideReader`]; this is the same for one side.)
#[cfg(test)]
pub fn scopes_of_side<'a>(texts: &[&'a str], header: Option<&'a str>) -> Vec<Scope> {
    let mut out = Vec::new();
    SideReader::default().read(texts, header, &mut out);
    out
}

/// A line that may open a block, while lines below it are read.
struct Open<'a> {
    indent: usize,
    name: Option<&'a str>,
    is_def: bool,
    decorator: bool,
}

/// Lines waiting for the `def` a decorator decorates: (decorator's indent,
/// names around the decorator, complete, the lines). One group per
/// decorator chain, so that waiting stays linear.
type Pending<'a> = (usize, Vec<&'a str>, bool, Vec<usize>);

/// `scopes_of_side` for one hunk side after another (a file's hunks): the working
/// lists are kept from one side to the next, and so are the name lists, which the
/// lines of both sides and of neighbouring hunks share.
#[derive(Default)]
pub(super) struct SideReader<'a> {
    lists: Lists,
    pending: Vec<Pending<'a>>,
    stack: Vec<Open<'a>>,
    tentative: Vec<usize>,
    names: Vec<&'a str>,
    string_lines: Vec<(usize, usize)>,
}

impl<'a> SideReader<'a> {
    /// The scope of each of `texts` into `out` (cleared first); see `scopes_of_side`.
    pub(super) fn read(&mut self, texts: &[&'a str], header: Option<&'a str>, out: &mut Vec<Scope>) {
        let SideReader {
            lists,
            pending,
            stack,
            tentative,
            names,
            string_lines,
        } = self;
        pending.clear();
        stack.clear();
        tentative.clear();
        string_lines.clear();
        out.clear();
        out.resize(texts.len(), Scope::Unknown);
        read_side(
            texts,
            header,
            lists,
            pending,
            stack,
            tentative,
            names,
            string_lines,
            out,
        );
    }
}

fn wait<'a>(pending: &mut Vec<Pending<'a>>, at: usize, names: &[&'a str], complete: bool, line: usize) {
    match pending.last_mut() {
        Some(p) if p.0 == at && p.1 == names && p.2 == complete => p.3.push(line),
        _ => pending.push((at, names.to_vec(), complete, vec![line])),
    }
}

#[allow(clippy::too_many_arguments)]
fn read_side<'a>(
    texts: &[&'a str],
    header: Option<&'a str>,
    lists: &mut Lists,
    pending: &mut Vec<Pending<'a>>,
    stack: &mut Vec<Open<'a>>,
    // Lines whose scope came from the header, while no column-0 line has confirmed it.
    tentative: &mut Vec<usize>,
    // The names of the line being read.
    names: &mut Vec<&'a str>,
    string_lines: &mut Vec<(usize, usize)>,
    out: &mut [Scope],
) {
    let header = header.map(|h| h.trim_end_matches(['\n', '\r']));
    let header_block = header
        .filter(|h| !h.starts_with([' ', '\t']))
        .and_then(|h| block_name(h).map(|n| (n, h.trim_start().starts_with("class"))));
    // Names of the first `n` open lines (into `names`), completed by the header when they
    // stop short of column 0; whether they are complete, and whether the header was used.
    fn around<'a>(
        names: &mut Vec<&'a str>,
        header_block: Option<(&'a str, bool)>,
        stack: &[Open<'a>],
        n: usize,
        indent: usize,
    ) -> (bool, bool) {
        let open = &stack[..n];
        names.clear();
        let lowest = open.first().map_or(indent, |o| o.indent);
        let mut complete = lowest == 0;
        let mut used = false;
        if !complete {
            if let Some((h, is_class)) = header_block {
                names.push(h);
                used = true;
                // Below a `def` everything is that function's; below a `class`, only a
                // method shown in the hunk says which method the line is in.
                complete = !is_class || open.first().is_some_and(|o| o.is_def);
            }
        }
        names.extend(open.iter().filter_map(|o| o.name));
        (complete, used)
    }
    // Inside a triple-quoted string: its delimiter and the line that opened it.
    let mut in_string: Option<(&str, usize)> = None;
    for (i, t) in texts.iter().enumerate() {
        if let Some((delim, opener)) = in_string {
            string_lines.push((i, opener));
            if triples(t, delim) % 2 == 1 {
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
        let name = if closing { None } else { block_name(trimmed) };
        let decorator = !closing && trimmed.starts_with('@');
        if !closing {
            // Decorated lines wait for their `def`: it comes at the decorator's indent.
            pending.retain_mut(|(at, names, complete, lines)| {
                if *at < indent || (*at == indent && decorator) {
                    return true;
                }
                if *at == indent {
                    if let Some(n) = name {
                        names.push(n);
                        let scope = lists.known(names, *complete);
                        for k in lines.iter() {
                            out[*k] = scope.clone();
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
            let (complete, _) = around(names, header_block, stack, d, stack[d].indent);
            wait(pending, stack[d].indent, names, complete, i);
        } else if decorator {
            let (complete, _) = around(names, header_block, stack, stack.len(), indent);
            wait(pending, indent, names, complete, i);
        } else {
            let (complete, used) = around(names, header_block, stack, stack.len(), eff);
            if let Some(n) = name {
                names.push(n);
            }
            out[i] = if complete || !names.is_empty() {
                lists.known(names, complete)
            } else {
                Scope::Unknown
            };
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
                    wait(pending, 0, &[], true, k);
                }
            } else {
                tentative.clear();
            }
        }
        if !closing {
            stack.push(Open {
                indent,
                name,
                is_def: name.is_some() && !trimmed.starts_with("class"),
                decorator,
            });
        }
    }
    // A string's lines are where the line that opened it is.
    for &(i, opener) in string_lines.iter() {
        out[i] = out[opener].clone();
    }
}

/// The name lists of one side of a hunk, shared between its lines: the lines of one
/// block get one list, not a copy each. Only the last few lists are looked up, so
/// that a hunk with many blocks stays linear.
#[derive(Default)]
struct Lists {
    recent: Vec<Arc<[String]>>,
}

impl Lists {
    const RECENT: usize = 8;

    fn known(&mut self, names: &[&str], complete: bool) -> Scope {
        let same = |l: &Arc<[String]>| l.len() == names.len() && l.iter().zip(names).all(|(a, b)| a == b);
        let names = match self.recent.iter().rev().find(|l| same(l)) {
            Some(l) => l.clone(),
            None => {
                let l: Arc<[String]> = names.iter().map(|n| n.to_string()).collect();
                if self.recent.len() == Self::RECENT {
                    self.recent.remove(0);
                }
                self.recent.push(l.clone());
                l
            }
        };
        Scope::Known { names, complete }
    }
}

/// The triple quote a line leaves open (an odd number of them), if any.
fn opens_string(t: &str) -> Option<&'static str> {
    let b = t.as_bytes();
    // The first triple quote of either kind (byte searches: this runs on every line).
    let (at, delim) = memchr::memchr2_iter(b'"', b'\'', b).find_map(|i| {
        let q = b[i];
        let delim = if q == b'"' { "\"\"\"" } else { "'''" };
        (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q)).then_some((i, delim))
    })?;
    if memchr::memchr(b'#', &b[..at]).is_some() {
        return None;
    }
    (triples(t, delim) % 2 == 1).then_some(delim)
}

/// How many times `delim` (a triple quote) occurs in `t`, without overlaps, as
/// `t.matches(delim).count()` counts them.
fn triples(t: &str, delim: &str) -> usize {
    let (b, q) = (t.as_bytes(), delim.as_bytes()[0]);
    let (mut n, mut from) = (0, 0);
    while let Some(i) = memchr::memchr(q, &b[from..]).map(|i| from + i) {
        if b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q) {
            n += 1;
            from = i + 3;
        } else {
            from = i + 1;
        }
    }
    n
}

#[cfg(test)]
pub(super) mod tests;
#[cfg(test)]
mod quote_tests {
    use super::*;

    #[test]
    fn triple_quotes_are_found_and_counted_as_the_str_searches_did() {
        let lines = [
            "",
            "x",
            "\"\"\"",
            "\"\"\"\"",
            "\"\"\"\"\"\"",
            "a'''b'''c'''",
            "'' ' '''",
            "\"\"\"\"\"\"\"",
            "s = '''x\"\"\"",
            "# '''",
            "x = '''a''' + \"\"\"b",
            "'\"\"\"'",
            "\"\"''\"\"\"",
        ];
        for t in lines {
            for d in ["\"\"\"", "'''"] {
                assert_eq!(triples(t, d), t.matches(d).count(), "{t:?} {d}");
            }
            // The previous search: the first of either delimiter, by `str::find`.
            let old = ["\"\"\"", "'''"]
                .into_iter()
                .filter_map(|d| t.find(d).map(|i| (i, d)))
                .min_by_key(|(i, _)| *i)
                .filter(|(at, _)| !t[..*at].contains('#'))
                .and_then(|(_, d)| (t.matches(d).count() % 2 == 1).then_some(d));
            assert_eq!(opens_string(t), old, "{t:?}");
        }
        assert_eq!(opens_string("x = \"\"\"doc"), Some("\"\"\""));
        assert_eq!(opens_string("x = '''a''' + \"\"\"b"), None, "the first kind decides");
    }
}
