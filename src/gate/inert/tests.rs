use super::*;
use proptest::prelude::*;

#[test]
fn one_line_replaces_breaks_and_controls_and_caps() {
    let cases = [
        ("a\nb", "a⏎b"),
        ("a\r\n## PASS", "a⏎⏎## PASS"),
        ("\u{1b}[31mred", "\u{fffd}[31mred"),
        ("tab\there", "tab here"),
        ("rtl\u{202e}txt.exe", "rtl\u{fffd}txt.exe"),
        ("line\u{2028}sep", "line⏎sep"),
        ("plain é ✓", "plain é ✓"),
    ];
    for (input, want) in cases {
        assert_eq!(one_line(input, 100), want, "{input:?}");
    }
    assert_eq!(one_line("abcdef", 3), "abc… (3 more characters)");
    assert_eq!(one_line("abc", 3), "abc");
    assert_eq!(one_line(&"é".repeat(5), 2), "éé… (3 more characters)");
}

#[test]
fn text_is_inert_markdown() {
    let cases = [
        ("@octocat", "@\u{2060}octocat"),
        ("cc @acme/everyone", "cc @\u{2060}acme/everyone"),
        ("<img src=x onerror=y>", "&lt;img src=x onerror=y&gt;"),
        ("<!-- hide", "&lt;\\!-- hide"),
        ("a & b", "a &amp; b"),
        ("`code` *b* [l](u)", "\\`code\\` \\*b\\* \\[l\\](u)"),
        ("x | y", "x \\| y"),
        ("see #12", "see \\#\u{2060}12"),
        ("# heading", "\\# heading"),
        ("- item", "\\- item"),
        ("a - b", "a - b"),
        ("~~s~~ $x$", "\\~\\~s\\~\\~ \\$x\\$"),
        ("back\\slash", "back\\\\slash"),
        ("tests/test_cart.py::test_total", "tests/test_cart.py::test_total"),
        ("__init__.py", "\\_\\_init\\_\\_.py"),
        ("PASS_WITH_CAVEAT", "PASS_WITH_CAVEAT"),
        ("x\n## ✅ PASS", "x⏎\\#\\# ✅ PASS"),
        ("see https://evil.example/x", "see https:\u{2060}//evil.example/x"),
        ("at WWW.evil.example", "at WWW\u{2060}.evil.example"),
        ("a:b wwwx", "a:b wwwx"),
    ];
    for (input, want) in cases {
        assert_eq!(text(input), want, "{input:?}");
    }
}

#[test]
fn code_spans_cannot_be_closed_from_inside() {
    let cases = [
        ("plain", "`plain`"),
        ("a`b", "``a`b``"),
        ("x``y", "```x``y```"),
        ("`start", "`` `start ``"),
        ("end`", "`` end` ``"),
        (" lead", "` ␠lead `"),
        ("", "` `"),
        ("a\nb", "`a⏎b`"),
        ("<img src=x> @me", "`<img src=x> @me`"),
    ];
    for (input, want) in cases {
        let want = want.replace('␠', " ");
        assert_eq!(code(input), want, "{input:?}");
    }
    assert_eq!(code_cell("a|b"), "`a\\|b`");
    let long = code(&"x".repeat(1000));
    assert!(long.contains("… (700 more characters)"), "{long}");
}

#[test]
fn code_blocks_are_fenced_past_any_run_inside() {
    let b = code_block("line one\n```\nbreak out\n````");
    assert!(b.starts_with("`````text\n"), "{b}");
    assert!(b.ends_with("\n`````"), "{b}");
    let many: String = (0..100).map(|i| format!("l{i}\n")).collect();
    let b = code_block(&many);
    assert!(b.contains("… (60 more lines)"), "{b}");
    assert!(b.starts_with("```text\n"), "{b}");
}

#[test]
fn cap_bytes_cuts_on_a_char_boundary() {
    assert_eq!(cap_bytes("short", 10, "…"), "short");
    let s = "é".repeat(100);
    let cut = cap_bytes(&s, 51, " [cut]");
    assert!(cut.len() <= 51, "{}", cut.len());
    assert!(cut.ends_with(" [cut]"));
    assert_eq!(cap_bytes("abcdef", 2, "[long marker]"), "[l");
}

