//! `coverage json --show-contexts` output → [`Coverage`]: [`read_json`] (a block
//! reader with a structural scan, in `scan`) and [`read_json_slice`] (the same scan
//! over the whole input in memory, e.g. a mapped file), the serde visitors the readers
//! share, and [`read_json_stream`], the previous reader (serde_json's reader path over
//! the whole input), kept as the equivalence oracle and the benchmark's baseline.

mod scan;
mod skip;

use super::{insert_file, ContextCollector, Coverage, CoverageFormat, FileCoverage, PathMatcher};
use crate::gate::error::{InputError, Location};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{self, Read};

/// serde_json pulls one byte at a time; `BufReader` has std's fast path
/// for that, so the buffer only needs to amortise calls into the guard.
const BUF_READER_CAPACITY: usize = 64 * 1024;
/// How much the UTF-8 guard reads from the underlying reader at once.
const GUARD_CHUNK: usize = 1 << 20;

#[derive(Debug, serde::Deserialize)]
struct Meta {
    #[serde(default)]
    pub show_contexts: Option<bool>,
}

struct State<'m> {
    matcher: &'m PathMatcher,
    pub files: BTreeMap<String, FileCoverage>,
    pub measured_files: usize,
    pub mapped_paths: Vec<(String, String)>,
    pub ctx: ContextCollector,
    pub saw_files: bool,
    pub meta: Option<Meta>,
}

impl<'m> State<'m> {
    pub fn new(matcher: &'m PathMatcher) -> Self {
        State {
            matcher,
            files: BTreeMap::new(),
            measured_files: 0,
            mapped_paths: Vec::new(),
            ctx: ContextCollector::for_matcher(matcher),
            saw_files: false,
            meta: None,
        }
    }
}

// ---- top level -------------------------------------------------------

impl<'de> DeserializeSeed<'de> for &mut State<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(TopVisitor(self))
    }
}

struct TopVisitor<'a, 'm>(&'a mut State<'m>);

/// Keys we act on; everything else is skipped without allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Meta,
    Files,
    ExecutedLines,
    MissingLines,
    ExcludedLines,
    Contexts,
    Functions,
    Classes,
    StartLine,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(match s {
                    "meta" => Key::Meta,
                    "files" => Key::Files,
                    "executed_lines" => Key::ExecutedLines,
                    "missing_lines" => Key::MissingLines,
                    "excluded_lines" => Key::ExcludedLines,
                    "contexts" => Key::Contexts,
                    "functions" => Key::Functions,
                    "classes" => Key::Classes,
                    "start_line" => Key::StartLine,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Visitor<'de> for TopVisitor<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a coverage.py JSON report (an object with \"meta\" and \"files\")")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.0;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Meta => st.meta = Some(map.next_value()?),
                Key::Files => {
                    st.saw_files = true;
                    map.next_value_seed(FilesSeed(&mut *st))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

// ---- the files object ------------------------------------------------

struct FilesSeed<'a, 'm>(&'a mut State<'m>);

impl<'de> DeserializeSeed<'de> for FilesSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// A file name in `files`: mapped by the matcher while it is still in
/// serde's scratch buffer, so skipped names are never allocated.
struct PathKey<'a>(&'a PathMatcher);

enum PathKind {
    Selected {
        coverage_path: String,
        mapped: (String, bool),
    },
    Skipped,
}

impl<'de> DeserializeSeed<'de> for PathKey<'_> {
    type Value = PathKind;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<PathKind, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for PathKey<'_> {
    type Value = PathKind;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a file name")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<PathKind, E> {
        Ok(match self.0.map(s) {
            Some(mapped) => PathKind::Selected {
                coverage_path: s.to_string(),
                mapped,
            },
            None => PathKind::Skipped,
        })
    }
}

impl<'de> Visitor<'de> for FilesSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of file name → file coverage")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.0;
        while let Some(kind) = map.next_key_seed(PathKey(st.matcher))? {
            st.measured_files += 1;
            match kind {
                PathKind::Selected { coverage_path, mapped } => {
                    let mut fc = FileCoverage {
                        has_statements: true,
                        ..Default::default()
                    };
                    map.next_value_seed(FileSeed {
                        repo: &mapped.0,
                        fc: &mut fc,
                        ctx: &mut st.ctx,
                    })?;
                    insert_file(&mut st.files, &mut st.mapped_paths, &coverage_path, mapped, fc);
                }
                PathKind::Skipped if !st.ctx.seen_test() => {
                    map.next_value_seed(ScanFile { ctx: &mut st.ctx })?;
                }
                PathKind::Skipped => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

// ---- a selected file -------------------------------------------------

struct FileSeed<'a> {
    repo: &'a str,
    fc: &'a mut FileCoverage,
    ctx: &'a mut ContextCollector,
}

impl<'de> DeserializeSeed<'de> for FileSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FileSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a file coverage object (executed_lines, missing_lines, excluded_lines, contexts, …)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::ExecutedLines => map.next_value_seed(Lines(&mut self.fc.executed))?,
                Key::MissingLines => map.next_value_seed(Lines(&mut self.fc.missing))?,
                Key::ExcludedLines => map.next_value_seed(Lines(&mut self.fc.excluded))?,
                Key::Contexts => map.next_value_seed(Contexts {
                    repo: self.repo,
                    fc: &mut *self.fc,
                    ctx: &mut *self.ctx,
                })?,
                Key::Functions | Key::Classes => map.next_value_seed(Regions(&mut self.fc.regions))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `"functions"` / `"classes"` (coverage.py ≥ 7.5): name → `{start_line, executed_lines,
/// missing_lines, …}`. Each named region is kept as (its `def`/`class` line, its body's
/// lines); the module's region (name `""`) and the regions' own contexts are not read.
struct Regions<'a>(&'a mut BTreeMap<u32, BTreeSet<u32>>);

impl<'de> DeserializeSeed<'de> for Regions<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Regions<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of function or class name → region")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(name) = map.next_key::<String>()? {
            if name.is_empty() {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let mut region = (0, BTreeSet::new());
            map.next_value_seed(Region(&mut region))?;
            if region.0 > 0 {
                self.0.entry(region.0).or_default().extend(region.1);
            }
        }
        Ok(())
    }
}

