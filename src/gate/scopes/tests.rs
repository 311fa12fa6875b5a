use super::*;
use proptest::prelude::*;

const SRC: &str = r#""""A module.

def not_a_def(): inside the docstring
"""
import os
from x import (
    a,
    b,
)

RATE = compute(  # a comment with "quotes" and def
    1,
)


@decorator
@other(
    arg=1,
)
def apply(
    amount: int,
    rate: float = 0.5,
) -> int:
    """Doc: with a colon."""
    s = "a # not a comment"
    return amount * \
        rate


class Cart(Base):
    limit = {"a": 1}

    async def total(self): return 1

    def add(self, x):
        if x:
            return x
        # a comment at column 0 of the body
        return None
def after(): pass
"#;

#[test]
fn statements_span_continuations_brackets_and_strings() {
    let m = SourceMap::parse(SRC);
    assert_eq!(m.statement_of(1), Some((1, 4)), "module docstring");
    assert_eq!(m.statement_of(3), Some((1, 4)));
    assert_eq!(m.statement_of(5), Some((5, 5)));
    assert_eq!(m.statement_of(8), Some((6, 9)), "parenthesised import");
    assert_eq!(m.statement_of(2), Some((1, 4)));
    assert_eq!(m.statement_of(10), None, "blank");
    assert_eq!(
        m.statement_of(12),
        Some((11, 13)),
        "comment with a quote does not open a string"
    );
    assert_eq!(m.statement_of(26), Some((26, 27)), "backslash continuation");
    assert_eq!(m.statement_of(25), Some((25, 25)), "# inside a string");
    assert_eq!(m.statement_of(38), None, "comment-only");
    assert_eq!(m.statement_of(0), None);
    assert_eq!(m.statement_of(1000), None);
}

#[test]
fn definitions_have_decorators_signatures_and_bodies() {
    let m = SourceMap::parse(SRC);
    let d: Vec<_> = m
        .definitions()
        .iter()
        .map(|d| (d.name.as_str(), d.header_start, d.def_line, d.header_end, d.body))
        .collect();
    assert_eq!(
        d,
        [
            ("apply", 16, 20, 23, Some((24, 27))),
            ("Cart", 30, 30, 30, Some((31, 39))),
            ("total", 33, 33, 33, Some((33, 33))),
            ("add", 35, 35, 35, Some((36, 39))),
            ("after", 40, 40, 40, Some((40, 40))),
        ]
    );
    assert_eq!(m.definitions()[1].kind, DefKind::Class);
    assert_eq!(m.header_holding(18).map(|d| d.name.as_str()), Some("apply"));
    assert_eq!(m.header_holding(22).map(|d| d.name.as_str()), Some("apply"));
    assert_eq!(m.header_holding(24), None, "the docstring is body");
    assert_eq!(m.header_holding(33).map(|d| d.name.as_str()), Some("total"));
    assert_eq!(m.header_holding(3), None, "a def inside a string is no definition");
}

#[test]
fn a_decorator_above_something_else_is_not_a_header() {
    let m = SourceMap::parse("@dec\nx = 1\ndef f():\n    pass\n");
    assert_eq!(m.definitions()[0].header_start, 3);
    let m = SourceMap::parse("class A:\n    @property\n    def p(self):\n        return 1\n");
    assert_eq!(m.header_holding(2).map(|d| d.name.as_str()), Some("p"));
    assert_eq!(m.definitions()[0].body, Some((2, 4)));
}

#[test]
fn crlf_tabs_and_names_that_only_start_like_keywords() {
    let m = SourceMap::parse("define = 1\r\nclassic = 2\r\nasync  def  g(\r\n\ta):\r\n\treturn a\r\n");
    let names: Vec<_> = m.definitions().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["g"]);
    assert_eq!(m.definitions()[0].header_end, 4);
    assert_eq!(m.definitions()[0].body, Some((5, 5)));
}

proptest! {
    #[test]
    fn never_panics_and_statements_hold_their_lines(text in "[ a-z:#'\"\\\\()\\[\\]{}@\t\r\n]{0,300}") {
        let m = SourceMap::parse(&text);
        let n = text.split('\n').count() as u32;
        for line in 1..=n {
            if let Some((a, b)) = m.statement_of(line) {
                prop_assert!(a <= line && line <= b && b <= n);
            }
        }
        for d in m.definitions() {
            prop_assert!(d.header_start <= d.def_line && d.def_line <= d.header_end);
        }
    }
}
