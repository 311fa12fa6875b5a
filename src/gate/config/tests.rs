use super::*;

#[test]
fn defaults_and_overrides() {
    assert_eq!(parse_config("c.yml", "").unwrap(), Config::default());
    let c = parse_config(
        "c.yml",
        "policy:\n  strict_lines: true\n  max_freeze_days: 30\n  caveat_conclusion: neutral\nowners:\n  billing-oncall: '@acme/billing'\n",
    )
    .unwrap();
    assert!(c.policy.strict_lines);
    assert_eq!(c.policy.max_freeze_days, Some(30));
    assert_eq!(c.policy.caveat_conclusion, CaveatConclusion::Neutral);
    assert_eq!(c.owners["billing-oncall"], "@acme/billing");
    assert_eq!(c.ledger, ".github/flake-ledger.json");
}

#[test]
fn unknown_keys_are_rejected_with_their_line() {
    let e = parse_config("c.yml", "policy:\n  strict_lines: true\n  strict_line: true\n").unwrap_err();
    assert_eq!(e.location.line, Some(3), "{e}");
    assert!(e.message.contains("unknown field `strict_line`"), "{e}");
    let e = parse_config("c.yml", "polcy: {}\n").unwrap_err();
    assert_eq!(e.location.line, Some(1), "{e}");
}

#[test]
fn bad_values() {
    let e = parse_config("c.yml", "policy:\n  strict_lines: maybe\n").unwrap_err();
    assert_eq!(e.location.line, Some(2), "{e}");
    let e = parse_config("c.yml", "owners:\n  x: not-a-handle\n").unwrap_err();
    assert!(e.message.contains("GitHub handle"), "{e}");
    let e = parse_config("c.yml", "policy:\n  no_evidence_paths: ['a/[']\n").unwrap_err();
    assert!(e.message.contains("bad glob"), "{e}");
}

#[test]
fn signal_knobs() {
    let c = parse_config(
        "c.yml",
        "policy:\n  signals:\n    weakened_test: inconclusive\n    self_witness: off\n    no_results: caveat\n",
    )
    .unwrap();
    let s = &c.policy.signals;
    assert_eq!(s.get(Signal::WeakenedTest), Some(SignalLevel::Inconclusive));
    assert_eq!(
        s.get(Signal::SelfWitness),
        Some(SignalLevel::Off),
        "`off` is a word, not YAML 1.1's false"
    );
    assert_eq!(s.get(Signal::NoResults), Some(SignalLevel::Caveat));
    assert_eq!(s.get(Signal::PhaseOnlyWitness), None);
    assert_eq!(s.for_code(ReasonCode::NoResults), Some(SignalLevel::Caveat));
    assert_eq!(s.for_code(ReasonCode::Failed), None, "not a signal");
    // A typo in a key or a value names the file, the line and what is allowed.
    let e = parse_config("c.yml", "policy:\n  signals:\n    weakend_test: off\n").unwrap_err();
    assert_eq!(e.location.file, "c.yml");
    assert_eq!(e.location.line, Some(3), "{e}");
    assert!(e.message.contains("unknown field `weakend_test`"), "{e}");
    assert!(e.message.contains("weakened_test"), "lists the known keys: {e}");
    let e = parse_config("c.yml", "policy:\n  signals:\n    self_witness: fail\n").unwrap_err();
    assert_eq!(e.location.line, Some(3), "{e}");
    assert!(e.message.contains("unknown variant `fail`"), "{e}");
    assert!(e.message.contains("`inconclusive`"), "{e}");
    // Only caveat signals are knobs: the blocking codes are not.
    let e = parse_config("c.yml", "policy:\n  signals:\n    failed: off\n").unwrap_err();
    assert!(e.message.contains("unknown field `failed`"), "{e}");
    let e = parse_config(
        "c.yml",
        "policy:\n  strict_lines: true\n  signals:\n    blind_lines: off\n",
    )
    .unwrap_err();
    assert!(e.message.contains("strict_lines"), "{e}");
    assert!(parse_config(
        "c.yml",
        "policy:\n  strict_lines: true\n  signals:\n    blind_lines: inconclusive\n"
    )
    .is_ok());
}

#[test]
fn handles() {
    for (s, ok) in [
        ("@a", true),
        ("@org/team-x", true),
        ("a", false),
        ("@", false),
        ("@a/", false),
        ("@a b", false),
    ] {
        assert_eq!(is_handle(s), ok, "{s}");
    }
}

#[test]
fn globs() {
    let g = PathGlobs::new(&Policy::default().no_evidence_paths).unwrap();
    for (p, m) in [
        ("README.md", true),
        ("a/b/c.md", true),
        ("docs/x.py", true),
        ("LICENSE", true),
        ("src/a.py", false),
        ("src/docs/a.py", false),
    ] {
        assert_eq!(g.is_match(p), m, "{p}");
    }
}
