use super::*;
use crate::gate::probe::{Probe, ProbeCounts, Stability};

fn t(s: &str) -> TestId {
    TestId::new(s)
}

fn src(sha: &str, pr: u64, date: &str) -> Source {
    Source {
        sha: sha.into(),
        kind: RunKind::Probe,
        pr: Some(pr),
        run_id: Some(9000 + pr),
        attempt: Some(1),
        date: date.parse().unwrap(),
    }
}

fn probe(entries: &[(&str, u32, u32)]) -> Probe {
    Probe {
        k: 7,
        tests: entries
            .iter()
            .map(|(id, failures, runs)| {
                (
                    t(id),
                    ProbeCounts {
                        failures: *failures,
                        runs: *runs,
                    },
                )
            })
            .collect(),
        complete: true,
        seed: None,
    }
}

fn history(entries: Vec<(&str, TestHistory)>) -> History {
    History {
        tests: entries.into_iter().map(|(id, h)| (t(id), h)).collect(),
        window_days: 90,
        recovery_runs: 50,
        observations: 0,
    }
}

#[test]
fn this_probe_alone_judges_as_before() {
    let p = probe(&[("a", 0, 7), ("b", 3, 7), ("c", 7, 7)]);
    let s = Stabilities::new(Some(&p), None);
    assert_eq!(s.stability(&t("a")), Some(Stability::StablePassing));
    assert_eq!(s.stability(&t("b")), Some(Stability::Unstable));
    assert_eq!(s.stability(&t("c")), Some(Stability::BrokenOnBase));
    assert_eq!(s.stability(&t("d")), None);
}

#[test]
fn a_failure_on_the_same_base_sha_in_another_pull_request_makes_a_passing_probe_unstable() {
    let p = probe(&[("a", 0, 7)]);
    let h = history(vec![(
        "a",
        TestHistory {
            runs: 7,
            failures: 1,
            last_failure: Some(src("base", 12, "2026-11-02")),
            on_base: (6, 1),
            ..TestHistory::default()
        },
    )]);
    let j = Stabilities::new(Some(&p), Some(&h)).judge(&t("a")).unwrap();
    assert_eq!(j.stability, Stability::Unstable);
    assert_eq!((j.runs, j.failures), (14, 1));
    assert_eq!(j.seen.unwrap().pr, Some(12));
}

#[test]
fn failures_on_another_sha_alone_do_not_make_a_test_unstable() {
    // Broken on an older sha, passing on this one: it was fixed, not flaky.
    let p = probe(&[("a", 0, 7)]);
    let h = history(vec![(
        "a",
        TestHistory {
            runs: 7,
            failures: 7,
            last_failure: Some(src("old", 3, "2026-11-01")),
            ..TestHistory::default()
        },
    )]);
    assert_eq!(
        Stabilities::new(Some(&p), Some(&h)).stability(&t("a")),
        Some(Stability::StablePassing)
    );
}

#[test]
fn a_test_seen_unstable_stays_unstable_until_the_recovery_rule_clears_it() {
    // 5 failures in the 10 runs up to the last one: a 50 % rate, so the floor
    // (`recovery_runs: 50`) is what clears it.
    let seen = |streak| {
        history(vec![(
            "a",
            TestHistory {
                runs: 10 + streak,
                failures: 5,
                unstable_on: Some(src("old", 5, "2026-10-20")),
                last_failure: Some(src("old", 5, "2026-10-20")),
                passes_since_failure: streak,
                ..TestHistory::default()
            },
        )])
    };
    let p = probe(&[("a", 0, 7)]);
    let h = seen(49);
    let j = Stabilities::new(Some(&p), Some(&h)).judge(&t("a")).unwrap();
    assert_eq!(j.stability, Stability::Unstable, "49 passes in a row do not clear it");
    assert_eq!(j.seen.unwrap().pr, Some(5));
    assert_eq!(j.recovers_after, Some(1), "one more passing run clears it");
    let h = seen(50);
    let j = Stabilities::new(Some(&p), Some(&h)).judge(&t("a")).unwrap();
    assert_eq!(j.stability, Stability::StablePassing, "50 passes in a row do");
    assert_eq!(j.recovers_after, None);
    // Its power rests on the runs since its last failure (the history's 50 and this probe's 7).
    assert_eq!(
        j.power.as_deref(),
        Some("passed the last 57 runs in a row: not shown unstable at p ≥ 4 % (90 % chance)")
    );
}

