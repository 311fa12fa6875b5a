//! `GET /metrics` after real deliveries and jobs: signed webhooks into the real router, the real
//! SQLite store and worker, the GitHub client against the fake GitHub (one 502 with a rate-limit
//! header injected). The exposition is parsed, not grepped: every sample line must be well
//! formed and belong to a family declared with `# TYPE`.

use crate::support::app_harness::{
    case, patch_repo, pull_request_event, sample, stage_case, workflow_run_completed, App, NAME, OWNER, WORKFLOW,
};
use crate::support::fake_repo::FakeRepo;
use flakegate::server::signature::sign;
use flakegate::store::RetryPolicy;
use std::collections::BTreeMap;
use std::time::Duration;

/// The exposition as `series → value`, where a series is the metric name with its labels as
/// written (`name{a="x",b="y"}`). Panics, saying which line, on anything not in the text format.
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let at = || format!("line {}: {line:?}", i + 1);
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("{}", at()));
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{}", at());
            assert!(
                types.insert(name.to_owned(), kind.to_owned()).is_none(),
                "declared twice: {}",
                at()
            );
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{}", at()));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value: {}", at()));
        let name = series.split('{').next().unwrap();
        assert!(
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "name: {}",
            at()
        );
        if let Some(labels) = series.strip_prefix(name) {
            if !labels.is_empty() {
                let inner = labels
                    .strip_prefix('{')
                    .and_then(|l| l.strip_suffix('}'))
                    .unwrap_or_else(|| panic!("labels: {}", at()));
                for pair in inner.split(',') {
                    let (k, v) = pair.split_once('=').unwrap_or_else(|| panic!("label: {}", at()));
                    assert!(
                        k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                        "label name: {}",
                        at()
                    );
                    assert!(
                        v.len() >= 2 && v.starts_with('"') && v.ends_with('"'),
                        "label value: {}",
                        at()
                    );
                }
            }
        }
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).is_some_and(|k| k == "histogram"))
            })
            .unwrap_or(name);
        assert!(types.contains_key(family), "no # TYPE before {}", at());
        assert!(samples.insert(series.to_owned(), value).is_none(), "repeated: {}", at());
    }
    samples
}

async fn scrape(app: &App) -> BTreeMap<String, f64> {
    let (status, text) = app.get("/metrics").await;
    assert_eq!(status, 200, "{text}");
    parse(&text)
}

fn value(m: &BTreeMap<String, f64>, series: &str) -> f64 {
    *m.get(series).unwrap_or_else(|| panic!("{series} missing from {m:#?}"))
}

#[tokio::test]
async fn deliveries_jobs_latency_and_github_calls_are_counted() {
    let app = App::start(RetryPolicy::default()).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let c = case("some_frozen");
    stage_case(&repo, 7, &c, 100);
    // The first read of the pull request gets a 502 that says how much rate limit is left.
    repo.fail_next(
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        1,
        502,
        &[("x-ratelimit-remaining", "4321")],
    );

    let opened = pull_request_event("opened", 7, &c.base_sha, &c.head_sha);
    let id = app.deliver("pull_request", &opened).await;
    assert_eq!(app.post("pull_request", &id, &opened).await.0, 200, "a redelivery");
    let mut push = sample("push");
    patch_repo(&mut push);
    assert_eq!(app.post("push", "push-1", &push).await, (200, "ignored".to_owned()));
    // Unsigned: one under a known event's name, one whose made-up name must not become a label.
    let http = reqwest::Client::new();
    for event in ["pull_request", "made_up_event"] {
        let status = http
            .post(format!("{}/webhook", app.base))
            .header("x-github-event", event)
            .header("x-github-delivery", "forged")
            .header("x-hub-signature-256", sign(b"not the secret", b"{}"))
            .body("{}")
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), 401);
    }

    let m = scrape(&app).await;
    for (series, want) in [
        (
            "flakegate_webhook_deliveries_total{event=\"pull_request\",outcome=\"accepted\"}",
            1.0,
        ),
        (
            "flakegate_webhook_deliveries_total{event=\"pull_request\",outcome=\"duplicate\"}",
            1.0,
        ),
        (
            "flakegate_webhook_deliveries_total{event=\"pull_request\",outcome=\"rejected\"}",
            1.0,
        ),
        (
            "flakegate_webhook_deliveries_total{event=\"push\",outcome=\"ignored\"}",
            1.0,
        ),
        (
            "flakegate_webhook_deliveries_total{event=\"other\",outcome=\"rejected\"}",
            1.0,
        ),
        ("flakegate_jobs{state=\"queued\"}", 1.0),
        ("flakegate_jobs{state=\"failed\"}", 0.0),
        ("flakegate_jobs{state=\"running\"}", 0.0),
        ("flakegate_jobs{state=\"dead\"}", 0.0),
        ("flakegate_job_latency_seconds_count", 0.0),
    ] {
        assert_eq!(value(&m, series), want, "{series}");
    }
    assert!(!m.keys().any(|k| k.contains("made_up_event")), "{m:#?}");

    // The first attempt meets the 502: the job waits to retry.
    app.advance(Duration::from_secs(3));
    app.worker.run_until_idle().await.unwrap();
    let m = scrape(&app).await;
    for (series, want) in [
        ("flakegate_jobs{state=\"queued\"}", 0.0),
        ("flakegate_jobs{state=\"failed\"}", 1.0),
        ("flakegate_job_attempts_total{outcome=\"retry\"}", 1.0),
        ("flakegate_github_requests_total{class=\"5xx\",code=\"502\"}", 1.0),
        ("flakegate_github_rate_limit_remaining{installation=\"31337\"}", 4321.0),
    ] {
        assert_eq!(value(&m, series), want, "{series}");
    }

    // The retry queues the check run 4 s after the delivery; the evidence comes 3 s after its
    // delivery and is judged.
    app.advance(Duration::from_secs(1));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    app.deliver(
        "workflow_run",
        &workflow_run_completed(100, &c.head_sha, WORKFLOW, &[(7, &c.base_sha)]),
    )
    .await;
    app.advance(Duration::from_secs(3));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    assert_eq!(repo.check_runs_for(&c.head_sha).len(), 1);

    let m = scrape(&app).await;
    for (series, want) in [
        (
            "flakegate_webhook_deliveries_total{event=\"workflow_run\",outcome=\"accepted\"}",
            1.0,
        ),
        // The evidence deadline, due later.
        ("flakegate_jobs{state=\"queued\"}", 1.0),
        ("flakegate_jobs{state=\"failed\"}", 0.0),
        ("flakegate_jobs{state=\"running\"}", 0.0),
        ("flakegate_job_attempts_total{outcome=\"done\"}", 2.0),
        ("flakegate_job_attempts_total{outcome=\"retry\"}", 1.0),
        ("flakegate_job_latency_seconds_bucket{le=\"2.5\"}", 0.0),
        ("flakegate_job_latency_seconds_bucket{le=\"5\"}", 2.0),
        ("flakegate_job_latency_seconds_bucket{le=\"+Inf\"}", 2.0),
        ("flakegate_job_latency_seconds_count", 2.0),
        ("flakegate_job_latency_seconds_sum", 7.0),
        ("flakegate_github_requests_total{class=\"5xx\",code=\"502\"}", 1.0),
    ] {
        assert_eq!(value(&m, series), want, "{series}");
    }
    // Every request the fake GitHub received, but the installation tokens octocrab fetches on
    // its own, was counted once.
    let received = app.fake.server.received_requests().await.unwrap().len();
    let counted: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("flakegate_github_requests_total{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(counted as usize, received - app.fake.token_requests());
    assert!(value(&m, "flakegate_github_requests_total{class=\"2xx\",code=\"200\"}") >= 3.0);
    assert!(value(&m, "flakegate_github_requests_total{class=\"2xx\",code=\"201\"}") >= 1.0);
    let App { fake, .. } = app;
    fake.verify().await;
}

