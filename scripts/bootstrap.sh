#!/usr/bin/env bash
# Create .venv and install the project with the extras named as arguments (none: what
# `billing demo` and the roles need; the tests pass "dev bench"), pinned by constraints.txt
# so that every install gets the versions the project is tested with. Idempotent, and quick
# when done: it reinstalls only when pyproject.toml or constraints.txt changed since, or when
# an extra is asked for that is not installed yet.
#   scripts/bootstrap.sh               # the project alone
#   scripts/bootstrap.sh dev bench     # and the test and benchmark tools
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
# The stamp lists the extras installed (one a line); the install is current while it is
# newer than both files and names every extra asked for. A new install keeps the extras
# installed before.
stamp=.venv/.billing-installed
current=true
installed=()
if [ -f "$stamp" ]; then
  mapfile -t installed < "$stamp"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
  current=false
fi
for extra in "$@"; do
  grep -qxF "$extra" "$stamp" 2>/dev/null || current=false
done
if [ "$current" = false ]; then
  wanted=$(printf '%s\n' "${installed[@]}" "$@" | { grep -v '^$' || true; } | sort -u | paste -sd, -)
  spec="."
  [ -n "$wanted" ] && spec=".[${wanted}]"
  .venv/bin/python -m pip install --quiet -c constraints.txt -e "$spec"
  printf '%s\n' "${wanted//,/$'\n'}" > "$stamp"
fi
