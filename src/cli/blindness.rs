//! `flakegate blindness`: the whole suite's coverage from an evidence directory, the ledger
//! and the config as `check` finds them, the probe and (`--history`) the flake history, the
//! sources under `--source`; then [`crate::gate::blindness::map`] and one of three renderings.

use super::{local_config, unusable, write_atomic};
use crate::evidence::{load_every_file, read_text, EvidenceSources};
use crate::gate::blindness::{self, BlindnessInput, BlindnessMap};
use crate::gate::history::Stabilities;
use crate::gate::ledger::{parse_ledger, Ledger};
use crate::present::blindness as render;
use anyhow::Context as _;
use chrono::NaiveDate;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BlindnessFormat {
    /// The map as JSON (docs/blindness.md; `flakegate schema blindness`).
    Json,
    /// For a person: the owners, the frozen and unstable tests, the files.
    Markdown,
    /// A self-contained report directory: index.html and one page per file (needs --out DIR).
    Html,
}

#[derive(Debug, clap::Args)]
pub struct BlindnessArgs {
    /// Evidence directory of a full-suite run: coverage.json, .coverage or LCOV with per-test
    /// contexts; probe/ or probe.json; results/; meta.json.
    pub dir: PathBuf,
    /// The freeze ledger (default: the config's ledger path in the current directory, when there).
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// Policy file with the shape of .github/flakegate.yml (default: that file, when there).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Coverage file, instead of the one in DIR.
    #[arg(long, value_name = "FILE")]
    pub coverage: Option<PathBuf>,
    /// Judge stability with the flake history in this SQLite file too (read only).
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// The repository the history belongs to (as for `check --history`).
    #[arg(long, value_name = "OWNER/NAME", requires = "history")]
    pub repository: Option<String>,
    /// The source tree the coverage's paths are relative to (read for statements and for the
    /// HTML's pages; nothing outside it is read).
    #[arg(long, value_name = "ROOT", default_value = ".")]
    pub source: PathBuf,
    /// Judge expiries as of this UTC date (default: today).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub today: Option<NaiveDate>,
    #[arg(long, value_enum, default_value_t = BlindnessFormat::Json)]
    pub format: BlindnessFormat,
    /// Write here instead of standard output (for html: the report's directory, required).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
}

/// `flakegate blindness`: 0 when the map was written, 2 for unusable input.
pub fn run(args: BlindnessArgs) -> anyhow::Result<i32> {
    if args.format == BlindnessFormat::Html && args.out.is_none() {
        return Err(unusable("--format html writes a directory: give --out DIR"));
    }
    let (map, sources) = compute(&args)?;
    match args.format {
        BlindnessFormat::Json => emit(args.out.as_deref(), &render::json(&map)),
        BlindnessFormat::Markdown => emit(args.out.as_deref(), &render::markdown(&map)?),
        BlindnessFormat::Html => {
            let dir = args.out.as_deref().expect("checked above");
            let pages = render::html(&map, &sources)?;
            std::fs::create_dir_all(dir).map_err(|e| unusable(format!("{}: cannot create: {e}", dir.display())))?;
            for (name, page) in &pages {
                let p = dir.join(name);
                write_atomic(&p, page.as_bytes())
                    .map_err(|e| unusable(format!("{}: cannot write: {e}", p.display())))?;
            }
            eprintln!(
                "flakegate: blindness report: {} ({} pages)",
                dir.join("index.html").display(),
                pages.len()
            );
            Ok(0)
        }
    }
}

fn emit(out: Option<&Path>, text: &str) -> anyhow::Result<i32> {
    match out {
        Some(p) => {
            write_atomic(p, text.as_bytes()).map_err(|e| unusable(format!("{}: cannot write: {e}", p.display())))?
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes()).ok();
            stdout.flush().ok();
        }
    }
    Ok(0)
}

