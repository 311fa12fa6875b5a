use super::*;
use crate::gate::patch::parse_patch;

const PRICING: &str = "TAX_RATE = 0.2\n\n\ndef apply_tax(amount):\n    return round(amount * (1 + TAX_RATE), 2)\n\n\ndef discount(amount, code):\n    return amount\n";
const PRICING_CHANGED: &str = "TAX_RATE = 0.2\n\n\ndef apply_tax(amount):\n    return round(amount + amount * TAX_RATE, 2)\n\n\ndef discount(amount, code):\n    return amount\n";

/// A `git diff`-shaped patch of whole files (base → head), built with diffy.
fn diff(files: &[(&str, &str, &str)]) -> Patch {
    try_diff(files).unwrap()
}

fn try_diff(files: &[(&str, &str, &str)]) -> Result<Patch, crate::gate::InputError> {
    let mut text = String::new();
    for (path, base, head) in files {
        let p = diffy::create_patch(base, head).to_string();
        let hunks = p.split_once("+++ modified\n").map_or("", |(_, h)| h);
        if base.is_empty() {
            text.push_str(&format!(
                "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n{hunks}"
            ));
        } else {
            text.push_str(&format!(
                "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n{hunks}"
            ));
        }
    }
    parse_patch("test.diff", text.as_bytes())
}

/// The substance weakenings of a patch that changes `apply_tax` and these test files.
fn judge(tests: &[(&str, &str, &str)]) -> Vec<String> {
    let mut files = vec![("src/shop/pricing.py", PRICING, PRICING_CHANGED)];
    files.extend_from_slice(tests);
    judge_patch(&diff(&files), &files)
}

fn judge_patch(patch: &Patch, files: &[(&str, &str, &str)]) -> Vec<String> {
    let heads: BTreeMap<String, String> = files.iter().map(|(p, _, h)| (p.to_string(), h.to_string())).collect();
    let (src, tst): (BTreeMap<_, _>, BTreeMap<_, _>) = heads.into_iter().partition(|(p, _)| p.starts_with("src/"));
    let code = TestCode::new(patch, &tst);
    weakenings(patch, &code, &src)
        .into_iter()
        .map(|w| format!("{}: {}", w.location, w.what))
        .collect()
}

const TEST_BASE: &str = "from shop import pricing\nfrom shop.pricing import apply_tax\n\n\ndef test_apply_tax():\n    assert apply_tax(10) == 12.0\n";

#[test]
fn stand_ins_of_the_changed_code_are_caught_in_every_spelling() {
    let spellings = [
        "    monkeypatch.setattr(pricing, \"apply_tax\", lambda a: 12.0)\n",
        "    monkeypatch.setattr(\"shop.pricing.apply_tax\", lambda a: 12.0)\n",
        "    setattr(pricing, \"apply_tax\", lambda a: 12.0)\n",
        "    pricing.apply_tax = lambda a: 12.0\n",
        "    mocker.patch(\"shop.pricing.apply_tax\", return_value=12.0)\n",
        "    mocker.patch.object(pricing, \"apply_tax\", return_value=12.0)\n",
        "    monkeypatch.setitem(sys.modules, \"shop.pricing\", fake)\n",
        // Where another module of the package looks the changed function up.
        "    mocker.patch(\"shop.cart.apply_tax\", return_value=12.0)\n",
    ];
    for line in spellings {
        let head = format!(
            "import sys\nfrom shop import pricing\nfrom shop.pricing import apply_tax\n\n\ndef test_apply_tax(monkeypatch, mocker):\n{line}    assert pricing.apply_tax(10) == 12.0\n"
        );
        let got = judge(&[("tests/test_pricing.py", TEST_BASE, &head)]);
        assert!(
            got.iter()
                .any(|w| w.contains("stand-in") && w.contains("tests/test_pricing.py:7")),
            "{line}: {got:?}"
        );
    }
    // A decorator, a test package's __init__.py, a conftest fixture, a rebound import.
    let decorated = "from unittest import mock\nfrom shop.pricing import apply_tax\n\n\n@mock.patch(\"shop.pricing.apply_tax\", return_value=12.0)\ndef test_apply_tax(m):\n    assert m(10) == 12.0\n";
    assert!(judge(&[("tests/test_pricing.py", TEST_BASE, decorated)])
        .iter()
        .any(|w| w.contains("stand-in")));
    let init = "import shop.pricing\n\nshop.pricing.apply_tax = lambda amount: round(amount * 1.2, 2)\n";
    let got = judge(&[("tests/__init__.py", "", init)]);
    assert!(
        got.iter()
            .any(|w| w.contains("tests/__init__.py:3") && w.contains("`shop.pricing.apply_tax`")),
        "{got:?}"
    );
    let conftest = "import pytest\nfrom shop import pricing\n\n\n@pytest.fixture(autouse=True)\ndef fixed_tax(monkeypatch):\n    monkeypatch.setattr(pricing, \"apply_tax\", lambda a: 12.0)\n";
    assert!(judge(&[("tests/conftest.py", "", conftest)])
        .iter()
        .any(|w| w.contains("stand-in")));
    let rebound = "from shop.pricing import apply_tax\n\n\ndef apply_tax(amount):\n    return 12.0\n\n\ndef test_apply_tax():\n    assert apply_tax(10) == 12.0\n";
    assert!(judge(&[("tests/test_pricing.py", TEST_BASE, rebound)])
        .iter()
        .any(|w| w.contains("stand-in")));
}