struct Region<'a>(&'a mut (u32, BTreeSet<u32>));

impl<'de> DeserializeSeed<'de> for Region<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Region<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a region object (start_line, executed_lines, missing_lines, …)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::StartLine => self.0 .0 = map.next_value()?,
                Key::ExecutedLines | Key::MissingLines => map.next_value_seed(Lines(&mut self.0 .1))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// An array of line numbers, inserted straight into a set.
struct Lines<'a>(&'a mut BTreeSet<u32>);

impl<'de> DeserializeSeed<'de> for Lines<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Lines<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of line numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(line) = seq.next_element::<u32>()? {
            if line > 0 {
                self.0.insert(line);
            }
        }
        Ok(())
    }
}

/// `"contexts": {"<line>": ["ctx", …], …}`
struct Contexts<'a> {
    repo: &'a str,
    fc: &'a mut FileCoverage,
    ctx: &'a mut ContextCollector,
}

impl<'de> DeserializeSeed<'de> for Contexts<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Contexts<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of line number → array of context names")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(LineKey(line)) = map.next_key()? {
            map.next_value_seed(ContextList {
                repo: self.repo,
                fc: &mut *self.fc,
                line,
                ctx: &mut *self.ctx,
            })?;
        }
        Ok(())
    }
}

/// A context line key: a JSON string holding a line number.
struct LineKey(u32);

impl<'de> de::Deserialize<'de> for LineKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LineKey, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = LineKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a line number")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<LineKey, E> {
                if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                    if let Ok(n) = s.parse::<u32>() {
                        return Ok(LineKey(n));
                    }
                }
                Err(E::custom(format_args!("context line key {s:?} is not a line number")))
            }
        }
        d.deserialize_str(V)
    }
}

struct ContextList<'a> {
    repo: &'a str,
    fc: &'a mut FileCoverage,
    line: u32,
    ctx: &'a mut ContextCollector,
}

impl<'de> DeserializeSeed<'de> for ContextList<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ContextList<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of context names")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let ContextList { repo, fc, line, ctx } = self;
        while let Some(()) = seq.next_element_seed(OneContext {
            repo,
            fc: &mut *fc,
            line,
            ctx: &mut *ctx,
        })? {}
        Ok(())
    }
}

struct OneContext<'a> {
    repo: &'a str,
    fc: &'a mut FileCoverage,
    line: u32,
    ctx: &'a mut ContextCollector,
}

impl<'de> DeserializeSeed<'de> for OneContext<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for OneContext<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a context name")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        self.ctx.record(self.repo, self.fc, self.line, s);
        Ok(())
    }
}

// ---- a skipped file, scanned for one test context --------------------

struct ScanFile<'a> {
    ctx: &'a mut ContextCollector,
}

impl<'de> DeserializeSeed<'de> for ScanFile<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ScanFile<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a file coverage object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            if key == Key::Contexts && !self.ctx.seen_test() {
                map.next_value_seed(ScanAny { ctx: &mut *self.ctx })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    // Skipped files are not validated beyond JSON syntax.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| ())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Walks any JSON value until the first string that is a pytest-cov test
/// context, and skips the rest once one has been seen.
struct ScanAny<'a> {
    ctx: &'a mut ContextCollector,
}

impl<'de> DeserializeSeed<'de> for ScanAny<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.ctx.seen_test() {
            return <IgnoredAny as de::Deserialize>::deserialize(d).map(|_| ());
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ScanAny<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(ScanAny { ctx: &mut *self.ctx })?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(ScanAny { ctx: &mut *self.ctx })?.is_some() {}
        Ok(())
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        self.ctx.observe(s);
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

// ---- UTF-8 guard -----------------------------------------------------

/// Where invalid UTF-8 was found (1-based; columns count bytes, as serde_json's do).
#[derive(Debug, Clone, Copy)]
struct Utf8Position {
    pub line: usize,
    pub column: usize,
}

/// Validates UTF-8 over the whole input. serde_json checks the strings it
/// decodes, but not the ones [`IgnoredAny`] skips; this guard makes invalid
/// UTF-8 anywhere an error at the right line and column. It hands out only
/// validated bytes, so serde_json reaches any earlier syntax error first.
struct Utf8Guard<R> {
    inner: R,
    buf: Box<[u8]>,
    /// buf[pos..valid] is validated and not yet handed out;
    /// buf[valid..filled] is an incomplete UTF-8 sequence awaiting more input.
    pos: usize,
    valid: usize,
    filled: usize,
    eof: bool,
    /// Line and column of the byte after the last one handed out.
    line: usize,
    column: usize,
    /// Set when buf[valid] starts an invalid sequence (served after buf[..valid]).
    bad: bool,
    error: Option<Utf8Position>,
}

impl<R: Read> Utf8Guard<R> {
    pub fn new(inner: R) -> Self {
        Utf8Guard {
            inner,
            buf: vec![0u8; GUARD_CHUNK].into_boxed_slice(),
            pos: 0,
            valid: 0,
            filled: 0,
            eof: false,
            line: 1,
            column: 1,
            bad: false,
            error: None,
        }
    }

    pub fn utf8_error(&self) -> Option<Utf8Position> {
        self.error
    }

