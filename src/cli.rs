//! The command line: flags validated into typed inputs once, then the same
//! `gate::evaluate` the App calls. Exit status: 0 PASS / PASS_WITH_CAVEAT,
//! 1 FAIL / INCONCLUSIVE, 2 unusable input.

use crate::gate::config::{parse_config, Config};
use crate::gate::ledger::parse_ledger;
use crate::gate::{evaluate, patch as diff, GateInput, InputDigest, Ledger};
use crate::load::{self, EvidenceSources};
use crate::render::{self, Format};
use anyhow::{bail, Context as _};
use chrono::NaiveDate;
use clap::{Parser, Subcommand};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Parser)]
#[command(
    name = "flakegate",
    version,
    about = "Gate pull requests on evidence: frozen and unstable tests are not witnesses"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Decide whether a patch has evidence: PASS, PASS_WITH_CAVEAT, INCONCLUSIVE or FAIL.
    Check(CheckArgs),
    /// Work with the freeze ledger.
    #[command(subcommand)]
    Ledger(LedgerCmd),
    /// Run the base tree's suite K times on identical inputs and count each test's failures.
    Probe(crate::probe::ProbeArgs),
    /// Run the GitHub App: receive signed webhooks and queue them (configured from the environment).
    Serve,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Evidence directory: coverage.json or .coverage, results/, probe/ or probe.json, meta.json.
    pub dir: Option<PathBuf>,
    /// The patch: a unified diff file, `-` for standard input, or GitHub's pull-request files JSON.
    #[arg(long, value_name = "FILE|-")]
    pub diff: Option<String>,
    /// Inside a git checkout: diff REV...HEAD, and read ledger and config at REV (never from the working tree).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// The freeze ledger (default with --base: the config's ledger path at REV).
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// Policy file with the shape of .github/flakegate.yml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Coverage: coverage.json (coverage json --show-contexts) or a .coverage data file.
    #[arg(long, value_name = "FILE")]
    pub coverage: Option<PathBuf>,
    /// Head test results: report-log (.jsonl) or JUnit XML files, or directories of them.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub results: Vec<PathBuf>,
    /// The probe: a probe JSON, or a directory of K base-run result files.
    #[arg(long, value_name = "FILE|DIR")]
    pub probe: Option<PathBuf>,
    /// meta.json: base/head sha, K, seed, test command.
    #[arg(long, value_name = "FILE")]
    pub meta: Option<PathBuf>,
    /// The workflow file that produced the evidence (e.g. .github/workflows/flakegate-evidence.yml):
    /// then only a patch's edit of it (or of .github/actions/) distrusts the evidence, not of other workflows.
    #[arg(long, value_name = "PATH")]
    pub workflow: Option<String>,
    /// Judge expiries as of this UTC date (default: today).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub today: Option<NaiveDate>,
    /// Output format (default: text on a terminal, json otherwise).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Directory whose templates override the bundled ones (by file name).
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum LedgerCmd {
    /// Freeze a test: add an entry with owner, reason, observation and expiry.
    Add(crate::ledger_edit::AddArgs),
    /// Extend a freeze, recording a fresh observation from a probe.
    Renew(crate::ledger_edit::RenewArgs),
    /// Remove entries a complete probe now finds stable, listing them.
    Prune(crate::ledger_edit::PruneArgs),
    /// List entries expired or expiring soon with their owners. Exits 1 when any is expired.
    Expiring(crate::ledger_edit::ExpiringArgs),
    /// Validate a ledger; list entries expired or expiring soon. Exits 1 when invalid or any entry is expired.
    Lint {
        file: PathBuf,
        /// List entries expiring within this many days (default: the policy's expiry_warning_days, 7).
        #[arg(long, value_name = "DAYS")]
        within: Option<u32>,
        #[arg(long, value_name = "YYYY-MM-DD")]
        today: Option<NaiveDate>,
        /// Policy file (for max_freeze_days).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

/// A failure that makes the input unusable: exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

pub fn today_utc() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

/// Run the command line; returns the exit status.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Cmd::Check(args) => check(args),
        Cmd::Ledger(LedgerCmd::Lint {
            file,
            within,
            today,
            config,
        }) => lint(&file, within, today, config.as_deref()),
        Cmd::Ledger(LedgerCmd::Add(args)) => crate::ledger_edit::add(args),
        Cmd::Ledger(LedgerCmd::Renew(args)) => crate::ledger_edit::renew(args),
        Cmd::Ledger(LedgerCmd::Prune(args)) => crate::ledger_edit::prune(args),
        Cmd::Ledger(LedgerCmd::Expiring(args)) => crate::ledger_edit::expiring(args),
        Cmd::Probe(args) => crate::probe::run(args),
        Cmd::Serve => crate::server::serve_from_env(),
    }
}

