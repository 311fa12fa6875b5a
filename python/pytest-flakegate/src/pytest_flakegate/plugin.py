"""The pytest plugin (entry point `pytest11`: `flakegate`).

`pytest --flakegate=DIR` writes the evidence directory `flakegate check DIR` reads:

    coverage.json        per-test coverage: coverage.py's JSON report with contexts, one context
                         per test and phase, `NODEID|setup`, `NODEID|run`, `NODEID|teardown`
                         (what pytest-cov's `--cov-context=test` records); import-time code has
                         the empty context
    results/head.jsonl   the run's results in pytest-reportlog's format
    meta.json            base_sha, head_sha, seed, test_command, workflow (see meta.py)

With pytest-xdist each worker measures its own tests into the temporary directory and the
controller combines their data (contexts stay per test) and writes the one results file.

`pytest --flakegate-results=FILE` writes only the report-log, for `flakegate probe`'s base
runs (`--flakegate-results={results}`).
"""

import json
import os

import pytest

from . import evidence
from .meta import MetaError, meta, resolve_base
from .reportlog import ReportLog, ResultsFile

# Exit statuses after which the evidence is written: the run ended (tests passed or failed,
# or none was collected). An interrupted run or an internal error leaves no directory.
_FINISHED = (0, 1, 5)


def pytest_addoption(parser):
    group = parser.getgroup("flakegate", "evidence for flakegate")
    group.addoption(
        "--flakegate",
        metavar="DIR",
        default=None,
        help="write the evidence directory flakegate check reads (per-test coverage, results, meta.json) "
        "to DIR; DIR must not exist, be empty or hold an earlier run's evidence",
    )
    group.addoption(
        "--flakegate-cov",
        metavar="PATH",
        action="append",
        default=[],
        help="measure this source (a directory or package; repeatable); default: coverage's own "
        "configuration ([run] source), else every file outside the installed packages",
    )
    group.addoption(
        "--flakegate-base",
        metavar="REV",
        default=None,
        help="the base commit recorded in meta.json; default: the pull request's base in "
        "GitHub's event (GITHUB_EVENT_PATH), else none",
    )
    group.addoption(
        "--flakegate-results",
        metavar="FILE",
        default=None,
        help="write only the results (pytest-reportlog's format) to FILE: "
        "flakegate probe ... -- python -m pytest --flakegate-results={results}",
    )


def _is_worker_process():
    return "PYTEST_XDIST_WORKER" in os.environ


