use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long GitHub asked us to wait before trying again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// `retry-after: N` seconds (a secondary rate limit, a 429 or a 503).
    For(Duration),
    /// Until the primary rate limit resets (`x-ratelimit-reset`, epoch seconds): an instant,
    /// so the worker measures it with its own clock.
    Until(SystemTime),
}

use http::{HeaderMap, StatusCode};

use super::artifact::ArtifactError;

/// What went wrong talking to GitHub, in the terms the worker branches on.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    /// Try again later: 5xx, 429, a secondary rate limit (403 with `retry-after`), an exhausted
    /// primary rate limit (`x-ratelimit-remaining: 0`), or a transport error.
    #[error("GitHub is unavailable or rate limiting (retry after {retry_after:?}): {message}")]
    Retryable { retry_after: Option<Wait>, message: String },
    /// 404: the resource does not exist or the installation cannot see it.
    #[error("not found on GitHub: {0}")]
    NotFound(String),
    /// 410: the resource existed and is gone (e.g. an expired artifact).
    #[error("gone from GitHub: {0}")]
    Gone(String),
    /// The evidence artifact was refused (too large, unsafe entry names, a zip bomb, …).
    #[error("evidence artifact rejected: {0}")]
    Artifact(#[from] ArtifactError),
    /// Anything else: retrying will not help.
    #[error("GitHub request failed{}: {message}", status.map(|s| format!(" ({s})")).unwrap_or_default())]
    Fatal { status: Option<u16>, message: String },
}

impl GithubError {
    pub fn fatal(message: impl Into<String>) -> Self {
        GithubError::Fatal {
            status: None,
            message: message.into(),
        }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self, GithubError::Retryable { .. })
    }

    /// Classify a non-success response from its status, headers and (already read) body.
    pub fn from_response(what: &str, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(body);
        let message = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
            .unwrap_or_else(|| text.chars().take(500).collect());
        let message = format!("{what}: {status}: {message}");
        let retry_after = retry_after(headers);
        let exhausted = header(headers, "x-ratelimit-remaining").is_some_and(|v| v.trim() == "0");
        match status.as_u16() {
            404 => GithubError::NotFound(message),
            410 => GithubError::Gone(message),
            429 => GithubError::Retryable { retry_after, message },
            403 if retry_after.is_some() || exhausted || message.to_lowercase().contains("rate limit") => {
                GithubError::Retryable { retry_after, message }
            }
            s if s >= 500 => GithubError::Retryable { retry_after, message },
            s => GithubError::Fatal {
                status: Some(s),
                message,
            },
        }
    }

    pub(crate) fn from_octocrab(what: &str, e: octocrab::Error) -> Self {
        match e {
            octocrab::Error::GitHub { source, .. } => {
                let status = source.status_code;
                let body = serde_json::json!({ "message": source.message }).to_string();
                Self::from_response(what, status, &HeaderMap::new(), body.as_bytes())
            }
            // Hyper / service / timeout errors: the request may not have reached GitHub.
            e @ (octocrab::Error::Hyper { .. } | octocrab::Error::Service { .. }) => GithubError::Retryable {
                retry_after: None,
                message: format!("{what}: {e}"),
            },
            e => GithubError::fatal(format!("{what}: {e}")),
        }
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// How long GitHub asks us to wait: `retry-after` (seconds; GitHub sends no HTTP dates),
/// else the `x-ratelimit-reset` instant (epoch seconds) when `x-ratelimit-remaining` is 0.
pub fn retry_after(headers: &HeaderMap) -> Option<Wait> {
    if let Some(secs) = header(headers, "retry-after").and_then(|v| v.trim().parse::<u64>().ok()) {
        return Some(Wait::For(Duration::from_secs(secs)));
    }
    let exhausted = header(headers, "x-ratelimit-remaining").is_some_and(|v| v.trim() == "0");
    let reset = header(headers, "x-ratelimit-reset").and_then(|v| v.trim().parse::<u64>().ok());
    match (exhausted, reset) {
        (true, Some(reset)) => Some(Wait::Until(UNIX_EPOCH + Duration::from_secs(reset))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn classification() {
        let e = GithubError::from_response("x", StatusCode::FORBIDDEN, &headers(&[]), br#"{"message":"nope"}"#);
        assert!(matches!(e, GithubError::Fatal { status: Some(403), .. }), "{e:?}");
        let h = headers(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1000")]);
        assert_eq!(
            retry_after(&h),
            Some(Wait::Until(UNIX_EPOCH + Duration::from_secs(1000)))
        );
        let h = headers(&[
            ("retry-after", "1"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1000"),
        ]);
        assert_eq!(retry_after(&h), Some(Wait::For(Duration::from_secs(1))));
        let e = GithubError::from_response("x", StatusCode::BAD_GATEWAY, &headers(&[]), b"<html>");
        assert!(matches!(e, GithubError::Retryable { retry_after: None, .. }));
        let e = GithubError::from_response("x", StatusCode::NOT_FOUND, &headers(&[]), b"");
        assert!(matches!(e, GithubError::NotFound(_)));
    }
}
