//! CODEOWNERS: who owns a path, by GitHub's rules — gitignore-style patterns,
//! the last matching line wins, a line with no owners un-assigns.
//! Used to name the owners of changed lines that no stable test witnesses.

use globset::{GlobBuilder, GlobMatcher};

/// Where GitHub looks for the file, in its order of precedence.
pub const CODEOWNERS_PATHS: &[&str] = &[".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

#[derive(Debug, Clone)]
struct Rule {
    matchers: Vec<GlobMatcher>,
    owners: Vec<String>,
}

/// A parsed CODEOWNERS file.
#[derive(Debug, Clone, Default)]
pub struct CodeOwners {
    rules: Vec<Rule>,
    /// Lines that could not be used, reported rather than guessed: (line, why).
    pub skipped: Vec<(usize, String)>,
}

fn globs_for(pattern: &str) -> Vec<String> {
    let dir_only = pattern.ends_with('/');
    let p = pattern.trim_end_matches('/');
    let anchored = p.starts_with('/') || p.contains('/');
    let p = p.trim_start_matches('/');
    let base = if anchored { p.to_string() } else { format!("**/{p}") };
    if dir_only {
        vec![format!("{base}/**")]
    } else {
        // `docs` names the file and, when it is a directory, everything in it.
        vec![base.clone(), format!("{base}/**")]
    }
}

impl CodeOwners {
    pub fn parse(text: &str) -> Self {
        let mut out = CodeOwners::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            let Some(pattern) = parts.next() else { continue };
            let owners: Vec<String> = parts.take_while(|p| !p.starts_with('#')).map(str::to_string).collect();
            if pattern.starts_with('!') || pattern.contains("[") {
                out.skipped.push((
                    i + 1,
                    format!("pattern {pattern:?} uses syntax CODEOWNERS does not support"),
                ));
                continue;
            }
            let mut matchers = Vec::new();
            for g in globs_for(pattern) {
                match GlobBuilder::new(&g).literal_separator(true).build() {
                    Ok(glob) => matchers.push(glob.compile_matcher()),
                    Err(e) => out.skipped.push((i + 1, format!("pattern {pattern:?}: {e}"))),
                }
            }
            if !matchers.is_empty() {
                out.rules.push(Rule { matchers, owners });
            }
        }
        out
    }

    /// The owners of a repository path: the last matching rule's (possibly none).
    pub fn owners_of(&self, path: &str) -> &[String] {
        self.rules
            .iter()
            .rev()
            .find(|r| r.matchers.iter().any(|m| m.is_match(path)))
            .map(|r| r.owners.as_slice())
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_match_wins() {
        let c = CodeOwners::parse(
            "# comment\n* @org/everyone\n*.py @py-team\n/src/shop/ @shop/core # inline\nsrc/shop/refunds.py @shop/payments\ndocs/ \n",
        );
        let cases = [
            ("README", vec!["@org/everyone"]),
            ("tools/x.py", vec!["@py-team"]),
            ("src/shop/cart.py", vec!["@shop/core"]),
            ("src/shop/refunds.py", vec!["@shop/payments"]),
            ("docs/guide.md", vec![]),
            ("a/src/shop/cart.py", vec!["@py-team"]),
        ];
        for (path, want) in cases {
            assert_eq!(
                c.owners_of(path),
                want.iter().map(|s| s.to_string()).collect::<Vec<_>>().as_slice(),
                "{path}"
            );
        }
    }

    #[test]
    fn unanchored_names_match_anywhere_and_directories_cover_their_contents() {
        let c = CodeOwners::parse("apps/ @apps\nlogs @ops\n");
        assert_eq!(c.owners_of("apps/web/x.py"), ["@apps"]);
        assert_eq!(c.owners_of("deep/logs/y.txt"), ["@ops"]);
        assert_eq!(c.owners_of("logs"), ["@ops"]);
        assert!(c.owners_of("other/z.py").is_empty());
        let c = CodeOwners::parse("!x @a\n[abc] @b\n");
        assert_eq!(c.skipped.len(), 2);
    }
}
