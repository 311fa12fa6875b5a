//! Every text flakegate publishes, rendered as GitHub renders it, over every fixture case and
//! every entry of the agent-proofing corpus, with and without a base probe: no backslash escape
//! or backtick shows, no code span breaks, no markdown goes into a plain-text field; the
//! sentences fit the verdict. The main shapes are kept as rendered HTML pages (snapshots) to
//! look at.

use super::check_run::{cancelled, completed, queued};
use super::comment::comment_body;
use super::expired_freezes::expired_freezes_body;
use super::gfm;
use super::shared_head::{shared_head, SharedHeadLine};
use super::test_cases::{all_fixture_dirs, report_probed};
use crate::gate::config::{Config, Mentions};
use crate::gate::report::{Report, Verdict};
use crate::github::CheckRunFields;

const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";
const RUN_URL: &str = "https://github.com/shop/shop/runs/4242";

/// Every markdown text and plain-text field of `fields`, with what is wrong in each.
fn check_run_problems(fields: &CheckRunFields) -> Vec<String> {
    let mut out = Vec::new();
    let Some(o) = &fields.output else { return out };
    out.extend(
        gfm::plain_text_problems(&o.title)
            .into_iter()
            .map(|p| format!("title: {p}")),
    );
    out.extend(gfm::problems(&o.summary).into_iter().map(|p| format!("summary: {p}")));
    if let Some(t) = &o.text {
        out.extend(gfm::problems(t).into_iter().map(|p| format!("text: {p}")));
    }
    for a in &o.annotations {
        let where_ = format!("annotation {}:{}", a.path, a.start_line);
        for p in a.title.iter().flat_map(|t| gfm::plain_text_problems(t)) {
            out.push(format!("{where_} title: {p}"));
        }
        for p in gfm::plain_text_problems(&a.message) {
            out.push(format!("{where_}: {p}"));
        }
    }
    out
}

/// Whether `line` calls a test stable ("stable witness", "1 stable test"), not "unstable" nor
/// asking for one ("add a stable test").
fn calls_stable(line: &str) -> bool {
    line.match_indices("stable ").any(|(i, _)| {
        let before = &line[..i];
        let rest = &line[i + "stable ".len()..];
        !before.ends_with(|c: char| c.is_alphabetic())
            && !before.ends_with("add a ")
            && (rest.starts_with("test") || rest.starts_with("witness"))
    }) || line.contains("are stable")
}

/// What the texts of one report say that is wrong for its verdict.
fn sentence_problems(r: &Report, summary: &str, comment: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let texts: Vec<&str> = std::iter::once(summary).chain(comment).collect();
    for t in &texts {
        if t.contains("INCONCLUSIVE blocks exactly like FAIL") && r.verdict != Verdict::Inconclusive {
            out.push(format!("says INCONCLUSIVE blocks like FAIL on a {}", r.verdict));
        }
        if r.probe.is_none() {
            for l in t.lines().filter(|l| calls_stable(l)) {
                out.push(format!("calls a witness stable although nothing probed it: {l}"));
            }
        }
        if t.contains("nobody is asked to act") && r.verdict.blocks() {
            out.push("says nobody must act while merge is blocked".into());
        }
        if t.contains("templates/workflows") && !t.contains("https://") {
            out.push("points to a path in flakegate's own repository".into());
        }
    }
    // The headline is one line, and no reason's sentence is said twice in the summary.
    let headline = summary.lines().next().unwrap_or("");
    for reason in &r.reasons {
        let m = crate::gate::inert::message(&reason.message);
        if m.len() > 40 && summary.matches(m.as_str()).count() > 1 {
            out.push(format!("the summary repeats {m:?}"));
        }
        if m.len() > 40 && headline.contains(m.as_str()) {
            out.push("the headline repeats a reason".into());
        }
    }
    // A test that failed on head is never listed among the stable (or passing) witnesses.
    for block in summary.split("<details><summary>").skip(1) {
        let block = block.split("</details>").next().unwrap_or("");
        if !block.lines().next().unwrap_or("").contains("witness") {
            continue;
        }
        for f in r.results.failures.iter().filter(|f| f.counts) {
            if block.contains(&crate::gate::inert::code(&f.test)) {
                out.push(format!("lists {} among the witnesses that passed", f.test));
            }
        }
    }
    // Verdict, merge, who acts: in the first lines.
    let top: Vec<&str> = summary.lines().filter(|l| !l.trim().is_empty()).take(3).collect();
    if r.verdict.blocks() && !top.iter().any(|l| l.contains("blocks merge")) {
        out.push(format!("the first lines do not say it blocks merge: {top:?}"));
    }
    if r.probe.is_none() && r.files.iter().any(|f| !f.stable_lines.is_empty()) {
        let said = summary.matches("A probe (`flakegate probe`").count();
        if said != 1 {
            out.push(format!("says {said} times what a probe would add"));
        }
    }
    out
}

