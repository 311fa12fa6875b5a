//! Reading the evidence from disk — an evidence directory laid out as the CI
//! artifact is, or each part named on its own — and `assemble`, the one
//! pipeline that turns a face's files into the gate's input. This is the I/O
//! adapter in front of the pure readers in `gate`; the command line and the
//! App both use it (docs/design.md, "The pipeline").
//!
//! Layout of an evidence directory:
//! ```text
//! coverage.json | .coverage     per-test coverage of the head tree
//! coverage.info | coverage/     or LCOV: a tracefile, a directory of them, or Bazel's testlogs
//! results/                      head results: report-log (*.jsonl) and/or JUnit (*.xml)
//! probe.json | probe/           a probe JSON, or K result files of base runs
//!                               (or probe/<shard>/ per CI job, each with meta.json)
//! meta.json                     {base_sha, head_sha, k, seed, test_command}
//! ```

pub(crate) mod assemble;
pub(crate) mod bazel;
pub mod coverage_db;
mod lcov;

use crate::gate::coverage::{self, Coverage, PathMatcher};
use crate::gate::error::text_of;
use crate::gate::input::{parse_meta, Evidence};
use crate::gate::nodeid::TestId;
use crate::gate::probe::{self, Probe};
use crate::gate::results::{self, TestResults};
use crate::gate::{InputDigest, InputError, Ledger, Location, Patch};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where each part of the evidence is. Explicit parts override the directory's.
#[derive(Debug, Clone, Default)]
pub struct EvidenceSources {
    pub dir: Option<PathBuf>,
    pub coverage: Option<PathBuf>,
    pub results: Vec<PathBuf>,
    pub probe: Option<PathBuf>,
    pub meta: Option<PathBuf>,
    /// Shared by every patch judged with this evidence (pull requests sharing a head): what
    /// was read for one is not read again for the next.
    pub read_once: Option<std::sync::Arc<ReadOnce>>,
}

/// One evidence directory's parts, read once for every patch judged with it. A reading is
/// kept with what it depended on — the directory, the paths and lines the patch needs of
/// the coverage, the ledger's node ids (they help match JUnit records) — and served again
/// to a patch that needs the same; a patch that needs other lines is read for itself.
#[derive(Default)]
pub struct ReadOnce {
    readings: std::sync::Mutex<Vec<(ReadKey, Loaded)>>,
    reads: std::sync::atomic::AtomicUsize,
}

#[derive(PartialEq)]
struct ReadKey {
    sources: String,
    matcher: PathMatcher,
    ledger: Vec<TestId>,
}

impl ReadOnce {
    /// How many times the evidence was read (not served from an earlier reading).
    pub fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn get_or_read(&self, key: ReadKey, read: impl FnOnce() -> Loaded) -> Loaded {
        // Held while reading: the pull requests of one head are judged one after another,
        // and a second reader of the same key waits for the first rather than reading twice.
        let mut readings = self.readings.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, loaded)) = readings.iter().find(|(k, _)| *k == key) {
            return loaded.clone();
        }
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let loaded = read();
        readings.push((key, loaded.clone()));
        loaded
    }
}

impl std::fmt::Debug for ReadOnce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOnce")
            .field("reads", &self.reads())
            .finish_non_exhaustive()
    }
}

/// The evidence and the digest of every file read.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub evidence: Evidence,
    pub digests: Vec<InputDigest>,
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// Read a file as UTF-8 text, with a located error for non-UTF-8 bytes.
pub(crate) fn read_text(path: &Path) -> Result<(String, Vec<u8>), InputError> {
    let name = display(path);
    let bytes = std::fs::read(path).map_err(|e| InputError::new(Location::file(&name), format!("cannot read: {e}")))?;
    let text = text_of(&name, &bytes)?;
    Ok((text, bytes))
}

fn result_files(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| InputError::new(Location::file(display(dir)), format!("cannot list: {e}")))?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

