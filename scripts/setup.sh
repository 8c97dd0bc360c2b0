#!/usr/bin/env bash
# Installs what the hub needs on a fresh Debian 12 machine with Go 1.26 and
# Node.js 20 (as root, or with sudo), then builds the binary. With --tests it
# also installs what the test suite needs. Idempotent: run it as often as you
# like; a package already there is not installed again.
#
#   scripts/setup.sh               Debian packages + npm packages + build (what the demo uses)
#   scripts/setup.sh --tests       the same, plus the Debian packages only the tests use
#   SETUP_APT=0 scripts/setup.sh   skip the Debian packages
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }

tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) tests=1 ;;
    *) log "unknown argument $arg (usage: scripts/setup.sh [--tests])"; exit 2 ;;
  esac
done

# Debian packages. Each line: a command (or an absolute path) to look for,
# then the Debian package that provides it.
apt_needs=(
  # The demo's MCP servers and the tests' real peers run on Node.js.
  "node nodejs"
  "npm npm"
  "git git"
)
if [ "$tests" = 1 ]; then
  apt_needs+=(
    # The keychain tests run a real Secret Service in a throwaway desktop
    # session (testdata/tools/desktop/with-desktop-session.sh).
    "Xvfb xvfb"
    "xauth xauth"
    "dbus-daemon dbus-daemon"
    "dbus-run-session dbus-daemon"
    "dbus-launch dbus-x11"
    "gnome-keyring-daemon gnome-keyring"
    "secret-tool libsecret-tools"
    # The race detector (go test -race) needs cgo: a C compiler and libc headers.
    "gcc gcc"
    "/usr/include/stdio.h libc6-dev"
    # The console's journeys run in a real headless Chromium (playwright-core drives it).
    "chromium-headless-shell chromium-headless-shell"
    # The desktop app's tests: a notification daemon with actions (dunstctl picks one),
    # a StatusNotifierWatcher (tray host), screenshots and window lookups.
    "dunst dunst"
    "notify-send libnotify-bin"
    "status-notifier-watcher haskell-status-notifier-item-utils"
    "xwd x11-apps"
    "convert imagemagick"
    "xdotool xdotool"
    # The Debian package's test validates its .desktop files.
    "desktop-file-validate desktop-file-utils"
  )
fi

if [ "${SETUP_APT:-1}" = 1 ]; then
  missing=()
  for pair in "${apt_needs[@]}"; do
    set -- $pair
    if [[ $1 == /* ]]; then
      [ -e "$1" ] || missing+=("$2")
    else
      command -v "$1" >/dev/null 2>&1 || missing+=("$2")
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    log "installing Debian packages: ${missing[*]}"
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
  fi
fi

command -v go >/dev/null 2>&1 || { log "Go 1.26 is required: https://go.dev/doc/install"; exit 1; }
command -v node >/dev/null 2>&1 || { log "Node.js 20 is required"; exit 1; }

# npm packages the tests run (real MCP servers, TypeScript, MCP clients),
# pinned by the committed lockfile. Reinstalled only when the lockfile changed.
lock=testdata/npm/package-lock.json
stamp=testdata/npm/node_modules/.lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s "$lock" "$stamp"; then
  log "installing npm packages from $lock"
  (cd testdata/npm && npm ci --no-audit --no-fund --loglevel=error)
  cp "$lock" "$stamp"
fi

# The real agent CLIs (Claude Code, Codex, Gemini CLI) the harness tests
# drive, pinned by their own lockfile (about 860 MB: each ships its native
# binary in a registry package). Only the tests use them.
if [ "$tests" = 1 ]; then
  lock=testdata/harnesses/package-lock.json
  stamp=testdata/harnesses/node_modules/.lock-stamp
  if [ ! -f "$stamp" ] || ! cmp -s "$lock" "$stamp"; then
    log "installing the real agent CLIs from $lock"
    (cd testdata/harnesses && npm ci --no-audit --no-fund --loglevel=error)
    cp "$lock" "$stamp"
  fi
fi

log "building bin/capabilities"
CGO_ENABLED=0 go build -o bin/capabilities ./cmd/capabilities
log "done: $(pwd)/bin/capabilities"
