"""Dropping a test database on a PostgreSQL server where the test role is not a superuser."""

from __future__ import annotations

import time

from psycopg import errors
from sqlalchemy import Engine, text
from sqlalchemy.exc import ProgrammingError


def drop_database(admin: Engine, name: str, *, patience: float = 30.0) -> None:
    """Drop ``name``, ending whatever sessions are still on it.

    ``WITH (FORCE)`` ends the sessions of a test that failed with a connection open. An
    autovacuum worker on the database belongs to no role, so a role without
    ``pg_signal_backend`` may not end it; ``.ci/run`` grants that role, and elsewhere the drop
    is retried until the worker is done (a test database is small, so it is soon).
    """
    deadline = time.monotonic() + patience
    while True:
        try:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            return
        except ProgrammingError as error:
            if not isinstance(error.orig, errors.InsufficientPrivilege):
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
