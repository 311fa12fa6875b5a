//! The App under load (docs/performance.md): `/healthz` and webhook-ack latency while two 1 GB evaluations
//! run. Two real `flakegate serve` processes (this build's binary, as an operator runs it; two
//! instances sharing one PostgreSQL queue, each taking one evaluation job: a worker judges one
//! job at a time) against the loopback fake GitHub of the test suite (`tests/app/support/`), which serves two pull requests whose
//! workflow runs each uploaded the same ~1 GB `coverage.json` (a deflated zip made once by
//! `scripts/app-load.sh`).
//!
//! A client thread of its own (its own single-threaded runtime, so the harness's fake GitHub
//! does not delay it) sends `GET /healthz` every `--healthz-ms` and a signed `check_run`
//! delivery (another app's check run: stored and queued like any delivery, then ignored by the
//! worker without a GitHub call) every `--webhook-ms`, alternating between the two instances:
//! for `--idle-seconds` alone (the machine as it is, for comparison), then while the two
//! `workflow_run` deliveries are judged, until both check runs are completed or `--max-seconds`
//! passed. Every latency is recorded from the request's send to its response's last byte. It
//! prints, before the evaluations, for the whole load, and for the window in which both
//! evaluations ran (from the later artifact download to the earlier completion), the count,
//! p50, p99 and max, then checks that each check run completed with the verdict
//! `flakegate check` gives the same coverage and diff. `--serve-bin` serves with another
//! build of `flakegate` (an earlier commit's, to compare).
//!
//! Loopback only; bounded in time (`--max-seconds`) and so in requests. Run it through
//! `scripts/app-load.sh`, which generates the inputs; by hand:
//!
//! ```sh
//! cargo bench --bench app_load -- --json COV.json --zip COV.zip --diff COV.diff
//! ```

#[allow(dead_code)]
#[path = "../tests/app/support/mod.rs"]
mod support;

use flakegate::server::signature::sign;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::app_harness::{check_run_event, with_database, workflow_run_completed, ARTIFACT, OWNER, SECRET, WORKFLOW};
use support::fake_github::FakeGithub;
use support::fake_repo::{op, ArtifactState, FakeRepo, GITHUB_ACTIONS_APP_ID};
use support::serve_process::ServeProcess;

const BASE_SHA: &str = "d81107f42bd080577bf4faa97f4b2aabe4d66b8b";
const PR: u64 = 12;
/// `/healthz` p99 and webhook-ack p99 targets (docs/performance.md, "The App under load"), in milliseconds.
const HEALTHZ_P99_MS: f64 = 5.0;
const ACK_P99_MS: f64 = 20.0;

struct Args {
    json: PathBuf,
    zip: PathBuf,
    diff: PathBuf,
    healthz_every: Duration,
    webhook_every: Duration,
    max_seconds: u64,
    idle_seconds: u64,
    /// The `flakegate` binary to serve with: this build's unless `--serve-bin`.
    serve_bin: PathBuf,
}

