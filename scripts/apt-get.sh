#!/usr/bin/env bash
# apt-get that waits for dpkg's lock instead of failing at once when another
# package install holds it: on a fresh machine that is often the system's
# own unattended upgrade, still running after boot. apt itself says what it
# waits for ("Waiting for cache lock: … held by process N (name)"). Waits up
# to APT_LOCK_TIMEOUT seconds (600). As root, or through sudo.
set -euo pipefail
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
wait_s="${APT_LOCK_TIMEOUT:-600}"
DEBIAN_FRONTEND=noninteractive exec $sudo env DEBIAN_FRONTEND=noninteractive \
  apt-get -o DPkg::Lock::Timeout="$wait_s" "$@"
