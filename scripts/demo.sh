#!/usr/bin/env bash
# Sets everything up, creates a demo hub in a throwaway home with three real
# MCP servers (everything, memory, filesystem), and shows how to use it.
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

cat <<MSG

The demo hub lives in $CAPABILITIES_HOME (delete it when done).
Try it from another terminal:

  export CAPABILITIES_HOME=$CAPABILITIES_HOME
  $cap hub call everything.echo '{"message":"hi"}'
  $cap hub call filesystem.readTextFile '{"path":"$files/hello.txt"}'
  $cap hub call memory.readGraph
  $cap hub doctor
MSG
