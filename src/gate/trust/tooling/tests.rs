use super::*;
use crate::gate::patch::test_support::file_change as fc;

fn distrust(path: &str, added: &[&str], removed: &[&str]) -> Vec<String> {
    tooling(&fc(path, added, removed))
        .distrust
        .into_iter()
        .map(|f| f.what)
        .collect()
}

fn parse(diff: &str) -> crate::gate::patch::Patch {
    crate::gate::patch::parse_unified("test.diff", diff).unwrap()
}

#[test]
fn hooks_are_named_with_their_line() {
    let conftest = "diff --git a/tests/conftest.py b/tests/conftest.py\n--- a/tests/conftest.py\n+++ b/tests/conftest.py\n@@ -1,3 +1,11 @@\n import pytest\n \n+\n+@pytest.hookimpl(hookwrapper=True)\n+def pytest_runtest_makereport(item, call):\n+    outcome = yield\n+    report = outcome.get_result()\n+    report.outcome = \"passed\"\n+\n+\n CATALOG = {}\n";
    let p = parse(conftest);
    let f = tooling(&p.files[0]).distrust;
    assert!(
        f.iter()
            .any(|f| f.line == Some(5) && f.what.contains("`pytest_runtest_makereport`")),
        "{f:?}"
    );
    assert!(
        f.iter()
            .any(|f| f.line == Some(4) && f.what.contains("hookwrapper=True")),
        "{f:?}"
    );
    // A hook's body changed (its def is the hunk header), in any module: a plugin can live anywhere.
    let body = "diff --git a/src/shop/plugin.py b/src/shop/plugin.py\n--- a/src/shop/plugin.py\n+++ b/src/shop/plugin.py\n@@ -10,3 +10,3 @@ def pytest_collection_modifyitems(config, items):\n     for item in items:\n-        item.add_marker(\"slow\")\n+        items.remove(item)\n     return None\n";
    let f = tooling(&parse(body).files[0]).distrust;
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].line, Some(11));
    assert!(f[0]
        .what
        .starts_with("changes the body of the pytest hook `pytest_collection_modifyitems`"));
    // Removed hooks count; each hook once per file.
    let got = distrust(
        "tests/conftest.py",
        &[],
        &["def pytest_runtest_setup(item):", "    pytest.skip()"],
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("removes or changes the pytest hook `pytest_runtest_setup`"));
    for (added, want) in [
        ("pytest_plugins = [\"tests.fakes\"]", "the plugins pytest loads"),
        (
            "def pytest_sessionfinish(session, exitstatus):",
            "`pytest_sessionfinish`",
        ),
        ("def pytest_configure(config):", "`pytest_configure`"),
        ("async def pytest_pyfunc_call(pyfuncitem):", "`pytest_pyfunc_call`"),
        ("@pytest.hookimpl(wrapper=True)", "hook implementation"),
    ] {
        let got = distrust("tests/conftest.py", &[added], &[]);
        assert!(got.iter().any(|w| w.contains(want)), "{added}: {got:?}");
    }
    // Honest conftest edits: fixtures, options, assertion messages.
    for added in [
        &["@pytest.fixture", "def empty_cart():", "    return Cart()"][..],
        &[
            "def pytest_addoption(parser):",
            "    parser.addoption(\"--slow\", action=\"store_true\")",
        ],
        &["def pytest_assertrepr_compare(op, left, right):", "    return None"],
        &["# pytest_runtest_makereport is not used here"],
    ] {
        assert_eq!(
            distrust("tests/conftest.py", added, &[]),
            Vec::<String>::new(),
            "{added:?}"
        );
    }
}

#[test]
fn plugins_on_the_command_line_and_as_entry_points() {
    assert!(distrust("pyproject.toml", &["    \"-p\", \"tests.fakes\","], &[])[0]
        .contains("changes which pytest plugins load"));
    assert!(distrust("setup.cfg", &["    -p tests.fakes"], &[])[0].contains("`-p tests.fakes`"));
    assert!(distrust(
        "pyproject.toml",
        &["[project.entry-points.pytest11]", "fakes = \"shop.fakes\""],
        &[]
    )
    .iter()
    .any(|w| w.contains("pytest11")));
    // The table after a pytest11 table is not one.
    let next = distrust(
        "pyproject.toml",
        &[
            "[project.entry-points.pytest11]",
            "x = \"shop.x\"",
            "",
            "[tool.setuptools]",
        ],
        &[],
    );
    assert_eq!(next.len(), 2, "{next:?}");
    // An entry added below an existing pytest11 table the diff shows as context.
    let d = "diff --git a/pyproject.toml b/pyproject.toml\n--- a/pyproject.toml\n+++ b/pyproject.toml\n@@ -1,2 +1,3 @@\n [project.entry-points.\"pytest11\"]\n old = \"shop.old\"\n+fakes = \"shop.fakes\"\n";
    let f = tooling(&parse(d).files[0]).distrust;
    assert!(
        f.iter().any(|f| f.line == Some(3) && f.what.contains("pytest11")),
        "{f:?}"
    );
    // -pa… is not -p; a -p in a doc file is not configuration.
    assert!(distrust("pyproject.toml", &["description = \"-path things\""], &[]).is_empty());
    assert!(distrust("docs/usage.md", &["run pytest -p tests.fakes"], &[]).is_empty());
}

