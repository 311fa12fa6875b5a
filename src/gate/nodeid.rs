//! Test identities: pytest node ids, coverage contexts and their phases.
//!
//! Coverage contexts written by pytest-cov's `--cov-context=test` are
//! `nodeid|run`, `nodeid|setup` or `nodeid|teardown`. The phase is split off at
//! the *last* `|` because parametrised ids may contain `|` themselves. A static
//! context (coverage's `[run] context = py311`) is prefixed as `py311|nodeid|run`.
//! The empty context `""` is import-time code and names no test.
//!
//! Other languages' evidence names tests otherwise ([`IdKind`]): an LCOV `TN:`
//! name, a JUnit `classname.name`, a Bazel target label. One string joins
//! coverage, head results, probe and ledger; [`junit_join_keys`] says which
//! JUnit case a known id stands for.

use serde::Serialize;
use std::fmt;

/// A canonical pytest node id without a phase suffix, e.g.
/// `tests/test_cart.py::TestCart::test_total[2-3]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct TestId(pub String);

impl TestId {
    pub fn new(s: impl Into<String>) -> Self {
        TestId(s.into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The file part of the node id (`tests/test_cart.py`).
    pub fn file(&self) -> &str {
        self.0.split("::").next().unwrap_or(&self.0)
    }
    /// The id without its parametrisation (`…::test_total` for `…::test_total[2-3]`).
    pub fn base(&self) -> &str {
        match self.0.find('[') {
            Some(i) => &self.0[..i],
            None => &self.0,
        }
    }
    /// Does this node id fall under `prefix` — the same id, a class or module
    /// containing it (`prefix::…`), or its parametrised base name (`prefix[…]`)?
    pub fn is_under(&self, prefix: &str) -> bool {
        let s = self.0.as_str();
        s == prefix
            || (s.len() > prefix.len()
                && s.starts_with(prefix)
                && (s[prefix.len()..].starts_with("::") || s[prefix.len()..].starts_with('[')))
    }
}

impl fmt::Display for TestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The phase of a test in which a line ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Setup,
    Run,
    Teardown,
}

impl Phase {
    pub fn parse(s: &str) -> Option<Phase> {
        match s {
            "run" | "call" => Some(Phase::Run),
            "setup" => Some(Phase::Setup),
            "teardown" => Some(Phase::Teardown),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Setup => "setup",
            Phase::Run => "run",
            Phase::Teardown => "teardown",
        }
    }
}

/// What a coverage context string names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextKind {
    /// `""`: import-time code, no test.
    ImportTime,
    /// A test in one of its phases.
    Test(TestId, Phase),
    /// A context that is not a pytest-cov test context (for example coverage's
    /// own `dynamic_context = test_function`, which gives dotted names).
    Other(String),
}

/// Parse a coverage context string.
pub fn parse_context(raw: &str) -> ContextKind {
    if raw.is_empty() {
        return ContextKind::ImportTime;
    }
    let Some(bar) = raw.rfind('|') else {
        return ContextKind::Other(raw.to_string());
    };
    let Some(phase) = Phase::parse(&raw[bar + 1..]) else {
        return ContextKind::Other(raw.to_string());
    };
    let node = &raw[..bar];
    // Node ids are `path::name…`; a static context prefix ends at the last `|`
    // before the first `::` (paths contain no `|`, parameters may).
    let Some(sep) = node.find("::") else {
        return ContextKind::Other(raw.to_string());
    };
    let start = node[..sep].rfind('|').map(|i| i + 1).unwrap_or(0);
    let node = &node[start..];
    if node.starts_with("::") {
        return ContextKind::Other(raw.to_string());
    }
    ContextKind::Test(TestId::new(node), phase)
}

/// A node id's canonical (classname, name) pair as JUnit writes it:
/// `tests/sub/test_a.py::TestX::test_y[1]` → (`tests.sub.test_a.TestX`, `test_y[1]`).
/// Used to match xunit2 records, which carry no file, against known node ids.
pub fn junit_key(id: &TestId) -> (String, String) {
    // Only the part before the parameters is split: `test_p[a::b]` is one name.
    let (head, params) = match id.0.find('[') {
        Some(i) => id.0.split_at(i),
        None => (id.0.as_str(), ""),
    };
    let mut parts: Vec<String> = head.split("::").map(str::to_string).collect();
    if let Some(last) = parts.last_mut() {
        last.push_str(params);
    }
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let file = parts[0];
    let module = file.strip_suffix(".py").unwrap_or(file).replace(['/', '\\'], ".");
    let name = parts.last().copied().unwrap_or("").to_string();
    let mut classname = module;
    for class in &parts[1..parts.len().saturating_sub(1)] {
        classname.push('.');
        classname.push_str(class);
    }
    (classname, name)
}