/// The map, and what the HTML shows of each file's source.
fn compute(args: &BlindnessArgs) -> anyhow::Result<(BlindnessMap, render::Sources)> {
    let today = args.today.unwrap_or_else(super::today_utc);
    if !args.dir.is_dir() {
        return Err(unusable(format!(
            "{}: no such evidence directory (expected coverage.json, .coverage or LCOV in it)",
            args.dir.display()
        )));
    }
    let root = std::fs::canonicalize(&args.source)
        .map_err(|e| unusable(format!("{}: --source: {e}", args.source.display())))?;
    let config = local_config(args.config.as_deref())?;
    let mut notes = Vec::new();
    let ledger = read_ledger(args.ledger.as_deref(), &config, &mut notes)?;
    let sources = EvidenceSources {
        dir: Some(args.dir.clone()),
        coverage: args.coverage.clone(),
        ..EvidenceSources::default()
    }
    .resolve();
    if args.history.is_none() {
        let keep_texts = args.format == BlindnessFormat::Html;
        if let Some(done) = streamed(&sources, &ledger, &config, &root, keep_texts, today, &mut notes)? {
            return Ok(done);
        }
    }
    let mut loaded = load_every_file(&sources, Some(&ledger)).evidence;
    let coverage_file = loaded.coverage_file.clone().unwrap_or_default();
    let Some(mut coverage) = loaded.coverage.take() else {
        return Err(match loaded.problems.into_iter().next() {
            Some(e) => e.into(),
            None => unusable(format!(
                "{}: no coverage in it (expected coverage.json, .coverage, coverage.info or coverage/)",
                args.dir.display()
            )),
        });
    };
    for p in &loaded.problems {
        notes.push(format!("not used: {p}"));
    }
    let read = read_sources(&root, &mut coverage.files);
    notes.extend(read.summary_notes(&root));
    let history = match &args.history {
        Some(path) => Some(read_history(
            path,
            args.repository.as_deref(),
            &coverage,
            &loaded,
            &config,
            today,
        )?),
        None => None,
    };
    let input = BlindnessInput {
        coverage: &coverage,
        coverage_file: &coverage_file,
        ledger: &ledger,
        stab: Stabilities::new(loaded.probe.as_ref(), history.as_ref()),
        results: loaded.results.as_ref(),
        policy: &config.policy,
        sources: &read.texts,
        today,
    };
    let mut map = blindness::map(&input)?;
    finish_notes(&mut map, &read, loaded.probe.is_none() && history.is_none(), notes);
    map.sha = loaded.meta.as_ref().and_then(|m| m.head_sha.clone());
    Ok((
        map,
        render::Sources {
            texts: read.texts,
            notes: read.notes,
        },
    ))
}

/// The ledger: `--ledger FILE`, else the config's ledger path when it is a file here.
fn read_ledger(
    path: Option<&Path>,
    config: &crate::gate::config::Config,
    notes: &mut Vec<String>,
) -> anyhow::Result<Ledger> {
    let default = Path::new(&config.ledger);
    let p = match path {
        Some(p) => p,
        None if default.is_file() => default,
        None => {
            notes.push(format!(
                "no ledger given (--ledger FILE) and none at {}: no test is frozen",
                config.ledger
            ));
            return Ok(Ledger::default());
        }
    };
    let (text, _) = read_text(p)?;
    parse_ledger(&p.display().to_string(), &text, config.policy.max_freeze_days)
        .map_err(|errs| unusable(errs.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")))
}

/// The sources read under the root, and why the others were not.
struct Read {
    texts: BTreeMap<String, String>,
    /// Path → why its source is not shown.
    notes: BTreeMap<String, String>,
    outside: Vec<String>,
    missing: Vec<String>,
    not_utf8: Vec<String>,
}

impl Read {
    /// One note per kind of unread source, naming a few.
    fn summary_notes(&self, root: &Path) -> Vec<String> {
        let name = |what: &str, paths: &[String]| {
            let shown: Vec<&str> = paths.iter().take(5).map(String::as_str).collect();
            let more = paths.len().saturating_sub(shown.len());
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("{} {what}: {}{more}", paths.len(), shown.join(", "))
        };
        let mut out = Vec::new();
        if !self.outside.is_empty() {
            out.push(name(
                &format!("measured paths outside the source tree {} (not read)", root.display()),
                &self.outside,
            ));
        }
        if !self.missing.is_empty() {
            out.push(name(
                &format!("sources not found under {}", root.display()),
                &self.missing,
            ));
        }
        if !self.not_utf8.is_empty() {
            out.push(name(
                "sources that are not UTF-8 (lines shown by number only)",
                &self.not_utf8,
            ));
        }
        out
    }
}

/// Read each measured file's source under `root` ([`read_one`]), renaming absolute paths
/// under the root ([`relative_to`]).
fn read_sources(root: &Path, files: &mut BTreeMap<String, crate::gate::coverage::FileCoverage>) -> Read {
    let mut read = Read {
        texts: BTreeMap::new(),
        notes: BTreeMap::new(),
        outside: Vec::new(),
        missing: Vec::new(),
        not_utf8: Vec::new(),
    };
    let absolute: Vec<String> = files.keys().filter(|p| Path::new(p).is_absolute()).cloned().collect();
    for p in absolute {
        let rel = relative_to(root, &p);
        if rel != p {
            if let Some(fc) = files.remove(&p) {
                files.entry(rel).or_insert(fc);
            }
        }
    }
    for path in files.keys() {
        if let Some(t) = read_one(root, path, &mut read) {
            read.texts.insert(path.clone(), t);
        }
    }
    read
}

/// An absolute coverage path under the root, as the coverage's `relative_files` would have
/// written it; any other path as it is.
fn relative_to(root: &Path, path: &str) -> String {
    match Path::new(path).strip_prefix(root) {
        Ok(rel) if Path::new(path).is_absolute() => rel.to_string_lossy().replace('\\', "/"),
        _ => path.to_string(),
    }
}

/// The source of one measured file under `root`, or None with the reason noted in `read`.
/// A path outside the root, or climbing out of it (`..`, a symbolic link), is never read.
fn read_one(root: &Path, path: &str, read: &mut Read) -> Option<String> {
    let rel = Path::new(path);
    let climbs = rel.is_absolute()
        || rel
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_) | Component::RootDir));
    let full = root.join(rel);
    // A path that does not resolve is not read either: it is missing.
    let inside = !climbs
        && match std::fs::canonicalize(&full) {
            Ok(c) => c.starts_with(root),
            Err(_) => true,
        };
    if !inside {
        read.outside.push(path.to_string());
        read.notes
            .insert(path.to_string(), "outside the source tree: not read".into());
        return None;
    }
    match std::fs::read(&full) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(t) => Some(t),
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                read.not_utf8.push(path.to_string());
                read.notes.insert(
                    path.to_string(),
                    format!("the source is not UTF-8 (an invalid byte at offset {at}): lines are shown by number only"),
                );
                None
            }
        },
        Err(e) => {
            read.missing.push(path.to_string());
            let why = if e.kind() == std::io::ErrorKind::NotFound {
                "the source was not found under the source tree".to_string()
            } else {
                format!("the source cannot be read: {e}")
            };
            read.notes.insert(path.to_string(), why);
            None
        }
    }
}

