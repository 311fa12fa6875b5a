//! The commit `flakegate --version` names: `FLAKEGATE_GIT_COMMIT` when the build sets it (a
//! container build without `.git`), else `git rev-parse` of the checkout, else "unknown commit".

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    println!("cargo:rerun-if-env-changed=FLAKEGATE_GIT_COMMIT");
    let commit = match std::env::var("FLAKEGATE_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_owned(),
        _ => {
            // Built again when HEAD moves: HEAD itself, and the branch it points to.
            for path in ["HEAD", "refs/heads", "packed-refs"] {
                // Only a path that exists: cargo runs a script watching a missing one every
                // build, and rebuilds the crate after it.
                match git(&["rev-parse", "--git-path", path]) {
                    Some(p) if std::path::Path::new(&p).exists() => println!("cargo:rerun-if-changed={p}"),
                    _ => {}
                }
            }
            git(&["rev-parse", "--short=12", "HEAD"])
                .map_or_else(|| "unknown commit".to_owned(), |c| format!("commit {c}"))
        }
    };
    println!("cargo:rustc-env=FLAKEGATE_GIT_COMMIT={commit}");
}
