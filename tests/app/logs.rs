//! `flakegate serve` started as a process with `FLAKEGATE_LOG_FORMAT=json`, against the fake
//! GitHub and a SQLite file: every line it writes on stderr is a JSON object, and the
//! delivery's and the job's log lines carry the repository, pull request and sha of their span.
//! Its `/metrics` counts what it did.

use crate::support::app_harness::{case, pull_request_event, stage_case, NAME, OWNER};
use crate::support::fake_github::FakeGithub;
use crate::support::fake_repo::FakeRepo;
use crate::support::serve_process::ServeProcess;
use flakegate::server::signature::sign;
use serde_json::Value;
use std::process::Command;

const SECRET: &str = "log-test-webhook-secret";

/// The fields of span `name` in a JSON log line's span list.
fn span<'a>(line: &'a Value, name: &str) -> Option<&'a Value> {
    line["spans"].as_array()?.iter().find(|s| s["name"] == name)
}

#[tokio::test]
async fn json_logs_carry_the_delivery_and_job_spans() {
    let fake = FakeGithub::start().await;
    let repo = FakeRepo::mount(&fake, OWNER, NAME).await;
    let c = case("some_frozen");
    stage_case(&repo, 7, &c, 100);
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.path().join("flakegate.db").display());
    let mut serve = ServeProcess::start("logs", &fake, &db, SECRET, &[]).await;

    let serving = serve.wait_for("\"serving\"", |l| l.contains("\"serving\"")).await;
    let serving: Value = serde_json::from_str(&serving).unwrap();
    let addr = serving["fields"]["listen"].as_str().unwrap().to_owned();
    assert!(addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"), "{addr}");

    let body = serde_json::to_vec(&pull_request_event("opened", 7, &c.base_sha, &c.head_sha)).unwrap();
    let http = reqwest::Client::new();
    let resp = http
        .post(format!("http://{addr}/webhook"))
        .header("x-github-event", "pull_request")
        .header("x-github-delivery", "log-delivery-1")
        .header("x-hub-signature-256", sign(SECRET.as_bytes(), &body))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202);
    serve
        .wait_for("\"check run queued\"", |l| l.contains("check run queued"))
        .await;
    serve.wait_for("\"job done\"", |l| l.contains("\"job done\"")).await;
    assert_eq!(repo.check_runs_for(&c.head_sha).len(), 1);

    let metrics = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "flakegate_webhook_deliveries_total{event=\"pull_request\",outcome=\"accepted\"} 1",
        "flakegate_job_attempts_total{outcome=\"done\"} 1",
        "flakegate_job_latency_seconds_count 1",
        "flakegate_jobs{state=\"running\"} 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} missing from\n{metrics}");
    }
    assert!(
        metrics.contains("flakegate_github_requests_total{class=\"2xx\",code=\"201\"} 1"),
        "the check run's creation: {metrics}"
    );

    let lines = serve.lines();
    let json: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    for v in &json {
        assert!(v["timestamp"].is_string() && v["level"].is_string(), "{v}");
        assert!(v["fields"]["message"].is_string(), "{v}");
    }
    let repo_name = format!("{OWNER}/{NAME}");
    let queued = json
        .iter()
        .find(|v| v["fields"]["message"] == "queued")
        .expect("the delivery's \"queued\" line");
    let delivery = span(queued, "delivery").unwrap_or_else(|| panic!("no delivery span: {queued}"));
    assert_eq!(delivery["delivery_id"], "log-delivery-1", "{queued}");
    assert_eq!(delivery["event"], "pull_request");
    assert_eq!(delivery["action"], "opened");
    assert_eq!(delivery["repository"], repo_name.as_str());
    assert_eq!(delivery["pull_request"], 7);
    assert_eq!(delivery["sha"], c.head_sha.as_str());

    let created = json
        .iter()
        .find(|v| v["fields"]["message"] == "check run queued")
        .unwrap();
    let job = span(created, "job").unwrap_or_else(|| panic!("no job span: {created}"));
    assert_eq!(job["delivery_id"], "log-delivery-1", "{created}");
    assert_eq!(job["repository"], repo_name.as_str());
    assert_eq!(job["pull_request"], 7);
    assert_eq!(job["sha"], c.head_sha.as_str());
    assert_eq!(created["span"]["name"], "job", "the current span: {created}");
    drop(serve);
    fake.verify().await;
}

#[tokio::test]
async fn an_unknown_log_format_stops_the_start_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .arg("serve")
        .env_clear()
        .env("FLAKEGATE_LOG_FORMAT", "yaml")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("FLAKEGATE_LOG_FORMAT=\"yaml\": expected text or json"),
        "{err}"
    );
}
