//! `POST /webhook` through the real router on 127.0.0.1:0, with real payloads from
//! `tests/fixtures/github/webhooks/` signed like GitHub signs them, and a real SQLite store.

use flakegate::github::event::Event;
use flakegate::server::signature::sign;
use flakegate::server::{router, AppState};
use flakegate::store::{JobState, RetryPolicy, Store};
use secrecy::SecretString;
use std::path::PathBuf;
use std::sync::Arc;

const SECRET: &str = "test-webhook-secret";
const ROTATED: &str = "test-webhook-secret-next";

fn payload(name: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/github/webhooks");
    let path = dir.join(format!("{name}.json"));
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "webhook payload {} is missing ({e}): these tests read GitHub's sample payloads from \
             tests/fixtures/github/webhooks/",
            path.display()
        )
    })
}

struct App {
    base: String,
    store: Arc<Store>,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl App {
    async fn start() -> App {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("flakegate.db").display());
        let store = Arc::new(Store::open(&url, RetryPolicy::default()).await.unwrap());
        let state = AppState::new(
            store.clone(),
            vec![SecretString::from(SECRET), SecretString::from(ROTATED)],
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router(state)).await.unwrap() });
        App {
            base,
            store,
            http: reqwest::Client::new(),
            _dir: dir,
        }
    }

    async fn post(&self, event: &str, delivery: &str, body: Vec<u8>, signature: Option<String>) -> (u16, String) {
        let mut req = self
            .http
            .post(format!("{}/webhook", self.base))
            .header("content-type", "application/json")
            .header("x-github-event", event)
            .header("x-github-delivery", delivery);
        if let Some(sig) = signature {
            req = req.header("x-hub-signature-256", sig);
        }
        let resp = req.body(body).send().await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    /// Sends the sample `<event>.<action>` signed with the primary secret.
    async fn deliver(&self, sample: &str, delivery: &str) -> (u16, String) {
        let event = sample.split('.').next().unwrap();
        let body = payload(sample);
        let sig = sign(SECRET.as_bytes(), &body);
        self.post(event, delivery, body, Some(sig)).await
    }

    async fn get(&self, path: &str) -> (u16, String) {
        let resp = self.http.get(format!("{}{path}", self.base)).send().await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }
}

#[tokio::test]
async fn accepted_events_become_one_job_each() {
    let app = App::start().await;
    let cases = [
        ("pull_request.opened", "pull_request", "opened"),
        ("pull_request.synchronize", "pull_request", "synchronize"),
        ("pull_request.reopened", "pull_request", "reopened"),
        ("pull_request.ready_for_review", "pull_request", "ready_for_review"),
        ("workflow_run.completed", "workflow_run", "completed"),
        ("check_run.rerequested", "check_run", "rerequested"),
        ("check_run.requested_action", "check_run", "requested_action"),
        ("check_suite.rerequested", "check_suite", "rerequested"),
    ];
    for (i, (sample, _, _)) in cases.iter().enumerate() {
        assert_eq!(app.deliver(sample, &format!("delivery-{i}")).await.0, 202, "{sample}");
    }
    let jobs = app.store.jobs().await.unwrap();
    assert_eq!(jobs.len(), cases.len());
    for (i, (job, (sample, event, action))) in jobs.iter().zip(cases).enumerate() {
        assert_eq!(job.delivery_id, format!("delivery-{i}"));
        assert_eq!(
            (job.event.as_str(), job.action.as_deref()),
            (event, Some(action)),
            "{sample}"
        );
        assert!(job.repo.is_some() && job.head_sha.is_some(), "{sample}: {job:?}");
        // Only what the worker reads is stored: the same delivery, in a fraction of the bytes.
        let event = job.event.as_str();
        assert_eq!(
            Event::parse(event, job.payload.as_bytes()).unwrap(),
            Event::parse(event, &payload(sample)).unwrap(),
            "{sample}"
        );
        assert!(
            job.payload.len() * 4 < payload(sample).len(),
            "{sample}: {}",
            job.payload
        );
    }
    let opened = &jobs[0];
    assert_eq!(opened.repo.as_deref(), Some("Codertocat/Hello-World"));
    assert_eq!(opened.pr, Some(2));
}

#[tokio::test]
async fn redelivery_makes_no_second_job() {
    let app = App::start().await;
    assert_eq!(app.deliver("workflow_run.completed", "same-id").await.0, 202);
    assert_eq!(
        app.deliver("workflow_run.completed", "same-id").await,
        (200, "duplicate".to_owned())
    );
    assert_eq!(app.store.jobs().await.unwrap().len(), 1);
}

