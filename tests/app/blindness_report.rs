//! `flakegate blindness --format html` in a real headless Chromium: the report of the shop's
//! real evidence (`examples/shop`) renders, a file's page marks its blind line, the links
//! between the pages work, and nothing is fetched — no URL leaves the report's directory and
//! the browser's resource timing lists no request. Screenshots of the index and of a file's
//! page at a laptop's and a phone's width are kept beside the build's other outputs
//! (`CARGO_TARGET_TMPDIR`) to look at.

use crate::support::browser::{program, wd, Driver, ELEMENT};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shop's report, written into `out`.
fn write_report(out: &Path) {
    let r = root();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_flakegate"))
        .args(["blindness".as_ref(), r.join("examples/shop/evidence").as_os_str()])
        .args([
            "--ledger".as_ref(),
            r.join("examples/shop/flake-ledger.json").as_os_str(),
        ])
        .args(["--source".as_ref(), r.join("tests/fixtures/project").as_os_str()])
        .args(["--today", "2026-11-20", "--format", "html", "--out"])
        .arg(out)
        .current_dir(out.parent().unwrap())
        .status()
        .unwrap();
    assert!(status.success());
}

/// One browser session: a window of a laptop's size, or a phone's (Chromium's mobile emulation).
struct Session {
    http: reqwest::Client,
    url: String,
}