impl EvidenceSources {
    /// Fill the parts the directory provides and the flags did not.
    pub fn resolve(mut self) -> Self {
        if let Some(dir) = self.dir.clone() {
            if self.coverage.is_none() {
                let json = dir.join("coverage.json");
                let db = dir.join(".coverage");
                let info = dir.join("coverage.info");
                let lcov_dir = dir.join("coverage");
                self.coverage = if json.is_file() {
                    Some(json)
                } else if db.is_file() {
                    Some(db)
                } else if info.is_file() {
                    Some(info)
                } else if lcov_dir.is_dir() {
                    Some(lcov_dir)
                } else {
                    None
                };
            }
            if self.results.is_empty() && dir.join("results").is_dir() {
                self.results.push(dir.join("results"));
            }
            if self.probe.is_none() {
                if dir.join("probe.json").is_file() {
                    self.probe = Some(dir.join("probe.json"));
                } else if dir.join("probe").is_dir() {
                    self.probe = Some(dir.join("probe"));
                }
            }
            if self.meta.is_none() && dir.join("meta.json").is_file() {
                self.meta = Some(dir.join("meta.json"));
            }
        }
        self
    }
}

/// Read the evidence for `patch`. Never fails: an unreadable part is recorded
/// in `evidence.problems`, and the gate turns that into INCONCLUSIVE. Of the
/// coverage, only the witnesses of the lines the gate reads are kept
/// (the gate's `attribution::lines_needed`, which uses `head_sources` for the
/// scopes of changed headers).
pub fn load_evidence(
    sources: &EvidenceSources,
    patch: &Patch,
    ledger: Option<&Ledger>,
    head_sources: &BTreeMap<String, String>,
) -> Loaded {
    let sources = sources.clone().resolve();
    let matcher = PathMatcher::new(patch.paths()).keeping(crate::gate::attribution::lines_needed(patch, head_sources));
    match sources.read_once.clone() {
        Some(once) => {
            let key = ReadKey {
                sources: format!(
                    "{:?}",
                    (
                        &sources.dir,
                        &sources.coverage,
                        &sources.results,
                        &sources.probe,
                        &sources.meta
                    )
                ),
                matcher: matcher.clone(),
                ledger: ledger
                    .map(|l| l.entries.iter().map(|e| TestId::new(e.test.clone())).collect())
                    .unwrap_or_default(),
            };
            once.get_or_read(key, || read_evidence(&sources, &matcher, ledger))
        }
        None => read_evidence(&sources, &matcher, ledger),
    }
}

/// Read the evidence with the coverage of every file it measured and every line's witnesses
/// (not only a patch's): what the blindness map needs. Never fails, as [`load_evidence`].
pub fn load_every_file(sources: &EvidenceSources, ledger: Option<&Ledger>) -> Loaded {
    read_evidence(&sources.clone().resolve(), &PathMatcher::every_file(), ledger)
}