/// Deliveries arrive out of order, so a pull_request delivery is no proof of the current head:
/// the server supersedes nothing (the worker does, once GitHub says which head is current).
#[tokio::test]
async fn a_new_head_delivery_supersedes_nothing_at_the_door() {
    let app = App::start().await;
    // workflow_run.completed.with-pull-requests names a pull request; make a newer push to it.
    let wr = payload("workflow_run.completed.with-pull-requests");
    let v: serde_json::Value = serde_json::from_slice(&wr).unwrap();
    let repo = v["repository"]["full_name"].as_str().unwrap().to_owned();
    let pr = v["workflow_run"]["pull_requests"][0]["number"].as_u64().unwrap();
    let sig = sign(SECRET.as_bytes(), &wr);
    assert_eq!(app.post("workflow_run", "old-run", wr, Some(sig)).await.0, 202);

    let mut sync: serde_json::Value = serde_json::from_slice(&payload("pull_request.synchronize")).unwrap();
    sync["repository"]["full_name"] = repo.clone().into();
    sync["number"] = pr.into();
    sync["pull_request"]["number"] = pr.into();
    sync["pull_request"]["head"]["sha"] = "ffffffffffffffffffffffffffffffffffffffff".into();
    let body = serde_json::to_vec(&sync).unwrap();
    let sig = sign(SECRET.as_bytes(), &body);
    assert_eq!(app.post("pull_request", "push", body, Some(sig)).await.0, 202);

    let states: Vec<_> = app
        .store
        .jobs()
        .await
        .unwrap()
        .into_iter()
        .map(|j| (j.delivery_id, j.state))
        .collect();
    assert_eq!(
        states,
        [
            ("old-run".to_owned(), JobState::Queued),
            ("push".to_owned(), JobState::Queued)
        ]
    );
}

#[tokio::test]
async fn bad_signatures_are_401_and_make_no_job() {
    let app = App::start().await;
    let body = payload("pull_request.opened");
    let cases = [
        None,
        Some("sha256=".to_owned()),
        Some(sign(b"wrong secret", &body)),
        Some(sign(SECRET.as_bytes(), b"another body")),
        Some(sign(SECRET.as_bytes(), &body).replace("sha256=", "sha1=")),
    ];
    for (i, sig) in cases.into_iter().enumerate() {
        let (status, _) = app
            .post("pull_request", &format!("forged-{i}"), body.clone(), sig.clone())
            .await;
        assert_eq!(status, 401, "{sig:?}");
    }
    assert!(app.store.jobs().await.unwrap().is_empty());
    let (_, metrics) = app.get("/metrics").await;
    assert!(
        metrics.contains("flakegate_webhook_deliveries_total{event=\"pull_request\",outcome=\"rejected\"} 5"),
        "{metrics}"
    );
}

#[tokio::test]
async fn rotated_secret_is_accepted() {
    let app = App::start().await;
    let body = payload("pull_request.opened");
    let sig = sign(ROTATED.as_bytes(), &body);
    assert_eq!(app.post("pull_request", "rotated", body, Some(sig)).await.0, 202);
    assert_eq!(app.store.jobs().await.unwrap().len(), 1);
}

#[tokio::test]
async fn oversized_body_is_413() {
    let app = App::start().await;
    let body = vec![b' '; 26 * 1024 * 1024];
    let sig = sign(SECRET.as_bytes(), &body);
    assert_eq!(app.post("pull_request", "huge", body, Some(sig)).await.0, 413);
    assert!(app.store.jobs().await.unwrap().is_empty());
}

#[tokio::test]
async fn other_events_and_actions_are_ignored() {
    let app = App::start().await;
    for sample in [
        "push",
        "pull_request.closed",
        "pull_request.edited.derived",
        "workflow_run.requested",
        "check_run.completed",
        "check_suite.requested",
        "installation.created",
    ] {
        assert_eq!(
            app.deliver(sample, sample).await,
            (200, "ignored".to_owned()),
            "{sample}"
        );
    }
    assert_eq!(app.deliver("ping", "ping-1").await.0, 200);
    assert_eq!(app.deliver("ping.with-app_id", "ping-2").await.0, 200);
    assert!(app.store.jobs().await.unwrap().is_empty());
}

