//! GitHub's side of the App manifest flow, mounted on the fake GitHub: the web form's endpoint
//! (`POST /settings/apps/new`, or `/organizations/{org}/settings/apps/new`), which checks the
//! manifest it is posted against GitHub's documented manifest parameters and redirects back to
//! the manifest's `redirect_url` with a code and the `state` — what GitHub does once the person
//! confirms — and the API's `POST /app-manifests/{code}/conversions`, an operation of the OpenAPI
//! subset, unauthenticated, which answers with GitHub's own example App (the subset's
//! `integration-from-manifest`) carrying the fake's test key and a fresh webhook secret.
//! Anything wrong is recorded and fails [`ManifestFlow::verify`].

use super::fake_github::{example, operation, FakeGithub};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use wiremock::matchers::{method, path};
use wiremock::{Mock, Request, ResponseTemplate};

/// GitHub's manifest parameters (docs: "GitHub App Manifest parameters").
const MANIFEST_KEYS: &[&str] = &[
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

/// How the conversion answers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// 201 with the new App.
    Created,
    /// 404, as GitHub answers a code that expired (after an hour) or was used already.
    Expired,
}

#[derive(Default)]
struct FlowState {
    /// Each manifest posted to the form, with the `state` it came with.
    posted: Vec<(Value, String)>,
    conversions: usize,
    violations: Vec<String>,
}

pub struct ManifestFlow {
    pub code: String,
    /// Carries a quote and shell syntax: the env file and the fly line must quote it.
    pub webhook_secret: String,
    pub app_id: u64,
    pub pem: String,
    state: Arc<Mutex<FlowState>>,
}

impl ManifestFlow {
    /// Mount the form endpoint (for `org`, or a personal account) and the conversion on `fake`.
    pub async fn mount(fake: &FakeGithub, org: Option<&str>, conversion: Conversion) -> ManifestFlow {
        let flow = ManifestFlow {
            code: "a1b2c3d4e5f60718293a".into(),
            webhook_secret: "wh'sec $(touch pwned) `x` \"q\"".into(),
            app_id: fake.app_id,
            pem: fake.private_key_pem().to_owned(),
            state: Arc::default(),
        };
        let form_path = match org {
            Some(o) => format!("/organizations/{o}/settings/apps/new"),
            None => "/settings/apps/new".into(),
        };
        let st = flow.state.clone();
        let code = flow.code.clone();
        Mock::given(method("POST"))
            .and(path(form_path.as_str()))
            .respond_with(move |req: &Request| match check_form(req) {
                Ok((manifest, state)) => {
                    let back = format!(
                        "{}?code={code}&state={state}",
                        manifest["redirect_url"].as_str().unwrap_or_default()
                    );
                    st.lock().unwrap().posted.push((manifest, state));
                    ResponseTemplate::new(302).insert_header("location", back.as_str())
                }
                Err(e) => {
                    st.lock().unwrap().violations.push(format!("POST {}: {e}", req.url));
                    ResponseTemplate::new(422).set_body_string(e)
                }
            })
            .named(format!("manifest form {form_path}"))
            .mount(&fake.server)
            .await;

        let conversion_path = format!("/app-manifests/{}/conversions", flow.code);
        assert!(
            operation("POST", &conversion_path).is_some_and(|(t, _)| t == "/app-manifests/{code}/conversions"),
            "the conversion is an operation of openapi-subset.json"
        );
        let st = flow.state.clone();
        let (app_id, pem, secret) = (flow.app_id, flow.pem.clone(), flow.webhook_secret.clone());
        Mock::given(method("POST"))
            .and(path(conversion_path.as_str()))
            .respond_with(move |req: &Request| {
                let mut s = st.lock().unwrap();
                s.conversions += 1;
                if let Some(auth) = req.headers.get("authorization") {
                    // The code is the credential; nothing else may be sent along.
                    s.violations.push(format!("the conversion was sent credentials: {auth:?}"));
                }
                if !req.body.is_empty() {
                    s.violations.push("the conversion takes no body".into());
                }
                if conversion == Conversion::Expired {
                    return ResponseTemplate::new(404).set_body_json(json!({
                        "message": "Not Found",
                        "documentation_url": "https://docs.github.com/rest/apps/apps#create-a-github-app-from-a-manifest"
                    }));
                }
                let Some((manifest, _)) = s.posted.last().cloned() else {
                    s.violations.push("a conversion before any manifest was posted".into());
                    return ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" }));
                };
                let name = manifest["name"].as_str().unwrap_or_default().to_owned();
                let mut app = example("integration-from-manifest");
                app["id"] = json!(app_id);
                app["name"] = json!(name);
                app["slug"] = json!(name);
                app["html_url"] = json!(format!("https://github.com/apps/{name}"));
                app["pem"] = json!(pem);
                app["webhook_secret"] = json!(secret);
                ResponseTemplate::new(201).set_body_json(app)
            })
            .named("manifest conversion")
            .mount(&fake.server)
            .await;
        flow
    }