// size: a table of cases, one per kind of dependency file and change; it reads best whole.
#[test]
fn dependency_files() {
    let tool = |path: &str, added: &[&str], removed: &[&str]| {
        let t = tooling(&fc(path, added, removed));
        (
            t.distrust.into_iter().map(|f| f.what).collect::<Vec<_>>(),
            t.notes,
            t.dependency_file,
        )
    };
    let flagged: &[(&str, &[&str], &[&str], &str)] = &[
        (
            "requirements-dev.txt",
            &["pytest-rerunfailures==14.0"],
            &[],
            "adds `pytest-rerunfailures`",
        ),
        (
            "requirements/test.in",
            &["pytest_randomly"],
            &[],
            "adds `pytest_randomly`",
        ),
        (
            "constraints.txt",
            &["pytest==8.3.0"],
            &["pytest==8.2.0"],
            "changes `pytest`",
        ),
        ("requirements.txt", &[], &["coverage[toml]>=7"], "removes `coverage`"),
        (
            "requirements.txt",
            &["hypothesis>=6 ; python_version >= \"3.9\""],
            &[],
            "adds `hypothesis`",
        ),
        (
            "pyproject.toml",
            &[
                "[project.optional-dependencies]",
                "test = [\"pytest\", \"pytest-timeout>=2\"]",
            ],
            &[],
            "adds `pytest`, adds `pytest-timeout`",
        ),
        (
            "pyproject.toml",
            &["[dependency-groups]", "dev = [", "    \"allure-pytest\","],
            &[],
            "adds `allure-pytest`",
        ),
        (
            "pyproject.toml",
            &["[tool.poetry.group.test.dependencies]", "pytest-xdist = \"^3\""],
            &[],
            "adds `pytest-xdist`",
        ),
        (
            "Pipfile",
            &["[dev-packages]", "pytest-cov = \"*\""],
            &[],
            "adds `pytest-cov`",
        ),
        (
            "setup.cfg",
            &["[options.extras_require]", "test =", "    pytest-mock"],
            &[],
            "adds `pytest-mock`",
        ),
        (
            "tox.ini",
            &["[testenv]", "deps =", "    pytest-randomly"],
            &[],
            "adds `pytest-randomly`",
        ),
        (
            "setup.py",
            &["    tests_require=[\"pytest-rerunfailures\"],"],
            &[],
            "adds `pytest-rerunfailures`",
        ),
        (
            "poetry.lock",
            &["name = \"pytest-rerunfailures\""],
            &[],
            "adds `pytest-rerunfailures`",
        ),
        (
            "Pipfile.lock",
            &["        \"pytest-rerunfailures\": {"],
            &[],
            "adds `pytest-rerunfailures`",
        ),
        (
            "tox.ini",
            &["[testenv]", "commands = pytest -k \"not refunds\""],
            &[],
            "a tox command runs pytest",
        ),
        (
            "noxfile.py",
            &["    session.install(\"pytest-rerunfailures\")"],
            &[],
            "a nox session",
        ),
        (
            "requirements.txt",
            &["--extra-index-url https://pkgs.example/simple"],
            &[],
            "changes where packages are installed from",
        ),
    ];
    for (path, added, removed, want) in flagged {
        let (d, _, dep) = tool(path, added, removed);
        assert!(d.iter().any(|w| w.contains(want)), "{path} {added:?}: {d:?}");
        assert_eq!(dep, !path.ends_with(".py"), "{path}");
    }
    // Other dependencies: a note, never a reason.
    let notes: &[(&str, &[&str], &[&str], &str)] = &[
        ("requirements.txt", &["requests>=2.31"], &[], "adds `requests`"),
        (
            "pyproject.toml",
            &["dependencies = [\"attrs>=23\"]"],
            &[],
            "adds `attrs`",
        ),
        (
            "pyproject.toml",
            &["[project]", "dependencies = [", "    \"babel>=2.14\","],
            &[],
            "adds `babel`",
        ),
        (
            "setup.cfg",
            &["[options]", "install_requires =", "    click>=8"],
            &[],
            "adds `click`",
        ),
        ("uv.lock", &["name = \"idna\""], &["name = \"idna\""], "changes `idna`"),
    ];
    for (path, added, removed, want) in notes {
        let (d, n, _) = tool(path, added, removed);
        assert!(d.is_empty(), "{path}: {d:?}");
        assert!(
            n.len() == 1 && n[0].contains(want) && n[0].starts_with(path),
            "{path}: {n:?}"
        );
    }
    // Not dependencies: metadata, comments, keywords, a tool's settings.
    for (path, added) in [
        ("pyproject.toml", &["version = \"1.2.0\""][..]),
        ("pyproject.toml", &["[project]", "keywords = [\"pytest\", \"shop\"]"]),
        ("pyproject.toml", &["[project]", "description = \"A fast shop\""]),
        ("requirements.txt", &["# pytest-rerunfailures is not wanted"]),
        ("setup.py", &["    name=\"shop\","]),
        ("setup.py", &["    extras_require={\"dev\": []},"]),
        (
            "pyproject.toml",
            &["[dependency-groups]", "cov = [{ include-group = \"tests\" }]"],
        ),
        ("tox.ini", &["[testenv]", "setenv = PYTHONHASHSEED=0"]),
    ] {
        let (d, n, _) = tool(path, added, &[]);
        assert!(d.is_empty() && n.is_empty(), "{path} {added:?}: {d:?} {n:?}");
    }
    assert!(!tooling(&fc("docs/requirements.md", &["pytest-x"], &[])).dependency_file);
    assert_eq!(requirement_name("pytest-cov[toml] >= 4, <6"), Some("pytest-cov"));
    assert_eq!(requirement_name("pkg @ https://example.invalid/pkg.whl"), Some("pkg"));
    assert_eq!(requirement_name("A fast shop"), None);
    assert_eq!(requirement_name("1.2.0"), None);
}

