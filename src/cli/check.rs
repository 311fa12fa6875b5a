//! `flakegate check`: the patch, the ledger and the config from files or from
//! git (`--base REV`: the diff `REV...HEAD`, and the ledger, config and
//! CODEOWNERS read at REV, never from the working tree), then the one pipeline
//! ([`crate::evidence::assemble`]) and the report.

use super::unusable;
use crate::evidence::assemble::{self, AssembleError, Judging, Named, Sources};
use crate::evidence::{read_text, EvidenceSources};
use crate::gate::config::CONFIG_PATH;
use crate::present::record::{self, Format};
use anyhow::{bail, Context as _};
use chrono::NaiveDate;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::Command;

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
    #[command(flatten)]
    pub history: super::history_file::HistoryArgs,
    /// The base's blindness map (`flakegate blindness --format json` of a full-suite evidence):
    /// the report then says how many lines each frozen or unstable witness alone witnesses.
    #[arg(long, value_name = "FILE")]
    pub blindness: Option<PathBuf>,
}

/// `flakegate check`: returns the exit status (0 PASS / PASS_WITH_CAVEAT, 1 FAIL / INCONCLUSIVE).
pub fn run(args: CheckArgs, color: super::ColorWhen) -> anyhow::Result<i32> {
    let (report, recorded, config) = judge(&args)?;
    for line in recorded {
        eprintln!("flakegate: flake history: {line}");
    }

    let format = args.format.unwrap_or(if std::io::stdout().is_terminal() {
        Format::Text
    } else {
        Format::Json
    });
    let out = match format {
        Format::Text => crate::present::terminal::text_with(&report, color.colours(std::io::stdout().is_terminal())),
        _ => record::render(&report, &config, format, args.templates.as_deref())?,
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes()).ok();
    stdout.flush().ok();
    Ok(if report.verdict.blocks() { 1 } else { 0 })
}

/// The one pipeline over the command line's files (and its history, when given).
/// Returns the report and what was added to the history (`--record`), one line each.
pub(super) fn judge(
    args: &CheckArgs,
) -> anyhow::Result<(crate::gate::Report, Vec<String>, crate::gate::config::Config)> {
    let today = args.today.unwrap_or_else(super::today_utc);
    let src = CommandLine { args };
    // The git reader never awaits anything: a current-thread runtime drives the pipeline (and
    // the history's SQLite file, whose pool needs the time driver).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime that drives the check")?;
    runtime
        .block_on(async {
            let config = assemble::read_config(&src).await?;
            let (base_sha, head_sha) = match &args.base {
                Some(rev) => (rev_parse(rev).ok(), rev_parse("HEAD").ok()),
                None => (None, None),
            };
            let history = match &args.history.history {
                Some(path) => Some(
                    super::history_file::access(&args.history, path, today, args.dir.as_deref())
                        .await
                        .map_err(AssembleError::Source)?,
                ),
                None => None,
            };
            let judging = Judging {
                today,
                base_sha,
                head_sha,
                workflow: args.workflow.clone(),
                history: history.clone(),
            };
            let (mut report, pending) = assemble::evaluate_deferred(&src, &config, judging).await?;
            if let Some(path) = &args.blindness {
                let w = &report.witnesses;
                let map = read_map(path).map_err(AssembleError::Source)?;
                report.codebase = map.for_witnesses(w.frozen.iter().chain(&w.unstable));
            }
            let said = match (history, pending) {
                (Some(h), Some(p)) => assemble::record(&h, p).await,
                _ => Vec::new(),
            };
            Ok((report, said, config.config))
        })
        .map_err(|e| match e {
            AssembleError::Source(e) => e,
            AssembleError::Config(e) | AssembleError::Patch(e) => e.into(),
        })
}

/// The command line's files: those named by flags, else git at `--base REV`.
struct CommandLine<'a> {
    args: &'a CheckArgs,
}

