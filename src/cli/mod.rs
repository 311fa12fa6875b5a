//! The command line: flags validated into typed inputs once, then the library.
//! Nothing else in the crate imports this module; `main` calls [`run`].
//!
//! Exit status: 0 PASS / PASS_WITH_CAVEAT (and other successes), 1 FAIL /
//! INCONCLUSIVE (or what a subcommand documents), 2 unusable input. Every
//! error is unusable input: `main` prints it with its whole chain of causes.

mod blindness;
mod check;
mod history;
mod history_file;
mod ledger;
mod ledger_file;
mod ledger_maintain;
mod probe;
mod serve;
mod setup;

use crate::evidence::read_text;
use crate::gate::config::{parse_config, Config, CONFIG_PATH};
use chrono::NaiveDate;
use clap::{Parser, Subcommand};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The version `--version` prints: the package's, and the commit it was built from (`build.rs`).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("FLAKEGATE_GIT_COMMIT"), ")");

#[derive(Debug, Parser)]
#[command(
    name = "flakegate",
    version = VERSION,
    about = "Gate pull requests on evidence: frozen and unstable tests are not witnesses"
)]
pub struct Cli {
    /// Colour in text output: `auto` colours a terminal unless `NO_COLOR` is set (to anything
    /// but empty) or `TERM` is `dumb`.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaOf {
    Config,
    Ledger,
    /// The JSON of `flakegate blindness --format json`.
    Blindness,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// Whether to colour output going to a terminal (`is_terminal`) in this environment.
    fn colours(self, is_terminal: bool) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => {
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
                is_terminal && !no_color && !dumb
            }
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Decide whether a patch has evidence: PASS, PASS_WITH_CAVEAT, INCONCLUSIVE or FAIL.
    Check(check::CheckArgs),
    /// The blindness map: for every line of a full-suite run's coverage, whether a stable test
    /// witnesses it, only frozen or unstable ones (blind: who, until when), or none.
    Blindness(blindness::BlindnessArgs),
    /// The flake history: record evidence into it, show what it knows of a test, list unstable tests.
    #[command(subcommand)]
    History(history::HistoryCmd),
    /// Work with the freeze ledger.
    #[command(subcommand)]
    Ledger(ledger::LedgerCmd),
    /// Run the base tree's suite K times on identical inputs and count each test's failures.
    Probe(probe::ProbeArgs),
    /// Run the GitHub App: receive signed webhooks and queue them (configured from the environment).
    Serve,
    /// Create the GitHub App with GitHub's manifest flow, from a page served on 127.0.0.1, and
    /// write its id, private key and webhook secret to an env file (or print `fly secrets set`).
    Setup(setup::SetupArgs),
    /// Print the JSON Schema of `.github/flakegate.yml` (`config`), of the ledger (`ledger`) or
    /// of `flakegate blindness`'s JSON (`blindness`),
    /// for an editor's completion and checking (the files under `schemas/` are these).
    Schema {
        #[arg(value_enum)]
        of: SchemaOf,
    },
    /// Print a completion script for SHELL (e.g. `flakegate completions bash > /etc/bash_completion.d/flakegate`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page flakegate(1) in roff; with --dir, write it and one page per
    /// subcommand (flakegate-check(1), …) into DIR.
    Man {
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Run the command line; returns the exit status.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Cmd::Blindness(args) => blindness::run(args),
        Cmd::Check(args) => check::run(args, cli.color),
        Cmd::History(cmd) => history::run(cmd),
        Cmd::Ledger(cmd) => ledger::run(cmd),
        Cmd::Probe(args) => probe::run(args),
        Cmd::Serve => serve::run(),
        Cmd::Setup(args) => setup::run(args),
        Cmd::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "flakegate", &mut std::io::stdout());
            Ok(0)
        }
        Cmd::Man { dir } => man(dir.as_deref()),
        Cmd::Schema { of } => {
            let schema = match of {
                SchemaOf::Config => schemars::schema_for!(Config),
                SchemaOf::Ledger => schemars::schema_for!(crate::gate::ledger::LedgerFile),
                SchemaOf::Blindness => schemars::schema_for!(crate::gate::blindness::BlindnessMap),
            };
            println!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(0)
        }
    }
}

/// `flakegate man`: flakegate(1) on stdout, or every page into `dir`.
fn man(dir: Option<&Path>) -> anyhow::Result<i32> {
    let cmd = <Cli as clap::CommandFactory>::command();
    let Some(dir) = dir else {
        clap_mangen::Man::new(cmd).render(&mut std::io::stdout().lock())?;
        return Ok(0);
    };
    std::fs::create_dir_all(dir).map_err(|e| unusable(format!("{}: cannot create: {e}", dir.display())))?;
    let mut pages = vec![("flakegate".to_owned(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        // A page's title is its command's name: `flakegate-check`, as `man flakegate-check` finds it.
        let name = format!("flakegate-{}", sub.get_name());
        let titled = sub.clone().name(name.clone());
        pages.push((name, titled));
    }
    for (name, page) in pages {
        let mut bytes = Vec::new();
        clap_mangen::Man::new(page).render(&mut bytes)?;
        let path = dir.join(format!("{name}.1"));
        write_atomic(&path, &bytes).map_err(|e| unusable(format!("{}: cannot write: {e}", path.display())))?;
        println!("{}", path.display());
    }
    Ok(0)
}

/// Today's UTC date, unless a command's `--today` says otherwise.
fn today_utc() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

/// An error that says what was wrong with the input (exit status 2).
fn unusable(msg: impl Into<String>) -> anyhow::Error {
    anyhow::anyhow!(msg.into())
}

/// The repository config for the commands that work in a checkout (`probe`,
/// `ledger`): `--config FILE`, else `.github/flakegate.yml` when present, else defaults.
fn local_config(path: Option<&Path>) -> anyhow::Result<Config> {
    let default = Path::new(CONFIG_PATH);
    let p = match path {
        Some(p) => p,
        None if default.is_file() => default,
        None => return Ok(Config::default()),
    };
    let (text, _) = read_text(p)?;
    Ok(parse_config(&p.display().to_string(), &text)?)
}

// The default freeze length of a new entry, capped by the policy's max_freeze_days.
use crate::gate::ledger::maintain::DEFAULT_FREEZE_DAYS;

/// Freeze length: `--days`, else 14 capped by the policy; more than the policy allows is an error.
fn freeze_days(days: Option<u32>, config: &Config) -> anyhow::Result<u32> {
    let max = config.policy.max_freeze_days;
    match (days, max) {
        (Some(d), Some(m)) if d > m => Err(unusable(format!(
            "--days {d} is longer than the policy's max_freeze_days of {m}"
        ))),
        (Some(d), _) => Ok(d),
        (None, Some(m)) => Ok(DEFAULT_FREEZE_DAYS.min(m)),
        (None, None) => Ok(DEFAULT_FREEZE_DAYS),
    }
}

/// Write to a temporary file beside `path`, then rename it into place.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
