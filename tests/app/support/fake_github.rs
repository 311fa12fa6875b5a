//! A fake GitHub for tests: wiremock on 127.0.0.1 serving the App JWT → installation-token flow
//! (test-only RSA key generated at start, JWT `iss` and RS256 signature verified), with every
//! API request checked against `tests/fixtures/github/openapi-subset.json`: the operation must exist,
//! query parameters must be declared, the JSON body must validate against the operation's
//! `requestBody` schema, and the installation token must be one the fake issued. Requests that
//! match no mock, and any violation, fail the test in [`FakeGithub::verify`].

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rsa::pkcs1::EncodeRsaPrivateKey;
use rsa::{Pkcs1v15Sign, RsaPrivateKey, RsaPublicKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

pub const APP_ID: u64 = 4242;

// ---- the OpenAPI subset -------------------------------------------------------------------

fn openapi() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/github/openapi-subset.json");
        let text = std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("fake GitHub needs {} (GitHub's OpenAPI subset): {e}", p.display()));
        serde_json::from_str(&text).expect("openapi-subset.json is JSON")
    })
}

fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let ptr = r.strip_prefix('#').unwrap_or_else(|| panic!("non-local $ref {r}"));
            resolve(doc, doc.pointer(ptr).unwrap_or_else(|| panic!("unresolvable $ref {r}")))
        }
        None => v,
    }
}

/// Inline local `$ref`s and translate the OpenAPI 3.0 dialect to JSON Schema: `nullable` → a
/// `null` type (and enum member); `discriminator` dropped (see the subset's README).
fn to_json_schema(doc: &Value, v: &Value, depth: usize) -> Value {
    assert!(depth < 64, "schema too deep (recursive $ref?)");
    let v = resolve(doc, v);
    match v {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, x) in m {
                match k.as_str() {
                    "discriminator" | "nullable" | "example" | "examples" | "xml" | "externalDocs" | "deprecated" => {}
                    k if k.starts_with("x-") => {}
                    "properties" | "patternProperties" => {
                        let props = x
                            .as_object()
                            .unwrap()
                            .iter()
                            .map(|(n, s)| (n.clone(), to_json_schema(doc, s, depth + 1)));
                        out.insert(k.to_owned(), Value::Object(props.collect()));
                    }
                    "enum" | "required" | "type" | "default" | "description" | "title" | "format" | "pattern" => {
                        out.insert(k.to_owned(), x.clone());
                    }
                    _ => {
                        out.insert(k.to_owned(), to_json_schema(doc, x, depth + 1));
                    }
                }
            }
            if m.get("nullable") == Some(&Value::Bool(true)) {
                if let Some(Value::String(t)) = out.get("type").cloned() {
                    out.insert("type".into(), json!([t, "null"]));
                    if let Some(Value::Array(e)) = out.get_mut("enum") {
                        e.push(Value::Null);
                    }
                } else {
                    return json!({ "anyOf": [{ "type": "null" }, Value::Object(out)] });
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| to_json_schema(doc, x, depth + 1)).collect()),
        x => x.clone(),
    }
}

/// The operation (template, operation object) for a concrete method + path.
pub fn operation(method: &str, concrete: &str) -> Option<(String, &'static Value)> {
    let doc = openapi();
    let segs: Vec<&str> = concrete.trim_start_matches('/').split('/').collect();
    for (template, item) in doc["paths"].as_object()? {
        let Some(op) = item.get(method.to_lowercase()) else {
            continue;
        };
        let t: Vec<&str> = template.trim_start_matches('/').split('/').collect();
        // A file path, and a git ref (`heads/flakegate/ledger`), span several segments.
        let multi = t.last().is_some_and(|l| *l == "{path}" || *l == "{ref}");
        let ok = if multi {
            segs.len() >= t.len()
                && t[..t.len() - 1]
                    .iter()
                    .zip(&segs)
                    .all(|(a, b)| a.starts_with('{') || a == b)
        } else {
            segs.len() == t.len() && t.iter().zip(&segs).all(|(a, b)| a.starts_with('{') || a == b)
        };
        if ok {
            return Some((template.clone(), op));
        }
    }
    None
}