    /// The manifests posted to the form, in order.
    pub fn manifests(&self) -> Vec<Value> {
        self.state
            .lock()
            .unwrap()
            .posted
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }

    pub fn conversions(&self) -> usize {
        self.state.lock().unwrap().conversions
    }

    /// No request broke GitHub's rules.
    pub fn verify(&self) {
        let s = self.state.lock().unwrap();
        assert!(
            s.violations.is_empty(),
            "the manifest flow saw invalid requests:\n  {}",
            s.violations.join("\n  ")
        );
    }
}

/// The form post as GitHub checks it: form-encoded, a `state` in the query, a `manifest` field
/// holding a JSON object of manifest parameters with a name, a URL, a webhook URL and a redirect.
fn check_form(req: &Request) -> Result<(Value, String), String> {
    let ctype = req
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !ctype.starts_with("application/x-www-form-urlencoded") {
        return Err(format!("content-type {ctype:?}: expected a form post"));
    }
    let state = req
        .url
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
        .ok_or("no state in the query")?;
    let body = std::str::from_utf8(&req.body).map_err(|_| "the form is not UTF-8")?;
    let mut parsed = req.url.clone();
    parsed.set_query(Some(body));
    let fields: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
    let [(key, text)] = &fields[..] else {
        return Err(format!(
            "expected exactly the field manifest, got {:?}",
            fields.iter().map(|f| &f.0).collect::<Vec<_>>()
        ));
    };
    if key != "manifest" {
        return Err(format!("field {key:?}: expected manifest"));
    }
    let manifest: Value = serde_json::from_str(text).map_err(|e| format!("the manifest is not JSON: {e}"))?;
    let obj = manifest.as_object().ok_or("the manifest is not an object")?;
    if let Some(k) = obj.keys().find(|k| !MANIFEST_KEYS.contains(&k.as_str())) {
        return Err(format!("unknown manifest parameter {k:?}"));
    }
    let string = |p: &str| manifest.pointer(p).and_then(Value::as_str).filter(|s| !s.is_empty());
    for p in ["/name", "/url", "/hook_attributes/url", "/redirect_url"] {
        string(p).ok_or(format!("{p} is required"))?;
    }
    if !string("/redirect_url").unwrap().starts_with("http://127.0.0.1:") {
        return Err("redirect_url is not the loopback setup server".into());
    }
    let perms = manifest["default_permissions"]
        .as_object()
        .ok_or("no default_permissions")?;
    if perms.values().any(|v| v != "read" && v != "write") {
        return Err("a permission is neither read nor write".into());
    }
    if !manifest["default_events"]
        .as_array()
        .is_some_and(|e| e.iter().all(Value::is_string))
    {
        return Err("default_events is not a list of event names".into());
    }
    Ok((manifest, state))
}
