//! `flakegate setup`: create the GitHub App with one command, through GitHub's manifest flow.
//! A one-page form served on loopback posts the App manifest (with the chosen webhook URL) to
//! GitHub; GitHub redirects back with a `code` (and the `state` this run made up, checked), which
//! is exchanged for the App's id, private key and webhook secret. Those go to an env file only
//! its owner can read (never over an existing one without `--force`), or out as the `fly secrets
//! set` command.

use crate::github::manifest::{self, NewApp, APP_MANIFEST_YAML, GITHUB_WEB_URL};
use anyhow::Context as _;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use secrecy::ExposeSecret as _;
use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use subtle::ConstantTimeEq as _;
use tokio::sync::oneshot;

const PAGE_TEMPLATE: &str = include_str!("../../templates/setup-page.html.j2");
const PAGE_NAME: &str = "setup-page.html.j2";
/// How long the exchange with GitHub may take to connect, and then to answer.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// The URL GitHub sends webhooks to: your server's `https://HOST/webhook`.
    #[arg(long, value_name = "URL")]
    webhook_url: String,
    /// Create the App for this organization instead of your personal account.
    #[arg(long, value_name = "LOGIN")]
    org: Option<String>,
    /// The App's name (unique across GitHub); default: the manifest's `name`.
    #[arg(long)]
    name: Option<String>,
    /// GitHub's web address; GitHub Enterprise Server: `https://HOST`.
    #[arg(long, value_name = "URL", default_value = GITHUB_WEB_URL)]
    github_url: String,
    /// The REST API's base; default: `https://api.github.com` for github.com, else `GITHUB_URL/api/v3`.
    #[arg(long, value_name = "URL")]
    api_url: Option<String>,
    /// A manifest file instead of the built-in `app-manifest.yml` (YAML).
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// The env file written (mode 0600) with FLAKEGATE_APP_ID, FLAKEGATE_PRIVATE_KEY and FLAKEGATE_WEBHOOK_SECRET.
    #[arg(long, value_name = "FILE", default_value = "flakegate.env")]
    out: PathBuf,
    /// Replace the env file when it exists.
    #[arg(long)]
    force: bool,
    /// Write no file: print the `fly secrets set …` command (values shell-quoted) on stdout.
    #[arg(long, conflicts_with_all = ["force", "out"])]
    print_fly: bool,
    /// Seconds to wait for GitHub to send you back.
    #[arg(long, value_name = "SECONDS", default_value_t = 900)]
    timeout: u64,
    /// The loopback port the page is served on (default: any free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

/// Where the App's credentials go.
#[derive(Debug, Clone)]
enum Output {
    EnvFile { path: PathBuf, force: bool },
    PrintFly,
}

/// `flakegate setup`, validated.
#[derive(Debug)]
struct Setup {
    github_url: String,
    api_url: String,
    org: Option<String>,
    name: Option<String>,
    webhook_url: String,
    manifest_yaml: String,
    output: Output,
    timeout: Duration,
    port: u16,
}

pub fn run(args: SetupArgs) -> anyhow::Result<i32> {
    let setup = Setup::from_args(args)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(setup.run())
}

impl Setup {
    fn from_args(a: SetupArgs) -> anyhow::Result<Self> {
        let github_url = manifest::base_url("--github-url", &a.github_url)?;
        let api_url = match &a.api_url {
            Some(u) => manifest::base_url("--api-url", u)?,
            None => manifest::default_api_url(&github_url),
        };
        let webhook_url = manifest::base_url("--webhook-url", &a.webhook_url)?;
        let manifest_yaml = match &a.manifest {
            Some(p) => std::fs::read_to_string(p).with_context(|| format!("reading the manifest {}", p.display()))?,
            None => APP_MANIFEST_YAML.to_owned(),
        };
        // Fail now, not after the App exists and its one-time code is spent.
        manifest::manifest_json(
            &manifest_yaml,
            &webhook_url,
            "http://127.0.0.1/callback",
            a.name.as_deref(),
        )
        .with_context(|| match &a.manifest {
            Some(p) => p.display().to_string(),
            None => "the built-in app-manifest.yml".into(),
        })?;
        manifest::new_app_url(&github_url, a.org.as_deref(), "x")?;
        if a.timeout == 0 {
            anyhow::bail!("--timeout 0: expected a number of seconds above 0");
        }
        let output = if a.print_fly {
            Output::PrintFly
        } else {
            if !a.force && std::fs::symlink_metadata(&a.out).is_ok() {
                anyhow::bail!(
                    "{} exists: it may hold another App's credentials; --force replaces it, --out names another file",
                    a.out.display()
                );
            }
            let dir = parent_dir(&a.out);
            if !dir.is_dir() {
                anyhow::bail!(
                    "--out {}: the directory {} does not exist",
                    a.out.display(),
                    dir.display()
                );
            }
            Output::EnvFile {
                path: a.out,
                force: a.force,
            }
        };
        Ok(Setup {
            github_url,
            api_url,
            org: a.org,
            name: a.name,
            webhook_url,
            manifest_yaml,
            output,
            timeout: Duration::from_secs(a.timeout),
            port: a.port,
        })
    }