fn query_params(op: &Value) -> HashSet<String> {
    let doc = openapi();
    op.get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| resolve(doc, p))
        .filter(|p| p["in"] == "query")
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

fn body_validator(method: &str, template: &str) -> Option<Arc<jsonschema::Validator>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Arc<jsonschema::Validator>>>>> = OnceLock::new();
    let key = format!("{method} {template}");
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache
        .entry(key)
        .or_insert_with(|| {
            let doc = openapi();
            let op = &doc["paths"][template][method.to_lowercase()];
            let schema = op
                .get("requestBody")
                .map(|b| resolve(doc, b))
                .and_then(|b| b.pointer("/content/application~1json/schema"))?;
            let schema = to_json_schema(doc, schema, 0);
            let v = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft7)
                .should_validate_formats(true)
                .build(&schema)
                .unwrap_or_else(|e| panic!("requestBody schema of {method} {template} does not compile: {e}"));
            Some(Arc::new(v))
        })
        .clone()
}

/// Validate `body` as the request body of `method template`; `Err` lists what is wrong.
pub fn validate_request_body(method: &str, template: &str, body: &Value) -> Result<(), String> {
    let v = body_validator(method, template).ok_or_else(|| format!("{method} {template} takes no JSON body"))?;
    let errors: Vec<String> = v
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

// ---- the test-only App key and JWT check ----------------------------------------------------

struct TestKey {
    pem: String,
    public: RsaPublicKey,
}

fn test_key() -> &'static TestKey {
    static KEY: OnceLock<TestKey> = OnceLock::new();
    KEY.get_or_init(|| {
        let private = RsaPrivateKey::new(&mut rand::thread_rng(), 2048).expect("test-only RSA key");
        let pem = private
            .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
            .expect("pem")
            .to_string();
        TestKey {
            pem,
            public: private.to_public_key(),
        }
    })
}

