//! The GitHub client: [`GithubApp`] authenticates as the App (an RS256 JWT) and hands out one
//! [`InstallationClient`] per installation, whose token is cached until shortly before it
//! expires. This file holds the transport every call goes through (relative paths, pagination,
//! bounded answers, errors classified, calls and rate limits counted) and the installation's
//! repositories; the calls are grouped by what they touch: `pulls.rs` (pull requests and their
//! patches), `contents.rs` (files at a commit), `actions.rs` (artifacts and workflow runs),
//! `checks.rs` (check runs) and `issues.rs` (comments and issues).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use http::header::{HeaderMap, HeaderValue, ACCEPT};
use http::StatusCode;
use octocrab::Octocrab;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::auth::AppCredentials;
use super::error::GithubError;
use super::types::*;
use crate::metrics::Metrics;

pub const DEFAULT_API_URL: &str = "https://api.github.com";
const PER_PAGE: usize = 100;
/// JSON answers above this are refused rather than buffered.
const MAX_JSON_BYTES: usize = 64 << 20;
/// A cached installation token is replaced when it has less than this left.
const TOKEN_MARGIN_MINUTES: i64 = 5;

type Response = http::Response<Body>;

/// The App: authenticates as itself with an RS256 JWT and hands out per-installation clients whose
/// installation tokens are cached until shortly before they expire.
pub struct GithubApp {
    app: Octocrab,
    /// No credentials and no base path: for absolute URLs off GitHub (artifact redirects).
    plain: Octocrab,
    app_id: AppId,
    /// One client per installation, shared: an `Octocrab` clone copies its cached
    /// token, so handing out clones would fetch a token per caller, not per hour.
    installations: Mutex<HashMap<InstallationId, Arc<InstallationClient>>>,
    /// Calls by status and the rate limit left are counted here (`/metrics`).
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for GithubApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GithubApp")
            .field("app_id", &self.app_id)
            .finish_non_exhaustive()
    }
}

impl GithubApp {
    /// `base_url` is `FLAKEGATE_GITHUB_API_URL` (`https://api.github.com`, a GHES `…/api/v3`, or a
    /// test fake). Octocrab's own retries are off: the worker retries with backoff, honouring
    /// `GithubError::Retryable::retry_after`.
    pub fn new(base_url: &str, credentials: AppCredentials) -> Result<Self, GithubError> {
        let app = Octocrab::builder()
            .base_uri(base_url)
            .map_err(|e| GithubError::fatal(format!("FLAKEGATE_GITHUB_API_URL {base_url:?} is not a URL: {e}")))?
            .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .app(octocrab::models::AppId(credentials.app_id.0), credentials.key)
            .build()
            .map_err(|e| GithubError::fatal(format!("building the GitHub client: {e}")))?;
        let plain = Octocrab::builder()
            .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .build()
            .map_err(|e| GithubError::fatal(format!("building the GitHub client: {e}")))?;
        Ok(GithubApp {
            app,
            plain,
            app_id: credentials.app_id,
            installations: Mutex::new(HashMap::new()),
            metrics: Arc::default(),
        })
    }

    /// Count calls into `metrics` (the process's, shown on `/metrics`) instead of a private set.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    pub fn app_id(&self) -> AppId {
        self.app_id
    }

    /// A client acting as `installation`. Cheap; the token cache is shared per installation.
    pub fn installation(&self, installation: InstallationId) -> Result<Arc<InstallationClient>, GithubError> {
        let mut map = self.installations.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = map.get(&installation) {
            return Ok(c.clone());
        }
        let crab = self
            .app
            .installation(octocrab::models::InstallationId(installation.0))
            .map_err(|e| GithubError::from_octocrab("installation client", e))?;
        let client = Arc::new(InstallationClient {
            crab,
            plain: self.plain.clone(),
            app_id: self.app_id,
            installation,
            metrics: self.metrics.clone(),
        });
        map.insert(installation, client.clone());
        Ok(client)
    }
}

impl GithubApp {
    /// Every installation of the App (`GET /app/installations`, as the App itself with its JWT).
    pub async fn installations(&self) -> Result<Vec<InstallationId>, GithubError> {
        #[derive(Deserialize)]
        struct Inst {
            id: u64,
        }
        let what = "list app installations";
        let mut all = Vec::new();
        for page in 1..=100 {
            let url = format!("/app/installations?per_page={PER_PAGE}&page={page}");
            let mut headers = HeaderMap::new();
            headers.insert(ACCEPT, HeaderValue::from_static("application/vnd.github+json"));
            headers.insert("x-github-api-version", HeaderValue::from_static("2022-11-28"));
            let r = self.app._get_with_headers(url.as_str(), Some(headers)).await;
            self.metrics.github_call(r.as_ref().ok().map(|r| r.status().as_u16()));
            let resp = r.map_err(|e| GithubError::from_octocrab(what, e))?.map(Body::new);
            let status = resp.status();
            let headers = resp.headers().clone();
            let bytes = read_body(what, resp, MAX_JSON_BYTES).await?;
            if !status.is_success() {
                return Err(GithubError::from_response(what, status, &headers, &bytes));
            }
            let batch: Vec<Inst> = serde_json::from_slice(&bytes)
                .map_err(|e| GithubError::fatal(format!("{what}: unexpected answer from GitHub: {e}")))?;
            let n = batch.len();
            all.extend(batch.into_iter().map(|i| InstallationId(i.id)));
            if n < PER_PAGE {
                break;
            }
        }
        Ok(all)
    }
}

