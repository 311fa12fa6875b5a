//! `flakegate setup` end to end: the command started as a process serves its page on loopback;
//! the page's form is posted to the fake GitHub (which checks the manifest and redirects back with
//! a code), the command exchanges the code at the fake's `POST /app-manifests/{code}/conversions`
//! and writes the App's credentials to an env file (mode 0600) or prints the `fly secrets set`
//! line. Once with an HTTP client reading the form, once in a real headless Chromium driven over
//! WebDriver; the browser test fails, never skips, when Chromium is not installed.

use crate::support::browser::{program, wd, Driver, ELEMENT};
use crate::support::fake_github::FakeGithub;
use crate::support::fake_manifest::{Conversion, ManifestFlow};
use serde_json::{json, Value};
use std::io::{BufRead as _, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};

const WEBHOOK: &str = "https://gate.example.com/webhook";
const NAME: &str = "flakegate-test";

/// A running `flakegate setup`, killed when dropped (a failing test leaves no process behind).
struct SetupRun {
    child: Child,
    /// The page's address, as the command printed it.
    url: String,
    stderr: Arc<Mutex<Vec<String>>>,
    /// The thread reading stderr: joined in `finish`, so every line is in before it is read.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Drop for SetupRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn setup_command(fake: &FakeGithub, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_flakegate"));
    cmd.arg("setup")
        .args(["--github-url", &fake.uri(), "--api-url", &fake.uri()])
        .args(["--webhook-url", WEBHOOK, "--name", NAME])
        .args(extra)
        .env_clear()
        .stdin(Stdio::null());
    cmd
}

impl SetupRun {
    /// Start `flakegate setup` and wait for the line that gives the page's address.
    fn start(fake: &FakeGithub, extra: &[&str]) -> SetupRun {
        let mut child = setup_command(fake, extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting flakegate setup");
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let sink = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(i) = line.find("http://127.0.0.1:") {
                    let url: String = line[i..].chars().take_while(|c| !c.is_whitespace()).collect();
                    let _ = tx.send(url);
                }
                sink.lock().unwrap().push(line);
            }
        });
        // The channel closes when the process's stderr does: a command that failed to start.
        let url = rx.recv().unwrap_or_else(|_| {
            let status = child.wait().unwrap();
            panic!(
                "flakegate setup ended ({status}) without serving its page:\n{}",
                lines.lock().unwrap().join("\n")
            )
        });
        SetupRun {
            child,
            url,
            stderr: lines,
            reader: Some(reader),
        }
    }

    fn callback_prefix(&self) -> String {
        format!("{}callback?", self.url)
    }

    /// Wait for the command to end: its status, stdout and stderr.
    fn finish(mut self) -> (ExitStatus, String, String) {
        let mut out = String::new();
        self.child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let status = self.child.wait().unwrap();
        self.reader.take().unwrap().join().unwrap();
        let err = self.stderr.lock().unwrap().join("\n");
        (status, out, err)
    }
}

/// Undo the HTML escaping of an attribute value (the entities minijinja writes).
fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#x2f;", "/")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The value of attribute `attr` of the first tag that contains `marker`.
fn attribute(html: &str, marker: &str, attr: &str) -> String {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in the page:\n{html}"));
    let tag_start = html[..at].rfind('<').unwrap();
    let tag = &html[tag_start..tag_start + html[tag_start..].find('>').unwrap()];
    let key = format!("{attr}=\"");
    let from = tag.find(&key).unwrap_or_else(|| panic!("no {attr} in {tag}")) + key.len();
    unescape(&tag[from..from + tag[from..].find('"').unwrap()])
}

/// What `sh` sees after loading the env file: the three settings, exactly.
fn sourced(env_file: &Path) -> Vec<String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"set -a; . "$1"; printf '%s\0' "$FLAKEGATE_APP_ID" "$FLAKEGATE_WEBHOOK_SECRET" "$FLAKEGATE_PRIVATE_KEY" "${FLAKEGATE_GITHUB_API_URL-unset}""#)
        .arg("sh")
        .arg(env_file)
        .current_dir(env_file.parent().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sourcing {}: {}",
        env_file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_terminator('\0')
        .map(str::to_owned)
        .collect()
}

fn shipped_events() -> Value {
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("app-manifest.yml")).unwrap();
    let m: Value = serde_yaml_ng::from_str(&text).unwrap();
    m["default_events"].clone()
}

