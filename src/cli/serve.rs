//! `flakegate serve`: the App's composition root. It reads the configuration
//! from the environment and wires the store, the GitHub client, the worker and
//! the HTTP server together; none of those knows the others' construction.

use crate::app_config::AppConfig;
use crate::github::{AppCredentials, AppId, GithubApp};
use crate::metrics::Metrics;
use crate::runtime;
use crate::server;
use crate::store::{RetryPolicy, Store};
use crate::worker::{Worker, WorkerConfig};
use anyhow::Context as _;
use chrono::Utc;
use secrecy::ExposeSecret as _;
use std::sync::Arc;

/// `flakegate serve`: configuration from the environment, the store, the GitHub client,
/// the worker and the server.
///
/// The worker runs on a runtime of its own ([`runtime::background_runtime`]: on Linux its
/// threads run at a lower priority) with its own connections to the store, so evaluations —
/// gigabytes read on its blocking pool — never hold up `/healthz` and webhook
/// acknowledgements, even with every core busy.
pub fn run() -> anyhow::Result<i32> {
    init_logging(std::env::var("FLAKEGATE_LOG_FORMAT").ok().as_deref())?;
    let config = AppConfig::from_env(|k| std::env::var(k).ok())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let background = runtime::background_runtime("flakegate-worker").context("starting the worker's runtime")?;
    // One set of counters for the server, the worker and the GitHub client (`/metrics`).
    let metrics = Arc::new(Metrics::default());
    // Built on its runtime: the store's connections (and SQLite's threads) and the GitHub
    // client's tasks belong to it.
    let worker = background.block_on(async {
        let store = open_store(&config).await?;
        let credentials = AppCredentials::from_pem(AppId(config.app_id), config.private_key.expose_secret().as_bytes())
            .context("FLAKEGATE_PRIVATE_KEY")?;
        let github = GithubApp::new(&config.github_api_url, credentials)
            .context("FLAKEGATE_GITHUB_API_URL")?
            .with_metrics(metrics.clone());
        // Several instances share one PostgreSQL queue: a job whose instance stops renewing
        // its lease (killed, partitioned) is taken over after `job_lease`; the heartbeat
        // renews it every quarter of that while the job runs.
        let worker_config = WorkerConfig {
            lease: config.job_lease,
            heartbeat: config.job_lease / 4,
            sweep_interval: config.sweep_interval,
            retention: Some(config.job_retention),
            ..WorkerConfig::default()
        };
        anyhow::Ok(
            Worker::new(Arc::new(store), github, worker_config, Arc::new(Utc::now)).with_metrics(metrics.clone()),
        )
    })?;
    runtime.block_on(async {
        let store = Arc::new(open_store(&config).await?);
        let worker = runtime::on_runtime(background.handle().clone(), worker.into_task());
        server::serve(&config, store, metrics, Some(worker)).await
    })?;
    Ok(0)
}

async fn open_store(config: &AppConfig) -> anyhow::Result<Store> {
    Store::open(config.database_url.expose_secret(), RetryPolicy::default())
        .await
        .context("opening the store (DATABASE_URL)")
}

/// Logs on stderr, filtered by `RUST_LOG` (default `info`): human text by default, or with
/// `FLAKEGATE_LOG_FORMAT=json` one JSON object a line for log collectors, carrying the current
/// span's fields (`span`) and every enclosing span's (`spans`) — the delivery's and the job's
/// repository, pull request and sha.
fn init_logging(format: Option<&str>) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format.map(str::trim).unwrap_or("") {
        "" | "text" => {
            let _ = logs.try_init();
        }
        "json" => {
            let _ = logs.json().with_current_span(true).with_span_list(true).try_init();
        }
        other => anyhow::bail!("FLAKEGATE_LOG_FORMAT={other:?}: expected text or json"),
    }
    Ok(())
}
