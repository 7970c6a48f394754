"""Bring a warehouse to the latest schema: at controller start and ``billing warehouse upgrade``.

Alembic is driven from code with the application's URL; there is no ``alembic.ini`` to keep
in step with the settings. Upgrading is idempotent (a current warehouse is left alone) and
safe when several controllers start at once (see ``migrations/env.py``).
"""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from shared.warehouse.engine import make_engine

MIGRATIONS = Path(__file__).with_name("migrations")
#: Alembic keeps the running migration in module globals (``alembic.context``), so two
#: threads of one process must not migrate at once; other processes are kept apart by the
#: database itself (see ``migrations/env.py``).
_ONE_MIGRATION_PER_PROCESS = threading.Lock()


def alembic_config(url: str) -> Config:
    """An Alembic configuration for ``url``, for ``command.*`` calls (tests, tooling)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser treats "%" as interpolation; a URL-encoded password may contain one.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the warehouse at ``url`` to ``revision`` (the latest by default)."""
    config = alembic_config(url)
    engine = make_engine(url)
    try:
        with _ONE_MIGRATION_PER_PROCESS, engine.connect() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        engine.dispose()


def head_revision() -> str | None:
    """The newest revision shipped with this code."""
    return ScriptDirectory(str(MIGRATIONS)).get_current_head()


def current_revision(url: str) -> str | None:
    """The revision the warehouse at ``url`` is at; ``None`` if it was never migrated."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
