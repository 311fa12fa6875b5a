//! CODEOWNERS: who owns a path, by GitHub's rules — gitignore-style patterns,
//! the last matching line wins, a line with no owners un-assigns.
//! Used to name the owners of changed lines that no stable test witnesses.

/// Where GitHub looks for the file, in its order of precedence.
pub const CODEOWNERS_PATHS: &[&str] = &[".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/// GitHub does not load a CODEOWNERS file of 3 MB or more; neither do we.
pub(crate) const MAX_BYTES: usize = 3 * 1024 * 1024;

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
mod tests;
