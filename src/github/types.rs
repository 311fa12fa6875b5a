//! The GitHub types the App sends and receives — ids as newtypes, the check run's
//! fields — and GitHub's limits on them, each defined once here. A leaf: it imports
//! nothing of the crate.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The check run's name.
pub const CHECK_NAME: &str = "flakegate";
/// GitHub accepts at most this many annotations per create/update request; the client batches.
pub const ANNOTATIONS_PER_REQUEST: usize = 50;
/// GitHub's limit on `output.summary` and `output.text`: 65,535 bytes (GitHub says
/// characters, and counts bytes).
pub const OUTPUT_MAX_BYTES: usize = 65_535;
/// Longest check-run title we send, in characters.
pub const TITLE_LIMIT: usize = 200;
/// GitHub's limits on one annotation: `message` and `raw_details` at most 64 KiB (bytes),
/// `title` at most 255 characters.
pub const ANNOTATION_MESSAGE_MAX_BYTES: usize = 64 * 1024;
pub const ANNOTATION_RAW_DETAILS_MAX_BYTES: usize = 64 * 1024;
pub const ANNOTATION_TITLE_MAX_CHARS: usize = 255;
/// GitHub's limit on an issue comment's body, in characters.
pub const COMMENT_MAX_CHARS: usize = 65_536;
/// GitHub's limits on an action button.
pub const ACTION_LABEL_LIMIT: usize = 20;
pub const ACTION_DESCRIPTION_LIMIT: usize = 40;
pub const ACTION_IDENTIFIER_LIMIT: usize = 20;
pub const MAX_ACTIONS: usize = 3;

/// `owner/name` of a repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RepoName {
    pub owner: String,
    pub name: String,
}

impl RepoName {
    pub fn new(owner: impl Into<String>, name: impl Into<String>) -> Self {
        RepoName {
            owner: owner.into(),
            name: name.into(),
        }
    }

    /// Parse `owner/name` (as in a payload's `repository.full_name`).
    pub fn parse(full_name: &str) -> Option<Self> {
        let (owner, name) = full_name.split_once('/')?;
        let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        (ok(owner) && ok(name) && name != "." && name != "..").then(|| RepoName::new(owner, name))
    }

    pub(crate) fn api_path(&self) -> String {
        format!("/repos/{}/{}", self.owner, self.name)
    }
}

impl fmt::Display for RepoName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// A full 40-hex (or 64-hex) commit sha.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommitSha(pub String);

impl CommitSha {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CommitSha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for CommitSha {
    fn from(s: &str) -> Self {
        CommitSha(s.to_owned())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PullNumber(pub u64);

impl fmt::Display for PullNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InstallationId(pub u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AppId(pub u64);

/// One side (`head` or `base`) of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRef {
    pub sha: CommitSha,
    #[serde(rename = "ref")]
    pub ref_name: String,
    /// `None` when the fork was deleted.
    #[serde(default)]
    pub repo: Option<PullRepo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRepo {
    pub full_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub login: String,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

/// The fields of a pull request the worker uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequest {
    pub number: PullNumber,
    pub state: String,
    #[serde(default)]
    pub draft: Option<bool>,
    pub head: PullRef,
    pub base: PullRef,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub html_url: Option<String>,
    /// The commit a merge made on the base branch (GitHub's test merge while it is open).
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
    /// When it was merged (ISO 8601, UTC); `None` while it is not.
    #[serde(default)]
    pub merged_at: Option<String>,
}

/// The pull request's patch: GitHub's unified diff, or (when GitHub refuses the diff as too
/// large) the files listing as one JSON array (the gate reads both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchSource {
    /// Bytes: a diff is not always UTF-8 (a Latin-1 file); the gate reads it either way.
    Diff(Vec<u8>),
    Files(String),
}

/// A workflow run as the runs listing shows it (the merge group's evidence is found by its
/// triggering event and head sha).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WorkflowRunListed {
    pub id: u64,
    pub head_sha: String,
    #[serde(default)]
    pub event: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Artifact {
    pub id: u64,
    pub name: String,
    pub size_in_bytes: u64,
    #[serde(default)]
    pub expired: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Queued,
    InProgress,
    Completed,
}

/// The conclusions flakegate sets (INCONCLUSIVE and FAIL are both `failure`; `cancelled` only
/// for a merge group destroyed while pending).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Conclusion {
    Success,
    Neutral,
    Failure,
    /// A merge group that left the queue before its evidence was judged.
    Cancelled,
}

impl Conclusion {
    pub fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Neutral => "neutral",
            Conclusion::Failure => "failure",
            Conclusion::Cancelled => "cancelled",
        }
    }
}

