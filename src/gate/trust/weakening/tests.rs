use super::*;
use crate::gate::patch::test_support::file_change as fc;
use crate::gate::patch::FileStatus;

fn whats(f: FileChange) -> Vec<String> {
    weakenings(&Patch { files: vec![f] })
        .into_iter()
        .map(|w| w.what)
        .collect()
}

#[test]
fn signals() {
    let t = "tests/test_refunds.py";
    let flagged: &[(&[&str], &[&str], &str)] = &[
        (&["@pytest.mark.flaky(reruns=3)"], &[], "adds retries"),
        (&["    time.sleep(0.5)"], &[], "adds a sleep"),
        (&["@pytest.mark.xfail(reason='flaky')"], &[], "adds a skip or xfail"),
        (&["@pytest.mark.skipif(True, reason='x')"], &[], "adds a skip or xfail"),
        (
            &["    assert total == pytest.approx(10, rel=0.5)"],
            &["    assert total == 10"],
            "widens a tolerance (an exact comparison becomes approximate)",
        ),
        (&[], &["    assert refund == 5"], "removes 1 assertion"),
        (
            &[],
            &["def test_refund_amount():"],
            "deletes the test `test_refund_amount`",
        ),
    ];
    for (added, removed, want) in flagged {
        let got = whats(fc(t, added, removed));
        assert!(
            got.iter().any(|w| w.starts_with(want)),
            "{added:?} {removed:?}: {got:?}"
        );
    }
    // Honest edits stay quiet.
    let quiet: &[(&[&str], &[&str])] = &[
        (&["    assert refund == 6"], &["    assert refund == 5"]),
        (&["def test_new_case():", "    assert f(2) == 4"], &[]),
        (&["    # time.sleep is not needed here"], &[]),
    ];
    for (added, removed) in quiet {
        assert_eq!(
            whats(fc(t, added, removed)),
            Vec::<String>::new(),
            "{added:?} {removed:?}"
        );
    }
    // Not a test file: not a test weakening.
    assert!(whats(fc("src/shop/refunds.py", &["    time.sleep(1)"], &[])).is_empty());
    let mut gone = fc(t, &[], &[]);
    gone.status = FileStatus::Deleted;
    assert_eq!(whats(gone), ["deletes a test file"]);
}

#[test]
fn tests_the_patch_adds() {
    let p = Patch {
        files: vec![fc("tests/test_a.py", &["def test_new(x):", "    assert x"], &[])],
    };
    let touched = |t: &str| tests_touched_by(&p, &TestId::new(t));
    assert!(touched("tests/test_a.py::test_new[1]"));
    assert!(!touched("tests/test_a.py::test_old"));
    assert!(!touched("tests/test_b.py::test_new"));
}

fn parse(diff: &str) -> Patch {
    crate::gate::patch::parse_unified("test.diff", diff).unwrap()
}

/// The real `git diff` of the corpus's honest bug fix: `discount()` changed, and a new
/// test added next to the existing, unmodified `test_discount`.
pub(crate) const NEW_TEST_BESIDE_AN_OLD_ONE: &str =
    include_str!("../../../../tests/fixtures/corpus/honest_bug_fix/diff.patch");

/// `git diff`: one case of `test_discount`'s parametrize list changed.
pub(crate) const PARAM_CASE_CHANGED: &str = r#"diff --git a/src/shop/pricing.py b/src/shop/pricing.py
index 4a7c8fb..89a0e28 100644
--- a/src/shop/pricing.py
+++ b/src/shop/pricing.py
@@ -25,7 +25,7 @@ def discount(amount, code):
         return round_cents(amount / 2)
     if code == "TENOFF":
         return round_cents(clamp(amount - 10, 0, amount))
-    return amount
+    return round_cents(amount)
 
 
 def bulk_discount(quantity):