fn b64url(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            b'=' => continue,
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

/// Check an App JWT: RS256 header, signature by the test key, `iss` = app id, not expired.
fn verify_jwt(jwt: &str, app_id: u64) -> Result<(), String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [h, p, s] = parts[..] else {
        return Err("JWT is not three parts".into());
    };
    let header: Value = serde_json::from_slice(&b64url(h).ok_or("bad header b64")?).map_err(|e| e.to_string())?;
    if header["alg"] != "RS256" {
        return Err(format!("JWT alg is {}, not RS256", header["alg"]));
    }
    // PKCS#1 v1.5 DigestInfo prefix for SHA-256.
    const PREFIX: [u8; 19] = [
        0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04,
        0x20,
    ];
    let mut hashed = PREFIX.to_vec();
    hashed.extend(Sha256::digest(format!("{h}.{p}").as_bytes()));
    let sig = b64url(s).ok_or("bad signature b64")?;
    test_key()
        .public
        .verify(Pkcs1v15Sign::new_unprefixed(), &hashed, &sig)
        .map_err(|e| format!("JWT signature: {e}"))?;
    let claims: Value = serde_json::from_slice(&b64url(p).ok_or("bad payload b64")?).map_err(|e| e.to_string())?;
    let iss_ok = claims["iss"] == json!(app_id) || claims["iss"] == json!(app_id.to_string());
    if !iss_ok {
        return Err(format!("JWT iss is {}, not the app id {app_id}", claims["iss"]));
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    if claims["exp"].as_u64().is_none_or(|exp| exp < now) {
        return Err("JWT expired or without exp".into());
    }
    Ok(())
}

// ---- the fake -------------------------------------------------------------------------------

#[derive(Default)]
struct State {
    violations: Vec<String>,
    unmatched: Vec<String>,
    tokens: HashSet<String>,
    /// Which installation each token was issued for.
    token_installations: HashMap<String, u64>,
    token_requests: usize,
    token_ttl: Option<Duration>,
}

pub struct FakeGithub {
    pub server: MockServer,
    pub app_id: u64,
    state: Arc<Mutex<State>>,
}

fn describe(req: &Request) -> String {
    format!("{} {}", req.method, req.url)
}

impl FakeGithub {
    /// Start on 127.0.0.1 with the installation-token endpoint and the catch-all mounted.
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State::default()));
        let fake = FakeGithub {
            server,
            app_id: APP_ID,
            state,
        };
        let st = fake.state.clone();
        let app_id = fake.app_id;
        Mock::given(method("POST"))
            .and(wiremock::matchers::path_regex(r"^/app/installations/[0-9]+/access_tokens$"))
            .respond_with(move |req: &Request| {
                let mut st = st.lock().unwrap();
                st.token_requests += 1;
                let auth = req.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
                let check = auth
                    .strip_prefix("Bearer ")
                    .ok_or_else(|| "token request without a Bearer JWT".to_owned())
                    .and_then(|jwt| verify_jwt(jwt, app_id))
                    .and_then(|()| check_body(req, "POST", "/app/installations/{installation_id}/access_tokens"));
                if let Err(e) = check {
                    st.violations.push(format!("{}: {e}", describe(req)));
                    return ResponseTemplate::new(401).set_body_json(json!({ "message": e }));
                }
                let token = format!("ghs_fake_{}", st.token_requests);
                st.tokens.insert(token.clone());
                let installation = req.url.path().split('/').nth(3).and_then(|i| i.parse().ok()).unwrap_or(0);
                st.token_installations.insert(token.clone(), installation);
                let ttl = st.token_ttl.unwrap_or(Duration::from_secs(3600));
                let expires = chrono::Utc::now() + chrono::Duration::from_std(ttl).unwrap();
                ResponseTemplate::new(201).set_body_json(json!({
                    "token": token,
                    "expires_at": expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    "permissions": { "checks": "write", "pull_requests": "write", "contents": "read", "actions": "read" },
                    "repository_selection": "all",
                }))
            })
            .named("installation token")
            .mount(&fake.server)
            .await;
        let st = fake.state.clone();
        Mock::given(any())
            .respond_with(move |req: &Request| {
                st.lock().unwrap().unmatched.push(describe(req));
                ResponseTemplate::new(501).set_body_json(json!({ "message": "fake GitHub: no mock for this request" }))
            })
            .with_priority(u8::MAX)
            .named("catch-all")
            .mount(&fake.server)
            .await;
        fake
    }

    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// The test-only App private key (PEM), generated at first use; never a real key.
    pub fn private_key_pem(&self) -> &'static str {
        &test_key().pem
    }

    pub fn token_requests(&self) -> usize {
        self.state.lock().unwrap().token_requests
    }

    /// For a mock's responder: the installation whose token authenticated a request (`None`:
    /// no installation token).
    pub fn installation_of(&self) -> impl Fn(&Request) -> Option<u64> + Send + Sync + 'static {
        let st = self.state.clone();
        move |req: &Request| {
            let auth = req.headers.get("authorization")?.to_str().ok()?;
            let token = auth.strip_prefix("Bearer ")?;
            st.lock().unwrap().token_installations.get(token).copied()
        }
    }

    /// Lifetime of the installation tokens issued from now on (default one hour).
    pub fn set_token_ttl(&self, ttl: Duration) {
        self.state.lock().unwrap().token_ttl = Some(ttl);
    }

    /// Mount a GitHub API mock for `method concrete_path` (any query), expected `times` times
    /// (a count or a range such as `0..`). The path must belong to an operation of the OpenAPI
    /// subset. Before `respond` runs, the request's installation token, query parameter names and
    /// JSON body are checked.
    pub async fn mock<F>(&self, method_name: &str, concrete_path: &str, times: impl Into<wiremock::Times>, respond: F)
    where
        F: Fn(&Request) -> ResponseTemplate + Send + Sync + 'static,
    {
        let (template, op) = operation(method_name, concrete_path)
            .unwrap_or_else(|| panic!("{method_name} {concrete_path} is no operation in openapi-subset.json"));
        let allowed = query_params(op);
        let st = self.state.clone();
        let m = method_name.to_owned();
        Mock::given(method(method_name))
            .and(path(concrete_path))
            .respond_with(move |req: &Request| match screen(&st, req, &m, &template, &allowed) {
                Some(refused) => refused,
                None => respond(req),
            })
            .expect(times)
            .named(format!("{method_name} {concrete_path}"))
            .mount(&self.server)
            .await;
    }

    /// Mount one handler for every API request, any method, whose path starts with `prefix`
    /// (e.g. `/repos/owner/name/`), at wiremock `priority` (lower wins; `mock` uses the default
    /// 5, so a test's own `mock` overrides this). No `times` expectation. Each request is checked
    /// exactly as [`FakeGithub::mock`] checks it, against the operation its own path and method
    /// belong to; a request that is no operation of the subset is a violation. `respond` gets the
    /// request and the operation's OpenAPI path template (`/repos/{owner}/{repo}/check-runs/{check_run_id}`).
    pub async fn mock_prefix<F>(&self, prefix: &str, priority: u8, respond: F)
    where
        F: Fn(&Request, &str) -> ResponseTemplate + Send + Sync + 'static,
    {
        let st = self.state.clone();
        let re = format!("^{}", regex_escape(prefix));
        Mock::given(wiremock::matchers::path_regex(re))
            .respond_with(move |req: &Request| {
                let m = req.method.as_str().to_owned();
                let Some((template, op)) = operation(&m, req.url.path()) else {
                    let msg = format!("{m} {} is no operation in openapi-subset.json", req.url.path());
                    st.lock().unwrap().violations.push(format!("{}: {msg}", describe(req)));
                    return ResponseTemplate::new(501).set_body_json(json!({ "message": msg }));
                };
                let allowed = query_params(op);
                match screen(&st, req, &m, &template, &allowed) {
                    Some(refused) => refused,
                    None => respond(req, &template),
                }
            })
            .with_priority(priority)
            .named(format!("any {prefix}"))
            .mount(&self.server)
            .await;
    }

    /// Mount a non-API URL (e.g. the blob storage an artifact redirect points to).
    pub async fn mock_raw<F>(
        &self,
        method_name: &str,
        concrete_path: &str,
        times: impl Into<wiremock::Times>,
        respond: F,
    ) where
        F: Fn(&Request) -> ResponseTemplate + Send + Sync + 'static,
    {
        Mock::given(method(method_name))
            .and(path(concrete_path))
            .respond_with(respond)
            .expect(times)
            .named(format!("raw {method_name} {concrete_path}"))
            .mount(&self.server)
            .await;
    }

    /// Every request received, in order (one copy, for tests that sort many at once).
    pub async fn all_requests(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }

    /// Requests received for `method path` (any query), in order.
    pub async fn requests(&self, method_name: &str, concrete_path: &str) -> Vec<Request> {
        let all = self.server.received_requests().await.unwrap_or_default();
        all.into_iter()
            .filter(|r| r.method.as_str() == method_name && r.url.path() == concrete_path)
            .collect()
    }

    /// Strict teardown: no violations, no unmatched requests, every `expect` met.
    pub async fn verify(self) {
        {
            let st = self.state.lock().unwrap();
            assert!(
                st.violations.is_empty(),
                "fake GitHub saw invalid requests:\n  {}",
                st.violations.join("\n  ")
            );
            assert!(
                st.unmatched.is_empty(),
                "requests matched no mock:\n  {}",
                st.unmatched.join("\n  ")
            );
        }
        self.server.verify().await;
    }
}