/// An annotation's level, as GitHub spells it (ordered: notice < warning < failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

/// One check-run annotation (GitHub's `output.annotations[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub annotation_level: AnnotationLevel,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_details: Option<String>,
}

/// A check-run button (at most 3; label and identifier ≤ 20 chars, description ≤ 40).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckAction {
    pub label: String,
    pub description: String,
    pub identifier: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckOutput {
    pub title: String,
    /// At most `OUTPUT_MAX_BYTES` bytes.
    pub summary: String,
    /// At most `OUTPUT_MAX_BYTES` bytes.
    pub text: Option<String>,
    /// Any number, most important first: sent `ANNOTATIONS_PER_REQUEST` per request.
    pub annotations: Vec<Annotation>,
}

/// What to set on a check run, for create and update alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunFields {
    pub name: String,
    pub external_id: String,
    pub status: CheckStatus,
    /// Required when `status` is `Completed`.
    pub conclusion: Option<Conclusion>,
    pub details_url: Option<String>,
    pub output: Option<CheckOutput>,
    pub actions: Vec<CheckAction>,
}

impl CheckRunFields {
    pub fn new(external_id: impl Into<String>, status: CheckStatus) -> Self {
        CheckRunFields {
            name: CHECK_NAME.to_owned(),
            external_id: external_id.into(),
            status,
            conclusion: None,
            details_url: None,
            output: None,
            actions: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    pub name: String,
    pub head_sha: CommitSha,
    #[serde(default)]
    pub external_id: Option<String>,
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    /// The app that made it: anyone with `checks: write` (a workflow's token too) can make a
    /// check run named `flakegate`; only ours are ever touched.
    #[serde(default)]
    pub app: Option<AppRef>,
    #[serde(default)]
    pub output: Option<CheckRunOutputInfo>,
    /// The check run's page, which the pull-request comment links to.
    #[serde(default)]
    pub html_url: Option<String>,
}

impl CheckRun {
    /// Made by the App `app`.
    pub fn made_by(&self, app: AppId) -> bool {
        self.app.as_ref().is_some_and(|a| a.id == app.0)
    }

    /// Annotations GitHub holds on it (they are never removed).
    pub fn annotations_count(&self) -> u64 {
        self.output.as_ref().map_or(0, |o| o.annotations_count)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckRunOutputInfo {
    #[serde(default)]
    pub annotations_count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AppRef {
    pub id: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub performed_via_github_app: Option<AppRef>,
}

/// An issue as GitHub lists it (pull requests appear in issue listings too: `pull_request`).
#[derive(Debug, Clone, Deserialize)]
pub struct Issue {
    pub number: u64,
    /// `open` or `closed`.
    pub state: String,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub performed_via_github_app: Option<AppRef>,
    #[serde(default)]
    pub pull_request: Option<serde_json::Value>,
}

/// What an issue edit changes; `None` fields are left as they are.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IssueUpdate<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<&'a str>,
    /// `open` or `closed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'a str>,
    /// `completed` when closing because the work is done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_reason: Option<&'a str>,
}

/// A repository an installation can access.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct InstalledRepo {
    pub id: u64,
    pub full_name: String,
    #[serde(default)]
    pub default_branch: Option<String>,
    #[serde(default)]
    pub archived: bool,
}