diff --git a/tests/test_pricing.py b/tests/test_pricing.py
index a066abc..09f2c27 100644
--- a/tests/test_pricing.py
+++ b/tests/test_pricing.py
@@ -16,7 +16,7 @@ def test_apply_tax():
     [
         pytest.param(100, "HALF", 50.0, id="half|code"),
         pytest.param(100, "TENOFF", 90.0, id="café"),
-        pytest.param(5, None, 5, id="none"),
+        pytest.param(5.004, None, 5.0, id="none"),
     ],
 )
 def test_discount(amount, code, expected):
"#;

const CLASS_BODY: &str = r#"diff --git a/tests/test_cart.py b/tests/test_cart.py
index 09d439a..0d9c90f 100644
--- a/tests/test_cart.py
+++ b/tests/test_cart.py
@@ -9,8 +9,8 @@ class TestCart:
 
     def test_total(self):
         cart = Cart()
-        cart.add("pen", 2.5, qty=4)
-        assert cart.total() == 12.0
+        cart.add("pen", 2.5, qty=5)
+        assert cart.total() == 15.0
 
     def test_add_rejects_zero(self):
         with pytest.raises(ValueError):
"#;

#[test]
fn tests_the_patch_modifies_at_the_function_level() {
    let touched = |diff: &str, t: &str| tests_touched_by(&parse(diff), &TestId::new(t));
    // A new test beside an old one: the old one is not the patch's.
    assert!(!touched(
        NEW_TEST_BESIDE_AN_OLD_ONE,
        "tests/test_pricing.py::test_discount[none]"
    ));
    assert!(touched(
        NEW_TEST_BESIDE_AN_OLD_ONE,
        "tests/test_pricing.py::test_discount_unknown_code_rounds"
    ));
    assert!(!touched(
        NEW_TEST_BESIDE_AN_OLD_ONE,
        "tests/test_pricing.py::test_bulk_discount[10-0.1]"
    ));
    // A decorator's case changed (the hunk header names the previous def): the decorated test is modified.
    assert!(touched(
        PARAM_CASE_CHANGED,
        "tests/test_pricing.py::test_discount[none]"
    ));
    assert!(touched(
        PARAM_CASE_CHANGED,
        "tests/test_pricing.py::test_discount[half|code]"
    ));
    assert!(!touched(PARAM_CASE_CHANGED, "tests/test_pricing.py::test_apply_tax"));
    // A method's body: that method, by the last part of its node id.
    assert!(touched(CLASS_BODY, "tests/test_cart.py::TestCart::test_total"));
    assert!(!touched(
        CLASS_BODY,
        "tests/test_cart.py::TestCart::test_add_rejects_zero"
    ));
    assert!(!touched(CLASS_BODY, "tests/test_cart.py::test_stocked_subtotal"));
}

#[test]
fn an_unknown_function_makes_every_test_of_the_file_possibly_modified() {
    // A -U0 hunk deep in a body, no header: which function cannot be told.
    let diff = "diff --git a/tests/test_cart.py b/tests/test_cart.py\n--- a/tests/test_cart.py\n+++ b/tests/test_cart.py\n@@ -12 +12 @@\n-        cart.add(\"pen\", 2.5, qty=4)\n+        cart.add(\"pen\", 2.5, qty=5)\n";
    let p = parse(diff);
    for t in [
        "tests/test_cart.py::TestCart::test_total",
        "tests/test_cart.py::test_stocked_subtotal",
    ] {
        assert!(tests_touched_by(&p, &TestId::new(t)), "{t}");
    }
    // A comment-only change touches no test.
    let diff = "diff --git a/tests/test_cart.py b/tests/test_cart.py\n--- a/tests/test_cart.py\n+++ b/tests/test_cart.py\n@@ -12 +12 @@\n-        # old note\n+        # new note\n";
    assert!(!tests_touched_by(
        &parse(diff),
        &TestId::new("tests/test_cart.py::TestCart::test_total")
    ));
}

