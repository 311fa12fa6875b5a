#!/usr/bin/env bash
# The App under load (docs/performance.md): /healthz and webhook-ack latency (count, p50, p99, max) while two
# ~1 GB evaluations run, measured on two real `flakegate serve` processes (release build) against
# the loopback fake GitHub of the test suite. See benches/app_load.rs.
#
#   bash scripts/app-load.sh                 # inputs generated once in $TMPDIR/flakegate-app-load
#   bash scripts/app-load.sh /tmp/load-bench # ... or there (kept and reused between runs)
#   bash scripts/app-load.sh /tmp/load-bench --healthz-ms 10 --webhook-ms 50 --max-seconds 300
#
# FILES (default 4000: a 0.94 GB report, under the App's 1 GiB default extraction limit) sets the
# generated report's size. Loopback only; the load runs --idle-seconds (default 3) alone, then
# stops when both check runs are completed or after --max-seconds (default 300); the whole run
# is killed 120 s after that. --serve-bin PATH serves with another build of flakegate.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=${1:-${TMPDIR:-/tmp}/flakegate-app-load}
shift || true
files=${FILES:-4000}
seed=20261120
mkdir -p "$scratch"
key="files${files}-seed${seed}"
json="$scratch/coverage-$key.json"
diff="$scratch/coverage-$key.diff"
zip="$scratch/coverage-$key.zip"

# Generated once per size and seed, then reused: deflating a gigabyte takes a while.
if [[ ! -s "$json" || ! -s "$diff" ]]; then
    echo "generating $json ($files files)" >&2
    python3 scripts/gen-coverage-json.py "$json.part" "$diff.part" --files "$files" --seed "$seed" >/dev/null
    mv "$diff.part" "$diff"
    mv "$json.part" "$json"
    rm -f "$zip"
fi
if [[ ! -s "$zip" ]]; then
    echo "zipping $json as the evidence workflow uploads it (deflated, once)" >&2
    python3 - "$json" "$zip.part" <<'EOF'
import sys, zipfile
src, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
    z.write(src, "coverage.json")
EOF
    mv "$zip.part" "$zip"
fi

max_seconds=300
idle_seconds=3
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
    [[ ${args[$i]} == --max-seconds ]] && max_seconds=${args[$((i + 1))]}
    [[ ${args[$i]} == --idle-seconds ]] && idle_seconds=${args[$((i + 1))]}
done

cargo bench --locked --bench app_load --no-run
cat "$json" "$zip" >/dev/null # page cache warm
# The serve processes extract their artifacts under TMPDIR: keep that in the scratch directory.
export TMPDIR="$scratch/tmp"
rm -rf "$TMPDIR"
mkdir -p "$TMPDIR"
timeout --kill-after=10 "$((max_seconds + idle_seconds + 120))" \
    cargo bench --locked --bench app_load -- --json "$json" --zip "$zip" --diff "$diff" "$@"
rm -rf "$TMPDIR"
