#!/usr/bin/env bash
# Garmin's official FIT SDK for Python (PyPI garmin-fit-sdk, pinned) in .venv-fit (ignored by git),
# installed when missing: the WorkoutFormats tests and `scripts/bench.py fit` check our FIT files
# with it. Prints the path of the venv's python3 on standard output (everything else on stderr).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-fit"
version="21.218.0"
python="$venv/bin/python3"

# jsonschema (pinned) validates the commands' --json outputs against docs/schemas in the CLI tests.
jsonschema_version="4.26.0"

installed() {
  "$python" -c "import sys, garmin_fit_sdk; sys.exit(0 if garmin_fit_sdk.__version__ == '$version' else 1)" \
    >/dev/null 2>&1
}

jsonschema_installed() {
  "$python" -c "import sys, importlib.metadata as m; sys.exit(0 if m.version('jsonschema') == '$jsonschema_version' else 1)" \
    >/dev/null 2>&1
}

if ! installed; then
  echo "installing garmin-fit-sdk $version into $venv" >&2
  if ! python3 -m venv --clear "$venv" >&2 2>/dev/null; then
    # Debian's python3 needs python3-venv (ensurepip) to make a venv.
    echo "installing python3-venv" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3 python3-venv >&2
    python3 -m venv --clear "$venv" >&2
  fi
  "$python" -m pip install --quiet --disable-pip-version-check "garmin-fit-sdk==$version" >&2
  installed || { echo "garmin-fit-sdk $version did not install into $venv" >&2; exit 1; }
fi
if ! jsonschema_installed; then
  echo "installing jsonschema $jsonschema_version into $venv" >&2
  "$python" -m pip install --quiet --disable-pip-version-check "jsonschema==$jsonschema_version" >&2
  jsonschema_installed || { echo "jsonschema $jsonschema_version did not install into $venv" >&2; exit 1; }
fi
echo "$python"