const ASSERT_FREE: &str = r#"diff --git a/tests/test_pricing.py b/tests/test_pricing.py
index a066abc..a4698be 100644
--- a/tests/test_pricing.py
+++ b/tests/test_pricing.py
@@ -28,6 +28,10 @@ def test_bulk_discount(quantity, expected):
     assert bulk_discount(quantity) == expected
 
 
+def test_discount_runs():
+    discount(100, "HALF")
+
+
 def test_bulk_discount_cap():
     # Not frozen: its name merely starts with the frozen "test_bulk_discount".
     assert bulk_discount(250) == 5.0
"#;
const ASSERT_FREE_AT_EOF: &str = r#"diff --git a/tests/test_pricing.py b/tests/test_pricing.py
index a066abc..2f6b195 100644
--- a/tests/test_pricing.py
+++ b/tests/test_pricing.py
@@ -31,3 +31,7 @@ def test_bulk_discount(quantity, expected):
 def test_bulk_discount_cap():
     # Not frozen: its name merely starts with the frozen "test_bulk_discount".
     assert bulk_discount(250) == 5.0
+
+
+def test_new_at_end():
+    print(discount(1, None))
"#;
const NOOP_RETURN: &str = r#"diff --git a/tests/test_pricing.py b/tests/test_pricing.py
index a066abc..372f8cd 100644
--- a/tests/test_pricing.py
+++ b/tests/test_pricing.py
@@ -8,6 +8,7 @@ def test_tax_rate():
 
 
 def test_apply_tax():
+    return
     assert apply_tax(10) == 12.0
 
 
"#;
const NOOP_PASS: &str = r#"diff --git a/tests/test_pricing.py b/tests/test_pricing.py
index a066abc..c428504 100644
--- a/tests/test_pricing.py
+++ b/tests/test_pricing.py
@@ -8,7 +8,7 @@ def test_tax_rate():
 
 
 def test_apply_tax():
-    assert apply_tax(10) == 12.0
+    pass
 
 
 @pytest.mark.parametrize(
"#;
const APPROX: &str = r#"diff --git a/tests/test_pricing.py b/tests/test_pricing.py
index a066abc..6b4fbb3 100644
--- a/tests/test_pricing.py
+++ b/tests/test_pricing.py
@@ -8,7 +8,7 @@ def test_tax_rate():
 
 
 def test_apply_tax():
-    assert apply_tax(10) == 12.0
+    assert apply_tax(10) == pytest.approx(12.0, rel=0.1)
 
 
 @pytest.mark.parametrize(
"#;

fn whats_of(diff: &str) -> Vec<String> {
    weakenings(&parse(diff)).into_iter().map(|w| w.what).collect()
}

#[test]
fn tests_that_check_nothing() {
    let w = weakenings(&parse(ASSERT_FREE));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].what
            .starts_with("adds a test that asserts nothing: `test_discount_runs`"),
        "{w:?}"
    );
    assert_eq!(w[0].location.to_string(), "tests/test_pricing.py:31");
    let w = whats_of(ASSERT_FREE_AT_EOF);
    assert!(
        w[0].contains("`test_new_at_end`"),
        "the end of the file ends the body: {w:?}"
    );
    // A new test that asserts is fine, also with a tolerance of its own.
    assert!(whats_of(NEW_TEST_BESIDE_AN_OLD_ONE).is_empty());
    let approx_new = NEW_TEST_BESIDE_AN_OLD_ONE.replace(
        "+    assert discount(19.999, \"NOPE\") == 20.0",
        "+    assert discount(19.999, \"NOPE\") == pytest.approx(20.0, abs=0.001)",
    );
    assert_ne!(
        approx_new, NEW_TEST_BESIDE_AN_OLD_ONE,
        "the edit applies to the fixture diff"
    );
    assert!(whats_of(&approx_new).is_empty(), "{:?}", whats_of(&approx_new));
    // Other ways to check: mock asserts, unittest, pytest helpers, a body on the def line.
    for body in [
        "    sender.assert_called_once_with(1)",
        "    self.assertEqual(a, b)",
        "    with pytest.raises(ValueError):\n        f()",
        "    with pytest.warns(UserWarning):\n        f()",
        "    if bad:\n        pytest.fail(\"bad\")",
        "    np.testing.assert_allclose(a, b)",
    ] {
        let n = body.lines().count() + 1;
        let added: String = body.lines().map(|l| format!("+{l}\n")).collect();
        let diff = format!(
            "diff --git a/tests/test_x.py b/tests/test_x.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_x.py\n@@ -0,0 +1,{n} @@\n+def test_x():\n{added}"
        );
        assert!(whats_of(&diff).is_empty(), "{body}: {:?}", whats_of(&diff));
    }
    let diff = "diff --git a/tests/test_x.py b/tests/test_x.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_x.py\n@@ -0,0 +1,5 @@\n+def test_x(\n+    a,\n+):\n+    f(a)\n+def test_y(): assert f(1)\n";
    assert_eq!(whats_of(diff).len(), 1, "{:?}", whats_of(diff));
    assert!(whats_of(diff)[0].contains("`test_x`"));
    // A body the diff does not show to its end (the hunk stops in it): not judged.
    let cut = "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1,2 +1,4 @@\n+def test_new():\n+    x = f()\n     y = 2\n     z = 3\n";
    assert!(whats_of(cut).is_empty(), "{:?}", whats_of(cut));
}

