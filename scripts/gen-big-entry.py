#!/usr/bin/env python3
"""Write a `coverage json --show-contexts` report in which one file's entry is large (a
core module that every test runs) and a diff changing two of its lines: the memory row of
docs/performance.md (its target: peak RSS <= 64 MB when the changed file's entry is 200 MB).

    python3 scripts/gen-big-entry.py OUT.json OUT.diff [--lines 1500] [--tests 2200]

Every one of --tests tests runs every one of --lines lines of src/acme/core.py (about
60 bytes per (line, test) pair: the defaults give about 200 MB); three small files
follow. Deterministic; prints the numbers examples/coverage_stream must report.
"""
import argparse
import json

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("out_json")
ap.add_argument("out_diff")
ap.add_argument("--lines", type=int, default=1500)
ap.add_argument("--tests", type=int, default=2200)
args = ap.parse_args()

tests = [f"tests/pkg_{t % 40:02d}/test_mod_{t:05d}.py::TestCore::test_core_path_{t:05d}" for t in range(args.tests)]
contexts = [f"{t}|run" for t in tests]
lines = list(range(2, args.lines + 2))
with open(args.out_json, "w", encoding="utf-8", newline="\n") as out:
    out.write('{"meta": {"format": 3, "version": "7.17.5", "show_contexts": true}, "files": {')
    out.write('"src/acme/core.py": {"executed_lines": ' + json.dumps(lines))
    out.write(', "missing_lines": [], "excluded_lines": [], "contexts": {"1": [""]')
    ctx = json.dumps(contexts)
    for n in lines:
        out.write(f', "{n}": {ctx}')
    out.write('}, "functions": {"core": {"start_line": 2, "executed_lines": ' + json.dumps(lines[1:]) + "}}}")
    for i in range(3):
        out.write(f', "src/acme/small_{i}.py": ' + json.dumps({"executed_lines": [1], "contexts": {"1": [contexts[i]]}}))
    out.write('}, "totals": {}}')
changed = [lines[len(lines) // 3], lines[2 * len(lines) // 3]]
with open(args.out_diff, "w", encoding="utf-8", newline="\n") as d:
    d.write("diff --git a/src/acme/core.py b/src/acme/core.py\n--- a/src/acme/core.py\n+++ b/src/acme/core.py\n")
    for n in changed:
        d.write(f"@@ -{n} +{n} @@\n-    old_{n}()\n+    new_{n}()\n")
print(f"entry of src/acme/core.py: {len(lines)} lines x {len(tests)} tests")
print(f"changed-line pairs:  {2 * len(tests)}")
print(f"distinct witnesses:  {len(tests)}")