fn git(args: &[&str]) -> anyhow::Result<Vec<u8>> {
    let out = Command::new("git").args(args).output().context("running git")?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// `git show REV:PATH`, or None when the file does not exist at REV.
fn git_show(rev: &str, path: &str) -> anyhow::Result<Option<Vec<u8>>> {
    let spec = format!("{rev}:{path}");
    let out = Command::new("git")
        .args(["cat-file", "-e", &spec])
        .output()
        .context("running git")?;
    if !out.status.success() {
        return Ok(None);
    }
    git(&["show", &spec]).map(Some)
}

fn read_input(path: &str) -> anyhow::Result<Vec<u8>> {
    if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("reading the diff from standard input")?;
        Ok(buf)
    } else {
        std::fs::read(path).with_context(|| format!("{path}: cannot read"))
    }
}

/// Parse a patch: GitHub's files listing when it is a JSON array, else unified diff text.
pub fn parse_patch(name: &str, bytes: &[u8]) -> Result<crate::gate::Patch, crate::gate::InputError> {
    let text = load::text_of(name, bytes)?;
    if text.trim_start().starts_with('[') {
        diff::parse_github_files(name, &text)
    } else {
        diff::parse_unified(name, &text)
    }
}

fn check(args: CheckArgs) -> anyhow::Result<i32> {
    let today = args.today.unwrap_or_else(today_utc);
    let mut inputs: Vec<InputDigest> = Vec::new();
    let mut notes: Vec<String> = Vec::new();

    // Config: --config, else at --base REV, else defaults.
    let (config, config_src): (Config, Option<(String, Vec<u8>)>) = match (&args.config, &args.base) {
        (Some(p), _) => {
            let (t, b) = load::read_text(p).map_err(|e| Unusable(e.to_string()))?;
            let name = p.display().to_string();
            (
                parse_config(&name, &t).map_err(|e| Unusable(e.to_string()))?,
                Some((name, b)),
            )
        }
        (None, Some(rev)) => match git_show(rev, ".github/flakegate.yml").map_err(|e| Unusable(format!("{e:#}")))? {
            Some(b) => {
                let name = format!("{rev}:.github/flakegate.yml");
                let t = load::text_of(&name, &b).map_err(|e| Unusable(e.to_string()))?;
                (
                    parse_config(&name, &t).map_err(|e| Unusable(e.to_string()))?,
                    Some((name, b)),
                )
            }
            None => (Config::default(), None),
        },
        (None, None) => (Config::default(), None),
    };
    if let Some((name, b)) = &config_src {
        inputs.push(InputDigest::of("config", name, b));
    }

    // The patch.
    let (patch, base_sha, head_sha) = match (&args.diff, &args.base) {
        (Some(d), _) => {
            let bytes = read_input(d).map_err(|e| Unusable(format!("{e:#}")))?;
            let name = if d == "-" { "<stdin>".to_string() } else { d.clone() };
            inputs.push(InputDigest::of("diff", &name, &bytes));
            let patch = parse_patch(&name, &bytes).map_err(|e| Unusable(e.to_string()))?;
            let shas = match &args.base {
                Some(rev) => (rev_parse(rev).ok(), rev_parse("HEAD").ok()),
                None => (None, None),
            };
            (patch, shas.0, shas.1)
        }
        (None, Some(rev)) => {
            let range = format!("{rev}...HEAD");
            let bytes = git(&[
                "-c",
                "core.quotepath=true",
                "diff",
                "--no-color",
                "--no-ext-diff",
                "-M",
                &range,
            ])
            .map_err(|e| Unusable(format!("{e:#}")))?;
            let name = format!("git diff {range}");
            inputs.push(InputDigest::of("diff", &name, &bytes));
            let patch = parse_patch(&name, &bytes).map_err(|e| Unusable(e.to_string()))?;
            (patch, rev_parse(rev).ok(), rev_parse("HEAD").ok())
        }
        (None, None) => {
            return Err(Unusable(
                "no patch: give --diff FILE (or - for standard input), or --base REV inside a git checkout".into(),
            )
            .into())
        }
    };

    // The ledger: --ledger, else at --base REV. Never the working tree's, which the patch controls.
    let ledger_read: Option<(String, Vec<u8>)> = match (&args.ledger, &args.base) {
        (Some(p), _) => Some((
            p.display().to_string(),
            std::fs::read(p).map_err(|e| Unusable(format!("{}: cannot read: {e}", p.display())))?,
        )),
        (None, Some(rev)) => {
            let name = format!("{rev}:{}", config.ledger);
            match git_show(rev, &config.ledger).map_err(|e| Unusable(format!("{e:#}")))? {
                Some(b) => Some((name, b)),
                None => {
                    notes.push(format!("no ledger at {name}: no test is frozen"));
                    None
                }
            }
        }
        (None, None) => {
            notes.push("no ledger given (--ledger FILE or --base REV): no test is frozen".into());
            None
        }
    };
    let ledger: Result<Ledger, Vec<crate::gate::InputError>> = match &ledger_read {
        Some((name, bytes)) => {
            inputs.push(InputDigest::of("ledger", name, bytes));
            load::parse_ledger_bytes(name, bytes, config.policy.max_freeze_days)
        }
        None => Ok(Ledger::default()),
    };

    // The evidence.
    let sources = EvidenceSources {
        dir: args.dir.clone(),
        coverage: args.coverage.clone(),
        results: args.results.clone(),
        probe: args.probe.clone(),
        meta: args.meta.clone(),
    };
    let mut loaded = load::load_evidence(&sources, &patch, ledger.as_ref().ok());
    inputs.extend(loaded.digests.clone());
    // With --base, CODEOWNERS at the base names the owners of unwitnessed lines.
    if let Some(rev) = &args.base {
        for path in crate::gate::codeowners::CODEOWNERS_PATHS {
            if let Some(bytes) = git_show(rev, path).map_err(|e| Unusable(format!("{e:#}")))? {
                load::set_codeowners(
                    &mut loaded.evidence,
                    &mut inputs,
                    &mut notes,
                    &format!("{rev}:{path}"),
                    &bytes,
                );
                break;
            }
        }
    }
    // With --base, the ledger as the patch leaves it: its edits are reported
    // entry by entry (and a freeze of the patch's own witnesses caught), never obeyed.
    if args.base.is_some() && args.ledger.is_none() {
        if let Some(bytes) = git_show("HEAD", &config.ledger).map_err(|e| Unusable(format!("{e:#}")))? {
            let name = format!("HEAD:{}", config.ledger);
            load::set_head_ledger(
                &mut loaded.evidence,
                &mut notes,
                &name,
                &bytes,
                config.policy.max_freeze_days,
            );
        }
    }

    let input = GateInput {
        patch: &patch,
        ledger: &ledger,
        config: &config,
        evidence: &loaded.evidence,
        today,
        base_sha,
        head_sha,
        inputs,
        workflow: args.workflow.clone(),
    };
    let mut report = evaluate(&input);
    report.notes.extend(notes);

    let format = args.format.unwrap_or(if std::io::stdout().is_terminal() {
        Format::Text
    } else {
        Format::Json
    });
    let out = render::render(&report, format, args.templates.as_deref()).map_err(|e| Unusable(format!("{e:#}")))?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes()).ok();
    stdout.flush().ok();
    Ok(if report.verdict.blocks() { 1 } else { 0 })
}

