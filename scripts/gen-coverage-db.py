#!/usr/bin/env python3
"""Write a large coverage.py data file (`.coverage`, SQLite) and a diff.

    python3 scripts/gen-coverage-db.py OUT.coverage OUT.diff [--size 1G | --files N] [--contexts-per-file C] [--seed S]

The database has coverage.py's own schema: coverage.py creates it (one
`CoverageData.add_lines` call, so the tables, indexes, `meta` and
`coverage_schema` rows are exactly what coverage.py 7.x writes), then it is filled in bulk with rows in coverage.py's
formats: `context` rows like pytest-cov's (`tests/…::Test::test_x[p]|run`),
one `line_bits` row per (file, context) whose `numbits` is coverage.py's line
bitmap. Needs the `coverage` package (pip install coverage==7.17.5).

The default (5000 files, 1350 contexts per file) gives about 1 GB (996,986,880
bytes); `--size 200M` (or `4G`, `1.5G`, bytes) picks the number of files for
about that size instead (about 200 KB per file at 1350 contexts). The output
is deterministic: the same arguments and coverage.py version give the same
bytes. Twenty
files spread through the table (the first, the last and 18 in between) are
the files that OUT.diff changes (two one-line hunks each); the script prints,
for those files, what `examples/coverage_stream.rs` must report.
"""

import argparse
import os
import random
import sqlite3
import sys

try:
    from coverage import CoverageData
    from coverage.numbits import numbits_to_nums
except ImportError:
    sys.exit("gen-coverage-db.py needs coverage.py: pip install coverage==7.17.5")

PHASES = ["run"] * 8 + ["setup", "teardown"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_db")
    ap.add_argument("out_diff")
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--size", type=parse_size, help="about this many bytes (e.g. 1G, 200M): sets --files")
    ap.add_argument("--contexts-per-file", type=int, default=1350)
    ap.add_argument("--tests", type=int, default=20000, help="distinct test node ids")
    ap.add_argument("--seed", type=int, default=20261202)
    args = ap.parse_args()
    if args.size is not None:
        # About 199,400 bytes per file at 1350 contexts (rows, index entries, pages).
        per_file = 199_400 * args.contexts_per_file / 1350
        args.files = max(20, round(args.size / per_file))
    rng = random.Random(args.seed)

    if os.path.exists(args.out_db):
        os.remove(args.out_db)
    # coverage.py creates the file with its own schema (and its indexes).
    data = CoverageData(basename=args.out_db)
    data.set_context("")
    data.add_lines({"/dev/null/placeholder.py": [1]})
    data.write()
    del data

    n = args.files
    targets = sorted({0, n - 1} | set(rng.sample(range(1, n - 1), 18))) if n >= 20 else list(range(n))
    target_set = set(targets)

    db = sqlite3.connect(args.out_db)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("DELETE FROM line_bits")
    db.execute("DELETE FROM file")
    db.execute("DELETE FROM context")
    contexts = [""]
    for t in range(args.tests):
        mod = t % 400
        contexts.append(
            f"tests/test_mod_{mod:03d}.py::TestCase{t % 7}::test_case_{t:05d}[p{t % 3}]|{rng.choice(PHASES)}"
        )
    db.executemany("INSERT INTO context (id, context) VALUES (?, ?)", ((i + 1, c) for i, c in enumerate(contexts)))

    expected_lines = 0
    expected_pairs = 0
    expected_tests = set()
    changed_pairs = 0
    diff = []
    for i in range(n):
        path = f"src/acme/pkg_{i % 37:02d}/module_{i:05d}.py"
        db.execute("INSERT INTO file (id, path) VALUES (?, ?)", (i + 1, path))
        nlines = rng.randint(300, 1500)
        nbytes = nlines // 8 + 1
        # The empty context (import time) and a sample of test contexts.
        ctx_ids = [1] + rng.sample(range(2, len(contexts) + 1), args.contexts_per_file)
        rows = []
        per_line = {}
        for cid in ctx_ids:
            # A random half of the lines, in coverage.py's numbits format (a bitmap: bit
            # j of byte i is line 8i+j).
            bits = rng.randbytes(nbytes)
            rows.append((i + 1, cid, bits))
            if i in target_set and cid != 1:
                test = contexts[cid - 1].rsplit("|", 1)[0]
                for line in numbits_to_nums(bits):
                    if line > 0:
                        per_line.setdefault(line, set()).add(test)
        db.executemany("INSERT INTO line_bits (file_id, context_id, numbits) VALUES (?, ?, ?)", rows)
        if i in target_set:
            expected_lines += len(per_line)
            expected_pairs += sum(len(t) for t in per_line.values())
            for t in per_line.values():
                expected_tests |= t
            changed = sorted(rng.sample(sorted(per_line), 2))
            changed_pairs += sum(len(per_line[line]) for line in changed)
            diff.append(diff_for(path, changed))
    db.commit()
    db.close()

    with open(args.out_diff, "w", encoding="utf-8", newline="\n") as d:
        d.write("".join(diff))
    print(f"database bytes:      {os.path.getsize(args.out_db)}")
    print(f"files written:       {n}")
    print(f"diff paths:          {len(targets)}")
    print(f"witnessed lines:     {expected_lines}")
    print(f"line-test pairs:     {expected_pairs}")
    print(f"distinct witnesses:  {len(expected_tests)}")
    print(f"changed-line pairs:  {changed_pairs}")


def parse_size(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B")
    unit = t[-1:] if t[-1:] in units else ""
    try:
        return int(float(t[: len(t) - len(unit)]) * units[unit])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1G, 200M, 5000000)") from None


def diff_for(path, lines):
    out = [f"diff --git a/{path} b/{path}\n", f"--- a/{path}\n", f"+++ b/{path}\n"]
    for ln in lines:
        out.append(f"@@ -{ln} +{ln} @@\n")
        out.append(f"-    value = compute_{ln}(x)\n")
        out.append(f"+    value = compute_{ln}(x, strict=True)\n")
    return "".join(out)


if __name__ == "__main__":
    sys.exit(main())