/// Calls made as one installation. Every path is relative to the base URL.
#[derive(Clone)]
pub struct InstallationClient {
    crab: Octocrab,
    plain: Octocrab,
    app_id: AppId,
    installation: InstallationId,
    metrics: Arc<Metrics>,
}

impl InstallationClient {
    /// The installation this client acts for.
    pub fn installation_id(&self) -> InstallationId {
        self.installation
    }
}

mod actions;
mod checks;
mod contents;
mod git;
mod issues;
mod pulls;

impl InstallationClient {
    // ---- transport -------------------------------------------------------------------------

    /// Make sure the cached installation token has a few minutes left (one token request per
    /// installation per hour, not per call), so a long sequence of calls never straddles expiry.
    async fn fresh_token(&self) -> Result<(), GithubError> {
        self.crab
            .installation_token_with_buffer(chrono::Duration::minutes(TOKEN_MARGIN_MINUTES))
            .await
            .map(drop)
            .map_err(|e| GithubError::from_octocrab("installation token", e))
    }

    async fn send(
        &self,
        what: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
        accept: Option<&str>,
    ) -> Result<Response, GithubError> {
        self.fresh_token().await?;
        let mut headers = HeaderMap::new();
        headers.insert(
            ACCEPT,
            HeaderValue::from_str(accept.unwrap_or("application/vnd.github+json")).expect("accept"),
        );
        headers.insert("x-github-api-version", HeaderValue::from_static("2022-11-28"));
        let r = match method {
            "GET" => self.crab._get_with_headers(path, Some(headers)).await,
            "POST" => self.crab._post(path, body).await,
            "PATCH" => self.crab._patch(path, body).await,
            "PUT" => self.crab._put(path, body).await,
            "DELETE" => self.crab._delete(path, body).await,
            m => unreachable!("method {m}"),
        };
        tracing::debug!(what, method, path, status = ?r.as_ref().map(|r| r.status()).ok(), "github request");
        self.count(r.as_ref().ok().map(|r| (r.status(), r.headers())));
        r.map(|r| r.map(Body::new))
            .map_err(|e| GithubError::from_octocrab(what, e))
    }

    /// Count a call by its answer's status (`None`: no answer), and the rate limit GitHub says
    /// this installation has left.
    fn count(&self, answer: Option<(StatusCode, &HeaderMap)>) {
        self.metrics.github_call(answer.map(|(status, _)| status.as_u16()));
        let remaining = answer
            .and_then(|(_, h)| h.get("x-ratelimit-remaining"))
            .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
        if let Some(n) = remaining {
            self.metrics.rate_limit_remaining(self.installation.0, n);
        }
    }

    /// Send and require a 2xx; returns the body bytes.
    async fn call(
        &self,
        what: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
        accept: Option<&str>,
    ) -> Result<(HeaderMap, bytes::Bytes), GithubError> {
        let resp = self.send(what, method, path, body, accept).await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = read_body(what, resp, MAX_JSON_BYTES).await?;
        if !status.is_success() {
            return Err(GithubError::from_response(what, status, &headers, &bytes));
        }
        Ok((headers, bytes))
    }

    async fn json<T: DeserializeOwned>(
        &self,
        what: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<T, GithubError> {
        let (_, bytes) = self.call(what, method, path, body, None).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| GithubError::fatal(format!("{what}: unexpected answer from GitHub: {e}")))
    }

    /// GET `path` (which already has a query) page by page with relative URLs, `per_page=100`,
    /// until a short page; `items` picks the array out of each page.
    async fn paged(
        &self,
        what: &str,
        path: &str,
        max_pages: usize,
        items: impl Fn(Value) -> Option<Vec<Value>>,
    ) -> Result<Vec<Value>, GithubError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut all = Vec::new();
        for page in 1..=max_pages {
            let url = format!("{path}{sep}per_page={PER_PAGE}&page={page}");
            let v: Value = self.json(what, "GET", &url, None).await?;
            let batch = items(v).ok_or_else(|| GithubError::fatal(format!("{what}: page {page} is not a list")))?;
            let n = batch.len();
            all.extend(batch);
            if n < PER_PAGE {
                break;
            }
        }
        Ok(all)
    }

    // ---- the installation's repositories ----------------------------------------------------

    /// The repositories this installation can access, and the rate limit GitHub says it has
    /// left after listing them (`None` when GitHub did not say).
    pub async fn repositories(&self) -> Result<(Vec<InstalledRepo>, Option<u64>), GithubError> {
        #[derive(Deserialize)]
        struct Page {
            repositories: Vec<InstalledRepo>,
        }
        let what = "list installation repositories";
        let mut all = Vec::new();
        let mut remaining = None;
        for page in 1..=100 {
            let url = format!("/installation/repositories?per_page={PER_PAGE}&page={page}");
            let (headers, bytes) = self.call(what, "GET", &url, None, None).await?;
            remaining = headers
                .get("x-ratelimit-remaining")
                .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
                .or(remaining);
            let batch: Page = serde_json::from_slice(&bytes)
                .map_err(|e| GithubError::fatal(format!("{what}: unexpected answer from GitHub: {e}")))?;
            let n = batch.repositories.len();
            all.extend(batch.repositories);
            if n < PER_PAGE {
                break;
            }
        }
        Ok((all, remaining))
    }
}

async fn read_body(what: &str, resp: Response, limit: usize) -> Result<bytes::Bytes, GithubError> {
    axum::body::to_bytes(resp.into_body(), limit)
        .await
        .map_err(|e| GithubError::Retryable {
            retry_after: None,
            message: format!("{what}: reading the answer: {e}"),
        })
}

/// Percent-encode a repository path for the URL, keeping `/` between segments.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
