//! GitHub-flavoured markdown read as GitHub reads it (comrak, with GFM's tables, strikethrough,
//! autolinks), for the tests of what people see: the rendered page, and what
//! in it shows markup that was meant to be read as text, or the reverse.

use comrak::nodes::NodeValue;
use comrak::{Arena, Options};

fn options() -> Options<'static> {
    let mut o = Options::default();
    o.extension.table = true;
    o.extension.strikethrough = true;
    o.extension.autolink = true;
    // GitHub keeps `<details>`, `<summary>`, `<sub>` (and drops what its sanitiser does not allow).
    o.render.r#unsafe = true;
    o
}

/// `md` as the HTML GitHub would render (before its sanitiser).
pub(crate) fn html(md: &str) -> String {
    comrak::markdown_to_html(md, &options())
}

/// Markdown punctuation a backslash escapes: a `\` before one of these in rendered text shows
/// an escape that was not read as one.
fn escapable(c: char) -> bool {
    matches!(
        c,
        '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '$' | '#' | '!' | '<' | '>' | '-' | '+' | '=' | '.'
    )
}

fn shows_escape(s: &str) -> bool {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek().copied().is_some_and(escapable) {
            return true;
        }
    }
    false
}

/// What in `md`, as rendered, shows markup a person was not meant to see: a backslash escape
/// shown as it is (in text, in a code span, in raw HTML), a backtick or `**` left in text (a
/// code span or emphasis that did not form), an escape in an HTML block (which markdown does
/// not read). Each problem quotes its text.
pub(crate) fn problems(md: &str) -> Vec<String> {
    let arena = Arena::new();
    let root = comrak::parse_document(&arena, md, &options());
    let mut out = Vec::new();
    for node in root.descendants() {
        let value = &node.data.borrow().value;
        match value {
            NodeValue::Text(t) => {
                if shows_escape(t) {
                    out.push(format!("a backslash escape shows in the text {t:?}"));
                }
                if t.contains('`') {
                    out.push(format!("a backtick shows in the text {t:?} (a broken code span)"));
                }
                if t.contains("**") {
                    out.push(format!("`**` shows in the text {t:?} (broken emphasis)"));
                }
            }
            NodeValue::Code(c) if shows_escape(&c.literal) => {
                out.push(format!("a backslash escape shows in the code span {:?}", c.literal));
            }
            NodeValue::HtmlBlock(b)
                if shows_escape(&b.literal) || b.literal.contains('`') || b.literal.contains("**") =>
            {
                out.push(format!("markdown in an HTML block, shown as it is: {:?}", b.literal));
            }
            _ => {}
        }
    }
    out
}

/// What in a plain-text field (a check run's title, an annotation) is markdown, which GitHub
/// shows as it is there.
pub(crate) fn plain_text_problems(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if shows_escape(s) {
        out.push(format!("a backslash escape in plain text {s:?}"));
    }
    if s.contains('`') {
        out.push(format!("a backtick in plain text {s:?}"));
    }
    if s.contains("**") || s.contains("](") {
        out.push(format!("markdown in plain text {s:?}"));
    }
    out
}

/// A whole HTML page of rendered markdown, styled roughly as GitHub shows it, to look at and
/// to keep as a snapshot.
pub(crate) fn page(title: &str, md: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\n\
         body {{ font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; font-size: 14px; line-height: 1.5; \
         max-width: 880px; margin: 16px auto; padding: 0 16px; color: #1f2328; }}\n\
         code {{ background: #eff1f3; padding: .2em .4em; border-radius: 6px; font-size: 85%; }}\n\
         pre {{ background: #f6f8fa; padding: 12px; overflow: auto; }} pre code {{ background: none; padding: 0; }}\n\
         table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #d1d9e0; padding: 4px 10px; }}\n\
         h2 {{ border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; }}\n\
         </style></head><body>\n{}</body></html>\n",
        title.replace('<', "&lt;"),
        html(md)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks see what GitHub would show.
    #[test]
    fn what_shows_markup() {
        assert!(problems("a `code` span, an escaped \\* star, **bold**").is_empty());
        assert_eq!(problems("a \\` lone backtick").len(), 1);
        assert_eq!(problems("`a \\_ b`").len(), 1, "an escape inside code shows");
        assert_eq!(problems("<details><summary>x \\_ y</summary>\n\n</details>").len(), 1);
        assert!(
            problems("| `a \\| b` |\n| --- |\n| c |\n").is_empty(),
            "a table cell's escaped pipe"
        );
        assert!(plain_text_problems("Frozen-only: lines 3-5").is_empty());
        assert_eq!(plain_text_problems("adds `x`").len(), 1);
    }
}
