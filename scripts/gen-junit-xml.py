#!/usr/bin/env python3
"""Write a large JUnit XML file shaped as pytest's `--junitxml` writes it (xunit2).

    python3 scripts/gen-junit-xml.py OUT.xml [--cases N] [--first K] [--seed S]
                                     [--green] [--xunit1] [--pretty]

pytest writes the whole document on one line (ElementTree, no indentation):
`<testsuites name="pytest tests"><testsuite name="pytest" errors=… tests=…>` and one
`<testcase classname="tests.test_mod_0007.TestGroup3" name="test_case_42[param-1]"
time="0.003" />` per test, with a `<failure message=…>traceback</failure>`, an
`<error message="failed on setup with …">`, or a `<skipped type="pytest.skip" …>` inside
the ones that did not pass (about 2 %, 0.5 % and 3 %), and `<system-out>` on a few.
A traceback's newlines are the file's only ones; `--green` (every test passes, as in most
runs) gives one line of XML, which is what made the reader's per-case column quadratic.
`--xunit1` adds `file` and `line`, as `-o junit_family=xunit1` does. `--cases` (default
6000) is the file's size; `--first K` writes only the first K of those cases (the same
cases, so 1/4, 1/2 and all of one file compare like for like). Deterministic from --seed.
"""

import argparse
import random
from xml.sax.saxutils import quoteattr, escape


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--cases", type=int, default=6000)
    ap.add_argument("--first", type=int, default=None, help="write only the first K cases")
    ap.add_argument("--seed", type=int, default=20261120)
    ap.add_argument("--green", action="store_true", help="every test passes: the XML is one line")
    ap.add_argument("--xunit1", action="store_true", help="add file and line, as junit_family=xunit1")
    ap.add_argument("--pretty", action="store_true", help="one element per line")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    cases = []
    for i in range(a.cases):
        module = i // 60
        group = (i // 12) % 5
        file = f"tests/test_mod_{module:04d}.py"
        classname = f"tests.test_mod_{module:04d}.TestGroup{group}"
        name = f"test_case_{i % 12}[param-{i}]"
        attrs = f"classname={quoteattr(classname)} name={quoteattr(name)}"
        if a.xunit1:
            attrs += f' file={quoteattr(file)} line="{10 + (i % 12) * 7}"'
        attrs += f' time="{rng.uniform(0.0005, 0.05):.3f}"'
        roll = 1.0 if a.green else rng.random()
        kind = None
        if roll < 0.02:
            body = (
                f'<failure message={quoteattr(f"AssertionError: assert {i} == {i + 1}")}>'
                + escape(f"def test_case():\n>       assert value == {i + 1}\nE       assert {i} == {i + 1}\n\n{file}:{i % 97}: AssertionError")
                + "</failure>"
            )
            kind = "failures"
        elif roll < 0.025:
            body = (
                '<error message=\'failed on setup with "RuntimeError: database is locked"\'>'
                + escape("@pytest.fixture\ndef db():\n>       raise RuntimeError('database is locked')\nE       RuntimeError: database is locked")
                + "</error>"
            )
            kind = "errors"
        elif roll < 0.055:
            body = f'<skipped type="pytest.skip" message="needs network">{escape(file)}:{i % 97}: needs network</skipped>'
            kind = "skipped"
        elif roll < 0.06:
            body = f"<system-out>{escape('captured output ' * 8)}</system-out>"
        else:
            body = ""
        cases.append((f"<testcase {attrs}>{body}</testcase>" if body else f"<testcase {attrs} />", kind))
    cases = cases[: a.first] if a.first is not None else cases
    counts = {k: sum(1 for _, kind in cases if kind == k) for k in ("failures", "errors", "skipped")}
    cases = [c for c, _ in cases]
    sep = "\n" if a.pretty else ""
    head = (
        '<?xml version="1.0" encoding="utf-8"?>'
        + sep
        + '<testsuites name="pytest tests">'
        + sep
        + f'<testsuite name="pytest" errors="{counts["errors"]}" failures="{counts["failures"]}" '
        + f'skipped="{counts["skipped"]}" tests="{len(cases)}" time="42.000" '
        + 'timestamp="2026-11-20T09:00:00.000000+00:00" hostname="ci">'
        + sep
    )
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(head + sep.join(cases) + sep + "</testsuite>" + sep + "</testsuites>")


if __name__ == "__main__":
    main()
