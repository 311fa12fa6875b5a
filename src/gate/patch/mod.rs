//! The patch: which files a pull request touches and which new-side lines it
//! adds. Two readers build the same [`Patch`]: `parse_unified` reads git's
//! unified diff text (`unified.rs`: a strict scanner, then diffy),
//! [`parse_github_files`] GitHub's pull-request files listing
//! (`github_files.rs`), and [`parse_patch`] picks the one the input is in.
//! `scope.rs` finds the Python `def`/`class` around each changed line from the
//! hunk alone; `sides.rs` rebuilds a file's text on one side from the other and
//! its hunks. The model (`model.rs`, which every reader builds on) is
//! re-exported here.

mod github_files;
mod model;
#[cfg(test)]
mod reference;
pub(crate) mod scope;
mod sides;
#[cfg(test)]
pub(crate) mod test_support;
mod unified;

pub use github_files::parse_github_files;
pub use model::{AddedLine, ContextLine, Deletion, FileChange, FileStatus, Patch, RemovedLine, Scope};
#[cfg(test)]
pub(crate) use unified::parse_unified;
pub(crate) use unified::parse_unified_bytes;

use crate::gate::error::{text_of, InputError};

/// A patch from raw bytes: GitHub's pull-request files listing when the text
/// starts with `[` (after leading whitespace), git's unified diff otherwise.
/// A listing that is not UTF-8 is an error naming the line and column of the
/// first bad byte (JSON is UTF-8); in a diff, a file whose lines are not UTF-8
/// is marked unreadable (see `parse_unified_bytes`).
pub fn parse_patch(name: &str, bytes: &[u8]) -> Result<Patch, InputError> {
    let listing = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    if listing {
        parse_github_files(name, &text_of(name, bytes)?)
    } else {
        parse_unified_bytes(name, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::unified::tests::corpus_file;
    use super::*;

    #[test]
    fn github_files_agree_with_the_git_diff() {
        let gh = parse_github_files("github-files.json", &corpus_file("github-files.json")).unwrap();
        let git = parse_unified("combined.diff", &corpus_file("combined.diff")).unwrap();
        assert_eq!(gh.files.len(), git.files.len());
        for g in &gh.files {
            let d = git
                .files
                .iter()
                .find(|f| f.path == g.path)
                .unwrap_or_else(|| panic!("{} not in combined.diff", g.path));
            assert_eq!(
                (g.status, &g.old_path, g.binary),
                (d.status, &d.old_path, d.binary),
                "{}",
                g.path
            );
            if g.path == "data/huge.csv" {
                assert!(
                    !g.lines_known && g.added.is_empty(),
                    "GitHub omits the patch of huge files"
                );
                continue;
            }
            assert!(g.lines_known, "{}", g.path);
            assert_eq!(g.added, d.added, "{}", g.path);
            assert_eq!(g.deletions, d.deletions, "{}", g.path);
        }
    }

    #[test]
    fn empty_input_is_an_empty_patch() {
        assert_eq!(parse_unified("e.diff", "").unwrap(), Patch::default());
        assert_eq!(parse_unified("e.diff", "\n\r\n  \n").unwrap(), Patch::default());
        assert_eq!(parse_unified_bytes("e.diff", b"").unwrap(), Patch::default());
        assert_eq!(parse_github_files("e.json", "[]").unwrap(), Patch::default());
    }

    #[test]
    fn parse_patch_picks_the_reader() {
        let gh = parse_patch("f.json", corpus_file("github-files.json").as_bytes()).unwrap();
        assert_eq!(
            gh,
            parse_github_files("f.json", &corpus_file("github-files.json")).unwrap()
        );
        let git = parse_patch("c.diff", corpus_file("combined.diff").as_bytes()).unwrap();
        assert_eq!(git, parse_unified("c.diff", &corpus_file("combined.diff")).unwrap());
        // A listing is JSON, so UTF-8; a diff's non-UTF-8 file is marked (see `unified.rs`).
        let e = parse_patch("f.json", b" [\"\xFF\"]").unwrap_err();
        assert_eq!(e.to_string(), "f.json:1:4: not UTF-8 text");
    }
}