/// The checks every API request passes before its mock answers: an installation token the fake
/// issued, only declared query parameters, a body valid for the operation. `Some` is the refusal.
fn screen(
    st: &Mutex<State>,
    req: &Request,
    method: &str,
    template: &str,
    allowed: &HashSet<String>,
) -> Option<ResponseTemplate> {
    let auth = req
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mut problems = Vec::new();
    if template == "/app/installations" {
        // GitHub answers this one to the App itself: its JWT, not an installation token.
        let jwt = auth.strip_prefix("Bearer ").ok_or_else(|| "no Bearer JWT".to_owned());
        if let Err(e) = jwt.and_then(|j| verify_jwt(j, APP_ID)) {
            problems.push(format!("{template} needs the App's JWT: {e}"));
        }
    } else if !auth
        .strip_prefix("Bearer ")
        .is_some_and(|t| st.lock().unwrap().tokens.contains(t))
    {
        problems.push(format!(
            "not authenticated with an installation token (Authorization: {auth:?})"
        ));
    }
    for (k, _) in req.url.query_pairs() {
        if !allowed.contains(k.as_ref()) {
            problems.push(format!("query parameter {k:?} is not declared for {method} {template}"));
        }
    }
    if let Err(e) = check_body(req, method, template) {
        problems.push(e);
    }
    if problems.is_empty() {
        return None;
    }
    let msg = problems.join("; ");
    st.lock().unwrap().violations.push(format!("{}: {msg}", describe(req)));
    Some(ResponseTemplate::new(422).set_body_json(json!({ "message": msg })))
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special.then_some('\\').into_iter().chain(std::iter::once(c))
        })
        .collect()
}