/// The kinds of test id the gate joins on (docs/cli.md, "Other languages").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdKind {
    /// `tests/test_a.py::TestX::test_y[1]` (or a prefix of such ids in a ledger)
    PytestNode,
    /// `//calc:test_add`, `@repo//pkg/sub:target`
    BazelLabel,
    /// an LCOV `TN:` name: letters, digits and `_` (what `lcov --test-name` accepts)
    LcovTestName,
    /// a JUnit case as `classname.name` (`com.acme.CartTest.testTotal`)
    JUnitCase,
}

impl IdKind {
    pub fn describe(self) -> &'static str {
        match self {
            IdKind::PytestNode => "a pytest node id (path::name)",
            IdKind::BazelLabel => "a Bazel target label (//package:target)",
            IdKind::LcovTestName => "an LCOV test name (TN:, letters, digits and _)",
            IdKind::JUnitCase => "a JUnit classname.name",
        }
    }

    /// Which kind `id` is, or why it is none.
    pub fn of(id: &str) -> Result<IdKind, String> {
        if id.is_empty() {
            return Err("it is empty".into());
        }
        if id.trim() != id || id.chars().any(char::is_control) {
            return Err("it has leading or trailing whitespace or control characters".into());
        }
        if id.starts_with("//") || (id.starts_with('@') && id.contains("//")) {
            let (_, rest) = id.split_once("//").unwrap_or(("", id));
            let Some((pkg, target)) = rest.rsplit_once(':') else {
                return Err("a Bazel label needs a target: expected //package:target".into());
            };
            let bad = |s: &str| s.chars().any(|c| c.is_whitespace() || c == ':');
            if target.is_empty() || bad(target) || bad(pkg) || pkg.starts_with('/') || pkg.ends_with('/') {
                return Err("expected a Bazel label //package:target".into());
            }
            return Ok(IdKind::BazelLabel);
        }
        if id.contains("::") {
            return Ok(IdKind::PytestNode);
        }
        if id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Ok(IdKind::LcovTestName);
        }
        let head = id.split(['[', '(']).next().unwrap_or(id);
        if let Some((class, name)) = head.rsplit_once('.') {
            if !class.is_empty()
                && !name.is_empty()
                && !class.split('.').any(str::is_empty)
                && !head.chars().any(char::is_whitespace)
            {
                return Ok(IdKind::JUnitCase);
            }
        }
        Err("expected a pytest node id (path::name), a Bazel label (//package:target), an LCOV test name (letters, digits, _) or a JUnit classname.name".into())
    }
}

/// A JUnit case a known id can stand for: `(Some(classname), name)`, or
/// `(None, name)` for any classname (an LCOV test name, a Bazel label).
pub type JoinKey = (Option<String>, String);

/// The JUnit cases `id` joins with (documented in docs/cli.md, "Other languages"):
/// - pytest node id → its [`junit_key`];
/// - LCOV test name `T` → a case named `T` (cmocka, GoogleTest's `TEST(Suite, T)`
///   written as suite `Suite`, name `T`: the classname is not part of a `TN:` name);
/// - Bazel label `//pkg:target` → the case Bazel writes into the target's `test.xml`,
///   named `pkg/target`, and a case named by the label itself;
/// - JUnit `classname.name` → that classname and name (split at the last `.` before
///   any parameters).
pub fn junit_join_keys(id: &TestId) -> Vec<JoinKey> {
    match IdKind::of(id.as_str()) {
        Ok(IdKind::PytestNode) | Err(_) => {
            let (c, n) = junit_key(id);
            vec![(Some(c), n)]
        }
        Ok(IdKind::LcovTestName) => vec![(None, id.0.clone())],
        Ok(IdKind::BazelLabel) => {
            let rest = id.0.split_once("//").map_or(id.0.as_str(), |(_, r)| r);
            let path = rest.replacen(':', "/", 1);
            vec![(None, path), (None, id.0.clone())]
        }
        Ok(IdKind::JUnitCase) => {
            let cut = id.0.find(['[', '(']).unwrap_or(id.0.len());
            let dot = id.0[..cut].rfind('.').unwrap_or(0);
            vec![(Some(id.0[..dot].to_string()), id.0[dot + 1..].to_string())]
        }
    }
}

#[cfg(test)]
mod tests;