fn rev_parse(rev: &str) -> anyhow::Result<String> {
    let out = git(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")])?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

fn lint(file: &Path, within: Option<u32>, today: Option<NaiveDate>, config: Option<&Path>) -> anyhow::Result<i32> {
    let config = match config {
        Some(p) => {
            let (t, _) = load::read_text(p).map_err(|e| Unusable(e.to_string()))?;
            parse_config(&p.display().to_string(), &t).map_err(|e| Unusable(e.to_string()))?
        }
        None => Config::default(),
    };
    let today = today.unwrap_or_else(today_utc);
    let within = within.unwrap_or(config.policy.expiry_warning_days);
    let name = file.display().to_string();
    let (text, _) = load::read_text(file).map_err(|e| Unusable(e.to_string()))?;
    let ledger = match parse_ledger(&name, &text, config.policy.max_freeze_days) {
        Ok(l) => l,
        Err(errors) => {
            for e in &errors {
                eprintln!("error: {e}");
            }
            eprintln!(
                "{name}: {} problem{}",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            );
            return Ok(1);
        }
    };
    let mut expired = 0;
    let mut out = String::new();
    for e in &ledger.entries {
        let days = (e.expires - today).num_days();
        if e.is_expired(today) {
            expired += 1;
            out.push_str(&format!(
                "{name}:{}: EXPIRED {} ({} days ago): {} — owner {}\n",
                e.line, e.expires, -days, e.test, e.owner
            ));
        } else if days <= within as i64 {
            out.push_str(&format!(
                "{name}:{}: expires {} (in {} days): {} — owner {}\n",
                e.line, e.expires, days, e.test, e.owner
            ));
        }
    }
    print!("{out}");
    println!(
        "{name}: {} entr{} valid, {expired} expired as of {today}",
        ledger.entries.len(),
        if ledger.entries.len() == 1 { "y" } else { "ies" }
    );
    Ok(if expired > 0 { 1 } else { 0 })
}
