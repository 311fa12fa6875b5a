"""pytest-flakegate against real pytest, coverage.py, pytest-cov and pytest-xdist: each test
runs pytest in a subprocess (pytester) on a small project and reads what it wrote."""

import json
import os
import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]

OPS = """\
def add(a, b):
    return a + b


def mul(a, b):
    product = a * b
    return product


def neg(a):
    return -a
"""

CONFTEST = """\
import pytest

from calc.ops import add

TWO = add(1, 1)


@pytest.fixture
def two():
    return add(1, 1)
"""

TESTS = """\
import pytest

from calc.ops import add, mul, neg


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_mul_by_two(two, n):
    assert mul(two, n) == 2 * n


class TestNeg:
    def test_neg(self):
        assert neg(4) == -4
"""

MUL_WITNESSES = {
    "tests/test_ops.py::test_mul",
    "tests/test_ops.py::test_mul_by_two[1]",
    "tests/test_ops.py::test_mul_by_two[2]",
    "tests/test_ops.py::test_mul_by_two[3]",
    "tests/test_ops.py::test_mul_by_two[4]",
}


@pytest.fixture
def project(pytester):
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["src"]\naddopts = "-p no:cacheprovider"\n'
    )
    calc = pytester.path / "src" / "calc"
    calc.mkdir(parents=True)
    (calc / "__init__.py").write_text("")
    (calc / "ops.py").write_text(OPS)
    tests = pytester.path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(CONFTEST)
    (tests / "test_ops.py").write_text(TESTS)
    return pytester


def run(pytester, *args):
    return pytester.runpytest_subprocess(*args)


def contexts(evidence, path="src/calc/ops.py"):
    """line → set of contexts of `path` in the evidence's coverage.json."""
    data = json.loads((evidence / "coverage.json").read_text())
    assert data["meta"]["show_contexts"] is True
    return {int(line): set(ctx) for line, ctx in data["files"][path]["contexts"].items()}


def records(evidence):
    return [json.loads(line) for line in (evidence / "results" / "head.jsonl").read_text().splitlines()]


def tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def siblings(pytester):
    """The project's entries, without pytester's own (runpytest-N, stdout, stderr)."""
    own = ("runpytest-", "stdout", "stderr")
    return sorted(p.name for p in pytester.path.iterdir() if not p.name.startswith(own))


def snapshot(pytester):
    """Every file of the project and its bytes (pytester's own left out)."""
    return {
        p: p.read_bytes() for name in siblings(pytester) for p in [pytester.path / name, *(pytester.path / name).rglob("*")]
        if p.is_file()
    }


def command(meta):
    """meta.json's test_command without the --basetemp pytester adds."""
    return " ".join(w for w in meta["test_command"].split(" ") if not w.startswith("--basetemp="))


def test_one_flag_writes_the_whole_evidence_directory(project):
    result = run(project, "--flakegate=evidence", "--flakegate-cov=src")
    result.assert_outcomes(passed=7)
    ev = project.path / "evidence"
    assert tree(ev) == ["coverage.json", "meta.json", "results", "results/head.jsonl"]
    result.stdout.fnmatch_lines([f"flakegate: evidence written to {ev}"])

    lines = contexts(ev)
    # mul's body: each test that called it, in the phase it ran.
    assert lines[6] == {t + "|run" for t in MUL_WITNESSES}
    # add: test_add runs it, the `two` fixture in each parametrized case's setup, and the
    # conftest at import time (measured: coverage starts before the conftest files load).
    assert lines[2] == {"", "tests/test_ops.py::test_add|run"} | {
        f"tests/test_ops.py::test_mul_by_two[{n}]|setup" for n in (1, 2, 3, 4)
    }
    assert lines[11] == {"tests/test_ops.py::TestNeg::test_neg|run"}
    # Definitions ran at import time: the empty context.
    assert lines[1] == {""} and lines[5] == {""}
    # Only the source asked for is measured.
    files = json.loads((ev / "coverage.json").read_text())["files"]
    assert sorted(files) == ["src/calc/__init__.py", "src/calc/ops.py"]

    recs = records(ev)
    assert recs[0] == {"pytest_version": pytest.__version__, "$report_type": "SessionStart"}
    assert recs[-1] == {"exitstatus": 0, "$report_type": "SessionFinish"}
    calls = {r["nodeid"]: r["outcome"] for r in recs if r["$report_type"] == "TestReport" and r["when"] == "call"}
    assert len(calls) == 7 and set(calls.values()) == {"passed"}

    meta = json.loads((ev / "meta.json").read_text())
    assert command(meta) == "python -m pytest"
    assert set(meta) >= {"base_sha", "head_sha", "seed", "test_command"}
    # Nothing left beside it: the temporary directory was renamed into place.
    assert siblings(project) == ["evidence", "pyproject.toml", "src", "tests"]


