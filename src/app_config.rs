//! The App's settings, read from the environment once at start. Every secret is a
//! `SecretString`, so `Debug` output and logs never show it.

use secrecy::SecretString;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// Default `DATABASE_URL`: an SQLite file in the working directory, created on first use.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://flakegate.db?mode=rwc";
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";
pub const DEFAULT_LISTEN: &str = "0.0.0.0:3000";
/// Default `FLAKEGATE_JOB_LEASE_SECONDS`: how long a claimed job is an instance's before
/// another instance may take it over (its heartbeat renews it every quarter of that, 15 s).
/// A minute, so a killed instance's jobs on PostgreSQL move on within about a minute; a
/// stable instance id that let a restarted instance reclaim its own jobs would not move the
/// jobs of an instance that never comes back (scaled down, replaced by a deploy with a new
/// machine id). On SQLite a starting instance takes every job left running at once
/// (`store::Store::take_over_stranded_jobs`). Renewing every 15 s costs one indexed update
/// per job in hand; a heartbeat 45 s late (the store unreachable that long) loses the job to
/// another instance, which publishes nothing twice (`publications`).
pub const DEFAULT_JOB_LEASE_SECONDS: u64 = 60;
/// How long finished jobs are kept unless `FLAKEGATE_JOB_RETENTION_DAYS` says otherwise: a
/// week, longer than the three days GitHub offers a delivery for redelivery, so a redelivery
/// is still known as a duplicate.
pub const DEFAULT_JOB_RETENTION: Duration = Duration::from_secs(7 * 86_400);
/// How often the expired-freezes sweep runs unless `FLAKEGATE_SWEEP_INTERVAL` says otherwise.
pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Clone)]
pub struct AppConfig {
    pub app_id: u64,
    /// The App's RSA private key, PEM text.
    pub private_key: SecretString,
    /// Accepted webhook secrets; more than one while a secret is being rotated.
    pub webhook_secrets: Vec<SecretString>,
    pub github_api_url: String,
    /// May carry a database password, hence secret.
    pub database_url: SecretString,
    pub listen: SocketAddr,
    /// How long a claimed job stays with this instance without a heartbeat; a killed
    /// instance's job is taken over by another instance after it.
    pub job_lease: std::time::Duration,
    /// `FLAKEGATE_SWEEP_INTERVAL`: how often every repository's ledger is swept for expired
    /// freezes (default daily); `None` (`off` or `0`): never.
    pub sweep_interval: Option<Duration>,
    /// `FLAKEGATE_CLIENT_IP_HEADER`: the header a proxy in front of the App sets to the
    /// client's address (`Fly-Client-IP` on fly.io), so the webhook's per-client byte budget
    /// is kept per client rather than per proxy; `None`: the peer address is the client.
    pub client_ip_header: Option<http::HeaderName>,
    /// `FLAKEGATE_JOB_RETENTION_DAYS`: how long a finished job, and its delivery id, is kept.
    pub job_retention: Duration,
}

/// A setting that is missing or malformed; the message names the variable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("{var} is invalid: {reason}")]
    Invalid { var: &'static str, reason: String },
}

fn invalid(var: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        var,
        reason: reason.into(),
    }
}

