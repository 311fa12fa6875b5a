//! CODEOWNERS: who owns a path, by GitHub's rules — gitignore-style patterns,
//! the last matching line wins, a line with no owners un-assigns.
//! Used to name the owners of changed lines that no stable test witnesses.

/// Where GitHub looks for the file, in its order of precedence.
pub const CODEOWNERS_PATHS: &[&str] = &[".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/// GitHub does not load a CODEOWNERS file of 3 MB or more; neither do we.
pub const MAX_BYTES: usize = 3 * 1024 * 1024;

/// One character-level piece of a path component's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Lit(char),
    /// `*`: any run of characters within one component.
    Star,
    /// `?`: one character.
    One,
}

/// One `/`-separated piece of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// `**` as a whole component: any number of components, none included.
    AnyDirs,
    Name(Vec<Tok>),
}

/// A compiled pattern: plain data matched without regexes, so memory grows with the file's
/// size only. (One compiled regex per line cost tens of kilobytes: a 3 MB file of 100,000
/// lines, which anyone with push access can put on a branch and name as a pull request's
/// base, took gigabytes; found by fuzzing, see docs/security.md.)
#[derive(Debug, Clone, PartialEq, Eq)]
struct Glob(Vec<Seg>);

impl Glob {
    /// gitignore-style: `*` and `?` never match `/`, `\` escapes the next character,
    /// `**` as a whole component spans directories (a trailing `/**` at least one), and
    /// any other `**` is a `*`.
    fn new(pattern: &str) -> Glob {
        let parts: Vec<&str> = pattern.split('/').collect();
        let mut segs = Vec::with_capacity(parts.len() + 1);
        for (i, part) in parts.iter().enumerate() {
            if *part == "**" {
                if i + 1 == parts.len() && i > 0 {
                    // `dir/**`: everything inside, not `dir` itself.
                    segs.push(Seg::Name(vec![Tok::Star]));
                }
                segs.push(Seg::AnyDirs);
                continue;
            }
            let mut toks = Vec::with_capacity(part.len());
            let mut chars = part.chars();
            while let Some(c) = chars.next() {
                let tok = match c {
                    '\\' => Tok::Lit(chars.next().unwrap_or('\\')),
                    '*' => Tok::Star,
                    '?' => Tok::One,
                    c => Tok::Lit(c),
                };
                if !(tok == Tok::Star && toks.last() == Some(&Tok::Star)) {
                    toks.push(tok);
                }
            }
            segs.push(Seg::Name(toks));
        }
        Glob(segs)
    }

    /// Whether the path's `/`-separated components match, in time (pattern × path) and
    /// memory (path) whatever the pattern.
    fn is_match(&self, path: &str) -> bool {
        let comps: Vec<&str> = path.split('/').collect();
        let n = comps.len();
        // next[j]: the segments after this one match comps[j..].
        let mut next = vec![false; n + 1];
        next[n] = true;
        let mut cur = vec![false; n + 1];
        for seg in self.0.iter().rev() {
            for j in (0..=n).rev() {
                cur[j] = match seg {
                    Seg::AnyDirs => next[j] || (j < n && cur[j + 1]),
                    Seg::Name(toks) => j < n && next[j + 1] && component_matches(toks, comps[j]),
                };
            }
            std::mem::swap(&mut cur, &mut next);
        }
        next[0]
    }
}

/// Wildcard match of one component: greedy, backing up to the last `*` (no recursion).
fn component_matches(toks: &[Tok], name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    let (mut t, mut s) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while s < name.len() {
        match toks.get(t) {
            Some(Tok::Star) => {
                star = Some((t, s));
                t += 1;
            }
            Some(Tok::One) => {
                t += 1;
                s += 1;
            }
            Some(Tok::Lit(c)) if *c == name[s] => {
                t += 1;
                s += 1;
            }
            _ => match star {
                Some((st, ss)) => {
                    t = st + 1;
                    s = ss + 1;
                    star = Some((st, ss + 1));
                }
                None => return false,
            },
        }
    }
    toks[t.min(toks.len())..].iter().all(|t| *t == Tok::Star)
}

