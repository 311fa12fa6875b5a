use super::*;

pub(crate) fn known(names: &[&str], complete: bool) -> Scope {
    Scope::Known {
        names: names.iter().map(|n| n.to_string()).collect(),
        complete,
    }
}

fn scopes(text: &str, header: Option<&str>) -> Vec<Scope> {
    let lines: Vec<&str> = text.lines().collect();
    scopes_of_side(&lines, header)
}

#[test]
fn blocks_around_a_line() {
    let src = "class TestCart:\n    def test_total(self):\n        cart = Cart()\n\n        def helper():\n            return 1\n        assert cart.total() == 12.0\n    x = 1\nY = 2\n";
    let s = scopes(src, None);
    assert_eq!(s[0], known(&["TestCart"], true));
    assert_eq!(s[1], known(&["TestCart", "test_total"], true));
    assert_eq!(s[2], known(&["TestCart", "test_total"], true));
    assert_eq!(s[3], Scope::Unknown, "a blank line has no scope");
    assert_eq!(s[5], known(&["TestCart", "test_total", "helper"], true));
    assert_eq!(s[6], known(&["TestCart", "test_total"], true));
    assert_eq!(s[7], known(&["TestCart"], true), "class body");
    assert_eq!(s[8], Scope::module());
}

#[test]
fn the_header_completes_a_chain_cut_by_the_hunk() {
    let body = "        cart.add('pen', 2.5, qty=5)\n    def test_add(self):\n        pass\n";
    let s = scopes(body, Some("class TestCart:"));
    assert_eq!(s[0], known(&["TestCart"], false), "the method is not shown");
    assert_eq!(s[2], known(&["TestCart", "test_add"], true));
    let s = scopes(
        "    assert x == 1\n",
        Some("def test_discount(amount, code, expected):"),
    );
    assert_eq!(s[0], known(&["test_discount"], true));
    // No header, no block in view: unknown.
    assert_eq!(scopes("    assert x == 1\n", None)[0], Scope::Unknown);
    assert_eq!(scopes("    assert x == 1\n", Some("import pytest"))[0], Scope::Unknown);
    // A block in view but not reaching column 0, no header: incomplete.
    let s = scopes("    def test_a(self):\n        assert 1\n", None);
    assert_eq!(s[1], known(&["test_a"], false));
}

#[test]
fn decorators_belong_to_what_they_decorate() {
    let src = "@pytest.mark.parametrize(\n    \"amount, code, expected\",\n    [\n        pytest.param(5, None, 5, id=\"none\"),\n    ],\n)\ndef test_discount(amount, code, expected):\n    assert discount(amount, code) == expected\n";
    let s = scopes(src, None);
    for (i, sc) in s.iter().enumerate() {
        assert_eq!(sc, &known(&["test_discount"], true), "line {i}");
    }
    // The decorated def is past the hunk's end: unknown.
    let s = scopes("@pytest.mark.flaky(reruns=3)\n", None);
    assert_eq!(s[0], Scope::Unknown);
    // A multi-line signature, closed at column 0.
    let s = scopes("def test_x(\n    a,\n):\n    pass\n", None);
    assert!(s.iter().all(|x| x == &known(&["test_x"], true)), "{s:?}");
}

#[test]
fn async_defs_and_tabs() {
    let s = scopes("async def test_io():\n\tawait x()\n", None);
    assert_eq!(s[1], known(&["test_io"], true));
    assert_eq!(block_name("    async  def  test_x(self):"), Some("test_x"));
    assert_eq!(block_name("define = 1"), None);
    assert_eq!(block_name("class_ = 2"), None);
}

#[test]
fn strings_do_not_end_blocks() {
    let src =
        "def test_text():\n    s = \"\"\"\nheader\n  body\n\"\"\"\n    assert s\n    '''one''' and 1\n    x = 2\n";
    let s = scopes(src, None);
    for (i, sc) in s.iter().enumerate() {
        assert_eq!(sc, &known(&["test_text"], true), "line {i}: {src}");
    }
}
