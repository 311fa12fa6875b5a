use super::*;

#[test]
fn last_match_wins() {
    let c = CodeOwners::parse(
        "# comment\n* @org/everyone\n*.py @py-team\n/src/shop/ @shop/core # inline\nsrc/shop/refunds.py @shop/payments\ndocs/ \n",
    );
    let cases = [
        ("README", vec!["@org/everyone"]),
        ("tools/x.py", vec!["@py-team"]),
        ("src/shop/cart.py", vec!["@shop/core"]),
        ("src/shop/refunds.py", vec!["@shop/payments"]),
        ("docs/guide.md", vec![]),
        ("a/src/shop/cart.py", vec!["@py-team"]),
    ];
    for (path, want) in cases {
        assert_eq!(
            c.owners_of(path),
            want.iter().map(|s| s.to_string()).collect::<Vec<_>>().as_slice(),
            "{path}"
        );
    }
}

#[test]
fn unanchored_names_match_anywhere_and_directories_cover_their_contents() {
    let c = CodeOwners::parse("apps/ @apps\nlogs @ops\n");
    assert_eq!(c.owners_of("apps/web/x.py"), ["@apps"]);
    assert_eq!(c.owners_of("deep/logs/y.txt"), ["@ops"]);
    assert_eq!(c.owners_of("logs"), ["@ops"]);
    assert!(c.owners_of("other/z.py").is_empty());
    let c = CodeOwners::parse("!x @a\n[abc] @b\n");
    assert_eq!(c.skipped.len(), 2);
}

#[test]
fn gitignore_wildcards() {
    let cases = [
        // (pattern, path, matches)
        ("*.py", "a/b/c.py", true),
        ("*.py", "c.pyc", false),
        ("/src/*.py", "src/a.py", true),
        ("/src/*.py", "src/sub/a.py", false),
        ("src/**/test_*.py", "src/test_a.py", true),
        ("src/**/test_*.py", "src/x/y/test_a.py", true),
        ("src/**/test_*.py", "lib/src/test_a.py", false),
        ("**/logs", "a/b/logs/x", true),
        ("docs/**", "docs/a/b.md", true),
        ("docs/", "docs", false),
        ("docs/", "docs/x", true),
        ("a?c", "x/abc", true),
        ("a?c", "x/a/c", false),
        ("a**b", "x/aXYb", true),
        ("a**b", "x/a/b", false),
        ("\\*.md", "dir/*.md", true),
        ("\\*.md", "dir/a.md", false),
        ("{a,b}.py", "{a,b}.py", true),
        ("{a,b}.py", "a.py", false),
        ("*a*b*c", "xaxxbyyc", true),
        ("*a*b*c", "xaxxbyy", false),
    ];
    for (pattern, path, want) in cases {
        let c = CodeOwners::parse(&format!("{pattern} @o\n"));
        assert_eq!(!c.owners_of(path).is_empty(), want, "{pattern} vs {path}");
    }
}

/// Fuzzing found it (docs/security.md, Fuzzing): one regex per line made a 3 MB file of
/// 100,000 distinct lines take gigabytes and minutes. A base branch anyone with push
/// access can create may hold it.
#[test]
fn a_file_of_many_lines_costs_its_size() {
    let text: String = (0..100_000).map(|i| format!("s/d{i}/**/*.py @t{}\n", i % 50)).collect();
    assert!(text.len() < MAX_BYTES);
    let c = CodeOwners::parse(&text);
    assert!(c.skipped.is_empty());
    assert_eq!(c.owners_of("s/d99999/a/b.py"), ["@t49"]);
    assert_eq!(c.owners_of("x/s/d7/b.py"), [] as [&str; 0]);
    assert!(c.owners_of("s/nowhere.py").is_empty());
}

#[test]
fn a_file_of_3_mb_or_more_is_ignored_as_github_does() {
    let text = "* @org/everyone\n".repeat(MAX_BYTES / 16 + 1);
    let c = CodeOwners::parse(&text);
    assert!(c.owners_of("a.py").is_empty());
    assert_eq!(c.skipped.len(), 1);
    assert!(c.skipped[0].1.contains("3 MB"), "{:?}", c.skipped);
}

/// A pattern of many `**` and `*` is matched without backtracking blow-up or recursion.
#[test]
fn pathological_patterns_match_in_bounded_time() {
    let deep = "**/".repeat(2000) + "x";
    let stars = "*a".repeat(2000);
    let c = CodeOwners::parse(&format!("{deep} @deep\n{stars} @stars\n"));
    let path = "a/".repeat(200) + "x";
    assert_eq!(c.owners_of(&path), ["@deep"]);
    assert!(c.owners_of(&"a".repeat(1999)).is_empty());
    assert_eq!(c.owners_of(&format!("d/{}", "ba".repeat(2000))), ["@stars"]);
}
