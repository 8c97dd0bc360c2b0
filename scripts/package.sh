#!/usr/bin/env bash
# Builds the Debian package: the three binaries (the CLI, the desktop app and
# its window, the one cgo binary: it needs libgtk-3-dev and
# libwebkit2gtk-4.1-dev, which scripts/setup.sh installs), the .desktop file and the icons
# (build/linux/nfpm.yaml says what goes where), with nfpm, pinned below and
# built once per machine into ~/.cache/capabilities/tools.
#
#   scripts/package.sh [OUT_DIR]      writes OUT_DIR/capabilities_<version>_<arch>.deb (default bin/)
#
# VERSION sets the package's version (default: the tag git describe finds,
# else the binary's own version plus +git<commit>); MAINTAINER its maintainer.
# GOARCH picks the architecture. Prints the .deb's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'package: %s\n' "$*" >&2; }

nfpm_version=v2.48.0
out="${1:-bin}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

tools="${XDG_CACHE_HOME:-$HOME/.cache}/capabilities/tools/nfpm-$nfpm_version"
nfpm="$tools/nfpm"
if [ ! -x "$nfpm" ]; then
  log "building nfpm $nfpm_version into $tools"
  GOBIN="$tools" go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$nfpm_version"
fi

arch="${GOARCH:-$(go env GOARCH)}"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
log "building capabilities, capabilities-desktop and capabilities-window for linux/$arch"
for cmd in capabilities capabilities-desktop; do
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags="-s -w" -o "$bin/$cmd" "./cmd/$cmd"
done
pkg-config --exists gtk+-3.0 webkit2gtk-4.1 || { log "the window (cgo) needs libgtk-3-dev and libwebkit2gtk-4.1-dev: run scripts/setup.sh"; exit 1; }
CGO_ENABLED=1 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags="-s -w" -tags desktop,production,webkit2_41 \
  -o "$bin/capabilities-window" ./cmd/capabilities-window

version="${VERSION:-}"
if [ -z "$version" ]; then
  if tag=$(git describe --tags --exact-match 2>/dev/null); then
    version="${tag#v}"
  else
    # The version the binary prints (capabilities --version).
    version="$(sed -n 's/^const Version = "\(.*\)"$/\1/p' engine/mcpserver/server.go)"
    [ -n "$version" ] || { log "finding the version in engine/mcpserver/server.go"; exit 1; }
    commit="$(git rev-parse --short=12 HEAD 2>/dev/null || true)"
    [ -z "$commit" ] || version="$version+git$commit"
  fi
fi

# nfpm expands variables in some fields only, not in a file's source path:
# that one is put in here.
sed "s|\${PKG_BIN}|$bin|g" build/linux/nfpm.yaml >"$bin/nfpm.yaml"
PKG_ARCH="$arch" PKG_VERSION="$version" \
  PKG_MAINTAINER="${MAINTAINER:-capabilities maintainers <maintainers@capabilities.sh>}" \
  "$nfpm" package --config "$bin/nfpm.yaml" --packager deb --target "$out" >&2
deb="$out/capabilities_${version}_${arch}.deb"
[ -f "$deb" ] || { log "nfpm wrote no $deb"; ls -l "$out" >&2; exit 1; }
log "wrote $deb ($(du -k "$deb" | cut -f1) KiB)"
echo "$deb"
