"""The head run's results as pytest-reportlog writes them (`--report-log=FILE`): one JSON
object a line, `SessionStart`, every `TestReport` and `CollectReport`, `WarningMessage`s and
`SessionFinish`. The same records, so flakegate reads them with its report-log reader."""

import json
import os

import pytest


def _serializable(data):
    """The record with values JSON cannot encode (xdist's `node`, a warning) as their str()."""
    try:
        return json.dumps(data)
    except TypeError:
        out = {}
        for key, value in data.items():
            try:
                json.dumps({key: value})
            except TypeError:
                value = str(value)
            out[key] = value
        return json.dumps(out)


class ReportLog:
    """Writes the records to `path` (a file of the temporary evidence directory, or a
    `.part` file renamed over the target when the session ends)."""

    def __init__(self, config, path):
        self._config = config
        self.path = path
        self._file = open(path, "w", buffering=1, encoding="utf-8")

    def _write(self, data):
        if self._file is not None:
            self._file.write(_serializable(data) + "\n")

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def pytest_sessionstart(self):
        self._write({"pytest_version": pytest.__version__, "$report_type": "SessionStart"})

    def pytest_sessionfinish(self, exitstatus):
        self._write({"exitstatus": int(exitstatus), "$report_type": "SessionFinish"})

    def pytest_runtest_logreport(self, report):
        data = self._config.hook.pytest_report_to_serializable(config=self._config, report=report)
        if "_report_type" in data:
            data["$report_type"] = data.pop("_report_type")
        self._write(data)

    def pytest_collectreport(self, report):
        self._write(self._config.hook.pytest_report_to_serializable(config=self._config, report=report))

    def pytest_warning_recorded(self, warning_message, when, nodeid, location):
        self._write(
            {
                "category": warning_message.category.__name__ if warning_message.category else None,
                "filename": warning_message.filename,
                "lineno": warning_message.lineno,
                "message": warning_message.message,
                "$report_type": "WarningMessage",
                "when": when,
                "location": location,
            }
        )


class ResultsFile:
    """`--flakegate-results=FILE`: only the report-log, for `flakegate probe`'s base runs
    (`{results}`). Written to `FILE.part` and renamed into place when the session ends, so a
    run that dies leaves no file for the probe to mistake for its results."""

    def __init__(self, config, target):
        self.target = target
        self.part = target + ".part"
        self.log = ReportLog(config, self.part)
        config.pluginmanager.register(self.log, "flakegate-results-log")

    def finish(self, keep):
        self.log.close()
        if keep:
            os.replace(self.part, self.target)
        else:
            try:
                os.remove(self.part)
            except OSError:
                pass
