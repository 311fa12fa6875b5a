//! Helpers shared by the command-line tests.

use std::path::Path;

/// Run git in `dir` (`tests/common/git.rs`); returns stdout, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    crate::git_cmd::git_output(dir, args).trim().to_string()
}

/// Copy `from` into `to` recursively, leaving out Python's caches (a fixture tree must be
/// committed exactly as regen.sh committed it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "__pycache__" || name == ".pytest_cache" {
            continue;
        }
        let target = to.join(&name);
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}
