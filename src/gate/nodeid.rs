//! Test identities: pytest node ids, coverage contexts and their phases.
//!
//! Coverage contexts written by pytest-cov's `--cov-context=test` are
//! `nodeid|run`, `nodeid|setup` or `nodeid|teardown`. The phase is split off at
//! the *last* `|` because parametrised ids may contain `|` themselves. A static
//! context (coverage's `[run] context = py311`) is prefixed as `py311|nodeid|run`.
//! The empty context `""` is import-time code and names no test.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts() {
        let t = |s: &str, p| ContextKind::Test(TestId::new(s), p);
        let cases = [
            ("", ContextKind::ImportTime),
            ("tests/a.py::test_x|run", t("tests/a.py::test_x", Phase::Run)),
            ("tests/a.py::test_x|setup", t("tests/a.py::test_x", Phase::Setup)),
            ("tests/a.py::test_x|teardown", t("tests/a.py::test_x", Phase::Teardown)),
            ("tests/a.py::test_p[a|b]|run", t("tests/a.py::test_p[a|b]", Phase::Run)),
            (
                "py311|tests/a.py::T::test_x|run",
                t("tests/a.py::T::test_x", Phase::Run),
            ),
            (
                "py311|tests/a.py::test_p[x|y]|setup",
                t("tests/a.py::test_p[x|y]", Phase::Setup),
            ),
            ("tests.a.test_x", ContextKind::Other("tests.a.test_x".into())),
            ("py311", ContextKind::Other("py311".into())),
            (
                "tests/a.py::test_x|bogus",
                ContextKind::Other("tests/a.py::test_x|bogus".into()),
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(parse_context(raw), want, "context {raw:?}");
        }
    }

    #[test]
    fn prefixes() {
        let id = TestId::new("tests/a.py::TestX::test_y[1-2]");
        assert!(id.is_under("tests/a.py::TestX"));
        assert!(id.is_under("tests/a.py::TestX::test_y"));
        assert!(id.is_under("tests/a.py::TestX::test_y[1-2]"));
        assert!(!id.is_under("tests/a.py::TestX::test_"));
        assert!(!id.is_under("tests/a.py::TestXY"));
        assert_eq!(id.base(), "tests/a.py::TestX::test_y");
        assert_eq!(id.file(), "tests/a.py");
    }

    #[test]
    fn junit_keys() {
        let k = junit_key(&TestId::new("tests/sub/test_a.py::TestX::test_y[1]"));
        assert_eq!(k, ("tests.sub.test_a.TestX".into(), "test_y[1]".into()));
        let k = junit_key(&TestId::new("tests/test_a.py::T::test_p[a::b]"));
        assert_eq!(k, ("tests.test_a.T".into(), "test_p[a::b]".into()));
        let k = junit_key(&TestId::new("tests/test_a.py::test_z"));
        assert_eq!(k, ("tests.test_a".into(), "test_z".into()));
    }
}