impl Sources for CommandLine<'_> {
    type Error = anyhow::Error;

    async fn config(&self) -> anyhow::Result<Option<Named>> {
        match (&self.args.config, &self.args.base) {
            (Some(p), _) => {
                let (_, bytes) = read_text(p)?;
                Ok(Some(Named::new(p.display().to_string(), bytes)))
            }
            (None, Some(rev)) => Ok(git_show(rev, CONFIG_PATH)?.map(|b| Named::new(format!("{rev}:{CONFIG_PATH}"), b))),
            // As `probe` and `ledger` do: the current repository's config, when there is one.
            (None, None) if std::path::Path::new(CONFIG_PATH).is_file() => {
                let (_, bytes) = read_text(std::path::Path::new(CONFIG_PATH))?;
                Ok(Some(Named::new(CONFIG_PATH.to_string(), bytes)))
            }
            (None, None) => Ok(None),
        }
    }

    async fn patch(&self) -> anyhow::Result<Named> {
        match (&self.args.diff, &self.args.base) {
            (Some(d), _) => {
                let bytes = read_input(d)?;
                let name = if d == "-" { "<stdin>".to_string() } else { d.clone() };
                Ok(Named::new(name, bytes))
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
                ])?;
                Ok(Named::new(format!("git diff {range}"), bytes))
            }
            (None, None) => Err(unusable(
                "no patch: give --diff FILE (or - for standard input), or --base REV inside a git checkout",
            )),
        }
    }

    async fn base_ledger(&self, path: &str) -> anyhow::Result<Result<Named, String>> {
        match (&self.args.ledger, &self.args.base) {
            (Some(p), _) => {
                let bytes = std::fs::read(p).map_err(|e| unusable(format!("{}: cannot read: {e}", p.display())))?;
                Ok(Ok(Named::new(p.display().to_string(), bytes)))
            }
            (None, Some(rev)) => {
                let name = format!("{rev}:{path}");
                Ok(match git_show(rev, path)? {
                    Some(b) => Ok(Named::new(name, b)),
                    None => Err(format!("no ledger at {name}: no test is frozen")),
                })
            }
            // As `probe` and `ledger` do: the current repository's ledger, when there is one.
            (None, None) if std::path::Path::new(path).is_file() => {
                let bytes = std::fs::read(path).map_err(|e| unusable(format!("{path}: cannot read: {e}")))?;
                Ok(Ok(Named::new(path.to_string(), bytes)))
            }
            (None, None) => Ok(Err(format!(
                "no ledger given (--ledger FILE or --base REV) and none at {path}: no test is frozen"
            ))),
        }
    }

    async fn evidence(&self) -> anyhow::Result<EvidenceSources> {
        let a = self.args;
        // A mistyped directory is a usage error, not missing evidence (an INCONCLUSIVE verdict).
        if let Some(d) = &a.dir {
            if !d.is_dir() {
                return Err(unusable(format!(
                    "{}: no such evidence directory (expected coverage.json or .coverage, results/, probe/, meta.json in it)",
                    d.display()
                )));
            }
        }
        Ok(EvidenceSources {
            dir: a.dir.clone(),
            coverage: a.coverage.clone(),
            results: a.results.clone(),
            probe: a.probe.clone(),
            meta: a.meta.clone(),
            read_once: None,
        })
    }

    /// With `--base`, the ledger as HEAD leaves it (also beside `--ledger FILE`: the diff's
    /// hunks of the repository's ledger are read against it).
    async fn head_ledger(&self, path: &str) -> anyhow::Result<Option<Named>> {
        if self.args.base.is_none() {
            return Ok(None);
        }
        Ok(git_show("HEAD", path)?.map(|b| Named::new(format!("HEAD:{path}"), b)))
    }

    /// Only `--base` reads the head; with `--diff` alone the diff's hunks of the ledger are
    /// applied to the `--ledger` given.
    fn knows_head(&self) -> bool {
        self.args.base.is_some()
    }

    async fn base_file(&self, path: &str) -> anyhow::Result<Option<Named>> {
        match &self.args.base {
            Some(rev) => Ok(git_show(rev, path)?.map(|b| Named::new(format!("{rev}:{path}"), b))),
            None => Ok(None),
        }
    }

    /// With `--base`, the file as HEAD has it (never the working tree).
    async fn head_file(&self, path: &str) -> anyhow::Result<Option<Named>> {
        if self.args.base.is_none() {
            return Ok(None);
        }
        Ok(git_show("HEAD", path)?.map(|b| Named::new(format!("HEAD:{path}"), b)))
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

fn rev_parse(rev: &str) -> anyhow::Result<String> {
    let out = git(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")])?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// What `check --blindness` reads of a `flakegate blindness` JSON map: its date, commit,
/// totals and each frozen or not-stable test's only-witness lines.
#[derive(serde::Deserialize)]
struct MapFile {
    schema: String,
    today: NaiveDate,
    #[serde(default)]
    sha: Option<String>,
    totals: crate::gate::blindness::Totals,
    tests: Vec<MapTest>,
}

#[derive(serde::Deserialize)]
struct MapTest {
    test: crate::gate::nodeid::TestId,
    only_witness_lines: usize,
}

/// The map in `path` as the App keeps a branch's (its branch unknown here).
fn read_map(path: &std::path::Path) -> anyhow::Result<crate::gate::blindness::CodebaseMap> {
    use crate::gate::blindness::{BlindnessSummary, CodebaseMap, TestSummary, SCHEMA};
    let (text, _) = read_text(path)?;
    let shown = path.display();
    let file: MapFile = serde_json::from_str(&text).map_err(|e| {
        unusable(format!(
            "{shown}:{}:{}: --blindness: not a blindness map as `flakegate blindness --format json` writes it: {e}",
            e.line(),
            e.column()
        ))
    })?;
    if file.schema != SCHEMA {
        return Err(unusable(format!(
            "{shown}: --blindness: schema `{}`, expected `{SCHEMA}`",
            file.schema
        )));
    }
    Ok(CodebaseMap {
        branch: String::new(),
        sha: file.sha.unwrap_or_default(),
        date: file.today,
        pull_request: None,
        evidence_head: String::new(),
        run_id: 0,
        merged_at: None,
        witnessed: file.totals.witnessed,
        blind: file.totals.blind,
        uncovered: file.totals.uncovered,
        summary: BlindnessSummary {
            owners: Vec::new(),
            tests: file
                .tests
                .into_iter()
                .map(|t| TestSummary {
                    test: t.test,
                    owner: None,
                    only_witness_lines: t.only_witness_lines,
                })
                .collect(),
        },
    })
}
