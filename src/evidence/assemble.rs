//! The one pipeline both faces run: config → patch → base ledger → evidence →
//! head ledger → CODEOWNERS → `gate::evaluate`. Only where the files come from
//! differs — `git show` and files named on the command line (`flakegate check`),
//! or the contents API and the evidence artifact (the App) — and that is the
//! [`Sources`] trait. Every file read is digested into the record in the order
//! it is read; every absence the gate should mention is a note.

use super::{load_evidence, EvidenceSources};
use crate::gate::codeowners::{CodeOwners, CODEOWNERS_PATHS};
use crate::gate::config::{parse_config, Config};
use crate::gate::coverage::statements::PythonStatements;
use crate::gate::coverage::{Coverage, CoverageFormat};
use crate::gate::error::text_of;
use crate::gate::ledger::edit::{ledger_sides, LedgerEdit, LedgerSides, LedgerTexts};
use crate::gate::ledger::parse_ledger;
use crate::gate::patch::parse_patch;
use crate::gate::{evaluate as gate_evaluate, Evidence, GateInput, InputDigest, InputError, Ledger, Report};
use chrono::NaiveDate;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use tokio::sync::Semaphore;

/// A file as a face read it: the name the record and messages use (`REV:path`,
/// a path on disk, `pull request 7 diff`) and its bytes.
#[derive(Debug, Clone)]
pub struct Named {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl Named {
    pub fn new(name: impl Into<String>, bytes: Vec<u8>) -> Self {
        Named {
            name: name.into(),
            bytes,
        }
    }
}

/// Where a face's files come from. Read at the base: the config, the ledger the
/// gate obeys and CODEOWNERS; at the head: only the ledger as the patch leaves
/// it, to report its edits (never to obey them).
// Callers are concrete (the command line's git reader, the App's GitHub reader),
// so the futures' Send-ness is known where it matters.
#[allow(async_fn_in_trait)]
pub trait Sources {
    /// The face's own error (an unusable input on the command line; a retryable
    /// or fatal failure in the App).
    type Error;
    /// The repository configuration; `None`: there is none, defaults apply.
    async fn config(&self) -> Result<Option<Named>, Self::Error>;
    /// The patch: a unified diff, or GitHub's pull-request files listing.
    async fn patch(&self) -> Result<Named, Self::Error>;
    /// The ledger the gate obeys, or a note saying why there is none (then no test is frozen).
    async fn base_ledger(&self, path: &str) -> Result<Result<Named, String>, Self::Error>;
    /// Where the evidence files are on disk.
    async fn evidence(&self) -> Result<EvidenceSources, Self::Error>;
    /// The ledger as the patch leaves it, when this face knows the head's files (`None`:
    /// the head has none, or the face does not know the head: [`Sources::knows_head`]).
    async fn head_ledger(&self, path: &str) -> Result<Option<Named>, Self::Error>;
    /// Whether this face reads the head's files. Without them the patch's ledger edits are
    /// read by applying its hunks to the base ledger it was given.
    fn knows_head(&self) -> bool {
        true
    }
    /// A file at the base (CODEOWNERS), `None` when it is absent or this face reads no base.
    async fn base_file(&self, path: &str) -> Result<Option<Named>, Self::Error>;
    /// A file as the head has it (a changed source file, or the test code the trust rules
    /// read), `None` when it is absent or this face does not know the head's files (then
    /// headers are judged from coverage alone, and tests from the diff).
    async fn head_file(&self, path: &str) -> Result<Option<Named>, Self::Error>;
}

/// At most this many head source files are read for one judgement, …
const MAX_SOURCE_FILES: usize = 200;
/// … each at most this large (a larger one is judged from coverage alone).
const MAX_SOURCE_BYTES: usize = 4 << 20;
/// Bytes of head sources held for one evaluation: every changed source file is asked for
/// before the coverage is read, so a patch of many large files stops here, not at
/// `MAX_SOURCE_FILES × MAX_SOURCE_BYTES`.
const MAX_SOURCE_TOTAL_BYTES: usize = 32 << 20;

/// Why the pipeline stopped before the gate could judge: the face decides how to say it.
#[derive(Debug)]
pub enum AssembleError<E> {
    /// Reading a file failed.
    Source(E),
    /// The repository configuration is invalid.
    Config(InputError),
    /// The patch is unreadable.
    Patch(InputError),
}

impl<E> From<E> for AssembleError<E> {
    fn from(e: E) -> Self {
        AssembleError::Source(e)
    }
}

/// The configuration and the digest of the file it came from.
#[derive(Debug, Clone, Default)]
pub struct ConfigRead {
    pub config: Config,
    pub digest: Option<InputDigest>,
}

impl ConfigRead {
    /// The configuration from its file (`None`: defaults), with the file's digest.
    pub fn from_file(file: Option<&Named>) -> Result<ConfigRead, InputError> {
        match file {
            None => Ok(ConfigRead::default()),
            Some(f) => Ok(ConfigRead {
                config: parse_config_bytes(&f.name, &f.bytes)?,
                digest: Some(InputDigest::of("config", &f.name, &f.bytes)),
            }),
        }
    }
}

/// Bytes of `.github/flakegate.yml` (or a `--config` file) → the config, or a located error.
fn parse_config_bytes(name: &str, bytes: &[u8]) -> Result<Config, InputError> {
    parse_config(name, &text_of(name, bytes)?)
}

/// A ledger file's bytes, validated: not UTF-8 is one more problem, located.
fn parse_ledger_bytes(name: &str, bytes: &[u8], max_freeze_days: Option<u32>) -> Result<Ledger, Vec<InputError>> {
    text_of(name, bytes)
        .map_err(|e| vec![e])
        .and_then(|t| parse_ledger(name, &t, max_freeze_days))
}

/// Step 1: the configuration. The App reads it before anything else (it names the
/// evidence workflow and artifact), so it is a step of its own.
pub async fn read_config<S: Sources>(src: &S) -> Result<ConfigRead, AssembleError<S::Error>> {
    let file = src.config().await?;
    ConfigRead::from_file(file.as_ref()).map_err(AssembleError::Config)
}

/// What the gate is told about the judgement besides the files.
#[derive(Debug, Clone)]
pub struct Judging {
    /// Expiries are judged as of this UTC date.
    pub today: NaiveDate,
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
    /// The workflow file that produced the evidence, when known.
    pub workflow: Option<String>,
    /// The flake history to judge with (and record into), when the face keeps one.
    pub history: Option<HistoryAccess>,
}

/// A repository's flake history in the store: read for the tests this evidence names before
/// the verdict, and — when `record` says under which run — added to after it (only from
/// evidence every trust rule accepted: `gate::history::observations`).
#[derive(Debug, Clone)]
pub struct HistoryAccess {
    pub store: crate::store::Store,
    pub repo_id: i64,
    pub now: chrono::DateTime<chrono::Utc>,
    /// The run key (each run attempt is recorded once) and where the observations come from.
    pub record: Option<(String, crate::gate::history::RecordContext)>,
    /// The run key of the run being judged when it may be recorded already (a retry, a
    /// re-evaluation): the history is read without its own observations.
    pub exclude: Option<String>,
}

/// The rest of the pipeline: patch → base ledger → evidence → head ledger →
/// CODEOWNERS → the gate's verdict, with the notes of what was absent.
pub async fn evaluate<S: Sources>(
    src: &S,
    config: &ConfigRead,
    judging: Judging,
) -> Result<Report, AssembleError<S::Error>> {
    let history = judging.history.clone();
    let (report, recording) = evaluate_deferred(src, config, judging).await?;
    if let (Some(h), Some(r)) = (history, recording) {
        record(&h, r).await;
    }
    Ok(report)
}

/// What a judgement adds to the flake history, to be written with [`record`] once the caller
/// has judged everything that reads the history (pull requests sharing one head must not read
/// each other's copy of the same run).
#[derive(Debug, Clone)]
pub struct Pending {
    pub run_key: String,
    pub recording: crate::gate::history::Recording,
}

/// Write a judgement's observations into the history (once per run key). Returns what was
/// done, one line each (also logged; the report does not carry it, so that judging the same
/// run again gives the same record).
pub async fn record(h: &HistoryAccess, pending: Pending) -> Vec<String> {
    let mut said = pending.recording.skipped;
    if !pending.recording.observations.is_empty() {
        match h
            .store
            .record_history_judged(
                h.repo_id,
                &pending.run_key,
                &pending.recording.observations,
                &pending.recording.judged,
                h.now,
            )
            .await
        {
            Ok(Some(n)) => said.push(format!("{n} observations added to the flake history")),
            Ok(None) => said.push(format!("run {} was recorded before: nothing added", pending.run_key)),
            Err(e) => said.push(format!(
                "the flake history could not be written (nothing of this run was recorded): {e:#}"
            )),
        }
    }
    for line in &said {
        tracing::info!(run_key = %pending.run_key, "flake history: {line}");
    }
    said
}

/// [`evaluate`], leaving what it would add to the history to the caller.
pub async fn evaluate_deferred<S: Sources>(
    src: &S,
    config: &ConfigRead,
    judging: Judging,
) -> Result<(Report, Option<Pending>), AssembleError<S::Error>> {
    let config_ = &config.config;
    let mut inputs: Vec<InputDigest> = config.digest.iter().cloned().collect();
    let mut notes: Vec<String> = Vec::new();

    let diff = src.patch().await?;
    inputs.push(InputDigest::of("diff", &diff.name, &diff.bytes));
    let diff_name = diff.name.clone();
    // A diff can be a hundred megabytes: parsed off the runtime, like the evidence below.
    let patch = off_the_runtime(move || parse_patch(&diff.name, &diff.bytes))
        .await
        .map_err(AssembleError::Patch)?;

    // Files are fetched on the runtime; reading and judging them is CPU and disk work
    // (coverage files reach gigabytes), done off it.
    let base_ledger = src.base_ledger(&config_.ledger).await?;
    let sources = src.evidence().await?;
    let head_ledger = src.head_ledger(&config_.ledger).await?;
    let knows_head = src.knows_head();
    // The head's sources before the coverage: they say which lines' witnesses to keep.
    let head = fetch_head_sources(src, &patch).await?;
    let tests = fetch_test_sources(src, &patch).await?;
    let mut codeowners = None;
    for path in CODEOWNERS_PATHS {
        if let Some(f) = src.base_file(path).await? {
            codeowners = Some(f);
            break;
        }
    }
    let config_ = config_.clone();
    let loaded = off_the_runtime(move || {
        // What the patch did to the ledger, first: an edit that cannot be read stops here,
        // before gigabytes of coverage are read for nothing.
        let head_text = knows_head.then_some(head_ledger.as_ref());
        let given = base_ledger.as_ref().ok().filter(|_| !knows_head);
        let ledger_edit = read_ledger_edit(&patch, &config_.ledger, head_text, given, &mut notes)
            .map_err(|why| InputError::new(crate::gate::Location::file(diff_name), why))?;
        // The ledger at the base: never the head's, which the patch controls.
        let ledger: Result<Ledger, Vec<InputError>> = match base_ledger {
            Ok(f) => {
                inputs.push(InputDigest::of("ledger", &f.name, &f.bytes));
                parse_ledger_bytes(&f.name, &f.bytes, config_.policy.max_freeze_days)
            }
            Err(note) => {
                notes.push(note);
                Ok(Ledger::default())
            }
        };
        let loaded = load_evidence(&sources, &patch, ledger.as_ref().ok(), &head.texts);
        inputs.extend(loaded.digests);
        let mut evidence = loaded.evidence;
        // The patch's own ledger edits are reported entry by entry (and a freeze of the
        // patch's own witnesses caught), never obeyed.
        evidence.ledger_edit = ledger_edit.and_then(|sides| {
            parse_ledger_edit(
                &config_.ledger,
                sides,
                head_ledger.as_ref(),
                config_.policy.max_freeze_days,
                &mut notes,
            )
        });
        head.into_evidence(&patch, &mut evidence, &mut inputs, &mut notes);
        inputs.extend(tests.digests);
        evidence.test_sources = tests.texts;
        // CODEOWNERS at the base names the owners of unwitnessed lines.
        if let Some(f) = codeowners {
            set_codeowners(&mut evidence, &mut inputs, &mut notes, &f);
        }
        Ok(Loaded {
            patch,
            ledger,
            config: config_,
            evidence,
            inputs,
            notes,
        })
    })
    .await
    .map_err(AssembleError::Patch)?;
    let Judging {
        today,
        base_sha,
        head_sha,
        workflow,
        history,
    } = judging;
    let mut loaded = loaded;
    if let Some(h) = &history {
        // Before the verdict: what earlier runs showed of the tests this evidence names.
        let ev = &loaded.evidence;
        let tests: Vec<_> = crate::gate::history::tests_of_interest(ev.coverage.as_ref(), ev.results.as_ref())
            .into_iter()
            .collect();
        let base = base_sha
            .clone()
            .or_else(|| ev.meta.as_ref().and_then(|m| m.base_sha.clone()));
        let head = head_sha
            .clone()
            .or_else(|| ev.meta.as_ref().and_then(|m| m.head_sha.clone()));
        let exclude = h.exclude.clone().or_else(|| h.record.as_ref().map(|(k, _)| k.clone()));
        let query = crate::store::HistoryQuery {
            tests: &tests,
            base_sha: base.as_deref(),
            head_sha: head.as_deref(),
            now: h.now,
            policy: loaded.config.history,
            exclude: exclude.as_deref(),
        };
        match h.store.history_for(h.repo_id, &query).await {
            Ok(found) => loaded.evidence.history = Some(found),
            // Without its history the verdict is today's (this probe alone) and says so.
            Err(e) => loaded.notes.push(format!(
                "the flake history could not be read, so it was not used: {e:#}"
            )),
        }
    }
    let record = history.as_ref().and_then(|h| h.record.clone());
    let (report, recording) = off_the_runtime(move || {
        let input = GateInput {
            patch: &loaded.patch,
            ledger: &loaded.ledger,
            config: &loaded.config,
            evidence: &loaded.evidence,
            today,
            base_sha,
            head_sha,
            inputs: loaded.inputs,
            workflow,
        };
        let mut report = gate_evaluate(&input);
        report.notes.extend(loaded.notes);
        let recording =
            record.map(|(key, ctx)| (key, crate::gate::history::observations(&report, &loaded.evidence, &ctx)));
        (report, recording)
    })
    .await;
    Ok((
        report,
        recording.map(|(run_key, recording)| Pending { run_key, recording }),
    ))
}

/// What the pipeline read, before the verdict.
struct Loaded {
    patch: crate::gate::Patch,
    ledger: Result<Ledger, Vec<InputError>>,
    config: Config,
    evidence: Evidence,
    inputs: Vec<InputDigest>,
    notes: Vec<String>,
}

/// Run CPU- and disk-bound work — parsing a diff, reading gigabytes of coverage,
/// judging — on tokio's blocking pool, at most one piece per core at once, so that
/// the runtime answering webhooks and `/healthz` is never held up by an evaluation
/// (a server pinned to one core once took 15 s to answer a health check). A panic in
/// `work` is resumed here, as if it had run inline.
pub async fn off_the_runtime<T, F>(work: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    static SLOTS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Arc::new(Semaphore::new(cores))
    });
    // The semaphore is never closed.
    let _slot = SLOTS.clone().acquire_owned().await.ok();
    match tokio::task::spawn_blocking(work).await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Blocking tasks cannot be aborted; only a runtime shutting down cancels one.
        Err(e) => panic!("evaluation cancelled by the runtime shutting down: {e}"),
    }
}

