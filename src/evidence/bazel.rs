//! Bazel's test logs as evidence: `bazel-testlogs/<package>/<target>/coverage.dat`
//! (every test target writes its own LCOV tracefile under `bazel coverage`) and
//! `test.xml` beside it. The test id is the target label, `//package:target`:
//! a target is one test to the gate, whatever cases it ran inside.
//!
//! The directory comes from a pull request's CI: symbolic links are not followed,
//! and the walk is bounded in depth and in entries.

use crate::gate::error::{InputError, Location};
use crate::gate::nodeid::TestId;
use crate::gate::results::{Outcome, TestResult, TestResults};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// How deep a package path may be (`a/b/c/…/target`).
const MAX_DEPTH: usize = 32;
/// How many directory entries the walk visits at most.
const MAX_ENTRIES: usize = 200_000;

/// Every file named `name` under `root`, with the label of its target. Sharded and
/// repeated runs (`<target>/shard_1_of_4/`, `<target>/run_2_of_3/`) belong to the target.
pub fn files_named(root: &Path, name: &str) -> Result<Vec<(PathBuf, TestId)>, InputError> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let rd = std::fs::read_dir(&dir)
            .map_err(|e| InputError::new(Location::file(dir.display().to_string()), format!("cannot list: {e}")))?;
        for entry in rd.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(InputError::new(
                    Location::file(root.display().to_string()),
                    format!("more than {MAX_ENTRIES} entries: expected a bazel-testlogs directory"),
                ));
            }
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            let path = entry.path();
            if meta.is_dir() && depth < MAX_DEPTH {
                stack.push((path, depth + 1));
            } else if meta.is_file() && entry.file_name() == name {
                if let Some(label) = label_of(root, &path) {
                    out.push((path, label));
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// `root/calc/test_add/coverage.dat` → `//calc:test_add`; `root/t/coverage.dat` → `//:t`.
pub fn label_of(root: &Path, file: &Path) -> Option<TestId> {
    let rel = file.strip_prefix(root).ok()?;
    let mut parts: Vec<&str> = rel.iter().map(|p| p.to_str()).collect::<Option<_>>()?;
    parts.pop(); // the file name
    if parts.last().is_some_and(|p| is_shard_dir(p)) {
        parts.pop();
    }
    let target = parts.pop()?;
    if target.is_empty() || parts.iter().chain([&target]).any(|p| p.contains([':', ' '])) {
        return None;
    }
    Some(TestId::new(format!("//{}:{target}", parts.join("/"))))
}

fn is_shard_dir(p: &str) -> bool {
    let rest = p.strip_prefix("shard_").or_else(|| p.strip_prefix("run_"));
    rest.and_then(|r| r.split_once("_of_"))
        .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit()))
}

/// A file read, with its bytes (for its digest).
pub type FileRead = (PathBuf, Vec<u8>);

/// The head results of a bazel-testlogs directory: each target's `test.xml`, reduced to
/// one result for its label (failed if any case failed or errored, else passed, else
/// skipped). None when the directory holds no `test.xml`.
pub fn read_results(dir: &Path) -> Result<Option<(TestResults, Vec<FileRead>)>, InputError> {
    let files = files_named(dir, "test.xml")?;
    if files.is_empty() {
        return Ok(None);
    }
    let mut out = TestResults::default();
    let mut read = Vec::new();
    for (path, label) in files {
        let name = path.display().to_string();
        let (text, bytes) = super::read_text(&path)?;
        // Every case in the file belongs to the target: matched by nothing, read as unmatched.
        let r = crate::gate::results::parse_junit(&name, &text, &BTreeSet::new())?;
        let outcomes: Vec<(Outcome, Option<String>, String)> = r
            .tests
            .values()
            .map(|t| (t.outcome, t.message.clone(), t.source.clone()))
            .chain(
                r.unmatched
                    .iter()
                    .map(|u| (u.outcome, u.message.clone(), u.source.clone())),
            )
            .collect();
        let worst = outcomes
            .iter()
            .find(|(o, _, _)| o.is_failure())
            .or_else(|| outcomes.iter().find(|(o, _, _)| *o == Outcome::Passed))
            .or_else(|| outcomes.first());
        match worst {
            Some((o, m, s)) => {
                out.tests.insert(
                    label,
                    TestResult {
                        outcome: *o,
                        phase: None,
                        message: m.clone(),
                        source: s.clone(),
                        // A label's attempts are Bazel's (`--flaky_test_attempts`), not read here.
                        reruns: 0,
                    },
                );
            }
            None => {
                return Err(InputError::new(
                    Location::file(&name),
                    format!("no test case in the test.xml of {label}: expected at least one <testcase>"),
                ))
            }
        }
        out.collection_errors.extend(r.collection_errors);
        read.push((path, bytes));
    }
    Ok(Some((out, read)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        let root = Path::new("/x/bazel-testlogs");
        let l = |p: &str| label_of(root, &root.join(p)).map(|t| t.0);
        assert_eq!(l("calc/test_add/coverage.dat").as_deref(), Some("//calc:test_add"));
        assert_eq!(l("a/b/t/shard_1_of_4/coverage.dat").as_deref(), Some("//a/b:t"));
        assert_eq!(l("t/coverage.dat").as_deref(), Some("//:t"));
        assert_eq!(l("coverage.dat"), None);
        assert_eq!(l("a:b/t/coverage.dat"), None);
    }
}
