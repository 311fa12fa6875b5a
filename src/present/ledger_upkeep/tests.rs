use super::*;
use crate::gate::ledger::maintain::Pending;
use chrono::NaiveDate;

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

fn plan() -> Plan {
    Plan {
        changes: vec![
            Change::Prune {
                test: "tests/t.py::test_ok".into(),
                owner: "billing-oncall".into(),
                runs: 60,
                evidence: "0 of 60 runs failed: not shown unstable at p ≥ 3.8 % (90 % chance)".into(),
            },
            Change::Renew {
                test: "tests/t.py::test_flaky".into(),
                owner: "@alice".into(),
                was: day("2026-11-18"),
                expires: day("2026-12-04"),
                evidence: "failed 3 of 200 runs since 2026-10-01 (last: #481, run 9912, probe of abc1234, 2026-11-30)"
                    .into(),
            },
            Change::Freeze {
                test: "tests/evil.py::test_<script>alert(1)</script>[@everyone]".into(),
                owner: None,
                expires: day("2026-12-04"),
                evidence: "failed 1 of 9 runs".into(),
            },
        ],
        pending: vec![Pending {
            test: "tests/t.py::test_new".into(),
            owner: Some("Jane Doe".into()),
            why: "10 passing runs in a row so far; 50 would prune it".into(),
            wants_runs: true,
            runs_wanted: 40,
        }],
        ledger: Some("{\n  \"frozen\": []\n}\n".into()),
    }
}

fn config() -> Config {
    let mut c = Config::default();
    c.owners.insert("billing-oncall".into(), "@octo-org/billing".into());
    c
}

#[test]
fn the_pull_request_lists_each_change_with_its_evidence_and_mentions_the_owners() {
    let body = ledger_pull_body(&plan(), ".github/flake-ledger.json", "main", &config());
    assert!(body.starts_with(LEDGER_PULL_MARKER));
    assert!(
        body.contains("**prune** `tests/t.py::test_ok` (owner @octo-org/billing): 0 of 60 runs failed"),
        "{body}"
    );
    assert!(
        body.contains("**renew** `tests/t.py::test_flaky` (owner @alice) from 2026-11-18 to 2026-12-04"),
        "{body}"
    );
    assert!(body.contains("**no owner**"), "{body}");
    assert!(body.contains("### Not decided yet"), "{body}");
    // A plain name is never a mention; hostile text stays inert.
    assert!(!body.contains("@Jane"), "{body}");
    // Outside code spans nothing hostile is live.
    let prose: String = body.split('`').step_by(2).collect();
    assert!(!prose.contains("<script>"), "{body}");
    assert!(!prose.contains("@everyone"), "{body}");
    let never = Config {
        mentions: Mentions::Never,
        ..config()
    };
    let quiet = ledger_pull_body(&plan(), ".github/flake-ledger.json", "main", &never);
    let prose: String = quiet.split('`').step_by(2).collect();
    assert!(!prose.contains("@alice") && !prose.contains("@octo-org"), "{quiet}");
}

#[test]
fn the_patch_applies_to_the_old_ledger() {
    let old = "{\n  \"frozen\": [\n    {\n      \"test\": \"a\"\n    }\n  ]\n}\n";
    let new = "{\n  \"frozen\": []\n}\n";
    let patch = ledger_patch(old, new, ".github/flake-ledger.json");
    assert!(
        patch.starts_with("--- a/.github/flake-ledger.json\n+++ b/.github/flake-ledger.json\n@@"),
        "{patch}"
    );
    let parsed = diffy::Patch::from_str(&patch).unwrap();
    assert_eq!(diffy::apply(old, &parsed).unwrap(), new);
}

#[test]
fn the_issue_section_offers_the_patch_without_the_permission() {
    let note = UpkeepNote {
        pull: None,
        patch: Some(ledger_patch(
            "{\n  \"frozen\": [1]\n}\n",
            "{\n  \"frozen\": []\n}\n",
            "l.json",
        )),
        asked: vec!["tests/t.py::test_new".into()],
        problems: vec!["the evidence workflow has no workflow_dispatch trigger".into()],
    };
    let s = upkeep_section(&note, Some(&plan()), &config());
    assert!(s.contains("### Keeping the ledger"), "{s}");
    assert!(s.contains("```diff\n--- a/l.json"), "{s}");
    assert!(s.contains("flakegate ledger maintain"), "{s}");
    assert!(s.contains("Probe runs asked"), "{s}");
    assert!(
        s.contains("⚠️ the evidence workflow has no workflow\\_dispatch trigger")
            || s.contains("⚠️ the evidence workflow has no workflow_dispatch trigger"),
        "{s}"
    );
    let with_pull = UpkeepNote {
        pull: Some(12),
        ..UpkeepNote::default()
    };
    assert!(upkeep_section(&with_pull, Some(&plan()), &config()).contains("in #12"));
    assert_eq!(upkeep_section(&UpkeepNote::default(), None, &config()), "");
}