impl AppConfig {
    /// Read the settings through `lookup` (`|k| std::env::var(k).ok()` in production), so
    /// tests need not touch the process environment. Empty values count as unset.
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |k: &str| lookup(k).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());

        let app_id = get("FLAKEGATE_APP_ID").ok_or(ConfigError::Missing("FLAKEGATE_APP_ID"))?;
        let app_id: u64 = app_id
            .parse()
            .map_err(|_| invalid("FLAKEGATE_APP_ID", "expected a positive integer (the App's numeric id)"))?;

        let private_key = match (get("FLAKEGATE_PRIVATE_KEY"), get("FLAKEGATE_PRIVATE_KEY_PATH")) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "FLAKEGATE_PRIVATE_KEY",
                    "set either FLAKEGATE_PRIVATE_KEY or FLAKEGATE_PRIVATE_KEY_PATH, not both",
                ))
            }
            (Some(pem), None) => check_pem("FLAKEGATE_PRIVATE_KEY", pem)?,
            (None, Some(path)) => {
                let pem = std::fs::read_to_string(Path::new(&path))
                    .map_err(|e| invalid("FLAKEGATE_PRIVATE_KEY_PATH", format!("cannot read {path}: {e}")))?;
                check_pem("FLAKEGATE_PRIVATE_KEY_PATH", pem)?
            }
            (None, None) => return Err(ConfigError::Missing("FLAKEGATE_PRIVATE_KEY")),
        };

        let secrets = get("FLAKEGATE_WEBHOOK_SECRET").ok_or(ConfigError::Missing("FLAKEGATE_WEBHOOK_SECRET"))?;
        let webhook_secrets: Vec<SecretString> = secrets
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(SecretString::from)
            .collect();
        if webhook_secrets.is_empty() {
            return Err(invalid(
                "FLAKEGATE_WEBHOOK_SECRET",
                "no secret in the comma-separated list",
            ));
        }

        let github_api_url = get("FLAKEGATE_GITHUB_API_URL").unwrap_or_else(|| DEFAULT_GITHUB_API_URL.to_owned());
        if !(github_api_url.starts_with("https://") || github_api_url.starts_with("http://")) {
            return Err(invalid(
                "FLAKEGATE_GITHUB_API_URL",
                "expected an http:// or https:// URL",
            ));
        }
        let github_api_url = github_api_url.trim_end_matches('/').to_owned();

        let database_url = get("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned());
        if crate::store::Backend::of_url(&database_url).is_none() {
            return Err(invalid("DATABASE_URL", "expected a sqlite: or postgres:// URL"));
        }
        // The server and the worker open the store apart (each on its own runtime): an
        // in-memory SQLite database would be two databases, and no job would ever run.
        if database_url.starts_with("sqlite:")
            && (database_url.contains(":memory:") || database_url.contains("mode=memory"))
        {
            return Err(invalid("DATABASE_URL", "an in-memory SQLite database is not shared by the server and the worker: give a file (sqlite://flakegate.db?mode=rwc)"));
        }

        let listen = match (get("FLAKEGATE_LISTEN"), get("PORT")) {
            (Some(addr), _) => addr.parse().map_err(|_| {
                invalid(
                    "FLAKEGATE_LISTEN",
                    format!("expected HOST:PORT such as {DEFAULT_LISTEN}"),
                )
            })?,
            (None, Some(port)) => {
                let port: u16 = port.parse().map_err(|_| invalid("PORT", "expected a port number"))?;
                SocketAddr::from(([0, 0, 0, 0], port))
            }
            (None, None) => DEFAULT_LISTEN.parse().expect("the default listen address parses"),
        };

        let job_lease = match get("FLAKEGATE_JOB_LEASE_SECONDS") {
            None => DEFAULT_JOB_LEASE_SECONDS,
            Some(v) => {
                v.parse::<u64>()
                    .ok()
                    .filter(|&n| (1..=86_400).contains(&n))
                    .ok_or_else(|| {
                        invalid(
                    "FLAKEGATE_JOB_LEASE_SECONDS",
                    format!("expected whole seconds from 1 to 86400 (default {DEFAULT_JOB_LEASE_SECONDS}), got {v:?}"),
                )
                    })?
            }
        };

        let sweep_interval = match get("FLAKEGATE_SWEEP_INTERVAL") {
            None => Some(DEFAULT_SWEEP_INTERVAL),
            Some(v) => parse_interval(&v).map_err(|reason| invalid("FLAKEGATE_SWEEP_INTERVAL", reason))?,
        };

        let client_ip_header = match get("FLAKEGATE_CLIENT_IP_HEADER") {
            None => None,
            Some(v) => Some(v.parse::<http::HeaderName>().map_err(|_| {
                invalid(
                    "FLAKEGATE_CLIENT_IP_HEADER",
                    format!("expected a header name such as Fly-Client-IP, got {v:?}"),
                )
            })?),
        };

        let job_retention = match get("FLAKEGATE_JOB_RETENTION_DAYS") {
            None => DEFAULT_JOB_RETENTION,
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|&n| (1..=3650).contains(&n))
                .map(|n| Duration::from_secs(n * 86_400))
                .ok_or_else(|| {
                    invalid(
                        "FLAKEGATE_JOB_RETENTION_DAYS",
                        format!("expected whole days from 1 to 3650 (default 7), got {v:?}"),
                    )
                })?,
        };

        Ok(AppConfig {
            client_ip_header,
            job_retention,
            job_lease: std::time::Duration::from_secs(job_lease),
            app_id,
            private_key,
            webhook_secrets,
            github_api_url,
            database_url: SecretString::from(database_url),
            listen,
            sweep_interval,
        })
    }
}

