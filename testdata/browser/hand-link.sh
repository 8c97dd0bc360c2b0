#!/bin/sh
# CAPABILITIES_BROWSER for the browser tests: `capabilities hub console`
# starts it with the one-time link as its argument, as it would start the
# person's browser; it hands the link to the test (appends it to the file
# $CAPABILITIES_TEST_LINKS), which opens it in headless Chromium.
set -eu
printf '%s\n' "$1" >> "$CAPABILITIES_TEST_LINKS"
