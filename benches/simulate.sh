#!/usr/bin/env bash
# Evidence per pull request on a simulated repository (docs/performance.md, "Evidence per pull
# request: the simulated repository"): builds the release binary, then judges 200 generated
# correct pull requests (five sequences, pooled) with today's workflow template and with the witness probe and the flake
# history, through the real `flakegate check`.
#
#   bash benches/simulate.sh [simulate.py flags...]     # e.g. --advance-every 10 --seed 2 --keep /tmp/sim
#
# Needs python3 (3.11, standard library only). The flags are benches/simulate.py's (--help).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --bin flakegate >&2
bin="${CARGO_TARGET_DIR:-target}/release/flakegate"
exec python3 benches/simulate.py --bin "$bin" "$@"
