//! `flakegate serve`: the App's composition root. It reads the configuration
//! from the environment and wires the store, the GitHub client, the worker and
//! the HTTP server together; none of those knows the others' construction.

use crate::app_config::AppConfig;
use crate::github::{AppCredentials, AppId, GithubApp};
use crate::server;
use crate::store::{RetryPolicy, Store};
use crate::worker::{Worker, WorkerConfig};
use anyhow::Context as _;
use chrono::Utc;
use secrecy::ExposeSecret as _;
use std::sync::Arc;

/// `flakegate serve`: configuration from the environment, the store, the GitHub client,
/// the worker and the server.
pub fn run() -> anyhow::Result<i32> {
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
        let credentials = AppCredentials::from_pem(AppId(config.app_id), config.private_key.expose_secret().as_bytes())
            .context("FLAKEGATE_PRIVATE_KEY")?;
        let github = GithubApp::new(&config.github_api_url, credentials).context("FLAKEGATE_GITHUB_API_URL")?;
        let store = Arc::new(store);
        let worker = Worker::new(store.clone(), github, WorkerConfig::default(), Arc::new(Utc::now));
        server::serve(&config, store, Some(worker.into_task())).await
    })?;
    Ok(0)
}
