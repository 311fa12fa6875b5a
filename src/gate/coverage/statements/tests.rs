use super::*;
use proptest::prelude::*;

fn lines(s: &BTreeSet<u32>) -> Vec<u32> {
    s.iter().copied().collect()
}

/// Statements and excluded lines of each source, as coverage.py 7.17 on CPython 3.11
/// reports them (`PythonParser.statements` / `.excluded`).
const CASES: &[(&str, &str, &[u32], &[u32])] = &[
    (
        "docstrings are not statements",
        "\"\"\"Module doc\nspans lines.\"\"\"\nimport os\nclass C:\n    \"\"\"class doc\"\"\"\n    x = 1\n    def m(self):\n        '''doc'''\n        return 1\n",
        &[3, 4, 6, 7, 9],
        &[],
    ),
    (
        "else, try and finally",
        "def f(a):\n    try:\n        x = 1\n    except ValueError:\n        pass\n    except:\n        raise\n    else:\n        y = 2\n    finally:\n        z = 3\n    if a:\n        return 1\n    elif a:\n        return 2\n    else:\n        y = 3\n    for i in a:\n        continue\n    else:\n        pass\n",
        &[1, 2, 3, 4, 5, 6, 7, 9, 11, 12, 13, 14, 15, 17, 18, 19, 21],
        &[],
    ),
    (
        "continuation lines and multi-line literals",
        "S = (\"abc\"\n     \"def\")\nD = {\n    \"a\": 1,\n    \"b\": [\n        2,\n    ],\n}\nx = [i for i in\n     range(3)]\nassert x, (\n    \"message\")\nwith open(x) as f, \\\n     open(x) as g:\n    pass\n",
        &[1, 3, 9, 11, 13, 15],
        &[],
    ),
    (
        "decorators, signatures, global, nonlocal and bare annotations",
        "X: int\n@staticmethod\n@property\ndef f(a,\n      b=2):\n    global X\n    q = 1\n    def inner():\n        nonlocal q\n        w: int\n        return q\n    return inner\nclass P:\n    x: int\n",
        &[1, 2, 3, 4, 7, 8, 11, 12, 13, 14],
        &[],
    ),
    (
        "code CPython does not compile",
        "def a():\n    x = 1\n    return x\n    y = 2\ndef b():\n    while True:\n        pass\n    z = 1\ndef d(q):\n    try:\n        return 1\n    finally:\n        q = 2\n    t = 3\ndef e(q):\n    with q:\n        return 1\n    s = 2\ndef f(q):\n    if q:\n        raise X\n    else:\n        return 1\n    if q: pass\ndef g():\n    if False:\n        a = 1\n    if True:\n        b = 1\n    else:\n        c = 2\n    while 0:\n        d = 1\n    if __debug__:\n        e = 1\n",
        &[1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 15, 16, 17, 18, 19, 20, 21, 23, 25, 26, 28, 29, 32, 34, 35],
        &[],
    ),
    (
        "exclusions",
        "class C:\n    def m(self):  # pragma: no cover\n        return 1\n    def n(self):\n        if self:  # pragma: no cover\n            return 2\n        return 3\ntry:\n    import foo\nexcept ImportError:  # pragma: no cover\n    foo = None\nif TYPE_CHECKING:\n    import y\ndef stub(): ...\ndef stub2(\n    a,\n) -> int: ...\n",
        &[1, 4, 7, 8, 9],
        &[2, 3, 5, 6, 10, 11, 12, 13, 14, 15, 16, 17, 18],
    ),
    (
        "match",
        "def f(a):\n    match a:\n        case 1:\n            pass\n        case _:\n            pass\n",
        &[1, 2, 3, 4, 5, 6],
        &[],
    ),
];

#[test]
fn statements_are_coverage_pys() {
    for (what, source, statements, excluded) in CASES {
        let s = PythonStatements::parse(source).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(lines(&s.statements), *statements, "{what}: statements");
        assert_eq!(lines(&s.excluded), *excluded, "{what}: excluded");
    }
}

#[test]
fn a_line_of_a_multi_line_statement_maps_to_its_first_line() {
    let s = PythonStatements::parse("x = f(\n    1,\n    2)\ny = '''a\nb'''\n").unwrap();
    assert_eq!([1, 2, 3, 4, 5, 6].map(|l| s.first_line(l)), [1, 1, 1, 4, 4, 6]);
    assert_eq!(s.first_line(0), 0);
    assert_eq!(s.first_line(u32::MAX), u32::MAX);
}

#[test]
fn crlf_and_empty_sources() {
    let s = PythonStatements::parse("x = (1,\r\n     2)\r\ny = 3\r\n").unwrap();
    assert_eq!(lines(&s.statements), [1, 3]);
    for empty in ["", "\n\n", "# only a comment\n"] {
        let s = PythonStatements::parse(empty).unwrap();
        assert!(s.statements.is_empty() && s.excluded.is_empty(), "{empty:?}");
    }
}

