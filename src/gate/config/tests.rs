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

/// `policy.signals` in every shape YAML can give it: what parses (as the config
/// serialises it again) and the errors of what does not, byte for byte — an unknown
/// key's error lists the known ones in their order.
#[test]
fn signals_parse_and_fail_exactly_so() {
    let cases = [
        "policy:\n  signals:\n    weakend_test: off\n",
        "policy:\n  signals:\n    weakened_test: off\n    weakened_test: caveat\n",
        "policy:\n  signals:\n    weakened_test: ~\n    head_flaky: inconclusive\n    self_witness: off\n",
        "policy:\n  signals: {no_results: caveat, failed: off}\n",
        "policy:\n  signals:\n    0: off\n",
        "policy:\n  signals: [off, caveat]\n",
        "policy:\n  signals: [off, caveat, ~, ~, ~, ~, ~, inconclusive]\n",
        "policy:\n  signals: [off, caveat, ~, ~, ~, ~, ~, ~, off]\n",
        "policy:\n  signals: 3\n",
        "policy:\n  signals: ~\n",
        "policy:\n  signals: {}\n",
    ];
    let got: Vec<String> = cases
        .iter()
        .map(|text| match parse_config("c.yml", text) {
            Ok(c) => format!("ok {}", serde_json::to_string(&c.policy.signals).unwrap()),
            Err(e) => format!("error {e}"),
        })
        .collect();
    let unknown = |key: &str, at: &str| {
        format!("error c.yml:{at}: policy.signals: unknown field `{key}`, expected one of `weakened_test`, `self_witness`, `phase_only_witness`, `ledger_edited`, `blind_lines`, `some_frozen`, `no_results`, `head_flaky`, `flaky_unchanged`")
    };
    let not_a_map =
        |what: &str| format!("error c.yml:2:12: policy.signals: invalid type: {what}, expected struct Signals");
    assert_eq!(
        got,
        [
            unknown("weakend_test", "3:5"),
            "error c.yml:3:5: policy.signals: duplicate field `weakened_test`".into(),
            r#"ok {"self_witness":"off","head_flaky":"inconclusive"}"#.into(),
            unknown("failed", "2:33"),
            unknown("0", "3:5"),
            not_a_map("sequence"),
            not_a_map("sequence"),
            not_a_map("sequence"),
            not_a_map("integer `3`"),
            not_a_map("unit value"),
            "ok {}".into(),
        ]
    );
    // JSON (a config is YAML, but the type reads JSON too): a list of levels in key order.
    let json = [
        r#"{"weakend_test": "off"}"#,
        r#"{"weakened_test": null, "no_results": "off"}"#,
        r#"["off", null, "inconclusive"]"#,
        r#"["off", null, "inconclusive", null, null, null, null, "caveat"]"#,
        r#"["off", null, "inconclusive", null, null, null, null, "caveat", "off"]"#,
        r#"["off", null, "inconclusive", null, null, null, null, "caveat", "off", "off"]"#,
        r#"{"0": "off"}"#,
        "7",
    ];
    let got: Vec<String> = json
        .iter()
        .map(|text| match serde_json::from_str::<Signals>(text) {
            Ok(s) => format!("ok {}", serde_json::to_string(&s).unwrap()),
            Err(e) => format!("error {e}"),
        })
        .collect();
    let unknown = |key: &str, column: usize| {
        format!("error unknown field `{key}`, expected one of `weakened_test`, `self_witness`, `phase_only_witness`, `ledger_edited`, `blind_lines`, `some_frozen`, `no_results`, `head_flaky`, `flaky_unchanged` at line 1 column {column}")
    };
    assert_eq!(
        got,
        [
            unknown("weakend_test", 15),
            r#"ok {"no_results":"off"}"#.into(),
            r#"ok {"weakened_test":"off","phase_only_witness":"inconclusive"}"#.into(),
            r#"ok {"weakened_test":"off","phase_only_witness":"inconclusive","head_flaky":"caveat"}"#.into(),
            r#"ok {"weakened_test":"off","phase_only_witness":"inconclusive","head_flaky":"caveat","flaky_unchanged":"off"}"#.into(),
            "error trailing characters at line 1 column 72".into(),
            unknown("0", 4),
            "error invalid type: integer `7`, expected struct Signals at line 1 column 1".into(),
        ]
    );
}

/// A config serialises as it always has: the signals set, in their order, and nothing
/// for the unset ones; and it reads back the same.
#[test]
fn a_config_round_trips() {
    let c = parse_config(
        "c.yml",
        "policy:\n  signals:\n    head_flaky: off\n    no_results: inconclusive\n    blind_lines: caveat\n    weakened_test: inconclusive\n",
    )
    .unwrap();
    let yaml = serde_yaml_ng::to_string(&c).unwrap();
    let json = serde_json::to_string(&c).unwrap();
    assert_eq!(
        yaml,
        "ledger: .github/flake-ledger.json\nevidence:\n  artifact: flakegate-evidence\n  workflows: []\n  timeout_minutes: 120\npolicy:\n  strict_lines: false\n  run_phase_only: false\n  attribute_deletions: false\n  caveat_conclusion: success\n  max_freeze_days: null\n  no_evidence_paths:\n  - '**/*.md'\n  - '**/*.rst'\n  - '**/*.txt'\n  - docs/**\n  - LICENSE*\n  - .github/**\n  expiry_warning_days: 7\n  signals:\n    weakened_test: inconclusive\n    blind_lines: caveat\n    no_results: inconclusive\n    head_flaky: off\nowners: {}\n"
    );
    assert_eq!(
        json,
        r#"{"ledger":".github/flake-ledger.json","evidence":{"artifact":"flakegate-evidence","workflows":[],"timeout_minutes":120},"policy":{"strict_lines":false,"run_phase_only":false,"attribute_deletions":false,"caveat_conclusion":"success","max_freeze_days":null,"no_evidence_paths":["**/*.md","**/*.rst","**/*.txt","docs/**","LICENSE*",".github/**"],"expiry_warning_days":7,"signals":{"weakened_test":"inconclusive","blind_lines":"caveat","no_results":"inconclusive","head_flaky":"off"}},"owners":{}}"#
    );
    assert_eq!(parse_config("c.yml", &yaml).unwrap(), c);
    assert_eq!(serde_json::from_str::<Config>(&json).unwrap(), c);
    let default = serde_yaml_ng::to_string(&Config::default()).unwrap();
    assert!(
        default.ends_with("  expiry_warning_days: 7\n  signals: {}\nowners: {}\n"),
        "{default}"
    );
}
