#!/usr/bin/env bash
# Build the cargo-fuzz targets in fuzz/ and run each for SECONDS (default 60), one after
# another, seeded from tests/fixtures. Prints the executions per target and fails when a
# target crashes, leaks past the memory limit or hangs (the input is kept in
# fuzz/artifacts/TARGET/). Needs the nightly toolchain and `cargo install cargo-fuzz`.
#
#   scripts/fuzz.sh 60                 # every target, 60 s each
#   FUZZ_TARGETS="diff zip" scripts/fuzz.sh 120
set -euo pipefail

secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
fx=$root/tests/fixtures
fuzz=$root/fuzz
all="diff coverage_json coverage_db reportlog junit probe_json ledger config codeowners zip webhook"
read -r -a targets <<<"${FUZZ_TARGETS:-$all}"

cd "$fuzz"

# Copy seeds into fuzz/corpus/TARGET/ (gitignored; libFuzzer adds what it finds there).
seed_files() {
    local t=$1 dir=$fuzz/corpus/$1
    shift
    mkdir -p "$dir"
    local f i=0
    for f in "$@"; do
        [ -f "$f" ] || continue
        i=$((i + 1))
        cp "$f" "$dir/seed-$i-$(basename "$f")"
    done
}

seed() {
    local t=$1 dir=$fuzz/corpus/$1
    mkdir -p "$dir"
    case $t in
    diff)
        seed_files diff "$fx"/diffs/*.diff "$fx"/diffs/github-files.json "$fx"/cases/*/diff.patch \
            "$fx"/corpus/*/diff.patch "$root"/examples/shop/pr.diff ;;
    coverage_json)
        seed_files coverage_json "$fx"/cases/{all_stable,phase_only,new_module}/evidence/coverage.json \
            "$fx"/coverage-variants/*/coverage.json ;;
    coverage_db)
        seed_files coverage_db "$fx"/cases/{all_stable,uncovered}/evidence/.coverage \
            "$fx"/coverage-variants/*/.coverage ;;
    reportlog)
        seed_files reportlog "$fx"/probe/reportlog/run-1.jsonl "$fx"/cases/*/evidence/results/report-log.jsonl ;;
    junit)
        seed_files junit "$fx"/probe/junit-xunit1/run-1.xml "$fx"/probe/junit-xunit2/run-1.xml \
            "$fx"/cases/*/junit/*.xml ;;
    probe_json)
        seed_files probe_json "$fx"/probe/expected.json "$fx"/probe/meta.json ;;
    ledger)
        seed_files ledger "$fx"/project/.github/flake-ledger.json "$fx"/cases/*/ledger.json \
            "$root"/examples/shop/flake-ledger.json ;;
    config)
        # The configuration examples of docs/cli.md, one file per ```yaml block.
        awk -v dir="$dir" '/^```yaml$/ {n++; on=1; next} /^```$/ {on=0} on {print > (dir "/seed-docs-" n ".yml")}' \
            "$root/docs/cli.md" ;;
    codeowners)
        seed_files codeowners "$fuzz"/seeds/codeowners/* ;;
    zip)
        # Zips made by Python's zipfile from fixture evidence directories (deflated and
        # stored entries, directory entries), the shape upload-artifact produces.
        python3 - "$dir" "$fx" <<'PY'
import pathlib, sys, zipfile
out, fx = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
ev = fx / "cases/all_stable/evidence"
with zipfile.ZipFile(out / "seed-evidence.zip", "w", zipfile.ZIP_DEFLATED) as z:
    for p in sorted(ev.rglob("*")):
        if p.name != ".coverage":
            z.write(p, p.relative_to(ev))
with zipfile.ZipFile(out / "seed-small.zip", "w") as z:
    z.writestr("evidence/", "")
    z.writestr("evidence/meta.json", (ev / "meta.json").read_text(), zipfile.ZIP_STORED)
    z.writestr("evidence/results/report-log.jsonl", "", zipfile.ZIP_DEFLATED)
PY
        ;;
    webhook)
        # Input: `<X-GitHub-Event name>\n<flag byte><body>`; the name is the file's prefix.
        local f name
        for f in "$fx"/github/webhooks/*.json; do
            name=$(basename "$f" .json)
            name=${name%%.*}
            { printf '%s\n\0' "$name"; cat "$f"; } >"$dir/seed-$(basename "$f")"
        done ;;
    *)
        echo "fuzz.sh: no seeds for target $t" >&2
        return 1 ;;
    esac
}

# -s none: the code under test is safe Rust (and SQLite's C, which a Rust sanitizer flag
# does not instrument); without ASan each target runs several times faster. Debug
# assertions and overflow checks stay on (cargo-fuzz's default).
if [ -z "${FUZZ_TARGETS:-}" ]; then
    cargo +nightly fuzz build -s none
else
    for t in "${targets[@]}"; do cargo +nightly fuzz build -s none "$t"; done
fi

summary=()
failed=0
for t in "${targets[@]}"; do
    seed "$t"
    mkdir -p "artifacts/$t"
    log=$fuzz/artifacts/$t.log
    echo "== $t: ${secs}s (log: fuzz/artifacts/$t.log)"
    set +e
    cargo +nightly fuzz run -s none "$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -1)
    rate=$(awk '/stat::average_exec_per_sec:/ {print $2}' "$log" | tail -1)
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    corpus=$(find "corpus/$t" -type f | wc -l)
    if [ "$rc" -ne 0 ]; then
        failed=1
        grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" | head -5 >&2 || true
        summary+=("$(printf '%-14s FAILED (exit %s) after %s executions; see fuzz/artifacts/%s' "$t" "$rc" "${execs:-?}" "$t")")
    else
        summary+=("$(printf '%-14s %12s executions  %8s/s  cov %6s  corpus %6s' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$corpus")")
    fi
done

echo
echo "fuzzing summary (${secs}s per target):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