#[test]
fn source_that_does_not_parse_is_an_error_with_its_line() {
    let e = PythonStatements::parse("x = 1\ny = = 2\nz = 3\n").unwrap_err();
    assert!(matches!(e, StatementsError::Syntax { line: 2, .. }), "{e:?}");
    let e = PythonStatements::parse("x = 1\ny = 'unterminated\n").unwrap_err();
    assert!(matches!(e, StatementsError::Syntax { line: 2, .. }), "{e:?}");
    // Newer syntax the parser does not know (Python 3.14's template strings) is refused,
    // not guessed.
    let e = PythonStatements::parse("name = 1\ns = t\"hello {name}\"\n").unwrap_err();
    assert!(matches!(e, StatementsError::Syntax { .. }), "{e:?}");
}

#[test]
fn hostile_sources_are_refused_quickly() {
    let huge = "x = 1\n".repeat(MAX_SOURCE_BYTES / 6 + 1);
    assert!(matches!(
        PythonStatements::parse(&huge),
        Err(StatementsError::TooLarge { .. })
    ));
    let mut blocks = String::new();
    for i in 0..(MAX_BLOCK_DEPTH + 5) {
        blocks.push_str(&format!("{}if x:\n", "    ".repeat(i)));
    }
    blocks.push_str(&format!("{}pass\n", "    ".repeat(MAX_BLOCK_DEPTH + 5)));
    assert!(matches!(
        PythonStatements::parse(&blocks),
        Err(StatementsError::TooDeep { what: "blocks", .. })
    ));
    let brackets = format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000));
    assert!(matches!(
        PythonStatements::parse(&brackets),
        Err(StatementsError::TooDeep { line: 1, .. })
    ));
    for deep in [
        format!("x = {}1\n", "-".repeat(200_000)),
        format!("x = 1{}\n", "+1".repeat(200_000)),
        format!("x = a{}\n", ".b".repeat(200_000)),
        format!("x = f{}\n", "()".repeat(200_000)),
        format!("x = {}1\n", "not ".repeat(200_000)),
    ] {
        assert!(
            matches!(
                PythonStatements::parse(&deep),
                Err(StatementsError::TooDeep { what: "expression", .. })
            ),
            "{}",
            &deep[..20]
        );
    }
}

/// Just under the bounds, the tree is built and dropped on a thread with the 2 MiB stack
/// of tokio's blocking pool, where the App classifies.
#[test]
fn the_deepest_accepted_source_fits_a_small_stack() {
    let sources = [
        format!("x = {}1\n", "-".repeat(MAX_EXPR_DEPTH - 1)),
        format!("x = 1{}\n", "+1".repeat(MAX_EXPR_DEPTH - 1)),
        format!(
            "x = {}1{}\n",
            "(".repeat(MAX_EXPR_DEPTH / 2),
            ")".repeat(MAX_EXPR_DEPTH / 2)
        ),
        {
            let mut s = String::new();
            for i in 0..MAX_BLOCK_DEPTH - 1 {
                s.push_str(&format!("{}if x:\n", " ".repeat(i)));
            }
            s.push_str(&format!("{}pass\n", " ".repeat(MAX_BLOCK_DEPTH - 1)));
            s
        },
    ];
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            for s in &sources {
                let parsed = PythonStatements::parse(s).unwrap_or_else(|e| panic!("{e}"));
                assert!(!parsed.statements.is_empty());
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any text: an error or statements within the file, never a panic.
    #[test]
    fn never_panics(text in "[a-z():=\\[\\]{}\"'#@.,+\\- \n\t\\\\]{0,200}") {
        if let Ok(s) = PythonStatements::parse(&text) {
            let n = text.split('\n').count() as u32;
            prop_assert!(s.statements.iter().all(|&l| l >= 1 && l <= n));
            prop_assert!(s.statements.is_disjoint(&s.excluded));
        }
    }

    /// Lines of statements built from pieces: each statement's first line, never a
    /// continuation line, a blank line or an `else:`.
    #[test]
    fn generated_modules(pieces in proptest::collection::vec(0usize..6, 1..40)) {
        let mut text = String::new();
        let mut want = Vec::new();
        let mut line = 1u32;
        for p in pieces {
            let (src, stmts): (&str, &[u32]) = match p {
                0 => ("x = 1\n", &[0]),
                1 => ("y = (1,\n     2)\n", &[0]),
                2 => ("\n", &[]),
                3 => ("if x:\n    pass\nelse:\n    pass\n", &[0, 1, 3]),
                4 => ("s = ('a'\n     'b')\n", &[0]),
                _ => ("def f():\n    \"\"\"doc\n    more\"\"\"\n    return 1\n", &[0, 3]),
            };
            want.extend(stmts.iter().map(|d| line + d));
            line += src.matches('\n').count() as u32;
            text.push_str(src);
        }
        let s = PythonStatements::parse(&text).unwrap();
        prop_assert_eq!(lines(&s.statements), want);
    }
}
