#!/usr/bin/env bash
# Runs every test: the C unit tests (CTest) and the end-to-end pytest suite,
# writing JUnit XML to build/test-results/. Installs and builds first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-run
mkdir -p build/test-results
status=0
ctest --preset default --output-junit "$PWD/build/test-results/ctest.xml" || status=1
/usr/bin/python3 -m pytest -n 2 -q tests/e2e --junitxml=build/test-results/e2e.xml || status=1
exit $status