/// [`load_evidence`]'s reading, for the lines `matcher` keeps.
fn read_evidence(sources: &EvidenceSources, matcher: &PathMatcher, ledger: Option<&Ledger>) -> Loaded {
    let mut out = Loaded::default();
    if let Some(dir) = &sources.dir {
        if !dir.is_dir() {
            out.evidence.problems.push(InputError::new(
                Location::file(display(dir)),
                "evidence directory not found (expected coverage.json or .coverage, results/, probe/ and meta.json in it)",
            ));
            return out;
        }
    }
    // Coverage.
    if let Some(path) = &sources.coverage {
        out.evidence.coverage_file = Some(display(path));
        match read_coverage(path, matcher) {
            Ok((cov, digest)) => {
                out.evidence.coverage = Some(cov);
                out.digests.push(digest);
            }
            Err(e) => out.evidence.problems.push(e),
        }
    }

    // Meta.
    if let Some(path) = &sources.meta {
        match read_text(path).and_then(|(t, b)| parse_meta(&display(path), &t).map(|m| (m, b))) {
            Ok((m, bytes)) => {
                out.digests.push(InputDigest::of("meta", &display(path), &bytes));
                out.evidence.meta = Some(m);
            }
            Err(e) => out.evidence.problems.push(e),
        }
    }

    // Node ids known before results are read: JUnit xunit2 records are matched against them.
    let mut known: BTreeSet<TestId> = BTreeSet::new();
    if let Some(cov) = &out.evidence.coverage {
        for f in cov.files.values() {
            known.extend(f.tests.iter().cloned());
        }
    }
    if let Some(l) = ledger {
        known.extend(l.entries.iter().map(|e| TestId::new(e.test.clone())));
    }

    // Probe (read before results so its node ids help match JUnit).
    if let Some(path) = &sources.probe {
        match read_probe(path, &known) {
            Ok((p, digests, seen)) => {
                known.extend(seen);
                out.digests.extend(digests);
                out.evidence.probe = Some(p);
            }
            Err(e) => out.evidence.problems.push(e),
        }
    }

    // Head results: every file merged; report-logs first so their exact node ids help JUnit.
    if !sources.results.is_empty() {
        let mut files = Vec::new();
        let mut bazel_results: Option<TestResults> = None;
        for p in &sources.results {
            // bazel-testlogs: each target's test.xml is the result of its label.
            if p.is_dir() && p.join("test.xml").symlink_metadata().is_err() {
                match bazel::read_results(p) {
                    Ok(Some((r, read))) => {
                        for (f, b) in read {
                            out.digests.push(InputDigest::of("results", &display(&f), &b));
                        }
                        bazel_results.get_or_insert_with(TestResults::default).merge(r);
                        continue;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        out.evidence.problems.push(e);
                        continue;
                    }
                }
            }
            if p.is_dir() {
                match result_files(p) {
                    Ok(fs) => files.extend(fs),
                    Err(e) => out.evidence.problems.push(e),
                }
            } else {
                files.push(p.clone());
            }
        }
        if files.is_empty() && bazel_results.is_none() {
            out.evidence.problems.push(InputError::new(
                Location::file(
                    sources
                        .results
                        .iter()
                        .map(|p| display(p))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                "no result files found (expected a pytest report-log .jsonl or a JUnit .xml)",
            ));
        }
        let mut texts = Vec::new();
        for f in files {
            match read_text(&f) {
                Ok((t, b)) => {
                    out.digests.push(InputDigest::of("results", &display(&f), &b));
                    texts.push((f, t));
                }
                Err(e) => out.evidence.problems.push(e),
            }
        }
        texts.sort_by_key(|(_, t)| results::sniff(t) != Some(results::ResultFormat::ReportLog));
        let mut ok = bazel_results.is_some();
        let mut merged = bazel_results.unwrap_or_default();
        for (f, t) in &texts {
            match results::parse_any(&display(f), t, &known) {
                Ok(r) => {
                    known.extend(r.tests.keys().cloned());
                    merged.merge(r);
                    ok = true;
                }
                Err(e) => out.evidence.problems.push(e),
            }
        }
        if ok {
            out.evidence.results = Some(merged);
        }
    }
    out
}

fn read_coverage(path: &Path, matcher: &PathMatcher) -> Result<(Coverage, InputDigest), InputError> {
    let name = display(path);
    if path.is_dir() {
        return lcov::read_lcov_dir(path, matcher);
    }
    let cannot = |e: std::io::Error| InputError::new(Location::file(&name), format!("cannot read: {e}"));
    let mut f = std::fs::File::open(path).map_err(cannot)?;
    let mut head = [0u8; 16];
    let n = std::io::Read::read(&mut f, &mut head).unwrap_or(0);
    let digest = |sha256| InputDigest {
        role: "coverage".into(),
        path: name.clone(),
        sha256,
    };
    if head[..n].starts_with(b"SQLite format 3") {
        // The read touches a few pages; the digest reads every byte: it runs on a second
        // thread meanwhile, and stops early if the read fails.
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = AtomicBool::new(false);
        let (cov, sha) = std::thread::scope(|s| {
            let hasher = s.spawn(|| sha256_file_unless(path, &stop));
            let cov = crate::evidence::coverage_db::read_data_file(path, matcher);
            if cov.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            (cov, hasher.join().expect("the hashing thread does not panic"))
        });
        let cov = cov.map_err(|e| {
            // The reader names the file too: name it once.
            let m = format!("{e:#}");
            let m = m.strip_prefix(&format!("{name}: ")).map_or(m.clone(), str::to_string);
            InputError::new(Location::file(&name), m)
        })?;
        let sha = sha
            .map_err(cannot)?
            .expect("the hash runs to the end unless the read failed");
        return Ok((cov, digest(sha)));
    }
    if coverage::lcov::looks_like_lcov(&head[..n]) {
        let (cov, sha) = lcov::read_tracefiles(&[(path.to_path_buf(), None)], matcher, coverage::CoverageFormat::Lcov)?;
        return Ok((cov, digest(sha)));
    }
    // One pass over a JSON that may be gigabytes, hashed on a second thread so that the
    // hash costs no time on the parser's core. A regular file is mapped: the scanner and
    // the hasher read the same pages, nothing is copied. Anything else (a pipe, a device)
    // or a file that cannot be mapped is read in blocks, each handed to the hasher, after
    // the bytes already read to sniff the format (a pipe cannot be opened twice).
    if f.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
        // SAFETY: a mapping's bytes change if another process writes the file while it is
        // mapped (and reading it faults if the file is truncated). The file here is the
        // user's own report named on the command line, or, in the App, an artifact this
        // process extracted into its own temporary directory: nobody writes it while the
        // gate reads it, as nobody may while it is read in blocks either (a report changed
        // mid-read would be judged half old, half new either way).
        if let Ok(map) = unsafe { memmap2::Mmap::map(&f) } {
            let (cov, sha) = hashed_scan(&map, |bytes, consumed| {
                coverage::json::read_json_slice(&name, bytes, matcher, consumed)
            })?;
            return Ok((cov, digest(sha)));
        }
    }
    let input = std::io::Read::chain(&head[..n], f);
    let (cov, sha) = hashed_read(input, |r| coverage::json::read_json(&name, r, matcher));
    let cov = cov?;
    Ok((cov, digest(sha.map_err(cannot)?)))
}

