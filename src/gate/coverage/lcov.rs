//! Per-test coverage from LCOV tracefiles (`lcov --capture --test-name NAME`,
//! `geninfo -t`, concatenated): each record's `TN:` names the test that produced
//! it. The reader streams a tracefile line by line and keeps, as the JSON reader
//! does, only the files the patch touches and the witnesses of the lines the gate
//! reads; one record (one source file of one test) is buffered at a time.
//!
//! What is read (the LCOV format, `man geninfo`):
//! - `TN:name` starts a test's section; an empty `TN:` (a capture without
//!   `--test-name`) is not a test: its lines count as executable and executed,
//!   but witness nothing.
//! - `SF:path` … `end_of_record`: one source file. Paths map onto the patch's
//!   paths as coverage.py's do ([`PathMatcher`]): relative, absolute (by suffix).
//! - `DA:line,count[,checksum]`: count > 0 executed, 0 executable but missed.
//! - `FN:line[,end_line],name` and `FNDA:count,name`: function scopes, so a
//!   changed function header takes the witnesses of its body (lcov 2 writes the
//!   end line; without it a body runs to the next function's first line).
//! - `BRDA`, `BRF`, `BRH`, `LF`, `LH`, `FNF`, `FNH`, `VER`: accepted, not needed.
//!
//! Anything else is an error naming the file, the line and what was expected.

use super::{insert_file, Coverage, CoverageFormat, FileCoverage, PathMatcher};
use crate::gate::error::{InputError, Location};
use crate::gate::nodeid::{Phase, TestId};
use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;

/// The longest line accepted (a function name of a C++ template can be long;
/// nothing legitimate is megabytes).
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;

/// Reads one or more tracefiles into one [`Coverage`].
#[derive(Debug)]
pub(crate) struct LcovReader<'m> {
    matcher: &'m PathMatcher,
    files: BTreeMap<String, FileCoverage>,
    mapped_paths: Vec<(String, String)>,
    measured: BTreeSet<String>,
    seen_test: bool,
    notes: Vec<String>,
}

/// The record being read: one `SF:` of one test.
#[derive(Debug, Default)]
struct Record {
    /// (coverage path, repository path, by suffix); None: a file the patch does not touch.
    target: Option<(String, String, bool)>,
    /// line → count
    lines: BTreeMap<u32, u64>,
    /// function name → (first line, end line)
    functions: BTreeMap<String, (u32, Option<u32>)>,
    /// function name → count
    function_counts: BTreeMap<String, u64>,
    /// Where `SF:` was, for errors at `end_of_record`.
    start: usize,
}

impl<'m> LcovReader<'m> {
    pub fn new(matcher: &'m PathMatcher) -> Self {
        LcovReader {
            matcher,
            files: BTreeMap::new(),
            mapped_paths: Vec::new(),
            measured: BTreeSet::new(),
            seen_test: false,
            notes: Vec::new(),
        }
    }

