//! What a patch changes around the test run itself, part of
//! `evidence_config_changed`: pytest hooks that see or
//! alter outcomes or collection (in any Python file: a module becomes a plugin
//! through `conftest.py`, `pytest_plugins`, `-p` or a `pytest11` entry point),
//! the test tooling the suite installs (pytest, coverage, pytest plugins in
//! requirements, pyproject, setup.cfg/setup.py, tox, nox, Pipfile and lock
//! files; other dependency changes are notes), and code that names the evidence
//! files or their variables or drives coverage's API. Pure text rules on the
//! diff: the evidence job runs the patch's code, which can write anything its
//! own process can, so these shapes distrust the evidence instead of reading it.

use crate::gate::patch::{FileChange, FileStatus};
use requirement::{requirement_name, url_requirement};

mod requirement;

/// One thing a file's change does to the test run: the head-side line (when
/// there is one) and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub line: Option<u32>,
    pub what: String,
}

/// What the patch's change to one file does to the test run.
#[derive(Debug, Default)]
pub struct Tooling {
    /// Changes that make the evidence untrustworthy.
    pub distrust: Vec<Finding>,
    /// Changes worth a note (a dependency that is not test tooling).
    pub notes: Vec<String>,
    /// The file is a dependency manifest these rules read: it needs no test evidence itself.
    pub dependency_file: bool,
}

/// pytest hooks that cannot change outcomes, collection or the evidence.
const HARMLESS_HOOKS: &[&str] = &["pytest_addoption", "pytest_assertrepr_compare"];

/// Packages that are test tooling besides pytest, coverage and anything named
/// `pytest…`/`…pytest`: they register `pytest11` plugins that load into every run.
const PLUGIN_PROVIDERS: &[&str] = &[
    "pluggy",
    "covdefaults",
    "hypothesis",
    "anyio",
    "faker",
    "syrupy",
    "typeguard",
    "time-machine",
    "pyfakefs",
];

/// Environment variables that steer where coverage and pytest write or what they load.
const EVIDENCE_VARIABLES: &[&str] = &[
    "COVERAGE_FILE",
    "COVERAGE_PROCESS_START",
    "COVERAGE_RCFILE",
    "COV_CORE_SOURCE",
    "COV_CORE_CONFIG",
    "COV_CORE_DATAFILE",
    "COV_CORE_CONTEXT",
    "FLAKEGATE_RESULTS",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
];

/// The evidence files as the evidence workflow writes them (and pytest's flags that write them).
const EVIDENCE_PATHS: &[&str] = &[
    "coverage.json",
    "report-log",
    "--junitxml",
    "junit.xml",
    "junit/",
    "flakegate-evidence",
    "evidence/results",
];

/// Calls into coverage.py's API: code that can stop, erase, switch or rewrite the measurement.
const COVERAGE_API: &[&str] = &[
    "import coverage",
    "from coverage",
    "coverage.Coverage",
    "Coverage(",
    "CoverageData(",
    "coverage.process_startup",
    ".switch_context(",
    "pytest_cov",
];

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A line without its comment (`#` outside quotes).
fn code_part(text: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '#') => return &text[..i],
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    text
}

/// The string literals of a line's code, without their quotes.
fn strings(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    let mut escaped = false;
    for (i, c) in code.char_indices() {
        match open {
            Some((q, start)) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    out.push(&code[start..i]);
                    open = None;
                }
            }
            None if c == '"' || c == '\'' => open = Some((c, i + 1)),
            None => {}
        }
    }
    out
}

/// The string literals that stand as items of a list or call (after `[`, `(`, `,` or at the
/// start): requirement strings, not the values of keys (`{ include-group = "tests" }`,
/// `name="shop"`) nor dict keys (`{"dev": …}`).
fn item_strings(code: &str) -> Vec<&str> {
    strings(code)
        .into_iter()
        .filter(|s| {
            let start = s.as_ptr() as usize - code.as_ptr() as usize;
            let before = code[..start.saturating_sub(1)].trim_end().chars().next_back();
            let after = code[(start + s.len() + 1).min(code.len())..]
                .trim_start()
                .chars()
                .next();
            matches!(before, None | Some('[' | '(' | ',')) && after != Some(':')
        })
        .collect()
}

