#!/usr/bin/env bash
# The whole test suite: lint, format check, type check, then pytest (contract suites on the
# embedded backend and on Azurite, SQL on SQLite and on PostgreSQL when
# BILLING_TEST_POSTGRES_URL is set). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev bench
scripts/azurite.sh
scripts/azcopy.sh
echo "== ruff"; .venv/bin/ruff check .
echo "== ruff format"; .venv/bin/ruff format --check .
echo "== mypy"; .venv/bin/mypy
echo "== pytest"; .venv/bin/python -m pytest -ra "$@"
