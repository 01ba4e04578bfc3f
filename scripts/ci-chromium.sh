#!/bin/sh
# Install Debian's chromium for the report's real-browser test (crates/report/tests/browser.rs).
# The test itself prints "SKIPPED: …" when chromium is missing; CI runs this first so it is not.
set -eu
if command -v chromium >/dev/null 2>&1; then
    chromium --version 2>/dev/null || true
    exit 0
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
chromium --version
