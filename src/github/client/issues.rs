//! Issues and their comments: the App's sticky pull-request comment and the expired-freezes
//! issue, found by a marker among what the App wrote, created and updated within GitHub's limit.

use serde_json::json;

use super::InstallationClient;
use crate::github::error::GithubError;
use crate::github::types::{Comment, Issue, IssueUpdate, PullNumber, RepoName, COMMENT_MAX_CHARS};

impl InstallationClient {
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
}

/// A comment body within GitHub's limit, checked before it is sent.
pub(super) fn validate_comment(body: &str) -> Result<(), GithubError> {
    let n = body.chars().count();
    if n > COMMENT_MAX_CHARS {
        return Err(GithubError::fatal(format!(
            "comment not sent: its body is {n} characters, over {COMMENT_MAX_CHARS}"
        )));
    }
    Ok(())
}
