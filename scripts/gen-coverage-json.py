#!/usr/bin/env python3
"""Write a large, realistic `coverage json --show-contexts` report and a diff.

    python3 scripts/gen-coverage-json.py OUT.json OUT.diff [--files N] [--seed S]
                                         [--absolute] [--pretty]

The report looks like coverage.py 7.x's: one line of compact JSON (coverage
writes no newlines unless --pretty-print), `meta`, `files` with
`executed_lines`, `summary`, `missing_lines`, `excluded_lines`, `contexts`
(line -> ["tests/...::Test::test_x[p]|run", ...]) and the per-function and
per-class regions that repeat those contexts, then `totals`. Everything is
deterministic from --seed. The default (--files 5000) gives about 1 GB.

Twenty source files, spread through the report (the first, the last and 18 in
between), are the files that OUT.diff changes (two one-line hunks each). The
script prints, for those 20 files, the numbers `examples/coverage_stream.rs`
reports, so a run of the harness can be checked against them.
"""

import argparse
import json
import random
import sys

PHASES = ["run"] * 8 + ["setup", "teardown"]
WORDS = (
    "total refund retry price tax cart order invoice user account token cache "
    "session parse render export import schedule payment discount coupon ledger "
    "stock shipping address email webhook queue batch report audit"
).split()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_json")
    ap.add_argument("out_diff")
    ap.add_argument("--files", type=int, default=5000, help="number of measured files (default 5000, about 1 GB)")
    ap.add_argument("--seed", type=int, default=20261120)
    ap.add_argument("--absolute", action="store_true", help="absolute paths, as without relative_files")
    ap.add_argument("--pretty", action="store_true", help="indent like `coverage json --pretty-print`")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    n = args.files
    targets = sorted({0, n - 1} | set(rng.sample(range(1, n - 1), 18))) if n >= 20 else list(range(n))
    target_set = set(targets)
    prefix = "/home/runner/work/acme/acme/" if args.absolute else ""
    indent = 4 if args.pretty else None

    totals = {"covered": 0, "statements": 0, "missing": 0, "excluded": 0}
    expected = {"witnessed_lines": 0, "pairs": 0, "tests": set()}
    diff = []
    written = 0

    with open(args.out_json, "w", encoding="utf-8", newline="\n") as out:
        meta = {
            "format": 3,
            "version": "7.17.5",
            "timestamp": "2026-11-20T09:14:03.512877",
            "branch_coverage": False,
            "show_contexts": True,
        }
        out.write('{"meta": ' + json.dumps(meta, indent=indent) + ', "files": {')
        for i in range(n):
            pkg = i % 37
            repo_path = f"src/acme/pkg_{pkg:02d}/module_{i:05d}.py"
            body, lines_ctx, executed = make_file(rng, i, pkg)
            totals["covered"] += len(body["executed_lines"])
            totals["statements"] += body["summary"]["num_statements"]
            totals["missing"] += len(body["missing_lines"])
            totals["excluded"] += len(body["excluded_lines"])
            if i in target_set:
                for line, ctxs in lines_ctx.items():
                    tests = {c.rsplit("|", 1)[0] for c in ctxs if c}
                    if line > 0 and tests:
                        expected["witnessed_lines"] += 1
                        expected["pairs"] += len(tests)
                        expected["tests"] |= tests
                changed = sorted(rng.sample(executed, 2))
                diff.append(diff_for(repo_path, changed))
            sep = ", " if i else ""
            out.write(sep + json.dumps(prefix + repo_path) + ": " + json.dumps(body, indent=indent))
            written += 1
        summary_totals = summary(totals["covered"], totals["statements"], totals["missing"], totals["excluded"])
        out.write('}, "totals": ' + json.dumps(summary_totals, indent=indent) + "}")

    with open(args.out_diff, "w", encoding="utf-8", newline="\n") as d:
        d.write("".join(diff))

    print(f"files written:       {written}")
    print(f"diff paths:          {len(targets)}")
    print(f"witnessed lines:     {expected['witnessed_lines']}")
    print(f"line-test pairs:     {expected['pairs']}")
    print(f"distinct witnesses:  {len(expected['tests'])}")