impl Session {
    async fn open(driver: &Driver, profile: &Path, phone: bool) -> Session {
        let chromium = program(
            "FLAKEGATE_TEST_CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        );
        let http = reqwest::Client::new();
        let mut options = json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", format!("--user-data-dir={}", profile.display())],
        });
        if phone {
            options["mobileEmulation"] = json!({ "deviceMetrics": { "width": 390, "height": 844, "pixelRatio": 2.0 } });
        }
        let session = wd(
            &http,
            reqwest::Method::POST,
            format!("{}/session", driver.base),
            Some(json!({ "capabilities": { "alwaysMatch": { "goog:chromeOptions": options } } })),
        )
        .await;
        let sid = session["sessionId"].as_str().expect("a session id").to_owned();
        let s = Session {
            http,
            url: format!("{}/session/{sid}", driver.base),
        };
        s.post("timeouts", json!({ "implicit": 10000, "pageLoad": 30000 }))
            .await;
        if !phone {
            s.post("window/rect", json!({ "width": 1280, "height": 900 })).await;
        }
        s
    }

    async fn post(&self, what: &str, body: Value) -> Value {
        wd(
            &self.http,
            reqwest::Method::POST,
            format!("{}/{what}", self.url),
            Some(body),
        )
        .await
    }

    async fn get(&self, what: &str) -> Value {
        wd(&self.http, reqwest::Method::GET, format!("{}/{what}", self.url), None).await
    }

    async fn go(&self, url: &str) {
        self.post("url", json!({ "url": url })).await;
    }

    async fn script(&self, js: &str) -> Value {
        self.post("execute/sync", json!({ "script": js, "args": [] })).await
    }

    async fn find(&self, css: &str) -> String {
        let e = self
            .post("element", json!({ "using": "css selector", "value": css }))
            .await;
        e[ELEMENT].as_str().unwrap_or_else(|| panic!("{css}: {e}")).to_owned()
    }

    async fn click(&self, css: &str) {
        let e = self.find(css).await;
        self.post(&format!("element/{e}/click"), json!({})).await;
    }

    async fn screenshot(&self, name: &str) -> PathBuf {
        let shot = self.get("screenshot").await;
        let png = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            shot.as_str().expect("a screenshot"),
        )
        .expect("base64");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
        std::fs::write(&path, &png).unwrap();
        path
    }

    /// Every URL the page names (links, sources, styles) and every request it made.
    async fn assert_nothing_fetched(&self) {
        let urls = self
            .script(
                "return Array.from(document.querySelectorAll('[href],[src],[action]'))\
                 .map(e => e.getAttribute('href') || e.getAttribute('src') || e.getAttribute('action'));",
            )
            .await;
        for u in urls.as_array().unwrap() {
            let u = u.as_str().unwrap();
            assert!(!u.contains(':'), "a URL that leaves the report: {u}");
        }
        let requests = self
            .script("return performance.getEntriesByType('resource').map(e => e.name);")
            .await;
        assert_eq!(requests, json!([]), "the page fetched something");
        let scripts = self.script("return document.scripts.length;").await;
        assert_eq!(scripts, json!(0));
    }

    async fn close(self) {
        wd(&self.http, reqwest::Method::DELETE, self.url.clone(), None).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blindness_report_works_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    write_report(&out);
    let index_url = format!("file://{}", out.join("index.html").display());
    let driver = Driver::start();

    let laptop = Session::open(&driver, &dir.path().join("profile-laptop"), false).await;
    laptop.go(&index_url).await;
    let title = laptop.get("title").await;
    assert!(title.as_str().unwrap().contains("Blindness map"), "{title}");
    let body = laptop.find("body").await;
    let text = laptop.get(&format!("element/{body}/text")).await;
    let text = text.as_str().unwrap();
    for said in [
        "7",
        "blind",
        "tests/test_refunds.py::test_gateway_retry",
        "@shop/payments",
        "src/shop/refunds.py",
    ] {
        assert!(text.contains(said), "the index says {said:?}: {text}");
    }
    // The files table is sorted by blind lines: refunds.py first.
    let first = laptop
        .script("return document.querySelector('#files-table tbody tr td a').textContent;")
        .await;
    assert_eq!(first, json!("src/shop/refunds.py"));
    laptop.assert_nothing_fetched().await;
    laptop.screenshot("blindness-index-laptop.png").await;

    // Follow the link to refunds.py's page.
    laptop.click("#files-table tbody tr td a").await;
    let url = laptop.get("url").await;
    assert!(
        url.as_str().unwrap().ends_with(".html") && !url.as_str().unwrap().ends_with("index.html"),
        "{url}"
    );
    let line = laptop
        .script(
            "const r = document.getElementById('L12'); const c = r.querySelector('td.src');\
             return [r.className, getComputedStyle(c).backgroundColor, c.textContent];",
        )
        .await;
    assert_eq!(line[0], json!("blind"), "{line}");
    assert_eq!(line[1], json!("rgb(255, 235, 233)"), "a blind line is red: {line}");
    assert!(
        line[2].as_str().unwrap().contains("test_gateway_retry"),
        "it names its test: {line}"
    );
    let witnessed = laptop
        .script("return getComputedStyle(document.querySelector('#L7 td.src')).backgroundColor;")
        .await;
    assert_eq!(witnessed, json!("rgb(218, 251, 225)"), "a witnessed line is green");
    let plain = laptop.script("return document.getElementById('L10').className;").await;
    assert_eq!(plain, json!("plain"), "a blank line is not measured");
    laptop.assert_nothing_fetched().await;
    laptop.screenshot("blindness-file-laptop.png").await;
    // And back.
    laptop.click("#back").await;
    let url = laptop.get("url").await;
    assert!(url.as_str().unwrap().ends_with("/index.html"), "{url}");
    // A test's only-witness link leads to its first line.
    laptop.click("#tests-table tbody tr td a").await;
    let url = laptop.get("url").await;
    assert!(url.as_str().unwrap().ends_with("#L11"), "{url}");
    laptop.close().await;

    let phone = Session::open(&driver, &dir.path().join("profile-phone"), true).await;
    phone.go(&index_url).await;
    // Nothing wider than the screen but what scrolls inside its own box.
    let overflow = phone
        .script("return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
        .await;
    assert_eq!(overflow, json!(0), "the index scrolls sideways on a phone");
    phone.screenshot("blindness-index-phone.png").await;
    phone.click("#files-table tbody tr td a").await;
    let overflow = phone
        .script("return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
        .await;
    assert_eq!(
        overflow,
        json!(0),
        "the file's page scrolls sideways as a whole on a phone"
    );
    phone.screenshot("blindness-file-phone.png").await;
    phone.close().await;
    drop(driver);
}
