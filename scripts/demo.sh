#!/usr/bin/env bash
# Set up on a fresh machine and run the whole pipeline locally (no server to install).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec .venv/bin/billing demo "$@"
