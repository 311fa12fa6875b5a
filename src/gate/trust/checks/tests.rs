use super::*;
use crate::gate::patch::test_support::file_change as fc;

fn parse(diff: &str) -> Patch {
    crate::gate::patch::parse_unified("test.diff", diff).unwrap()
}

/// A one-hunk `git diff` of tests/test_x.py from the hunk's lines (` `, `+`, `-` prefixed).
fn diff(hunk: &str) -> String {
    let (old, new) = hunk.lines().fold((0, 0), |(o, n), l| match l.as_bytes().first() {
        Some(b'+') => (o, n + 1),
        Some(b'-') => (o + 1, n),
        _ => (o + 1, n + 1),
    });
    format!("diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1,{old} +1,{new} @@\n{hunk}")
}

fn whats(d: &str) -> Vec<String> {
    weakenings(&parse(&diff(d))).into_iter().map(|w| w.what).collect()
}

#[test]
fn retries_are_found_and_honest_loops_are_not() {
    let retries = [
        // The classic: three attempts, the failure swallowed, a break on success.
        " def test_total():\n-    assert total() == 12\n+    for attempt in range(3):\n+        try:\n+            assert total() == 12\n+            break\n+        except AssertionError:\n+            continue\n",
        // Re-raised only on the last attempt: still a retry.
        " def test_total():\n-    assert total() == 12\n+    for attempt in range(3):\n+        try:\n+            assert total() == 12\n+            break\n+        except AssertionError:\n+            if attempt == 2:\n+                raise\n",
        // A `while` with a bare except.
        " def test_total():\n-    assert total() == 12\n+    while True:\n+        try:\n+            self.assertEqual(total(), 12)\n+            break\n+        except:\n+            pass\n",
        // suppress inside a loop.
        " def test_total():\n-    assert total() == 12\n+    for _ in range(5):\n+        with contextlib.suppress(AssertionError):\n+            assert total() == 12\n+            break\n",
        // Only the loop is new: the try/except was there.
        " def test_total():\n+    for _ in range(3):\n         try:\n             assert total() == 12\n         except Exception:\n             pass\n",
    ];
    for d in retries {
        let got = whats(d);
        assert!(
            got.iter()
                .any(|w| w.starts_with("retries its assertion in `test_total`")),
            "{d}\n{got:?}"
        );
    }
    let honest = [
        // A table test: a loop over cases, no except.
        " def test_total():\n-    assert total(1) == 12\n+    for qty, want in [(1, 12), (2, 24)]:\n+        assert total(qty) == want\n",
        // A retry of setup, not of a check (OSError, no assertion in the try).
        " def test_total():\n+    for _ in range(3):\n+        try:\n+            conn = connect()\n+            break\n+        except OSError:\n+            continue\n     assert total(conn) == 12\n",
        // An except that re-raises at its top level.
        " def test_total():\n+    for _ in range(3):\n+        try:\n+            assert total() == 12\n+        except AssertionError as e:\n+            raise RuntimeError(\"total\") from e\n",
        // A narrower exception than AssertionError.
        " def test_total():\n+    try:\n+        assert parse(\"x\") == 1\n+    except ValueError:\n+        pytest.fail(\"parse raised\")\n",
        // The check in the handler, not in the try.
        " def test_total():\n+    try:\n+        f()\n+    except Exception as e:\n+        assert str(e) == \"boom\"\n",
        // pytest.raises of a specific error around a call.
        " def test_total():\n+    with pytest.raises(ValueError):\n+        total(-1)\n",
    ];
    for d in honest {
        assert_eq!(whats(d), Vec::<String>::new(), "{d}");
    }
}

