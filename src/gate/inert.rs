//! Untrusted text made inert for what flakegate shows people: the markdown GitHub renders
//! (check-run summary, pull-request comment) and the terminal.
//!
//! Test node ids, file paths, diff text quoted in a reason, ledger fields and error messages
//! all come, one way or another, from the pull request under review, which may be hostile. A
//! string from there must never end a code span, open an HTML tag or comment, start a heading,
//! forge a table row, @-mention anyone or reference an issue. Three shapes:
//!
//! - [`one_line`]: line breaks and control characters (ANSI escapes, bidi overrides, line and
//!   paragraph separators) replaced, at most a number of characters with a marker after;
//!   enough for a terminal and for GitHub's plain-text fields (titles, annotations).
//! - [`text`]: [`one_line`], then markdown-inert: `<`, `>`, `&` as HTML entities, markdown
//!   punctuation backslash-escaped, a U+2060 WORD JOINER after `@` (no mention), after a
//!   `#` that precedes a word (no issue reference) and inside `://` and `www.` (no link).
//! - [`code`] / [`code_cell`] / [`code_block`]: a code span (block) whose backtick fence is
//!   longer than any backtick run inside, so nothing inside can close it.
//!
//! [`cap_bytes`] cuts text to a byte budget at a character boundary, with a marker.

use std::fmt::Write as _;

/// Characters of one untrusted string kept in prose ([`text`], [`one_line_default`]).
pub const TEXT_MAX_CHARS: usize = 1000;
/// Characters of one untrusted string kept in a code span ([`code`], [`code_cell`]).
pub const CODE_MAX_CHARS: usize = 300;
/// Lines kept of a [`code_block`].
pub const BLOCK_MAX_LINES: usize = 40;

/// Replaces a line break (so the text stays on one line, visibly).
const LINE_BREAK: char = '⏎';
/// Replaces any other control character.
const REPLACEMENT: char = '\u{fffd}';
/// After `@` and a word-leading `#`: GitHub links neither across it.
const WORD_JOINER: char = '\u{2060}';

fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Control characters other than line breaks, and the invisible format characters that
/// reorder or hide text (bidi embeddings, overrides and isolates, zero-width characters).
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}')
}

/// `s` on one line: line breaks become `⏎`, tabs a space, other control and hidden format
/// characters U+FFFD; at most `max` characters of `s`, then `… (N more characters)`.
pub fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 4 + 32));
    let mut chars = s.chars();
    for (kept, c) in chars.by_ref().enumerate() {
        if kept == max {
            let rest = 1 + chars.count();
            let _ = write!(out, "… ({rest} more characters)");
            return out;
        }
        out.push(if c == '\t' {
            ' '
        } else if is_line_break(c) {
            LINE_BREAK
        } else if is_hidden(c) {
            REPLACEMENT
        } else {
            c
        });
    }
    out
}

/// [`one_line`] at [`TEXT_MAX_CHARS`]: for a terminal.
pub fn one_line_default(s: &str) -> String {
    one_line(s, TEXT_MAX_CHARS)
}

/// Punctuation that means something to GitHub's markdown anywhere in a line.
fn always_escaped(c: char) -> bool {
    matches!(c, '\\' | '`' | '*' | '[' | ']' | '|' | '~' | '$' | '#' | '!')
}

/// `s` as inert markdown prose on one line (see the module doc), at most
/// [`TEXT_MAX_CHARS`] characters of `s`.
pub fn text(s: &str) -> String {
    let line = one_line(s, TEXT_MAX_CHARS);
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len() + line.len() / 4);
    let mut skip = 0;
    for (i, &c) in chars.iter().enumerate() {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' => {
                out.push('@');
                out.push(WORD_JOINER);
            }
            '#' => {
                out.push_str("\\#");
                if next.is_some_and(|n| n.is_alphanumeric()) {
                    out.push(WORD_JOINER);
                }
            }
            // `_` emphasises only next to a non-word character: `test_foo` stays readable.
            '_' => {
                let word = |x: Option<char>| x.is_some_and(|x| x.is_alphanumeric());
                if !(word(prev) && word(next)) {
                    out.push('\\');
                }
                out.push('_');
            }
            // No autolink to a site the pull request names: `https:⁠//…`, `www⁠.…`.
            ':' if line[byte_at(&chars, i)..].starts_with("://") => {
                out.push(':');
                out.push(WORD_JOINER);
            }
            'w' | 'W'
                if next.is_some_and(|n| n.eq_ignore_ascii_case(&'w'))
                    && line[byte_at(&chars, i)..].to_ascii_lowercase().starts_with("www.")
                    && !prev.is_some_and(|p| p.is_alphanumeric()) =>
            {
                out.push_str(&line[byte_at(&chars, i)..byte_at(&chars, i) + 3]);
                out.push(WORD_JOINER);
                skip = 2;
            }
            // A list item, block quote or setext underline can only start a line.
            '-' | '+' | '=' if i == 0 => {
                out.push('\\');
                out.push(c);
            }
            c if always_escaped(c) => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A message flakegate wrote around strings from the pull request (a reason, a note), whose
