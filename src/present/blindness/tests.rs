//! The renderings of the shop's map (real pytest and coverage.py output), and of the same map
//! with a hostile file name, test id and owner.

use super::*;
use crate::gate::blindness::{map, BlindnessInput};
use crate::gate::config::Policy;
use crate::gate::coverage::json::read_json;
use crate::gate::coverage::{Coverage, PathMatcher};
use crate::gate::history::Stabilities;
use crate::gate::ledger::parse_ledger;
use crate::gate::nodeid::TestId;

const COVERAGE: &str = include_str!("../../../examples/shop/evidence/coverage.json");
const LEDGER: &str = include_str!("../../../examples/shop/flake-ledger.json");
const REFUNDS: &str = include_str!("../../../tests/fixtures/project/src/shop/refunds.py");

const EVIL_PATH: &str = "src/shop/<script>alert(1)</script>\"' ](https://evil.example) @path-owner.py";
const EVIL_TEST: &str =
    "tests/test_refunds.py::test_gateway_retry[<script>alert(2)</script>\"'](https://evil.example)@node-owner]";
const EVIL_OWNER: &str = "@ledger-owner <script>alert(3)</script> \"'](https://evil.example)";

fn shop_map(cov: &Coverage, ledger_text: &str, sources: &BTreeMap<String, String>) -> BlindnessMap {
    let ledger = parse_ledger("flake-ledger.json", ledger_text, None).unwrap();
    map(&BlindnessInput {
        coverage: cov,
        coverage_file: "coverage.json",
        ledger: &ledger,
        stab: Stabilities::new(None, None),
        results: None,
        policy: &Policy::default(),
        sources,
        today: chrono::NaiveDate::from_ymd_opt(2026, 11, 20).unwrap(),
    })
    .unwrap()
}

/// The shop's coverage with refunds.py renamed to [`EVIL_PATH`] and the retry test to [`EVIL_TEST`].
fn hostile_coverage() -> Coverage {
    let mut cov = read_json("coverage.json", COVERAGE.as_bytes(), &PathMatcher::every_file()).unwrap();
    let mut fc = cov.files.remove("src/shop/refunds.py").unwrap();
    let old = TestId::new("tests/test_refunds.py::test_gateway_retry");
    for ws in fc.witnesses.values_mut() {
        if let Some(p) = ws.remove(&old) {
            ws.insert(TestId::new(EVIL_TEST), p);
        }
    }
    fc.tests.remove(&old);
    fc.tests.insert(TestId::new(EVIL_TEST));
    cov.files.insert(EVIL_PATH.to_string(), fc);
    cov
}

fn hostile_ledger() -> String {
    serde_json::json!({"frozen": [{
        "test": EVIL_TEST, "owner": EVIL_OWNER, "expires": "2027-01-31",
        "reason": "<script>alert(4)</script>"
    }, {
        "test": "tests/test_gone.py::test_<img/src=x/onerror=alert(5)>", "owner": "@gone-owner", "expires": "2027-01-31"
    }]})
    .to_string()
}

/// The parts of each line outside `` `…` `` code spans (the hostile strings hold no backtick).
fn outside_code(md: &str) -> Vec<String> {
    md.lines()
        .flat_map(|l| l.split('`').step_by(2).map(str::to_string).collect::<Vec<_>>())
        .collect()
}

#[test]
fn markdown_names_owners_tests_and_files() {
    let cov = read_json("coverage.json", COVERAGE.as_bytes(), &PathMatcher::every_file()).unwrap();
    let m = shop_map(&cov, LEDGER, &BTreeMap::new());
    let md = markdown(&m).unwrap();
    assert!(md.contains("**7 are blind**"), "{md}");
    // The retry test: unstable? Not here (no probe): frozen, owner, its only-witness lines.
    let row = md.lines().find(|l| l.contains("test_gateway_retry")).unwrap();
    assert!(row.contains("| frozen |") && row.contains("lines 11-15"), "{row}");
    // Owners are named in code spans, never mentioned.
    assert!(
        md.contains("`@shop/payments`") && outside_code(&md).iter().all(|t| !t.contains('@')),
        "{md}"
    );
    assert!(md.contains("| `src/shop/refunds.py` | 5 |"), "{md}");
}

#[test]
fn hostile_strings_are_inert_in_markdown() {
    let m = shop_map(&hostile_coverage(), &hostile_ledger(), &BTreeMap::new());
    assert_eq!(m.totals.blind, 5);
    assert_eq!(m.freezes_with_no_coverage.len(), 1);
    let md = markdown(&m).unwrap();
    // What renders as text (outside code spans) has no tag, link or mention; inside a code
    // span nothing renders.
    for text in outside_code(&md) {
        for bad in [
            "<script",
            "<img",
            "](https://",
            "@path-owner",
            "@node-owner",
            "@ledger-owner",
            "@gone-owner",
        ] {
            assert!(!text.contains(bad), "{bad} in {text:?} of:\n{md}");
        }
    }
    // Each row stays one table row.
    for l in md.lines().filter(|l| l.starts_with('|')) {
        assert!(l.ends_with('|'), "{l}");
    }
    assert!(
        md.contains("alert(1)") && md.contains("alert(3)"),
        "named, not dropped:\n{md}"
    );
}