fn usage(why: &str) -> ! {
    eprintln!(
        "app_load: {why}\nusage: app_load --json COV.json --zip COV.zip --diff COV.diff \
         [--healthz-ms 10] [--webhook-ms 50] [--max-seconds 300] [--idle-seconds 3] [--serve-bin PATH]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut json = None;
    let mut zip = None;
    let mut diff = None;
    let (mut healthz_ms, mut webhook_ms, mut max_seconds, mut idle_seconds) = (10u64, 50u64, 300u64, 3u64);
    let mut serve_bin = PathBuf::from(env!("CARGO_BIN_EXE_flakegate"));
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        // `cargo bench` passes `--bench` to every bench binary.
        if a == "--bench" {
            continue;
        }
        let mut value = || it.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        let number = |v: String| {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .unwrap_or_else(|| usage(&format!("{a}: expected a positive integer, got {v:?}")))
        };
        match a.as_str() {
            "--json" => json = Some(PathBuf::from(value())),
            "--zip" => zip = Some(PathBuf::from(value())),
            "--diff" => diff = Some(PathBuf::from(value())),
            "--healthz-ms" => healthz_ms = number(value()),
            "--webhook-ms" => webhook_ms = number(value()),
            "--max-seconds" => max_seconds = number(value()),
            "--idle-seconds" => idle_seconds = number(value()),
            "--serve-bin" => serve_bin = PathBuf::from(value()),
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    Args {
        json: json.unwrap_or_else(|| usage("--json is required")),
        zip: zip.unwrap_or_else(|| usage("--zip is required")),
        diff: diff.unwrap_or_else(|| usage("--diff is required")),
        healthz_every: Duration::from_millis(healthz_ms),
        webhook_every: Duration::from_millis(webhook_ms),
        max_seconds,
        idle_seconds,
        serve_bin,
    }
}

/// One request of the load: what, when it was sent (since the load began), how long it took.
#[derive(Debug, Clone)]
struct Sample {
    healthz: bool,
    sent: Duration,
    took: Duration,
    /// The HTTP status, or `None` when the request failed (connection refused, reset).
    status: Option<u16>,
}

/// Nearest-rank percentile `p` (0–100) of sorted `v`.
fn percentile(v: &[Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

struct Stats {
    count: usize,
    failed: usize,
    p50: Duration,
    p99: Duration,
    max: Duration,
}

fn stats<'a>(samples: impl Iterator<Item = &'a Sample>, expected_status: u16) -> Stats {
    let mut took = Vec::new();
    let mut failed = 0;
    for s in samples {
        if s.status != Some(expected_status) {
            failed += 1;
        }
        took.push(s.took);
    }
    took.sort();
    Stats {
        count: took.len(),
        failed,
        p50: percentile(&took, 50.0),
        p99: percentile(&took, 99.0),
        max: took.last().copied().unwrap_or_default(),
    }
}

fn print_stats(label: &str, s: &Stats, target_ms: f64) {
    let verdict = if s.count == 0 {
        "no samples"
    } else if ms(s.p99) <= target_ms && s.failed == 0 {
        "met"
    } else {
        "MISSED"
    };
    println!(
        "  {label:<8} count {:>6}  failed {:>3}  p50 {:>8.2} ms  p99 {:>8.2} ms  max {:>8.2} ms  (target p99 <= {target_ms} ms: {verdict})",
        s.count,
        s.failed,
        ms(s.p50),
        ms(s.p99),
        ms(s.max),
    );
}

/// The load: `/healthz` and signed `check_run` deliveries at a steady rate, alternating between
/// `bases`, on a thread and runtime of their own, until `stop` (or `deadline`).
fn start_load(
    bases: Vec<String>,
    healthz_every: Duration,
    webhook_every: Duration,
    deadline: Instant,
    stop: Arc<AtomicBool>,
) -> (Instant, std::thread::JoinHandle<Vec<Sample>>) {
    let began = Instant::now();
    let handle = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap();
            let samples = Arc::new(Mutex::new(Vec::new()));
            // Another app's check run (a workflow's `GITHUB_TOKEN` made it): stored and queued
            // like any accepted delivery; the worker ignores it without calling GitHub.
            let mut payload = check_run_event("rerequested", "0123456789abcdef0123456789abcdef01234567", None);
            payload["check_run"]["name"] = json!("ci / tests");
            payload["check_run"]["app"]["id"] = json!(GITHUB_ACTIONS_APP_ID);
            let body = serde_json::to_vec(&payload).unwrap();
            let signature = sign(SECRET.as_bytes(), &body);
            let mut healthz = tokio::time::interval(healthz_every);
            let mut webhook = tokio::time::interval(webhook_every);
            // An open-loop schedule: a tick missed while the thread was descheduled is skipped,
            // not sent in a burst (each request runs in its own task, so slow answers queue nothing).
            healthz.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            webhook.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            let (mut nh, mut nw) = (0usize, 0usize);
            let mut tasks = Vec::new();
            while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                let is_healthz = tokio::select! {
                    _ = healthz.tick() => true,
                    _ = webhook.tick() => false,
                };
                let (http, samples) = (http.clone(), samples.clone());
                let request = if is_healthz {
                    nh += 1;
                    http.get(format!("{}/healthz", bases[nh % bases.len()]))
                } else {
                    nw += 1;
                    http.post(format!("{}/webhook", bases[nw % bases.len()]))
                        .header("content-type", "application/json")
                        .header("x-github-event", "check_run")
                        .header("x-github-delivery", format!("load-{nw:08}"))
                        .header("x-hub-signature-256", signature.clone())
                        .body(body.clone())
                };
                tasks.push(tokio::spawn(async move {
                    let sent = Instant::now();
                    let status = match request.send().await {
                        Ok(resp) => {
                            let status = resp.status().as_u16();
                            resp.bytes().await.ok().map(|_| status)
                        }
                        Err(_) => None,
                    };
                    let sample = Sample {
                        healthz: is_healthz,
                        sent: sent - began,
                        took: sent.elapsed(),
                        status,
                    };
                    samples.lock().unwrap().push(sample);
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
            let samples = samples.lock().unwrap().clone();
            samples
        })
    });
    (began, handle)
}

/// The verdict `flakegate check` gives the same coverage and diff (no ledger, no results).
fn expected_verdict(args: &Args) -> String {
    let today = chrono::Utc::now().date_naive().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["check", "--format", "json", "--today", &today, "--coverage"])
        .arg(&args.json)
        .arg("--diff")
        .arg(&args.diff)
        .output()
        .expect("running flakegate check");
    let record: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "flakegate check printed no JSON record ({e}); status {}, stderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    record["verdict"]
        .as_str()
        .unwrap_or_else(|| panic!("no verdict in the record: {record}"))
        .to_owned()
}

/// An evaluation as the fake GitHub sees it: when its artifact was asked for, when its check
/// run was completed.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    download: Option<Duration>,
    completed: Option<Duration>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = parse_args();
    let zip = std::fs::read(&args.zip).unwrap_or_else(|e| usage(&format!("{}: {e}", args.zip.display())));
    let diff = std::fs::read_to_string(&args.diff).unwrap_or_else(|e| usage(&format!("{}: {e}", args.diff.display())));

    let t0 = Instant::now();
    let expected = expected_verdict(&args);
    println!(
        "flakegate check on the same coverage and diff: {expected} ({:.1} s)",
        t0.elapsed().as_secs_f64()
    );

    let fake = FakeGithub::start().await;
    let mut repos = Vec::new();
    for (i, name) in ["load-a", "load-b"].into_iter().enumerate() {
        let repo = FakeRepo::mount(&fake, OWNER, name).await;
        let head = format!("{:040x}", 0xa11_0000 + i);
        repo.add_pull(PR, BASE_SHA, &head, &diff);
        repo.add_workflow_run(100 + i as u64, ARTIFACT, ArtifactState::Zip(zip.clone()));
        repos.push((repo, head));
    }
    drop(zip);

    // Several instances share a queue on PostgreSQL (SQLite is one file for one instance):
    // a database of its own in `FLAKEGATE_TEST_POSTGRES`, else in a throwaway cluster.
    let db_url = {
        use sqlx::Connection as _;
        let server = support::postgres::url();
        let name = format!("app_load_{}", std::process::id());
        let mut conn = sqlx::PgConnection::connect(&server)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL is not reachable at {server}: {e}"));
        for sql in [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ] {
            sqlx::raw_sql(&sql).execute(&mut conn).await.unwrap();
        }
        with_database(&server, &name)
    };
    let instances = [
        ServeProcess::start_binary(&args.serve_bin, "load-a", &fake, &db_url, SECRET, &[]).await,
        ServeProcess::start_binary(&args.serve_bin, "load-b", &fake, &db_url, SECRET, &[]).await,
    ];

    // The load first, alone for `--idle-seconds` (the same machine without evaluations, for
    // comparison), then the two evaluations, one delivery to each instance.
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(args.idle_seconds + args.max_seconds);
    let bases = instances.iter().map(|p| p.base.clone()).collect();
    let (began, load) = start_load(bases, args.healthz_every, args.webhook_every, deadline, stop.clone());
    tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
    let delivered = began.elapsed();
    let http = reqwest::Client::new();
    for (i, (repo, head)) in repos.iter().enumerate() {
        let mut p = workflow_run_completed(100 + i as u64, head, WORKFLOW, &[(PR, BASE_SHA)]);
        p["repository"]["full_name"] = json!(repo.full_name());
        p["repository"]["name"] = json!(repo.name);
        p["workflow_run"]["pull_requests"][0]["base"]["repo"]["url"] =
            json!(format!("https://api.github.com/repos/{}", repo.full_name()));
        let body = serde_json::to_vec(&p).unwrap();
        let resp = http
            .post(format!("{}/webhook", instances[i].base))
            .header("content-type", "application/json")
            .header("x-github-event", "workflow_run")
            .header("x-github-delivery", format!("evaluation-{i}"))
            .header("x-hub-signature-256", sign(SECRET.as_bytes(), &body))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 202, "{}", resp.text().await.unwrap());
    }

    // Watch the fake GitHub: when each artifact is asked for and each check run completes.
    let mut seen = [Seen::default(); 2];
    while Instant::now() < deadline && seen.iter().any(|s| s.completed.is_none()) {
        for (s, (repo, head)) in seen.iter_mut().zip(&repos) {
            if s.download.is_none() && repo.calls("GET", op::ARTIFACT_ZIP) > 0 {
                s.download = Some(began.elapsed());
            }
            if s.completed.is_none() && repo.check_runs_for(head).iter().any(|c| c.status == "completed") {
                s.completed = Some(began.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let samples = load.join().expect("the load thread panicked");
    let load_end = samples.iter().map(|s| s.sent + s.took).max().unwrap_or_default();

    println!(
        "\nload: /healthz every {} ms, a signed check_run delivery every {} ms, over {:.1} s",
        args.healthz_every.as_millis(),
        args.webhook_every.as_millis(),
        load_end.as_secs_f64()
    );
    for (i, s) in seen.iter().enumerate() {
        let at = |d: Option<Duration>| d.map_or("never".to_owned(), |d| format!("{:.2} s", d.as_secs_f64()));
        println!(
            "evaluation {}: artifact asked for at {}, check run completed at {}",
            repos[i].0.full_name(),
            at(s.download),
            at(s.completed)
        );
    }
    let all = |healthz: bool| samples.iter().filter(move |s| s.healthz == healthz);
    println!(
        "no evaluation running (before the deliveries at {:.2} s):",
        delivered.as_secs_f64()
    );
    let idle = |healthz: bool| all(healthz).filter(move |s| s.sent < delivered);
    print_stats("/healthz", &stats(idle(true), 200), HEALTHZ_P99_MS);
    print_stats("webhook", &stats(idle(false), 202), ACK_P99_MS);
    println!("whole load:");
    print_stats("/healthz", &stats(all(true), 200), HEALTHZ_P99_MS);
    print_stats("webhook", &stats(all(false), 202), ACK_P99_MS);
    let window = match (seen[0], seen[1]) {
        (
            Seen {
                download: Some(a),
                completed: Some(c),
            },
            Seen {
                download: Some(b),
                completed: Some(d),
            },
        ) if a.max(b) < c.min(d) => Some((a.max(b), c.min(d))),
        _ => None,
    };
    match window {
        Some((from, to)) => {
            println!(
                "both evaluations running: {:.2} s to {:.2} s ({:.2} s)",
                from.as_secs_f64(),
                to.as_secs_f64(),
                (to - from).as_secs_f64()
            );
            let inside = |healthz: bool| all(healthz).filter(move |s| s.sent >= from && s.sent < to);
            print_stats("/healthz", &stats(inside(true), 200), HEALTHZ_P99_MS);
            print_stats("webhook", &stats(inside(false), 202), ACK_P99_MS);
        }
        None => println!("the two evaluations never ran at the same time: no window to report"),
    }

    // Each check run completed with the verdict the command line gives the same inputs.
    let mut ok = true;
    for (repo, head) in &repos {
        let runs = repo.check_runs_for(head);
        let done = runs.iter().find(|c| c.status == "completed");
        match done {
            Some(c)
                if c.title
                    .as_deref()
                    .is_some_and(|t| t == expected || t.starts_with(&format!("{expected}:"))) =>
            {
                println!(
                    "{}: check run completed, {} ({})",
                    repo.full_name(),
                    c.title.as_deref().unwrap_or(""),
                    c.conclusion.as_deref().unwrap_or("")
                )
            }
            _ => {
                ok = false;
                println!(
                    "{}: check run not completed with {expected}: {runs:#?}",
                    repo.full_name()
                );
            }
        }
    }
    if !ok || window.is_none() {
        for p in &instances {
            eprintln!("--- {} log (last 30 lines):\n{}", p.name, p.tail(30));
        }
        // `exit` runs no destructors: stop the serve processes first.
        drop(instances);
        std::process::exit(1);
    }
    drop(instances);
    fake.verify().await;
}
