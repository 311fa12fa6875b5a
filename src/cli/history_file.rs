//! The command line's flake history file: `--history FILE` and what `check` and `history`
//! need to open it (the repository it belongs to, the run it records).

use super::unusable;
use crate::evidence::assemble::HistoryAccess;
use crate::gate::history::RecordContext;
use crate::store::{RetryPolicy, Store};
use anyhow::Context as _;
use chrono::NaiveDate;
use std::path::{Path, PathBuf};

/// The command line's history is one repository per file, under this id.
pub(super) const LOCAL_REPO_ID: i64 = 1;

/// The flake history on the command line: a SQLite file (created when missing) that CI can keep
/// between runs with its cache.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HistoryArgs {
    /// Judge with the flake history in this SQLite file: a test that passed and failed on one sha
    /// in any earlier recorded run is unstable.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Also add this evidence's observations to the history (only when no trust rule fired).
    #[arg(long, requires = "history")]
    pub record: bool,
    /// The repository the history belongs to (default: $GITHUB_REPOSITORY, else git's `origin`
    /// URL, else `local`); a history file of another repository is refused.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repository: Option<String>,
    /// The pull request the evidence belongs to, recorded as the source of its observations.
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// The evidence comes from a fork's pull request: only the failures of its probe are
    /// recorded (a fork's runs may show a test unstable, never stable).
    #[arg(long, requires = "history")]
    pub fork: bool,
}

/// The runtime a command reads its history file with.
pub(super) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime that reads the history")
}

/// The moment a command judges its window as of: noon UTC of `today`.
pub(super) fn noon(today: NaiveDate) -> chrono::DateTime<chrono::Utc> {
    today
        .and_hms_opt(12, 0, 0)
        .map(|d| d.and_utc())
        .unwrap_or_else(chrono::Utc::now)
}

/// The history of `check --history` / `history record`, with what recording needs.
pub(super) async fn access(
    args: &HistoryArgs,
    path: &Path,
    today: NaiveDate,
    dir: Option<&Path>,
) -> anyhow::Result<HistoryAccess> {
    let store = open(path, args.repository.as_deref()).await?;
    let now = noon(today);
    let record = args.record.then(|| {
        let run_id = env_number("GITHUB_RUN_ID");
        let attempt = env_number("GITHUB_RUN_ATTEMPT").and_then(|n| u32::try_from(n).ok());
        // A CI run is recorded once per attempt; without one, once per evidence directory.
        let key = match run_id {
            Some(id) => format!("run:{id}:{}", attempt.unwrap_or(1)),
            None => format!(
                "evidence:{}",
                dir.and_then(|d| std::fs::canonicalize(d).ok())
                    .map_or_else(|| "-".into(), |d| d.display().to_string())
            ),
        };
        (
            key,
            RecordContext {
                pr: args.pr,
                run_id,
                attempt,
                date: today,
                fork: args.fork,
            },
        )
    });
    Ok(HistoryAccess {
        store,
        repo_id: LOCAL_REPO_ID,
        now,
        record,
        exclude: None,
    })
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Open (or create) the history file and check it belongs to this repository.
pub(super) async fn open(path: &Path, repository: Option<&str>) -> anyhow::Result<Store> {
    if path.is_dir() {
        return Err(unusable(format!(
            "{}: is a directory; --history names the history's SQLite file",
            path.display()
        )));
    }
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let store = Store::open(&url, RetryPolicy::default())
        .await
        .with_context(|| format!("{}: cannot open the flake history", path.display()))?;
    let name = repository.map(str::to_owned).unwrap_or_else(repository_name);
    store
        .history_repository(LOCAL_REPO_ID, &name, false)
        .await
        .with_context(|| format!("{}: not this repository's flake history", path.display()))?;
    Ok(store)
}

/// `$GITHUB_REPOSITORY`, else git's `origin` URL, else `local`.
fn repository_name() -> String {
    if let Ok(r) = std::env::var("GITHUB_REPOSITORY") {
        if !r.trim().is_empty() {
            return r.trim().to_owned();
        }
    }
    std::process::Command::new("git")
        .args(["remote", "get-url", "origin"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "local".into())
}