    /// Read one tracefile named `file`. With `label`, every record is that test
    /// whatever its `TN:` says (Bazel's per-target `coverage.dat`: the target is the test).
    pub fn read(&mut self, file: &str, mut input: impl BufRead, label: Option<&TestId>) -> Result<(), InputError> {
        let mut buf = Vec::new();
        let mut lineno = 0usize;
        let mut test: Option<TestId> = label.cloned();
        let mut record: Option<Record> = None;
        let mut saw_anything = false;
        loop {
            buf.clear();
            let mut bounded = std::io::Read::take(&mut input, MAX_LINE_BYTES as u64 + 1);
            let n = bounded
                .read_until(b'\n', &mut buf)
                .map_err(|e| InputError::new(Location::file(file), format!("cannot read: {e}")))?;
            if n == 0 {
                break;
            }
            lineno += 1;
            let at = |msg: String| InputError::new(Location::at(file, lineno, Some(1)), msg);
            if buf.len() > MAX_LINE_BYTES && !buf.ends_with(b"\n") {
                return Err(at(format!(
                    "line longer than {MAX_LINE_BYTES} bytes: expected an LCOV tracefile line"
                )));
            }
            let text = std::str::from_utf8(&buf).map_err(|e| {
                at(format!(
                    "not UTF-8 (byte {}): expected an LCOV tracefile",
                    e.valid_up_to()
                ))
            })?;
            let line = text.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            saw_anything = true;
            if line == "end_of_record" {
                let Some(r) = record.take() else {
                    return Err(at("end_of_record without a preceding SF: line".into()));
                };
                self.finish_record(r, test.as_ref());
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(at(format!(
                    "expected KEY:VALUE (TN:, SF:, DA:, FN:, FNDA:, …) or end_of_record, found {:?}",
                    clip(line)
                )));
            };
            match key {
                "TN" => {
                    if record.is_some() {
                        return Err(at("TN: inside a record: expected end_of_record first".into()));
                    }
                    if label.is_none() {
                        let name = value.trim();
                        test = (!name.is_empty()).then(|| TestId::new(name));
                    }
                }
                "SF" => {
                    if let Some(r) = &record {
                        return Err(at(format!(
                            "SF: inside the record opened at line {}: expected end_of_record first",
                            r.start
                        )));
                    }
                    if value.is_empty() {
                        return Err(at("SF: with an empty path: expected a source file path".into()));
                    }
                    self.measured.insert(value.to_string());
                    let target = self
                        .matcher
                        .map(value)
                        .map(|(repo, suffix)| (value.to_string(), repo, suffix));
                    record = Some(Record {
                        target,
                        start: lineno,
                        ..Record::default()
                    });
                }
                "DA" | "FN" | "FNDA" | "BRDA" | "BRF" | "BRH" | "LF" | "LH" | "FNF" | "FNH" => {
                    let Some(r) = record.as_mut() else {
                        return Err(at(format!("{key}: outside a record: expected SF: first")));
                    };
                    if r.target.is_none() {
                        continue; // a file the patch does not touch: not parsed further
                    }
                    match key {
                        "DA" => {
                            let mut it = value.splitn(3, ',');
                            let l = number(it.next(), "DA: line number").map_err(&at)?;
                            let c = count(it.next(), "DA: execution count").map_err(&at)?;
                            if l == 0 {
                                return Err(at("DA: line 0: expected a line number from 1".into()));
                            }
                            let e = r.lines.entry(l).or_insert(0);
                            *e = e.saturating_add(c);
                        }
                        "FN" => {
                            let parts: Vec<&str> = value.splitn(3, ',').collect();
                            let (first, end, name) = match parts.as_slice() {
                                [l, name] => (number(Some(l), "FN: line number").map_err(&at)?, None, *name),
                                [l, e, name] => (
                                    number(Some(l), "FN: line number").map_err(&at)?,
                                    Some(number(Some(e), "FN: end line number").map_err(&at)?),
                                    *name,
                                ),
                                _ => return Err(at(format!("expected FN:line,name, found {:?}", clip(line)))),
                            };
                            if name.is_empty() || first == 0 {
                                return Err(at(format!("expected FN:line,name, found {:?}", clip(line))));
                            }
                            r.functions.insert(name.to_string(), (first, end.filter(|&e| e >= first)));
                        }
                        "FNDA" => {
                            let Some((c, name)) = value.split_once(',') else {
                                return Err(at(format!("expected FNDA:count,name, found {:?}", clip(line))));
                            };
                            let c = count(Some(c), "FNDA: execution count").map_err(&at)?;
                            let e = r.function_counts.entry(name.to_string()).or_insert(0);
                            *e = e.saturating_add(c);
                        }
                        _ => {}
                    }
                }
                "VER" => {}
                _ => {
                    return Err(at(format!(
                        "unknown LCOV record {key:?}: expected TN:, SF:, DA:, FN:, FNDA:, BRDA:, LF:, LH:, … or end_of_record"
                    )))
                }
            }
        }
        if let Some(r) = record {
            return Err(InputError::new(
                Location::at(file, r.start, Some(1)),
                "the record opened here has no end_of_record: the tracefile is truncated",
            ));
        }
        if !saw_anything {
            return Err(InputError::new(
                Location::file(file),
                "empty tracefile: expected LCOV records (TN:, SF:, DA:, end_of_record)",
            ));
        }
        Ok(())
    }