/// The head's text of the changed source files, read before the coverage: with it the
/// gate gives a `def` header its body's witnesses and judges a continuation line as its
/// statement, and the coverage reader keeps the witnesses of those lines only.
struct HeadSources {
    texts: BTreeMap<String, String>,
    digests: Vec<InputDigest>,
    /// Files not read, with why.
    unread: BTreeMap<String, String>,
}

async fn fetch_head_sources<S: Sources>(src: &S, patch: &crate::gate::Patch) -> Result<HeadSources, S::Error> {
    let mut head = HeadSources {
        texts: BTreeMap::new(),
        digests: Vec::new(),
        unread: BTreeMap::new(),
    };
    let candidates = patch
        .files
        .iter()
        .filter(|f| !f.added.is_empty() && !crate::gate::trust::is_test_file(&f.path));
    let mut held = 0usize;
    for f in candidates {
        let path = &f.path;
        if held >= MAX_SOURCE_TOTAL_BYTES {
            head.unread.insert(
                path.clone(),
                format!("{path} (over {MAX_SOURCE_TOTAL_BYTES} bytes of sources)"),
            );
            continue;
        }
        if head.texts.len() >= MAX_SOURCE_FILES {
            head.unread
                .insert(path.clone(), format!("{path} (over {MAX_SOURCE_FILES} files)"));
            continue;
        }
        match src.head_file(path).await? {
            Some(file) if file.bytes.len() <= MAX_SOURCE_BYTES => {
                held += file.bytes.len();
                head.digests.push(InputDigest::of("source", &file.name, &file.bytes));
                let text = String::from_utf8_lossy(&file.bytes).into_owned();
                head.texts.insert(path.clone(), text);
            }
            Some(file) => {
                head.unread
                    .insert(path.clone(), format!("{path} ({} bytes)", file.bytes.len()));
            }
            None => {
                head.unread.insert(path.clone(), path.clone());
            }
        }
    }
    Ok(head)
}

