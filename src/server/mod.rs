//! The App's HTTP face: `POST /webhook` (verify, dedupe, queue, 202), `GET /healthz`,
//! `GET /metrics`, and `serve`, which runs the router and an optional worker until
//! SIGTERM/SIGINT.

pub mod budget;
pub mod signature;
mod slim;
pub mod webhook;

use crate::app_config::AppConfig;
use crate::runtime::{Clock, Shutdown, Task};
use crate::store::Store;
use anyhow::Context as _;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use chrono::Utc;
use secrecy::SecretString;
use std::sync::Arc;
use std::time::Duration;

use crate::metrics::Metrics;

/// What an unauthenticated client can make the server hold: the body of a webhook is
/// read before its signature can be checked.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest body accepted, by `Content-Length`, before reading it (at most `u32::MAX`).
    pub max_body: usize,
    /// Bytes of webhook bodies received and being read or handled, over all connections, and
    /// per client while unverified ([`budget`]).
    pub budget: Arc<budget::Budget>,
    /// A body must arrive within this long.
    pub body_timeout: Duration,
    /// A request's headers must arrive within this long (slow-header connections are closed).
    pub header_timeout: Duration,
    /// The header a proxy in front of the App sets to the client's address
    /// (`FLAKEGATE_CLIENT_IP_HEADER`, `Fly-Client-IP` on fly.io), for the client budget;
    /// `None`: the connection's peer address is the client.
    pub client_ip_header: Option<header::HeaderName>,
}

/// Bytes of webhook bodies in flight at once by default: a few of GitHub's largest.
pub const DEFAULT_BODY_BUDGET: usize = 64 * 1024 * 1024;

/// Bytes of unverified webhook bodies one client may hold at once by default: half the
/// total, so one address can never take it all from a signed delivery, and more than one of
/// GitHub's largest bodies (25 MB).
pub const DEFAULT_CLIENT_BUDGET: usize = 32 * 1024 * 1024;

impl Limits {
    /// `budget` bytes in flight in all, of which one client holds at most
    /// [`DEFAULT_CLIENT_BUDGET`] (or all of `budget` when it is smaller).
    pub fn new(max_body: usize, budget: usize, body_timeout: Duration, header_timeout: Duration) -> Self {
        let max_body = max_body.min(u32::MAX as usize);
        Limits {
            max_body,
            budget: Arc::new(budget::Budget::new(budget, DEFAULT_CLIENT_BUDGET.min(budget))),
            body_timeout,
            header_timeout,
            client_ip_header: None,
        }
    }

    /// The same limits with `per_client` bytes of unverified bodies per client.
    pub fn with_client_budget(mut self, per_client: usize) -> Self {
        self.budget = Arc::new(budget::Budget::new(self.budget.capacity(), per_client));
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::new(
            webhook::MAX_BODY,
            DEFAULT_BODY_BUDGET,
            Duration::from_secs(10),
            Duration::from_secs(10),
        )
    }
}

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    pub secrets: Arc<[SecretString]>,
    /// Shared with the worker and the GitHub client of the process (`cli::serve` wires them).
    pub metrics: Arc<Metrics>,
    /// Time stamps for new jobs; tests inject a fixed clock.
    pub clock: Clock,
    /// Bounds on what reading webhook bodies may cost.
    pub limits: Limits,
}

impl AppState {
    pub fn new(store: Arc<Store>, secrets: Vec<SecretString>) -> Self {
        AppState {
            store,
            secrets: secrets.into(),
            metrics: Arc::default(),
            clock: Arc::new(Utc::now),
            limits: Limits::default(),
        }
    }
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("store", &self.store)
            .field("secrets", &format_args!("[{} redacted]", self.secrets.len()))
            .field("metrics", &self.metrics)
            .finish_non_exhaustive()
    }
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/webhook", post(webhook::handle))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(state.limits.max_body))
        .with_state(state)
}

async fn healthz(State(state): State<AppState>) -> Response {
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, "ok").into_response(),
        Err(e) => {
            tracing::error!("health check: store unreachable: {e:#}");
            (StatusCode::SERVICE_UNAVAILABLE, "store unreachable").into_response()
        }
    }
}

/// The exposition, with the job gauges read from the store now (left out, and counted in
/// `flakegate_store_errors_total`, when the store cannot be read).
async fn metrics(State(state): State<AppState>) -> Response {
    let gauges = async {
        let mut g = state.store.job_gauges().await?;
        g.history_rows = state.store.history_size().await?;
        anyhow::Ok(g)
    };
    let jobs = match gauges.await {
        Ok(g) => Some(g),
        Err(e) => {
            tracing::error!("metrics: counting jobs failed: {e:#}");
            state.metrics.store_error();
            None
        }
    };
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(jobs),
    )
        .into_response()
}

/// Serve `state` on `listener` and run `worker` until `shutdown` fires; the server stops
/// taking requests, finishes those in flight, and waits for the worker to return.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    state: AppState,
    worker: Option<Task>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let worker = worker.map(|w| tokio::spawn(w(shutdown.clone())));
    serve_http(listener, state, shutdown).await;
    if let Some(w) = worker {
        w.await.context("the worker panicked")?.context("the worker failed")?;
    }
    Ok(())
}

/// Accept HTTP/1.1 connections until `shutdown`, then let those in flight finish. Unlike
/// `axum::serve`, headers must arrive within `limits.header_timeout` (hyper's
/// `header_read_timeout`), so a slow-header client holds a socket only that long.
async fn serve_http(listener: tokio::net::TcpListener, state: AppState, shutdown: Shutdown) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let header_timeout = state.limits.header_timeout;
    let app = router(state);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let stop = shutdown.triggered();
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        // The peer's address is the client the webhook's byte budget is kept per.
        let service = app.clone().layer(axum::Extension(axum::extract::ConnectInfo(peer)));
        let service = hyper_util::service::TowerToHyperService::new(service);
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new()).header_read_timeout(header_timeout);
        let conn = http.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("connection ended: {e}");
            }
        });
    }
    graceful.shutdown().await;
}

/// Bind `config.listen` and serve until SIGTERM or SIGINT; `metrics` are those the worker and
/// the GitHub client count into too.
pub(crate) async fn serve(
    config: &AppConfig,
    store: Arc<Store>,
    metrics: Arc<Metrics>,
    worker: Option<Task>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding FLAKEGATE_LISTEN={}", config.listen))?;
    let bound = listener
        .local_addr()
        .map_or_else(|_| config.listen.to_string(), |a| a.to_string());
    tracing::info!(listen = %bound, "serving");
    let (trigger, shutdown) = Shutdown::channel();
    tokio::spawn(async move {
        stop_signal().await;
        tracing::info!("shutting down: finishing requests and jobs in flight");
        let _ = trigger.send(true);
    });
    let mut state = AppState::new(store, config.webhook_secrets.clone());
    state.metrics = metrics;
    state.limits.client_ip_header = config.client_ip_header.clone();
    serve_on(listener, state, worker, shutdown).await
}

async fn stop_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
