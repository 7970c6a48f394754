#!/usr/bin/env bash
# Install AzCopy (pinned: the npm package @azure-tools/azcopy-linux 10.32.2, Microsoft's
# Linux x86-64 binary) into .cache/azcopy for the tests that upload with it
# (tests/support/azcopy.py installs it the same way when this has not run).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BILLING_AZCOPY_DIR:-.cache/azcopy}
version=10.32.2
binary="$dir/node_modules/@azure-tools/azcopy-linux/dist/bin/azcopy_linux_amd64"
if ! command -v npm >/dev/null 2>&1; then
  echo "azcopy: npm not found; the AzCopy upload tests will be skipped (install Node 20+)." >&2
  exit 0
fi
if [ "$(uname -sm)" != "Linux x86_64" ]; then
  echo "azcopy: the npm package ships a Linux x86-64 binary only; the AzCopy tests will be skipped." >&2
  exit 0
fi
if ! { [ -x "$binary" ] && "$binary" --version 2>/dev/null | grep -qx "azcopy version $version"; }; then
  mkdir -p "$dir"
  npm install --silent --no-audit --no-fund --prefix "$dir" "@azure-tools/azcopy-linux@$version"
  chmod +x "$binary"  # the package stores the binary without its execute bit
fi
