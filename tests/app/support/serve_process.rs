//! `flakegate serve` as a real process — the binary, as an operator runs it — against the fake
//! GitHub and a database URL, with JSON logs on stderr collected for assertions and for the
//! message of a failing test. Killed (SIGKILL) and reaped when dropped, so a failing test
//! leaves no process behind.

use super::fake_github::FakeGithub;
use serde_json::Value;
use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct ServeProcess {
    /// The name it was started under (also its `FLY_MACHINE_ID`, so its lease owner name in
    /// the store starts with `flakegate-{name}-`).
    pub name: String,
    /// `http://127.0.0.1:PORT`, the address it reported listening on.
    pub base: String,
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    _scratch: tempfile::TempDir,
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServeProcess {
    /// Start `flakegate serve` named `name` on `database_url`, with the fake GitHub's App
    /// credentials, webhook secret `secret`, a port of its own on 127.0.0.1 and `extra`
    /// variables; waits (at most 60 s) until it logs that it is serving.
    pub async fn start(
        name: &str,
        fake: &FakeGithub,
        database_url: &str,
        secret: &str,
        extra: &[(&str, &str)],
    ) -> ServeProcess {
        Self::start_binary(
            std::path::Path::new(env!("CARGO_BIN_EXE_flakegate")),
            name,
            fake,
            database_url,
            secret,
            extra,
        )
        .await
    }

    /// [`start`](Self::start) with another build of the binary (`benches/app_load.rs` measures
    /// an earlier one beside this one).
    pub async fn start_binary(
        binary: &std::path::Path,
        name: &str,
        fake: &FakeGithub,
        database_url: &str,
        secret: &str,
        extra: &[(&str, &str)],
    ) -> ServeProcess {
        let scratch = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(binary);
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("TMPDIR", scratch.path())
            .env("FLY_MACHINE_ID", name)
            .env("FLAKEGATE_LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            .env("FLAKEGATE_APP_ID", fake.app_id.to_string())
            .env("FLAKEGATE_PRIVATE_KEY", fake.private_key_pem())
            .env("FLAKEGATE_WEBHOOK_SECRET", secret)
            .env("FLAKEGATE_GITHUB_API_URL", fake.uri())
            .env("DATABASE_URL", database_url)
            .env("FLAKEGATE_LISTEN", "127.0.0.1:0")
            // The periodic expired-freezes sweep would add GitHub calls no test here expects.
            .env("FLAKEGATE_SWEEP_INTERVAL", "off");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting flakegate serve");
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        let mut p = ServeProcess {
            name: name.to_owned(),
            base: String::new(),
            child,
            lines,
            _scratch: scratch,
        };
        let serving = p.wait_for("\"serving\"", |l| l.contains("\"serving\"")).await;
        let serving: Value = serde_json::from_str(&serving).unwrap();
        let addr = serving["fields"]["listen"].as_str().unwrap();
        p.base = format!("http://{addr}");
        p
    }

    /// Everything it logged so far, one line each.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// How many log lines contain `needle`.
    pub fn count(&self, needle: &str) -> usize {
        self.lines().iter().filter(|l| l.contains(needle)).count()
    }

    /// Its last `n` log lines, for a failing test's message.
    pub fn tail(&self, n: usize) -> String {
        let lines = self.lines();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Wait (at most 60 s) for a log line satisfying `want`; panics with the log so far, or
    /// at once if the process exited.
    pub async fn wait_for(&mut self, what: &str, want: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(l) = self.lines().into_iter().find(|l| want(l)) {
                return l;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "{} exited ({status}) before logging {what}:\n{}",
                    self.name,
                    self.tail(50)
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} logged no {what} within 60 s:\n{}",
                self.name,
                self.tail(50)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, as a machine that dies does: no graceful shutdown, no lease released.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        let status = self.child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "{} did not die of SIGKILL: {status}",
            self.name
        );
    }
}
