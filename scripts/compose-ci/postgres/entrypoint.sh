#!/bin/bash
# First start: initdb with POSTGRES_USER as superuser and POSTGRES_PASSWORD, create
# POSTGRES_DB, listen on every interface with password authentication. Then run the server
# in the foreground (as PID 1, so "docker stop" shuts it down cleanly).
set -euo pipefail
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set (as for the official image)}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  echo "PostgreSQL stand-in: initialising $PGDATA for user $user, database $db"
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 >/dev/null
  rm -f "$pwfile"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  # A server on the socket only while the database is created, as the official image does
  # (so a health check over TCP does not pass before it is ready).
  pg_ctl --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait --silent start
  if [ "$db" != "postgres" ]; then
    psql --username="$user" --dbname=postgres --quiet --set ON_ERROR_STOP=1 \
      --command="CREATE DATABASE \"$db\""
  fi
  pg_ctl --pgdata="$PGDATA" --mode=fast --wait --silent stop
fi
exec postgres -D "$PGDATA"
