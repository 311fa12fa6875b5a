#!/usr/bin/env bash
# The performance targets' table, measured side by side in one run (docs/performance.md,
# "The targets, side by side").
# A plain harness: each command REPEAT times (default 3) after a warm-up read of its input;
# prints the median wall time and the largest peak RSS of each row.
#
#   bash benches/run.sh [SCRATCH_DIR]        # default: a fresh mktemp -d, removed at the end
#
# Needs python3, /usr/bin/time (GNU time) and openssl; builds the release binaries first.
# The last row's generator needs coverage.py 7.17.5: COVERAGE_PYTHON names a python3 that has
# it (default: python3; when that lacks it, a venv in the scratch directory gets it from PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT="${REPEAT:-3}"
scratch="${1:-$(mktemp -d)}"
[ $# -ge 1 ] || trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch"

cargo build --release --bin flakegate --example coverage_stream --example diff_parse >&2

json="$scratch/cov-1g.json" diff="$scratch/cov-1g.diff"
[ -s "$json" ] || python3 scripts/gen-coverage-json.py "$json" "$diff" >&2
big="$scratch/cov-big-entry.json" bigdiff="$scratch/cov-big-entry.diff"
[ -s "$big" ] || python3 scripts/gen-big-entry.py "$big" "$bigdiff" >&2
tdiff="$scratch/td-500k.diff"
[ -s "$tdiff" ] || python3 scripts/gen-test-diff.py "$tdiff" --files 12500 --tests 40 >&2

# row NAME INPUT CMD...: median wall (s) and max peak RSS (MiB) over REPEAT runs.
row() {
    local name="$1" input="$2"
    shift 2
    cat "$input" >/dev/null
    local walls=() rss=0
    for _ in $(seq "$REPEAT"); do
        /usr/bin/time -f '%e %M' -o "$scratch/time" "$@" >/dev/null 2>"$scratch/stderr" || {
            cat "$scratch/stderr" >&2
            return 1
        }
        read -r wall kb <"$scratch/time"
        walls+=("$wall")
        [ "$kb" -gt "$rss" ] && rss="$kb"
    done
    local median
    median="$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(((REPEAT + 1) / 2))p")"
    printf '| %s | %s s | %s MiB | %s |\n' "$name" "$median" "$((rss / 1024))" "$(printf '%s ' "${walls[@]}")"
}

echo "| command | wall (median of $REPEAT) | peak RSS | runs (s) |"
echo "| --- | --- | --- | --- |"
row "flakegate check, 1 GB coverage.json, 20 files" "$json" \
    target/release/flakegate check --coverage "$json" --diff "$diff" --today 2026-11-20 --format json
row "read_json alone (mapped file)" "$json" target/release/examples/coverage_stream "$json" "$diff"
row "read_json alone (block reader, as for a pipe)" "$json" \
    env FLAKEGATE_BLOCK_READER=1 target/release/examples/coverage_stream "$json" "$diff"
row "read_json_stream (previous reader)" "$json" \
    env FLAKEGATE_PREVIOUS_READER=1 target/release/examples/coverage_stream "$json" "$diff"
row "seed logic in Python (json.load + sets)" "$json" python3 scripts/seed-baseline.py "$json" "$diff"
row "wc -l" "$json" wc -l "$json"
row "openssl dgst -sha256" "$json" openssl dgst -sha256 "$json"
row "one changed file whose entry is $(($(stat -c %s "$big") / 1000000)) MB (read_json)" "$big" \
    target/release/examples/coverage_stream "$big" "$bigdiff"
row "flakegate check, the same" "$big" \
    target/release/flakegate check --coverage "$big" --diff "$bigdiff" --today 2026-11-20 --format json
row "parse_patch, $(($(stat -c %s "$tdiff") / 1000000)) MB, 500,000-hunk diff" "$tdiff" \
    target/release/examples/diff_parse "$tdiff"
row "wc -l on that diff" "$tdiff" wc -l "$tdiff"
covdb="$scratch/cov-1g.coverage" covdbdiff="$scratch/cov-1g-db.diff"
if [ ! -s "$covdb" ]; then
    py="${COVERAGE_PYTHON:-python3}"
    if ! "$py" -c 'import coverage' 2>/dev/null; then
        # A fresh machine: coverage.py in a venv of the scratch directory's own.
        python3 -m venv "$scratch/venv" >&2
        "$scratch/venv/bin/pip" install --quiet coverage==7.17.5 >&2
        py="$scratch/venv/bin/python"
    fi
    "$py" scripts/gen-coverage-db.py "$covdb" "$covdbdiff" >&2
fi
row "read_data_file, 1 GB .coverage, 20 files" "$covdb" target/release/examples/coverage_stream "$covdb" "$covdbdiff"
