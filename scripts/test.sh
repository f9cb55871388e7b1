#!/usr/bin/env bash
# The project's test command (README "Quick start"; .ci/run runs exactly this).
# Installs the system packages the package needs when they are missing, builds with warnings as
# errors (set per target in Package.swift), then runs every test target.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(pkg-config libsqlite3-dev libserialport-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing system packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

swift build --build-tests
swift test --skip-build