    fn finish_record(&mut self, r: Record, test: Option<&TestId>) {
        let Some((cov_path, repo, by_suffix)) = r.target else {
            if test.is_some() {
                self.seen_test = true;
            }
            return;
        };
        let mut fc = FileCoverage {
            has_statements: true,
            ..FileCoverage::default()
        };
        let mut lines = r.lines;
        // A function that ran has run its first line, whatever DA says.
        for (name, (first, _)) in &r.functions {
            let c = r.function_counts.get(name).copied().unwrap_or(0);
            let e = lines.entry(*first).or_insert(0);
            *e = (*e).max(c);
        }
        // Function scopes: body lines are the DA lines after the first line, to the end
        // line, else up to the next function's first line.
        let starts: BTreeSet<u32> = r.functions.values().map(|(f, _)| *f).collect();
        for (first, end) in r.functions.values() {
            let stop = end.map_or_else(|| starts.range(first + 1..).next().map_or(u32::MAX, |n| n - 1), |e| e);
            if stop > *first {
                let body: BTreeSet<u32> = lines.range(first + 1..=stop).map(|(l, _)| *l).collect();
                fc.regions.entry(*first).or_default().extend(body);
            }
        }
        let kept_regions: Vec<&BTreeSet<u32>> = fc
            .regions
            .iter()
            .filter(|(def, _)| self.matcher.keeps(&repo, **def))
            .map(|(_, body)| body)
            .collect();
        let mut witnessed = Vec::new();
        for (&l, &c) in &lines {
            if c == 0 {
                fc.missing.insert(l);
                continue;
            }
            fc.executed.insert(l);
            if test.is_some() && (self.matcher.keeps(&repo, l) || kept_regions.iter().any(|b| b.contains(&l))) {
                witnessed.push(l);
            }
        }
        match test {
            Some(t) => {
                self.seen_test = true;
                if !fc.executed.is_empty() {
                    fc.tests.insert(t.clone());
                }
                for l in witnessed {
                    fc.witnesses
                        .entry(l)
                        .or_default()
                        .entry(t.clone())
                        .or_default()
                        .insert(Phase::Run);
                }
            }
            None => {
                let note = "TN: (empty: a capture without --test-name; its lines witness no test)".to_string();
                if !self.notes.contains(&note) {
                    self.notes.push(note);
                }
            }
        }
        insert_file(
            &mut self.files,
            &mut self.mapped_paths,
            &cov_path,
            (repo, by_suffix),
            fc,
        );
    }

    /// The coverage of everything read.
    pub fn finish(mut self, format: CoverageFormat) -> Coverage {
        // A line one test missed and another ran is executed.
        for fc in self.files.values_mut() {
            let executed = fc.executed.clone();
            fc.missing.retain(|l| !executed.contains(l));
        }
        self.mapped_paths.sort();
        self.mapped_paths.dedup();
        Coverage {
            format,
            files: self.files,
            measured_files: self.measured.len(),
            mapped_paths: self.mapped_paths,
            foreign_contexts: self.notes,
            has_test_contexts: self.seen_test,
        }
    }
}

/// Read one tracefile (a stream) into coverage.
pub fn read_lcov(file: &str, input: impl BufRead, matcher: &PathMatcher) -> Result<Coverage, InputError> {
    let mut r = LcovReader::new(matcher);
    r.read(file, input, None)?;
    Ok(r.finish(CoverageFormat::Lcov))
}

/// Does this text start like an LCOV tracefile?
pub(crate) fn looks_like_lcov(head: &[u8]) -> bool {
    let t = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let t = &t[t.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(t.len())..];
    ["TN:", "SF:", "VER:"].iter().any(|k| t.starts_with(k.as_bytes()))
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn number(s: Option<&str>, what: &str) -> Result<u32, String> {
    let s = s.unwrap_or("").trim();
    s.parse::<u32>()
        .map_err(|_| format!("{what}: expected a non-negative integer, found {:?}", clip(s)))
}

/// Execution counts: gcov can write large ones, and some tools write `-1` for
/// "not instrumented"… which is not a count: an error.
fn count(s: Option<&str>, what: &str) -> Result<u64, String> {
    let s = s.unwrap_or("").trim();
    if let Ok(n) = s.parse::<u64>() {
        return Ok(n);
    }
    // lcov writes very large counts as floats in some versions (`1.5e+10`).
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 => Ok(f as u64),
        _ => Err(format!("{what}: expected a non-negative count, found {:?}", clip(s))),
    }
}

#[cfg(test)]
mod tests;
