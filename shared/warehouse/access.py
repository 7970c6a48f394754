"""What each role's database user may do in the warehouse, granted in one place.

In Azure every role signs in as its managed identity (:mod:`shared.warehouse.entra`),
and the postprovision hook (``infra/hooks/postprovision.py``) runs the migrations as the
Microsoft Entra administrator, then gives each identity's database user the least it
needs: the controller reads and writes rows (it reduces chunks into the tables; it does
not change the schema: ``billing warehouse upgrade`` does, as the administrator), the
initiator only reads (batch status, invoices), the processor never connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from sqlalchemy import Connection, text

Access = Literal["read-write", "read-only"]

#: The warehouse access of each role's code; a role not named here gets no database user.
WAREHOUSE_ACCESS: Mapping[str, Access] = {"controller": "read-write", "initiator": "read-only"}

_TABLE_PRIVILEGES: Mapping[Access, str] = {
    "read-write": "SELECT, INSERT, UPDATE, DELETE",
    "read-only": "SELECT",
}
_SEQUENCE_PRIVILEGES: Mapping[Access, str] = {
    "read-write": "USAGE, SELECT, UPDATE",
    "read-only": "SELECT",
}


def grant_statements(user: str, access: Access, database: str, schema: str = "public") -> list[str]:
    """The SQL that gives ``user`` ``access`` to the tables, present and future, of ``schema``.

    Future tables are those the administrator's later migrations create (default
    privileges apply to objects created by the role that runs this).
    """
    who, db, where = _quote(user), _quote(database), _quote(schema)
    tables, sequences = _TABLE_PRIVILEGES[access], _SEQUENCE_PRIVILEGES[access]
    return [
        f"GRANT CONNECT ON DATABASE {db} TO {who}",
        f"GRANT USAGE ON SCHEMA {where} TO {who}",
        f"GRANT {tables} ON ALL TABLES IN SCHEMA {where} TO {who}",
        f"GRANT {sequences} ON ALL SEQUENCES IN SCHEMA {where} TO {who}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {where} GRANT {tables} ON TABLES TO {who}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {where} GRANT {sequences} ON SEQUENCES TO {who}",
    ]


def grant_access(connection: Connection, users: Mapping[str, Access], database: str) -> None:
    """Run :func:`grant_statements` for every ``user → access`` (idempotent)."""
    for user, access in users.items():
        for statement in grant_statements(user, access, database):
            connection.execute(text(statement))


def create_entra_user(connection: Connection, user: str, object_id: str) -> bool:
    """Create the database user of a managed identity, unless it exists; True if created.

    ``pgaadauth_create_principal_with_oid`` is Azure Database for PostgreSQL's: it ties
    the role to the identity's object id, so a token for that identity signs in as it.
    Only the Microsoft Entra administrator may call it.
    """
    exists = connection.execute(
        text("SELECT 1 FROM pg_roles WHERE rolname = :user"), {"user": user}
    ).first()
    if exists:
        return False
    connection.execute(
        text(
            "SELECT * FROM pgaadauth_create_principal_with_oid("
            ":user, :oid, 'service', false, false)"
        ),
        {"user": user, "oid": object_id},
    )
    return True


def _quote(identifier: str) -> str:
    """A PostgreSQL quoted identifier (names like ``id-controller-abc`` need the quotes)."""
    return '"' + identifier.replace('"', '""') + '"'