#[derive(Debug, Clone)]
struct Rule {
    globs: Vec<Glob>,
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
        if text.len() >= MAX_BYTES {
            out.skipped.push((
                1,
                format!(
                    "the file is {} bytes, and GitHub ignores a CODEOWNERS file of 3 MB or more: no line of it is used",
                    text.len()
                ),
            ));
            return out;
        }
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
            let globs = globs_for(pattern).iter().map(|g| Glob::new(g)).collect();
            out.rules.push(Rule { globs, owners });
        }
        out
    }

    /// The owners of a repository path: the last matching rule's (possibly none).
    pub fn owners_of(&self, path: &str) -> &[String] {
        self.rules
            .iter()
            .rev()
            .find(|r| r.globs.iter().any(|g| g.is_match(path)))
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

    #[test]
    fn gitignore_wildcards() {
        let cases = [
            // (pattern, path, matches)
            ("*.py", "a/b/c.py", true),
            ("*.py", "c.pyc", false),
            ("/src/*.py", "src/a.py", true),
            ("/src/*.py", "src/sub/a.py", false),
            ("src/**/test_*.py", "src/test_a.py", true),
            ("src/**/test_*.py", "src/x/y/test_a.py", true),
            ("src/**/test_*.py", "lib/src/test_a.py", false),
            ("**/logs", "a/b/logs/x", true),
            ("docs/**", "docs/a/b.md", true),
            ("docs/", "docs", false),
            ("docs/", "docs/x", true),
            ("a?c", "x/abc", true),
            ("a?c", "x/a/c", false),
            ("a**b", "x/aXYb", true),
            ("a**b", "x/a/b", false),
            ("\\*.md", "dir/*.md", true),
            ("\\*.md", "dir/a.md", false),
            ("{a,b}.py", "{a,b}.py", true),
            ("{a,b}.py", "a.py", false),
            ("*a*b*c", "xaxxbyyc", true),
            ("*a*b*c", "xaxxbyy", false),
        ];
        for (pattern, path, want) in cases {
            let c = CodeOwners::parse(&format!("{pattern} @o\n"));
            assert_eq!(!c.owners_of(path).is_empty(), want, "{pattern} vs {path}");
        }
    }

    /// Fuzzing found it (docs/security.md, Fuzzing): one regex per line made a 3 MB file of
    /// 100,000 distinct lines take gigabytes and minutes. A base branch anyone with push
    /// access can create may hold it.
    #[test]
    fn a_file_of_many_lines_costs_its_size() {
        let text: String = (0..100_000).map(|i| format!("s/d{i}/**/*.py @t{}\n", i % 50)).collect();
        assert!(text.len() < MAX_BYTES);
        let c = CodeOwners::parse(&text);
        assert!(c.skipped.is_empty());
        assert_eq!(c.owners_of("s/d99999/a/b.py"), ["@t49"]);
        assert_eq!(c.owners_of("x/s/d7/b.py"), [] as [&str; 0]);
        assert!(c.owners_of("s/nowhere.py").is_empty());
    }

    #[test]
    fn a_file_of_3_mb_or_more_is_ignored_as_github_does() {
        let text = "* @org/everyone\n".repeat(MAX_BYTES / 16 + 1);
        let c = CodeOwners::parse(&text);
        assert!(c.owners_of("a.py").is_empty());
        assert_eq!(c.skipped.len(), 1);
        assert!(c.skipped[0].1.contains("3 MB"), "{:?}", c.skipped);
    }

    /// A pattern of many `**` and `*` is matched without backtracking blow-up or recursion.
    #[test]
    fn pathological_patterns_match_in_bounded_time() {
        let deep = "**/".repeat(2000) + "x";
        let stars = "*a".repeat(2000);
        let c = CodeOwners::parse(&format!("{deep} @deep\n{stars} @stars\n"));
        let path = "a/".repeat(200) + "x";
        assert_eq!(c.owners_of(&path), ["@deep"]);
        assert!(c.owners_of(&"a".repeat(1999)).is_empty());
        assert_eq!(c.owners_of(&format!("d/{}", "ba".repeat(2000))), ["@stars"]);
    }
}
