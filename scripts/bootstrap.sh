#!/usr/bin/env bash
# Create .venv and install the project with its dev and bench extras (idempotent, quick when done).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
# Reinstall only when pyproject.toml changed since the last install.
stamp=.venv/.billing-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet -e ".[dev,bench]"
  touch "$stamp"
fi