def test_contexts_are_those_of_pytest_cov(project):
    """The same runs measured by pytest-cov's --cov-context=test give the same contexts."""
    run(project, "--flakegate=evidence", "--flakegate-cov=src").assert_outcomes(passed=7)
    run(project, "--cov=src", "--cov-context=test", "--cov-report=").assert_outcomes(passed=7)
    out = project.path / "cov"
    out.mkdir()
    subprocess.run(
        [sys.executable, "-m", "coverage", "json", "--show-contexts", "-o", str(out / "coverage.json")],
        cwd=project.path,
        check=True,
        stdout=subprocess.PIPE,
    )
    ours = json.loads((project.path / "evidence" / "coverage.json").read_text())["files"]
    theirs = json.loads((out / "coverage.json").read_text())["files"]
    assert sorted(ours) == sorted(theirs)
    for path in theirs:
        assert contexts(project.path / "evidence", path) == contexts(out, path), path


def test_xdist_workers_are_combined_per_test(project):
    result = run(project, "-n", "2", "--flakegate=evidence", "--flakegate-cov=src")
    result.assert_outcomes(passed=7)
    ev = project.path / "evidence"
    assert tree(ev) == ["coverage.json", "meta.json", "results", "results/head.jsonl"]
    lines = contexts(ev)
    assert lines[6] == {t + "|run" for t in MUL_WITNESSES}
    assert lines[11] == {"tests/test_ops.py::TestNeg::test_neg|run"}
    # Import-time lines come from the controller (conftest) and the workers (collection).
    assert lines[1] == {""}
    assert not any("gw" in c for ctx in lines.values() for c in ctx)
    recs = records(ev)
    assert [r["$report_type"] for r in (recs[0], recs[-1])] == ["SessionStart", "SessionFinish"]
    calls = [r for r in recs if r["$report_type"] == "TestReport" and r["when"] == "call"]
    assert len(calls) == 7
    # Both workers ran tests, and their reports are in the one file.
    assert {r["node"] for r in calls} == {"<WorkerController gw0>", "<WorkerController gw1>"}
    assert siblings(project) == ["evidence", "pyproject.toml", "src", "tests"]


def test_a_failing_run_still_writes_its_evidence(project):
    (project.path / "tests" / "test_fail.py").write_text(
        "from calc.ops import neg\n\ndef test_broken():\n    assert neg(1) == 1\n"
    )
    result = run(project, "--flakegate=evidence", "--flakegate-cov=src")
    result.assert_outcomes(passed=7, failed=1)
    ev = project.path / "evidence"
    recs = records(ev)
    assert recs[-1] == {"exitstatus": 1, "$report_type": "SessionFinish"}
    failed = [r["nodeid"] for r in recs if r.get("outcome") == "failed"]
    assert failed == ["tests/test_fail.py::test_broken"]
    assert "tests/test_fail.py::test_broken|run" in contexts(ev)[11]


def test_an_earlier_runs_evidence_is_replaced(project):
    run(project, "--flakegate=evidence", "--flakegate-cov=src").assert_outcomes(passed=7)
    (project.path / "tests" / "test_more.py").write_text("from calc.ops import neg\n\ndef test_more():\n    assert neg(0) == 0\n")
    run(project, "--flakegate=evidence", "--flakegate-cov=src").assert_outcomes(passed=8)
    assert "tests/test_more.py::test_more|run" in contexts(project.path / "evidence")[11]
    assert siblings(project) == ["evidence", "pyproject.toml", "src", "tests"]


