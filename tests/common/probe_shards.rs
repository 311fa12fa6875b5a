//! Probe shards as a CI matrix uploads them (one directory per job: its runs and a
//! `meta.json`), made from the committed probe runs (`tests/fixtures/probe/reportlog`, real
//! pytest report-logs). Shared by the CLI and App test binaries.

use std::path::{Path, PathBuf};

fn reportlog() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/probe/reportlog")
}

/// Shard `dir/name/`: the committed runs `run-N.jsonl` for each N of `runs`, and `meta` as its
/// `meta.json`.
pub fn write_shard(dir: &Path, name: &str, runs: impl IntoIterator<Item = u32>, meta: &str) {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    for n in runs {
        let f = format!("run-{n}.jsonl");
        std::fs::copy(reportlog().join(&f), d.join(&f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    std::fs::write(d.join("meta.json"), meta).unwrap();
}
