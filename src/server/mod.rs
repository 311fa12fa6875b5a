//! The App's HTTP face: `POST /webhook` (verify, dedupe, queue, 202), `GET /healthz`,
//! `GET /metrics`, and `serve`, which runs the router and an optional worker until
//! SIGTERM/SIGINT.

pub mod signature;
pub mod webhook;

use crate::app_config::AppConfig;
use crate::store::{RetryPolicy, Store};
use anyhow::Context as _;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use chrono::{DateTime, Utc};
use secrecy::{ExposeSecret as _, SecretString};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// Webhook delivery counters, shown on `/metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    pub accepted: AtomicU64,
    pub ignored: AtomicU64,
    pub duplicate: AtomicU64,
    pub rejected: AtomicU64,
}

impl Metrics {
    /// Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "# HELP flakegate_webhook_deliveries_total Webhook deliveries by outcome.\n\
             # TYPE flakegate_webhook_deliveries_total counter\n",
        );
        for (outcome, n) in [
            ("accepted", &self.accepted),
            ("ignored", &self.ignored),
            ("duplicate", &self.duplicate),
            ("rejected", &self.rejected),
        ] {
            out.push_str(&format!(
                "flakegate_webhook_deliveries_total{{outcome=\"{outcome}\"}} {}\n",
                n.load(Ordering::Relaxed)
            ));
        }
        out
    }
}

pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    pub secrets: Arc<[SecretString]>,
    pub metrics: Arc<Metrics>,
    /// Time stamps for new jobs; tests inject a fixed clock.
    pub clock: Clock,
}

impl AppState {
    pub fn new(store: Arc<Store>, secrets: Vec<SecretString>) -> Self {
        AppState {
            store,
            secrets: secrets.into(),
            metrics: Arc::default(),
            clock: Arc::new(Utc::now),
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
        .layer(DefaultBodyLimit::max(webhook::MAX_BODY))
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

async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// Tells a worker to stop: it should finish or `Store::release` the job in hand, then return.
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// A pair: the trigger and the signal (for tests and embedding).
    pub fn channel() -> (watch::Sender<bool>, Shutdown) {
        let (tx, rx) = watch::channel(false);
        (tx, Shutdown(rx))
    }

    pub fn is_triggered(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once shutdown is triggered (or its trigger is gone).
    pub async fn triggered(mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

/// A background task started beside the server, e.g. the job worker.
pub type Worker =
    Box<dyn FnOnce(Arc<Store>, Shutdown) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>> + Send>;

/// Serve `state` on `listener` and run `worker` until `shutdown` fires; the server stops
/// taking requests, finishes those in flight, and waits for the worker to return.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    state: AppState,
    worker: Option<Worker>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let worker = worker.map(|w| tokio::spawn(w(state.store.clone(), shutdown.clone())));
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown.triggered())
        .await
        .context("serving HTTP")?;
    if let Some(w) = worker {
        w.await.context("the worker panicked")?.context("the worker failed")?;
    }
    Ok(())
}

/// Bind `config.listen` and serve until SIGTERM or SIGINT.
pub async fn serve(config: &AppConfig, store: Arc<Store>, worker: Option<Worker>) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding FLAKEGATE_LISTEN={}", config.listen))?;
    tracing::info!(listen = %config.listen, "serving");
    let (trigger, shutdown) = Shutdown::channel();
    tokio::spawn(async move {
        stop_signal().await;
        tracing::info!("shutting down: finishing requests and jobs in flight");
        let _ = trigger.send(true);
    });
    serve_on(
        listener,
        AppState::new(store, config.webhook_secrets.clone()),
        worker,
        shutdown,
    )
    .await
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

/// `flakegate serve`: configuration from the environment, the store, the server.
pub fn serve_from_env() -> anyhow::Result<i32> {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    let config = AppConfig::from_env(|k| std::env::var(k).ok())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let store = Store::open(config.database_url.expose_secret(), RetryPolicy::default())
            .await
            .context("opening the store (DATABASE_URL)")?;
        let credentials = crate::github::AppCredentials::from_pem(
            crate::github::AppId(config.app_id),
            config.private_key.expose_secret().as_bytes(),
        )
        .context("FLAKEGATE_PRIVATE_KEY")?;
        let github =
            crate::github::GithubApp::new(&config.github_api_url, credentials).context("FLAKEGATE_GITHUB_API_URL")?;
        let store = Arc::new(store);
        let worker = crate::worker::Worker::new(
            store.clone(),
            github,
            crate::worker::WorkerConfig::default(),
            Arc::new(Utc::now),
        );
        serve(&config, store, Some(worker.into_task())).await
    })?;
    Ok(0)
}