def summary(covered, statements, missing, excluded):
    pct = 100.0 * covered / statements if statements else 100.0
    return {
        "covered_lines": covered,
        "num_statements": statements,
        "percent_covered": pct,
        "percent_covered_display": f"{pct:.0f}",
        "missing_lines": missing,
        "excluded_lines": excluded,
        "percent_statements_covered": pct,
        "percent_statements_covered_display": f"{pct:.0f}",
    }


def make_file(rng, i, pkg):
    """One source file's coverage: module-level lines run at import (context
    ""), function bodies run by a pool of tests with phases."""
    n_funcs = rng.randint(4, 14)
    test_file = f"tests/pkg_{pkg:02d}/test_module_{i:05d}.py"
    cls = f"TestModule{i:05d}"
    pool = []
    for _ in range(rng.randint(8, 40)):
        name = f"test_{rng.choice(WORDS)}_{rng.choice(WORDS)}"
        if rng.random() < 0.4:
            name += f"[{rng.choice(WORDS)}-{rng.randint(0, 30)}]"
        owner = f"{test_file}::{cls}::{name}" if rng.random() < 0.6 else f"{test_file}::{name}"
        pool.append(owner)
    # some integration tests from elsewhere
    for _ in range(rng.randint(0, 6)):
        pool.append(f"tests/integration/test_flow_{rng.randint(0, 99):02d}.py::test_{rng.choice(WORDS)}_flow")
    pool = sorted(set(pool))

    line = 1
    contexts = {1: [""]}
    executed, missing, excluded = [], [], []
    functions, classes = {}, {}
    for ln in range(line + 2, line + 6):  # imports
        executed.append(ln)
        contexts[ln] = [""]
    line += 7
    for f in range(n_funcs):
        fname = f"{rng.choice(WORDS)}_{f}"
        start = line
        executed.append(line)
        contexts[line] = [""]  # the def line runs at import
        body_len = rng.randint(3, 25)
        users = rng.sample(pool, min(len(pool), rng.randint(1, 30)))
        f_exec, f_missing, f_ctx = [], [], {}
        for ln in range(line + 1, line + 1 + body_len):
            r = rng.random()
            if r < 0.07:
                missing.append(ln)
                f_missing.append(ln)
                continue
            if r < 0.08:
                excluded.append(ln)
                continue
            k = max(1, int(len(users) * rng.uniform(0.3, 1.0)))
            ctxs = [f"{t}|{rng.choice(PHASES)}" for t in rng.sample(users, k)]
            executed.append(ln)
            f_exec.append(ln)
            contexts[ln] = ctxs
            f_ctx[ln] = ctxs
        functions[fname] = region(f_exec, f_missing, [], start, f_ctx)
        line += body_len + 2
    module_exec = [ln for ln in executed if contexts.get(ln) == [""]]
    functions[""] = region(module_exec, [], [], 1, {ln: [""] for ln in module_exec})
    classes[""] = region(executed, missing, excluded, 1, contexts)
    body = {
        "executed_lines": executed,
        "summary": summary(len(executed), len(executed) + len(missing), len(missing), len(excluded)),
        "missing_lines": missing,
        "excluded_lines": excluded,
        "contexts": {str(k): v for k, v in contexts.items()},
        "functions": functions,
        "classes": classes,
    }
    return body, contexts, [ln for ln in executed if contexts[ln] != [""]]


def region(executed, missing, excluded, start, ctx):
    return {
        "executed_lines": executed,
        "summary": summary(len(executed), len(executed) + len(missing), len(missing), len(excluded)),
        "missing_lines": missing,
        "excluded_lines": excluded,
        "start_line": start,
        "contexts": {str(k): v for k, v in ctx.items()},
    }


def diff_for(path, lines):
    out = [f"diff --git a/{path} b/{path}\n", f"--- a/{path}\n", f"+++ b/{path}\n"]
    for ln in lines:
        out.append(f"@@ -{ln} +{ln} @@\n")
        out.append(f"-    value = compute_{ln}(x)\n")
        out.append(f"+    value = compute_{ln}(x, strict=True)\n")
    return "".join(out)


if __name__ == "__main__":
    sys.exit(main())
