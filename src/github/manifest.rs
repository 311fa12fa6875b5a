//! GitHub's App manifest flow
//! (<https://docs.github.com/apps/sharing-github-apps/registering-a-github-app-from-a-manifest>):
//! the manifest (`app-manifest.yml`, built in) as the JSON GitHub takes, with the deployment's
//! webhook URL and the redirect back to `flakegate setup`; the URL the form posts it to; and the
//! exchange of the `code` GitHub redirects back with for the new App's id, private key and
//! webhook secret (`POST /app-manifests/{code}/conversions`, unauthenticated).

use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;
use serde_json::Value;

use super::error::GithubError;

/// The App manifest shipped at the repository's root: permissions and events the App needs.
pub const APP_MANIFEST_YAML: &str = include_str!("../../app-manifest.yml");
/// GitHub's web address (the manifest form posts here; GitHub Enterprise has its own).
pub const GITHUB_WEB_URL: &str = "https://github.com";
/// The conversion's answer is small (an App and a 2048–4096-bit key).
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The keys GitHub's manifest takes (the documented "GitHub App Manifest parameters"); any other
/// key in a manifest file is a mistake GitHub would reject or ignore.
pub const MANIFEST_KEYS: &[&str] = &[
    "name",
    "url",
    "hook_attributes",
    "redirect_url",
    "callback_urls",
    "setup_url",
    "description",
    "public",
    "default_events",
    "default_permissions",
    "request_oauth_on_install",
    "setup_on_update",
];

/// An `http`/`https` URL without query or fragment, trailing `/` removed; `what` names the flag.
pub fn base_url(what: &str, url: &str) -> anyhow::Result<String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| anyhow::anyhow!("{what} {url:?} is not a URL: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => anyhow::bail!("{what} {url:?}: expected an http:// or https:// URL"),
    }
    if uri.host().is_none_or(str::is_empty) {
        anyhow::bail!("{what} {url:?}: the URL has no host");
    }
    if uri.query().is_some() || url.contains('#') {
        anyhow::bail!("{what} {url:?}: expected a URL without query or fragment");
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// The REST API's base for a GitHub web URL: `https://api.github.com` for github.com, else
/// GitHub Enterprise Server's `https://HOST/api/v3`.
pub fn default_api_url(github_url: &str) -> String {
    let host = github_url
        .parse::<http::Uri>()
        .ok()
        .and_then(|u| u.host().map(str::to_ascii_lowercase));
    if host.as_deref() == Some("github.com") {
        super::client::DEFAULT_API_URL.to_owned()
    } else {
        format!("{}/api/v3", github_url.trim_end_matches('/'))
    }
}

/// Where the manifest form posts: `{github}/settings/apps/new` for a personal account, or
/// `{github}/organizations/{org}/settings/apps/new`; `state` comes back with the redirect.
pub fn new_app_url(github_url: &str, org: Option<&str>, state: &str) -> anyhow::Result<String> {
    let base = github_url.trim_end_matches('/');
    match org {
        None => Ok(format!("{base}/settings/apps/new?state={state}")),
        Some(org) => {
            // GitHub logins: letters, digits and single hyphens, at most 39 characters.
            let valid = !org.is_empty()
                && org.len() <= 39
                && org.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !org.starts_with('-')
                && !org.ends_with('-');
            if !valid {
                anyhow::bail!("--org {org:?}: expected a GitHub organization login (letters, digits, hyphens)");
            }
            Ok(format!("{base}/organizations/{org}/settings/apps/new?state={state}"))
        }
    }
}

/// The manifest GitHub takes, as JSON: `yaml` (the shipped `app-manifest.yml` or another) with
/// `hook_attributes.url` set to `webhook_url`, `redirect_url` to where `flakegate setup` waits for
/// the code, and `name` replaced when given (App names are unique across GitHub).
pub fn manifest_json(yaml: &str, webhook_url: &str, redirect_url: &str, name: Option<&str>) -> anyhow::Result<Value> {
    let mut m: Value = serde_yaml_ng::from_str(yaml).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(" at line {}, column {}", l.line(), l.column()))
            .unwrap_or_default();
        anyhow::anyhow!("app manifest{at}: {e}")
    })?;
    let obj = m
        .as_object_mut()
        .ok_or_else(|| anyhow::anyhow!("app manifest: expected a mapping of manifest parameters"))?;
    if let Some(k) = obj.keys().find(|k| !MANIFEST_KEYS.contains(&k.as_str())) {
        anyhow::bail!(
            "app manifest: unknown key {k:?}; GitHub's manifest takes {}",
            MANIFEST_KEYS.join(", ")
        );
    }
    if let Some(name) = name {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 34 {
            anyhow::bail!("--name {name:?}: expected 1 to 34 characters (GitHub's limit for an App name)");
        }
        obj.insert("name".into(), Value::String(name.to_owned()));
    }
    for key in ["name", "url"] {
        let given = obj.get(key).and_then(Value::as_str).map(str::trim);
        if given.is_none_or(str::is_empty) {
            anyhow::bail!("app manifest: {key:?} is required (a string)");
        }
    }
    let hook = obj
        .entry("hook_attributes")
        .or_insert_with(|| Value::Object(Default::default()));
    let hook = hook
        .as_object_mut()
        .ok_or_else(|| anyhow::anyhow!("app manifest: \"hook_attributes\" must be a mapping"))?;
    hook.insert("url".into(), Value::String(webhook_url.to_owned()));
    hook.insert("active".into(), Value::Bool(true));
    obj.insert("redirect_url".into(), Value::String(redirect_url.to_owned()));
    Ok(m)
}