fn check_body(req: &Request, method: &str, template: &str) -> Result<(), String> {
    if req.body.is_empty() {
        let doc = openapi();
        let required = doc["paths"][template][method.to_lowercase()]
            .get("requestBody")
            .map(|b| resolve(doc, b)["required"] == json!(true))
            .unwrap_or(false);
        return if required {
            Err(format!("{method} {template} requires a body"))
        } else {
            Ok(())
        };
    }
    let body: Value = serde_json::from_slice(&req.body).map_err(|e| format!("body is not JSON: {e}"))?;
    validate_request_body(method, template, &body)
        .map_err(|e| format!("body fails the {method} {template} schema: {e}"))?;
    github_limits(template, &body).map_err(|e| format!("{method} {template}: over GitHub's limits: {e}"))
}

/// GitHub's limits that the OpenAPI description states only in prose, or in characters where
/// GitHub counts bytes: summary and text ≤ 65,535 bytes; per annotation `message` and
/// `raw_details` ≤ 64 KiB, `title` ≤ 255 characters; a comment ≤ 65,536 characters.
pub fn github_limits(template: &str, body: &Value) -> Result<(), String> {
    let bytes = |v: &Value| v.as_str().map_or(0, str::len);
    let chars = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    let mut problems = Vec::new();
    if template.contains("/check-runs") {
        let out = &body["output"];
        for field in ["summary", "text"] {
            if bytes(&out[field]) > 65_535 {
                problems.push(format!("output.{field} is {} bytes", bytes(&out[field])));
            }
        }
        for (i, a) in out["annotations"].as_array().into_iter().flatten().enumerate() {
            for field in ["message", "raw_details"] {
                if bytes(&a[field]) > 64 * 1024 {
                    problems.push(format!("annotations[{i}].{field} is {} bytes", bytes(&a[field])));
                }
            }
            if chars(&a["title"]) > 255 {
                problems.push(format!("annotations[{i}].title is {} characters", chars(&a["title"])));
            }
        }
    }
    if template.contains("/comments") && chars(&body["body"]) > 65_536 {
        problems.push(format!("comment body is {} characters", chars(&body["body"])));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// `components/examples/<name>.value` from the subset: GitHub's own example answer.
pub fn example(name: &str) -> Value {
    openapi()["components"]["examples"][name]["value"].clone()
}