/// A coverage.py JSON report read the way `flakegate check` reads it on its scanning
/// thread, without the hash: a regular file mapped and scanned in place, its pages given
/// back behind the scan (the benchmark's reader row, `examples/coverage_stream`).
pub fn read_json_mapped(path: &Path, matcher: &PathMatcher) -> Result<Coverage, InputError> {
    let name = display(path);
    let cannot = |e: std::io::Error| InputError::new(Location::file(&name), format!("cannot read: {e}"));
    let f = std::fs::File::open(path).map_err(cannot)?;
    if !f.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
        return coverage::json::read_json(&name, f, matcher);
    }
    // SAFETY: as in `read_coverage`: nobody writes the report while it is read.
    let map = unsafe { memmap2::Mmap::map(&f) }.map_err(cannot)?;
    let mut behind = Behind { map: &map, done: 0 };
    coverage::json::read_json_slice(&name, &map, matcher, &mut |n| behind.release(n))
}

/// [`read_json_mapped`] handing each selected file to `each` as it is read, not keeping it
/// (`gate::coverage::json::read_json_slice_each`): the whole suite's coverage in the memory
/// of one file's. A file that cannot be mapped is refused (None): read it whole instead.
pub fn read_json_mapped_each(
    path: &Path,
    matcher: &PathMatcher,
    each: &mut dyn FnMut(String, crate::gate::coverage::FileCoverage),
) -> Option<Result<Coverage, InputError>> {
    let f = std::fs::File::open(path).ok()?;
    if !f.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
        return None;
    }
    // SAFETY: as in `read_coverage`: nobody writes the report while it is read.
    let map = unsafe { memmap2::Mmap::map(&f) }.ok()?;
    let mut behind = Behind { map: &map, done: 0 };
    Some(coverage::json::read_json_slice_each(
        &display(path),
        &map,
        matcher,
        &mut |n| behind.release(n),
        each,
    ))
}