    fn refill(&mut self) -> io::Result<()> {
        // Keep the incomplete tail (at most 3 bytes).
        self.buf.copy_within(self.valid..self.filled, 0);
        self.filled -= self.valid;
        self.pos = 0;
        self.valid = 0;
        while !self.eof && self.valid == 0 && !self.bad {
            let n = match self.inner.read(&mut self.buf[self.filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
            }
            self.filled += n;
            match std::str::from_utf8(&self.buf[..self.filled]) {
                Ok(_) => self.valid = self.filled,
                Err(e) => {
                    self.valid = e.valid_up_to();
                    // An incomplete sequence at the end is fine unless input ended.
                    if e.error_len().is_some() || self.eof {
                        self.bad = true;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Newlines in `bytes`, counted per 128-byte block with a `u8` sum so that
/// the compiler vectorises it (a plain `filter().count()` does not, well).
fn count_newlines(bytes: &[u8]) -> usize {
    let mut blocks = bytes.chunks_exact(128);
    let mut n = 0usize;
    for block in &mut blocks {
        n += usize::from(block.iter().map(|&b| u8::from(b == b'\n')).sum::<u8>());
    }
    n + blocks.remainder().iter().filter(|&&b| b == b'\n').count()
}

impl<R: Read> Read for Utf8Guard<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.valid {
            if self.bad {
                self.error = Some(Utf8Position {
                    line: self.line,
                    column: self.column,
                });
                return Err(io::Error::new(io::ErrorKind::InvalidData, "invalid UTF-8"));
            }
            if self.eof && self.valid == self.filled {
                return Ok(0);
            }
            self.refill()?;
            if self.pos == self.valid {
                return self.read(out);
            }
        }
        let n = out.len().min(self.valid - self.pos);
        let chunk = &self.buf[self.pos..self.pos + n];
        out[..n].copy_from_slice(chunk);
        // Track the position for an error report. Counting is one
        // vectorised pass; the last newline is searched only when there
        // is one (coverage.py's JSON is a single line unless pretty-printed).
        let newlines = count_newlines(chunk);
        if newlines == 0 {
            self.column += n;
        } else {
            self.line += newlines;
            let last = chunk.iter().rposition(|&b| b == b'\n').unwrap_or(0);
            self.column = n - last;
        }
        self.pos += n;
        Ok(n)
    }
}

/// Read `coverage json --show-contexts` output, materialising only files
/// `matcher` maps. Memory does not grow with the size of the JSON.
///
/// The input is read in blocks of 4 MiB and validated as UTF-8; a structural
/// scan walks the top-level object and the `files` object (memchr over keys) and
/// delimits each file's value with a validating skipper: a file the patch names
/// is then deserialised by serde_json from that byte range (`executed_lines`,
/// `missing_lines`, `excluded_lines`, `contexts`, `functions`, `classes`); every
/// other file is only syntax-checked (by the skipper, or serde_json's
/// [`serde::de::IgnoredAny`] where the skipper is not sure, as with any error) — except
/// that, until the first pytest-cov test context has been seen, skipped files'
/// `contexts` are scanned for one, so `has_test_contexts` describes the whole report
/// and not only the patch's files (a patch touching only an unrun file must not read as
/// "no contexts"). A value larger than 16 MiB (a core module every test runs) is
/// streamed, not buffered.
///
/// `has_test_contexts` is true when some file has a test context and
/// `meta.show_contexts` is not `false`. Context line `0` (coverage.py's entry
/// for an empty module) is ignored. Keys may come in any order.
///
/// Errors (malformed or truncated JSON, wrong types, a non-numeric context
/// line, invalid UTF-8 anywhere in the input, no `files` object) carry the
/// line and column, and where the scanner finds them the byte offset.
pub fn read_json<R: std::io::Read>(file: &str, reader: R, matcher: &PathMatcher) -> Result<Coverage, InputError> {
    read_json_blocks(file, reader, matcher, scan::BLOCK, scan::BUFFER_AT_MOST)
}

/// [`read_json`] over the whole input in memory (a mapped file): the same scan, the
/// same result and errors, without copying the bytes into blocks. UTF-8 is validated
/// a megabyte at a time as the scan reaches it, and a value larger than 16 MiB is
/// still streamed rather than handed to serde_json whole, so the memory the scan
/// touches at once stays bounded: `consumed(n)` is called as it goes (every megabyte
/// or so, offsets growing) to say that no byte before `n` will be read again, so that
/// the caller can release those pages.
pub fn read_json_slice(
    file: &str,
    bytes: &[u8],
    matcher: &PathMatcher,
    consumed: &mut dyn FnMut(usize),
) -> Result<Coverage, InputError> {
    read_json_slice_steps(file, bytes, matcher, consumed, scan::SLICE_STEP, scan::BUFFER_AT_MOST)
}

/// [`read_json`] with its block size and the largest buffered value given
/// (tests use tiny ones to cross every boundary).
fn read_json_blocks<R: std::io::Read>(
    file: &str,
    reader: R,
    matcher: &PathMatcher,
    block: usize,
    buffer_at_most: usize,
) -> Result<Coverage, InputError> {
    let mut state = State::new(matcher);
    scan::scan(file, reader, &mut state, block, buffer_at_most)?;
    finish(file, state)
}

/// [`read_json_slice`] with its validation step and the largest buffered value given.
fn read_json_slice_steps(
    file: &str,
    bytes: &[u8],
    matcher: &PathMatcher,
    consumed: &mut dyn FnMut(usize),
    step: usize,
    buffer_at_most: usize,
) -> Result<Coverage, InputError> {
    let mut state = State::new(matcher);
    scan::scan_slice(file, bytes, consumed, &mut state, step, buffer_at_most)?;
    finish(file, state)
}

/// The previous reader: serde_json's reader path (`from_reader`) over the whole
/// input behind a UTF-8 guard. It gives the same [`Coverage`] as [`read_json`]
/// (a test compares them) at about a third of the speed; kept as that test's
/// oracle and as the benchmark's "previous implementation" row.
#[doc(hidden)]
pub fn read_json_stream<R: std::io::Read>(
    file: &str,
    reader: R,
    matcher: &PathMatcher,
) -> Result<Coverage, InputError> {
    let mut guard = Utf8Guard::new(reader);
    let mut state = State::new(matcher);
    let result = {
        let buf = std::io::BufReader::with_capacity(BUF_READER_CAPACITY, &mut guard);
        let mut de = serde_json::Deserializer::from_reader(buf);
        (&mut state).deserialize(&mut de).and_then(|()| de.end())
    };
    if let Some(bad) = guard.utf8_error() {
        return Err(InputError::new(
            Location::at(file, bad.line, Some(bad.column)),
            "invalid UTF-8 (coverage.py writes UTF-8 JSON)",
        ));
    }
    if let Err(err) = result {
        return Err(InputError::json(file, &err));
    }
    finish(file, state)
}

fn finish(file: &str, state: State<'_>) -> Result<Coverage, InputError> {
    if !state.saw_files {
        return Err(InputError::new(
            Location::file(file),
            "not a coverage.py JSON report: no \"files\" object (expected the output of `coverage json --show-contexts`)",
        ));
    }
    let show_contexts = state.meta.as_ref().and_then(|m| m.show_contexts);
    let mut files = state.files;
    let (foreign_contexts, seen_test) = state.ctx.finish(&mut files);
    Ok(Coverage {
        format: CoverageFormat::Json,
        files,
        measured_files: state.measured_files,
        mapped_paths: state.mapped_paths,
        foreign_contexts,
        has_test_contexts: seen_test && show_contexts != Some(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::nodeid::Phase;
    use proptest::prelude::*;

    /// Real `coverage json --show-contexts` output (tests/fixtures, regen.sh):
    /// embedded at compile time, so `gate` opens no files, even in tests.
    const ALL_STABLE: &[u8] = include_bytes!("../../../tests/fixtures/cases/all_stable/evidence/coverage.json");
    const STATIC_CONTEXT: &[u8] =
        include_bytes!("../../../tests/fixtures/coverage-variants/static-context/coverage.json");
    const BRANCH: &[u8] = include_bytes!("../../../tests/fixtures/coverage-variants/branch/coverage.json");
    const ABSOLUTE: &[u8] = include_bytes!("../../../tests/fixtures/coverage-variants/absolute/coverage.json");
    const NEW_MODULE: &[u8] = include_bytes!("../../../tests/fixtures/cases/new_module/evidence/coverage.json");

    const SHOP: [&str; 5] = [
        "src/shop/__init__.py",
        "src/shop/cart.py",
        "src/shop/pricing.py",
        "src/shop/refunds.py",
        "src/shop/util.py",
    ];

    fn read(bytes: &[u8], paths: &[&str]) -> Result<Coverage, InputError> {
        read_json("coverage.json", bytes, &PathMatcher::new(paths.iter().copied()))
    }

    fn tests_of(fc: &FileCoverage, line: u32) -> Vec<(String, Vec<Phase>)> {
        fc.witnesses
            .get(&line)
            .map(|w| {
                w.iter()
                    .map(|(t, p)| (t.0.clone(), p.iter().copied().collect()))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn reads_the_real_report() {
        let cov = read(ALL_STABLE, &["src/shop/pricing.py", "src/shop/cart.py"]).unwrap();
        assert_eq!(cov.format, CoverageFormat::Json);
        assert_eq!(cov.measured_files, 5);
        assert!(cov.has_test_contexts);
        assert!(cov.mapped_paths.is_empty());
        assert!(cov.foreign_contexts.is_empty(), "{:?}", cov.foreign_contexts);
        assert_eq!(
            cov.files.keys().collect::<Vec<_>>(),
            ["src/shop/cart.py", "src/shop/pricing.py"]
        );
        let pricing = &cov.files["src/shop/pricing.py"];
        assert!(pricing.has_statements);
        // pricing.py:19 (apply_tax): the all_stable case's changed line.
        assert_eq!(
            tests_of(pricing, 19),
            [
                (
                    "tests/test_cart.py::TestCart::test_stocked_total".to_string(),
                    vec![Phase::Run]
                ),
                ("tests/test_cart.py::TestCart::test_total".to_string(), vec![Phase::Run]),
                ("tests/test_pricing.py::test_apply_tax".to_string(), vec![Phase::Run]),
            ]
        );
        assert!(pricing.executed.contains(&19));
        // pricing.py:8-9 run only at import time (context "").
        assert!(pricing.import_time.contains(&8) && pricing.import_time.contains(&9));
        assert!(!pricing.witnesses.contains_key(&8));
        // Line 1 (the docstring) has a context but is not a statement.
        assert!(pricing.import_time.contains(&1) && !pricing.executed.contains(&1));
        // The function regions: each `def` line with its body's lines (the module's `""` region is not kept).
        let regions: Vec<(u32, Vec<u32>)> = pricing
            .regions
            .iter()
            .map(|(def, body)| (*def, body.iter().copied().collect()))
            .collect();
        assert!(regions.contains(&(15, vec![16, 17, 18, 19, 20])), "{regions:?}");
        assert!(regions.contains(&(6, vec![8, 9])), "{regions:?}");
        assert!(regions.iter().all(|(def, _)| *def > 1), "{regions:?}");
        // A class region (Cart, line 6) holds its methods' bodies; a decorated method's region
        // starts at its `def` line (12), not at `@classmethod` (11).
        let cart = &cov.files["src/shop/cart.py"];
        assert!(cart
            .regions
            .iter()
            .any(|(def, body)| *def == 6 && body.contains(&13) && body.contains(&31)));
        assert!(cart.regions.iter().any(|(def, _)| *def == 12) && !cart.regions.iter().any(|(def, _)| *def == 11));
        // A parametrised id containing `|`, and pytest's escaped non-ASCII id.
        let all: BTreeSet<&str> = pricing
            .witnesses
            .values()
            .flat_map(|w| w.keys())
            .map(|t| t.as_str())
            .collect();
        assert!(
            all.contains("tests/test_pricing.py::test_discount[half|code]"),
            "{all:?}"
        );
        assert!(
            all.contains("tests/test_pricing.py::test_discount[caf\\xe9]"),
            "{all:?}"
        );
        // Setup/teardown phases of the yield fixture (cart.py:13-17, 31-34).
        let cart = &cov.files["src/shop/cart.py"];
        assert_eq!(
            tests_of(cart, 31),
            [
                (
                    "tests/test_cart.py::TestCart::test_stocked_total".to_string(),
                    vec![Phase::Teardown]
                ),
                (
                    "tests/test_cart.py::test_stocked_subtotal".to_string(),
                    vec![Phase::Teardown]
                ),
            ]
        );
    }

    #[test]
    fn missing_lines_and_the_empty_init() {
        let cov = read(ALL_STABLE, &SHOP).unwrap();
        let util = &cov.files["src/shop/util.py"];
        for l in 19..=21 {
            assert!(
                util.missing.contains(&l),
                "util.py:{l} is missing (legacy_currency_code)"
            );
            assert!(!util.witnesses.contains_key(&l));
        }
        // `__init__.py` is empty: its only context entry is line 0, which is ignored.
        let init = &cov.files["src/shop/__init__.py"];
        assert_eq!(
            init,
            &FileCoverage {
                has_statements: true,
                ..Default::default()
            }
        );
    }

    #[test]
    fn a_file_the_matcher_does_not_name_is_not_materialised() {
        let cov = read(ALL_STABLE, &["src/shop/util.py", "README.md"]).unwrap();
        assert_eq!(cov.files.keys().collect::<Vec<_>>(), ["src/shop/util.py"]);
        assert_eq!(cov.measured_files, 5);
        // No file selected at all: test contexts are still found in skipped files.
        let cov = read(ALL_STABLE, &["docs/x.md"]).unwrap();
        assert!(cov.files.is_empty());
        assert!(cov.has_test_contexts);
        assert_eq!(cov.measured_files, 5);
    }

    #[test]
    fn new_module_in_source_is_measured_with_all_lines_missing() {
        let cov = read(NEW_MODULE, &["src/shop/loyalty.py", "tools/seed_catalog.py"]).unwrap();
        assert_eq!(cov.measured_files, 6);
        assert_eq!(cov.files.keys().collect::<Vec<_>>(), ["src/shop/loyalty.py"]);
        let l = &cov.files["src/shop/loyalty.py"];
        assert!(l.executed.is_empty() && l.witnesses.is_empty());
        assert_eq!(l.missing.iter().copied().collect::<Vec<_>>(), [4, 5, 6, 7]);
    }

    #[test]
    fn static_context_prefix_is_stripped() {
        let plain = read(ALL_STABLE, &SHOP).unwrap();
        let stat = read(STATIC_CONTEXT, &SHOP).unwrap();
        assert!(stat.has_test_contexts);
        // `py311` alone is import-time code under the static context, not foreign.
        assert!(stat.foreign_contexts.is_empty(), "{:?}", stat.foreign_contexts);
        for path in SHOP {
            let (a, b) = (&plain.files[path], &stat.files[path]);
            assert_eq!(a.witnesses, b.witnesses, "{path}");
            assert_eq!(a.import_time, b.import_time, "{path}");
            assert_eq!(a.executed, b.executed, "{path}");
        }
    }

    #[test]
    fn branch_report_gives_the_same_witnesses() {
        let line = read(ALL_STABLE, &SHOP).unwrap();
        let branch = read(BRANCH, &SHOP).unwrap();
        for path in SHOP {
            assert_eq!(line.files[path].witnesses, branch.files[path].witnesses, "{path}");
            assert_eq!(line.files[path].executed, branch.files[path].executed, "{path}");
        }
    }

    #[test]
    fn absolute_variant_json_is_relative_and_suffix_mapping_works() {
        // coverage json relativises to the cwd even without relative_files.
        let cov = read(ABSOLUTE, &SHOP).unwrap();
        assert!(cov.mapped_paths.is_empty());
        assert_eq!(cov.files.len(), 5);
        // Hand-made absolute names map by suffix, are listed, and merge.
        let json = br#"{"files": {
            "/home/ci/work/shop/src/shop/a.py": {"executed_lines": [1], "contexts": {"1": ["tests/t.py::test_a|run"]}},
            "src/shop/a.py": {"executed_lines": [2], "contexts": {"2": ["tests/t.py::test_b|setup"]}},
            "/home/ci/work/shop/lib/src/shop/b.py": {"executed_lines": [3]},
            "/elsewhere/xsrc/shop/a.py": {"executed_lines": [9]}
        }, "meta": {"show_contexts": true}}"#;
        let cov = read(json, &["src/shop/a.py", "src/shop/b.py"]).unwrap();
        assert_eq!(cov.measured_files, 4);
        assert_eq!(
            cov.mapped_paths,
            [
                (
                    "/home/ci/work/shop/src/shop/a.py".to_string(),
                    "src/shop/a.py".to_string()
                ),
                (
                    "/home/ci/work/shop/lib/src/shop/b.py".to_string(),
                    "src/shop/b.py".to_string()
                ),
            ]
        );
        let a = &cov.files["src/shop/a.py"];
        assert_eq!(a.executed.iter().copied().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(tests_of(a, 2), [("tests/t.py::test_b".to_string(), vec![Phase::Setup])]);
    }

    #[test]
    fn keys_in_any_order_and_unknown_keys() {
        let json = br#"{"totals": {"x": [1, {"y": null}]}, "files": {"a.py": {
            "contexts": {"3": ["t.py::test_x|run", "", "t.py::test_x|teardown"], "2": [""]},
            "future_key": {"deep": [[1.5e3, true, "s"]]},
            "executed_lines": [3, 2], "missing_lines": [4], "excluded_lines": [5],
            "functions": {"f": {"contexts": {"7": ["t.py::test_bogus|run"]}}}
        }}, "meta": {"version": "7.17.5", "show_contexts": true, "extra": {}}}"#;
        let cov = read(json, &["a.py"]).unwrap();
        let a = &cov.files["a.py"];
        assert_eq!(a.executed.iter().copied().collect::<Vec<_>>(), [2, 3]);
        assert_eq!(a.missing.iter().copied().collect::<Vec<_>>(), [4]);
        assert_eq!(a.excluded.iter().copied().collect::<Vec<_>>(), [5]);
        assert_eq!(
            tests_of(a, 3),
            [("t.py::test_x".to_string(), vec![Phase::Run, Phase::Teardown])]
        );
        assert_eq!(a.import_time.iter().copied().collect::<Vec<_>>(), [2, 3]);
        // Contexts of function/class regions are ignored (they repeat the file's).
        assert!(!a.witnesses.contains_key(&7));
    }

    #[test]
    fn excluded_lines_may_have_contexts() {
        let json = br#"{"meta": {"show_contexts": true}, "files": {"a.py": {"executed_lines": [1],
            "excluded_lines": [2], "contexts": {"1": ["t.py::test_a|run"], "2": ["t.py::test_a|run"]}}}}"#;
        let a = read(json, &["a.py"]).unwrap().files.remove("a.py").unwrap();
        assert!(a.excluded.contains(&2) && a.witnesses.contains_key(&2));
    }

    #[test]
    fn test_contexts_absent() {
        // `coverage json` without --show-contexts: no `contexts` key at all.
        let json = br#"{"meta": {"show_contexts": false}, "files": {"a.py": {"executed_lines": [1, 2], "missing_lines": []}}}"#;
        let cov = read(json, &["a.py"]).unwrap();
        assert!(!cov.has_test_contexts);
        assert_eq!(cov.files["a.py"].executed.len(), 2);
        // --show-contexts without --cov-context=test: every context is "".
        let json =
            br#"{"meta": {"show_contexts": true}, "files": {"a.py": {"executed_lines": [1], "contexts": {"1": [""]}},
            "b.py": {"contexts": {"1": [""]}}}}"#;
        assert!(!read(json, &["a.py"]).unwrap().has_test_contexts);
        // meta says no, whatever the files say.
        let json =
            br#"{"meta": {"show_contexts": false}, "files": {"a.py": {"contexts": {"1": ["t.py::test_a|run"]}}}}"#;
        assert!(!read(json, &["a.py"]).unwrap().has_test_contexts);
        // No meta (hand-made): the contexts decide.
        let json = br#"{"files": {"a.py": {"contexts": {"1": ["t.py::test_a|run"]}}}}"#;
        assert!(read(json, &["a.py"]).unwrap().has_test_contexts);
    }

    #[test]
    fn foreign_contexts_are_sampled() {
        let json = br#"{"meta": {"show_contexts": true}, "files": {"a.py": {"executed_lines": [1],
            "contexts": {"1": ["tests.test_a.test_x", "t.py::test_a|run"]}}}}"#;
        let cov = read(json, &["a.py"]).unwrap();
        assert_eq!(cov.foreign_contexts, ["tests.test_a.test_x"]);
        assert!(cov.has_test_contexts);
    }

