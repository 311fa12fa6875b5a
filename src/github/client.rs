use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use futures_util::StreamExt;
use http::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_LENGTH, LOCATION};
use http::StatusCode;
use octocrab::Octocrab;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::artifact::{extract_zip, ArtifactError, ArtifactLimits};
use super::auth::AppCredentials;
use super::error::GithubError;
use super::types::*;
use crate::metrics::Metrics;

pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The files listing stops at 3000 files; a patch that reaches it is incomplete.
const MAX_LISTED_FILES: usize = 3000;
const PER_PAGE: usize = 100;
/// JSON answers above this are refused rather than buffered.
const MAX_JSON_BYTES: usize = 64 << 20;
/// GitHub's compare lists at most this many files, and says nothing when it cut the list.
const MAX_COMPARE_FILES: usize = 300;
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

#[derive(Serialize)]
struct OutputBody<'a> {
    title: &'a str,
    summary: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    annotations: &'a [Annotation],
}

#[derive(Serialize)]
struct CheckRunBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    head_sha: Option<&'a str>,
    name: &'a str,
    external_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<CheckStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    conclusion: Option<Conclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details_url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<OutputBody<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    actions: &'a [CheckAction],
}

#[derive(Deserialize)]
struct ContentFile {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

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

    // ---- pull requests ---------------------------------------------------------------------

    pub async fn pull_request(&self, repo: &RepoName, number: PullNumber) -> Result<PullRequest, GithubError> {
        self.json(
            "get pull request",
            "GET",
            &format!("{}/pulls/{}", repo.api_path(), number.0),
            None,
        )
        .await
    }

    /// Pull requests whose head is `sha` (for a fork's `workflow_run`, whose `pull_requests` is empty).
    pub async fn commit_pulls(&self, repo: &RepoName, sha: &CommitSha) -> Result<Vec<PullRequest>, GithubError> {
        let path = format!("{}/commits/{}/pulls", repo.api_path(), sha);
        let all = self
            .paged("list pull requests of a commit", &path, 10, |v| v.as_array().cloned())
            .await?;
        all.into_iter()
            .map(|v| serde_json::from_value(v).map_err(|e| GithubError::fatal(format!("commit pulls: {e}"))))
            .collect()
    }

    /// GET `path` as a unified diff: `None` when GitHub says the diff is too large
    /// (`406 Unacceptable`, or a `422` naming `too_large`) and a files listing must do.
    async fn diff_unless_too_large(&self, what: &str, path: &str) -> Result<Option<Vec<u8>>, GithubError> {
        let resp = self
            .send(what, "GET", path, None, Some("application/vnd.github.diff"))
            .await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = read_body(what, resp, MAX_JSON_BYTES).await?;
        if status.is_success() {
            return Ok(Some(bytes.to_vec()));
        }
        let text = String::from_utf8_lossy(&bytes).to_lowercase();
        let too_large = status == StatusCode::NOT_ACCEPTABLE
            || (status == StatusCode::UNPROCESSABLE_ENTITY
                && (text.contains("too_large") || text.contains("too large")));
        if !too_large {
            return Err(GithubError::from_response(what, status, &headers, &bytes));
        }
        tracing::info!(%status, what, "diff too large");
        Ok(None)
    }

    /// The unified diff, or the files listing when GitHub says the diff is too large
    /// (`406 Unacceptable`, or a `422` naming `too_large`).
    pub async fn pull_diff(&self, repo: &RepoName, number: PullNumber) -> Result<PatchSource, GithubError> {
        let path = format!("{}/pulls/{}", repo.api_path(), number.0);
        if let Some(diff) = self.diff_unless_too_large("get pull request diff", &path).await? {
            return Ok(PatchSource::Diff(diff));
        }
        tracing::info!(%repo, pull = number.0, "diff too large; using the files listing");
        let files = self
            .paged(
                "list pull request files",
                &format!("{path}/files"),
                MAX_LISTED_FILES / PER_PAGE,
                |v| v.as_array().cloned(),
            )
            .await?;
        if files.len() >= MAX_LISTED_FILES {
            return Err(GithubError::fatal(format!(
                "pull request {number} changes {MAX_LISTED_FILES} files or more; GitHub lists no more, so the patch cannot be read whole"
            )));
        }
        Ok(PatchSource::Files(Value::Array(files).to_string()))
    }