    async fn run(self) -> anyhow::Result<i32> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
            .await
            .with_context(|| format!("listening on 127.0.0.1:{}", self.port))?;
        let port = listener.local_addr().context("the listening address")?.port();
        let state = random_state()?;
        let redirect_url = format!("http://127.0.0.1:{port}/callback");
        let mut manifest = manifest::manifest_json(
            &self.manifest_yaml,
            &self.webhook_url,
            &redirect_url,
            self.name.as_deref(),
        )?;
        if self.manifest_yaml == APP_MANIFEST_YAML {
            // The built-in manifest's homepage is the project's, as this build knows it.
            manifest["url"] = serde_json::Value::String(crate::present::links::HOMEPAGE.to_owned());
        }
        let action = manifest::new_app_url(&self.github_url, self.org.as_deref(), &state)?;
        let form = render(
            "form",
            minijinja::context! {
                action,
                manifest => manifest.to_string(),
                permissions => permissions(&manifest),
                events => events(&manifest),
                homepage => manifest["url"].as_str().unwrap_or_default(),
                wait => wait_words(self.timeout),
                deadline => (chrono::Utc::now() + self.timeout).format("%H:%M UTC").to_string(),
                name => manifest["name"].as_str().unwrap_or_default(),
                webhook_url => self.webhook_url,
                github_host => self.github_url,
                org => self.org,
                print_fly => matches!(self.output, Output::PrintFly),
                out => self.out_display(),
            },
        )?;
        let (done_tx, done_rx) = oneshot::channel();
        let shared = Arc::new(Shared {
            form,
            state,
            hosts: [format!("127.0.0.1:{port}"), format!("localhost:{port}")],
            api_url: self.api_url.clone(),
            output: self.output.clone(),
            done: Mutex::new(Some(done_tx)),
            csp: format!(
                "default-src 'none'; style-src 'unsafe-inline'; form-action {} 'self'; frame-ancestors 'none'",
                self.github_url
            ),
        });
        let app = axum::Router::new()
            .route("/", get(page))
            .route("/callback", get(callback))
            .with_state(shared);
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop_rx.await;
                })
                .await
        });
        eprintln!(
            "flakegate setup: open http://127.0.0.1:{port}/ in a browser on this machine and press \
             \"Create GitHub App\" (waiting {} s for GitHub to send you back)",
            self.timeout.as_secs()
        );
        let outcome = tokio::time::timeout(self.timeout, done_rx).await;
        let _ = stop_tx.send(());
        // The last page is answered before the server stops; a browser that keeps its
        // connection open does not hold the command up for long.
        let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
        let app = match outcome {
            Err(_) => anyhow::bail!(
                "GitHub did not send you back to http://127.0.0.1:{port}/callback within {} s (--timeout); \
                 no App was recorded: run flakegate setup again (an App already created on GitHub can be \
                 deleted in its settings)",
                self.timeout.as_secs()
            ),
            Ok(Err(_)) => anyhow::bail!("the setup server stopped before GitHub sent you back"),
            Ok(Ok(result)) => result?,
        };
        Ok(self.report(&app))
    }

    fn out_display(&self) -> String {
        match &self.output {
            Output::EnvFile { path, .. } => path.display().to_string(),
            Output::PrintFly => String::new(),
        }
    }

    /// Say what was done; the exit status is 1 when GitHub gave no webhook secret (the App cannot
    /// be served until one is set).
    fn report(&self, app: &NewApp) -> i32 {
        if let Output::PrintFly = self.output {
            println!("{}", fly_command(app, &self.api_url));
        }
        let place = match &self.output {
            Output::EnvFile { path, .. } => format!(
                "its id, private key and webhook secret are in {p} (mode 0600); load them with: set -a; . {p}; set +a",
                p = shell_quote(&path.display().to_string())
            ),
            Output::PrintFly => "run the fly secrets command above in your fly app's directory".into(),
        };
        eprintln!(
            "flakegate setup: created the GitHub App {:?} (id {}); {place}",
            app.name, app.id
        );
        if let Some(url) = install_url(app) {
            eprintln!("flakegate setup: install it on the repositories it should gate: {url}");
        }
        if app.webhook_secret.is_none() {
            eprintln!(
                "flakegate setup: GitHub returned no webhook secret: set one in the App's settings \
                 (General → Webhook secret) and give it to the server as FLAKEGATE_WEBHOOK_SECRET"
            );
            return 1;
        }
        0
    }
}