#[test]
fn markers_on_tests_the_patch_adds_weaken_nothing() {
    let diff = |hunk: &str| {
        let (old, new) = hunk.lines().fold((0, 0), |(o, n), l| match l.as_bytes().first() {
            Some(b'+') => (o, n + 1),
            Some(b'-') => (o + 1, n),
            _ => (o + 1, n + 1),
        });
        format!("diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1,{old} +1,{new} @@\n{hunk}")
    };
    let quiet = [
        // A new test skipped below a Python version, beside an existing one.
        " def test_old():\n     assert f(1) == 1\n+\n+\n+@pytest.mark.skipif(sys.version_info < (3, 11), reason=\"needs 3.11\")\n+def test_new():\n+    assert f(2) == 2\n",
        // A multi-line marker, stacked with another decorator.
        " def test_old():\n     assert f(1) == 1\n+\n+\n+@pytest.mark.xfail(\n+    reason=\"not yet\",\n+)\n+@pytest.mark.parametrize(\"x\", [1, 2])\n+def test_new(x):\n+    assert f(x) == x\n",
        // A skip call inside a new test.
        " def test_old():\n     assert f(1) == 1\n+\n+\n+def test_new():\n+    if not HAVE_X:\n+        pytest.skip(\"no x\")\n+    assert f(2) == 2\n",
    ];
    for d in quiet {
        assert_eq!(whats_of(&diff(d)), Vec::<String>::new(), "{d}");
    }
    let flagged = [
        // A marker on an existing test.
        "+@pytest.mark.skipif(sys.version_info < (3, 11), reason=\"x\")\n def test_old():\n     assert f(1) == 1\n",
        // An existing test moved and marked: not new.
        "-def test_old():\n-    assert f(1) == 1\n+@pytest.mark.skip\n+def test_old():\n+    assert f(1) == 1\n",
        // A skip call inside an existing test.
        " def test_old():\n+    pytest.skip(\"later\")\n     assert f(1) == 1\n",
        // A new class in an existing file may hold moved tests.
        "-def test_old():\n-    assert f(1) == 1\n+@pytest.mark.skip\n+class TestNew:\n+    def test_old(self):\n+        assert f(1) == 1\n",
    ];
    for d in flagged {
        let got = whats_of(&diff(d));
        assert!(
            got.iter().any(|w| w.starts_with("adds a skip or xfail")),
            "{d}: {got:?}"
        );
    }
}

