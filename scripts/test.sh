#!/usr/bin/env bash
# The whole test suite, on a fresh machine of the kind flakegate is built on (Debian with Rust
# and Python 3.11): installs the Debian packages the tests need and the machine lacks, then runs
# `cargo test --locked` (extra arguments are cargo test's).
#
#   bash scripts/test.sh                  # everything
#   bash scripts/test.sh --test app       # one test binary
#
# What the tests need (docs/development.md, "Test prerequisites"): git; python3 with venv (the
# probe tests build a venv of the pinned pytest from PyPI the first time); PostgreSQL's server
# programs (no server need run: the store tests start a throwaway one); Chromium and its
# WebDriver (the setup page's browser test). A variable that names one
# (FLAKEGATE_TEST_CHROMIUM, FLAKEGATE_TEST_CHROMEDRIVER, FLAKEGATE_TEST_POSTGRES) stands for it.
set -euo pipefail
cd "$(dirname "$0")/.."

has() { command -v "$1" >/dev/null 2>&1; }
need=()
has git || need+=(git)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if [ -z "${FLAKEGATE_TEST_POSTGRES:-}" ] && ! has initdb && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    need+=(postgresql)
fi
if [ -z "${FLAKEGATE_TEST_CHROMIUM:-}" ] && ! has chromium && ! has chromium-browser; then
    need+=(chromium)
fi
if [ -z "${FLAKEGATE_TEST_CHROMEDRIVER:-}" ] && ! has chromedriver; then
    need+=(chromium-driver)
fi

if [ "${#need[@]}" -gt 0 ]; then
    echo "== installing what the tests need: ${need[*]} (Debian packages)" >&2
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${need[@]}"
fi

exec cargo test --locked "$@"
