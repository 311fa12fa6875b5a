//! The evidence artifact zip: written to a file and extracted by `extract_zip` into a fresh
//! directory (small caps, so a bomb is refused quickly); nothing may land outside it.
#![no_main]

#[path = "common.rs"]
mod common;

use flakegate::github::artifact::{extract_zip, ArtifactLimits};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fn all_inside(dir: &Path, root: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        assert!(!kind.is_symlink(), "a symlink was extracted: {:?}", entry.path());
        let path = entry.path();
        assert!(path.starts_with(root));
        if kind.is_dir() {
            all_inside(&path, root);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let scratch = common::scratch();
    let zip = scratch.join("artifact.zip");
    std::fs::write(&zip, data).unwrap();
    let dest = scratch.join("out");
    let _ = std::fs::remove_dir_all(&dest);
    let limits = ArtifactLimits {
        max_download_bytes: 1 << 20,
        max_inflated_bytes: 4 << 20,
        max_entries: 200,
        max_ratio: 200,
        ratio_grace_bytes: 64 << 10,
        max_directory_bytes: 1 << 20,
    };
    let result = extract_zip(&zip, &dest, &limits);
    if let Ok(total) = result {
        assert!(total <= limits.max_inflated_bytes);
    }
    if dest.is_dir() {
        all_inside(&dest, &dest);
    }
    // Nothing but the zip and the extraction directory in the scratch directory.
    for entry in std::fs::read_dir(scratch).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            name == "artifact.zip" || name == "out",
            "written outside the destination: {name:?}"
        );
    }
});