/// The App GitHub created, as the conversion returns it. Secrets are redacted in `Debug`.
pub struct NewApp {
    pub id: u64,
    pub slug: Option<String>,
    pub name: String,
    /// `https://github.com/apps/SLUG`: its page, and `…/installations/new` to install it.
    pub html_url: Option<String>,
    pub pem: SecretString,
    /// `None` when GitHub made the App without a webhook secret.
    pub webhook_secret: Option<SecretString>,
}

impl std::fmt::Debug for NewApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewApp")
            .field("id", &self.id)
            .field("slug", &self.slug)
            .field("name", &self.name)
            .field("html_url", &self.html_url)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Conversion {
    id: u64,
    slug: Option<String>,
    name: String,
    html_url: Option<String>,
    pem: String,
    webhook_secret: Option<String>,
}

/// Whether `code` can be the manifest flow's code: it arrives in a redirect anyone can forge, and
/// goes into a URL path, so only a short run of URL-safe characters is accepted.
pub fn is_valid_code(code: &str) -> bool {
    !code.is_empty()
        && code.len() <= 256
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Exchange the manifest flow's `code` for the new App: `POST {api_url}/app-manifests/{code}/conversions`,
/// unauthenticated (the code is the credential, valid once for an hour).
pub async fn convert(api_url: &str, code: &str, timeout: Duration) -> Result<NewApp, GithubError> {
    let what = "create the App from the manifest";
    if !is_valid_code(code) {
        return Err(GithubError::fatal(format!(
            "{what}: the code in the redirect is not a manifest code (expected letters, digits, '_' or '-')"
        )));
    }
    let crab = octocrab::Octocrab::builder()
        .base_uri(api_url)
        .map_err(|e| GithubError::fatal(format!("--api-url {api_url:?} is not a URL: {e}")))?
        .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
        .set_connect_timeout(Some(timeout))
        .set_read_timeout(Some(timeout))
        .build()
        .map_err(|e| GithubError::fatal(format!("building the GitHub client: {e}")))?;
    let path = format!("/app-manifests/{code}/conversions");
    let resp = crab
        ._post(path, None::<&()>)
        .await
        .map_err(|e| GithubError::from_octocrab(what, e))?;
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(axum::body::Body::new(resp.into_body()), MAX_ANSWER_BYTES)
        .await
        .map_err(|e| GithubError::fatal(format!("{what}: reading the answer: {e}")))?;
    if !status.is_success() {
        return Err(GithubError::from_response(what, status, &headers, &bytes));
    }
    parse_conversion(&bytes).map_err(|e| GithubError::fatal(format!("{what}: unexpected answer from GitHub: {e}")))
}

/// The conversion's JSON answer, checked: a positive id and a PEM private key.
pub fn parse_conversion(bytes: &[u8]) -> Result<NewApp, String> {
    let c: Conversion = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if c.id == 0 {
        return Err("the App id is 0".into());
    }
    if !c.pem.trim_start().starts_with("-----BEGIN ") {
        return Err("\"pem\" is not a PEM private key".into());
    }
    Ok(NewApp {
        id: c.id,
        slug: c.slug,
        name: c.name,
        html_url: c.html_url,
        pem: SecretString::from(c.pem),
        webhook_secret: c.webhook_secret.filter(|s| !s.is_empty()).map(SecretString::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret as _;

    #[test]
    fn the_shipped_manifest_becomes_json_with_the_chosen_urls() {
        let m = manifest_json(
            APP_MANIFEST_YAML,
            "https://gate.example.com/webhook",
            "http://127.0.0.1:5555/callback",
            Some("flakegate-acme"),
        )
        .unwrap();
        assert_eq!(m["hook_attributes"]["url"], "https://gate.example.com/webhook");
        assert_eq!(m["hook_attributes"]["active"], true);
        assert_eq!(m["redirect_url"], "http://127.0.0.1:5555/callback");
        assert_eq!(m["name"], "flakegate-acme");
        assert_eq!(m["default_permissions"]["checks"], "write");
        assert!(m["default_events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "pull_request"));
    }

    #[test]
    fn manifest_mistakes_are_named() {
        let cases = [
            (
                "name: x\nurl: https://x\nhook_atributes: {}\n",
                "unknown key \"hook_atributes\"",
            ),
            ("url: https://x\n", "\"name\" is required"),
            ("name: x\n", "\"url\" is required"),
            ("- a\n", "expected a mapping"),
            ("name: x\nurl: [\n", "at line"),
            ("name: x\nurl: https://x\nhook_attributes: 3\n", "must be a mapping"),
        ];
        for (yaml, want) in cases {
            let e = manifest_json(yaml, "https://h/webhook", "http://127.0.0.1:1/callback", None)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{yaml:?}: {e}");
        }
        let long = "n".repeat(35);
        let e = manifest_json(
            APP_MANIFEST_YAML,
            "https://h/webhook",
            "http://127.0.0.1:1/callback",
            Some(&long),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("34 characters"), "{e}");
    }

    #[test]
    fn urls_for_github_com_enterprise_and_organizations() {
        assert_eq!(default_api_url("https://github.com"), "https://api.github.com");
        assert_eq!(default_api_url("https://GitHub.com/"), "https://api.github.com");
        assert_eq!(
            default_api_url("https://ghe.example.com/"),
            "https://ghe.example.com/api/v3"
        );
        assert_eq!(
            new_app_url("https://github.com/", None, "s1").unwrap(),
            "https://github.com/settings/apps/new?state=s1"
        );
        assert_eq!(
            new_app_url("https://ghe.example.com", Some("acme-inc"), "s2").unwrap(),
            "https://ghe.example.com/organizations/acme-inc/settings/apps/new?state=s2"
        );
        for bad in ["", "-acme", "acme/../x", "a b", &"o".repeat(40)] {
            assert!(new_app_url("https://github.com", Some(bad), "s").is_err(), "{bad:?}");
        }
        assert_eq!(
            base_url("--github-url", "https://ghe.example.com/").unwrap(),
            "https://ghe.example.com"
        );
        for bad in ["ftp://x", "github.com", "https://x/?a=1", "https://x/#f", "not a url"] {
            assert!(base_url("--github-url", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn codes_from_the_redirect_are_screened() {
        assert!(is_valid_code("a1b2C3_d-4"));
        for bad in ["", "../app/installations", "a b", "a%2Fb", "a/b", &"x".repeat(257)] {
            assert!(!is_valid_code(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_conversion_answer_is_checked() {
        let ok = serde_json::json!({
            "id": 7, "slug": "fg", "name": "fg", "html_url": "https://github.com/apps/fg",
            "pem": "-----BEGIN RSA PRIVATE KEY-----\nMII\n-----END RSA PRIVATE KEY-----\n",
            "webhook_secret": "s3cret", "client_id": "c", "client_secret": "cs"
        });
        let app = parse_conversion(ok.to_string().as_bytes()).unwrap();
        assert_eq!(app.id, 7);
        assert_eq!(app.webhook_secret.as_ref().unwrap().expose_secret(), "s3cret");
        let shown = format!("{app:?}");
        assert!(!shown.contains("s3cret") && !shown.contains("MII"), "{shown}");

        let mut no_secret = ok.clone();
        no_secret["webhook_secret"] = Value::Null;
        assert!(parse_conversion(no_secret.to_string().as_bytes())
            .unwrap()
            .webhook_secret
            .is_none());
        let mut bad_pem = ok.clone();
        bad_pem["pem"] = "hello".into();
        assert!(parse_conversion(bad_pem.to_string().as_bytes())
            .unwrap_err()
            .contains("PEM"));
        let mut zero = ok.clone();
        zero["id"] = 0.into();
        assert!(parse_conversion(zero.to_string().as_bytes()).is_err());
        assert!(parse_conversion(b"<html>").is_err());
    }
}
