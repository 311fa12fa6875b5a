//! Pull requests and their patches: a pull request, the pull requests at a commit, and the
//! patch of a pull request or of a compare (the unified diff, or GitHub's files listing when it
//! refuses the diff as too large, refused in turn when GitHub may have cut it).

use http::StatusCode;
use serde_json::Value;

use super::{read_body, InstallationClient, MAX_JSON_BYTES, PER_PAGE};
use crate::github::error::GithubError;
use crate::github::types::{CommitSha, PatchSource, PullNumber, PullRequest, RepoName};

/// The files listing stops at 3000 files; a patch that reaches it is incomplete.
const MAX_LISTED_FILES: usize = 3000;
/// GitHub's compare lists at most this many files, and says nothing when it cut the list.
const MAX_COMPARE_FILES: usize = 300;

/// A pull request the App opened, as far as its upkeep needs it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct OpenedPull {
    pub number: u64,
    #[serde(default)]
    pub html_url: Option<String>,
    /// `open` or `closed` (merged ones too).
    #[serde(default)]
    pub state: Option<String>,
}

impl InstallationClient {
    /// The open pull request from `branch` of this repository, if any.
    pub async fn open_pull_from(&self, repo: &RepoName, branch: &str) -> Result<Option<OpenedPull>, GithubError> {
        let head = format!("{}:{branch}", repo.owner);
        let path = format!(
            "{}/pulls?state=open&head={}",
            repo.api_path(),
            super::encode_path(&head).replace('/', "%2F")
        );
        let listed: Vec<OpenedPull> = self.json("list pull requests", "GET", &path, None).await?;
        Ok(listed.into_iter().next())
    }

    pub async fn create_pull(
        &self,
        repo: &RepoName,
        title: &str,
        branch: &str,
        base: &str,
        body: &str,
    ) -> Result<OpenedPull, GithubError> {
        super::issues::validate_comment(body)?;
        let path = format!("{}/pulls", repo.api_path());
        let req = serde_json::json!({ "title": title, "head": branch, "base": base, "body": body });
        self.json("create a pull request", "POST", &path, Some(&req)).await
    }

    /// Change a pull request's body and/or state (`closed`).
    pub async fn update_pull(
        &self,
        repo: &RepoName,
        number: u64,
        body: Option<&str>,
        state: Option<&str>,
    ) -> Result<OpenedPull, GithubError> {
        let mut req = serde_json::json!({});
        if let Some(b) = body {
            super::issues::validate_comment(b)?;
            req["body"] = serde_json::json!(b);
        }
        if let Some(s) = state {
            req["state"] = serde_json::json!(s);
        }
        let path = format!("{}/pulls/{number}", repo.api_path());
        self.json("update a pull request", "PATCH", &path, Some(&req)).await
    }

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
}
