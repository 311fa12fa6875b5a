//! `flakegate probe`: the flags, validated once, then the probe engine in
//! [`crate::probe`] (run K times, collect, summarise) and the output.

use super::{freeze_days, local_config, today_utc, unusable, write_atomic};
use crate::evidence;
use crate::gate::config::Config;
use crate::gate::ledger::{parse_ledger, Ledger};
use crate::gate::nodeid::TestId;
use crate::gate::patch::parse_patch;
use crate::probe::seed::{self, Seed, SeedChoice};
use crate::probe::summary::{Options, ProbeOutput, RunInput};
use crate::probe::{collect, exec, progress, select, summary};
use anyhow::Context as _;
use chrono::NaiveDate;
use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default number of runs.
const DEFAULT_RUNS: u32 = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Rotation {
    Daily,
    Weekly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProbeFormat {
    Text,
    Json,
}

/// `flakegate probe`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Examples:\n  flakegate probe --runs 7 --out probe.json -- python -m pytest -p no:cacheprovider --report-log={results}\n  \
                        flakegate probe --runs 7 -- pytest --junitxml={results} -o junit_family=xunit1\n  \
                        flakegate probe --from ci-runs/ --out probe.json"
)]
pub struct ProbeArgs {
    /// How many times to run the command (K, at least 2).
    #[arg(long, value_name = "K", conflicts_with = "from")]
    pub runs: Option<u32>,
    /// How many runs at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,
    /// Write the probe JSON here (the gate reads it: `flakegate check --probe FILE`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// What to print on standard output (default: text when --out is given or stdout is a terminal, else json).
    #[arg(long, value_enum)]
    pub format: Option<ProbeFormat>,
    /// The seed every run gets as FLAKEGATE_SEED and PYTHONHASHSEED (0..=4294967295).
    #[arg(long, value_name = "N", conflicts_with = "seed_rotation")]
    pub seed: Option<u32>,
    /// Derive the seed from the UTC date, so it rotates on a schedule.
    #[arg(long, value_enum, value_name = "daily|weekly")]
    pub seed_rotation: Option<Rotation>,
    /// Kill a run after this many seconds; it is reported as timed out.
    #[arg(long, value_name = "SECS")]
    pub timeout_per_run: Option<f64>,
    /// Probe only these tests (node ids appended to the command).
    #[arg(long, value_name = "NODEID", num_args = 1..)]
    pub only: Vec<String>,
    /// Probe only the tests that witness the patch's changed lines (needs --diff and --coverage).
    #[arg(long, requires_all = ["diff", "coverage"])]
    pub witnesses_of: bool,
    /// The patch, for --witnesses-of.
    #[arg(long, value_name = "FILE", requires = "witnesses_of")]
    pub diff: Option<PathBuf>,
    /// Per-test coverage (coverage.json or .coverage), for --witnesses-of.
    #[arg(long, value_name = "FILE", requires = "witnesses_of")]
    pub coverage: Option<PathBuf>,
    /// Keep the runs' result files (run-1.jsonl …) and logs (logs/run-1.log) in this new or empty directory.
    #[arg(long, value_name = "DIR", conflicts_with = "from")]
    pub keep: Option<PathBuf>,
    /// Compute the probe from existing result files instead (each file one run; directories are read in natural order).
    #[arg(long, value_name = "DIR|FILE", num_args = 1..)]
    pub from: Vec<PathBuf>,
    /// The ledger, so frozen tests get no suggestion (default: the config's ledger path, when it exists).
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// Policy file (default .github/flakegate.yml when it exists): ledger path, max_freeze_days.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Suggested freezes expire this many days after today (default 14, at most the policy's max_freeze_days).
    #[arg(long, value_name = "DAYS")]
    pub days: Option<u32>,
    /// The UTC date to record and to rotate seeds by (default: today).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub today: Option<NaiveDate>,
    /// The test command and its arguments, after `--`. `{results}` in an argument becomes the run's results path
    /// (also in $FLAKEGATE_RESULTS).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn read_ledger(explicit: Option<&Path>, config: &Config) -> anyhow::Result<Option<Ledger>> {
    let (path, explicit) = match explicit {
        Some(p) => (p.to_path_buf(), true),
        None => (PathBuf::from(&config.ledger), false),
    };
    if !explicit && !path.is_file() {
        return Ok(None);
    }
    let name = path.display().to_string();
    let parsed = evidence::read_text(&path)
        .map_err(|e| vec![e])
        .and_then(|(t, _)| parse_ledger(&name, &t, config.policy.max_freeze_days));
    match parsed {
        Ok(l) => Ok(Some(l)),
        Err(errors) if explicit => {
            let msgs: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            Err(unusable(format!("the ledger is invalid:\n  {}", msgs.join("\n  "))))
        }
        Err(errors) => {
            eprintln!(
                "flakegate probe: warning: ignoring the invalid ledger {name} ({}); every unstable test gets a suggestion",
                errors[0]
            );
            Ok(None)
        }
    }
}

