"""An Azure-Tables-style table in SQLite: entities keyed by partition and row, with ETags.

Entities come back sorted by PartitionKey then RowKey, as Azure returns them. Table names
are case-insensitive (``Jobs`` and ``jobs`` are one table) and keep the case they were
created with, as in Azure.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from azure.core.exceptions import (
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)

from shared import meter
from shared.storage.embedded import properties as props
from shared.storage.embedded.db import Database, now
from shared.storage.embedded.names import new_etag, validate_entity_key, validate_table_name
from shared.storage.ports import Entity

SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (name TEXT PRIMARY KEY COLLATE NOCASE);
CREATE TABLE IF NOT EXISTS entities (
    tbl TEXT NOT NULL COLLATE NOCASE,
    pk TEXT NOT NULL,
    rk TEXT NOT NULL,
    properties TEXT NOT NULL,
    etag TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (tbl, pk, rk)
) WITHOUT ROWID;
"""

#: Azure returns at most 1,000 entities per page: one billed read each.
QUERY_PAGE_SIZE = 1000


class EmbeddedTable:
    """One table of an :class:`~shared.storage.embedded.EmbeddedStorageAccount`."""

    def __init__(self, db: Database, name: str) -> None:
        self._db = db
        self._name = validate_table_name(name)

    @property
    def name(self) -> str:
        return self._name

    def create(self) -> None:
        meter.record("table", "write")
        self._db.connection().execute("INSERT OR IGNORE INTO tables VALUES (?)", (self._name,))

    def insert(self, entity: Entity) -> Entity:
        meter.record("table", "write")
        encoded = self._encode(entity)
        with self._db.transaction() as conn:
            self._require_table(conn)
            if self._current(conn, entity) is not None:
                raise ResourceExistsError(
                    f"EntityAlreadyExists: ({entity.partition_key!r}, {entity.row_key!r})"
                )
            return self._write(conn, entity, encoded)

    def upsert(self, entity: Entity) -> Entity:
        meter.record("table", "write")
        encoded = self._encode(entity)
        with self._db.transaction() as conn:
            self._require_table(conn)
            return self._write(conn, entity, encoded)

    def update(self, entity: Entity, *, if_match: str, merge: bool = True) -> Entity:
        """Merge into (or replace) an existing entity whose ETag is ``if_match`` (or ``*``).

        Returns the entity as given, with its new ETag (Azure returns no properties here).
        """
        meter.record("table", "write")
        encoded = self._encode(entity)
        with self._db.transaction() as conn:
            self._require_table(conn)
            current = self._current(conn, entity)
            if current is None:
                raise ResourceNotFoundError(
                    f"ResourceNotFound: ({entity.partition_key!r}, {entity.row_key!r})"
                )
            etag, stored = current
            if if_match not in ("*", etag):
                raise ResourceModifiedError(
                    f"UpdateConditionNotSatisfied: ({entity.partition_key!r}, "
                    f"{entity.row_key!r}) changed since ETag {if_match}"
                )
            if merge:
                encoded = {**props.load(stored), **encoded}
            return self._write(conn, entity, encoded)

    def get(self, partition_key: str, row_key: str) -> Entity:
        meter.record("table", "read")
        conn = self._db.connection()
        row = conn.execute(
            "SELECT properties, etag FROM entities WHERE tbl = ? AND pk = ? AND rk = ?",
            (self._name, partition_key, row_key),
        ).fetchone()
        if row is None:
            self._require_table(conn)
            raise ResourceNotFoundError(f"ResourceNotFound: ({partition_key!r}, {row_key!r})")
        return Entity(partition_key, row_key, props.decode_properties(props.load(row[0])), row[1])

    def query(self, partition_key: str | None = None, **equals: Any) -> Iterator[Entity]:
        """Entities (of one partition, or all) whose properties equal ``equals``, type too.

        As in Azure's filters, types matter (``1`` does not equal ``"1"`` or ``True``) except
        between numbers (``1`` equals ``1.0``), and an entity that lacks a property does not
        match a filter on it. ``RowKey=...`` filters on the key.
        """
        wanted = {
            name: props.comparable(props.encode_value(name, value))
            for name, value in equals.items()
        }
        row_key = wanted.pop("RowKey", None)
        conn = self._db.connection()
        after: tuple[str, str] | None = None
        while True:
            meter.record("table", "read")
            rows = self._page(conn, partition_key, after)
            if after is None and not rows:
                self._require_table(conn)
            for pk, rk, text, etag in rows:
                stored = props.load(text)
                if (row_key is None or ("s", rk) == row_key) and all(
                    props.comparable(stored.get(name)) == pair for name, pair in wanted.items()
                ):
                    yield Entity(pk, rk, props.decode_properties(stored), etag)
            if len(rows) < QUERY_PAGE_SIZE:
                return
            after = (rows[-1][0], rows[-1][1])

    def delete(self, partition_key: str, row_key: str, *, if_match: str | None = None) -> None:
        meter.record("table", "write")
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT etag FROM entities WHERE tbl = ? AND pk = ? AND rk = ?",
                (self._name, partition_key, row_key),
            ).fetchone()
            if row is None:
                return
            if if_match is not None and if_match not in ("*", row[0]):
                raise ResourceModifiedError(
                    f"UpdateConditionNotSatisfied: ({partition_key!r}, {row_key!r}) changed"
                )
            conn.execute(
                "DELETE FROM entities WHERE tbl = ? AND pk = ? AND rk = ?",
                (self._name, partition_key, row_key),
            )

    def _page(
        self, conn: sqlite3.Connection, partition_key: str | None, after: tuple[str, str] | None
    ) -> list[tuple[str, str, str, str]]:
        where = ["tbl = :tbl"]
        if partition_key is not None:
            where.append("pk = :pk")
        if after is not None:
            where.append("(pk, rk) > (:after_pk, :after_rk)")
        return conn.execute(
            f"SELECT pk, rk, properties, etag FROM entities WHERE {' AND '.join(where)} "
            "ORDER BY pk, rk LIMIT :n",
            {
                "tbl": self._name,
                "pk": partition_key,
                "after_pk": after and after[0],
                "after_rk": after and after[1],
                "n": QUERY_PAGE_SIZE,
            },
        ).fetchall()

    @staticmethod
    def _encode(entity: Entity) -> dict[str, props.Encoded]:
        validate_entity_key("PartitionKey", entity.partition_key)
        validate_entity_key("RowKey", entity.row_key)
        return props.encode_properties(entity.properties)

    def _current(self, conn: sqlite3.Connection, entity: Entity) -> tuple[str, str] | None:
        row = conn.execute(
            "SELECT etag, properties FROM entities WHERE tbl = ? AND pk = ? AND rk = ?",
            (self._name, entity.partition_key, entity.row_key),
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def _write(
        self, conn: sqlite3.Connection, entity: Entity, encoded: dict[str, props.Encoded]
    ) -> Entity:
        etag = new_etag()
        conn.execute(
            "INSERT OR REPLACE INTO entities VALUES (?, ?, ?, ?, ?, ?)",
            (self._name, entity.partition_key, entity.row_key, props.dump(encoded), etag, now()),
        )
        return Entity(entity.partition_key, entity.row_key, entity.properties, etag)

    def _require_table(self, conn: sqlite3.Connection) -> None:
        if conn.execute("SELECT 1 FROM tables WHERE name = ?", (self._name,)).fetchone() is None:
            raise ResourceNotFoundError(f"TableNotFound: the table {self._name!r} does not exist")
