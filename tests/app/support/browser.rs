//! A real headless Chromium driven over WebDriver (chromedriver), for the tests of pages
//! people look at: the setup page, the blindness report. The tests fail, never skip, when
//! Chromium is not installed.

use serde_json::Value;
use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A program on `PATH` (or named by `env`), or a failure that says how to install it.
pub fn program(env: &str, names: &[&str]) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path).chain([PathBuf::from("/usr/bin")]) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "the browser tests need {} (or {env}): install Debian's packages with \
         `apt-get install chromium chromium-driver` (scripts/test.sh does)",
        names.join(" or ")
    )
}

/// chromedriver on a free loopback port, killed when dropped.
pub struct Driver {
    child: Child,
    pub base: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    pub fn start() -> Driver {
        let exe = program("FLAKEGATE_TEST_CHROMEDRIVER", &["chromedriver"]);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(&exe)
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", exe.display()));
        // chromedriver says when it listens; its stdout closes only when it ends.
        let stdout = child.stdout.take().unwrap();
        let mut lines = std::io::BufReader::new(stdout).lines();
        let mut seen = Vec::new();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.contains("started successfully") => break,
                Some(Ok(l)) => seen.push(l),
                _ => panic!("{} did not start:\n{}", exe.display(), seen.join("\n")),
            }
        }
        std::thread::spawn(move || lines.for_each(drop));
        Driver {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }
}

/// One WebDriver command; an error answer fails the test with what the driver said.
pub async fn wd(http: &reqwest::Client, method: reqwest::Method, url: String, body: Option<Value>) -> Value {
    let mut req = http.request(method.clone(), &url);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = resp.status();
    let v: Value = resp.json().await.unwrap();
    assert!(status.is_success(), "{method} {url}: {status}: {v}");
    v["value"].clone()
}

/// The W3C WebDriver key of an element reference.
pub const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