class Measurement:
    """One process's coverage, switched to each test's context phase by phase."""

    def __init__(self, covdir, sources, suffix):
        import coverage

        self.cov = coverage.Coverage(
            data_file=os.path.join(covdir, ".coverage"),
            data_suffix=suffix,
            source=sources or None,
            config_file=True,
        )
        self.cov.start()
        self.running = True

    def stop(self):
        if self.running:
            self.running = False
            self.cov.stop()
            self.cov.save()

    def _switch(self, item, phase):
        if self.running:
            self.cov.switch_context(f"{item.nodeid}|{phase}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self._switch(item, "setup")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        self._switch(item, "run")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item):
        self._switch(item, "teardown")


class Evidence:
    """The controller's (or the single process's) state for `--flakegate=DIR`."""

    def __init__(self, config, target, sources, base):
        self.config = config
        self.target = os.path.abspath(target)
        self.sources = sources
        self.base = base
        self.tmp = evidence.prepare(self.target)
        self.covdir = evidence.coverage_dir(self.tmp)
        try:
            self.measurement = Measurement(self.covdir, sources, "main")
        except Exception as e:
            evidence.discard(self.tmp)
            raise evidence.EvidenceError(f"--flakegate={self.target}: coverage cannot start: {e}") from None
        config.pluginmanager.register(self.measurement, "flakegate-measurement")
        self.log = None
        self.done = False

    def start_log(self):
        self.log = ReportLog(self.config, os.path.join(self.tmp, "results", evidence.RESULTS))
        self.config.pluginmanager.register(self.log, "flakegate-log")

    def _coverage_json(self):
        """Combine every process's data and write coverage.json; False when nothing was measured."""
        import coverage
        from coverage.exceptions import NoDataError

        combined = coverage.Coverage(
            data_file=os.path.join(self.covdir, ".coverage"),
            source=self.sources or None,
            config_file=True,
        )
        combined.combine([self.covdir], keep=False)
        combined.save()
        try:
            combined.json_report(outfile=os.path.join(self.tmp, "coverage.json"), show_contexts=True)
        except NoDataError:
            return False
        return True

    def finish(self, exitstatus):
        if self.done:
            return
        self.done = True
        self.measurement.stop()
        if self.log is not None:
            self.log.close()
        if int(exitstatus) not in _FINISHED:
            evidence.discard(self.tmp)
            self._say(f"flakegate: the run did not finish (exit status {int(exitstatus)}): no evidence written")
            return
        try:
            measured = self._coverage_json()
            with open(os.path.join(self.tmp, "meta.json"), "w", encoding="utf-8") as f:
                json.dump(meta(str(self.config.rootpath), self.config.invocation_params.args, self.base), f, indent=2)
                f.write("\n")
            evidence.commit(self.tmp, self.target)
        except BaseException:
            # Never a half-written directory: whatever failed, the target is left as it was.
            evidence.discard(self.tmp)
            raise
        if measured:
            self._say(f"flakegate: evidence written to {self.target}")
        else:
            self._say(
                f"flakegate: evidence written to {self.target} without coverage.json: coverage measured "
                "no file (see --flakegate-cov)"
            )

    def abandon(self):
        if not self.done:
            self.done = True
            self.measurement.stop()
            if self.log is not None:
                self.log.close()
            evidence.discard(self.tmp)

    def _say(self, text):
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            # After the progress line, which ends without a newline.
            tr.write("\n")
            tr.write_line(text)


def _usage(message):
    return pytest.UsageError(message)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Start measuring before the conftest files import the code under test."""
    ns = early_config.known_args_namespace
    target = getattr(ns, "flakegate", None)
    if not target or _is_worker_process():
        return
    if getattr(ns, "cov_source", None):
        raise _usage("--flakegate measures coverage itself: drop pytest-cov's --cov (and --cov-context)")
    import coverage

    if coverage.Coverage.current() is not None:
        raise _usage("--flakegate measures coverage itself: run pytest directly, not under `coverage run`")
    base = None
    if getattr(ns, "flakegate_base", None):
        try:
            base = resolve_base(str(early_config.rootpath), ns.flakegate_base)
        except MetaError as e:
            raise _usage(str(e)) from None
    try:
        early_config._flakegate = Evidence(early_config, target, list(ns.flakegate_cov or []), base)
    except evidence.EvidenceError as e:
        raise _usage(str(e)) from None


def pytest_configure(config):
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        covdir = workerinput.get("flakegate_covdir")
        if covdir:
            config._flakegate_worker = Measurement(covdir, workerinput["flakegate_sources"], workerinput["workerid"])
            config.pluginmanager.register(config._flakegate_worker, "flakegate-measurement")
        return
    ev = getattr(config, "_flakegate", None)
    if ev is not None:
        ev.start_log()
    results = config.getoption("flakegate_results")
    if ev is not None or results:
        config.pluginmanager.register(_Finisher(), "flakegate-finisher")
    if results:
        results = os.path.abspath(results)
        try:
            os.makedirs(os.path.dirname(results), exist_ok=True)
            config._flakegate_results = ResultsFile(config, results)
        except OSError as e:
            raise _usage(f"--flakegate-results={results}: cannot write it: {e.strerror or e}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: tell each worker where its coverage data goes."""
    ev = getattr(node.config, "_flakegate", None)
    if ev is not None:
        node.workerinput["flakegate_covdir"] = ev.covdir
        node.workerinput["flakegate_sources"] = ev.sources


def pytest_sessionfinish(session, exitstatus):
    # A worker saves its data before it tells the controller it has finished.
    worker = getattr(session.config, "_flakegate_worker", None)
    if worker is not None:
        worker.stop()


class _Finisher:
    """Writes the evidence after every other `pytest_sessionfinish` (xdist's workers are down,
    the results' SessionFinish record is written)."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self, session, exitstatus):
        yield
        ev = getattr(session.config, "_flakegate", None)
        if ev is not None:
            ev.finish(exitstatus)
        results = getattr(session.config, "_flakegate_results", None)
        if results is not None:
            results.finish(int(exitstatus) in _FINISHED)
            session.config._flakegate_results = None


def pytest_unconfigure(config):
    ev = getattr(config, "_flakegate", None)
    if ev is not None:
        ev.abandon()
    results = getattr(config, "_flakegate_results", None)
    if results is not None:
        results.finish(False)
    worker = getattr(config, "_flakegate_worker", None)
    if worker is not None:
        worker.stop()
