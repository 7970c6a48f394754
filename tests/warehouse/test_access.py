"""Each role's database user can do what its code does and no more (real PostgreSQL).

The administrator (the test's own user) migrates, then grants; the controller's user then
starts as the controller does (``upgrade`` at head is a no-op that needs no DDL right) and
writes rows, the initiator's user reads and cannot write.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ProgrammingError

from shared.warehouse import upgrade
from shared.warehouse.access import WAREHOUSE_ACCESS, grant_access
from tests.support.postgres import drop_database

PASSWORD = "role-test-password"


@pytest.fixture
def role_users(postgres_admin: Engine, postgres_url: str) -> Iterator[dict[str, str]]:
    """A login role per role of WAREHOUSE_ACCESS, unique to this test, dropped afterwards.

    Roles are the server's, not the database's: the test database (where their grants
    live) goes first, then the roles.
    """
    suffix = uuid.uuid4().hex[:8]
    users = {role: f"test-{role}-{suffix}" for role in WAREHOUSE_ACCESS}
    with postgres_admin.connect() as connection:
        for user in users.values():
            connection.execute(text(f"CREATE ROLE \"{user}\" LOGIN PASSWORD '{PASSWORD}'"))
    yield users
    database = make_url(postgres_url).database
    with postgres_admin.connect() as connection:
        # A closed connection's server process may still be exiting; FORCE may not end
        # the sessions of roles we are not a member of, so wait for them to go.
        deadline = time.monotonic() + 10
        while connection.execute(
            text("SELECT count(*) FROM pg_stat_activity WHERE usename = ANY(:users)"),
            {"users": list(users.values())},
        ).scalar_one():
            assert time.monotonic() < deadline, "sessions of the test roles did not end"
            time.sleep(0.05)
    drop_database(postgres_admin, database)
    with postgres_admin.connect() as connection:
        for user in users.values():
            connection.execute(text(f'DROP ROLE "{user}"'))


def _as(url: str, user: str) -> Engine:
    return create_engine(make_url(url).set(username=user, password=PASSWORD))


@pytest.mark.postgres
def test_roles_get_what_their_code_uses(postgres_url: str, role_users: dict[str, str]) -> None:
    upgrade(postgres_url)
    database = make_url(postgres_url).database or ""
    owner = create_engine(postgres_url)
    try:
        with owner.begin() as connection:
            grant_access(
                connection, {role_users[r]: a for r, a in WAREHOUSE_ACCESS.items()}, database
            )
        tables = inspect(owner).get_table_names()
    finally:
        owner.dispose()
    assert "charges" in tables

    controller_url = make_url(postgres_url).set(
        username=role_users["controller"], password=PASSWORD
    )
    upgrade(
        controller_url.render_as_string(hide_password=False)
    )  # what the controller runs at start
    controller = _as(postgres_url, role_users["controller"])
    initiator = _as(postgres_url, role_users["initiator"])
    try:
        with controller.begin() as connection:
            for table in tables:
                for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE"):
                    allowed = connection.execute(
                        text("SELECT has_table_privilege(current_user, :t, :p)"),
                        {"t": table, "p": privilege},
                    ).scalar_one()
                    assert allowed, f"controller cannot {privilege} {table}"
            with pytest.raises(ProgrammingError, match="permission denied"):
                connection.execute(text("CREATE TABLE sneaky (id int)"))
        with initiator.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM charges")).scalar_one() == 0
            with pytest.raises(ProgrammingError, match="permission denied"):
                connection.execute(text("DELETE FROM charges"))
    finally:
        controller.dispose()
        initiator.dispose()


def test_the_processor_gets_no_database_user() -> None:
    assert "processor" not in WAREHOUSE_ACCESS
