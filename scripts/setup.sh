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
  # The desktop app's window (bin/capabilities-window) is the one cgo binary:
  # Wails over GTK 3 and WebKitGTK 4.1 (checked with pkg-config below).
  "gcc gcc"
  "/usr/include/stdio.h libc6-dev"
  "pkg-config pkg-config"
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
    # The console's journeys run in a real headless Chromium (playwright-core drives it).
    "chromium-headless-shell chromium-headless-shell"
    # The desktop app's tests: a notification daemon with actions (dunstctl picks one),
    # a StatusNotifierWatcher (tray host), screenshots and window lookups.
    "dunst dunst"
    "notify-send libnotify-bin"
    "status-notifier-watcher haskell-status-notifier-item-utils"
    "xwd x11-apps"
    "/usr/bin/convert imagemagick" # by path: a convert elsewhere on PATH may be a stand-in
    "xdotool xdotool"
    # The Debian package's test validates its .desktop files.
    "desktop-file-validate desktop-file-utils"
    # The PostgreSQL store's tests start a real PostgreSQL in a temporary folder
    # (internal/testenv/postgres.go); pg_ctlcluster comes with the server.
    "pg_ctlcluster postgresql"
    # The load-balancer journey runs several serve --http behind a real nginx,
    # started in a temporary folder with the repo's deploy/nginx/capabilities.conf
    # (internal/testenv/nginx.go). By path: /usr/sbin is not on every user's PATH.
    "/usr/sbin/nginx nginx"
    # The hosted hub's systemd unit is checked with systemd-analyze verify and
    # security (deploy/hosted/deploy_test.go).
    "systemd-analyze systemd"
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
  if ! pkg-config --exists gtk+-3.0 webkit2gtk-4.1 2>/dev/null; then
    missing+=(libgtk-3-dev libwebkit2gtk-4.1-dev)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]} (if another install holds dpkg's lock, often the system's own upgrade after boot, this waits for it, up to 10 minutes)"
    scripts/apt-get.sh update
    scripts/apt-get.sh install -y --no-install-recommends "${missing[@]}"
  fi
fi

command -v go >/dev/null 2>&1 || { log "Go 1.26 is required: https://go.dev/doc/install"; exit 1; }
command -v node >/dev/null 2>&1 || { log "Node.js 20 is required"; exit 1; }

# npm_ci DIR: the npm packages pinned by DIR/package-lock.json, installed
# only when the lockfile changed. A tree installed once is kept in
# ~/.cache/capabilities/node_modules, keyed by the lockfile's hash, and a new
# checkout gets it as hard links (a fraction of a second instead of npm ci's
# 15-30 s; npm replaces files, it never writes into them, so the links stay
# true). Where hard links do not work (another filesystem), npm ci runs.
npm_ci() {
  local dir=$1 what=$2
  local lock="$dir/package-lock.json" stamp="$dir/node_modules/.lock-stamp"
  if [ -f "$stamp" ] && cmp -s "$lock" "$stamp"; then
    return
  fi
  local key cache
  key=$(sha256sum "$lock" | cut -c1-16)
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/capabilities/node_modules/$(basename "$dir")-$key"
  rm -rf "$dir/node_modules"
  if [ -f "$cache/node_modules/.lock-stamp" ] && cp -al "$cache/node_modules" "$dir/node_modules" 2>/dev/null; then
    log "$what: from the cache ($cache)"
    return
  fi
  rm -rf "$dir/node_modules"
  log "installing $what from $lock"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$lock" "$stamp"
  mkdir -p "$cache"
  rm -rf "$cache/node_modules.tmp"
  if cp -al "$dir/node_modules" "$cache/node_modules.tmp" 2>/dev/null; then
    rm -rf "$cache/node_modules" && mv "$cache/node_modules.tmp" "$cache/node_modules"
  else
    rm -rf "$cache/node_modules.tmp"
  fi
}

# npm packages the tests run (real MCP servers, TypeScript, MCP clients).
npm_ci testdata/npm "npm packages"

# The real agent CLIs (Claude Code, Codex, Gemini CLI) the harness tests
# drive, pinned by their own lockfile (about 860 MB: each ships its native
# binary in a registry package). Only the tests use them.
if [ "$tests" = 1 ]; then
  npm_ci testdata/harnesses "the real agent CLIs"
fi

log "building bin/capabilities"
CGO_ENABLED=0 go build -o bin/capabilities ./cmd/capabilities
log "building bin/capabilities-desktop"
CGO_ENABLED=0 go build -o bin/capabilities-desktop ./cmd/capabilities-desktop
# The desktop app's window, the one cgo binary (Wails over GTK 3 and WebKitGTK
# 4.1): the Wails build tags stand in for the Wails CLI, which does not install
# on Go 1.26. Without the headers (SETUP_APT=0 on a machine without them) the
# app shows its screens in the browser instead.
if pkg-config --exists gtk+-3.0 webkit2gtk-4.1 2>/dev/null; then
  log "building bin/capabilities-window (Wails, WebKitGTK 4.1)"
  CGO_ENABLED=1 go build -tags desktop,production,webkit2_41 -o bin/capabilities-window ./cmd/capabilities-window
else
  rm -f bin/capabilities-window
  log "not building bin/capabilities-window (no GTK 3 / WebKitGTK 4.1 headers): the desktop app's screens open in the browser"
fi
log "done: $(pwd)/bin/capabilities, capabilities-desktop and capabilities-window"