/// `off` or `0` (never), or a whole number of seconds, optionally with a unit: `90s`, `30m`,
/// `12h`, `1d`.
fn parse_interval(v: &str) -> Result<Option<Duration>, String> {
    let v = v.trim().to_ascii_lowercase();
    if v == "off" || v == "0" {
        return Ok(None);
    }
    let (digits, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("expected off, or a duration such as 24h, 30m or 3600s; got {v:?}"))?;
    let secs = match unit {
        "" | "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86_400),
        _ => None,
    }
    .ok_or_else(|| format!("expected off, or a duration such as 24h, 30m or 3600s; got {v:?}"))?;
    if secs == 0 {
        return Ok(None);
    }
    if secs < 60 {
        return Err(format!(
            "{v:?} is under a minute: the sweep lists every repository of every installation"
        ));
    }
    Ok(Some(Duration::from_secs(secs)))
}

fn check_pem(var: &'static str, pem: String) -> Result<SecretString, ConfigError> {
    if !pem.contains("-----BEGIN") || !pem.contains("PRIVATE KEY-----") {
        return Err(invalid(
            var,
            "expected a PEM private key (-----BEGIN RSA PRIVATE KEY-----)",
        ));
    }
    Ok(SecretString::from(pem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;
    use std::collections::HashMap;

    const PEM: &str = "-----BEGIN RSA PRIVATE KEY-----\nTOPSECRETKEYMATERIAL\n-----END RSA PRIVATE KEY-----\n";

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![
            ("FLAKEGATE_APP_ID", "42"),
            ("FLAKEGATE_PRIVATE_KEY", PEM),
            ("FLAKEGATE_WEBHOOK_SECRET", "hunter2old, hunter2new"),
            ("DATABASE_URL", "postgres://u:dbpassw0rd@localhost/x"),
        ]
    }

    #[test]
    fn defaults_and_rotation() {
        let c = AppConfig::from_env(env(&base()[..3])).unwrap();
        assert_eq!(c.app_id, 42);
        assert_eq!(c.github_api_url, DEFAULT_GITHUB_API_URL);
        assert_eq!(c.database_url.expose_secret(), DEFAULT_DATABASE_URL);
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.job_lease, std::time::Duration::from_secs(60));
        let secrets: Vec<&str> = c.webhook_secrets.iter().map(|s| s.expose_secret()).collect();
        assert_eq!(secrets, ["hunter2old", "hunter2new"]);
    }

    #[test]
    fn debug_shows_no_secret() {
        let c = AppConfig::from_env(env(&base())).unwrap();
        let debug = format!("{c:?}");
        for secret in ["TOPSECRETKEYMATERIAL", "hunter2", "dbpassw0rd"] {
            assert!(!debug.contains(secret), "{secret} leaked in {debug}");
        }
    }

    #[test]
    fn port_and_listen() {
        let mut e = base();
        e.push(("PORT", "8080"));
        assert_eq!(AppConfig::from_env(env(&e)).unwrap().listen.to_string(), "0.0.0.0:8080");
        e.push(("FLAKEGATE_LISTEN", "127.0.0.1:9000"));
        assert_eq!(
            AppConfig::from_env(env(&e)).unwrap().listen.to_string(),
            "127.0.0.1:9000"
        );
    }

    #[test]
    fn job_retention() {
        let mut e = base();
        assert_eq!(
            AppConfig::from_env(env(&e)).unwrap().job_retention,
            DEFAULT_JOB_RETENTION
        );
        e.push(("FLAKEGATE_JOB_RETENTION_DAYS", "3"));
        assert_eq!(
            AppConfig::from_env(env(&e)).unwrap().job_retention,
            Duration::from_secs(3 * 86_400)
        );
        for bad in ["0", "-1", "1.5", "week"] {
            e.pop();
            e.push(("FLAKEGATE_JOB_RETENTION_DAYS", bad));
            let err = AppConfig::from_env(env(&e)).unwrap_err().to_string();
            assert!(err.starts_with("FLAKEGATE_JOB_RETENTION_DAYS is invalid"), "{err}");
        }
    }

    #[test]
    fn client_ip_header() {
        let mut e = base();
        assert_eq!(AppConfig::from_env(env(&e)).unwrap().client_ip_header, None);
        e.push(("FLAKEGATE_CLIENT_IP_HEADER", "Fly-Client-IP"));
        assert_eq!(
            AppConfig::from_env(env(&e)).unwrap().client_ip_header.unwrap().as_str(),
            "fly-client-ip"
        );
        e.pop();
        e.push(("FLAKEGATE_CLIENT_IP_HEADER", "not a header"));
        let err = AppConfig::from_env(env(&e)).unwrap_err().to_string();
        assert!(err.starts_with("FLAKEGATE_CLIENT_IP_HEADER is invalid"), "{err}");
    }

    #[test]
    fn job_lease() {
        let mut e = base();
        e.push(("FLAKEGATE_JOB_LEASE_SECONDS", "30"));
        assert_eq!(
            AppConfig::from_env(env(&e)).unwrap().job_lease,
            std::time::Duration::from_secs(30)
        );
        for bad in ["0", "-5", "10m", "86401"] {
            let mut e = base();
            e.push(("FLAKEGATE_JOB_LEASE_SECONDS", bad));
            let err = AppConfig::from_env(env(&e)).unwrap_err().to_string();
            assert!(err.starts_with("FLAKEGATE_JOB_LEASE_SECONDS is invalid"), "{err}");
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn key_from_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        std::fs::write(&path, PEM).unwrap();
        let p = path.to_str().unwrap();
        let e = [
            ("FLAKEGATE_APP_ID", "1"),
            ("FLAKEGATE_PRIVATE_KEY_PATH", p),
            ("FLAKEGATE_WEBHOOK_SECRET", "s"),
        ];
        let c = AppConfig::from_env(env(&e)).unwrap();
        assert_eq!(c.private_key.expose_secret(), PEM);
    }

    #[test]
    fn errors_name_the_variable() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[], "FLAKEGATE_APP_ID is not set"),
            (&[("FLAKEGATE_APP_ID", "abc")], "FLAKEGATE_APP_ID is invalid"),
            (&[("FLAKEGATE_APP_ID", "1")], "FLAKEGATE_PRIVATE_KEY is not set"),
            (
                &[("FLAKEGATE_APP_ID", "1"), ("FLAKEGATE_PRIVATE_KEY", "nope")],
                "FLAKEGATE_PRIVATE_KEY is invalid",
            ),
            (
                &[
                    ("FLAKEGATE_APP_ID", "1"),
                    ("FLAKEGATE_PRIVATE_KEY_PATH", "/nonexistent/key.pem"),
                ],
                "FLAKEGATE_PRIVATE_KEY_PATH is invalid",
            ),
            (
                &[("FLAKEGATE_APP_ID", "1"), ("FLAKEGATE_PRIVATE_KEY", PEM)],
                "FLAKEGATE_WEBHOOK_SECRET is not set",
            ),
            (
                &[
                    ("FLAKEGATE_APP_ID", "1"),
                    ("FLAKEGATE_PRIVATE_KEY", PEM),
                    ("FLAKEGATE_WEBHOOK_SECRET", " , "),
                ],
                "FLAKEGATE_WEBHOOK_SECRET is invalid",
            ),
        ];
        for (pairs, want) in cases {
            let err = AppConfig::from_env(env(pairs)).unwrap_err().to_string();
            assert!(err.starts_with(want), "{err:?} should start with {want:?}");
        }
        for (var, value) in [
            ("FLAKEGATE_GITHUB_API_URL", "api.github.com"),
            ("DATABASE_URL", "mysql://x"),
            ("DATABASE_URL", "sqlite::memory:"),
            ("DATABASE_URL", "sqlite://x.db?mode=memory&cache=shared"),
            ("FLAKEGATE_LISTEN", "3000"),
            ("PORT", "http"),
        ] {
            let mut e = base();
            e.push((var, value));
            let err = AppConfig::from_env(env(&e)).unwrap_err().to_string();
            assert!(err.starts_with(&format!("{var} is invalid")), "{err}");
        }
    }

    #[test]
    fn the_sweep_interval_is_daily_unless_set() {
        let day = Some(Duration::from_secs(86_400));
        assert_eq!(AppConfig::from_env(env(&base())).unwrap().sweep_interval, day);
        for (v, want) in [
            ("off", None),
            ("OFF", None),
            ("0", None),
            ("0h", None),
            ("1d", day),
            ("24h", day),
            ("30m", Some(Duration::from_secs(1800))),
            ("3600", Some(Duration::from_secs(3600))),
            ("90s", Some(Duration::from_secs(90))),
        ] {
            let mut e = base();
            e.push(("FLAKEGATE_SWEEP_INTERVAL", v));
            assert_eq!(AppConfig::from_env(env(&e)).unwrap().sweep_interval, want, "{v}");
        }
        for v in ["daily", "5s", "-1h", "1w", "h"] {
            let mut e = base();
            e.push(("FLAKEGATE_SWEEP_INTERVAL", v));
            let err = AppConfig::from_env(env(&e)).unwrap_err().to_string();
            assert!(err.starts_with("FLAKEGATE_SWEEP_INTERVAL is invalid"), "{v}: {err}");
        }
    }
}