/// `` `…` `` pairs mark code: as inert markdown on one line, each pair a [`code`] span nothing
/// inside can end and the rest [`text`], so neither a backslash nor a stray backtick shows.
/// When the backticks do not pair, or a pair is empty or a run of them (a quoted string held
/// some), all of it is [`text`].
pub fn message(s: &str) -> String {
    let line = one_line(s, TEXT_MAX_CHARS);
    let parts: Vec<&str> = line.split('`').collect();
    if parts.len() % 2 == 0 || line.contains("``") {
        return text(&line);
    }
    let mut out = String::with_capacity(line.len() + line.len() / 4);
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 {
            out.push_str(&code(part));
        } else if !part.is_empty() {
            // A piece that starts after a code span starts no line: no list or quote to escape.
            let t = text(part);
            match t.strip_prefix('\\') {
                Some(rest) if i > 0 && rest.starts_with(['-', '+', '=']) => out.push_str(rest),
                _ => out.push_str(&t),
            }
        }
    }
    out
}

/// A message for a plain-text field (a check run's title, an annotation): one line, its
/// `` `…` `` pairs as the text inside them, since GitHub shows markup there as it is.
pub fn plain(s: &str, max: usize) -> String {
    let line = one_line(s, max);
    if line.matches('`').count() % 2 == 0 {
        line.replace('`', "")
    } else {
        line
    }
}

/// The byte offset of `chars[i]` in the string they were taken from.
fn byte_at(chars: &[char], i: usize) -> usize {
    chars[..i].iter().map(|c| c.len_utf8()).sum()
}

/// The longest run of backticks in `s`.
fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

fn fenced(inner: &str) -> String {
    if inner.is_empty() {
        return "` `".to_string();
    }
    let fence = "`".repeat(longest_backtick_run(inner) + 1);
    // A backtick or a space at either end would touch the fence or be stripped: one space on
    // each side is stripped by the renderer, leaving `inner` exactly.
    let pad = (inner.starts_with(['`', ' ']) || inner.ends_with(['`', ' '])) && !inner.trim_matches(' ').is_empty();
    if pad {
        format!("{fence} {inner} {fence}")
    } else {
        format!("{fence}{inner}{fence}")
    }
}

/// `s` as an inline code span nothing inside can end, on one line, at most
/// [`CODE_MAX_CHARS`] characters of `s`. HTML and mentions are inert inside code.
pub fn code(s: &str) -> String {
    fenced(&one_line(s, CODE_MAX_CHARS))
}

/// [`code`] for a table cell: `|` escaped too (a table splits cells before it reads code spans).
pub fn code_cell(s: &str) -> String {
    code(s).replace('|', "\\|")
}

/// `s` (several lines) as a fenced code block nothing inside can end: each line made
/// [`one_line`], at most [`BLOCK_MAX_LINES`] lines, then a line saying how many were left out.
pub fn code_block(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let mut body: Vec<String> = lines
        .iter()
        .take(BLOCK_MAX_LINES)
        .map(|l| one_line(l, TEXT_MAX_CHARS))
        .collect();
    if lines.len() > BLOCK_MAX_LINES {
        body.push(format!("… ({} more lines)", lines.len() - BLOCK_MAX_LINES));
    }
    let inner = body.join("\n");
    let fence = "`".repeat(longest_backtick_run(&inner).max(2) + 1);
    format!("{fence}text\n{inner}\n{fence}")
}

/// `s` cut to at most `max` bytes at a character boundary, `marker` appended when cut (the
/// result with the marker is within `max`; a marker longer than `max` is itself cut).
pub fn cap_bytes(s: &str, max: usize, marker: &str) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let marker = floor(marker, max);
    let keep = floor(s, max - marker.len());
    format!("{keep}{marker}")
}

/// The longest prefix of `s` of at most `max` bytes ending on a character boundary.
fn floor(s: &str, max: usize) -> &str {
    let mut cut = max.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

#[cfg(test)]
mod tests;