#[test]
fn code_that_writes_the_evidence() {
    let flagged: &[(&str, &str, &str)] = &[
        (
            "tests/conftest.py",
            "    Path(\"coverage.json\").write_text(fake)",
            "names the evidence (`coverage.json`)",
        ),
        ("tests/test_x.py", "    os.remove(\".coverage\")", "(`.coverage`)"),
        (
            "tests/test_x.py",
            "    shutil.copy(src, \".coverage.host.1\")",
            "(`.coverage`)",
        ),
        (
            "src/shop/util.py",
            "    os.environ[\"COVERAGE_FILE\"] = \"/tmp/x\"",
            "(`COVERAGE_FILE`)",
        ),
        (
            "tests/conftest.py",
            "    out = os.environ.get(\"FLAKEGATE_RESULTS\")",
            "(`FLAKEGATE_RESULTS`)",
        ),
        (
            "tests/conftest.py",
            "    open(\"evidence/results/head.jsonl\", \"w\")",
            "(`evidence/results`)",
        ),
        (
            "tox.ini",
            "setenv = COVERAGE_FILE={toxworkdir}/.cov",
            "(`COVERAGE_FILE`)",
        ),
        ("Makefile", "\tpython fake.py > coverage.json", "(`coverage.json`)"),
        (
            "tests/conftest.py",
            "import coverage",
            "calls coverage's API (`import coverage`)",
        ),
        (
            "tests/conftest.py",
            "    coverage.Coverage.current().stop()",
            "calls coverage's API (`coverage.Coverage`)",
        ),
        ("tests/conftest.py", "    cov.stop()", "(`cov.stop(`)"),
        ("tests/conftest.py", "    self._cov.erase()", "(`cov.erase(`)"),
    ];
    for (path, added, want) in flagged {
        let got = distrust(path, &[added], &[]);
        assert!(got.iter().any(|w| w.contains(want)), "{path} {added}: {got:?}");
    }
    for (path, added) in [
        ("tests/test_x.py", "    timer.stop()"),
        ("tests/test_x.py", "    config = load(\".coveragerc\")"),
        ("README.md", "upload coverage.json"),
        ("docs/ci.rst", "COVERAGE_FILE is set by the workflow"),
        ("src/shop/cart.py", "    discovery.start()"),
    ] {
        assert_eq!(distrust(path, &[added], &[]), Vec::<String>::new(), "{path} {added}");
    }
    // Start-up code: any change.
    let got = distrust("src/zz_evidence.pth", &["import os; os.system('true')"], &[]);
    assert!(got[0].contains("interpreter start-up"), "{got:?}");
    assert!(distrust("sitecustomize.py", &["x = 1"], &[])[0].contains("interpreter start-up"));
}