/// What the two routes share.
struct Shared {
    form: String,
    state: String,
    /// The `Host` headers this server answers (a page on another site that points a name at
    /// 127.0.0.1 sends its own name: DNS rebinding gets nothing).
    hosts: [String; 2],
    api_url: String,
    output: Output,
    /// Taken by the first callback that carries this run's state.
    done: Mutex<Option<oneshot::Sender<anyhow::Result<NewApp>>>>,
    csp: String,
}

impl Shared {
    fn html(&self, status: StatusCode, body: String) -> Response {
        let mut r = (status, body).into_response();
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        if let Ok(v) = HeaderValue::from_str(&self.csp) {
            h.insert(header::CONTENT_SECURITY_POLICY, v);
        }
        r
    }

    fn failure(&self, status: StatusCode, message: &str) -> Response {
        let body = render("failed", minijinja::context! { message })
            .unwrap_or_else(|_| "flakegate setup failed; see the terminal".into());
        self.html(status, body)
    }

    /// A redirect that does not end the run: says so, and that the command still waits.
    fn waiting(&self, status: StatusCode, message: &str) -> Response {
        let body = render("waiting", minijinja::context! { message })
            .unwrap_or_else(|_| "flakegate setup is still waiting; see the terminal".into());
        self.html(status, body)
    }

    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }
}

async fn page(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !s.host_ok(&headers) {
        return s.failure(StatusCode::MISDIRECTED_REQUEST, "this page answers on 127.0.0.1 only");
    }
    s.html(StatusCode::OK, s.form.clone())
}

async fn callback(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !s.host_ok(&headers) {
        return s.failure(StatusCode::MISDIRECTED_REQUEST, "this page answers on 127.0.0.1 only");
    }
    let state_ok = query
        .get("state")
        .is_some_and(|got| bool::from(got.as_bytes().ct_eq(s.state.as_bytes())));
    if !state_ok {
        eprintln!("flakegate setup: refused a callback whose state is not this run's (still waiting)");
        return s.waiting(
            StatusCode::BAD_REQUEST,
            "This redirect does not carry the state of the running flakegate setup, so nothing was done with it.",
        );
    }
    let Some(code) = query.get("code").filter(|c| !c.is_empty()) else {
        eprintln!("flakegate setup: GitHub sent you back without a code: no App was created (still waiting)");
        return s.waiting(
            StatusCode::BAD_REQUEST,
            "GitHub sent you back without a code: no App was created.",
        );
    };
    let Some(done) = s.done.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return s.failure(StatusCode::CONFLICT, "This setup has already received its App.");
    };
    let outcome = exchange(&s, code).await;
    let response = match &outcome {
        Ok(app) => match render(
            "created",
            minijinja::context! {
                name => app.name,
                app_id => app.id,
                install_url => install_url(app),
                print_fly => matches!(s.output, Output::PrintFly),
                out => match &s.output { Output::EnvFile { path, .. } => path.display().to_string(), Output::PrintFly => String::new() },
            },
        ) {
            Ok(body) => s.html(StatusCode::OK, body),
            Err(e) => s.failure(StatusCode::INTERNAL_SERVER_ERROR, &format!("{e:#}")),
        },
        Err(e) => s.failure(StatusCode::BAD_GATEWAY, &format!("{e:#}")),
    };
    let _ = done.send(outcome);
    response
}

/// The code for the App, and the App's credentials where they go.
async fn exchange(s: &Shared, code: &str) -> anyhow::Result<NewApp> {
    let app = manifest::convert(&s.api_url, code, EXCHANGE_TIMEOUT)
        .await
        .with_context(|| format!("exchanging the code at {}/app-manifests/…/conversions", s.api_url))?;
    if let Output::EnvFile { path, force } = &s.output {
        write_private(path, env_file(&app, &s.api_url).as_bytes(), *force).with_context(|| {
            format!(
                "writing {} (GitHub created the App {:?}, id {}: its private key can be generated again in the App's settings)",
                path.display(),
                app.name,
                app.id
            )
        })?;
    }
    Ok(app)
}

