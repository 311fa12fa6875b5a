//! Reading the runs' result files: after live runs, or from files produced
//! elsewhere (`--from`). Files are parsed in a fixed order — report-logs
//! first, then by run — and the node ids each reveals help match the next
//! JUnit file, so the outcome does not depend on which run finished first.

use crate::gate::nodeid::TestId;
use crate::gate::results::{self, ResultFormat};
use crate::probe::exec::{log_tail, RunEnd, RunRecord};
use crate::probe::summary::{ResultsRead, RunInput};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A run's raw text, before parsing.
struct Raw {
    input: RunInput,
    name: String,
    text: Option<Result<String, String>>,
}

fn read(path: &Path) -> Option<Result<String, String>> {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(format!("{}: cannot read: {e}", path.display()))),
        Ok(b) if b.iter().all(u8::is_ascii_whitespace) => None,
        Ok(b) => Some(crate::gate::error::text_of(&path.display().to_string(), &b).map_err(|e| e.to_string())),
    }
}

fn parse_all(mut raws: Vec<Raw>, known: &BTreeSet<TestId>) -> Vec<RunInput> {
    let mut known = known.clone();
    let mut order: Vec<usize> = (0..raws.len()).collect();
    order.sort_by_key(|&i| {
        let is_log = matches!(&raws[i].text, Some(Ok(t)) if results::sniff(t) == Some(ResultFormat::ReportLog));
        (!is_log, raws[i].input.index)
    });
    for i in order {
        let raw = &mut raws[i];
        raw.input.results = match raw.text.take() {
            None => ResultsRead::Missing,
            Some(Err(e)) => ResultsRead::Unreadable(e),
            Some(Ok(t)) => match results::parse_any(&raw.name, &t, &known) {
                Ok(r) => {
                    known.extend(r.tests.keys().cloned());
                    ResultsRead::Parsed(r)
                }
                Err(e) => ResultsRead::Unreadable(e.to_string()),
            },
        };
    }
    raws.into_iter().map(|r| r.input).collect()
}

/// Read the results of executed runs. `keep`: whether the files outlive the
/// probe (then their paths are reported).
pub fn read_runs(records: &[RunRecord], known: &BTreeSet<TestId>, keep: bool) -> Vec<RunInput> {
    let raws = records
        .iter()
        .map(|rec| {
            let text = read(&rec.results_path);
            let tail = match &rec.end {
                RunEnd::Exited { code: Some(0 | 1), .. } => None,
                _ => rec.log_path.as_deref().and_then(|p| log_tail(p, 20)),
            };
            // A run that wrote nothing usable always gets its output's tail.
            let tail = tail.or_else(|| {
                if text.is_none() {
                    rec.log_path.as_deref().and_then(|p| log_tail(p, 20))
                } else {
                    None
                }
            });
            Raw {
                name: rec.results_path.display().to_string(),
                input: RunInput {
                    index: rec.index,
                    source: keep.then(|| rec.results_path.display().to_string()),
                    end: rec.end.clone(),
                    results: ResultsRead::Missing,
                    log_tail: tail,
                    duration: Some(rec.duration),
                },
                text,
            }
        })
        .collect();
    parse_all(raws, known)
}

/// Natural order: `run-2` before `run-10`.
fn natural_key(s: &str) -> Vec<(String, u128)> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut num = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
        } else {
            if !num.is_empty() {
                out.push((std::mem::take(&mut text), num.parse().unwrap_or(u128::MAX)));
                num.clear();
            }
            text.push(c);
        }
    }
    out.push((text, num.parse().unwrap_or(0)));
    out
}

/// The result files named by `--from`: files as given, and each directory's
/// regular files (not hidden, not `probe.json`) in natural order.
pub fn list_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let rd = std::fs::read_dir(p).map_err(|e| format!("{}: cannot list: {e}", p.display()))?;
            let mut files: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file())
                .filter(|f| {
                    let n = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    // meta.json: a CI shard's own (checked by `flakegate probe --from`), not a run.
                    !n.starts_with('.') && n != "probe.json" && n != "meta.json" && !n.ends_with(".log")
                })
                .collect();
            files.sort_by_cached_key(|f| natural_key(&f.display().to_string()));
            if files.is_empty() {
                return Err(format!(
                    "{}: no result files in this directory (expected one report-log or JUnit file per run)",
                    p.display()
                ));
            }
            out.extend(files);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or directory", p.display()));
        }
    }
    Ok(out)
}

/// Each file is one run, numbered in order.
pub fn import_files(files: &[PathBuf], known: &BTreeSet<TestId>) -> Vec<RunInput> {
    let raws = files
        .iter()
        .enumerate()
        .map(|(i, f)| Raw {
            name: f.display().to_string(),
            input: RunInput {
                index: i as u32 + 1,
                source: Some(f.display().to_string()),
                end: RunEnd::Imported,
                results: ResultsRead::Missing,
                log_tail: None,
                duration: None,
            },
            text: read(f),
        })
        .collect();
    parse_all(raws, known)
}

#[cfg(test)]
mod tests {
    use super::natural_key;

    #[test]
    fn natural_order() {
        let mut v = vec!["d/run-10.jsonl", "d/run-2.jsonl", "d/run-1.jsonl", "c/run-3.jsonl"];
        v.sort_by_cached_key(|s| natural_key(s));
        assert_eq!(
            v,
            vec!["c/run-3.jsonl", "d/run-1.jsonl", "d/run-2.jsonl", "d/run-10.jsonl"]
        );
    }
}
