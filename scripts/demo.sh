#!/usr/bin/env bash
# Sets everything up, creates a demo hub in a throwaway home with three real
# MCP servers (everything, memory, filesystem), and runs it until Ctrl-C:
# with a display (DISPLAY or WAYLAND_DISPLAY), the desktop app (the tray,
# notifications for calls that ask, its window), which serves MCP on
# http://127.0.0.1:4790/mcp (or the next free port); without one, or with
# DEMO_HEADLESS=1, the headless hub on http://127.0.0.1:${PORT:-4790}/mcp.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/setup.sh

export CAPABILITIES_HOME="${CAPABILITIES_HOME:-$(mktemp -d -t capabilities-demo.XXXXXX)}"
cap="$root/bin/capabilities"
nm="$root/testdata/npm/node_modules/@modelcontextprotocol"
files="$CAPABILITIES_HOME/files"
mkdir -p "$files"
echo "Hello from the capabilities demo." > "$files/hello.txt"

"$cap" hub init
"$cap" hub list --json | grep -q '"namespace": "everything"' ||
  "$cap" hub add --yes -- node "$nm/server-everything/dist/index.js" stdio >/dev/null
"$cap" hub list --json | grep -q '"namespace": "memory"' ||
  "$cap" hub add --yes --namespace memory --env "MEMORY_FILE_PATH=$CAPABILITIES_HOME/memory.jsonl" -- node "$nm/server-memory/dist/index.js" >/dev/null
"$cap" hub list --json | grep -q '"namespace": "filesystem"' ||
  "$cap" hub add --yes --namespace filesystem -- node "$nm/server-filesystem/dist/index.js" "$files" >/dev/null
"$cap" hub list

port="${PORT:-4790}"
desktop=0
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ "${DEMO_HEADLESS:-0}" != 1 ]; then
  desktop=1
  served="by the desktop app at http://127.0.0.1:4790/mcp (or the next free port: the app says which)"
else
  served="at http://127.0.0.1:$port/mcp"
fi
cat <<MSG

The demo hub lives in $CAPABILITIES_HOME (delete it when done).
It is served now $served with the bearer token in
$CAPABILITIES_HOME/hub/http-token. From another terminal:

  export CAPABILITIES_HOME=$CAPABILITIES_HOME
  $cap hub search "remember facts about a person"
  $cap hub exec 'return await everything.echo({message: "hi"})'
  $cap hub exec 'return await memory.createEntities({entities: [{name: "Ada", entityType: "person", observations: ["wrote the first program"]}]})'
  $cap hub approve <runId>          # the write above asks a person first
  $cap hub call filesystem.readTextFile '{"path":"$files/hello.txt"}'

An agent launches it over stdio, e.g. in an MCP client config:
  {"command": "$cap", "args": ["hub", "serve", "--stdio"], "env": {"CAPABILITIES_HOME": "$CAPABILITIES_HOME"}}

MSG
if [ "$desktop" = 1 ]; then
  echo "Starting the desktop app: look for capabilities in the tray; quit it from there or with Ctrl-C."
  exec "$root/bin/capabilities-desktop"
fi
if [ "${DEMO_HEADLESS:-0}" = 1 ]; then
  echo "DEMO_HEADLESS=1: serving the hub without the desktop app."
else
  echo "No display (DISPLAY and WAYLAND_DISPLAY are unset): serving the hub without the desktop app (run this from a desktop session to get the tray)."
fi
exec "$cap" hub serve --http --port "$port"
