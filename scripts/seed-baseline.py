#!/usr/bin/env python3
"""The seed's logic in plain Python, the baseline row of docs/performance.md's targets table:
load coverage.json whole (`json.load`), take the diff's files and changed lines, and
collect each changed line's witnessing tests in sets.

    python3 scripts/seed-baseline.py COVERAGE_JSON DIFF
"""
import json
import sys

cov_path, diff_path = sys.argv[1], sys.argv[2]
changed, current = {}, None
for line in open(diff_path, encoding="utf-8"):
    if line.startswith("+++ b/"):
        current = line[6:].rstrip("\r\n")
        changed.setdefault(current, set())
    elif line.startswith("@@ -") and current is not None:
        new = line.split(" ")[2].lstrip("+").split(",")[0]
        changed[current].add(int(new))
with open(cov_path, encoding="utf-8") as f:
    files = json.load(f)["files"]
witnesses, pairs = set(), 0
for path, lines in changed.items():
    contexts = files.get(path, {}).get("contexts", {})
    for n in lines:
        tests = {c.rsplit("|", 1)[0] for c in contexts.get(str(n), []) if c}
        pairs += len(tests)
        witnesses |= tests
print(f"files: {len(changed)}  changed-line pairs: {pairs}  distinct witnesses: {len(witnesses)}")
