#!/usr/bin/env python3
"""A deterministic, large unified diff of pytest files, for timing the trust and weakening scans.

    python3 scripts/gen-test-diff.py OUT.diff [--files 2000] [--tests 40] [--seed 20261202]

Every test file gets one hunk per test: the test's body is rewritten with a mix of what the
weakening scan looks for (an assert removed, a sleep or retry mark added, exact comparisons made
approximate, tolerances widened, a test turned into a no-op) and plain edits that are not
weakenings. Each hunk carries git's usual 3 lines of context and a `def` section header, so the
function-level scope of every changed line is known. Prints the file, hunk and line counts.
"""

import argparse
import random


def test_body(rng, i):
    kind = rng.randrange(6)
    old = [f"def test_case_{i}(cart):", f"    cart.add('item{i}', {i}.5, qty=2)", f"    total = cart.total()"]
    new = list(old)
    if kind == 0:
        old.append(f"    assert total == {i * 3}.0")
        old.append(f"    assert cart.items")
        new.append(f"    assert total == {i * 3}.0")
    elif kind == 1:
        old.append(f"    assert total == {i * 3}.0")
        new.append("    time.sleep(0.1)")
        new.append(f"    assert total == {i * 3}.0")
    elif kind == 2:
        old.append(f"    assert total == {i * 3}.0")
        new.append(f"    assert total == pytest.approx({i * 3}.0, rel=0.05)")
    elif kind == 3:
        old.append(f"    assert total == pytest.approx({i * 3}.0, abs=0.01)")
        new.append(f"    assert total == pytest.approx({i * 3}.0, abs=0.5)")
    elif kind == 4:
        old.append(f"    assert total == {i * 3}.0")
        new[1:] = ["    return", f"    cart.add('item{i}', {i}.5, qty=2)", f"    assert cart.total() == {i * 3}.0"]
    else:
        old.append(f"    assert total == {i * 3}.0")
        new[2] = "    total = round(cart.total(), 2)"
        new.append(f"    assert total == {i * 3}.0")
    return old, new


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--tests", type=int, default=40)
    ap.add_argument("--seed", type=int, default=20261202)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    hunks = lines = 0
    with open(a.out, "w", encoding="utf-8") as f:
        for n in range(a.files):
            path = f"tests/unit/pkg{n % 50}/test_module_{n}.py"
            f.write(f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n")
            old_line = new_line = 1
            # Header: imports, unchanged.
            for i in range(a.tests):
                old, new = test_body(rng, i)
                ctx_before = ["", ""]
                ctx_after = ["", ""]
                o_len = len(ctx_before) + len(old) + len(ctx_after)
                n_len = len(ctx_before) + len(new) + len(ctx_after)
                section = f" def test_case_{i - 1}(cart):" if i else ""
                f.write(f"@@ -{old_line},{o_len} +{new_line},{n_len} @@{section}\n")
                for c in ctx_before:
                    f.write(f" {c}\n")
                # Keep the def line as context, the rest as a replacement.
                f.write(f" {old[0]}\n")
                for l in old[1:]:
                    f.write(f"-{l}\n")
                for l in new[1:]:
                    f.write(f"+{l}\n")
                for c in ctx_after:
                    f.write(f" {c}\n")
                # The def line was written once as context: fix the counts' arithmetic by
                # construction (old/new each count it once).
                old_line += o_len + 5
                new_line += n_len + 5
                hunks += 1
                lines += len(old) + len(new) - 2
    print(f"{a.files} files, {hunks} hunks, {lines} changed lines -> {a.out}")


if __name__ == "__main__":
    main()