/// At most this many test-code files are read for one judgement (the changed test files first).
const MAX_TEST_FILES: usize = 60;

/// The head's test code the trust rules parse: every changed test file, the `conftest.py`
/// and `__init__.py` of each directory above it, and the test-package modules they import
/// (one import deep). Files the head does not have are skipped; past [`MAX_TEST_FILES`] or
/// [`MAX_SOURCE_TOTAL_BYTES`], the rest is judged from the diff alone.
async fn fetch_test_sources<S: Sources>(src: &S, patch: &crate::gate::Patch) -> Result<HeadSources, S::Error> {
    use crate::gate::patch::FileStatus;
    use crate::gate::trust::is_test_file;
    let mut head = HeadSources {
        texts: BTreeMap::new(),
        digests: Vec::new(),
        unread: BTreeMap::new(),
    };
    let changed: Vec<&str> = patch
        .files
        .iter()
        .filter(|f| f.status != FileStatus::Deleted && is_test_file(&f.path) && f.path.ends_with(".py"))
        .map(|f| f.path.as_str())
        .collect();
    let mut wanted: Vec<String> = changed.iter().map(|p| p.to_string()).collect();
    for p in &changed {
        let mut dir = p.rsplit_once('/').map(|(d, _)| d);
        while let Some(d) = dir {
            for name in ["conftest.py", "__init__.py"] {
                wanted.push(format!("{d}/{name}"));
            }
            dir = d.rsplit_once('/').map(|(up, _)| up);
        }
        wanted.push("conftest.py".into());
    }
    let mut held = 0usize;
    let mut asked = std::collections::BTreeSet::new();
    let mut i = 0;
    while i < wanted.len() && asked.len() < MAX_TEST_FILES && held < MAX_SOURCE_TOTAL_BYTES {
        let path = wanted[i].clone();
        i += 1;
        if !asked.insert(path.clone()) {
            continue;
        }
        let Some(file) = src.head_file(&path).await? else {
            continue;
        };
        if file.bytes.len() > MAX_SOURCE_BYTES {
            continue;
        }
        held += file.bytes.len();
        head.digests
            .push(InputDigest::of("test_source", &file.name, &file.bytes));
        let text = String::from_utf8_lossy(&file.bytes).into_owned();
        // The test-package modules a changed test file imports: its helpers.
        if changed.contains(&path.as_str()) {
            if let Some(m) = crate::gate::trust::python::Module::parse(&path, &text) {
                for dotted in m.imports.values() {
                    let as_path = dotted.replace('.', "/");
                    let parent = as_path.rsplit_once('/').map(|(d, _)| d.to_string());
                    for cand in [Some(format!("{as_path}.py")), parent.map(|d| format!("{d}.py"))]
                        .into_iter()
                        .flatten()
                    {
                        if is_test_file(&cand) || changed.iter().any(|c| c.split('/').next() == cand.split('/').next())
                        {
                            wanted.push(cand);
                        }
                    }
                }
            }
        }
        head.texts.insert(path, text);
    }
    Ok(head)
}