#[test]
fn a_rarely_failing_test_needs_the_streak_its_rate_makes_unlikely() {
    // One failure in the 50 runs up to it: a 2 % test, which passes 148 runs in a row with
    // more than 5 % chance (0.98^148 ≈ 5.03 %) and 149 with less.
    let seen = |streak| {
        history(vec![(
            "a",
            TestHistory {
                runs: 50 + streak,
                failures: 1,
                unstable_on: Some(src("old", 9, "2026-10-20")),
                last_failure: Some(src("old", 9, "2026-10-20")),
                passes_since_failure: streak,
                ..TestHistory::default()
            },
        )])
    };
    assert_eq!(runs_to_recover(&seen(0).tests[&t("a")], 50), 149);
    let p = probe(&[("a", 0, 7)]);
    for streak in [50, 100, 148] {
        let h = seen(streak);
        let j = Stabilities::new(Some(&p), Some(&h)).judge(&t("a")).unwrap();
        assert_eq!(
            j.stability,
            Stability::Unstable,
            "{streak} passes in a row do not clear a 2 % test"
        );
        assert_eq!(j.recovers_after, Some(149 - streak));
    }
    let h = seen(149);
    assert_eq!(
        Stabilities::new(Some(&p), Some(&h)).stability(&t("a")),
        Some(Stability::StablePassing),
        "149 do"
    );
    // The floor still holds for a test that failed often, and a larger floor wins.
    let often = TestHistory {
        runs: 20,
        failures: 10,
        passes_since_failure: 0,
        ..TestHistory::default()
    };
    assert_eq!(runs_to_recover(&often, 50), 50);
    assert_eq!(runs_to_recover(&seen(0).tests[&t("a")], 300), 300);
    // A failure in the test's only run before the streak says nothing of its rate: the floor.
    let once = TestHistory {
        runs: 1,
        failures: 1,
        ..TestHistory::default()
    };
    assert_eq!(runs_to_recover(&once, 50), 50);
}

#[test]
fn a_test_the_probe_did_not_run_is_judged_on_history_alone_and_says_so() {
    let p = probe(&[]);
    let h = history(vec![(
        "a",
        TestHistory {
            runs: 212,
            failures: 0,
            since: Some("2026-11-02".parse().unwrap()),
            passes_since_failure: 212,
            ..TestHistory::default()
        },
    )]);
    let j = Stabilities::new(Some(&p), Some(&h)).judge(&t("a")).unwrap();
    assert_eq!(j.stability, Stability::StablePassing);
    assert!(j.history_only);
    assert_eq!(j.runs, 212);
    // The power statement rests on every run.
    assert_eq!(
        j.power.as_deref(),
        Some("0 of 212 runs failed: not shown unstable at p ≥ 1.1 % (90 % chance)")
    );
}

#[test]
fn every_run_on_the_base_sha_failing_is_broken() {
    let p = probe(&[("a", 7, 7)]);
    let h = history(vec![(
        "a",
        TestHistory {
            runs: 3,
            failures: 3,
            last_failure: Some(src("base", 1, "2026-11-03")),
            on_base: (0, 3),
            ..TestHistory::default()
        },
    )]);
    assert_eq!(
        Stabilities::new(Some(&p), Some(&h)).stability(&t("a")),
        Some(Stability::BrokenOnBase)
    );
}

#[test]
fn head_counts_count_reruns_as_failures() {
    assert_eq!(head_counts(Outcome::Passed, 0), (1, 0));
    assert_eq!(head_counts(Outcome::Passed, 2), (1, 2));
    assert_eq!(head_counts(Outcome::Error, 0), (0, 1));
    assert_eq!(head_counts(Outcome::Skipped, 0), (0, 0));
}

#[test]
fn a_source_names_pull_request_run_attempt_sha_and_date() {
    let mut s = src("0123456789abcdef", 481, "2026-11-02");
    s.run_id = Some(9912);
    s.attempt = Some(2);
    assert_eq!(s.describe(), "#481, run 9912 (attempt 2), probe of 0123456, 2026-11-02");
}

#[test]
fn a_test_whose_latest_runs_failed_is_not_stable_on_a_base_it_never_ran_on() {
    // Broken on the earlier shas, no run on this one (a witnesses-only probe did not run it).
    let h = history(vec![(
        "a",
        TestHistory {
            runs: 5,
            failures: 5,
            last_failure: Some(src("old", 3, "2026-11-01")),
            ..TestHistory::default()
        },
    )]);
    let p = probe(&[]);
    assert_eq!(
        Stabilities::new(Some(&p), Some(&h)).stability(&t("a")),
        Some(Stability::BrokenOnBase)
    );
    // Once it passed after its last failure, it is judged by its runs again.
    let h = history(vec![(
        "a",
        TestHistory {
            runs: 6,
            failures: 5,
            last_failure: Some(src("old", 3, "2026-11-01")),
            passes_since_failure: 1,
            ..TestHistory::default()
        },
    )]);
    assert_eq!(
        Stabilities::new(Some(&p), Some(&h)).stability(&t("a")),
        Some(Stability::StablePassing)
    );
}
