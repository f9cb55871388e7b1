#!/usr/bin/env bash
# The project's test command (README "Quick start"; .ci/run runs exactly this).
# Installs the system packages the package needs when they are missing, builds with warnings as
# errors (set per target in Package.swift), then runs every test target.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-packages.sh
ensure_packages
# Garmin's FIT SDK for Python (.venv-fit): the WorkoutFormats tests check our FIT files with it.
scripts/ensure-python-sdk.sh >/dev/null

swift build --build-tests
swift test --skip-build