impl HeadSources {
    /// Hand the sources to the gate; a note names the files coverage measures that
    /// had a changed line without a witness of its own (a header, a decorator, a
    /// continuation line) and whose source could not be read.
    fn into_evidence(
        self,
        patch: &crate::gate::Patch,
        evidence: &mut Evidence,
        inputs: &mut Vec<InputDigest>,
        notes: &mut Vec<String>,
    ) {
        let Some(cov) = evidence.coverage.as_mut() else {
            return;
        };
        if cov.format == CoverageFormat::DataFile {
            classify_statements(cov, &self.texts, &self.unread, notes);
        }
        let cov = &*cov;
        let missed: Vec<&String> = patch
            .files
            .iter()
            .filter(|f| {
                cov.files
                    .get(&f.path)
                    .is_some_and(|fc| f.added.iter().any(|l| !fc.witnesses.contains_key(&l.line)))
            })
            .filter_map(|f| self.unread.get(&f.path))
            .collect();
        if !missed.is_empty() {
            notes.push(format!(
                "the head's source of {} was not read, so its changed decorators, signature continuation lines and multi-line statements were judged from coverage alone (a def/class line takes its body's witnesses only where coverage.json lists function regions)",
                missed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        inputs.extend(self.digests);
        evidence.head_sources = self.texts;
    }
}

/// The `.coverage` data file lists the lines that ran, not the statements: each file's are
/// found in its head source as coverage.py finds them, so that the data file and the same
/// run's coverage.json give one verdict. A file whose source is missing or cannot be
/// classified keeps the data file's lines, where every changed line nothing ran counts as
/// unexecuted code (blind, never a pass), and a note says so.
fn classify_statements(
    cov: &mut Coverage,
    texts: &BTreeMap<String, String>,
    unread: &BTreeMap<String, String>,
    notes: &mut Vec<String>,
) {
    let mut unparsed = Vec::new();
    for (path, fc) in cov.files.iter_mut() {
        let Some(text) = texts.get(path) else {
            continue;
        };
        match PythonStatements::parse(text) {
            Ok(statements) => fc.classify_statements(&statements),
            Err(e) => unparsed.push(format!("{path} ({e})")),
        }
    }
    if !unparsed.is_empty() {
        notes.push(format!(
            "the head's source of {} could not be classified into statements, so from the .coverage data file (which lists no statements) every changed line of it that no test ran counts as unexecuted code, docstrings and else: lines included; coverage.json lists the statements",
            unparsed.join(", ")
        ));
    }
    let unread: Vec<&str> = cov
        .files
        .keys()
        .filter_map(|path| unread.get(path))
        .map(String::as_str)
        .collect();
    if !unread.is_empty() {
        notes.push(format!(
            "the .coverage data file lists no statements and the head's source of {} was not read, so every changed line of it that no test ran counts as unexecuted code (docstrings and else: lines included); give coverage.json, or judge with the head's files (--base)",
            unread.join(", ")
        ));
    }
}

/// The ledger file's text on both sides of the patch, from its diff (`gate::ledger::edit`):
/// `head` is the head's ledger when this face knows the head, `given` the base ledger a face
/// without the head was given. `Err`: the patch edits the ledger and its edit cannot be read.
fn read_ledger_edit(
    patch: &crate::gate::Patch,
    path: &str,
    head: Option<Option<&Named>>,
    given: Option<&Named>,
    notes: &mut Vec<String>,
) -> Result<Option<LedgerSides>, String> {
    fn utf8(f: &Named) -> Option<&str> {
        std::str::from_utf8(&f.bytes).ok()
    }
    let texts = LedgerTexts {
        head: head.map(|h| h.and_then(utf8)),
        given: given.and_then(utf8),
    };
    if let Some(Some(f)) = head {
        if texts.head == Some(None) {
            return Err(format!(
                "the patch edits the ledger {path}, but {} is not UTF-8",
                f.name
            ));
        }
    }
    let sides = ledger_sides(patch, path, texts)?;
    if let (Some(s), Some(g), Some(text)) = (&sides, given, texts.given) {
        if s.after.as_deref() == Some(text) {
            notes.push(format!(
                "the ledger given ({}) is the one the patch leaves (the diff's hunks of {path} come out of it, not into it), so the patch's own freezes were obeyed; give the ledger the patch was made against",
                g.name
            ));
        }
    }
    Ok(sides)
}

/// Both sides of the patch's ledger edit, parsed. A ledger the patch leaves invalid is a
/// note (it will block the next pull request) and no edit is listed; one the patch found
/// invalid is a note too, and every entry it leaves counts as its own.
fn parse_ledger_edit(
    path: &str,
    sides: LedgerSides,
    head: Option<&Named>,
    max_freeze_days: Option<u32>,
    notes: &mut Vec<String>,
) -> Option<LedgerEdit> {
    let list = |errors: Vec<InputError>| errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ");
    let after = match &sides.after {
        None => Ledger::default(),
        Some(text) => {
            let name = head.map_or_else(|| format!("{path} (as the patch leaves it)"), |f| f.name.clone());
            match parse_ledger(&name, text, max_freeze_days) {
                Ok(l) => l,
                Err(errors) => {
                    notes.push(format!(
                        "the patch leaves the ledger invalid, which will block the next pull request: {}",
                        list(errors)
                    ));
                    return None;
                }
            }
        }
    };
    let before = match &sides.before {
        None => Ledger::default(),
        // A freeze longer than today's policy allows was not the patch's doing.
        Some(text) => match parse_ledger(&format!("{path} (as the patch found it)"), text, None) {
            Ok(l) => l,
            Err(errors) => {
                notes.push(format!(
                    "the ledger as the patch found it is invalid, so every entry it leaves is listed as its edit: {}",
                    list(errors)
                ));
                Ledger::default()
            }
        },
    };
    Some(LedgerEdit { before, after })
}

/// CODEOWNERS read at the base. Lines it cannot use are notes, not guesses.
fn set_codeowners(ev: &mut Evidence, inputs: &mut Vec<InputDigest>, notes: &mut Vec<String>, f: &Named) {
    inputs.push(InputDigest::of("codeowners", &f.name, &f.bytes));
    let co = CodeOwners::parse(&String::from_utf8_lossy(&f.bytes));
    for (line, why) in &co.skipped {
        notes.push(format!("{}:{line}: {why}; that line was not used", f.name));
    }
    ev.codeowners = Some(co);
}

#[cfg(test)]
mod tests;
