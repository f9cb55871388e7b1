# Sourced by scripts/test.sh and scripts/workout: installs the Debian packages the build needs
# (the system SQLite for GRDB, libserialport, pkg-config) when any is missing.
ensure_packages() {
  local packages=(pkg-config libsqlite3-dev libserialport-dev)
  local missing=()
  for package in "${packages[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing system packages: ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
  fi
}

# Sourced by scripts/test.sh only: what the tests need beyond the build. Debian's `chromium` renders
# the HTML reports headless in the report tests (Tests/WorkoutReportTests); `apt-get update` first,
# as a fresh machine has no package lists.
ensure_test_packages() {
  local packages=(chromium)
  local missing=()
  for package in "${packages[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing test packages: ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}
