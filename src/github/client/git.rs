//! Writing to a repository, for the ledger's upkeep: a branch of the App's own (its ref read,
//! created, moved, deleted), one file committed on it, and the workflow dispatch that asks the
//! evidence workflow for probe runs. Only the ledger upkeep calls these; an installation that
//! did not grant `contents: write` / `actions: write` answers 403 or 404, which the caller
//! turns into words in the expired-freezes issue.

use serde::Deserialize;
use serde_json::{json, Value};

use super::{encode_path, InstallationClient};
use crate::github::error::GithubError;
use crate::github::types::{CommitSha, RepoName};

#[derive(Deserialize)]
struct RefObject {
    sha: String,
}

#[derive(Deserialize)]
struct GitRef {
    object: RefObject,
}

#[derive(Deserialize)]
struct FileCommit {
    sha: String,
}

#[derive(Deserialize)]
struct PutFile {
    commit: FileCommit,
}

#[derive(Deserialize)]
struct ContentSha {
    #[serde(default)]
    sha: Option<String>,
}

impl InstallationClient {
    /// The commit branch `branch` points at, `None` when there is no such branch.
    pub async fn branch_head(&self, repo: &RepoName, branch: &str) -> Result<Option<CommitSha>, GithubError> {
        let path = format!("{}/git/ref/heads/{}", repo.api_path(), encode_path(branch));
        match self.json::<GitRef>("get a branch", "GET", &path, None).await {
            Ok(r) => Ok(Some(CommitSha::from(r.object.sha.as_str()))),
            Err(GithubError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn create_branch(&self, repo: &RepoName, branch: &str, sha: &CommitSha) -> Result<(), GithubError> {
        let path = format!("{}/git/refs", repo.api_path());
        let body = json!({ "ref": format!("refs/heads/{branch}"), "sha": sha.to_string() });
        self.json::<Value>("create a branch", "POST", &path, Some(&body))
            .await
            .map(drop)
    }

    /// Point `branch` at `sha`, even when that is not a descendant of where it was (`force`).
    pub async fn move_branch(&self, repo: &RepoName, branch: &str, sha: &CommitSha) -> Result<(), GithubError> {
        let path = format!("{}/git/refs/heads/{}", repo.api_path(), encode_path(branch));
        let body = json!({ "sha": sha.to_string(), "force": true });
        self.json::<Value>("move a branch", "PATCH", &path, Some(&body))
            .await
            .map(drop)
    }

    pub async fn delete_branch(&self, repo: &RepoName, branch: &str) -> Result<(), GithubError> {
        let path = format!("{}/git/refs/heads/{}", repo.api_path(), encode_path(branch));
        match self.call("delete a branch", "DELETE", &path, None, None).await {
            Ok(_) | Err(GithubError::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The blob sha of the file at `path` on `branch` (what replacing it must name), `None`
    /// when there is no such file.
    pub async fn file_sha(&self, repo: &RepoName, path: &str, branch: &str) -> Result<Option<String>, GithubError> {
        let url = format!(
            "{}/contents/{}?ref={}",
            repo.api_path(),
            encode_path(path),
            encode_path(branch)
        );
        match self.json::<ContentSha>("get file contents", "GET", &url, None).await {
            Ok(c) => Ok(c.sha),
            Err(GithubError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Commit `content` as the file `path` on `branch` (replacing blob `replaces`, when the file
    /// exists there). Returns the new commit.
    pub async fn put_file(
        &self,
        repo: &RepoName,
        branch: &str,
        path: &str,
        message: &str,
        content: &[u8],
        replaces: Option<&str>,
    ) -> Result<CommitSha, GithubError> {
        let url = format!("{}/contents/{}", repo.api_path(), encode_path(path));
        let mut body = json!({ "message": message, "content": base64_encode(content), "branch": branch });
        if let Some(sha) = replaces {
            body["sha"] = json!(sha);
        }
        let put: PutFile = self.json("create or update a file", "PUT", &url, Some(&body)).await?;
        Ok(CommitSha::from(put.commit.sha.as_str()))
    }

    /// Ask workflow `workflow` (its file name) to run on `git_ref` with `inputs`.
    pub async fn dispatch_workflow(
        &self,
        repo: &RepoName,
        workflow: &str,
        git_ref: &str,
        inputs: &Value,
    ) -> Result<(), GithubError> {
        let path = format!(
            "{}/actions/workflows/{}/dispatches",
            repo.api_path(),
            encode_path(workflow).replace('/', "%2F")
        );
        let body = json!({ "ref": git_ref, "inputs": inputs });
        self.call("dispatch a workflow", "POST", &path, Some(&body), None)
            .await
            .map(drop)
    }
}

/// Standard base64 with padding, as the contents API takes it.
fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::base64_encode;
    use crate::github::client::contents::base64_decode;

    #[test]
    fn base64_round_trips() {
        for s in [
            "",
            "f",
            "fo",
            "foo",
            "foob",
            "fooba",
            "foobar",
            "{\n  \"frozen\": []\n}\n",
        ] {
            let e = base64_encode(s.as_bytes());
            assert_eq!(e.len() % 4, 0);
            assert_eq!(base64_decode(&e).unwrap(), s.as_bytes(), "{s:?} → {e}");
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
    }
}
