use std::fmt;

use octocrab::EncodingKey;

use super::error::GithubError;
use super::types::AppId;

/// The App's identity: its id and RS256 private key. `Debug` never shows the key.
#[derive(Clone)]
pub struct AppCredentials {
    pub app_id: AppId,
    pub(crate) key: EncodingKey,
}

impl AppCredentials {
    /// From the PEM text GitHub lets you download (PKCS#1 `RSA PRIVATE KEY` or PKCS#8).
    pub fn from_pem(app_id: AppId, pem: &[u8]) -> Result<Self, GithubError> {
        let key = EncodingKey::from_rsa_pem(pem)
            .map_err(|e| GithubError::fatal(format!("the App private key is not an RSA PEM key: {e}")))?;
        Ok(AppCredentials { app_id, key })
    }
}

impl fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppCredentials")
            .field("app_id", &self.app_id)
            .field("key", &"<redacted>")
            .finish()
    }
}