/// A minimal reading of an inline code span: starting at the first backtick run, the span
/// closes at the next run of the same length. Returns the content and what follows.
fn read_span(s: &str) -> Option<(String, String)> {
    let open = s.find('`')?;
    let n = s[open..].chars().take_while(|&c| c == '`').count();
    let rest = &s[open + n..];
    let mut i = 0;
    let b = rest.as_bytes();
    while i < b.len() {
        if b[i] == b'`' {
            let run = b[i..].iter().take_while(|&&c| c == b'`').count();
            if run == n {
                let inner = &rest[..i];
                let inner = if inner.len() >= 2 && inner.starts_with(' ') && inner.ends_with(' ') && inner.trim() != ""
                {
                    &inner[1..inner.len() - 1]
                } else {
                    inner
                };
                return Some((inner.to_string(), rest[i + run..].to_string()));
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

proptest! {
    #[test]
    fn text_never_leaves_anything_live(s in any::<String>()) {
        let t = text(&s);
        prop_assert!(!t.contains('\n') && !t.contains('\r'));
        prop_assert!(!t.contains('<') && !t.contains('>'));
        // Every `@` is followed by the word joiner; every `#` is escaped.
        for (i, _) in t.match_indices('@') {
            prop_assert!(t[i + 1..].starts_with(WORD_JOINER), "{t:?}");
        }
        for (i, _) in t.match_indices('#') {
            prop_assert!(i > 0 && t.as_bytes()[i - 1] == b'\\', "{t:?}");
        }
        // Every backtick, pipe and bracket is escaped by an odd run of backslashes.
        let b: Vec<char> = t.chars().collect();
        for (i, &c) in b.iter().enumerate() {
            if matches!(c, '`' | '|' | '[' | ']' | '*') {
                let slashes = b[..i].iter().rev().take_while(|&&x| x == '\\').count();
                prop_assert!(slashes % 2 == 1, "{c} unescaped in {t:?}");
            }
        }
        prop_assert!(t.chars().count() <= 5 * (TEXT_MAX_CHARS + 40));
    }

    #[test]
    fn code_is_one_span_holding_the_line(s in "[a-z` |@<>\n]{0,40}") {
        let c = code(&s);
        prop_assert!(!c.contains('\n'));
        let (inner, after) = read_span(&c).expect("the span closes");
        prop_assert_eq!(after, "", "nothing after the span: {:?}", c);
        let want = if s.is_empty() { " ".to_string() } else { one_line(&s, CODE_MAX_CHARS) };
        prop_assert_eq!(inner, want);
    }

    #[test]
    fn one_line_and_cap_never_panic(s in any::<String>(), max in 0usize..64) {
        let l = one_line(&s, max);
        prop_assert!(!l.chars().any(|c| is_line_break(c) || (c.is_control())));
        let c = cap_bytes(&s, max, "…");
        prop_assert!(c.len() <= max || c == s);
    }
}

/// A message's `…` pairs become code spans nothing inside can end; the rest is inert text;
/// unpaired or doubled backticks leave all of it text.
#[test]
fn a_message_keeps_its_code_spans_and_nothing_else() {
    assert_eq!(
        message("adds a sleep: `time.sleep(1)` in `t_x`"),
        "adds a sleep: `time.sleep(1)` in `t_x`"
    );
    assert_eq!(message("`-p x` and <b>"), "`-p x` and &lt;b&gt;");
    assert_eq!(message("- list `a` - b"), "\\- list `a` - b");
    assert_eq!(message("@who `x`"), "@\u{2060}who `x`");
    assert_eq!(message("one ` only"), text("one ` only"));
    assert_eq!(message("run ``` here `x`"), text("run ``` here `x`"));
    assert_eq!(plain("adds `x` to `y`", 100), "adds x to y");
    assert_eq!(plain("one ` only", 100), "one ` only");
}