fn assert_manifest_posted(flow: &ManifestFlow, run_url: &str) {
    let posted = flow.manifests();
    assert_eq!(posted.len(), 1, "one manifest posted");
    let m = &posted[0];
    assert_eq!(m["hook_attributes"]["url"], WEBHOOK);
    assert_eq!(m["name"], NAME);
    assert_eq!(m["redirect_url"], format!("{run_url}callback"));
    assert_eq!(m["default_events"], shipped_events());
    assert_eq!(m["default_permissions"]["checks"], "write");
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_creates_the_app_and_writes_a_private_env_file() {
    let fake = FakeGithub::start().await;
    let flow = ManifestFlow::mount(&fake, None, Conversion::Created).await;
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("flakegate.env");
    let run = SetupRun::start(&fake, &["--out", env_file.to_str().unwrap()]);

    let http = reqwest::Client::new();
    let page = http.get(&run.url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["cache-control"], "no-store");
    let html = page.text().await.unwrap();
    let action = attribute(&html, "id=\"create\"", "action");
    assert!(
        action.starts_with(&format!("{}/settings/apps/new?state=", fake.uri())),
        "{action}"
    );
    let manifest = attribute(&html, "name=\"manifest\"", "value");

    // The browser's part: post the form; GitHub redirects back to the command, which answers.
    let done = http.post(&action).form(&[("manifest", manifest)]).send().await.unwrap();
    assert!(
        done.url().as_str().starts_with(&run.callback_prefix()),
        "{}",
        done.url()
    );
    assert_eq!(done.status(), 200);
    let text = unescape(&done.text().await.unwrap());
    assert!(text.contains("id=\"created\"") && text.contains(NAME), "{text}");
    assert!(
        text.contains("https://github.com/apps/flakegate-test/installations/new"),
        "{text}"
    );

    let run_url = run.url.clone();
    let (status, stdout, stderr) = run.finish();
    assert!(status.success(), "{status}: {stderr}");
    assert!(stdout.is_empty(), "nothing on stdout without --print-fly: {stdout}");
    assert!(stderr.contains("created the GitHub App"), "{stderr}");
    #[cfg(unix)]
    assert_eq!(mode(&env_file), 0o600, "the env file is its owner's only");
    let text = std::fs::read_to_string(&env_file).unwrap();
    assert!(!text.contains("$(touch pwned)\n"), "{text}");
    assert_eq!(
        sourced(&env_file),
        [
            flow.app_id.to_string(),
            flow.webhook_secret.clone(),
            flow.pem.clone(),
            fake.uri()
        ],
        "the env file gives the shell exactly GitHub's values"
    );
    assert!(!dir.path().join("pwned").exists(), "nothing in the secret ran");
    assert_manifest_posted(&flow, &run_url);
    assert_eq!(flow.conversions(), 1);
    flow.verify();
    fake.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_for_an_organization_prints_the_fly_line_and_refuses_strangers() {
    let fake = FakeGithub::start().await;
    let flow = ManifestFlow::mount(&fake, Some("acme-inc"), Conversion::Created).await;
    let dir = tempfile::tempdir().unwrap();
    let run = SetupRun::start(&fake, &["--org", "acme-inc", "--print-fly"]);
    let http = reqwest::Client::new();

    // A callback without this run's state (a page elsewhere guessing) is refused; the run goes on.
    let forged = http
        .get(format!("{}code=a1b2c3d4e5f60718293a&state=0123", run.callback_prefix()))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 400);
    let page = forged.text().await.unwrap();
    assert!(
        page.contains("is still waiting") && !page.contains("Setup failed"),
        "{page}"
    );
    // A page reached under another name (DNS rebinding) gets nothing.
    let rebound = http
        .get(&run.url)
        .header("host", "evil.example:80")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 421);
    assert!(!rebound.text().await.unwrap().contains("manifest"));

    let html = http.get(&run.url).send().await.unwrap().text().await.unwrap();
    let action = attribute(&html, "id=\"create\"", "action");
    assert!(
        action.starts_with(&format!(
            "{}/organizations/acme-inc/settings/apps/new?state=",
            fake.uri()
        )),
        "{action}"
    );
    let manifest = attribute(&html, "name=\"manifest\"", "value");
    let done = http.post(&action).form(&[("manifest", manifest)]).send().await.unwrap();
    assert_eq!(done.status(), 200, "{}", done.text().await.unwrap());
    // A second callback with the right state finds the run done.
    let again = http
        .get(format!("{}code=a1b2c3d4e5f60718293a&state=x", run.callback_prefix()))
        .send()
        .await;
    // The server may already have stopped; if it answers, it is not a second App.
    if let Ok(r) = again {
        assert_ne!(r.status(), 200);
    }

    let run_url = run.url.clone();
    let (status, stdout, stderr) = run.finish();
    assert!(status.success(), "{status}: {stderr}");
    assert!(!dir.path().join("flakegate.env").exists());
    // Run the printed line with `fly` standing in as a function that prints its arguments.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(r#"fly() {{ printf '%s\0' "$@"; }}; {}"#, stdout.trim_end()))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let args: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .split_terminator('\0')
        .map(str::to_owned)
        .collect();
    assert_eq!(
        args,
        [
            "secrets".to_owned(),
            "set".to_owned(),
            format!("FLAKEGATE_APP_ID={}", flow.app_id),
            format!("FLAKEGATE_WEBHOOK_SECRET={}", flow.webhook_secret),
            format!("FLAKEGATE_PRIVATE_KEY={}", flow.pem),
            format!("FLAKEGATE_GITHUB_API_URL={}", fake.uri()),
        ]
    );
    assert!(!dir.path().join("pwned").exists(), "nothing in the secret ran");
    assert_manifest_posted(&flow, &run_url);
    assert_eq!(flow.conversions(), 1, "the forged callback exchanged nothing");
    flow.verify();
    fake.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_says_why_when_github_refuses_the_code() {
    let fake = FakeGithub::start().await;
    let flow = ManifestFlow::mount(&fake, None, Conversion::Expired).await;
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("flakegate.env");
    let run = SetupRun::start(&fake, &["--out", env_file.to_str().unwrap()]);
    let http = reqwest::Client::new();
    let html = http.get(&run.url).send().await.unwrap().text().await.unwrap();
    let action = attribute(&html, "id=\"create\"", "action");
    let manifest = attribute(&html, "name=\"manifest\"", "value");
    let done = http.post(&action).form(&[("manifest", manifest)]).send().await.unwrap();
    assert_eq!(done.status(), 502);
    let page = done.text().await.unwrap();
    assert!(page.contains("id=\"failed\"") && page.contains("Not Found"), "{page}");
    let (status, _, stderr) = run.finish();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("exchanging the code") && stderr.contains("404"),
        "the error says what failed: {stderr}"
    );
    assert!(!env_file.exists(), "no file without an App");
    assert_eq!(flow.conversions(), 1);
    flow.verify();
    fake.verify().await;
}

