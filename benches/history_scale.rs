//! The flake history's cost (docs/performance.md, "The flake history at scale"): a store filled
//! as a busy repository fills it, then what the history adds to one evaluation — the read of
//! the tests one pull request's coverage names — and the database's size per observation.
//!
//! Filling: `--tests` tests (default 100,000), `--days` days (default 10) of history; each day
//! one pull request's head run of the whole suite (one pass per test: the per-day rows a full
//! day of head runs leaves, since passes are counted per test and day) and `--prs` pull
//! requests' witness probes (`--witnesses` tests, K = 7 runs, on the day's base sha), with
//! `--flaky` of every 1,000 tests failing once in a probe. Then `--reads` evaluations, each
//! reading the history of `--witnesses` random tests (as `evidence::assemble` does before the
//! verdict), timed one by one: p50, p99, max — right after compaction and a day later
//! (`--window` days of history kept, default 90). SQLite in a temp file; PostgreSQL when
//! `--postgres URL` is given (a throwaway schema).
//!
//! ```sh
//! cargo bench --bench history_scale -- --tests 100000 --days 10 --prs 200
//! ```

use chrono::{Duration as Span, TimeZone as _, Utc};
use flakegate::gate::TestId;
use flakegate::gate::{HistoryPolicy, Observation, RunKind, Source};
use flakegate::store::{HistoryQuery, RetryPolicy, Store};
use std::time::Instant;

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn arg_str(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// A small deterministic generator (no dependency for a benchmark's draws).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn test_id(n: u64) -> TestId {
    TestId::new(format!("tests/pkg{}/test_mod{}.py::test_case_{n}", n % 97, n % 1013))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let (tests, days, prs, witnesses, flaky, reads) = (
        arg("--tests", 100_000),
        arg("--days", 10),
        arg("--prs", 200),
        arg("--witnesses", 300),
        arg("--flaky", 5),
        arg("--reads", 200),
    );
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("history.db");
    let store = match arg_str("--postgres") {
        Some(url) => Store::open(&url, RetryPolicy::default()).await?,
        None => Store::open(&format!("sqlite://{}?mode=rwc", file.display()), RetryPolicy::default()).await?,
    };
    let repo = 1;
    let start = Utc.with_ymd_and_hms(2026, 9, 1, 12, 0, 0).unwrap();
    let mut rng = Lcg(7);
    let mut observations = 0u64;
    let fill = Instant::now();
    for day in 0..days {
        let now = start + Span::days(day as i64);
        let date = now.date_naive();
        let sha = format!("{:040x}", day);
        let source = |kind, pr: u64| Source {
            sha: sha.clone(),
            kind,
            pr: Some(pr),
            run_id: Some(day * 10_000 + pr),
            attempt: Some(1),
            date,
        };
        // The day's head runs: one pass per test (counted per test and day).
        let head: Vec<Observation> = (0..tests)
            .map(|n| Observation {
                test: test_id(n),
                passes: 1,
                failures: 0,
                source: source(RunKind::Head, 0),
            })
            .collect();
        observations += head.len() as u64;
        store.record_history(repo, &format!("head:{day}"), &head, now).await?;
        // The day's witness probes.
        for pr in 1..=prs {
            let probe: Vec<Observation> = (0..witnesses)
                .map(|_| {
                    let n = rng.next() % tests;
                    let fails = u32::from(n % 1000 < flaky && rng.next() % 7 == 0);
                    Observation {
                        test: test_id(n),
                        passes: 7 - fails,
                        failures: fails,
                        source: source(RunKind::Probe, pr),
                    }
                })
                .collect();
            observations += probe.len() as u64;
            store
                .record_history(repo, &format!("run:{day}:{pr}"), &probe, now)
                .await?;
        }
    }
    let fill = fill.elapsed();
    let now = start + Span::days(days as i64);
    // As the App's sweep does: compaction, then fresh statistics for the planner.
    let compacting = Instant::now();
    let policy = HistoryPolicy {
        window_days: arg("--window", u64::from(HistoryPolicy::default().window_days)) as u32,
        ..HistoryPolicy::default()
    };
    store.compact_history(now, policy.window_days).await?;
    let compacting = compacting.elapsed();
    let rows = store.history_size().await?;
    // Right after the sweep's compaction, and a day later (before the next one): then the
    // window's first day moved past a day compaction has not dropped yet.
    let mut timed = Vec::new();
    for at in [now, now + Span::days(1)] {
        let mut times = Vec::new();
        for r in 0..reads {
            let ids: Vec<TestId> = (0..witnesses).map(|_| test_id(rng.next() % tests)).collect();
            let sha = format!("{:040x}", r % days.max(1));
            let q = HistoryQuery {
                tests: &ids,
                base_sha: Some(&sha),
                head_sha: None,
                now: at,
                policy,
                exclude: None,
            };
            let t = Instant::now();
            let h = store.history_for(repo, &q).await?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(!h.tests.is_empty());
        }
        times.sort_by(f64::total_cmp);
        timed.push(times);
    }
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(dir.path().join("history.db-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    println!("tests {tests}, days {days}, pull requests/day {prs}, witnesses {witnesses}");
    println!(
        "observations recorded: {observations} in {:.1} s ({:.0}/s)",
        fill.as_secs_f64(),
        observations as f64 / fill.as_secs_f64()
    );
    println!("compaction and statistics: {:.1} s", compacting.as_secs_f64());
    println!(
        "rows held: {rows}; SQLite file: {:.1} MB ({:.1} bytes per observation, {:.1} per row)",
        bytes as f64 / 1e6,
        bytes as f64 / observations as f64,
        bytes as f64 / rows.max(1) as f64
    );
    for (when, times) in ["after compaction", "a day later"].iter().zip(&timed) {
        let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
        println!(
            "history read for one evaluation ({witnesses} tests, {when}): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            pct(0.5),
            pct(0.99),
            times[times.len() - 1]
        );
    }
    Ok(())
}
