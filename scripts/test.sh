#!/usr/bin/env bash
# The whole test suite: lint, format check, type check, then pytest (contract suites on the
# embedded backend and on Azurite, SQL on SQLite and on PostgreSQL when
# BILLING_TEST_POSTGRES_URL is set). Extra arguments go to pytest.
#
# pytest runs on two worker processes (pytest-xdist): most tests wait on roles, storage and
# timers rather than compute, so two workers take about 1,000 s where one takes 1,460 s on a
# 2-core machine. Each worker starts its own Azurite. "-n 0" runs it in one process, e.g.
#   scripts/test.sh -n 0 tests/listener
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev bench
scripts/azurite.sh
scripts/azcopy.sh
echo "== ruff"; .venv/bin/ruff check .
echo "== ruff format"; .venv/bin/ruff format --check .
echo "== mypy"; .venv/bin/mypy
echo "== pytest"; .venv/bin/python -m pytest -ra -n 2 "$@"