#[tokio::test]
async fn healthz_and_metrics() {
    let app = App::start().await;
    assert_eq!(app.get("/healthz").await, (200, "ok".to_owned()));
    app.deliver("pull_request.opened", "a").await;
    app.deliver("pull_request.opened", "a").await;
    app.deliver("push", "b").await;
    let (status, metrics) = app.get("/metrics").await;
    assert_eq!(status, 200);
    for line in [
        "# TYPE flakegate_webhook_deliveries_total counter",
        "flakegate_webhook_deliveries_total{event=\"pull_request\",outcome=\"accepted\"} 1",
        "flakegate_webhook_deliveries_total{event=\"pull_request\",outcome=\"duplicate\"} 1",
        "flakegate_webhook_deliveries_total{event=\"push\",outcome=\"ignored\"} 1",
        "flakegate_jobs{state=\"queued\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} missing from\n{metrics}");
    }
    assert!(!metrics.contains("outcome=\"rejected\""), "{metrics}");
}

#[tokio::test]
async fn serve_on_runs_the_worker_and_stops_both_on_shutdown() {
    use flakegate::runtime::{Shutdown, Task};
    use flakegate::server::serve_on;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("flakegate.db").display());
    let store = Arc::new(Store::open(&url, RetryPolicy::default()).await.unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let worker_store = store.clone();
    let worker: Task = Box::new(move |shutdown: Shutdown| {
        Box::pin(async move {
            let store = worker_store;
            store.ping().await?;
            started_tx.send(()).unwrap();
            shutdown.triggered().await;
            Ok(())
        })
    });
    let (trigger, shutdown) = Shutdown::channel();
    let state = AppState::new(store, vec![SecretString::from(SECRET)]);
    let server = tokio::spawn(serve_on(listener, state, Some(worker), shutdown));
    started_rx.await.unwrap();
    let resp = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    trigger.send(true).unwrap();
    server.await.unwrap().unwrap();
}

/// Sends raw request bytes and returns the status line of the answer (a hang guard,
/// not a timing assertion: the answer must come without the body ever being sent).
async fn raw_status(base: &str, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(std::time::Duration::from_secs(60), s.read(&mut buf))
        .await
        .expect("the server answers without waiting for the body")
        .unwrap();
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test]
async fn bodies_are_refused_by_their_length_before_a_byte_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("flakegate.db").display());
    let store = Arc::new(Store::open(&url, RetryPolicy::default()).await.unwrap());
    let mut state = AppState::new(store.clone(), vec![SecretString::from(SECRET)]);
    // A budget of 1000 bytes in flight, so one declared 2000-byte body exceeds it.
    state.limits = flakegate::server::Limits::new(
        flakegate::server::webhook::MAX_BODY,
        1000,
        std::time::Duration::from_secs(10),
        std::time::Duration::from_secs(10),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router(state)).await.unwrap() });

    let head = |len: &str| {
        format!(
            "POST /webhook HTTP/1.1\r\nhost: x\r\nx-github-event: ping\r\nx-github-delivery: d\r\ncontent-type: application/json\r\n{len}\r\n"
        )
    };
    // Larger than GitHub sends: 413 at once, the body never sent.
    let big = head("content-length: 30000000\r\n");
    assert!(raw_status(&base, big.as_bytes()).await.contains(" 413 "));
    // More than the in-flight budget could ever hold: 503 at once.
    let over = head("content-length: 2000\r\n");
    assert!(raw_status(&base, over.as_bytes()).await.contains(" 503 "));
    // No length: 411.
    let chunked = head("transfer-encoding: chunked\r\n");
    assert!(raw_status(&base, chunked.as_bytes()).await.contains(" 411 "));
    // /healthz still answers, and nothing was queued.
    let resp = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(store.jobs().await.unwrap().is_empty());
}

/// Reads until the server answers or closes; returns what it sent (empty: closed
/// without an answer). A hang guard, not a timing assertion.
async fn answer_or_close(s: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt as _;
    let mut buf = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(60), s.read_to_end(&mut buf))
        .await
        .expect("the server cuts a slow client off");
    // A reset is a close too.
    let _ = read;
    String::from_utf8_lossy(&buf).into_owned()
}