/// How much of a mapping the hashing thread hashes at once.
const HASH_STEP: usize = 4 << 20;
/// Each thread gives back the pages of the mapping it has passed this many bytes at a time.
const RELEASE_STEP: usize = 8 << 20;

/// Run `scan` over the mapped bytes while a second thread hashes them, both reading the
/// mapping in place. The scan calls its `consumed(n)` as it goes (it will not read before
/// `n` again); each thread then gives back the pages it has passed, so the process's
/// resident memory stays a few steps per thread whatever the file's size (touched pages
/// of a mapping count in it). Returns the scan's result and the SHA-256 (hex) of the
/// whole mapping; when the scan fails, the hash is abandoned.
fn hashed_scan<T, E>(
    map: &memmap2::Mmap,
    scan: impl FnOnce(&[u8], &mut dyn FnMut(usize)) -> Result<T, E>,
) -> Result<(T, String), E> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let hasher = s.spawn(|| {
            let mut h = sha2::Sha256::default();
            let mut behind = Behind { map, done: 0 };
            let mut at = 0;
            for chunk in map.chunks(HASH_STEP) {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                sha2::Digest::update(&mut h, chunk);
                at += chunk.len();
                behind.release(at);
            }
            Some(hex::encode(sha2::Digest::finalize(h)))
        });
        let mut behind = Behind { map, done: 0 };
        let out = scan(&map[..], &mut |n| behind.release(n));
        if out.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let sha = hasher.join().expect("the hashing thread does not panic");
        out.map(|t| (t, sha.expect("the hash runs to the end unless the scan failed")))
    })
}

/// The part of a mapping one thread has passed, given back to the kernel a
/// [`RELEASE_STEP`] at a time.
struct Behind<'m> {
    map: &'m memmap2::Mmap,
    done: usize,
}

impl Behind<'_> {
    fn release(&mut self, upto: usize) {
        let upto = upto.min(self.map.len()) / RELEASE_STEP * RELEASE_STEP;
        if upto <= self.done {
            return;
        }
        // SAFETY: MADV_DONTNEED on a read-only shared file mapping only drops this process's
        // page-table entries for the range: the next read of it (the other thread may still
        // be there) faults the same bytes back in from the page cache. Nothing is lost and
        // no byte changes, so the slices borrowed from the mapping stay valid. The offsets
        // are within the mapping and page-aligned (RELEASE_STEP is a multiple of any page size).
        #[cfg(unix)]
        let _ = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, self.done, upto - self.done)
        };
        self.done = upto;
    }
}

/// Run `read` over `inner` while a second thread hashes every byte of `inner`
/// (what `read` consumed, then the rest: the parser stops at the end of the JSON
/// value). Returns `read`'s result and the SHA-256 (hex) of the whole input.
fn hashed_read<R: std::io::Read + Send, T>(
    inner: R,
    read: impl FnOnce(&mut HashingReader<R>) -> T,
) -> (T, std::io::Result<String>) {
    use std::sync::mpsc::sync_channel;
    // Two blocks in flight at most, and their buffers come back for reuse: memory
    // stays a few blocks whatever the input's size.
    let (to_hasher, blocks) = sync_channel::<Vec<u8>>(2);
    let (give_back, spare) = sync_channel::<Vec<u8>>(4);
    std::thread::scope(|s| {
        let hasher = s.spawn(move || {
            let mut h = sha2::Sha256::default();
            for block in blocks {
                sha2::Digest::update(&mut h, &block);
                let _ = give_back.try_send(block);
            }
            hex::encode(sha2::Digest::finalize(h))
        });
        let mut hashing = HashingReader {
            inner,
            to_hasher: Some(to_hasher),
            spare,
        };
        let out = read(&mut hashing);
        let rest = std::io::copy(&mut hashing, &mut std::io::sink());
        hashing.to_hasher = None;
        let sha = hasher.join().expect("the hashing thread does not panic");
        (out, rest.map(|_| sha))
    })
}

