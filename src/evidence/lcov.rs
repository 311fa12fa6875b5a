//! Reading LCOV evidence from disk: one tracefile, a directory of tracefiles, or
//! a bazel-testlogs directory ([`super::bazel`]), through the pure reader in
//! [`crate::gate::coverage::lcov`].

use super::display;
use crate::gate::coverage::lcov::{looks_like_lcov, LcovReader};
use crate::gate::coverage::{Coverage, CoverageFormat, PathMatcher};
use crate::gate::nodeid::TestId;
use crate::gate::{InputDigest, InputError, Location};
use std::path::{Path, PathBuf};

/// Read tracefiles (each with the label that overrides its `TN:`, for Bazel) into one
/// coverage. Returns the coverage and a sha256: of the file when there is one, else of
/// the `sha256sum`-style list `<sha256>  <path>` of every file.
pub(super) fn read_tracefiles(
    files: &[(PathBuf, Option<TestId>)],
    matcher: &PathMatcher,
    format: CoverageFormat,
) -> Result<(Coverage, String), InputError> {
    let mut reader = LcovReader::new(matcher);
    let mut listing = String::new();
    let mut single = String::new();
    for (path, label) in files {
        let name = display(path);
        let f = std::fs::File::open(path)
            .map_err(|e| InputError::new(Location::file(&name), format!("cannot read: {e}")))?;
        // Hashed on a second thread as it is read, as a coverage JSON is.
        let (read, sha) = super::hashed_read(f, |hashing| {
            reader.read(&name, std::io::BufReader::new(hashing), label.as_ref())
        });
        read?;
        let sha = sha.map_err(|e| InputError::new(Location::file(&name), format!("cannot read: {e}")))?;
        listing.push_str(&format!("{sha}  {name}\n"));
        single = sha;
    }
    let sha = if files.len() == 1 {
        single
    } else {
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(listing.as_bytes()))
    };
    Ok((reader.finish(format), sha))
}

/// A directory: bazel-testlogs (`<package>/<target>/coverage.dat`), else the LCOV
/// tracefiles directly in it (`*.info`, `*.lcov`, `*.dat`, or any file that starts like one).
pub(super) fn read_lcov_dir(dir: &Path, matcher: &PathMatcher) -> Result<(Coverage, InputDigest), InputError> {
    let name = display(dir);
    let digest = |sha256| InputDigest {
        role: "coverage".into(),
        path: name.clone(),
        sha256,
    };
    let bazel = super::bazel::files_named(dir, "coverage.dat")?;
    if !bazel.is_empty() {
        let files: Vec<(PathBuf, Option<TestId>)> = bazel.into_iter().map(|(p, l)| (p, Some(l))).collect();
        let (cov, sha) = read_tracefiles(&files, matcher, CoverageFormat::Bazel)?;
        return Ok((cov, digest(sha)));
    }
    let mut files = Vec::new();
    for p in super::result_files(dir)? {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        let lcovish = matches!(ext, "info" | "lcov" | "dat") || {
            let mut head = [0u8; 16];
            let n = std::fs::File::open(&p)
                .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
                .unwrap_or(0);
            looks_like_lcov(&head[..n])
        };
        if lcovish {
            files.push((p, None));
        }
    }
    if files.is_empty() {
        return Err(InputError::new(
            Location::file(&name),
            "no coverage found in this directory: expected LCOV tracefiles (*.info) or a bazel-testlogs layout (<package>/<target>/coverage.dat)",
        ));
    }
    let (cov, sha) = read_tracefiles(&files, matcher, CoverageFormat::Lcov)?;
    Ok((cov, digest(sha)))
}