    fn err(bytes: &[u8]) -> InputError {
        read(bytes, &SHOP).expect_err("must fail")
    }

    #[test]
    fn errors_carry_line_and_column() {
        let e = err(&ALL_STABLE[..ALL_STABLE.len() / 2]);
        assert!(e.location.line.is_some() && e.location.column.is_some(), "{e}");
        assert!(e.message.contains("EOF"), "{e}");
        assert_eq!(e.location.file, "coverage.json");

        let e = err(b"{\"meta\": {},\n  \"files\": {\"x.py\": [1,,2]}}");
        assert_eq!((e.location.line, e.location.column), (Some(2), Some(24)), "{e}");

        let e = err(b"garbage");
        assert_eq!(e.location.line, Some(1), "{e}");

        let e = err(b"[1, 2]");
        assert!(e.message.contains("coverage.py JSON report"), "{e}");

        let e = err(b"{\"meta\": {}}");
        assert!(
            e.location.line.is_none() && e.message.contains("no \"files\" object"),
            "{e}"
        );

        let e = err(b"{\"files\": {}} trailing");
        assert!(e.message.contains("trailing"), "{e}");

        // Wrong types in a selected file.
        let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"executed_lines\": [1, \"2\"]}}}");
        assert_eq!(e.location.line, Some(1), "{e}");
        assert!(e.message.contains("expected u32"), "{e}");
        let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"executed_lines\": [-3]}}}");
        assert!(e.message.contains("u32"), "{e}");
        let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"executed_lines\": {}}}}");
        assert!(e.message.contains("an array of line numbers"), "{e}");
        let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"1\": \"t.py::test_a|run\"}}}}");
        assert!(e.message.contains("an array of context names"), "{e}");
        let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"1\": [3]}}}}");
        assert!(e.message.contains("a context name"), "{e}");
        let e = err(b"{\"files\": [\"src/shop/cart.py\"]}");
        assert!(e.message.contains("file name"), "{e}");

        // A context line key that is no number.
        let e = err(b"{\"files\": {\n\"src/shop/cart.py\": {\"contexts\": {\"12a\": [\"\"]}}}}");
        assert_eq!(e.location.line, Some(2), "{e}");
        assert!(e.location.column.is_some());
        assert!(e.message.contains("\"12a\" is not a line number"), "{e}");
        let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"-1\": [\"\"]}}}}");
        assert!(e.message.contains("not a line number"), "{e}");
    }

    #[test]
    fn invalid_utf8_anywhere_is_an_error_with_position() {
        // In a skipped file (serde_json does not check skipped strings).
        let mut bytes = b"{\"files\": {\"skipped.py\": {\"contexts\": {\"1\": [\"t.py::test_".to_vec();
        bytes.extend_from_slice(b"\xff");
        bytes.extend_from_slice(b"|run\"]}}}}");
        let e = err(&bytes);
        assert_eq!((e.location.line, e.location.column), (Some(1), Some(58)), "{e}");
        assert!(e.message.contains("UTF-8"), "{e}");
        // On a later line, after a valid multi-byte character.
        let mut bytes = "{\"files\": {\n\"é.py\": {\"x\": \"".as_bytes().to_vec();
        bytes.extend_from_slice(b"\xc3\x28\"}}}");
        let e = err(&bytes);
        assert_eq!(e.location.line, Some(2), "{e}");
        assert_eq!(e.location.column, Some(17), "{e}");
        // A truncated multi-byte sequence at the very end.
        let e = err(b"{\"files\": {\"a\xc3");
        assert!(e.message.contains("UTF-8"), "{e}");
        // In a selected file.
        let e = err(b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"1\": [\"\xfe\"]}}}}");
        assert!(e.location.line.is_some(), "{e}");
        // An earlier syntax error wins over later invalid UTF-8.
        let e = err(b"{\"files\": {\"a\": [1,,]}, \"x\": \"\xff\"}");
        assert!(!e.message.contains("UTF-8"), "{e}");
    }

    /// A reader that returns at most `n` bytes per call (exercises the guard's
    /// handling of multi-byte characters split across reads).
    struct Trickle<'a>(&'a [u8], usize);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn split_reads_give_the_same_result() {
        let whole = read(ALL_STABLE, &SHOP).unwrap();
        for n in [1, 2, 3, 7, 4096] {
            let m = PathMatcher::new(SHOP);
            assert_eq!(
                read_json("coverage.json", Trickle(ALL_STABLE, n), &m).unwrap(),
                whole,
                "chunk {n}"
            );
        }
        let json = "{\"files\": {\"é/ü.py\": {\"contexts\": {\"1\": [\"t.py::test_ß[€]|run\"]}}}}".as_bytes();
        for n in 1..6 {
            let m = PathMatcher::new(["é/ü.py"]);
            let cov = read_json("c.json", Trickle(json, n), &m).unwrap();
            assert_eq!(
                tests_of(&cov.files["é/ü.py"], 1),
                [("t.py::test_ß[€]".to_string(), vec![Phase::Run])]
            );
        }
    }

    #[test]
    fn io_errors_are_reported() {
        struct Broken;
        impl std::io::Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk on fire"))
            }
        }
        let e = read_json("c.json", Broken, &PathMatcher::new(SHOP)).unwrap_err();
        assert!(e.message.contains("disk on fire"), "{e}");
    }
    /// The new reader with tiny blocks and buffers (every key, value and escape
    /// cut by a block's end; values streamed), the default one, and the previous
    /// reader: the same `Coverage`, or errors at the same line.
    fn agree(bytes: &[u8], paths: &[&str]) -> Result<Coverage, InputError> {
        let m = PathMatcher::new(paths.iter().copied());
        let old = read_json_stream("coverage.json", bytes, &m);
        for (block, most) in [
            (1, 1),
            (3, 5),
            (7, 64),
            (64, 1 << 10),
            (4096, 1 << 20),
            (scan::BLOCK, scan::BUFFER_AT_MOST),
        ] {
            let blocks = read_json_blocks("coverage.json", bytes, &m, block, most);
            // The slice path with the same steps; `consumed` only grows.
            let mut last = 0;
            let slice = read_json_slice_steps(
                "coverage.json",
                bytes,
                &m,
                &mut |n| {
                    assert!(n >= last && n <= bytes.len(), "consumed {n} after {last}");
                    last = n;
                },
                block,
                most,
            );
            for (path, new) in [("blocks", &blocks), ("slice", &slice)] {
                match (&old, new) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{path}: block {block}, buffer {most}"),
                    (Err(a), Err(b)) => {
                        // serde_json's reader path counts a raw newline inside a string before it
                        // names it a control character (next line, column 0); the block reader
                        // names the newline's own line (and streams a value past the buffer's
                        // bound through that same reader path).
                        let newline_in_string = |a: &InputError, b: &InputError| {
                            a.message.contains("control character")
                                && a.location.column == Some(0)
                                && a.location.line.map(|l| l - 1) == b.location.line
                        };
                        assert!(
                            a.location.line == b.location.line || newline_in_string(a, b) || newline_in_string(b, a),
                            "{path}: block {block}, buffer {most}: {a} / {b}"
                        );
                        assert_eq!(a.location.file, b.location.file);
                    }
                    _ => panic!("{path}: block {block}, buffer {most}: previous {old:?}, new {new:?}"),
                }
            }
        }
        old
    }

    #[test]
    fn the_previous_reader_agrees_on_every_embedded_report() {
        for bytes in [ALL_STABLE, STATIC_CONTEXT, BRANCH, ABSOLUTE, NEW_MODULE] {
            for paths in [
                &SHOP[..],
                &["src/shop/cart.py"],
                &[],
                &["src/shop/loyalty.py", "shop/util.py"],
            ] {
                agree(bytes, paths).unwrap();
            }
        }
    }

    #[test]
    fn the_previous_reader_agrees_on_the_error_cases() {
        let cases: [&[u8]; 14] = [
            b"",
            b"   ",
            b"garbage",
            b"[1, 2]",
            b"{\"meta\": {}}",
            b"{\"files\": {}} trailing",
            b"{\"files\": {},}",
            b"{\"files\": {\"a\" 1}}",
            b"{\"files\": {\"a\": 1 \"b\": 2}}",
            b"{\"files\": {1: 2}}",
            b"{\"meta\": {},\n  \"files\": {\"x.py\": [1,,2]}}",
            b"{\"files\": {\"a\\u00e9\\\"b\": {}, \"c\\q\": {}}}",
            b"{\"files\": {\"a\x01\": {}}}",
            b"{\"files\": {\"src/shop/cart.py\": {\"contexts\": {\"1\": [3]}}}}",
        ];
        for c in cases {
            let _ = agree(c, &SHOP);
        }
        // Numbers at the end of a file's value (cut by every block's end in `agree`).
        agree(b"{\"files\": {\"a\": 12, \"b\": -3.5e10, \"c\": true}}", &["x.py"]).unwrap();
        agree(b"{\"files\": {\"a\": {}}, \"totals\": 1234}", &["x.py"]).unwrap();
        assert!(agree(b"{\"files\": {\"a\\u00e9\\\"b\": {}}}", &["a\u{e9}\"b"])
            .unwrap()
            .files
            .contains_key("a\u{e9}\"b"));
    }

    #[test]
    fn errors_name_the_byte_offset() {
        let e = read(b"{\"files\": {\"a\": 1 \"b\": 2}}", &SHOP).unwrap_err();
        assert!(e.message.contains("(byte 18)"), "{e}");
        let mut bytes = b"{\"files\": {\"a\": \"".to_vec();
        bytes.extend_from_slice(b"\xff\"}}");
        let e = read(&bytes, &SHOP).unwrap_err();
        assert!(e.message.contains("byte 17"), "{e}");
    }

    /// (file name, [(line, contexts)]) of a generated report.
    type GenFile = (String, Vec<(u32, Vec<String>)>);

    /// A report shaped like coverage.py's, from generated parts.
    fn report(files: &[GenFile], pretty: bool) -> Vec<u8> {
        let mut fs = serde_json::Map::new();
        for (name, lines) in files {
            let contexts: serde_json::Map<String, serde_json::Value> = lines
                .iter()
                .map(|(l, cs)| (l.to_string(), serde_json::json!(cs)))
                .collect();
            let executed: Vec<u32> = lines.iter().map(|(l, _)| *l).collect();
            fs.insert(
                name.clone(),
                serde_json::json!({"executed_lines": executed, "summary": {"n": 1.5}, "missing_lines": [99],
                    "excluded_lines": [], "contexts": contexts,
                    "functions": {"f": {"start_line": 2, "executed_lines": executed, "contexts": contexts}}}),
            );
        }
        let v = serde_json::json!({"meta": {"show_contexts": true, "version": "7.17.5"}, "files": fs, "totals": {}});
        if pretty {
            serde_json::to_vec_pretty(&v).unwrap()
        } else {
            serde_json::to_vec(&v).unwrap()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        #[test]
        fn the_previous_reader_agrees_on_generated_reports(
            files in proptest::collection::vec(
                ("(src/)?[a-zé\\\\\"]{1,6}\\.py", proptest::collection::vec(
                    (0u32..40, proptest::collection::vec("(tests/t\\.py::test_[a-zß\\[\\]|\\\\\"]{1,8}\\|(run|setup|teardown))|py311|", 0..4)),
                    0..6)),
                0..6),
            pretty in any::<bool>(),
            pick in 0usize..8,
        ) {
            let bytes = report(&files, pretty);
            let names: Vec<&str> = files.iter().enumerate().filter(|(i, _)| i % 2 == pick % 2).map(|(_, f)| f.0.as_str()).collect();
            agree(&bytes, &names).unwrap();
            // Every truncation and a corrupted byte agree too.
            let cut = bytes.len() * pick / 8;
            let _ = agree(&bytes[..cut], &names);
            let mut bad = bytes.clone();
            if !bad.is_empty() {
                let at = bad.len() * pick / 8 % bad.len();
                bad[at] = [b',', b'}', b'"', b'\\', 0xff, b' ', b'1', b']'][pick];
                let _ = agree(&bad, &names);
            }
        }

        #[test]
        fn the_previous_reader_agrees_on_corrupted_real_reports(at in 0usize..ALL_STABLE.len(), byte in any::<u8>()) {
            let mut bytes = ALL_STABLE.to_vec();
            bytes[at] = byte;
            let _ = agree(&bytes, &SHOP);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = read(&bytes, &SHOP);
        }

        #[test]
        fn never_panics_on_json_like_bytes(s in r#"[{}\[\]":,0-9a-z|\\ \n.-]{0,200}"#) {
            let _ = read(s.as_bytes(), &["a.py", "b"]);
            let wrapped = format!("{{\"files\": {{\"a.py\": {{\"contexts\": {s}}}}}}}");
            let _ = read(wrapped.as_bytes(), &["a.py"]);
        }

        #[test]
        fn truncations_of_a_real_report_fail_cleanly(cut in 0usize..ALL_STABLE.len()) {
            let e = read(&ALL_STABLE[..cut], &SHOP);
            // Every proper prefix of the report is incomplete JSON.
            let e = e.expect_err("a truncated report must not parse");
            prop_assert!(e.location.line.is_some() || cut == 0, "{}", e);
        }

        #[test]
        fn corrupted_real_report_never_panics(at in 0usize..ALL_STABLE.len(), byte in any::<u8>()) {
            let mut bytes = ALL_STABLE.to_vec();
            bytes[at] = byte;
            let _ = read(&bytes, &SHOP);
        }
    }
}