/// Every template over every fixture, probed and not: renders as meant, says what is true.
#[test]
fn every_text_renders_as_meant_over_the_whole_corpus() {
    let mut failures = Vec::new();
    let mut seen = 0;
    for (name, dir) in all_fixture_dirs() {
        for probed in [true, false] {
            let config = Config::default();
            let r = report_probed(&dir, &config, probed);
            let fields = completed(&r, &config, HEAD);
            let mut problems = check_run_problems(&fields);
            let summary = fields.output.as_ref().map(|o| o.summary.clone()).unwrap_or_default();
            let comment = comment_body(&r, &config, Some("earlier"), Some(RUN_URL));
            if let Some(c) = &comment {
                problems.extend(gfm::problems(c).into_iter().map(|p| format!("comment: {p}")));
            }
            problems.extend(sentence_problems(&r, &summary, comment.as_deref()));
            let md = super::record::render(&r, &config, super::record::Format::Markdown, None).unwrap();
            assert_eq!(md, summary, "{name}: --format markdown prints the check run's summary");
            for p in problems {
                failures.push(format!("{name} ({}): {p}", if probed { "probed" } else { "no probe" }));
            }
            seen += 1;
        }
    }
    assert!(seen > 40, "the whole corpus: {seen}");
    for q in [queued(HEAD, &Config::default()), cancelled(HEAD, Some("dequeued"))] {
        failures.extend(check_run_problems(&q));
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The expired-freezes issue over the fixtures' ledgers, with each mention setting.
#[test]
fn the_expired_freezes_issue_renders_as_meant() {
    for (name, dir) in all_fixture_dirs() {
        let own = dir.join("ledger.json");
        let path = if own.is_file() {
            own
        } else {
            super::test_cases::fixtures().join("project/.github/flake-ledger.json")
        };
        let Ok(ledger) = crate::gate::ledger::parse_ledger("l", &std::fs::read_to_string(&path).unwrap(), None) else {
            continue;
        };
        let today = chrono::NaiveDate::from_ymd_opt(2026, 12, 31).unwrap();
        let notice = crate::gate::expiry::expiry_notice(&ledger, &Config::default(), today);
        if notice.is_empty() {
            continue;
        }
        for m in [Mentions::Blocking, Mentions::Never] {
            let body = expired_freezes_body(&notice, ".github/flake-ledger.json", "main", today, m, None, "");
            assert!(
                gfm::problems(&body).is_empty(),
                "{name}: {:?}\n{body}",
                gfm::problems(&body)
            );
            assert!(body.contains("every pull request in this repository"), "{body}");
            let mentions = body.lines().any(|l| l.starts_with('@'));
            assert_eq!(
                mentions,
                m == Mentions::Blocking && !notice.mentions.is_empty(),
                "{body}"
            );
        }
    }
}

fn fixture(name: &str) -> std::path::PathBuf {
    all_fixture_dirs()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
        .1
}

fn snapshot_page(name: &str, md: &str) {
    let page = gfm::page(name, md);
    insta::with_settings!({snapshot_path => "../../tests/snapshots/rendered", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name.to_string(), page);
    });
}

/// The main shapes as GitHub shows them: the check run, the comment and the issue of a PASS,
/// a caveat, each blocking reason, without a probe, a shared head and a merge group.
#[test]
fn the_main_shapes_rendered() {
    let config = Config::default();
    let shapes: &[(&str, &str, bool)] = &[
        ("pass", "honest_bug_fix", true),
        ("caveat_some_frozen", "some_frozen", true),
        ("caveat_weakened_test", "adv_sleep", true),
        ("failed", "failed", true),
        ("failed_not_probed", "failed", false),
        ("frozen_only", "frozen_only", true),
        ("uncovered", "uncovered", true),
        ("expired", "expired", true),
        ("invalid_ledger", "invalid_ledger", true),
        ("evidence_config_changed", "adv_workflow_edited", true),
        ("pass_not_probed", "all_stable", false),
    ];
    for (shape, fixture_name, probed) in shapes {
        let r = report_probed(&fixture(fixture_name), &config, *probed);
        let fields = completed(&r, &config, HEAD);
        let o = fields.output.as_ref().unwrap();
        let annotations: Vec<String> = o
            .annotations
            .iter()
            .map(|a| {
                format!(
                    "- **{}** `{}:{}` — {}",
                    a.title.as_deref().unwrap_or(""),
                    a.path,
                    a.start_line,
                    a.message
                )
            })
            .collect();
        let check = format!(
            "# {}\n\n{}\n\n---\n\n{}",
            o.title,
            o.summary,
            if annotations.is_empty() {
                String::new()
            } else {
                format!("Annotations:\n\n{}\n", annotations.join("\n"))
            }
        );
        snapshot_page(&format!("{shape}_check_run"), &check);
        if let Some(c) = comment_body(&r, &config, None, Some(RUN_URL)) {
            snapshot_page(&format!("{shape}_comment"), &c);
        }
    }
    // A frozen witness, with what it alone witnesses across the base branch (its map).
    let mut r = report_probed(&fixture("frozen_only"), &config, true);
    let map = super::test_cases::codebase_map(&fixture("frozen_only"), &config);
    r.codebase = map.for_witnesses(r.witnesses.frozen.iter().chain(&r.witnesses.unstable));
    assert!(r.codebase.is_some(), "the map knows the frozen witness");
    let with_map = completed(&r, &config, HEAD);
    let without = completed(&report_probed(&fixture("frozen_only"), &config, true), &config, HEAD);
    assert_eq!(
        with_map.conclusion, without.conclusion,
        "the numbers never change a verdict"
    );
    assert_eq!(
        with_map.output.as_ref().unwrap().title,
        without.output.as_ref().unwrap().title
    );
    let summary = with_map.output.unwrap().summary;
    assert!(summary.contains("across `main`"), "{summary}");
    snapshot_page("frozen_only_codebase_check_run", &summary);
    // A head two pull requests share: the table above the worst verdict's summary.
    let r = report_probed(&fixture("frozen_only"), &config, true);
    let lines = [
        SharedHeadLine {
            pr: 7,
            base_ref: "main",
            base_sha: "1111111111111111",
            verdict: "INCONCLUSIVE",
        },
        SharedHeadLine {
            pr: 9,
            base_ref: "release/1.2",
            base_sha: "2222222222222222",
            verdict: "PASS",
        },
    ];
    let shared = shared_head(completed(&r, &config, HEAD), &lines, 7);
    assert!(
        check_run_problems(&shared).is_empty(),
        "{:?}",
        check_run_problems(&shared)
    );
    snapshot_page("shared_head_check_run", &shared.output.unwrap().summary);
    // A merge group that left the queue before its evidence was judged.
    let gone = cancelled(HEAD, Some("dequeued")).output.unwrap();
    snapshot_page(
        "merge_group_cancelled_check_run",
        &format!("# {}\n\n{}", gone.title, gone.summary),
    );
    // The expired-freezes issue.
    let ledger_text = std::fs::read_to_string(fixture("expired").join("ledger.json"))
        .or_else(|_| std::fs::read_to_string(super::test_cases::fixtures().join("project/.github/flake-ledger.json")))
        .unwrap();
    let ledger = crate::gate::ledger::parse_ledger("l", &ledger_text, None).unwrap();
    let today = chrono::NaiveDate::from_ymd_opt(2026, 12, 31).unwrap();
    let notice = crate::gate::expiry::expiry_notice(&ledger, &config, today);
    let issue = expired_freezes_body(
        &notice,
        ".github/flake-ledger.json",
        "main",
        today,
        Mentions::Blocking,
        Some(&super::test_cases::codebase_map(&fixture("expired"), &config)),
        "",
    );
    assert!(issue.contains("What these freezes leave blind"), "{issue}");
    snapshot_page("expired_freezes_issue", &issue);
    ledger_upkeep_pages(&ledger_text, &config, today);
}

/// The ledger's upkeep as people read it: the App's pull request, and the expired-freezes
/// issue of an installation that did not grant the permission to open it (the patch instead).
fn ledger_upkeep_pages(ledger_text: &str, config: &Config, today: chrono::NaiveDate) {
    use crate::gate::history::{History, Source, Stabilities, TestHistory};
    use crate::gate::ledger::maintain::{plan, MaintainPolicy};
    use crate::present::ledger_upkeep::{ledger_patch, ledger_pull_body, upkeep_section, UpkeepNote};
    let ledger = crate::gate::ledger::parse_ledger("l", ledger_text, None).unwrap();
    let source = Source {
        sha: "9fceb02d0ae598e95dc970b74767f19372d61af8".into(),
        kind: crate::gate::history::RunKind::Probe,
        pr: Some(481),
        run_id: Some(9912),
        attempt: Some(1),
        date: today - chrono::Days::new(3),
    };
    let mut h = History {
        window_days: 90,
        recovery_runs: 50,
        ..History::default()
    };
    // The first entry still unstable, the second passing long enough, a test nobody froze unstable.
    let tests: Vec<&str> = ledger.entries.iter().map(|e| e.test.as_str()).collect();
    h.tests.insert(
        crate::gate::TestId::new(tests[0]),
        TestHistory {
            runs: 212,
            failures: 3,
            since: Some(today - chrono::Days::new(60)),
            unstable_on: Some(source.clone()),
            last_failure: Some(source.clone()),
            passes_since_failure: 4,
            ..TestHistory::default()
        },
    );
    if let Some(second) = tests.get(1) {
        h.tests.insert(
            crate::gate::TestId::new(*second),
            TestHistory {
                runs: 80,
                failures: 0,
                since: Some(today - chrono::Days::new(60)),
                passes_since_failure: 80,
                ..TestHistory::default()
            },
        );
    }
    let stray = crate::gate::TestId::new("tests/test_cart.py::TestCart::test_checkout_total");
    h.tests.insert(
        stray.clone(),
        TestHistory {
            runs: 40,
            failures: 2,
            since: Some(today - chrono::Days::new(20)),
            unstable_on: Some(source.clone()),
            last_failure: Some(source),
            passes_since_failure: 1,
            ..TestHistory::default()
        },
    );
    let stab = Stabilities::new(None, Some(&h));
    let owner_of = |_: &crate::gate::TestId| Some("@shop/cart".to_string());
    let p = plan(&ledger, &stab, &[stray], &owner_of, &MaintainPolicy::default(), today);
    assert!(p.ledger.is_some(), "{p:?}");
    snapshot_page(
        "ledger_pull_request",
        &ledger_pull_body(&p, ".github/flake-ledger.json", "main", config),
    );
    let note = UpkeepNote {
        pull: None,
        patch: p
            .ledger
            .as_deref()
            .map(|new| ledger_patch(ledger_text, new, ".github/flake-ledger.json")),
        asked: p.wanted_runs().iter().map(|t| t.to_string()).collect(),
        problems: vec![],
    };
    let notice = crate::gate::expiry::expiry_notice(&ledger, config, today);
    let section = upkeep_section(&note, Some(&p), config);
    let issue = expired_freezes_body(
        &notice,
        ".github/flake-ledger.json",
        "main",
        today,
        Mentions::Blocking,
        None,
        &section,
    );
    snapshot_page("expired_freezes_issue_with_patch", &issue);
}

/// Owners are @-mentioned only where they must act before merge, unless the config says
/// otherwise; a caveat names them without the `@`.
#[test]
fn mentions_follow_the_config() {
    let caveat = report_probed(&fixture("some_frozen"), &Config::default(), true);
    assert_eq!(caveat.verdict, Verdict::PassWithCaveat);
    let body = comment_body(&caveat, &Config::default(), None, None).unwrap();
    assert!(!body.contains("@shop/payments"), "a caveat mentions nobody: {body}");
    assert!(body.contains("**shop/payments**"), "{body}");
    let always = Config {
        mentions: Mentions::Always,
        ..Config::default()
    };
    let body = comment_body(&caveat, &always, None, None).unwrap();
    assert!(body.contains("@shop/payments"), "{body}");

    let blocking = report_probed(&fixture("frozen_only"), &Config::default(), true);
    assert!(blocking.verdict.blocks());
    let handles: Vec<&str> = blocking
        .blind_owners
        .iter()
        .filter_map(|o| o.handle.as_deref())
        .collect();
    let body = comment_body(&blocking, &Config::default(), None, None).unwrap();
    for h in &handles {
        assert!(body.contains(h), "{h} must act before merge: {body}");
    }
    let never = Config {
        mentions: Mentions::Never,
        ..Config::default()
    };
    let body = comment_body(&blocking, &never, None, None).unwrap();
    assert!(!body.contains('@'), "{body}");
}