fn render(page: &str, ctx: minijinja::Value) -> anyhow::Result<String> {
    let mut env = minijinja::Environment::new();
    // `.html.j2`: every value is HTML-escaped.
    env.add_template(PAGE_NAME, PAGE_TEMPLATE)?;
    let ctx = minijinja::context! { page, ..ctx };
    Ok(env.get_template(PAGE_NAME)?.render(ctx)?)
}

/// A permission or an event of the manifest, in words.
#[derive(Debug, serde::Serialize)]
struct Described {
    name: String,
    level: String,
    why: String,
}

/// The manifest's `default_permissions`, each with what flakegate uses it for.
fn permissions(manifest: &serde_json::Value) -> Vec<Described> {
    let Some(map) = manifest["default_permissions"].as_object() else {
        return Vec::new();
    };
    map.iter()
        .map(|(key, level)| {
            let (name, why) = match key.as_str() {
                "checks" => ("Checks", "to post the flakegate check run with its verdict"),
                "pull_requests" => (
                    "Pull requests",
                    "to read the patch and keep one comment on it up to date; and to keep one pull request of its \
                     own proposing ledger changes",
                ),
                "contents" => (
                    "Contents",
                    "to read the ledger, the config and CODEOWNERS at the base commit; and to commit the proposed \
                     ledger on its own branch, flakegate/ledger (never another)",
                ),
                "actions" => (
                    "Actions",
                    "to download the evidence artifact of a workflow run; and to ask the evidence workflow for \
                     probe runs of freezes near expiry",
                ),
                "metadata" => ("Metadata", "GitHub gives every App this"),
                "merge_queues" => ("Merge queues", "to judge the groups of a merge queue"),
                "issues" => ("Issues", "to keep one issue listing expired freezes"),
                other => (other, "asked for by this manifest"),
            };
            let level = match level.as_str() {
                Some("read") => "read-only".to_string(),
                Some("write") => "read and write".to_string(),
                Some(other) => other.to_string(),
                None => level.to_string(),
            };
            Described {
                name: name.to_string(),
                level,
                why: why.to_string(),
            }
        })
        .collect()
}

/// The manifest's `default_events`, each with why flakegate listens to it.
fn events(manifest: &serde_json::Value) -> Vec<Described> {
    let Some(list) = manifest["default_events"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|e| e.as_str())
        .map(|e| {
            let why = match e {
                "pull_request" => {
                    "a pull request opened, updated or retargeted is judged again; a merge into the default branch maps what freezes leave blind"
                }
                "workflow_run" => "a finished evidence workflow brings the evidence",
                "check_run" => "the check run's Re-run and Re-evaluate buttons",
                "check_suite" => "GitHub's re-run of all checks",
                "merge_group" => "a merge queue's group is judged, and cancelled when it leaves the queue",
                "push" => "a push to the default branch may change the ledger (the expired-freezes issue)",
                _ => "asked for by this manifest",
            };
            Described {
                name: e.to_string(),
                level: String::new(),
                why: why.to_string(),
            }
        })
        .collect()
}

/// `--timeout` in words: "15 minutes", "90 seconds".
fn wait_words(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 120 && s % 60 == 0 {
        format!("{} minutes", s / 60)
    } else {
        format!("{s} seconds")
    }
}

fn install_url(app: &NewApp) -> Option<String> {
    app.html_url
        .as_deref()
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
        .map(|u| format!("{}/installations/new", u.trim_end_matches('/')))
}

/// 32 hex digits from the operating system's random source.
fn random_state() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(|e| anyhow::anyhow!("reading random bytes for the state: {e}"))?;
    Ok(hex::encode(bytes))
}

/// `s` as one word for a POSIX shell: single-quoted, each `'` written as `'\''`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The settings `flakegate serve` reads, as `NAME=value` lines; the API URL only when it is not
/// GitHub's.
fn settings(app: &NewApp, api_url: &str) -> Vec<(&'static str, String)> {
    let mut v = vec![("FLAKEGATE_APP_ID", app.id.to_string())];
    if let Some(secret) = &app.webhook_secret {
        v.push(("FLAKEGATE_WEBHOOK_SECRET", shell_quote(secret.expose_secret())));
    }
    v.push(("FLAKEGATE_PRIVATE_KEY", shell_quote(app.pem.expose_secret())));
    if api_url != crate::github::DEFAULT_API_URL {
        v.push(("FLAKEGATE_GITHUB_API_URL", shell_quote(api_url)));
    }
    v
}