    /// The unified diff of `base...head` (a merge group's changes), or the compare's files
    /// listing when GitHub refuses the diff as too large. GitHub cuts that listing at 300
    /// files without saying so: a listing that long cannot be trusted to be whole.
    pub async fn compare_diff(
        &self,
        repo: &RepoName,
        base: &CommitSha,
        head: &CommitSha,
    ) -> Result<PatchSource, GithubError> {
        let what = "compare commits";
        let path = format!("{}/compare/{base}...{head}", repo.api_path());
        if let Some(diff) = self.diff_unless_too_large(what, &path).await? {
            return Ok(PatchSource::Diff(diff));
        }
        tracing::info!(%repo, %base, %head, "compare diff too large; using the files listing");
        let v: Value = self.json(what, "GET", &format!("{path}?per_page=1"), None).await?;
        let files = v
            .get("files")
            .and_then(Value::as_array)
            .cloned()
            .ok_or_else(|| GithubError::fatal(format!("{what}: the answer lists no files")))?;
        if files.len() >= MAX_COMPARE_FILES {
            return Err(GithubError::fatal(format!(
                "{base}...{head} changes {MAX_COMPARE_FILES} files or more; GitHub's compare lists no more, so the patch cannot be read whole"
            )));
        }
        Ok(PatchSource::Files(Value::Array(files).to_string()))
    }

    // ---- contents --------------------------------------------------------------------------

