"""Alembic environment: migrates the warehouse named by our settings, not by an alembic.ini.

``shared.warehouse.migrate.upgrade(url)`` hands in an open connection (the normal path,
at controller start and from ``billing warehouse upgrade``). Run through the ``alembic``
command instead, the URL comes from ``sqlalchemy.url`` if given, else from
``BILLING_WAREHOUSE_URL`` / the data dir, exactly as the application resolves it.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, text

from shared.settings import Settings
from shared.warehouse.engine import make_engine
from shared.warehouse.models import Base

#: Any constant will do: it only has to be the same in every process that migrates.
MIGRATION_LOCK_KEY = 0x62696C6C  # "bill"


def _url() -> str:
    return context.config.get_main_option("sqlalchemy.url") or Settings().resolved_warehouse_url


def _migrate(connection: Connection) -> None:
    # transactional_ddl: Alembic assumes SQLite cannot roll back DDL, because sqlite3 does
    # not BEGIN before it; our engine emits BEGIN IMMEDIATE itself, so on SQLite too the
    # whole upgrade is one transaction that a concurrent upgrade waits for.
    context.configure(connection=connection, target_metadata=Base.metadata, transactional_ddl=True)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Two controllers starting together: the second waits here and then finds the
            # schema current. (On SQLite, the engine's BEGIN IMMEDIATE already serialises.)
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
        context.run_migrations()


def run_offline() -> None:
    """``alembic upgrade --sql``: print the DDL instead of running it."""
    context.configure(url=_url(), target_metadata=Base.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _migrate(connection)
        return
    engine = make_engine(_url())
    try:
        with engine.connect() as own_connection:
            _migrate(own_connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