/// The env file: shell syntax, so `set -a; . FILE; set +a` loads it (the key spans lines).
fn env_file(app: &NewApp, api_url: &str) -> String {
    let mut out = format!(
        "# The flakegate GitHub App (id {}), made by `flakegate setup`. Keep this file secret.\n\
         # Load it into a shell with: set -a; . ./flakegate.env; set +a\n",
        app.id
    );
    for (k, v) in settings(app, api_url) {
        out.push_str(&format!("{k}={v}\n"));
    }
    out
}

fn fly_command(app: &NewApp, api_url: &str) -> String {
    let words: Vec<String> = settings(app, api_url)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("fly secrets set {}", words.join(" "))
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Write `bytes` to `path` readable by its owner only (mode 0600 from creation on, never
/// wider for a moment): a new file, or with `force` a temporary file renamed over the old one.
fn write_private(path: &Path, bytes: &[u8], force: bool) -> std::io::Result<()> {
    let create = |p: &Path| {
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        o.open(p)
    };
    if !force {
        let mut f = create(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => std::io::Error::new(
                e.kind(),
                format!("{} appeared while waiting; --force replaces it", path.display()),
            ),
            _ => e,
        })?;
        f.write_all(bytes)?;
        return f.sync_all();
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "flakegate.env".into());
    let tmp = parent_dir(path).join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::SecretString;

    fn app(secret: Option<&str>) -> NewApp {
        NewApp {
            id: 99,
            slug: Some("fg".into()),
            name: "fg".into(),
            html_url: Some("https://github.com/apps/fg".into()),
            pem: SecretString::from("-----BEGIN RSA PRIVATE KEY-----\nMII'x\n-----END RSA PRIVATE KEY-----\n"),
            webhook_secret: secret.map(SecretString::from),
        }
    }

    #[test]
    fn values_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("$(rm -rf /)`x`"), "'$(rm -rf /)`x`'");
        let line = fly_command(&app(Some("s'1")), "https://api.github.com");
        assert!(
            line.starts_with(r"fly secrets set FLAKEGATE_APP_ID=99 FLAKEGATE_WEBHOOK_SECRET='s'\''1' FLAKEGATE_PRIVATE_KEY='-----BEGIN"),
            "{line}"
        );
        assert!(!line.contains("FLAKEGATE_GITHUB_API_URL"), "{line}");
        let ghe = env_file(&app(None), "https://ghe.example.com/api/v3");
        assert!(
            ghe.contains("FLAKEGATE_GITHUB_API_URL='https://ghe.example.com/api/v3'\n"),
            "{ghe}"
        );
        assert!(!ghe.contains("FLAKEGATE_WEBHOOK_SECRET"), "{ghe}");
    }

    #[test]
    fn the_install_link_is_only_an_http_url() {
        assert_eq!(
            install_url(&app(None)).as_deref(),
            Some("https://github.com/apps/fg/installations/new")
        );
        let mut a = app(None);
        a.html_url = Some("javascript:alert(1)".into());
        assert_eq!(install_url(&a), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private_and_not_overwritten_without_force() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fg.env");
        write_private(&p, b"one", false).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        let e = write_private(&p, b"two", false).unwrap_err();
        assert!(e.to_string().contains("--force"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&p, b"three", true).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"three");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn the_page_escapes_what_it_shows() {
        let html = render(
            "form",
            minijinja::context! {
                action => "https://github.com/settings/apps/new?state=s",
                manifest => r#"{"name":"a\"><script>x</script>"}"#,
                permissions => vec![Described { name: "<b>".into(), level: "read".into(), why: "w".into() }],
                events => Vec::<Described>::new(),
                homepage => "https://example.invalid/",
                wait => "15 minutes",
                deadline => "10:00 UTC",
                name => "<i>n</i>",
                webhook_url => "https://h/webhook",
                github_host => "https://github.com",
                org => None::<String>,
                print_fly => false,
                out => "flakegate.env",
            },
        )
        .unwrap();
        assert!(!html.contains("<script>x"), "{html}");
        assert!(
            html.contains("15 minutes") && html.contains("unique across all of GitHub"),
            "{html}"
        );
        assert!(!html.contains("<i>n</i>") && !html.contains("<b>"), "{html}");
        assert!(
            html.contains(r#"<form id="create" action="https:"#) && html.contains(r#"method="post">"#),
            "{html}"
        );
    }
}