#[tokio::test]
async fn the_job_gauges_come_from_the_store_of_every_instance() {
    // A second process's worker over the same store: the gauges are the store's, not this
    // process's; its attempts are its own.
    let app = App::start(RetryPolicy::default()).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let c = case("some_frozen");
    stage_case(&repo, 7, &c, 100);
    app.deliver(
        "pull_request",
        &pull_request_event("opened", 7, &c.base_sha, &c.head_sha),
    )
    .await;
    let (_store, other) = app.new_worker("other-instance").await;
    assert_eq!(other.run_until_idle().await.unwrap(), 1);
    let m = scrape(&app).await;
    assert_eq!(
        value(&m, "flakegate_jobs{state=\"queued\"}"),
        1.0,
        "the evidence deadline"
    );
    assert!(
        !m.contains_key("flakegate_job_attempts_total{outcome=\"done\"}"),
        "{m:#?}"
    );
}

/// The App guide's metrics table (docs/app.md, "Metrics") names exactly the families the
/// exposition declares, with their types.
#[test]
fn the_app_guide_lists_every_metric_with_its_type() {
    let guide = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/app.md")).unwrap();
    let listed: BTreeMap<String, String> = guide
        .lines()
        .filter_map(|l| l.strip_prefix("| `flakegate_"))
        .map(|rest| {
            let cells: Vec<&str> = rest.split('|').map(str::trim).collect();
            (
                format!("flakegate_{}", cells[0].trim_end_matches('`')),
                cells[1].to_owned(),
            )
        })
        .collect();
    let text = flakegate::metrics::Metrics::default().render(Some(flakegate::metrics::JobGauges::default()));
    let declared: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|rest| {
            let (name, kind) = rest.split_once(' ').unwrap();
            (name.to_owned(), kind.to_owned())
        })
        .collect();
    assert_eq!(listed, declared, "docs/app.md's metrics table against the exposition");
}

/// A store that cannot be read leaves the job gauges out (never zeros that look healthy) and
/// counts the failed scrape; the counters are still served.
#[tokio::test]
async fn an_unreadable_store_leaves_the_gauges_out_and_is_counted() {
    use sqlx::Connection as _;
    let app = App::start(RetryPolicy::default()).await;
    assert_eq!(value(&scrape(&app).await, "flakegate_store_errors_total"), 0.0);
    let mut conn = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
    sqlx::raw_sql("ALTER TABLE jobs RENAME TO jobs_gone")
        .execute(&mut conn)
        .await
        .unwrap();
    let m = scrape(&app).await;
    assert!(!m.keys().any(|k| k.starts_with("flakegate_jobs{")), "{m:#?}");
    assert_eq!(value(&m, "flakegate_store_errors_total"), 1.0);
    assert_eq!(value(&m, "flakegate_job_latency_seconds_count"), 0.0);
}