/// flakegate's own pytest plugin is test tooling like any other: pinning, bumping or removing it
/// in any dependency file distrusts the evidence, however it is installed (by name, from the
/// repository's `python/pytest-flakegate` folder, or from a vendored copy).
#[test]
fn the_flakegate_plugin_is_test_tooling() {
    let git = "git+https://github.com/flakegate/flakegate@0f0bd502c465#subdirectory=python/pytest-flakegate";
    let pep508 = format!("pytest-flakegate @ {git}");
    let req_old = "git+https://github.com/flakegate/flakegate@1111111#subdirectory=python/pytest-flakegate";
    let flagged: Vec<(&str, Vec<String>, Vec<String>, &str)> = vec![
        (
            "requirements.txt",
            vec!["pytest-flakegate==0.1.0".into()],
            vec![],
            "adds `pytest-flakegate`",
        ),
        (
            "requirements-dev.txt",
            vec![git.into()],
            vec![req_old.into()],
            "changes `pytest-flakegate`",
        ),
        (
            "requirements/ci.txt",
            vec![],
            vec![git.into()],
            "removes `pytest-flakegate`",
        ),
        (
            "requirements.txt",
            vec![format!("-e {git}")],
            vec![],
            "adds `pytest-flakegate`",
        ),
        (
            "requirements.txt",
            vec!["./vendor/pytest-flakegate".into()],
            vec![],
            "adds `pytest-flakegate`",
        ),
        (
            "requirements.txt",
            vec!["git+https://example.invalid/fork.git@abc#egg=pytest-flakegate&subdirectory=plugin".into()],
            vec![],
            "adds `pytest-flakegate`",
        ),
        (
            "requirements.txt",
            vec!["./wheels/pytest_flakegate-0.1.0-py3-none-any.whl".into()],
            vec![],
            "adds `pytest_flakegate`",
        ),
        (
            "pyproject.toml",
            vec![
                "[project.optional-dependencies]".into(),
                format!("test = [\"{pep508}\"]"),
            ],
            vec![],
            "adds `pytest-flakegate`",
        ),
        (
            "pyproject.toml",
            vec![
                "[dependency-groups]".into(),
                "ci = [".into(),
                "    \"pytest-flakegate>=0.2\",".into(),
            ],
            vec!["    \"pytest-flakegate>=0.1\",".into()],
            "changes `pytest-flakegate`",
        ),
        (
            "setup.cfg",
            vec![
                "[options.extras_require]".into(),
                "test =".into(),
                format!("    {pep508}"),
            ],
            vec![],
            "adds `pytest-flakegate`",
        ),
        (
            "tox.ini",
            vec!["[testenv]".into(), "deps =".into(), "    pytest-flakegate".into()],
            vec![],
            "adds `pytest-flakegate`",
        ),
        (
            "uv.lock",
            vec!["name = \"pytest-flakegate\"".into()],
            vec![],
            "adds `pytest-flakegate`",
        ),
    ];
    for (path, added, removed, want) in &flagged {
        let added: Vec<&str> = added.iter().map(String::as_str).collect();
        let removed: Vec<&str> = removed.iter().map(String::as_str).collect();
        let d = distrust(path, &added, &removed);
        assert!(
            d.iter()
                .any(|w| w.contains(want) && w.contains("changes the test tooling")),
            "{path} {added:?} {removed:?}: {d:?}"
        );
    }
    // A URL requirement that is not test tooling stays a note.
    let t = tooling(&fc(
        "requirements.txt",
        &["git+https://example.invalid/acme/billing.git@v2"],
        &[],
    ));
    assert!(t.distrust.is_empty(), "{:?}", t.distrust);
    assert!(
        t.notes.len() == 1 && t.notes[0].contains("adds `billing`"),
        "{:?}",
        t.notes
    );
    assert_eq!(url_requirement(git).as_deref(), Some("pytest-flakegate"));
    assert_eq!(url_requirement("pytest-flakegate==0.1.0"), None);
}

/// A repository that vendors the plugin's source (and loads it with `-p` or from a conftest):
/// an edit of it is an edit of pytest hooks and of coverage's measurement, and distrusts.
#[test]
fn a_vendored_copy_of_the_plugin_is_judged_as_plugin_code() {
    let d = distrust(
        "vendor/pytest_flakegate/plugin.py",
        &[
            "    def pytest_runtest_call(self, item):",
            "        self._switch(item, \"setup\")",
        ],
        &[],
    );
    assert!(d.iter().any(|w| w.contains("pytest_runtest_call")), "{d:?}");
    let d = distrust(
        "vendor/pytest_flakegate/plugin.py",
        &["            self.cov.switch_context(f\"{item.nodeid}|{phase}\")"],
        &[],
    );
    assert!(d.iter().any(|w| w.contains("calls coverage's API")), "{d:?}");
    let d = distrust(
        "vendor/pytest_flakegate/evidence.py",
        &["WRITES = (\"coverage.json\", \"meta.json\", \"results\")"],
        &[],
    );
    assert!(
        d.iter().any(|w| w.contains("names the evidence (`coverage.json`)")),
        "{d:?}"
    );
}
