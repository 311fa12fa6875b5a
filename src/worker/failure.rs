//! Why a job did not finish, in the terms the loop settles it by: retried (after the store's
//! backoff, or when GitHub said), or given up with INCONCLUSIVE on the check run. A failure
//! given up is shown on the check run only when the repository can act on it ([`Fatal::User`]);
//! an internal one ([`Fatal::Internal`]) stays an `anyhow::Error` until `post` names only its
//! delivery on the check run, and its whole chain goes to the log.

use crate::github::{ArtifactError, GithubError, Wait};
use chrono::{DateTime, Utc};
use std::fmt;

/// Why a job did not finish.
pub(super) enum Failure {
    /// Try again after the store's backoff: the store, the network, GitHub's 5xx.
    Retryable(anyhow::Error),
    /// Try again when GitHub said (`Retry-After` or the rate-limit reset), not before.
    RetryAfter(anyhow::Error, Wait),
    /// Retrying will not help: publish INCONCLUSIVE.
    Fatal(Fatal),
}

/// A failure retrying cannot fix, as the check run will show it.
pub(super) enum Fatal {
    /// The repository can act on it — its config, ledger, patch or evidence, or a file or patch
    /// of it GitHub will not serve: the check run says it as it is.
    User(String),
    /// Not the repository's doing — a stored job or payload the worker cannot read, a GitHub
    /// answer it did not expect, a bug, retries run out against the store or GitHub. Its text
    /// may name the App's insides, so the check run names only the delivery and the log has
    /// the chain.
    Internal(anyhow::Error),
}

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fatal::User(why) => f.write_str(why),
            Fatal::Internal(e) => write!(f, "{e:#}"),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Retryable(e) | Failure::RetryAfter(e, _) => write!(f, "{e:#}"),
            Failure::Fatal(why) => why.fmt(f),
        }
    }
}

/// GitHub's answers: a retryable one is retried (when GitHub said, if it did); an artifact that
/// would not extract safely is the evidence's, so the repository's; anything else is internal. Reading the repository's own files and patch is the exception: [`content`].
impl From<GithubError> for Failure {
    fn from(e: GithubError) -> Self {
        match e {
            GithubError::Retryable {
                retry_after: Some(wait),
                ..
            } => Failure::RetryAfter(e.into(), wait),
            GithubError::Retryable { .. } => Failure::Retryable(e.into()),
            // A write to the worker's own disk failing is not the artifact's fault.
            GithubError::Artifact(ArtifactError::Io(_)) => internal(e.into()),
            GithubError::Artifact(_) => user(e.to_string()),
            _ => internal(e.into()),
        }
    }
}

/// A GitHub error reading the repository's own files or patch. One retrying cannot fix is the
/// repository's to act on — a pull request too large for GitHub to list whole, a path that is
/// a directory, a file the installation may not read — and is shown as GitHub gave it.
pub(super) fn content(e: GithubError) -> Failure {
    if e.is_retryable() {
        e.into()
    } else {
        user(e.to_string())
    }
}

/// A failure the repository can fix, saying what.
pub(super) fn user(why: impl Into<String>) -> Failure {
    Failure::Fatal(Fatal::User(why.into()))
}

/// An internal failure retrying cannot fix.
pub(super) fn internal(e: anyhow::Error) -> Failure {
    Failure::Fatal(Fatal::Internal(e))
}

/// Store errors are taken as passing (the database may be restarting).
pub(super) fn store_err(e: anyhow::Error) -> Failure {
    Failure::Retryable(e.context("store"))
}

/// When GitHub's `wait` ends, measured from `now` on the worker's clock.
pub(super) fn wait_until(now: DateTime<Utc>, wait: Wait) -> DateTime<Utc> {
    match wait {
        Wait::For(d) => chrono::Duration::from_std(d).map_or(now, |d| now + d),
        Wait::Until(t) => DateTime::<Utc>::from(t).max(now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_waits_become_the_retry_time() {
        let wait = Wait::For(std::time::Duration::from_secs(7));
        let e = GithubError::Retryable {
            retry_after: Some(wait),
            message: "429".into(),
        };
        assert!(matches!(Failure::from(e), Failure::RetryAfter(_, w) if w == wait));
        let e = GithubError::Retryable {
            retry_after: None,
            message: "502".into(),
        };
        assert!(matches!(Failure::from(e), Failure::Retryable(_)));
        assert!(matches!(
            Failure::from(GithubError::NotFound("x".into())),
            Failure::Fatal(_)
        ));
        let now = DateTime::<Utc>::from(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1000));
        let reset = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1090);
        assert_eq!(wait_until(now, Wait::Until(reset)), DateTime::<Utc>::from(reset));
        assert_eq!(wait_until(now, wait), now + chrono::Duration::seconds(7));
        // A reset already past: at once, never before now.
        assert_eq!(wait_until(now, Wait::Until(std::time::UNIX_EPOCH)), now);
    }

    /// Only what the repository can act on is the user's; the chain of the rest is kept whole.
    #[test]
    fn user_errors_and_internal_ones() {
        let fatal = |f: Failure| match f {
            Failure::Fatal(why) => why,
            other => panic!("retryable: {other}"),
        };
        let rejected = GithubError::Artifact(ArtifactError::UnsafePath("../x".into()));
        let text = rejected.to_string();
        assert!(matches!(fatal(rejected.into()), Fatal::User(why) if why == text));
        let too_large = GithubError::fatal("pull request 3 changes 3000 files or more");
        assert!(matches!(fatal(content(too_large)), Fatal::User(why) if why.contains("3000 files")));
        assert!(matches!(
            fatal(GithubError::fatal("list artifacts: unexpected answer").into()),
            Fatal::Internal(_)
        ));
        let disk = GithubError::Artifact(ArtifactError::Io(std::io::Error::other("no space left")));
        assert!(matches!(fatal(disk.into()), Fatal::Internal(_)));
        assert!(matches!(
            content(GithubError::Retryable {
                retry_after: None,
                message: "502".into()
            }),
            Failure::Retryable(_)
        ));
        let e = store_err(anyhow::anyhow!("connection refused").context("claiming a job"));
        assert_eq!(e.to_string(), "store: claiming a job: connection refused");
    }
}