#[test]
fn swallowed_assertions() {
    let cases = [
        (
            " def test_total():\n-    assert total() == 12\n+    try:\n+        assert total() == 12\n+    except AssertionError:\n+        pass\n",
            "swallows its assertion in `test_total`: `except AssertionError` (line 4) absorbs the failure of `assert total() == 12` (line 3)",
        ),
        (
            " def test_total():\n-    assert total() == 12\n+    try:\n+        assert total() == 12\n+    except (ValueError, Exception) as e:\n+        log(e)\n",
            "swallows its assertion in `test_total`: `except Exception` (line 4)",
        ),
        (
            " def test_total():\n-    assert total() == 12\n+    with contextlib.suppress(AssertionError):\n+        assert total() == 12\n",
            "swallows its assertion in `test_total`: `suppress(AssertionError)` (line 2)",
        ),
        (
            " def test_total():\n-    assert total() == 12\n+    with pytest.raises(AssertionError):\n+        assert total() == 12\n",
            "swallows its assertion in `test_total`: `raises(AssertionError)` (line 2)",
        ),
        // Only the check moved in: the try/except was there already.
        (
            " def test_total():\n     try:\n+        assert total() == 12\n         f()\n     except Exception:\n         pass\n",
            "swallows its assertion in `test_total`: `except Exception` (line 5)",
        ),
    ];
    for (d, want) in cases {
        let got = whats(d);
        assert!(got.iter().any(|w| w.starts_with(want)), "{d}\n{got:?}");
    }
    // Located at the except line.
    let w = weakenings(&parse(&diff(cases[0].0)));
    assert_eq!(w[0].location.to_string(), "tests/test_x.py:4");
    // An untouched try/except elsewhere in the hunk is not the patch's.
    let old = " def test_total():\n     try:\n         assert total() == 12\n     except Exception:\n         pass\n+    assert f() == 1\n";
    assert_eq!(whats(old), Vec::<String>::new());
    // A helper that checks for AssertionError raised by code under test (no check inside),
    // and a test of mock's own assertion (pytest-mock's suite does this).
    for honest in [
        " def test_invariant():\n+    with pytest.raises(AssertionError):\n+        check_invariant(bad)\n",
        " def test_failure_message():\n+    with pytest.raises(AssertionError, match=\"not called\"):\n+        stub.assert_called_with()\n",
    ] {
        assert_eq!(whats(honest), Vec::<String>::new(), "{honest}");
    }
}