/// A reader that sends a copy of what passes through it to the hashing thread.
struct HashingReader<R> {
    inner: R,
    to_hasher: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
}

impl<R: std::io::Read> std::io::Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            let mut block = self.spare.try_recv().unwrap_or_default();
            block.clear();
            block.extend_from_slice(&buf[..n]);
            if let Some(tx) = &self.to_hasher {
                tx.send(block)
                    .map_err(|_| std::io::Error::other("the hashing thread stopped"))?;
            }
        }
        Ok(n)
    }
}

/// sha256 of a file, streamed (the tests' reference).
#[cfg(test)]
fn sha256_file(path: &Path) -> std::io::Result<String> {
    let never = std::sync::atomic::AtomicBool::new(false);
    Ok(sha256_file_unless(path, &never)?.expect("not stopped"))
}

/// The SHA-256 (hex) of the file at `path`, streamed (coverage files reach gigabytes),
/// or `None` once `stop` is set.
fn sha256_file_unless(path: &Path, stop: &std::sync::atomic::AtomicBool) -> std::io::Result<Option<String>> {
    use sha2::Digest;
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(None);
        }
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(Some(hex::encode(h.finalize())))
}

/// The probe, the digests of its files, and every node id its runs named
/// (skipped ones too: they help match JUnit xunit2 records of the head run).
type ProbeRead = (Probe, Vec<InputDigest>, BTreeSet<TestId>);

fn read_probe(path: &Path, known: &BTreeSet<TestId>) -> Result<ProbeRead, InputError> {
    let name = display(path);
    if path.is_file() {
        let (t, b) = read_text(path)?;
        let digests = vec![InputDigest::of("probe", &name, &b)];
        if results::sniff(&t) == Some(results::ResultFormat::ReportLog) && !looks_like_probe_json(&t) {
            return Err(InputError::new(
                Location::file(&name),
                "expected a probe JSON ({\"k\": K, \"unstable\": [...]}) or a directory of K result files",
            ));
        }
        return probe::parse_probe_json(&name, &t).map(|p| {
            let seen = p.tests.keys().cloned().collect();
            (p, digests, seen)
        });
    }
    if let Some(read) = read_probe_shards(path, known)? {
        return Ok(read);
    }
    let files = result_files(path)?;
    if let Some(pj) = files.iter().find(|f| f.file_name().is_some_and(|n| n == "probe.json")) {
        return read_probe(pj, known);
    }
    if files.is_empty() {
        return Err(InputError::new(
            Location::file(&name),
            "probe directory is empty (expected K result files of base runs)",
        ));
    }
    let mut digests = Vec::new();
    let (runs, known) = read_runs(&files, known.clone(), &mut digests)?;
    Ok((probe::from_runs(&runs), digests, known))
}

/// Parse K result files of base runs, report-logs first: their node ids are exact and
/// help match xunit2 runs.
fn read_runs(
    files: &[PathBuf],
    mut known: BTreeSet<TestId>,
    digests: &mut Vec<InputDigest>,
) -> Result<(Vec<TestResults>, BTreeSet<TestId>), InputError> {
    let mut runs = Vec::new();
    let mut texts = Vec::new();
    for f in files {
        let (t, b) = read_text(f)?;
        digests.push(InputDigest::of("probe", &display(f), &b));
        texts.push((f.clone(), t));
    }
    texts.sort_by_key(|(_, t)| results::sniff(t) != Some(results::ResultFormat::ReportLog));
    for (f, t) in &texts {
        let r = results::parse_any(&display(f), t, &known)?;
        known.extend(r.tests.keys().cloned());
        runs.push(r);
    }
    Ok((runs, known))
}

