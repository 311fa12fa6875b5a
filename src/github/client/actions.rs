//! GitHub Actions: a run's artifacts (listed, downloaded with a byte cap and extracted safely),
//! the workflow runs at a head, and a run's re-run.

use std::path::{Path, PathBuf};

use axum::body::Body;
use futures_util::StreamExt;
use http::header::{CONTENT_LENGTH, LOCATION};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{encode_path, read_body, InstallationClient, Response, PER_PAGE};
use crate::github::artifact::{extract_zip, ArtifactError, ArtifactLimits};
use crate::github::error::GithubError;
use crate::github::types::{Artifact, CommitSha, RepoName, WorkflowRunListed};

impl InstallationClient {
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