#[test]
fn assertions_loosened_in_place() {
    let t = "tests/test_cart.py";
    let flagged: &[(&str, &str, &str)] = &[
        (
            "    assert cart.total() in (12, 13)",
            "    assert cart.total() == 12",
            "loosens an exact comparison (`==`) into `in`",
        ),
        (
            "    assert cart.total() != 0",
            "    assert cart.total() == 12.0",
            "loosens an exact comparison (`==`) into `!=`",
        ),
        (
            "    assert cart.total() >= 12",
            "    assert cart.total() == 12",
            "into `>=`",
        ),
        (
            "    assert 11 <= cart.total() <= 13",
            "    assert cart.total() == 12",
            "into `<=`",
        ),
        (
            "    assert abs(cart.total() - 12) < 0.5",
            "    assert cart.total() == 12",
            "into `<`",
        ),
        (
            "    assert cart.total()",
            "    assert cart.total() == 12",
            "into a truthiness test",
        ),
        (
            "    assert 12 in cart.totals()",
            "    assert cart.totals() == [12]",
            "into `in`",
        ),
        (
            "    with pytest.raises(Exception):",
            "    with pytest.raises(ValueError):",
            "broadens the expected exception from `ValueError` to `Exception`",
        ),
        (
            "    with pytest.raises((KeyError, BaseException)):",
            "    with pytest.raises(KeyError):",
            "to `BaseException`",
        ),
        (
            "    with pytest.raises(ValueError):",
            "    with pytest.raises(ValueError, match=\"qty\"):",
            "drops the message check (`match=`) of the expected `ValueError`",
        ),
        (
            "    self.assertRaises(ValueError, f)",
            "    self.assertRaisesRegex(ValueError, \"qty\", f)",
            "drops the message check",
        ),
        (
            "    sender.assert_called()",
            "    sender.assert_called_once_with(1)",
            "weakens `sender.assert_called_once_with` to `assert_called`",
        ),
        (
            "    m.send.assert_called_once()",
            "    m.send.assert_called_once_with(1)",
            "weakens `m.send.assert_called_once_with` to `assert_called_once`",
        ),
        (
            "    self.assertTrue(cart.total())",
            "    self.assertEqual(cart.total(), 12)",
            "weakens `assertEqual` to `assertTrue`",
        ),
        (
            "    self.assertIn(cart.total(), (12, 13))",
            "    self.assertEqual(cart.total(), 12)",
            "weakens `assertEqual` to `assertIn`",
        ),
    ];
    for (added, removed, want) in flagged {
        let f = fc(t, &["def test_total():", added], &["def test_total():", removed]);
        let got: Vec<String> = weakenings(&Patch { files: vec![f] })
            .into_iter()
            .map(|w| w.what)
            .collect();
        assert!(
            got.iter()
                .any(|w| w.starts_with("loosens an assertion in place in `test_total`") && w.contains(want)),
            "{removed} → {added}: {got:?}"
        );
    }
    let quiet: &[(&str, &str)] = &[
        // A new expected value: still exact.
        ("    assert cart.total() == 13", "    assert cart.total() == 12"),
        // A different subject entirely.
        ("    assert 'pen' in cart.items", "    assert len(cart.items) == 2"),
        // Stronger, not weaker.
        ("    sender.assert_called_once_with(1)", "    sender.assert_called()"),
        (
            "    with pytest.raises(ValueError, match=\"qty\"):",
            "    with pytest.raises(ValueError):",
        ),
        (
            "    with pytest.raises(ValueError):",
            "    with pytest.raises(Exception):",
        ),
        (
            "    self.assertEqual(cart.total(), 12)",
            "    self.assertTrue(cart.total())",
        ),
        // An inequality that was an inequality.
        ("    assert cart.total() > 1", "    assert cart.total() > 0"),
        // A literal shared by accident is no subject.
        ("    assert other() > 12", "    assert cart.total() == 12"),
    ];
    for (added, removed) in quiet {
        let f = fc(t, &["def test_total():", added], &["def test_total():", removed]);
        let got: Vec<String> = weakenings(&Patch { files: vec![f] })
            .into_iter()
            .map(|w| w.what)
            .collect();
        assert!(got.is_empty(), "{removed} → {added}: {got:?}");
    }
    // Another test's assert is not the one replaced; a new test replaces nothing.
    let f = fc(
        t,
        &["def test_other():", "    assert cart.total() in (12, 13)"],
        &["def test_total():", "    assert cart.total() == 12"],
    );
    let got: Vec<String> = weakenings(&Patch { files: vec![f] })
        .into_iter()
        .map(|w| w.what)
        .collect();
    assert!(got.is_empty(), "{got:?}");
    // Named at the added line, with the base line it replaced.
    let d = " def test_total():\n-    assert cart.total() == 12\n+    assert cart.total() in (12, 13)\n";
    let w = weakenings(&parse(&diff(d)));
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].location.to_string(), "tests/test_x.py:2");
    assert!(w[0].what.contains("at base line 2"), "{}", w[0].what);
    // Not a test file: nothing.
    let f = fc("src/shop/cart.py", &["    assert x in (1, 2)"], &["    assert x == 1"]);
    assert!(weakenings(&Patch { files: vec![f] }).is_empty());
}

#[test]
fn comparisons_read_at_the_top_level_only() {
    assert_eq!(comparison("assert f(a == b)"), Some(("f(a == b)".into(), vec![])));
    assert_eq!(
        comparison("assert x == \"a in b\", \"x < y\""),
        Some(("x".into(), vec!["=="]))
    );
    assert_eq!(comparison("assert 1 <= x < 3"), Some(("1".into(), vec!["<=", "<"])));
    assert_eq!(comparison("assert x not in s"), Some(("x".into(), vec!["not in"])));
    assert_eq!(comparison("assertion = 1"), None);
    assert!(mentions("assert cart.total() in (1,)", "cart.total()"));
    assert!(!mentions("assert subtotal > 1", "total"));
}