#[test]
fn mocking_a_collaborator_is_honest() {
    for line in [
        "    monkeypatch.setattr(time, \"time\", lambda: 0.0)\n",
        "    monkeypatch.setattr(\"shop.pricing.requests.get\", fake_get)\n",
        "    monkeypatch.setenv(\"SHOP_TAX\", \"0.2\")\n",
        // A name of the package the patch does not change.
        "    monkeypatch.setattr(pricing, \"discount\", lambda a, c: a)\n",
        "    cart.items = []\n",
    ] {
        let head = format!(
            "import time\nfrom shop import pricing\nfrom shop.pricing import apply_tax\n\n\ndef test_apply_tax(monkeypatch):\n{line}    assert apply_tax(10) == 12.0\n"
        );
        let got = judge(&[("tests/test_pricing.py", TEST_BASE, &head)]);
        assert!(got.is_empty(), "{line}: {got:?}");
    }
}

#[test]
fn an_expectation_computed_by_the_checked_call() {
    let tautologies = [
        "    expected = apply_tax(10)\n    assert apply_tax(10) == expected\n",
        "    assert apply_tax(10) == apply_tax(10)\n",
        "    want = pricing.apply_tax(10)\n    assert pricing.apply_tax(10) == pytest.approx(want)\n",
        "    result = apply_tax(10)\n    expected = round(apply_tax(10), 2)\n    assert result == expected\n",
        "    self.assertEqual(apply_tax(10), apply_tax(10))\n",
    ];
    for body in tautologies {
        let head = format!(
            "import pytest\nfrom shop import pricing\nfrom shop.pricing import apply_tax\n\n\ndef test_apply_tax():\n{body}"
        );
        let got = judge(&[("tests/test_pricing.py", TEST_BASE, &head)]);
        assert!(
            got.iter().any(|w| w.contains("computes the expected value")),
            "{body}: {got:?}"
        );
    }
    for honest in [
        "    expected = round(10 * 1.2, 2)\n    assert apply_tax(10) == expected\n",
        "    assert apply_tax(20) == 2 * apply_tax(10)\n",
        "    assert apply_tax(make(10)) == expected_tax(make(10))\n",
    ] {
        let head = format!(
            "import pytest\nfrom shop import pricing\nfrom shop.pricing import apply_tax\n\n\ndef test_apply_tax():\n{honest}"
        );
        let got = judge(&[("tests/test_pricing.py", TEST_BASE, &head)]);
        assert!(got.is_empty(), "{honest}: {got:?}");
    }
}