#[tokio::test]
async fn slow_headers_and_bodies_are_cut_off_and_their_budget_returned() {
    use flakegate::runtime::Shutdown;
    use flakegate::server::{serve_on, Limits};
    use std::time::Duration;
    use tokio::io::AsyncWriteExt as _;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("flakegate.db").display());
    let store = Arc::new(Store::open(&url, RetryPolicy::default()).await.unwrap());
    let mut state = AppState::new(store.clone(), vec![SecretString::from(SECRET)]);
    // Room for one 1500-byte body in flight; slow clients cut off after a second.
    state.limits = Limits::new(
        flakegate::server::webhook::MAX_BODY,
        2000,
        Duration::from_secs(1),
        Duration::from_secs(1),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let (trigger, shutdown) = Shutdown::channel();
    let server = tokio::spawn(serve_on(listener, state, None, shutdown));

    // Headers that never finish.
    let mut slow_headers = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow_headers
        .write_all(b"POST /webhook HTTP/1.1\r\nhost: x\r\nx-github-event: ping\r\n")
        .await
        .unwrap();
    // A body that never finishes: it holds the 1400 bytes it sent of its 1500 while it is read.
    let mut slow_body = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow_body
        .write_all(
            b"POST /webhook HTTP/1.1\r\nhost: x\r\nx-github-event: ping\r\nx-github-delivery: d1\r\n\
              content-type: application/json\r\ncontent-length: 1500\r\n\r\n",
        )
        .await
        .unwrap();
    slow_body.write_all(&[b' '; 1400]).await.unwrap();
    // Meanwhile /healthz answers.
    let resp = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);

    let small = br#"{"zen":"Keep it logically awesome.","hook_id":1}"#;
    let signed = |delivery: &str| {
        reqwest::Client::new()
            .post(format!("{base}/webhook"))
            .header("x-github-event", "ping")
            .header("x-github-delivery", delivery.to_owned())
            .header("x-hub-signature-256", sign(SECRET.as_bytes(), small))
            .header("content-type", "application/json")
            .body(small.to_vec())
    };
    // While the slow body holds its bytes, a second one whose bytes would overrun the budget
    // is turned away as they arrive, without waiting for the rest.
    let mut over = tokio::net::TcpStream::connect(addr).await.unwrap();
    over.write_all(
        b"POST /webhook HTTP/1.1\r\nhost: x\r\nx-github-event: ping\r\nx-github-delivery: d2\r\n\
          content-type: application/json\r\ncontent-length: 1500\r\nconnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    over.write_all(&[b' '; 700]).await.unwrap();
    let answer = answer_or_close(&mut over).await;
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");

    // The slow body gets 408; the slow headers are closed without a request.
    let answer = answer_or_close(&mut slow_body).await;
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    let answer = answer_or_close(&mut slow_headers).await;
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408 "), "{answer}");

    // The budget is whole again: a signed delivery is answered.
    let resp = signed("d3").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.text().await.unwrap(), "pong");
    assert!(store.jobs().await.unwrap().is_empty());

    trigger.send(true).unwrap();
    server.await.unwrap().unwrap();
}

/// Connects to `addr` from `from` (any address of 127.0.0.0/8 is this machine's on Linux), so
/// one test can be several clients.
async fn connect_from(from: &str, addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(addr).await.unwrap()
}

/// The head of an unsigned `POST /webhook` declaring a `len`-byte body.
fn unsigned_head(delivery: &str, len: usize) -> Vec<u8> {
    format!(
        "POST /webhook HTTP/1.1\r\nhost: x\r\nx-github-event: pull_request\r\nx-github-delivery: {delivery}\r\n\
         x-hub-signature-256: sha256={}\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n",
        "0".repeat(64)
    )
    .into_bytes()
}