@pytest.mark.parametrize(
    "make, target, expect",
    [
        (lambda p: (p / "evidence").mkdir() or (p / "evidence" / "notes.txt").write_text("mine"),
         "evidence", "holds files this plugin does not write (notes.txt)"),
        (lambda p: (p / "evidence").write_text("a file"), "evidence", "exists and is not a directory"),
        (lambda p: (p / "blocker").write_text("a file"), "blocker/evidence", "is not a directory"),
        (lambda p: (p / "evidence" / "results").mkdir(parents=True) or (p / "evidence" / "results" / "junit.xml").write_text("<x/>"),
         "evidence", "(results/junit.xml)"),
    ],
    ids=["other-contents", "a-file", "under-a-file", "other-results"],
)
def test_an_unwritable_evidence_directory_is_a_usage_error_before_any_test(project, make, target, expect):
    make(project.path)
    before = snapshot(project)
    result = run(project, f"--flakegate={target}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --flakegate={project.path / target}: *{expect}*"])
    assert "passed" not in result.stdout.str() and "collected" not in result.stdout.str()
    assert snapshot(project) == before


def test_pytest_cov_alongside_is_a_usage_error(project):
    result = run(project, "--flakegate=evidence", "--cov=src")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --flakegate measures coverage itself: drop pytest-cov's --cov*"])
    assert not (project.path / "evidence").exists()


def test_an_interrupted_run_leaves_no_evidence(project):
    (project.path / "tests" / "test_stop.py").write_text("import pytest\n\ndef test_stop():\n    pytest.exit('stop here')\n")
    result = run(project, "--flakegate=evidence")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*flakegate: the run did not finish (exit status 2): no evidence written*"])
    assert siblings(project) == ["pyproject.toml", "src", "tests"]


def git(cwd, *args):
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    out = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, stdout=subprocess.PIPE, text=True)
    return out.stdout.strip()


def test_meta_names_the_commits_seed_and_workflow(project, monkeypatch):
    git(project.path, "init", "-q")
    git(project.path, "add", "-A")
    git(project.path, "commit", "-q", "-m", "base")
    base = git(project.path, "rev-parse", "HEAD")
    (project.path / "tests" / "test_more.py").write_text("def test_more():\n    assert True\n")
    git(project.path, "add", "-A")
    git(project.path, "commit", "-q", "-m", "head")
    head = git(project.path, "rev-parse", "HEAD")

    event = project.path.parent / "event.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": "b" * 40}, "head": {"sha": head}}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_WORKFLOW_REF", "acme/shop/.github/workflows/flakegate-evidence.yml@refs/pull/7/merge")
    monkeypatch.setenv("FLAKEGATE_SEED", "202648")
    run(project, "--flakegate=evidence", "-q", "-k", "mul or more").assert_outcomes(passed=6)
    meta = json.loads((project.path / "evidence" / "meta.json").read_text())
    assert meta == {
        "base_sha": "b" * 40,
        "head_sha": head,
        "seed": 202648,
        "test_command": meta["test_command"],
        "workflow": ".github/workflows/flakegate-evidence.yml",
    }
    assert command(meta) == "python -m pytest -q -k 'mul or more'"
    # --flakegate-base names the base instead, resolved by git.
    run(project, "--flakegate=evidence", "--flakegate-base=HEAD~1").assert_outcomes(passed=8)
    assert json.loads((project.path / "evidence" / "meta.json").read_text())["base_sha"] == base
    result = run(project, "--flakegate=evidence", "--flakegate-base=no-such-rev")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --flakegate-base=no-such-rev: git cannot resolve it to a commit in *"])


def test_results_only_for_probe_runs(project):
    (project.path / "tests" / "test_fail.py").write_text("def test_broken():\n    assert False\n")
    result = run(project, "-n", "2", "--flakegate-results=runs/run-1.jsonl")
    result.assert_outcomes(passed=7, failed=1)
    assert sorted(p.name for p in (project.path / "runs").iterdir()) == ["run-1.jsonl"]
    recs = [json.loads(line) for line in (project.path / "runs" / "run-1.jsonl").read_text().splitlines()]
    assert recs[-1] == {"exitstatus": 1, "$report_type": "SessionFinish"}
    assert len([r for r in recs if r.get("when") == "call"]) == 8
    # No coverage was measured, no evidence directory written.
    assert not list(project.path.glob(".coverage*")) and not (project.path / "evidence").exists()
