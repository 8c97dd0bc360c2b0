#!/usr/bin/env bash
# Runs the whole test suite: set-up, formatting, vet, staticcheck, and every
# Go test (unit, real-peer integration, CLI journeys).
set -euo pipefail
cd "$(dirname "$0")/.."

# step NAME: prints how long the previous step took, then NAME.
began=$SECONDS step_began=$SECONDS step_name=""
step() {
  [ -z "$step_name" ] || echo "   ($step_name: $((SECONDS - step_began)) s)"
  step_name="$1" step_began=$SECONDS
  echo "== $1"
}
trap '[ $? -ne 0 ] || { step done; echo "test.sh: all steps passed in $((SECONDS - began)) s"; }' EXIT

step "set-up"
scripts/setup.sh --tests

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...
# The desktop app's window (Wails, cgo) is behind build tags: vet it too.
CGO_ENABLED=1 go vet -tags desktop,production,webkit2_41 ./app/window/ ./cmd/capabilities-window/

step "build for macOS and Windows (the desktop app's other platforms)"
GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go build ./...
# Built, not run: no Windows here. Its own files: engine/source/group_windows.go
# (an upstream's process tree), app/login_windows.go, engine/hub/inode_other.go.
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go build ./...

step "staticcheck"
# Built once per machine (outside the clone, so a fresh clone reuses it).
tools="${XDG_CACHE_HOME:-$HOME/.cache}/capabilities/tools/staticcheck-v0.8.2"
staticcheck="$tools/staticcheck"
if [ ! -x "$staticcheck" ]; then
  GOBIN="$tools" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
"$staticcheck" ./...
CGO_ENABLED=1 "$staticcheck" -tags desktop,production,webkit2_41 ./app/window/ ./cmd/capabilities-window/

# The packages whose goroutines share state (the store, runs, the hub, the
# code pipeline, the harness watcher) run under the race detector, the others without it: each
# package runs once. The kill -9 trials of I6 run without it: each trial
# starts the test binary again, and a race-built one starts slowly (387 s
# under load).
race=(./store/... ./engine/run/ ./engine/hub/ ./engine/code/ ./engine/harness/watch/)
mapfile -t plain < <(go list ./... | grep -v -x -F \
  -e "$(go list ./store/...)" -e "$(go list ./engine/run/)" -e "$(go list ./engine/hub/)" -e "$(go list ./engine/code/)" -e "$(go list ./engine/harness/watch/)")
crash='^TestInvariantI6CrashNeverRepeatsAnApprovedWrite$'

step "go test"
# The crash trials mostly wait on processes starting: they run beside the rest.
go test -count=1 -timeout 30m -run "$crash" ./engine/run/ "$@" &
trials=$!
go test -count=1 -timeout 30m "${plain[@]}" "$@"
wait "$trials"

step "go test -race (${race[*]})"
go test -race -count=1 -timeout 30m -skip "$crash" "${race[@]}" "$@"
