//! `coverage json --show-contexts` output → [`Coverage`]: [`read_json`] (a block
//! reader with a structural scan, in `scan`) and [`read_json_slice`] (the same scan
//! over the whole input in memory, e.g. a mapped file), and the serde visitors they
//! share. The previous reader (serde_json's reader path over the whole input), the
//! tests' equivalence oracle and the benchmark's baseline, is test code:
//! `tests/common/coverage_oracle.rs`, reading through [`visit_report`].

mod scan;
mod skip;

use super::{insert_file, ContextCollector, Coverage, CoverageFormat, FileCoverage, PathMatcher};
use crate::gate::error::{InputError, Location};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

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
    /// Where each selected file goes once read, instead of `files` ([`read_json_slice_each`]).
    pub sink: Option<&'m mut dyn FnMut(String, FileCoverage)>,
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
            sink: None,
        }
    }

    /// A selected file, read: into `files` (merged with an earlier entry of the same
    /// repository path), or handed to the sink.
    fn add(&mut self, coverage_path: &str, mapped: (String, bool), fc: FileCoverage) {
        match self.sink.as_mut() {
            Some(sink) => sink(mapped.0, fc),
            None => insert_file(&mut self.files, &mut self.mapped_paths, coverage_path, mapped, fc),
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
                    st.add(&coverage_path, mapped, fc);
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

/// [`read_json_slice`] handing each selected file to `each` as soon as it is read, instead of
/// keeping it: the memory is one file's coverage at a time, whatever the report's size. The
/// [`Coverage`] returned has no files; the rest (`has_test_contexts`, `measured_files`, …) is
/// as [`read_json_slice`]'s. Two report entries that name one path reach `each` one by one.
/// Lines of a file handed over before the report showed a static context prefix are not
/// marked import-time (they ran under no test context either way).
pub fn read_json_slice_each(
    file: &str,
    bytes: &[u8],
    matcher: &PathMatcher,
    consumed: &mut dyn FnMut(usize),
    each: &mut dyn FnMut(String, FileCoverage),
) -> Result<Coverage, InputError> {
    let mut state = State::new(matcher);
    state.sink = Some(each);
    scan::scan_slice(
        file,
        bytes,
        consumed,
        &mut state,
        scan::SLICE_STEP,
        scan::BUFFER_AT_MOST,
    )?;
    finish(file, state)
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

/// The report's serde visitors over any [`Deserializer`], for a reader other than
/// the scan: the tests' oracle (serde_json's reader path over the whole input,
/// `tests/common/coverage_oracle.rs`) reads through it, so that it keeps of a report
/// exactly what the scan keeps. [`Visited::finish`] ends the read as the scan's does.
#[doc(hidden)]
pub fn visit_report<'de, 'm, D: Deserializer<'de>>(de: D, matcher: &'m PathMatcher) -> Result<Visited<'m>, D::Error> {
    let mut state = State::new(matcher);
    (&mut state).deserialize(de)?;
    Ok(Visited(state))
}

/// A report [`visit_report`] has read.
#[doc(hidden)]
pub struct Visited<'m>(State<'m>);

impl Visited<'_> {
    /// The [`Coverage`], or the error for a report without a `files` object.
    pub fn finish(self, file: &str) -> Result<Coverage, InputError> {
        finish(file, self.0)
    }
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
mod tests;
