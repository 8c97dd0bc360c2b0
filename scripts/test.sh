#!/usr/bin/env bash
# Runs the whole test suite: set-up, formatting, vet, staticcheck, and every
# Go test (unit, real-peer integration, CLI journeys).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --tests

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== build for macOS (the desktop app's other platform)"
GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go build ./...

echo "== staticcheck"
# Built once per machine (outside the clone, so a fresh clone reuses it).
tools="${XDG_CACHE_HOME:-$HOME/.cache}/capabilities/tools/staticcheck-v0.8.2"
staticcheck="$tools/staticcheck"
if [ ! -x "$staticcheck" ]; then
  GOBIN="$tools" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
"$staticcheck" ./...

# The packages whose goroutines share state (the store, runs, the hub, the
# code pipeline) run under the race detector, the others without it: each
# package runs once.
race=(./store/... ./engine/run/ ./engine/hub/ ./engine/code/)
mapfile -t plain < <(go list ./... | grep -v -x -F \
  -e "$(go list ./store/...)" -e "$(go list ./engine/run/)" -e "$(go list ./engine/hub/)" -e "$(go list ./engine/code/)")

echo "== go test"
go test -count=1 -timeout 30m "${plain[@]}" "$@"

echo "== go test -race (${race[*]})"
go test -race -count=1 -timeout 30m "${race[@]}" "$@"