#[test]
fn tests_turned_into_no_ops() {
    assert_eq!(
        whats_of(NOOP_RETURN),
        ["turns the test `test_apply_tax` into a no-op (`return` as its first statement)"]
    );
    let w = whats_of(NOOP_PASS);
    assert!(
        w.iter()
            .any(|x| x.starts_with("turns the test `test_apply_tax` into a no-op (`pass`")),
        "{w:?}"
    );
    assert!(w.iter().any(|x| x.starts_with("removes 1 assertion")), "{w:?}");
    // `return` late in a body is not a no-op.
    let late = NOOP_RETURN.replace(
        "+    return\n     assert apply_tax(10) == 12.0\n",
        "     assert apply_tax(10) == 12.0\n+    return\n",
    );
    assert!(whats_of(&late).is_empty(), "{late}\n{:?}", whats_of(&late));
}

#[test]
fn tolerances_widened_and_tightened() {
    assert_eq!(
        whats_of(APPROX),
        ["widens a tolerance (an exact comparison becomes approximate): `assert apply_tax(10) == pytest.approx(12.0, rel=0.1)`"]
    );
    let t = "tests/test_refunds.py";
    let cases: &[(&str, &str, Option<&str>)] = &[
        (
            "    assert x == pytest.approx(1, rel=0.5)",
            "    assert x == pytest.approx(1, rel=0.01)",
            Some("widens a tolerance (rel 0.01 → 0.5)"),
        ),
        (
            "    assert x == pytest.approx(1, rel=0.01)",
            "    assert x == pytest.approx(1, rel=0.5)",
            None,
        ),
        (
            "    assert x == pytest.approx(1, rel=0.01, abs=1)",
            "    assert x == pytest.approx(1, rel=0.01)",
            Some("widens a tolerance (adds `abs=1`)"),
        ),
        (
            "    self.assertAlmostEqual(x, 1, places=2)",
            "    self.assertAlmostEqual(x, 1, places=5)",
            Some("widens a tolerance (places 5 → 2)"),
        ),
        (
            "    self.assertAlmostEqual(x, 1, places=6)",
            "    self.assertAlmostEqual(x, 1, places=5)",
            None,
        ),
        (
            "    self.assertAlmostEqual(x, 1, places=2)",
            "    self.assertEqual(x, 1)",
            Some("widens a tolerance (an exact comparison"),
        ),
        (
            "    assert math.isclose(x, 1, rel_tol=1e-3)",
            "    assert math.isclose(x, 1, rel_tol=1e-9)",
            Some("widens a tolerance (rel_tol 1e-9 → 1e-3)"),
        ),
        (
            "    assert x == pytest.approx(1, rel=TOL)",
            "    assert x == pytest.approx(1, rel=1e-9)",
            Some("changes a tolerance"),
        ),
    ];
    for (added, removed, want) in cases {
        let got = whats(fc(t, &[added], &[removed]));
        match want {
            Some(w) => assert!(got.iter().any(|g| g.starts_with(w)), "{added} / {removed}: {got:?}"),
            None => assert!(got.is_empty(), "{added} / {removed}: {got:?}"),
        }
    }
    // The diff rewrote the whole function, `def` line included: still the old test.
    let got = whats(fc(
        t,
        &["def test_x():", "    assert x == pytest.approx(1, rel=0.5)"],
        &["def test_x():", "    assert x == pytest.approx(1, rel=0.01)"],
    ));
    assert!(
        got.iter().any(|g| g.starts_with("widens a tolerance (rel 0.01 → 0.5)")),
        "{got:?}"
    );
    // A new check with a tolerance in an existing test replaces nothing: not a widening.
    assert!(whats(fc(t, &["    assert y == pytest.approx(2, rel=0.1)"], &[])).is_empty());
}