/// A probe spread over parallel CI jobs: `probe/<shard>/meta.json` and that job's result
/// files beside it, one directory per job. None when `dir` has no shard directories.
/// Shards are merged only when they ran the same collection at the same base sha
/// ([`probe::merge_shards`]); result files loose beside shards are an error.
fn read_probe_shards(dir: &Path, known: &BTreeSet<TestId>) -> Result<Option<ProbeRead>, InputError> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| InputError::new(Location::file(display(dir)), format!("cannot list: {e}")))?;
    let mut shard_dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && p.join("meta.json").is_file())
        .collect();
    if shard_dirs.is_empty() {
        return Ok(None);
    }
    shard_dirs.sort();
    if let Some(loose) = result_files(dir)?.first() {
        return Err(InputError::new(
            Location::file(display(loose)),
            "a result file beside probe shards: put every run in its shard's directory (probe/<shard>/, with its meta.json)",
        ));
    }
    let mut digests = Vec::new();
    let mut known = known.clone();
    let mut shards = Vec::new();
    for d in &shard_dirs {
        let meta_path = d.join("meta.json");
        let (t, b) = read_text(&meta_path)?;
        digests.push(InputDigest::of("probe", &display(&meta_path), &b));
        let meta = crate::gate::input::parse_meta(&display(&meta_path), &t)?;
        let files: Vec<PathBuf> = result_files(d)?
            .into_iter()
            .filter(|f| f.file_name().is_none_or(|n| n != "meta.json"))
            .collect();
        let (runs, k) = read_runs(&files, known, &mut digests)?;
        known = k;
        shards.push(probe::ProbeShard {
            name: display(d),
            base_sha: meta.base_sha,
            runs,
        });
    }
    let p = probe::merge_shards(&shards)?;
    Ok(Some((p, digests, known)))
}

fn looks_like_probe_json(t: &str) -> bool {
    // A probe JSON is one object with a "k"; a report-log is many lines each with "$report_type".
    !t.contains("\"$report_type\"")
}

// ---- the evidence artifact (the App) ----------------------------------------------------

/// The evidence directory inside an extracted artifact: its root, or a lone `evidence/` in it.
pub(crate) fn evidence_root(extracted: &Path) -> PathBuf {
    let nested = extracted.join("evidence");
    let root_has_evidence = [
        "meta.json",
        "coverage.json",
        ".coverage",
        "coverage.info",
        "coverage",
        "results",
    ]
    .iter()
    .any(|f| extracted.join(f).exists());
    if !root_has_evidence && nested.is_dir() {
        nested
    } else {
        extracted.to_path_buf()
    }
}

/// Paths inside the extracted artifact as the artifact names them (`flakegate-evidence/results/…`),
/// not as this server's scratch directory: no host paths in what is published, and the same
/// evidence gives the same record on every evaluation.
pub(crate) fn artifact_relative(report: &mut crate::gate::Report, extracted: &Path, artifact: &str) {
    let root = extracted.display().to_string();
    let fix = |s: &mut String| {
        if s.contains(&root) {
            *s = s
                .replace(&format!("{root}/"), &format!("{artifact}/"))
                .replace(&root, artifact);
        }
    };
    for d in &mut report.inputs {
        fix(&mut d.path);
    }
    for r in &mut report.reasons {
        fix(&mut r.message);
        for l in &mut r.locations {
            fix(&mut l.file);
        }
    }
    for f in &mut report.results.failures {
        fix(&mut f.source);
        if let Some(m) = &mut f.message {
            fix(m);
        }
    }
    for n in &mut report.notes {
        fix(n);
    }
}

#[cfg(test)]
mod tests;
