//! The coverage JSON readers (block scan and whole-slice scan, issue 12) against the previous
//! one (serde_json's reader path, the test oracle `read_json_stream` of
//! `tests/common/coverage_oracle.rs`): the same `Coverage` on every real report under
//! `tests/fixtures/` and on reports written by `scripts/gen-coverage-json.py` (read from a
//! slice, from blocks, and from the mapped file as `flakegate check` reads it).

use crate::coverage_oracle::read_json_stream;
use flakegate::gate::coverage::json::{read_json, read_json_slice};
use flakegate::gate::coverage::{KeepLines, PathMatcher};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn reports(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            reports(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            let bytes = std::fs::read(&p).unwrap();
            if bytes.starts_with(b"{\"meta\"") && bytes.windows(9).any(|w| w == b"\"files\": ") {
                out.push(p);
            }
        }
    }
}

/// Every measured file of the report, and matchers over all of them, half of them,
/// and with only some lines' witnesses kept.
fn matchers(bytes: &[u8]) -> Vec<PathMatcher> {
    let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    let names: Vec<String> = v["files"].as_object().unwrap().keys().cloned().collect();
    let all = PathMatcher::new(names.iter().map(String::as_str));
    let half = PathMatcher::new(names.iter().step_by(2).map(String::as_str));
    let keep: BTreeMap<String, KeepLines> = names
        .iter()
        .map(|n| {
            let k = KeepLines {
                lines: (1..400).step_by(7).collect(),
                from: Some(60),
            };
            (n.clone(), k)
        })
        .collect();
    let kept = PathMatcher::new(names.iter().map(String::as_str)).keeping(keep);
    vec![all, half, kept, PathMatcher::new(["nothing.py"])]
}

fn assert_agree(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    for m in matchers(&bytes) {
        let name = path.display().to_string();
        let new = read_json(&name, &bytes[..], &m).unwrap();
        let old = read_json_stream(&name, &bytes[..], &m).unwrap();
        assert_eq!(new, old, "{name}");
        // The whole input as one slice (a mapped file), and as `flakegate check` maps it.
        let mut consumed = 0;
        let slice = read_json_slice(&name, &bytes, &m, &mut |n| {
            assert!(n >= consumed && n <= bytes.len());
            consumed = n;
        })
        .unwrap();
        assert_eq!(slice, old, "{name}");
        assert_eq!(flakegate::evidence::read_json_mapped(path, &m).unwrap(), old, "{name}");
    }
}

#[test]
fn the_block_reader_agrees_with_the_previous_one_on_every_fixture() {
    let mut found = Vec::new();
    reports(&root().join("tests/fixtures"), &mut found);
    assert!(found.len() >= 40, "fixture reports: {found:?}");
    for p in &found {
        assert_agree(p);
    }
}

#[test]
fn the_block_reader_agrees_with_the_previous_one_on_generated_reports() {
    let t = tempfile::tempdir().unwrap();
    // 30 files of about 230 kB: several 4 MiB blocks, entries cut at their ends.
    for (i, flags) in [&[][..], &["--pretty"], &["--absolute", "--seed", "7"]]
        .iter()
        .enumerate()
    {
        let json = t.path().join(format!("cov{i}.json"));
        let diff = t.path().join(format!("cov{i}.diff"));
        let st = std::process::Command::new("python3")
            .arg(root().join("scripts/gen-coverage-json.py"))
            .args([&json, &diff])
            .args(["--files", "30"])
            .args(*flags)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("python3 runs the generator");
        assert!(st.success());
        assert!(std::fs::metadata(&json).unwrap().len() > 4 << 20);
        assert_agree(&json);
    }
}
