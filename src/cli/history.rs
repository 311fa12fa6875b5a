//! `flakegate history` and `check --history`: the flake history in a local SQLite file, the
//! same store and the same judgement the App uses (`store::Store`, `gate::history`).

use super::check::CheckArgs;
use super::history_file::{noon, open, runtime, LOCAL_REPO_ID};
use super::unusable;
use crate::gate::history::{runs_to_recover, Stabilities, RECOVERY};
use crate::gate::probe::Stability;
use crate::gate::TestId;
use crate::store::HistoryQuery;
use chrono::NaiveDate;
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum HistoryCmd {
    /// Judge an evidence directory (the flags of `check`) and add its observations to the
    /// history: its probe on the base sha, its head run's outcomes. Nothing is added when a
    /// trust rule fired. Prints the verdict and what was recorded; exits 0 unless the input is unusable.
    Record(Box<CheckArgs>),
    /// What the history knows of one test: runs, failures, where it failed, and its judgement.
    Show {
        /// The test's node id.
        test: String,
        #[command(flatten)]
        file: FileArgs,
    },
    /// Every test the history has seen pass and fail on one sha within its window.
    Unstable {
        #[command(flatten)]
        file: FileArgs,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct FileArgs {
    /// The history's SQLite file.
    #[arg(long, value_name = "FILE")]
    pub history: PathBuf,
    /// The repository the history belongs to (as for `check --history`).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repository: Option<String>,
    /// Judge the window as of this UTC date (default: today).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub today: Option<NaiveDate>,
    /// flakegate's config, for `history.window_days` and `history.recovery_runs` (default:
    /// `.github/flakegate.yml` of the current repository, when there is one).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

pub fn run(cmd: HistoryCmd) -> anyhow::Result<i32> {
    match cmd {
        HistoryCmd::Record(mut args) => {
            let Some(_) = &args.history.history else {
                return Err(unusable("history record needs --history FILE"));
            };
            args.history.record = true;
            let (report, added, _) = super::check::judge(&args)?;
            println!(
                "{}: {}",
                args.dir
                    .as_deref()
                    .map_or("evidence".into(), |d| d.display().to_string()),
                report.verdict.as_str()
            );
            if added.is_empty() {
                println!("  nothing recorded: no test outcome in this evidence");
            }
            for n in added {
                println!("  {n}");
            }
            Ok(0)
        }
        HistoryCmd::Show { test, file } => show(&test, &file),
        HistoryCmd::Unstable { file } => unstable(&file),
    }
}

fn now_of(file: &FileArgs) -> chrono::DateTime<chrono::Utc> {
    noon(file.today.unwrap_or_else(super::today_utc))
}

fn show(test: &str, file: &FileArgs) -> anyhow::Result<i32> {
    let policy = super::local_config(file.config.as_deref())?.history;
    let id = TestId::new(test);
    let h = runtime()?.block_on(async {
        let store = open(&file.history, file.repository.as_deref()).await?;
        store
            .history_for(
                LOCAL_REPO_ID,
                &HistoryQuery {
                    tests: std::slice::from_ref(&id),
                    base_sha: None,
                    head_sha: None,
                    now: now_of(file),
                    policy,
                    exclude: None,
                },
            )
            .await
    })?;
    let Some(th) = h.tests.get(&id) else {
        println!("{test}: no run in the last {} days of this history", policy.window_days);
        return Ok(0);
    };
    let j = Stabilities::new(None, Some(&h)).judge(&id);
    let word = match j.as_ref().map(|j| j.stability) {
        Some(Stability::Unstable) => "unstable",
        Some(Stability::BrokenOnBase) => "failing",
        _ => "stable",
    };
    println!("{test}: {word}");
    if let Some(p) = j.as_ref().and_then(|j| j.power.as_deref()) {
        println!("  {p}");
    }
    println!(
        "  failed {} of {} runs since {}",
        th.failures,
        th.runs,
        th.since.map_or("-".into(), |d| d.to_string())
    );
    if let Some(s) = &th.unstable_on {
        println!("  passed and failed on one sha: {}", s.describe());
    }
    if let Some(s) = &th.last_failure {
        println!("  last failure: {}", s.describe());
    }
    println!("  passing runs since the last failure: {}", th.passes_since_failure);
    if th.failures > 0 {
        println!(
            "  clears after {} passing runs in a row (history.recovery_runs: {})",
            runs_to_recover(th, policy.recovery_runs),
            policy.recovery_runs
        );
    }
    println!("  recovery: {RECOVERY}");
    Ok(0)
}

fn unstable(file: &FileArgs) -> anyhow::Result<i32> {
    let policy = super::local_config(file.config.as_deref())?.history;
    let now = now_of(file);
    let (tests, h) = runtime()?.block_on(async {
        let store = open(&file.history, file.repository.as_deref()).await?;
        let tests = store
            .history_unstable_tests(LOCAL_REPO_ID, now, policy.window_days)
            .await?;
        let h = store
            .history_for(
                LOCAL_REPO_ID,
                &HistoryQuery {
                    tests: &tests,
                    base_sha: None,
                    head_sha: None,
                    now,
                    policy,
                    exclude: None,
                },
            )
            .await?;
        anyhow::Ok((tests, h))
    })?;
    let s = Stabilities::new(None, Some(&h));
    let mut shown = 0;
    for t in &tests {
        let Some(j) = s.judge(t) else { continue };
        if j.stability != Stability::Unstable {
            continue;
        }
        shown += 1;
        let seen = j
            .seen
            .as_ref()
            .map_or(String::new(), |s| format!(" — seen {}", s.describe()));
        println!("{t}: failed {} of {} runs{seen}", j.failures, j.runs);
    }
    if shown == 0 {
        println!(
            "no test passed and failed on one sha in the last {} days",
            policy.window_days
        );
    }
    Ok(0)
}
