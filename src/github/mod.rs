//! GitHub for the App: the webhook events it acts on ([`event`], typed once at the
//! boundary), the types and limits of what it sends (`types`), and the client —
//! installation auth, pull requests and diffs, contents at a sha, evidence artifacts
//! (streamed, capped, safely extracted), check runs and the sticky comment.
//!
//! Every call goes through octocrab's raw `_get/_post/_patch` with *relative* paths, so the
//! configured base URL (`FLAKEGATE_GITHUB_API_URL`) and installation authentication apply to
//! every request, including pagination (octocrab's `all_pages` follows absolute `Link` URLs and
//! drops authentication for any host but api.github.com).

pub mod artifact;
pub(crate) mod auth;
pub(crate) mod client;
pub(crate) mod error;
pub mod event;
pub(crate) mod manifest;
pub(crate) mod types;

pub use artifact::{extract_zip, ArtifactError, ArtifactLimits};
pub use auth::AppCredentials;
pub use client::{GithubApp, InstallationClient};
pub use error::{GithubError, Wait};
pub use types::{
    Annotation, AnnotationLevel, AppId, Artifact, CheckAction, CheckOutput, CheckRunFields, CheckStatus, CommitSha,
    Conclusion, InstallationId, PatchSource, PullNumber, PullRequest, RepoName, User,
};

pub(crate) use client::DEFAULT_API_URL;
pub(crate) use types::*;
