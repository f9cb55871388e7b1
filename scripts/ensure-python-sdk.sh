#!/usr/bin/env bash
# Creates .venv-fit (ignored by git) with Garmin's official FIT SDK for Python when it is missing,
# for the tests and the benchmark that check our FIT files against it. Prints the interpreter path.
# Sourced or run: `scripts/ensure-python-sdk.sh` prints the path of the venv's python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-fit"
version="21.218.0"
python="$venv/bin/python3"
if ! "$python" -c "import garmin_fit_sdk, sys; sys.exit(0 if garmin_fit_sdk.__version__ == '$version' else 1)" \
  >/dev/null 2>&1; then
  echo "installing garmin-fit-sdk $version into $venv" >&2
  python3 -m venv "$venv" >&2
  "$python" -m pip install --quiet --disable-pip-version-check "garmin-fit-sdk==$version" >&2
fi
echo "$python"