/// A fresh seed for a probe without --seed or --seed-rotation.
fn fresh_seed() -> u32 {
    use sha2::Digest;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let h = sha2::Sha256::digest(format!("{}:{}:{}", now.as_secs(), now.subsec_nanos(), std::process::id()).as_bytes());
    u32::from_be_bytes([h[0], h[1], h[2], h[3]])
}

/// The tests to restrict the runs to: `--only` plus `--witnesses-of`.
/// Ok(None): no restriction.
fn selection(args: &ProbeArgs) -> anyhow::Result<Option<Vec<TestId>>> {
    let mut sel: BTreeSet<TestId> = args.only.iter().map(TestId::new).collect();
    if args.witnesses_of {
        let (Some(diff), Some(cov)) = (&args.diff, &args.coverage) else {
            return Err(unusable("--witnesses-of needs --diff FILE and --coverage FILE"));
        };
        let bytes = std::fs::read(diff).map_err(|e| unusable(format!("{}: cannot read: {e}", diff.display())))?;
        let patch = parse_patch(&diff.display().to_string(), &bytes)?;
        let sources = evidence::EvidenceSources {
            coverage: Some(cov.clone()),
            ..Default::default()
        };
        let loaded = evidence::load_evidence(&sources, &patch, None, &Default::default());
        if let Some(p) = loaded.evidence.problems.first() {
            return Err(unusable(p.to_string()));
        }
        let coverage = loaded
            .evidence
            .coverage
            .ok_or_else(|| unusable(format!("{}: no coverage read", cov.display())))?;
        if !coverage.has_test_contexts {
            return Err(unusable(format!(
                "{}: no test contexts recorded (run pytest with --cov-context=test): cannot tell which tests witness the patch",
                cov.display()
            )));
        }
        sel.extend(select::witnesses(&patch, &coverage));
    } else if sel.is_empty() {
        return Ok(None);
    }
    Ok(Some(sel.into_iter().collect()))
}

/// `flakegate probe`: returns the exit status (0 conclusive, 1 inconclusive).
pub fn run(args: ProbeArgs) -> anyhow::Result<i32> {
    let today = args.today.unwrap_or_else(today_utc);
    let config = local_config(args.config.as_deref())?;
    let days = freeze_days(args.days, &config)?;
    let ledger = read_ledger(args.ledger.as_deref(), &config)?;
    let probe_file = args.out.as_ref().map(|p| p.display().to_string());

    let from_mode = !args.from.is_empty();
    let seed: Option<Seed> = match (args.seed, args.seed_rotation) {
        (Some(v), _) => Some(seed::resolve(SeedChoice::Fixed(v), today)),
        (None, Some(Rotation::Daily)) => Some(seed::resolve(SeedChoice::Daily, today)),
        (None, Some(Rotation::Weekly)) => Some(seed::resolve(SeedChoice::Weekly, today)),
        (None, None) if from_mode => None,
        (None, None) => Some(seed::resolve(SeedChoice::Fresh(fresh_seed()), today)),
    };

    let only = selection(&args)?;
    let known: BTreeSet<TestId> = only.iter().flatten().cloned().collect();

    let (inputs, command): (Vec<RunInput>, Option<Vec<String>>) = if from_mode {
        if !args.command.is_empty() {
            return Err(unusable("--from reads existing result files: give no command after --"));
        }
        if only.is_some() {
            return Err(unusable(
                "--only and --witnesses-of restrict live runs; they do not apply to --from",
            ));
        }
        check_shards(&args.from)?;
        let files = collect::list_files(&args.from).map_err(unusable)?;
        (collect::import_files(&files, &known), None)
    } else {
        if args.command.is_empty() {
            return Err(unusable(
                "no test command: give it after --, e.g. flakegate probe --runs 7 -- python -m pytest --report-log={results}",
            ));
        }
        let runs = args.runs.unwrap_or(DEFAULT_RUNS);
        if runs < 2 {
            return Err(unusable(
                "--runs must be at least 2: one run cannot tell stable from unstable",
            ));
        }
        if args.jobs == 0 {
            return Err(unusable("--jobs must be at least 1"));
        }
        let timeout = match args.timeout_per_run {
            Some(t) if !(t.is_finite() && t > 0.0) => {
                return Err(unusable("--timeout-per-run must be a positive number of seconds"))
            }
            Some(t) => Some(Duration::from_secs_f64(t)),
            None => None,
        };
        if let Some(sel) = &only {
            if sel.is_empty() {
                let mut out = summary::summarize(
                    &[],
                    &options(
                        today,
                        days,
                        seed.as_ref(),
                        Some(&args.command),
                        only.as_deref(),
                        ledger.as_ref(),
                        probe_file.as_deref(),
                    ),
                );
                out.why_inconclusive = Some("no test witnesses the patch's changed lines: nothing to probe".into());
                return finish(&args, &out);
            }
        }
        let seed_v = seed.as_ref().map(|s| s.value).unwrap_or(0);
        let scratch;
        let dir = match &args.keep {
            Some(d) => {
                prepare_keep(d)?;
                // Absolute, so a command that changes directory still finds it.
                std::fs::canonicalize(d).with_context(|| format!("resolving {}", d.display()))?
            }
            None => {
                scratch = exec::ScratchDir::new().context("creating a scratch directory for the runs' results")?;
                scratch.path().to_path_buf()
            }
        };
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
        let plan = exec::RunPlan {
            results_ext: exec::guess_ext(&args.command).to_string(),
            command: args.command.clone(),
            extra_args: only.iter().flatten().map(|t| t.to_string()).collect(),
            runs,
            jobs: args.jobs,
            seed: seed_v,
            timeout,
            results_dir: dir.clone(),
            logs_dir: logs,
            cwd: None,
            env: Vec::new(),
        };
        let mut progress = progress::Progress::new(runs, args.jobs.min(runs as usize), std::io::stderr().is_terminal());
        let records = exec::execute(&plan, &mut |ev| progress.on_event(ev));
        progress.finish();
        let inputs = collect::read_runs(&records, &known, args.keep.is_some());
        (inputs, Some(args.command.clone()))
    };

    let out = summary::summarize(
        &inputs,
        &options(
            today,
            days,
            seed.as_ref(),
            command.as_deref(),
            only.as_deref(),
            ledger.as_ref(),
            probe_file.as_deref(),
        ),
    );
    finish(&args, &out)
}