#[tokio::test]
async fn setup_will_not_overwrite_credentials_without_force() {
    let fake = FakeGithub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("flakegate.env");
    std::fs::write(&env_file, "FLAKEGATE_APP_ID=1\n").unwrap();
    let out = setup_command(&fake, &["--out", env_file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("flakegate.env exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert!(!stderr.contains("http://127.0.0.1:"), "no page served: {stderr}");
    assert_eq!(std::fs::read_to_string(&env_file).unwrap(), "FLAKEGATE_APP_ID=1\n");

    for (args, want) in [
        (vec!["--webhook-url", "gate.example.com/webhook"], "--webhook-url"),
        (vec!["--org", "acme/../x"], "--org"),
        (vec!["--github-url", "ftp://ghe"], "--github-url"),
        (vec!["--timeout", "0"], "--timeout"),
    ] {
        let mut cmd = setup_command(&fake, &["--out", dir.path().join("x.env").to_str().unwrap()]);
        let out = cmd.args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    fake.verify().await;
}

#[tokio::test]
async fn setup_gives_up_when_github_never_sends_you_back() {
    let fake = FakeGithub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let run = SetupRun::start(
        &fake,
        &["--out", dir.path().join("f.env").to_str().unwrap(), "--timeout", "1"],
    );
    let (status, _, stderr) = run.finish();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("did not send you back") && stderr.contains("--timeout"),
        "{stderr}"
    );
    assert!(!dir.path().join("f.env").exists());
    fake.verify().await;
}

// ---- the page in a real browser -------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_page_works_in_headless_chromium() {
    let chromium = program(
        "FLAKEGATE_TEST_CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    );
    let driver = Driver::start();
    let fake = FakeGithub::start().await;
    let flow = ManifestFlow::mount(&fake, None, Conversion::Created).await;
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("flakegate.env");
    let run = SetupRun::start(&fake, &["--out", env_file.to_str().unwrap()]);

    let http = reqwest::Client::new();
    let post = reqwest::Method::POST;
    let session = wd(
        &http,
        post.clone(),
        format!("{}/session", driver.base),
        Some(json!({ "capabilities": { "alwaysMatch": { "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", format!("--user-data-dir={}", dir.path().join("profile").display())],
        }}}})),
    )
    .await;
    let sid = session["sessionId"].as_str().expect("a session id").to_owned();
    let s = format!("{}/session/{sid}", driver.base);
    // Finding an element waits for it (up to a minute) while pages load and redirect.
    wd(
        &http,
        post.clone(),
        format!("{s}/timeouts"),
        Some(json!({ "implicit": 60000, "pageLoad": 60000 })),
    )
    .await;
    wd(&http, post.clone(), format!("{s}/url"), Some(json!({ "url": run.url }))).await;
    wd(
        &http,
        post.clone(),
        format!("{s}/window/rect"),
        Some(json!({ "width": 1000, "height": 1500 })),
    )
    .await;
    // The form as a person sees it, kept beside the build's other outputs to look at.
    let shot = wd(&http, reqwest::Method::GET, format!("{s}/screenshot"), None).await;
    let png = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        shot.as_str().expect("a screenshot"),
    )
    .expect("base64");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let shot_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("setup-page.png");
    std::fs::write(&shot_path, &png).unwrap();
    let body = wd(
        &http,
        post.clone(),
        format!("{s}/element"),
        Some(json!({ "using": "css selector", "value": "body" })),
    )
    .await;
    let body = body[ELEMENT].as_str().unwrap().to_owned();
    let text = wd(&http, reqwest::Method::GET, format!("{s}/element/{body}/text"), None).await;
    let text = text.as_str().unwrap();
    for said in [
        "your personal account",
        "unique across all of GitHub",
        "read and write",
        "pull_request",
        "waits 15 minutes",
        "Next:",
    ] {
        assert!(text.contains(said), "the page says {said:?}: {text}");
    }
    assert!(!text.contains("\"default_permissions\""), "no JSON blob: {text}");
    let button = wd(
        &http,
        post.clone(),
        format!("{s}/element"),
        Some(json!({ "using": "css selector", "value": "form#create button[type=submit]" })),
    )
    .await;
    let button = button[ELEMENT]
        .as_str()
        .unwrap_or_else(|| panic!("the form's button: {button}"))
        .to_owned();
    wd(
        &http,
        post.clone(),
        format!("{s}/element/{button}/click"),
        Some(json!({})),
    )
    .await;
    let created = http
        .post(format!("{s}/element"))
        .json(&json!({ "using": "css selector", "value": "#created" }))
        .send()
        .await
        .unwrap();
    if !created.status().is_success() {
        let url = wd(&http, reqwest::Method::GET, format!("{s}/url"), None).await;
        let source = wd(&http, reqwest::Method::GET, format!("{s}/source"), None).await;
        panic!("no #created page in the browser; it shows {url}:\n{source}");
    }
    let created: Value = created.json().await.unwrap();
    let heading = created["value"][ELEMENT].as_str().unwrap().to_owned();
    let text = wd(&http, reqwest::Method::GET, format!("{s}/element/{heading}/text"), None).await;
    assert!(text.as_str().unwrap().contains(NAME), "{text}");
    let url = wd(&http, reqwest::Method::GET, format!("{s}/url"), None).await;
    assert!(url.as_str().unwrap().starts_with(&run.callback_prefix()), "{url}");
    wd(&http, reqwest::Method::DELETE, s.clone(), None).await;

    let run_url = run.url.clone();
    let (status, _, stderr) = run.finish();
    assert!(status.success(), "{status}: {stderr}");
    #[cfg(unix)]
    assert_eq!(mode(&env_file), 0o600);
    assert_eq!(
        sourced(&env_file)[..3],
        [flow.app_id.to_string(), flow.webhook_secret.clone(), flow.pem.clone()]
    );
    assert_manifest_posted(&flow, &run_url);
    assert_eq!(flow.conversions(), 1);
    flow.verify();
    fake.verify().await;
    drop(driver);
}
