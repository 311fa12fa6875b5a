//! File contents at a commit (the contents API: base64 up to 1 MB, raw bytes above).

use serde::Deserialize;

use super::{encode_path, InstallationClient};
use crate::github::error::GithubError;
use crate::github::types::{CommitSha, RepoName};

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
}

/// Standard base64 as GitHub sends it (with line breaks).
pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
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
