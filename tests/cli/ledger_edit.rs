//! `flakegate ledger add | renew | prune | expiring`: deterministic writes
//! that round-trip byte for byte, evidence from probes, and invalid edits that
//! fail with exit status 2 leaving the file exactly as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn example_ledger() -> PathBuf {
    root().join("examples/shop/flake-ledger.json")
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn flakegate(cwd: &Path, args: &[&str]) -> Ran {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run flakegate");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// The example's probe as `flakegate probe --from` writes it (k = 5, every test's counts).
fn example_probe(dir: &Path, today: &str) -> PathBuf {
    let out = dir.join(format!("probe-{today}.json"));
    let r = flakegate(
        dir,
        &[
            "probe",
            "--from",
            &s(&root().join("examples/shop/evidence/probe")),
            "--seed",
            "0",
            "--today",
            today,
            "--out",
            &s(&out),
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    out
}

#[test]
fn the_written_form_round_trips_byte_for_byte() {
    // The example ledger (written by Python's json.dump, indent=2) has the canonical
    // layout and key order; only its entries are not sorted by test.
    let text = std::fs::read_to_string(example_ledger()).unwrap();
    let l = flakegate::gate::ledger::parse_ledger("l", &text, None).unwrap();
    let canonical = flakegate::gate::Ledger::canonical_text(&l.entries);
    let sorted_lines = |t: &str| {
        let mut v: Vec<String> = t.lines().map(|l| l.trim_end_matches(',').to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(sorted_lines(&canonical), sorted_lines(&text));
    // parse → write of the canonical form is the identity, whatever order the entries come in.
    let mut entries = flakegate::gate::ledger::parse_ledger("l", &canonical, None)
        .unwrap()
        .entries;
    assert_eq!(flakegate::gate::Ledger::canonical_text(&entries), canonical);
    entries.reverse();
    assert_eq!(flakegate::gate::Ledger::canonical_text(&entries), canonical);

    // And what `ledger add` writes parses back to the same bytes.
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join(".github/flake-ledger.json");
    for (test, owner) in [("tests/z.py::test_last", "zed"), ("tests/a.py::TestA", "@org/a-team")] {
        let r = flakegate(
            tmp.path(),
            &[
                "ledger",
                "add",
                test,
                "--owner",
                owner,
                "--reason",
                "races the clock",
                "--today",
                "2026-11-20",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let written = std::fs::read_to_string(&ledger).unwrap();
    assert_eq!(
        written,
        r#"{
  "frozen": [
    {
      "test": "tests/a.py::TestA",
      "reason": "races the clock",
      "owner": "@org/a-team",
      "frozen_at": "2026-11-20",
      "expires": "2026-12-04"
    },
    {
      "test": "tests/z.py::test_last",
      "reason": "races the clock",
      "owner": "zed",
      "frozen_at": "2026-11-20",
      "expires": "2026-12-04"
    }
  ]
}
"#
    );
    let again = flakegate::gate::ledger::parse_ledger("l", &written, Some(30)).unwrap();
    assert_eq!(flakegate::gate::Ledger::canonical_text(&again.entries), written);
    // `ledger lint` keeps working on what these commands write.
    let lint = flakegate(tmp.path(), &["ledger", "lint", &s(&ledger), "--today", "2026-11-20"]);
    assert_eq!(lint.code, 0, "{}{}", lint.stdout, lint.stderr);
    assert!(lint.stdout.contains("2 entries valid"), "{}", lint.stdout);
}

#[test]
fn add_records_the_probe_observation() {
    let tmp = tempfile::tempdir().unwrap();
    let probe = example_probe(tmp.path(), "2026-11-20");
    let ledger = tmp.path().join("ledger.json");
    std::fs::write(&ledger, "{\"frozen\": []}\n").unwrap();
    let r = flakegate(
        tmp.path(),
        &[
            "ledger",
            "add",
            "tests/test_refunds.py::test_gateway_retry",
            "--owner",
            "@shop/payments",
            "--reason",
            "shares a counter file between runs",
            "--probe",
            &s(&probe),
            "--days",
            "10",
            "--ledger",
            &s(&ledger),
            "--today",
            "2026-11-20",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("froze tests/test_refunds.py::test_gateway_retry"),
        "{}",
        r.stdout
    );
    let l = flakegate::gate::ledger::parse_ledger("l", &std::fs::read_to_string(&ledger).unwrap(), None).unwrap();
    let e = &l.entries[0];
    assert_eq!(e.observed.as_deref(), Some("2/5 fail on clean base"));
    assert_eq!(e.expires.to_string(), "2026-11-30");
    assert_eq!(e.frozen_at.map(|d| d.to_string()).as_deref(), Some("2026-11-20"));

    // A prefix entry sums the tests under it.
    let r = flakegate(
        tmp.path(),
        &[
            "ledger",
            "add",
            "tests/test_pricing.py::test_bulk_discount",
            "--owner",
            "@shop/pricing",
            "--reason",
            "reads a refreshed price table",
            "--probe",
            &s(&probe),
            "--ledger",
            &s(&ledger),
            "--today",
            "2026-11-20",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(&ledger).unwrap();
    assert!(
        text.contains("\"observed\": \"0/10 fail on clean base (2 tests under this prefix)\""),
        "{text}"
    );

    // --observed text is taken as given.
    let r = flakegate(
        tmp.path(),
        &[
            "ledger",
            "add",
            "tests/test_util.py::test_clamp",
            "--owner",
            "util-team",
            "--reason",
            "r",
            "--observed",
            "3/7 fail on clean base",
            "--ledger",
            &s(&ledger),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::read_to_string(&ledger)
        .unwrap()
        .contains("\"observed\": \"3/7 fail on clean base\""));
}

/// Run an edit that must fail: exit 2, the message, and the file byte for byte as before.
fn refused(dir: &Path, ledger: &Path, args: &[&str], want: &str) {
    let before = std::fs::read(ledger).ok();
    let r = flakegate(dir, args);
    assert_eq!(r.code, 2, "{args:?} should fail: {}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(want),
        "{args:?}: {:?} should contain {want:?}",
        r.stderr
    );
    assert_eq!(std::fs::read(ledger).ok(), before, "{args:?} touched the ledger");
    let leftovers: Vec<_> = std::fs::read_dir(ledger.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn invalid_edits_fail_and_leave_the_file_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ledger = d.join("ledger.json");
    std::fs::copy(example_ledger(), &ledger).unwrap();
    let l = s(&ledger);
    let probe = example_probe(d, "2026-11-20");
    let p = s(&probe);
    let strict = d.join("flakegate.yml");
    std::fs::write(&strict, "policy:\n  max_freeze_days: 30\n").unwrap();
    let add = |test: &'static str| vec!["ledger", "add", test, "--ledger", &l, "--today", "2026-11-20"];

    // `test_checkout` is a test id (an LCOV test name); a name with a space is no test id.
    let mut a = add("test checkout");
    a.extend(["--owner", "o", "--reason", "r"]);
    refused(d, &ledger, &a, "is not a test id");
    let mut a = add("tests/x.py::");
    a.extend(["--owner", "o", "--reason", "r"]);
    refused(d, &ledger, &a, "is not a pytest node id");
    let mut a = add("tests/x.py::test_y");
    a.extend(["--reason", "r"]);
    refused(d, &ledger, &a, "--owner is required");
    let mut a = add("tests/x.py::test_y");
    a.extend(["--owner", "  ", "--reason", "r"]);
    refused(d, &ledger, &a, "--owner is empty");
    let mut a = add("tests/x.py::test_y");
    a.extend(["--owner", "o"]);
    refused(d, &ledger, &a, "--reason is required");
    let mut a = add("tests/test_refunds.py::test_gateway_retry");
    a.extend(["--owner", "o", "--reason", "r"]);
    refused(d, &ledger, &a, "already frozen");
    let mut a = add("tests/x.py::test_y");
    a.extend(["--owner", "o", "--reason", "r", "--probe", &p]);
    refused(d, &ledger, &a, "did not run tests/x.py::test_y");

    // max_freeze_days: --days beyond it is refused (on a ledger that satisfies the policy).
    let short = d.join("short.json");
    std::fs::write(&short, "{\n  \"frozen\": []\n}\n").unwrap();
    let sh = s(&short);
    let cfg = s(&strict);
    refused(
        d,
        &short,
        &[
            "ledger",
            "add",
            "tests/x.py::test_y",
            "--owner",
            "o",
            "--reason",
            "r",
            "--days",
            "60",
            "--config",
            &cfg,
            "--ledger",
            &sh,
        ],
        "max_freeze_days of 30",
    );
    // … and a ledger the policy already rejects is not edited at all.
    refused(
        d,
        &ledger,
        &[
            "ledger",
            "add",
            "tests/x.py::test_y",
            "--owner",
            "o",
            "--reason",
            "r",
            "--config",
            &cfg,
            "--ledger",
            &l,
        ],
        "is invalid, fix it first",
    );

    // renew without an observation, of an absent entry, with a probe lacking the test.
    refused(
        d,
        &ledger,
        &[
            "ledger",
            "renew",
            "tests/test_refunds.py::test_gateway_retry",
            "--days",
            "7",
            "--ledger",
            &l,
        ],
        "renew needs a fresh observation",
    );
    refused(
        d,
        &ledger,
        &[
            "ledger",
            "renew",
            "tests/x.py::test_y",
            "--days",
            "7",
            "--probe",
            &p,
            "--ledger",
            &l,
        ],
        "not in the ledger",
    );
    let partial = d.join("partial.json");
    std::fs::write(&partial, r#"{"k": 5, "unstable": []}"#).unwrap();
    refused(
        d,
        &ledger,
        &[
            "ledger",
            "renew",
            "tests/test_refunds.py::test_gateway_retry",
            "--days",
            "7",
            "--probe",
            &s(&partial),
            "--ledger",
            &l,
        ],
        "lists only unstable tests",
    );
    // A probe older than the freeze is not a fresh observation.
    let old = example_probe(d, "2026-11-01");
    refused(
        d,
        &ledger,
        &[
            "ledger",
            "renew",
            "tests/test_refunds.py::test_gateway_retry",
            "--days",
            "7",
            "--probe",
            &s(&old),
            "--ledger",
            &l,
        ],
        "not a fresh observation",
    );
    // prune needs a complete probe.
    refused(d, &ledger, &["ledger", "prune", "--ledger", &l], "prune needs --probe");
    refused(
        d,
        &ledger,
        &["ledger", "prune", "--probe", &s(&partial), "--ledger", &l],
        "complete probe",
    );

    // A broken ledger file is never rewritten.
    let bad = d.join("bad.json");
    std::fs::write(
        &bad,
        "{\"frozen\": [{\"test\": \"a.py::t\", \"expires\": \"2026-01-01\"}]}",
    )
    .unwrap();
    refused(
        d,
        &bad,
        &[
            "ledger",
            "add",
            "tests/x.py::test_y",
            "--owner",
            "o",
            "--reason",
            "r",
            "--ledger",
            &s(&bad),
        ],
        "\"owner\"",
    );
    // Adding to a missing ledger that fails creates nothing.
    let missing = d.join("new/ledger.json");
    let r = flakegate(
        d,
        &[
            "ledger",
            "add",
            "no pe",
            "--owner",
            "o",
            "--reason",
            "r",
            "--ledger",
            &s(&missing),
        ],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not created"), "{}", r.stderr);
    assert!(!missing.exists());
}

#[test]
fn renew_records_a_fresh_observation() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ledger = d.join("ledger.json");
    // The example's freeze of test_gateway_retry, about to expire.
    let original = std::fs::read_to_string(example_ledger()).unwrap().replacen(
        "\"expires\": \"2028-01-31\"",
        "\"expires\": \"2026-11-25\"",
        1,
    );
    std::fs::write(&ledger, &original).unwrap();
    let probe = example_probe(d, "2026-11-20");
    let renew = |days: &str, extra: &[&str]| {
        let mut args = vec![
            "ledger",
            "renew",
            "tests/test_refunds.py::test_gateway_retry",
            "--days",
            days,
            "--probe",
        ];
        let (p, l) = (s(&probe), s(&ledger));
        args.extend([p.as_str(), "--ledger", l.as_str(), "--today", "2026-11-20"]);
        args.extend(extra);
        flakegate(d, &args)
    };
    let r = renew("21", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("renewed tests/test_refunds.py::test_gateway_retry"),
        "{}",
        r.stdout
    );
    let text = std::fs::read_to_string(&ledger).unwrap();
    let l = flakegate::gate::ledger::parse_ledger("l", &text, None).unwrap();
    let e = l
        .entries
        .iter()
        .find(|e| e.test == "tests/test_refunds.py::test_gateway_retry")
        .unwrap();
    assert_eq!(e.observed.as_deref(), Some("2/5 fail on clean base"));
    // The freeze began when it began: a renewal keeps `frozen_at`.
    assert_eq!(e.frozen_at.unwrap().to_string(), "2026-11-09");
    assert_eq!(e.expires.to_string(), "2026-12-11");
    assert_eq!(e.owner, "@shop/payments");
    // Against the canonical form of the original, only that entry's expiry changed.
    let before = flakegate::gate::Ledger::canonical_text(
        &flakegate::gate::ledger::parse_ledger("l", &original, None)
            .unwrap()
            .entries,
    );
    let changed = before.lines().zip(text.lines()).filter(|(a, b)| a != b).count();
    assert_eq!((changed, before.lines().count()), (1, text.lines().count()), "{text}");

    // A renewal never shortens a freeze unless told to.
    let r = renew("3", &[]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("never shortens a freeze"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&ledger).unwrap(), text);
    let r = renew("3", &["--shorten"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::read_to_string(&ledger)
        .unwrap()
        .contains("\"expires\": \"2026-11-23\""));
}

/// `ledger add` takes a test id of the ledger's kind: `test_total` is no pytest node id.
#[test]
fn add_refuses_an_id_that_is_not_a_node_id() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ledger = d.join("ledger.json");
    std::fs::copy(example_ledger(), &ledger).unwrap();
    let l = s(&ledger);
    let add = |id: &str, extra: &[&str]| {
        let mut args = vec![
            "ledger",
            "add",
            id,
            "--owner",
            "o",
            "--reason",
            "r",
            "--ledger",
            l.as_str(),
        ];
        args.extend(extra);
        flakegate(d, &args)
    };
    let r = add("test_total", &[]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("test_total is an LCOV test name") && r.stderr.contains("not a pytest node id"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read(&ledger).unwrap(),
        std::fs::read(example_ledger()).unwrap()
    );
    // Said outright, another language's id is taken.
    let r = add("test_total", &["--id-kind", "lcov"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // In a new ledger, a node id.
    let fresh = d.join("fresh.json");
    let r = flakegate(
        d,
        &[
            "ledger",
            "add",
            "test_total",
            "--owner",
            "o",
            "--reason",
            "r",
            "--ledger",
            &s(&fresh),
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(!fresh.exists());
}

/// `ledger add --probe` says so when the probe shows the test passing every run (nothing
/// shows it flaky) or failing every run (broken, not flaky).
#[test]
fn add_from_a_probe_warns_when_the_test_is_not_flaky() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let probe = example_probe(d, "2026-11-20");
    let ledger = d.join("ledger.json");
    let add = |id: &str| {
        flakegate(
            d,
            &[
                "ledger",
                "add",
                id,
                "--owner",
                "o",
                "--reason",
                "r",
                "--probe",
                &s(&probe),
                "--ledger",
                &s(&ledger),
                "--today",
                "2026-11-20",
            ],
        )
    };
    let broken = add("tests/test_refunds.py::test_refund_rounding_broken");
    assert_eq!(broken.code, 0, "{}", broken.stderr);
    assert!(
        broken.stderr.contains("failing every run") && broken.stderr.contains("broken on base, not flaky"),
        "{}",
        broken.stderr
    );
    let passing = add("tests/test_pricing.py::test_bulk_discount");
    assert_eq!(passing.code, 0, "{}", passing.stderr);
    assert!(
        passing.stderr.contains("passing every run") && passing.stderr.contains("nothing shows it flaky"),
        "{}",
        passing.stderr
    );
    let flaky = add("tests/test_refunds.py::test_gateway_retry");
    assert_eq!(flaky.code, 0, "{}", flaky.stderr);
    assert!(!flaky.stderr.contains("warning"), "{}", flaky.stderr);
}

#[test]
fn prune_removes_entries_the_probe_finds_stable() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ledger = d.join("ledger.json");
    std::fs::copy(example_ledger(), &ledger).unwrap();
    let probe = example_probe(d, "2026-11-20");
    let dry = flakegate(
        d,
        &[
            "ledger",
            "prune",
            "--probe",
            &s(&probe),
            "--ledger",
            &s(&ledger),
            "--dry-run",
        ],
    );
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout
            .contains("would remove tests/test_pricing.py::test_bulk_discount"),
        "{}",
        dry.stdout
    );
    assert_eq!(
        std::fs::read(&ledger).unwrap(),
        std::fs::read(example_ledger()).unwrap()
    );

    let r = flakegate(d, &["ledger", "prune", "--probe", &s(&probe), "--ledger", &s(&ledger)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("removed tests/test_pricing.py::test_bulk_discount: 0/10 fail on clean base (2 tests under this prefix), not shown unstable at p ≥"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("kept tests/test_refunds.py::test_gateway_retry: 2/5 fail"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("kept tests/test_refunds.py::test_refund_rounding_broken: 5/5 fail"),
        "{}",
        r.stdout
    );
    let l = flakegate::gate::ledger::parse_ledger("l", &std::fs::read_to_string(&ledger).unwrap(), None).unwrap();
    let left: Vec<&str> = l.entries.iter().map(|e| e.test.as_str()).collect();
    assert_eq!(
        left,
        vec![
            "tests/test_refunds.py::test_gateway_retry",
            "tests/test_refunds.py::test_refund_rounding_broken"
        ]
    );

    // A probe taken before a freeze began does not prune it.
    let early = d.join("early.json");
    std::fs::copy(example_ledger(), &early).unwrap();
    let old_probe = example_probe(d, "2026-11-10");
    let r = flakegate(
        d,
        &["ledger", "prune", "--probe", &s(&old_probe), "--ledger", &s(&early)],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains(
            "kept tests/test_pricing.py::test_bulk_discount: frozen on 2026-11-12, after this probe (2026-11-10)"
        ),
        "{}",
        r.stdout
    );
    assert_eq!(std::fs::read(&early).unwrap(), std::fs::read(example_ledger()).unwrap());

    // Nothing left to prune: the file is not rewritten.
    let before = std::fs::read(&ledger).unwrap();
    let r = flakegate(d, &["ledger", "prune", "--probe", &s(&probe), "--ledger", &s(&ledger)]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("removed 0 entries"), "{}", r.stdout);
    assert_eq!(std::fs::read(&ledger).unwrap(), before);
}

#[test]
fn expiring_lists_owners_and_fails_on_expired_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ledger = d.join(".github/flake-ledger.json");
    std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
    std::fs::write(
        &ledger,
        r#"{"frozen": [
  {"test": "tests/a.py::test_old", "owner": "@org/a", "frozen_at": "2026-11-01", "expires": "2026-11-15"},
  {"test": "tests/b.py::test_soon", "owner": "b-team", "frozen_at": "2026-11-10", "expires": "2026-11-23"},
  {"test": "tests/c.py::test_today", "owner": "c-team", "frozen_at": "2026-11-10", "expires": "2026-11-20"},
  {"test": "tests/d.py::test_later", "owner": "d-team", "frozen_at": "2026-11-10", "expires": "2027-01-01"}]}
"#,
    )
    .unwrap();
    let before = std::fs::read(&ledger).unwrap();
    // Default ledger path, default window (7 days).
    let r = flakegate(d, &["ledger", "expiring", "--today", "2026-11-20"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(
        lines[0].starts_with("EXPIRED  2026-11-15 (5 days ago)  tests/a.py::test_old  owner @org/a"),
        "{}",
        r.stdout
    );
    assert!(
        lines[1].contains("tests/c.py::test_today") && lines[1].contains("today, its last day"),
        "{}",
        r.stdout
    );
    assert!(
        lines[2].contains("2026-11-23 (in 3 days)  tests/b.py::test_soon  owner b-team"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("test_later"), "{}", r.stdout);
    assert!(r.stdout.contains("1 expired, 2 expiring within 7 days"), "{}", r.stdout);
    assert_eq!(std::fs::read(&ledger).unwrap(), before, "expiring only reads");

    let r = flakegate(d, &["ledger", "expiring", "--today", "2026-11-14", "--within", "60"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("test_later"), "{}", r.stdout);
    let r = flakegate(d, &["ledger", "expiring", "--ledger", &s(&d.join("nope.json"))]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("cannot read"), "{}", r.stderr);
}