    /// The file at `path` in commit `sha`, or `None` if it does not exist there.
    pub async fn file_at(&self, repo: &RepoName, path: &str, sha: &CommitSha) -> Result<Option<Vec<u8>>, GithubError> {
        let what = "get file contents";
        let url = format!("{}/contents/{}?ref={}", repo.api_path(), encode_path(path), sha);
        let v: ContentFile = match self.json(what, "GET", &url, None).await {
            Ok(v) => v,
            Err(GithubError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        if v.kind != "file" {
            return Err(GithubError::fatal(format!(
                "{what}: {path} is a {}, not a file",
                v.kind
            )));
        }
        match v.encoding.as_deref() {
            Some("base64") => base64_decode(v.content.as_deref().unwrap_or(""))
                .map(Some)
                .ok_or_else(|| GithubError::fatal(format!("{what}: {path}: invalid base64"))),
            // Over 1 MB GitHub sends `encoding: none` and no content: ask for the raw bytes.
            _ => {
                let (_, bytes) = self
                    .call(what, "GET", &url, None, Some("application/vnd.github.raw+json"))
                    .await?;
                Ok(Some(bytes.to_vec()))
            }
        }
    }

    // ---- artifacts -------------------------------------------------------------------------

    pub async fn run_artifacts(&self, repo: &RepoName, run_id: u64) -> Result<Vec<Artifact>, GithubError> {
        let path = format!("{}/actions/runs/{run_id}/artifacts", repo.api_path());
        let all = self
            .paged("list workflow run artifacts", &path, 10, |v| {
                serde_json::from_value::<ArtifactListRaw>(v).ok().map(|l| l.artifacts)
            })
            .await?;
        all.into_iter()
            .map(serde_json::from_value)
            .collect::<Result<_, _>>()
            .map_err(|e| GithubError::fatal(format!("list artifacts: {e}")))
    }

    /// Download artifact `artifact_id` (following GitHub's `302` to the archive, without sending
    /// our token there), stream it to a file under `dest_dir` with a byte cap, and extract it
    /// safely into `dest_dir/artifact-<id>/`, which is returned. `410` → `GithubError::Gone`.
    pub async fn download_artifact(
        &self,
        repo: &RepoName,
        artifact_id: u64,
        dest_dir: &Path,
        limits: &ArtifactLimits,
    ) -> Result<PathBuf, GithubError> {
        let what = "download artifact";
        let path = format!("{}/actions/artifacts/{artifact_id}/zip", repo.api_path());
        let resp = self.send(what, "GET", &path, None, None).await?;
        let resp = if resp.status().is_redirection() {
            let location = resp
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| GithubError::fatal(format!("{what}: redirect without a Location")))?
                .to_owned();
            // Not through the installation client: octocrab would prefix a GHES base path
            // (`/api/v3`) to this absolute URL. The plain client has no credentials to leak.
            let r = self.plain._get(location.as_str()).await;
            self.metrics.github_call(r.as_ref().ok().map(|r| r.status().as_u16()));
            r.map_err(|e| GithubError::from_octocrab(what, e))?.map(Body::new)
        } else {
            resp
        };
        let status = resp.status();
        if !status.is_success() {
            let headers = resp.headers().clone();
            let bytes = read_body(what, resp, 1 << 16).await.unwrap_or_default();
            return Err(GithubError::from_response(what, status, &headers, &bytes));
        }
        let declared = resp
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limits.max_download_bytes) {
            return Err(ArtifactError::DownloadTooLarge {
                limit: limits.max_download_bytes,
            }
            .into());
        }
        std::fs::create_dir_all(dest_dir).map_err(ArtifactError::from)?;
        let zip_path = dest_dir.join(format!("artifact-{artifact_id}.zip"));
        let out_dir = dest_dir.join(format!("artifact-{artifact_id}"));
        let result = async {
            stream_to_file(what, resp, &zip_path, limits.max_download_bytes).await?;
            let (zip, out, limits) = (zip_path.clone(), out_dir.clone(), *limits);
            tokio::task::spawn_blocking(move || extract_zip(&zip, &out, &limits))
                .await
                .map_err(|e| GithubError::fatal(format!("{what}: extraction task failed: {e}")))??;
            Ok::<_, GithubError>(())
        }
        .await;
        let _ = std::fs::remove_file(&zip_path);
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&out_dir);
            return Err(e);
        }
        Ok(out_dir)
    }

    // ---- check runs ------------------------------------------------------------------------

    /// The newest check run `name` on `head_sha` with `external_id` made by this App, if one
    /// exists (so publishing after a crash or retry updates it instead of adding another).
    /// A check run of that name made by anyone else — a workflow with `checks: write` can make
    /// one, green — is never ours to update.
    pub async fn find_check_run(
        &self,
        repo: &RepoName,
        head_sha: &CommitSha,
        name: &str,
        external_id: &str,
    ) -> Result<Option<CheckRun>, GithubError> {
        let path = format!(
            "{}/commits/{}/check-runs?check_name={}&filter=all",
            repo.api_path(),
            head_sha,
            encode_path(name)
        );
        let all = self
            .paged("list check runs", &path, 10, |v| {
                serde_json::from_value::<CheckRunListRaw>(v).ok().map(|l| l.check_runs)
            })
            .await?;
        let mut found = None;
        for v in all {
            let run: CheckRun =
                serde_json::from_value(v).map_err(|e| GithubError::fatal(format!("list check runs: {e}")))?;
            if run.name == name && run.external_id.as_deref() == Some(external_id) && run.made_by(self.app_id) {
                // GitHub lists the newest first; keep the highest id to be sure.
                if found.as_ref().is_none_or(|f: &CheckRun| run.id > f.id) {
                    found = Some(run);
                }
            }
        }
        Ok(found)
    }

    /// Create the check run; annotations beyond the first 50 are appended by further updates.
    pub async fn create_check_run(
        &self,
        repo: &RepoName,
        head_sha: &CommitSha,
        fields: &CheckRunFields,
    ) -> Result<CheckRun, GithubError> {
        validate_fields(fields)?;
        let batches = annotation_batches(fields);
        let body = check_body(Some(head_sha), fields, batches[0]);
        let run: CheckRun = self
            .json(
                "create check run",
                "POST",
                &format!("{}/check-runs", repo.api_path()),
                Some(&body),
            )
            .await?;
        self.append_annotations(repo, run.id, fields, &batches[1..]).await?;
        Ok(run)
    }

    /// Update check run `id` with `fields`; annotations are appended 50 per request.
    pub async fn update_check_run(
        &self,
        repo: &RepoName,
        id: u64,
        fields: &CheckRunFields,
    ) -> Result<CheckRun, GithubError> {
        validate_fields(fields)?;
        let batches = annotation_batches(fields);
        let body = check_body(None, fields, batches[0]);
        let run: CheckRun = self
            .json(
                "update check run",
                "PATCH",
                &format!("{}/check-runs/{id}", repo.api_path()),
                Some(&body),
            )
            .await?;
        self.append_annotations(repo, id, fields, &batches[1..]).await?;
        Ok(run)
    }

    async fn append_annotations(
        &self,
        repo: &RepoName,
        id: u64,
        fields: &CheckRunFields,
        rest: &[&[Annotation]],
    ) -> Result<(), GithubError> {
        let Some(output) = &fields.output else { return Ok(()) };
        for batch in rest {
            // Resend title/summary/text (required fields, and nothing gets cleared) with the next batch.
            let body = json!({
                "name": fields.name,
                "external_id": fields.external_id,
                "output": OutputBody { title: &output.title, summary: &output.summary, text: output.text.as_deref(), annotations: batch },
            });
            let _: Value = self
                .json(
                    "add check run annotations",
                    "PATCH",
                    &format!("{}/check-runs/{id}", repo.api_path()),
                    Some(&body),
                )
                .await?;
        }
        Ok(())
    }

    // ---- comments --------------------------------------------------------------------------

    /// The comment on issue/PR `issue` containing `marker` written by this App (or, where GitHub does not
    /// say which app wrote it, by a bot).
    pub async fn find_comment_with_marker(
        &self,
        repo: &RepoName,
        issue: PullNumber,
        marker: &str,
    ) -> Result<Option<Comment>, GithubError> {
        let path = format!("{}/issues/{}/comments", repo.api_path(), issue.0);
        let all = self
            .paged("list comments", &path, 50, |v| v.as_array().cloned())
            .await?;
        for v in all {
            let c: Comment =
                serde_json::from_value(v).map_err(|e| GithubError::fatal(format!("list comments: {e}")))?;
            let ours = match &c.performed_via_github_app {
                Some(app) => app.id == self.app_id.0,
                None => c.user.as_ref().and_then(|u| u.kind.as_deref()) == Some("Bot"),
            };
            if ours && c.body.as_deref().is_some_and(|b| b.contains(marker)) {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    pub async fn create_comment(&self, repo: &RepoName, issue: PullNumber, body: &str) -> Result<Comment, GithubError> {
        validate_comment(body)?;
        let path = format!("{}/issues/{}/comments", repo.api_path(), issue.0);
        self.json("create comment", "POST", &path, Some(&json!({ "body": body })))
            .await
    }

    pub async fn update_comment(&self, repo: &RepoName, comment_id: u64, body: &str) -> Result<Comment, GithubError> {
        validate_comment(body)?;
        let path = format!("{}/issues/comments/{comment_id}", repo.api_path());
        self.json("update comment", "PATCH", &path, Some(&json!({ "body": body })))
            .await
    }

    // ---- installation repositories and issues ----------------------------------------------

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

    /// The open issue containing `marker` written by this App (or, where GitHub does not say
    /// which app wrote it, by a bot); pull requests are skipped.
    pub async fn find_open_issue_with_marker(
        &self,
        repo: &RepoName,
        marker: &str,
    ) -> Result<Option<Issue>, GithubError> {
        let path = format!("{}/issues?state=open", repo.api_path());
        let all = self.paged("list issues", &path, 50, |v| v.as_array().cloned()).await?;
        for v in all {
            let issue: Issue =
                serde_json::from_value(v).map_err(|e| GithubError::fatal(format!("list issues: {e}")))?;
            let ours = match &issue.performed_via_github_app {
                Some(app) => app.id == self.app_id.0,
                None => issue.user.as_ref().and_then(|u| u.kind.as_deref()) == Some("Bot"),
            };
            if issue.pull_request.is_none() && ours && issue.body.as_deref().is_some_and(|b| b.contains(marker)) {
                return Ok(Some(issue));
            }
        }
        Ok(None)
    }

    /// Issue `number`, or `None` when it does not exist (any more) or was transferred away.
    pub async fn issue(&self, repo: &RepoName, number: u64) -> Result<Option<Issue>, GithubError> {
        let path = format!("{}/issues/{number}", repo.api_path());
        match self.json::<Issue>("get issue", "GET", &path, None).await {
            Ok(i) if i.pull_request.is_none() => Ok(Some(i)),
            Ok(_) | Err(GithubError::NotFound(_)) | Err(GithubError::Gone(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn create_issue(&self, repo: &RepoName, title: &str, body: &str) -> Result<Issue, GithubError> {
        validate_comment(body)?;
        let path = format!("{}/issues", repo.api_path());
        self.json(
            "create issue",
            "POST",
            &path,
            Some(&json!({ "title": title, "body": body })),
        )
        .await
    }

    pub async fn update_issue(
        &self,
        repo: &RepoName,
        number: u64,
        update: &IssueUpdate<'_>,
    ) -> Result<Issue, GithubError> {
        if let Some(body) = update.body {
            validate_comment(body)?;
        }
        let path = format!("{}/issues/{number}", repo.api_path());
        let body = serde_json::to_value(update).map_err(|e| GithubError::fatal(format!("update issue: {e}")))?;
        self.json("update issue", "PATCH", &path, Some(&body)).await
    }

    // ---- actions ---------------------------------------------------------------------------

    /// The workflow runs triggered by `event` at `head_sha`, newest first (at most 100).
    pub async fn workflow_runs(
        &self,
        repo: &RepoName,
        event: &str,
        head_sha: &CommitSha,
    ) -> Result<Vec<WorkflowRunListed>, GithubError> {
        let path = format!(
            "{}/actions/runs?event={}&head_sha={head_sha}&per_page={PER_PAGE}",
            repo.api_path(),
            encode_path(event)
        );
        let v: WorkflowRunListRaw = self.json("list workflow runs", "GET", &path, None).await?;
        v.workflow_runs
            .into_iter()
            .map(serde_json::from_value)
            .collect::<Result<_, _>>()
            .map_err(|e| GithubError::fatal(format!("list workflow runs: {e}")))
    }

    pub async fn rerun_workflow(&self, repo: &RepoName, run_id: u64) -> Result<(), GithubError> {
        let path = format!("{}/actions/runs/{run_id}/rerun", repo.api_path());
        self.call("re-run workflow", "POST", &path, Some(&json!({})), None)
            .await
            .map(drop)
    }
}

#[derive(Deserialize)]
struct ArtifactListRaw {
    artifacts: Vec<Value>,
}

#[derive(Deserialize)]
struct WorkflowRunListRaw {
    workflow_runs: Vec<Value>,
}

#[derive(Deserialize)]
struct CheckRunListRaw {
    check_runs: Vec<Value>,
}

/// GitHub's limits on a check run's fields (`types.rs`), checked before anything is sent: an
/// over-limit field is a bug in what was built, and GitHub would reject the whole request.
fn validate_fields(f: &CheckRunFields) -> Result<(), GithubError> {
    let bad = |m: String| Err(GithubError::fatal(format!("check run not sent: {m}")));
    if f.status == CheckStatus::Completed && f.conclusion.is_none() {
        return bad("a completed check run needs a conclusion".into());
    }
    if f.actions.len() > MAX_ACTIONS {
        return bad(format!(
            "{} actions (GitHub takes at most {MAX_ACTIONS})",
            f.actions.len()
        ));
    }
    for a in &f.actions {
        if a.label.chars().count() > ACTION_LABEL_LIMIT
            || a.identifier.chars().count() > ACTION_IDENTIFIER_LIMIT
            || a.description.chars().count() > ACTION_DESCRIPTION_LIMIT
        {
            return bad(format!(
                "action {:?} is over GitHub's length limits ({ACTION_LABEL_LIMIT}/{ACTION_IDENTIFIER_LIMIT}/{ACTION_DESCRIPTION_LIMIT})",
                a.identifier
            ));
        }
    }
    let Some(o) = &f.output else { return Ok(()) };
    if o.title.chars().count() > TITLE_LIMIT {
        return bad(format!("output.title is over {TITLE_LIMIT} characters"));
    }
    for (field, s) in [("summary", Some(&o.summary)), ("text", o.text.as_ref())] {
        if let Some(s) = s.filter(|s| s.len() > OUTPUT_MAX_BYTES) {
            return bad(format!("output.{field} is {} bytes, over {OUTPUT_MAX_BYTES}", s.len()));
        }
    }
    for (i, a) in o.annotations.iter().enumerate() {
        let at = format!("annotation {i} ({}:{})", a.path, a.start_line);
        if a.message.len() > ANNOTATION_MESSAGE_MAX_BYTES {
            return bad(format!(
                "{at}: message is {} bytes, over {ANNOTATION_MESSAGE_MAX_BYTES}",
                a.message.len()
            ));
        }
        if let Some(r) = a
            .raw_details
            .as_ref()
            .filter(|r| r.len() > ANNOTATION_RAW_DETAILS_MAX_BYTES)
        {
            return bad(format!(
                "{at}: raw_details is {} bytes, over {ANNOTATION_RAW_DETAILS_MAX_BYTES}",
                r.len()
            ));
        }
        if a.title
            .as_ref()
            .is_some_and(|t| t.chars().count() > ANNOTATION_TITLE_MAX_CHARS)
        {
            return bad(format!("{at}: title is over {ANNOTATION_TITLE_MAX_CHARS} characters"));
        }
    }
    Ok(())
}

/// A comment body within GitHub's limit, checked before it is sent.
fn validate_comment(body: &str) -> Result<(), GithubError> {
    let n = body.chars().count();
    if n > COMMENT_MAX_CHARS {
        return Err(GithubError::fatal(format!(
            "comment not sent: its body is {n} characters, over {COMMENT_MAX_CHARS}"
        )));
    }
    Ok(())
}

fn annotation_batches(f: &CheckRunFields) -> Vec<&[Annotation]> {
    let anns = f.output.as_ref().map(|o| o.annotations.as_slice()).unwrap_or(&[]);
    let mut v: Vec<&[Annotation]> = anns.chunks(ANNOTATIONS_PER_REQUEST).collect();
    if v.is_empty() {
        v.push(&[]);
    }
    v
}

fn check_body(head_sha: Option<&CommitSha>, f: &CheckRunFields, annotations: &[Annotation]) -> Value {
    let completed = f.status == CheckStatus::Completed;
    let body = CheckRunBody {
        head_sha: head_sha.map(|s| s.as_str()),
        name: &f.name,
        external_id: &f.external_id,
        status: Some(f.status),
        conclusion: if completed { f.conclusion } else { None },
        details_url: f.details_url.as_deref(),
        completed_at: completed.then(|| chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        output: f.output.as_ref().map(|o| OutputBody {
            title: &o.title,
            summary: &o.summary,
            text: o.text.as_deref(),
            annotations,
        }),
        actions: &f.actions,
    };
    serde_json::to_value(body).expect("check run body serializes")
}

async fn read_body(what: &str, resp: Response, limit: usize) -> Result<bytes::Bytes, GithubError> {
    axum::body::to_bytes(resp.into_body(), limit)
        .await
        .map_err(|e| GithubError::Retryable {
            retry_after: None,
            message: format!("{what}: reading the answer: {e}"),
        })
}

async fn stream_to_file(what: &str, resp: Response, path: &Path, cap: u64) -> Result<(), GithubError> {
    use std::io::Write;
    let mut file = std::fs::File::create(path).map_err(ArtifactError::from)?;
    let mut stream = resp.into_body().into_data_stream();
    let mut total: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| GithubError::Retryable {
            retry_after: None,
            message: format!("{what}: {e}"),
        })?;
        total += chunk.len() as u64;
        if total > cap {
            return Err(ArtifactError::DownloadTooLarge { limit: cap }.into());
        }
        file.write_all(&chunk).map_err(ArtifactError::from)?;
    }
    file.sync_all().map_err(ArtifactError::from)?;
    Ok(())
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

/// Standard base64 as GitHub sends it (with line breaks).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' | b'\n' | b'\r' | b' ' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
