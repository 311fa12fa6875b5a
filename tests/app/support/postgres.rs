//! The PostgreSQL the store contract tests run on: `FLAKEGATE_TEST_POSTGRES` when set, else a
//! throwaway cluster of this test process — the system's `initdb` and `postgres` in a temporary
//! directory (trust auth, its socket in that directory, TCP on a free port of 127.0.0.1), started
//! once on first use and gone when the process ends. Without PostgreSQL's server programs the
//! tests fail, naming the package to install; they never skip.
//!
//! Written here rather than taken from the `pgtemp` crate: as root (CI containers) pgtemp runs the
//! server through `sudo`, which such images lack, it finds the programs only on `PATH` (Debian
//! keeps them in `/usr/lib/postgresql/<version>/bin`), and it brings tokio's "full" features.
//!
//! A cluster held in a `static` is never dropped, so the server is not stopped by a destructor:
//! it runs under a small `sh` that holds the read end of a pipe whose write end only this process
//! has. When the process ends — passed, failed, panicked or killed — the pipe closes, and the
//! shell stops the server (fast shutdown) and removes the directory.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The URL of the PostgreSQL to test against (each case makes a schema of its own in it).
pub fn url() -> String {
    if let Some(url) = std::env::var("FLAKEGATE_TEST_POSTGRES").ok().filter(|u| !u.is_empty()) {
        return url;
    }
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(Cluster::start).url.clone()
}

struct Cluster {
    url: String,
    // Never written: holding it open keeps the server up (see the module comment).
    _lifeline: ChildStdin,
}

/// Runs as `sh -c SCRIPT sh DIR POSTGRES ARGS…`: starts the server with its output in `DIR/log`,
/// and when stdin reaches end of file stops it and removes `DIR`. If the server exits by itself
/// (it could not start), the shell exits and leaves `DIR` for its log to be read.
const LIFELINE: &str = r#"dir=$1; shift
exec 3<&0
"$@" </dev/null 3<&- >>"$dir/log" 2>&1 &
pg=$!
{ read -r _ <&3; : >"$dir/stop"; kill -INT "$pg"; } &
reader=$!
exec 3<&-
wait "$pg"
kill "$reader" 2>/dev/null
if [ -e "$dir/stop" ]; then rm -rf "$dir"; fi
exit 1"#;

impl Cluster {
    fn start() -> Cluster {
        let bin = bindir();
        let user = server_user();
        let dir = tempfile::Builder::new()
            .prefix("flakegate-pg-")
            .tempdir()
            .unwrap()
            .keep();
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
        }
        let data = dir.join("data");
        let out = as_server_user(user, &bin.join("initdb"))
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
                "-D",
            ])
            .arg(&data)
            .output()
            .unwrap();
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            panic!(
                "initdb of the throwaway PostgreSQL failed:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = as_server_user(user, Path::new("sh"))
                .args(["-c", LIFELINE, "sh"])
                .arg(&dir)
                .arg(bin.join("postgres"))
                .arg("-D")
                .arg(&data)
                .arg("-k")
                .arg(&dir)
                .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
                // A test server: no crash safety needed.
                .args([
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                ])
                .stdin(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("starting the throwaway PostgreSQL: {e}"));
            let why = match wait_ready(&data, &mut child) {
                Ok(()) => {
                    return Cluster {
                        url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
                        _lifeline: child.stdin.take().unwrap(),
                    };
                }
                Err(why) => why,
            };
            let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
            // Closing the pipe stops a server still starting (and removes the directory); one
            // that exited left the directory.
            drop(child.stdin.take());
            let _ = child.wait();
            // The port was free when asked: another process may have taken it since.
            if attempt < 3 && log.contains("could not bind") {
                continue;
            }
            let _ = std::fs::remove_dir_all(&dir);
            panic!("the throwaway PostgreSQL on port {port} {why}; its log:\n{log}");
        }
    }
}

/// Waits (bounded) until the server reports `ready` in `postmaster.pid`, as `pg_ctl -w` does.
fn wait_ready(data: &Path, child: &mut Child) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return Err("exited at start".to_owned());
        }
        let pid = std::fs::read_to_string(data.join("postmaster.pid")).unwrap_or_default();
        if pid.lines().nth(7).is_some_and(|status| status.trim() == "ready") {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("was not ready within 60 s".to_owned())
}

/// The directory holding `initdb` and `postgres`: beside `initdb` on `PATH` (symlinks resolved),
/// else `pg_config --bindir`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian and
/// Ubuntu keep the server programs there, off `PATH`).
fn bindir() -> PathBuf {
    let has_server = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|d| std::fs::canonicalize(d.join("initdb")).ok())
        .filter_map(|initdb| initdb.parent().map(Path::to_path_buf));
    let pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin")))
        })
        .collect();
    debian.sort();
    on_path
        .chain(pg_config)
        .chain(debian.into_iter().rev().map(|(_, d)| d))
        .find(|d| has_server(d))
        .unwrap_or_else(|| {
            panic!(
                "the store contract tests need PostgreSQL's server programs (initdb, postgres) and \
                 found them neither on PATH, nor at `pg_config --bindir`, nor in \
                 /usr/lib/postgresql/*/bin: install them (Debian/Ubuntu: `apt-get install postgresql`), \
                 or set FLAKEGATE_TEST_POSTGRES to the URL of a server to use"
            )
        })
}

/// `initdb` and `postgres` refuse to run as root: as root, they run as the user `postgres` (the
/// one the distributions' packages create) — its uid and gid; otherwise as ourselves.
fn server_user() -> Option<(u32, u32)> {
    let id = |args: &[&str]| -> Option<u32> {
        let out = Command::new("id").args(args).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    if id(&["-u"]) != Some(0) {
        return None;
    }
    match (id(&["-u", "postgres"]), id(&["-g", "postgres"])) {
        (Some(uid), Some(gid)) => Some((uid, gid)),
        _ => panic!(
            "running as root, and PostgreSQL's initdb refuses root: the throwaway PostgreSQL runs as \
             the user `postgres`, which does not exist here (`apt-get install postgresql` creates \
             it); or set FLAKEGATE_TEST_POSTGRES to the URL of a server to use"
        ),
    }
}

fn as_server_user(user: Option<(u32, u32)>, program: &Path) -> Command {
    if user.is_none() {
        return Command::new(program);
    }
    let mut c = Command::new("runuser");
    c.args(["-u", "postgres", "--"]).arg(program);
    c
}