/// Unsigned clients that declare GitHub-sized bodies and send nothing, or trickle, hold none of
/// the budget; clients that do send their bytes hold at most 32 MiB per address while unverified.
/// A signed delivery from another address, or from the greedy one's, is accepted within a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_clients_cannot_starve_a_signed_delivery() {
    use flakegate::runtime::Shutdown;
    use flakegate::server::{serve_on, DEFAULT_BODY_BUDGET, DEFAULT_CLIENT_BUDGET};
    use std::time::{Duration, Instant};
    use tokio::io::AsyncWriteExt as _;
    const MIB: usize = 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("flakegate.db").display());
    let store = Arc::new(Store::open(&url, RetryPolicy::default()).await.unwrap());
    // The defaults: 64 MiB in all, 32 MiB per client, bodies within 10 s.
    let state = AppState::new(store.clone(), vec![SecretString::from(SECRET)]);
    let budget = state.limits.budget.clone();
    assert_eq!(
        (budget.capacity(), budget.per_client()),
        (DEFAULT_BODY_BUDGET, DEFAULT_CLIENT_BUDGET)
    );
    assert_eq!((DEFAULT_BODY_BUDGET, DEFAULT_CLIENT_BUDGET), (64 * MIB, 32 * MIB));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (trigger, shutdown) = Shutdown::channel();
    let server = tokio::spawn(serve_on(listener, state, None, shutdown));
    let attacker: std::net::IpAddr = "127.0.0.1".parse().unwrap();

    // The starvation of old: 25 + 25 + 14 MiB declared, nothing sent.
    let mut silent = Vec::new();
    for (i, len) in [25 * MIB, 25 * MIB, 14 * MIB].into_iter().enumerate() {
        let mut s = connect_from("127.0.0.1", addr).await;
        s.write_all(&unsigned_head(&format!("silent-{i}"), len)).await.unwrap();
        silent.push(s);
    }
    // Two more declare 25 MiB and trickle a byte every 50 ms (for at most 3 s).
    let mut tricklers = Vec::new();
    for i in 0..2 {
        let mut s = connect_from("127.0.0.1", addr).await;
        s.write_all(&unsigned_head(&format!("trickle-{i}"), 25 * MIB))
            .await
            .unwrap();
        tricklers.push(tokio::spawn(async move {
            for _ in 0..60 {
                if s.write_all(b" ").await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            s
        }));
    }
    // Greedy clients send all but the last byte of 24 MiB at once: one from the attacker's
    // address, one from another.
    let greedy = |from: &'static str, delivery: &'static str, len: usize| async move {
        let mut s = connect_from(from, addr).await;
        s.write_all(&unsigned_head(delivery, len)).await.unwrap();
        s.write_all(&vec![b' '; len - 1]).await.unwrap();
        s
    };
    let greedy_a = greedy("127.0.0.1", "greedy-a", 24 * MIB).await;
    let greedy_c = greedy("127.0.0.3", "greedy-c", 24 * MIB).await;
    // What the server holds is what it received: wait until it has the greedy bytes.
    let deadline = Instant::now() + Duration::from_secs(60);
    while budget.held_by(attacker) < 24 * MIB - 1 || budget.held_by("127.0.0.3".parse().unwrap()) < 24 * MIB - 1 {
        assert!(Instant::now() < deadline, "the server never received the greedy bodies");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let held = DEFAULT_BODY_BUDGET - budget.available();
    assert!(
        (48 * MIB - 2..48 * MIB + 200).contains(&held),
        "received bytes are charged, declared ones are not: {held}"
    );
    // The attacker's address has 8 MiB of its 32 left: a further 10 MiB body is refused as
    // its bytes arrive.
    let mut more = connect_from("127.0.0.1", addr).await;
    more.write_all(&unsigned_head("greedy-a2", 10 * MIB)).await.unwrap();
    // The server may stop reading once it refused: the rest of the write is abandoned.
    let _ = tokio::time::timeout(Duration::from_secs(5), more.write_all(&vec![b' '; 10 * MIB])).await;
    let answer = answer_or_close(&mut more).await;
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");

    // Signed deliveries, from a third address and from the attacker's own, get through.
    let body = payload("pull_request.opened");
    for (from, delivery) in [("127.0.0.2", "signed-1"), ("127.0.0.1", "signed-2")] {
        let http = reqwest::Client::builder()
            .local_address(from.parse::<std::net::IpAddr>().unwrap())
            .build()
            .unwrap();
        let started = Instant::now();
        let resp = http
            .post(format!("http://{addr}/webhook"))
            .header("content-type", "application/json")
            .header("x-github-event", "pull_request")
            .header("x-github-delivery", delivery)
            .header("x-hub-signature-256", sign(SECRET.as_bytes(), &body))
            .body(body.clone())
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .unwrap();
        let took = started.elapsed();
        assert_eq!(resp.status().as_u16(), 202, "{from}: {}", resp.text().await.unwrap());
        assert!(took < Duration::from_secs(1), "{from}: accepted after {took:?}");
    }
    let jobs: Vec<_> = store.jobs().await.unwrap().into_iter().map(|j| j.delivery_id).collect();
    assert_eq!(jobs, ["signed-1", "signed-2"]);

    // The clients go away: every byte they held is returned.
    drop((silent, greedy_a, greedy_c, more));
    for t in tricklers {
        drop(t.await.unwrap());
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while budget.available() < DEFAULT_BODY_BUDGET || budget.held_by(attacker) > 0 {
        assert!(
            Instant::now() < deadline,
            "the budget was not returned: {} free",
            budget.available()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    trigger.send(true).unwrap();
    server.await.unwrap().unwrap();
}