#[test]
fn a_check_demoted_to_a_report() {
    for body in [
        "    total = apply_tax(10)\n    if total != 12.0:\n        warnings.warn(f\"tax {total}\")\n    assert total > 0\n",
        "    total = apply_tax(10)\n    if total != 12.0:\n        logging.getLogger(__name__).warning(\"tax %s\", total)\n    assert total\n",
        "    total = apply_tax(10)\n    if not total == 12.0:\n        print(\"mismatch\", total)\n",
        "    total = apply_tax(10)\n    warnings.warn(\"off\") if total != 12.0 else None\n",
    ] {
        let head = format!("import logging\nimport warnings\nfrom shop.pricing import apply_tax\n\n\ndef test_apply_tax():\n{body}");
        let got = judge(&[("tests/test_pricing.py", TEST_BASE, &head)]);
        assert!(got.iter().any(|w| w.contains("turns a check into a report")), "{body}: {got:?}");
    }
    // A debug print beside the exact assertion it explains is honest.
    let head = "from shop.pricing import apply_tax\n\n\ndef test_apply_tax():\n    total = apply_tax(10)\n    if total != 12.0:\n        print(\"tax\", total)\n    assert total == 12.0\n";
    assert!(judge(&[("tests/test_pricing.py", TEST_BASE, head)]).is_empty());
}

#[test]
fn removed_cases_and_generated_ones() {
    let base = "import pytest\nfrom hypothesis import given, settings, example, strategies as st\nfrom shop.pricing import apply_tax\n\nCASES = [(10, 12.0), (0, 0.0), (5, 6.0)]\n\n\n@pytest.mark.parametrize(\"amount,want\", [(10, 12.0), (100, 120.0)])\ndef test_apply_tax(amount, want):\n    assert apply_tax(amount) == want\n\n\n@pytest.mark.parametrize(\"amount,want\", CASES)\ndef test_table(amount, want):\n    assert apply_tax(amount) == want\n\n\n@settings(max_examples=200)\n@example(0.0)\n@given(st.floats(0, 1e6))\ndef test_never_negative(x):\n    assert apply_tax(x) >= 0\n\n\n@pytest.mark.parametrize(\"n\", range(5))\ndef test_generated(n):\n    assert apply_tax(n) >= n\n";
    let cut = base
        .replace(", (100, 120.0)]", "]")
        .replace("(0, 0.0), ", "")
        .replace("max_examples=200", "max_examples=5")
        .replace("@example(0.0)\n", "")
        .replace("range(5)", "range(2)");
    let got = judge(&[("tests/test_pricing.py", base, &cut)]);
    for want in [
        "removes 1 case of `test_apply_tax`",
        "removes 1 case of `test_table`",
        "removes 1 case of `test_never_negative`",
        "lowers `max_examples` of `test_never_negative` from 200 to 5",
        "removes 3 cases of `test_generated`",
    ] {
        assert!(got.iter().any(|w| w.contains(want)), "{want}: {got:?}");
    }
    // A case added, or changed in place, removes nothing.
    let added = base.replace(", (100, 120.0)]", ", (100, 120.0), (1, 1.2)]");
    assert!(judge(&[("tests/test_pricing.py", base, &added)]).is_empty());
    let changed = base.replace("(100, 120.0)", "(100.0, 120.0)");
    assert!(judge(&[("tests/test_pricing.py", base, &changed)]).is_empty());
}

#[test]
fn the_base_text_is_rebuilt_from_the_head_and_the_diff() {
    let base = "a\nb\nc\nd\ne\n";
    let head = "a\nB\nc\ne\nf\n";
    let p = diff(&[("tests/t.py", base, head)]);
    assert_eq!(base_text(&p.files[0], head).as_deref(), Some(base));
    // A head that does not fit the diff gives nothing.
    assert_eq!(base_text(&p.files[0], "x\n"), None);
}

proptest::proptest! {
    /// Whatever a patch does to a test file, reading it never panics (the text may not parse,
    /// the diff may not fit the head).
    #[test]
    fn any_test_file_edit_is_read_without_panicking(
        base in "[a-z_()=\\[\\]:,. \n0-9\"@]{0,200}",
        head in "[a-z_()=\\[\\]:,. \n0-9\"@]{0,200}",
    ) {
        let files = [("src/shop/pricing.py", PRICING, PRICING_CHANGED), ("tests/test_x.py", base.as_str(), head.as_str())];
        if let Ok(p) = try_diff(&files) {
            let _ = judge_patch(&p, &files);
            for fc in &p.files {
                let _ = base_text(fc, "unrelated\n");
            }
        }
    }
}