/// Does `code` hold `word` as a whole identifier?
fn has_ident(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(i, _)| {
        !code[..i].chars().next_back().is_some_and(is_ident)
            && !code[i + word.len()..].chars().next().is_some_and(is_ident)
    })
}

/// A pytest hook this rule watches, by the name a `def` opens.
fn watched_hook(name: &str) -> bool {
    name.starts_with("pytest_") && !HARMLESS_HOOKS.contains(&name)
}

/// The name a `def` line opens.
fn def_name(code: &str) -> Option<&str> {
    let t = code.trim_start();
    let t = t.strip_prefix("async ").map_or(t, str::trim_start);
    let rest = t.strip_prefix("def ")?.trim_start();
    let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// A package name normalised as PyPI compares them.
fn normalize(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// Is this package test tooling: pytest, coverage, a pytest plugin?
fn is_test_tooling(name: &str) -> bool {
    let n = normalize(name);
    n.contains("pytest") || n.starts_with("coverage") || PLUGIN_PROVIDERS.contains(&n.as_str())
}

/// How a file lists dependencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DepFile {
    /// requirements*.txt / constraints*.txt / *.in: one requirement a line.
    Requirements,
    /// pyproject.toml, Pipfile: TOML tables.
    Toml,
    /// setup.cfg, tox.ini: INI with indented continuation lines.
    Ini,
    /// setup.py: Python calls with requirement strings.
    SetupPy,
    /// noxfile.py: sessions that install and run the test tooling.
    Nox,
    /// poetry.lock, uv.lock, pdm.lock, pylock*.toml, Pipfile.lock.
    Lock,
}

fn dep_file(path: &str) -> Option<DepFile> {
    let name = file_name(path);
    let in_req_dir = path.contains("requirements/");
    Some(match name {
        "pyproject.toml" | "Pipfile" => DepFile::Toml,
        "setup.cfg" | "tox.ini" => DepFile::Ini,
        "setup.py" => DepFile::SetupPy,
        "noxfile.py" => DepFile::Nox,
        "poetry.lock" | "uv.lock" | "pdm.lock" | "Pipfile.lock" => DepFile::Lock,
        n if n.starts_with("pylock") && n.ends_with(".toml") => DepFile::Lock,
        n if (n.contains("requirements") || n.contains("constraints") || in_req_dir)
            && (n.ends_with(".txt") || n.ends_with(".in")) =>
        {
            DepFile::Requirements
        }
        _ => return None,
    })
}

/// A dependency manifest these rules read that is not Python source.
pub fn is_dependency_manifest(path: &str) -> bool {
    dep_file(path).is_some_and(|k| !matches!(k, DepFile::SetupPy | DepFile::Nox))
}

/// One side of the file as the diff shows it: (line number on that side, text), ascending.
fn side(fc: &FileChange, new: bool) -> Vec<(u32, &str)> {
    let mut v: Vec<(u32, &str)> = if new {
        fc.added.iter().map(|a| (a.line, a.text.as_str())).collect()
    } else {
        fc.removed.iter().map(|r| (r.line, r.text.as_str())).collect()
    };
    v.extend(
        fc.context
            .iter()
            .map(|c| (if new { c.line } else { c.old_line }, c.text.as_str())),
    );
    v.sort_by_key(|(n, _)| *n);
    v
}

/// The visible lines directly above `line` on that side, nearest first, up to a gap in the diff.
fn above<'a>(side: &'a [(u32, &'a str)], line: u32) -> impl Iterator<Item = &'a str> + 'a {
    let i = side.partition_point(|(n, _)| *n < line);
    let mut expect = line;
    side[..i].iter().rev().map_while(move |(n, t)| {
        expect -= 1;
        (*n == expect).then_some(*t)
    })
}

/// Where a line sits in a TOML file: its `[table]` (quotes dropped) and, for an
/// item of a multi-line array, the array's key — as far as the diff shows.
fn toml_place(side: &[(u32, &str)], line: u32) -> (Option<String>, Option<String>) {
    let mut key = None;
    let own = side.iter().find(|(n, _)| *n == line).map(|(_, t)| *t);
    for t in own.into_iter().chain(above(side, line)) {
        let c = code_part(t).trim();
        if c.starts_with('[') && c.ends_with(']') && !c.starts_with("[\"") && !c.starts_with("['") {
            return (Some(c.trim_matches(['[', ']']).replace(['"', '\''], "")), key);
        }
        if key.is_none() {
            if let Some((k, v)) = c.split_once('=') {
                let v = v.trim();
                if v.starts_with('[') && !v.contains(']') {
                    key = Some(k.trim().trim_matches('"').to_string());
                }
            }
        }
    }
    (None, key)
}

/// The key an INI line belongs to (its own, or the one its continuation lines continue) and the section.
fn ini_place(side: &[(u32, &str)], line: u32, text: &str) -> (Option<String>, Option<String>) {
    let own = (!text.starts_with([' ', '\t']))
        .then(|| text.split_once('=').map(|(k, _)| k.trim().to_string()))
        .flatten();
    let mut key = own;
    for t in above(side, line) {
        let c = t.trim();
        if c.starts_with('[') && c.ends_with(']') {
            return (Some(c.trim_matches(['[', ']']).to_string()), key);
        }
        if key.is_none() && !t.starts_with([' ', '\t']) && !c.is_empty() {
            key = c.split_once('=').map(|(k, _)| k.trim().to_string());
        }
    }
    (None, key)
}

fn dependency_table(section: &str) -> bool {
    section.contains("dependencies")
        || section.contains("dependency-groups")
        || section == "packages"
        || section == "dev-packages"
        || section.contains("extras_require")
}

fn dependency_key(key: &str) -> bool {
    matches!(
        key,
        "dependencies"
            | "dev-dependencies"
            | "optional-dependencies"
            | "requires"
            | "install_requires"
            | "tests_require"
            | "setup_requires"
            | "deps"
            | "extra-dependencies"
    )
}

/// The packages one changed line of a dependency file names, and whether the
/// line registers a pytest plugin or changes where packages come from.
enum DepLine {
    Packages(Vec<String>),
    Plugin(String),
    Index(String),
}

fn dep_line(kind: DepFile, side: &[(u32, &str)], line: u32, text: &str) -> Option<DepLine> {
    // pip starts a comment at a `#` that begins the line or follows whitespace: a URL's
    // `#subdirectory=…` or `#egg=…` is part of the requirement.
    let code = if kind == DepFile::Requirements {
        let at = text
            .char_indices()
            .find(|&(i, c)| c == '#' && (i == 0 || text[..i].ends_with([' ', '\t'])))
            .map_or(text.len(), |(i, _)| i);
        text[..at].trim()
    } else {
        code_part(text).trim()
    };
    if code.is_empty() {
        return None;
    }
    if code.contains("pytest11") {
        return Some(DepLine::Plugin(code.to_string()));
    }
    let reqs = |s: &[&str]| -> Vec<String> {
        s.iter()
            .filter_map(|s| requirement_name(s))
            .map(str::to_string)
            .collect()
    };
    let packages = match kind {
        DepFile::Requirements => {
            if let Some(rest) = code.strip_prefix("-e ").or_else(|| code.strip_prefix("--editable")) {
                let rest = rest.trim_start_matches([' ', '=']);
                return requirement_name(rest)
                    .map(str::to_string)
                    .or_else(|| url_requirement(rest))
                    .map(|n| DepLine::Packages(vec![n]));
            }
            if code.starts_with('-') {
                let opt = code.split([' ', '=']).next().unwrap_or("");
                return matches!(
                    opt,
                    "-i" | "--index-url" | "--extra-index-url" | "-f" | "--find-links" | "--trusted-host"
                )
                .then(|| DepLine::Index(code.to_string()));
            }
            let req = code.split(" --").next().unwrap_or(code);
            match (requirement_name(req), url_requirement(req)) {
                (None, Some(name)) => vec![name],
                _ => reqs(&[req]),
            }
        }
        DepFile::Toml => {
            let (section, array_key) = toml_place(side, line);
            let section = section.unwrap_or_default();
            if section.contains("pytest11") {
                return Some(DepLine::Plugin(format!("[{section}] {code}")));
            }
            // `key = value` (a bare or quoted key; an array item like `"x>=1",` is no key).
            let own = code
                .split_once('=')
                .filter(|(k, _)| {
                    let k = k.trim().trim_matches('"');
                    !code.starts_with(['"', '\''])
                        && !k.is_empty()
                        && k.chars().all(|c| is_ident(c) || "-.".contains(c))
                })
                .map(|(k, v)| (k.trim().trim_matches('"'), v.trim()));
            match own {
                Some((k, v)) if dependency_key(k) || (dependency_table(&section) && v.starts_with('[')) => {
                    reqs(&item_strings(v))
                }
                // A poetry/Pipfile table: the key is the package.
                Some((k, _)) if dependency_table(&section) => reqs(&[k]),
                Some(_) => Vec::new(),
                None if array_key.as_deref().is_some_and(dependency_key) || dependency_table(&section) => {
                    reqs(&item_strings(code))
                }
                // An array item whose array the diff does not show: test tooling still counts.
                None if array_key.is_none() => reqs(&item_strings(code))
                    .into_iter()
                    .filter(|n| is_test_tooling(n))
                    .collect(),
                None => Vec::new(),
            }
        }
        DepFile::Ini => {
            let (section, key) = ini_place(side, line, text);
            let section = section.unwrap_or_default();
            let value = if text.starts_with([' ', '\t']) {
                code
            } else {
                code.split_once('=').map_or("", |(_, v)| v.trim())
            };
            if key.as_deref().is_some_and(|k| k == "commands") {
                return value
                    .contains("pytest")
                    .then(|| DepLine::Plugin(format!("a tox command runs pytest differently: `{code}`")));
            }
            if key.as_deref().is_some_and(dependency_key) || section.contains("extras_require") {
                reqs(&[value])
            } else {
                Vec::new()
            }
        }
        DepFile::SetupPy | DepFile::Nox => {
            let s = strings(code);
            if kind == DepFile::Nox && s.iter().any(|s| s.contains("pytest") || s.contains("coverage")) {
                return Some(DepLine::Plugin(format!(
                    "a nox session runs or installs test tooling: `{code}`"
                )));
            }
            reqs(&item_strings(code))
                .into_iter()
                .filter(|n| is_test_tooling(n) || code.contains("install") || code.contains("require"))
                .collect()
        }
        DepFile::Lock => {
            let mut names = Vec::new();
            if let Some(v) = code.split_once("name = ").map(|(_, v)| v) {
                names.extend(strings(v).into_iter().take(1).map(str::to_string));
            } else if let Some(k) = code.strip_suffix(": {").map(|k| k.trim().trim_matches('"')) {
                names.push(k.to_string());
            }
            names
        }
    };
    (!packages.is_empty()).then_some(DepLine::Packages(packages))
}

/// A removed line's place on the head side: the line now below the last context line above it.
fn head_line_of_removed(fc: &FileChange, old_line: u32) -> Option<u32> {
    if fc.status == FileStatus::Deleted {
        return None;
    }
    let above = fc.context.iter().rev().find(|c| c.old_line < old_line);
    Some(above.map_or(1, |c| c.line + 1))
}

/// Pytest hooks added, changed or removed in a Python file, and plugins loaded.
fn hooks(fc: &FileChange, out: &mut Vec<Finding>) {
    let mut seen: Vec<String> = Vec::new();
    let mut push = |line: Option<u32>, key: String, what: String| {
        if !seen.contains(&key) {
            seen.push(key);
            out.push(Finding { line, what });
        }
    };
    let lines = fc
        .added
        .iter()
        .map(|a| (Some(a.line), a.text.as_str(), &a.scope, "adds or changes"))
        .chain(fc.removed.iter().map(|r| {
            (
                head_line_of_removed(fc, r.line),
                r.text.as_str(),
                &r.scope,
                "removes or changes",
            )
        }));
    for (line, text, scope, verb) in lines {
        let code = code_part(text);
        if code.trim().is_empty() {
            continue;
        }
        if let Some(name) = def_name(code).filter(|n| watched_hook(n)) {
            push(
                line,
                name.to_string(),
                format!("{verb} the pytest hook `{name}`, which sees or alters test outcomes or collection"),
            );
        } else if let Some(name) = scope
            .names()
            .iter()
            .find(|n| watched_hook(n))
            .filter(|_| !code.trim_start().starts_with('@'))
        {
            push(
                line,
                name.clone(),
                format!(
                    "changes the body of the pytest hook `{name}`, which sees or alters test outcomes or collection"
                ),
            );
        }
        let t = code.trim();
        if t.starts_with('@') && (t.contains("hookimpl") || t.contains("hookwrapper")) {
            push(
                line,
                format!("@{t}"),
                format!("{verb} a pytest hook implementation (`{t}`)"),
            );
        }
        if has_ident(code, "pytest_plugins") && code.contains('=') {
            push(
                line,
                "pytest_plugins".into(),
                format!("{verb} the plugins pytest loads (`{t}`)"),
            );
        }
    }
}

/// Plugins loaded by configuration: `-p NAME` given to pytest (an `addopts` continuation line).
fn plugin_flag(fc: &FileChange, out: &mut Vec<Finding>) {
    if !matches!(
        file_name(&fc.path),
        "pyproject.toml" | "setup.cfg" | "tox.ini" | "pytest.ini" | "noxfile.py" | "Makefile"
    ) {
        return;
    }
    for a in &fc.added {
        let code = code_part(&a.text);
        let p = code
            .split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',' || c == '[')
            .any(|w| w == "-p" || (w.starts_with("-p") && w.len() > 2 && !w.starts_with("-pa")));
        if p {
            out.push(Finding {
                line: Some(a.line),
                what: format!(
                    "changes which pytest plugins load (`-p` on the command line: `{}`)",
                    code.trim()
                ),
            });
            return;
        }
    }
}

/// Test tooling in a dependency file (distrust), other dependency changes (a note).
fn dependencies(fc: &FileChange, kind: DepFile, t: &mut Tooling) {
    let (new, old) = (side(fc, true), side(fc, false));
    let mut added: Vec<(u32, String)> = Vec::new();
    let mut removed: Vec<(Option<u32>, String)> = Vec::new();
    for a in &fc.added {
        match dep_line(kind, &new, a.line, &a.text) {
            Some(DepLine::Packages(p)) => added.extend(p.into_iter().map(|n| (a.line, n))),
            Some(DepLine::Plugin(what)) => t.distrust.push(Finding {
                line: Some(a.line),
                what: if what.starts_with("a ") {
                    what
                } else {
                    format!("registers a pytest plugin (`pytest11` entry point: `{what}`)")
                },
            }),
            Some(DepLine::Index(opt)) => t.distrust.push(Finding {
                line: Some(a.line),
                what: format!(
                    "changes where packages are installed from (`{opt}`): another index can serve any pytest or plugin"
                ),
            }),
            None => {}
        }
    }
    for r in &fc.removed {
        if let Some(DepLine::Packages(p)) = dep_line(kind, &old, r.line, &r.text) {
            removed.extend(p.into_iter().map(|n| (head_line_of_removed(fc, r.line), n)));
        }
    }
    let was = |n: &str| removed.iter().any(|(_, r)| normalize(r) == normalize(n));
    let is = |n: &str| added.iter().any(|(_, a)| normalize(a) == normalize(n));
    let mut tooling = Vec::new();
    let mut other = Vec::new();
    for (line, n) in &added {
        let verb = if was(n) { "changes" } else { "adds" };
        let entry = (Some(*line), format!("{verb} `{n}`"));
        if is_test_tooling(n) {
            tooling.push(entry)
        } else {
            other.push(entry.1)
        }
    }
    for (line, n) in removed.iter().filter(|(_, n)| !is(n)) {
        let entry = (*line, format!("removes `{n}`"));
        if is_test_tooling(n) {
            tooling.push(entry)
        } else {
            other.push(entry.1)
        }
    }
    tooling.dedup_by(|a, b| a.1 == b.1);
    other.dedup();
    if let Some((line, _)) = tooling.first() {
        let list: Vec<&str> = tooling.iter().take(5).map(|(_, w)| w.as_str()).collect();
        let more = tooling.len().saturating_sub(5);
        t.distrust.push(Finding {
            line: *line,
            what: format!(
                "changes the test tooling the evidence is made with ({}{}): pytest, coverage and pytest plugins decide which tests run and what they report",
                list.join(", "),
                if more > 0 { format!(", and {more} more") } else { String::new() }
            ),
        });
    }
    if !other.is_empty() {
        let list: Vec<&str> = other.iter().take(5).map(String::as_str).collect();
        t.notes.push(format!(
            "{} changes dependencies ({}{}); none is test tooling, but any package can register a pytest plugin (a `pytest11` entry point): review it as part of the test environment",
            fc.path,
            list.join(", "),
            if other.len() > 5 { format!(", and {} more", other.len() - 5) } else { String::new() }
        ));
    }
}

/// Files whose code runs before or around pytest and coverage in every Python process.
fn runs_at_startup(path: &str) -> bool {
    let name = file_name(path);
    name.ends_with(".pth") || name == "sitecustomize.py" || name == "usercustomize.py"
}

/// Files whose text is code or configuration the evidence job can run or read (not documentation).
fn is_code_file(path: &str) -> bool {
    let name = file_name(path);
    [".py", ".pth", ".sh", ".bash", ".cfg", ".ini", ".toml", ".mk"]
        .iter()
        .any(|e| name.ends_with(e))
        || matches!(name, "Makefile" | "GNUmakefile" | "Justfile" | "justfile")
}

/// Changed code that names the evidence files or variables, or drives coverage's API.
fn writes_evidence(fc: &FileChange, out: &mut Vec<Finding>) {
    if runs_at_startup(&fc.path) {
        let line = fc.added.first().map(|a| a.line);
        out.push(Finding {
            line,
            what: "changes code Python runs at interpreter start-up, before pytest and coverage (a `.pth` file or sitecustomize): it can rewrite anything the test run writes".into(),
        });
        return;
    }
    if !is_code_file(&fc.path) {
        return;
    }
    let python = fc.path.ends_with(".py");
    for a in &fc.added {
        let code = code_part(&a.text);
        if code.trim().is_empty() {
            continue;
        }
        let path_hit = || {
            EVIDENCE_PATHS
                .iter()
                .find(|p| code.contains(**p))
                .map(|p| p.to_string())
                .or_else(|| {
                    // `.coverage` and its parallel files `.coverage.*`, not `.coveragerc`.
                    code.match_indices(".coverage")
                        .find(|(i, m)| !code[i + m.len()..].chars().next().is_some_and(is_ident))
                        .map(|_| ".coverage".to_string())
                })
        };
        let var_hit = || {
            EVIDENCE_VARIABLES
                .iter()
                .find(|v| has_ident(code, v))
                .map(|v| v.to_string())
        };
        let api_hit = || {
            python
                .then(|| {
                    COVERAGE_API
                        .iter()
                        .find(|n| code.contains(**n))
                        .map(|n| n.to_string())
                        .or_else(|| {
                            // `cov.stop()`, `self._cov.erase()`: a receiver named …cov.
                            [".stop(", ".erase(", ".save(", ".combine(", ".start(", ".json_report("]
                                .iter()
                                .find(|m| {
                                    code.match_indices(**m).any(|(i, _)| {
                                        let recv = code[..i].trim_end_matches(is_ident);
                                        code[recv.len()..i].to_ascii_lowercase().ends_with("cov")
                                    })
                                })
                                .map(|m| format!("cov{m}"))
                        })
                })
                .flatten()
        };
        if let Some(hit) = path_hit().or_else(var_hit) {
            out.push(Finding {
                line: Some(a.line),
                what: format!(
                    "names the evidence (`{hit}`): code the evidence job runs could overwrite what it uploads"
                ),
            });
            return;
        }
        if let Some(hit) = api_hit() {
            out.push(Finding {
                line: Some(a.line),
                what: format!(
                    "calls coverage's API (`{hit}`): code the evidence job runs could stop, erase or rewrite the measurement"
                ),
            });
            return;
        }
    }
}

/// What the patch's change to `fc` does to the test run (items 6–8).
pub fn tooling(fc: &FileChange) -> Tooling {
    let mut t = Tooling::default();
    if fc.path.ends_with(".py") || fc.old_path.as_deref().is_some_and(|p| p.ends_with(".py")) {
        hooks(fc, &mut t.distrust);
    }
    plugin_flag(fc, &mut t.distrust);
    if let Some(kind) = dep_file(&fc.path) {
        t.dependency_file = !fc.path.ends_with(".py");
        dependencies(fc, kind, &mut t);
    }
    writes_evidence(fc, &mut t.distrust);
    t
}

#[cfg(test)]
mod tests;