/// `--from DIR...` where the directories are shards of one probe from a CI matrix (each with
/// a meta.json): they must all name the same `base_sha`; a directory without meta.json beside
/// ones with it is an error. (That every run collected the same tests is the summary's check:
/// a run of another collection is unusable and named.)
fn check_shards(from: &[PathBuf]) -> anyhow::Result<()> {
    let metas: Vec<(&PathBuf, Option<PathBuf>)> = from
        .iter()
        .filter(|p| p.is_dir())
        .map(|d| (d, Some(d.join("meta.json")).filter(|m| m.is_file())))
        .collect();
    if metas.iter().all(|(_, m)| m.is_none()) {
        return Ok(());
    }
    let mut first: Option<(String, String)> = None;
    for (dir, meta) in metas {
        let Some(meta) = meta else {
            return Err(unusable(format!(
                "{}: no meta.json, but other --from directories are CI shards with one: every shard must say which base sha it ran",
                dir.display()
            )));
        };
        let name = meta.display().to_string();
        let (text, _) = evidence::read_text(&meta)?;
        let m = crate::gate::input::parse_meta(&name, &text)?;
        let Some(sha) = m.base_sha.filter(|s| !s.trim().is_empty()) else {
            return Err(unusable(format!(
                "{name}: expected \"base_sha\": shards are merged only at one base sha"
            )));
        };
        match &first {
            None => first = Some((name, sha)),
            Some((f, s)) if !s.eq_ignore_ascii_case(&sha) => {
                return Err(unusable(format!(
                    "probe shards ran different base commits: {name} says {sha}, {f} says {s}"
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn options<'a>(
    today: NaiveDate,
    days: u32,
    seed: Option<&'a Seed>,
    command: Option<&'a [String]>,
    only: Option<&'a [TestId]>,
    ledger: Option<&'a Ledger>,
    probe_file: Option<&'a str>,
) -> Options<'a> {
    Options {
        today,
        days,
        seed,
        command,
        only,
        ledger,
        probe_file,
    }
}

fn prepare_keep(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        let mut rd =
            std::fs::read_dir(dir).map_err(|e| unusable(format!("--keep {}: cannot list: {e}", dir.display())))?;
        if rd.next().is_some() {
            return Err(unusable(format!(
                "--keep {}: the directory is not empty; give a new or empty one, so that --from {} later reads exactly these runs",
                dir.display(),
                dir.display()
            )));
        }
    } else {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

fn finish(args: &ProbeArgs, out: &ProbeOutput) -> anyhow::Result<i32> {
    let json = out.to_json();
    if let Some(path) = &args.out {
        write_atomic(path, json.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    let format = args
        .format
        .unwrap_or(if args.out.is_some() || std::io::stdout().is_terminal() {
            ProbeFormat::Text
        } else {
            ProbeFormat::Json
        });
    let text = match format {
        ProbeFormat::Json => json,
        ProbeFormat::Text => {
            let mut t = summary::render_text(out);
            if let Some(p) = &args.out {
                t.push_str(&format!("\nprobe JSON written to {}\n", p.display()));
            }
            t
        }
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes()).ok();
    stdout.flush().ok();
    Ok(if out.inconclusive { 1 } else { 0 })
}