/// A coverage.json mapped and read one file at a time, each file judged as it is read and
/// then dropped: the map's memory is its own, not the coverage's. None when the coverage is
/// not a coverage.json that can be mapped (the whole coverage is read instead).
#[allow(clippy::too_many_arguments)]
fn streamed(
    sources: &EvidenceSources,
    ledger: &Ledger,
    config: &crate::gate::config::Config,
    root: &Path,
    keep_texts: bool,
    today: NaiveDate,
    notes: &mut Vec<String>,
) -> anyhow::Result<Option<(BlindnessMap, render::Sources)>> {
    let Some(cov_path) = sources.coverage.as_deref().filter(|p| p.is_file()) else {
        return Ok(None);
    };
    if !looks_like_json(cov_path) {
        return Ok(None);
    }
    // The other parts first: the probe and the head results judge the tests.
    let rest = EvidenceSources {
        dir: None,
        coverage: None,
        ..sources.clone()
    };
    let loaded = load_every_file(&rest, Some(ledger)).evidence;
    for p in &loaded.problems {
        notes.push(format!("not used: {p}"));
    }
    let judging = blindness::Judging {
        ledger,
        stab: Stabilities::new(loaded.probe.as_ref(), None),
        results: loaded.results.as_ref(),
        policy: &config.policy,
        today,
    };
    let mut mapper = blindness::Mapper::new(judging, Default::default());
    let mut read = Read {
        texts: BTreeMap::new(),
        notes: BTreeMap::new(),
        outside: Vec::new(),
        missing: Vec::new(),
        not_utf8: Vec::new(),
    };
    let matcher = crate::gate::coverage::PathMatcher::every_file();
    let cov = crate::evidence::read_json_mapped_each(cov_path, &matcher, &mut |path, fc| {
        let path = relative_to(root, &path);
        let text = read_one(root, &path, &mut read);
        mapper.add_file(&path, &fc, text.as_deref());
        if let (true, Some(t)) = (keep_texts, text) {
            read.texts.insert(path, t);
        }
    });
    let Some(cov) = cov else {
        return Ok(None);
    };
    let cov = cov?;
    let name = cov_path.display().to_string();
    let mut map = mapper.finish(&name, &cov)?;
    notes.extend(read.summary_notes(root));
    finish_notes(&mut map, &read, loaded.probe.is_none(), std::mem::take(notes));
    map.sha = loaded.meta.as_ref().and_then(|m| m.head_sha.clone());
    Ok(Some((
        map,
        render::Sources {
            texts: read.texts,
            notes: read.notes,
        },
    )))
}

/// Does the file start like a JSON object (not a SQLite database, not an LCOV tracefile)?
fn looks_like_json(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    head[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// The notes of the map and of its files.
fn finish_notes(map: &mut BlindnessMap, read: &Read, no_stability: bool, mut notes: Vec<String>) {
    if no_stability {
        notes.push(
            "no probe in the evidence and no --history: only the ledger says which tests are not witnesses".into(),
        );
    }
    for f in &mut map.files {
        f.note = read.notes.get(&f.path).cloned();
    }
    map.notes.extend(notes);
}

/// The flake history's judgement of every test the coverage names.
fn read_history(
    path: &Path,
    repository: Option<&str>,
    coverage: &crate::gate::coverage::Coverage,
    ev: &crate::gate::Evidence,
    config: &crate::gate::config::Config,
    today: NaiveDate,
) -> anyhow::Result<crate::gate::history::History> {
    super::history_file::runtime()?.block_on(async {
        let store = super::history_file::open(path, repository).await?;
        let tests: Vec<_> = crate::gate::history::tests_of_interest(Some(coverage), ev.results.as_ref())
            .into_iter()
            .collect();
        let now = super::history_file::noon(today);
        let query = crate::store::HistoryQuery {
            tests: &tests,
            base_sha: ev.meta.as_ref().and_then(|m| m.base_sha.as_deref()),
            head_sha: ev.meta.as_ref().and_then(|m| m.head_sha.as_deref()),
            now,
            policy: config.history,
            exclude: None,
        };
        store
            .history_for(super::history_file::LOCAL_REPO_ID, &query)
            .await
            .with_context(|| format!("{}: cannot read the flake history", path.display()))
    })
}