#[test]
fn hostile_strings_are_inert_in_html() {
    let sources = Sources {
        texts: BTreeMap::from([(
            EVIL_PATH.to_string(),
            REFUNDS.replace("delay = 0", "delay = 0  # </td><script>alert(6)</script>"),
        )]),
        notes: BTreeMap::new(),
    };
    let m = shop_map(&hostile_coverage(), &hostile_ledger(), &sources.texts);
    let pages = html(&m, &sources).unwrap();
    assert_eq!(pages.len(), m.files.len() + 1);
    for (name, page) in &pages {
        assert!(
            name == "index.html" || (name.starts_with("file-") && name.ends_with(".html")),
            "{name}"
        );
        for bad in ["<script", "<img", "href=\"http", "src=\"http"] {
            assert!(!page.contains(bad), "{bad} in {name}:\n{page}");
        }
    }
    let evil_page = &pages.iter().find(|(n, _)| *n == page_name(EVIL_PATH)).unwrap().1;
    assert!(evil_page.contains("&lt;script&gt;alert(1)"), "{evil_page}");
    assert!(
        evil_page.contains("&lt;script&gt;alert(6)"),
        "the source too:\n{evil_page}"
    );
    // The blind line names its hostile test, escaped.
    let l12 = evil_page.lines().find(|l| l.contains("id=\"L12\"")).unwrap();
    assert!(
        l12.contains("class=\"blind\"") && l12.contains("&lt;script&gt;alert(2)"),
        "{l12}"
    );
}

#[test]
fn a_file_without_its_source_shows_its_lines_and_why() {
    let cov = read_json("coverage.json", COVERAGE.as_bytes(), &PathMatcher::every_file()).unwrap();
    let mut m = shop_map(&cov, LEDGER, &BTreeMap::new());
    let sources = Sources {
        texts: BTreeMap::from([("src/shop/refunds.py".to_string(), REFUNDS.to_string())]),
        notes: BTreeMap::from([(
            "src/shop/cart.py".to_string(),
            "the source is not UTF-8 (an invalid byte at offset 3): lines are shown by number only".to_string(),
        )]),
    };
    for f in &mut m.files {
        f.note = sources.notes.get(&f.path).cloned();
    }
    let pages = html(&m, &sources).unwrap();
    let cart = &pages
        .iter()
        .find(|(n, _)| *n == page_name("src/shop/cart.py"))
        .unwrap()
        .1;
    assert!(cart.contains("not UTF-8") && cart.contains("id=\"L8\""), "{cart}");
    let pricing = &pages
        .iter()
        .find(|(n, _)| *n == page_name("src/shop/pricing.py"))
        .unwrap()
        .1;
    assert!(pricing.contains("the source was not read"), "{pricing}");
    let refunds = &pages
        .iter()
        .find(|(n, _)| *n == page_name("src/shop/refunds.py"))
        .unwrap()
        .1;
    // Every line of the source is shown; the blank line 10 is plain.
    assert!(refunds.contains("<tr id=\"L10\" class=\"plain\">"), "{refunds}");
    assert!(refunds.contains("<tr id=\"L12\" class=\"blind\""), "{refunds}");
    let index = &pages[0].1;
    assert!(
        index.contains(&format!("href=\"{}\"", page_name("src/shop/refunds.py"))),
        "{index}"
    );
}

#[test]
fn hostile_strings_are_inert_in_the_expired_freezes_issue() {
    let ledger_text = hostile_ledger().replace("2027-01-31", "2026-11-19");
    let m = shop_map(&hostile_coverage(), &ledger_text, &BTreeMap::new());
    let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 20).unwrap();
    let kept = crate::gate::blindness::CodebaseMap::of(&m, "main", "0123456789abcdef", today);
    let ledger = parse_ledger("flake-ledger.json", &ledger_text, None).unwrap();
    let config = crate::gate::config::Config::default();
    let notice = crate::gate::expiry::expiry_notice(&ledger, &config, today);
    let body = crate::present::expired_freezes::expired_freezes_body(
        &notice,
        ".github/flake-ledger.json",
        "main",
        today,
        crate::gate::config::Mentions::Blocking,
        Some(&kept),
        "",
    );
    let section = body.split("What these freezes leave blind").nth(1).expect(&body);
    let table: String = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        table.contains("alert(1)") && table.contains("| 5 |"),
        "named, not dropped:\n{body}"
    );
    for text in outside_code(&table) {
        for bad in ["<script", "<img", "](https://", "@path-owner", "@ledger-owner"] {
            assert!(!text.contains(bad), "{bad} in {text:?} of:\n{body}");
        }
    }
    for l in table.lines().filter(|l| l.starts_with('|')) {
        assert!(
            l.ends_with('|') && l.matches(" | ").count() == 2,
            "one row, three cells: {l}"
        );
    }
}
