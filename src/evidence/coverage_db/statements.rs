//! The `.coverage` data file classified with the head's source against the same run's
//! coverage.json: the same statements, missing and excluded lines, witnesses and
//! import-time lines, file by file, on every run under `tests/fixtures/` that kept both
//! (the shop's cases, the head rebuilt from the project and the case's diff; and
//! `tests/fixtures/statements/`, real runs of modules in the shapes where a line is not a
//! statement, hand-written and generated from a seed, in line and branch mode).

use super::*;
use crate::gate::coverage::json::read_json;
use crate::gate::coverage::statements::PythonStatements;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Read both files of one run for `sources` (repository path → head text), classify the
/// data file's, and compare file by file. Returns the statements compared.
fn assert_agree(what: &str, json: &Path, db: &Path, sources: &BTreeMap<String, String>) -> usize {
    let matcher = PathMatcher::new(sources.keys().map(String::as_str));
    let j = read_json(
        &json.display().to_string(),
        std::fs::File::open(json).unwrap(),
        &matcher,
    )
    .unwrap();
    let mut d = read_data_file(db, &matcher).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(
        j.files.keys().collect::<Vec<_>>(),
        d.files.keys().collect::<Vec<_>>(),
        "{what}: files"
    );
    let mut compared = 0;
    for (path, fd) in d.files.iter_mut() {
        let statements = PythonStatements::parse(&sources[path]).unwrap_or_else(|e| panic!("{what}: {path}: {e}"));
        fd.classify_statements(&statements);
        let mut fj = j.files[path].clone();
        // Function regions are coverage.json's own (the gate reads them only without a source).
        fj.regions.clear();
        assert_eq!(fd.executed, fj.executed, "{what}: {path}: executed");
        assert_eq!(fd.missing, fj.missing, "{what}: {path}: missing");
        assert_eq!(fd.excluded, fj.excluded, "{what}: {path}: excluded");
        assert_eq!(*fd, fj, "{what}: {path}");
        compared += fj.executed.len() + fj.missing.len();
    }
    compared
}

#[test]
fn statements_fixtures_agree_in_line_and_branch_mode() {
    let out = fixtures().join("statements/out");
    let mut sources = BTreeMap::new();
    for e in std::fs::read_dir(out.join("src/stmts")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "py") {
            let name = p.file_name().unwrap().to_string_lossy();
            sources.insert(format!("src/stmts/{name}"), std::fs::read_to_string(&p).unwrap());
        }
    }
    assert!(sources.len() >= 10, "modules: {:?}", sources.keys());
    for mode in ["line", "branch"] {
        let dir = out.join(mode);
        let n = assert_agree(mode, &dir.join("coverage.json"), &dir.join(".coverage"), &sources);
        assert!(n > 500, "{mode}: compared only {n} statements");
    }
}

#[test]
fn every_case_agrees_with_the_head_rebuilt_from_its_diff() {
    let cases = fixtures().join("cases");
    let mut names: Vec<_> = std::fs::read_dir(&cases)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.len() >= 13, "fixture cases missing: {names:?}");
    let base = fixtures().join("project");
    let mut compared = 0;
    for name in names {
        let dir = cases.join(&name);
        let what = name.to_string_lossy().to_string();
        let diff = std::fs::read(dir.join("diff.patch")).unwrap();
        let patch = crate::gate::patch::parse_patch("diff.patch", &diff).unwrap();
        let mut sources = BTreeMap::new();
        for f in patch.files.iter().filter(|f| f.path.ends_with(".py")) {
            let old = std::fs::read_to_string(base.join(&f.path)).unwrap_or_default();
            let head = f.new_side(&old).unwrap_or_else(|e| panic!("{what}: {}: {e}", f.path));
            sources.insert(f.path.clone(), head);
        }
        for e in std::fs::read_dir(base.join("src/shop")).unwrap() {
            let p = e.unwrap().path();
            let path = format!("src/shop/{}", p.file_name().unwrap().to_string_lossy());
            if !sources.contains_key(&path) && p.extension().is_some_and(|x| x == "py") {
                sources.insert(path, std::fs::read_to_string(&p).unwrap());
            }
        }
        let ev = dir.join("evidence");
        compared += assert_agree(&what, &ev.join("coverage.json"), &ev.join(".coverage"), &sources);
    }
    assert!(compared > 500, "compared only {compared} statements");
}
