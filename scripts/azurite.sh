#!/usr/bin/env bash
# Install Azurite (pinned: 3.35.0 is the last release that runs on Node 20) into .cache/azurite.
# The test suite starts and stops it itself; this only makes sure the package is there.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BILLING_AZURITE_DIR:-.cache/azurite}
if ! command -v npm >/dev/null 2>&1; then
  echo "azurite: npm not found; the Azurite contract tests will be skipped (install Node 20+)." >&2
  exit 0
fi
if [ ! -x "$dir/node_modules/.bin/azurite" ]; then
  mkdir -p "$dir"
  npm install --silent --no-audit --no-fund --prefix "$dir" azurite@3.35.0
fi
