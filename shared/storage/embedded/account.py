"""The embedded storage account: one local folder, no server.

Layout of the folder (created on first use)::

    queues.sqlite    queues and their messages
    tables.sqlite    tables and their entities
    blobs.sqlite     containers, blob names, ETags and metadata
    blobs/           one immutable file per blob version

Three database files rather than one, because SQLite lets one writer at a time into a
file: a multi-megabyte blob put or a table update must not queue behind the hot path of
the demo, which is queue receives and deletes.
"""

from __future__ import annotations

from pathlib import Path

from shared import meter
from shared.storage.embedded.blob import SCHEMA as BLOB_SCHEMA
from shared.storage.embedded.blob import EmbeddedBlobContainer
from shared.storage.embedded.db import Database
from shared.storage.embedded.queue import SCHEMA as QUEUE_SCHEMA
from shared.storage.embedded.queue import EmbeddedQueue
from shared.storage.embedded.table import SCHEMA as TABLE_SCHEMA
from shared.storage.embedded.table import EmbeddedTable

#: What the embedded backend calls itself where Azure would name the storage account.
ACCOUNT_NAME = "embedded"


class EmbeddedStorageAccount:
    """Queues, blob containers and tables kept under ``root``; safe across processes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._blob_files = self.root / "blobs"
        self._blob_files.mkdir(parents=True, exist_ok=True)
        self._queues = Database(self.root / "queues.sqlite", QUEUE_SCHEMA)
        self._tables = Database(self.root / "tables.sqlite", TABLE_SCHEMA)
        self._blobs = Database(self.root / "blobs.sqlite", BLOB_SCHEMA)

    @property
    def account_name(self) -> str:
        return ACCOUNT_NAME

    def queue(self, name: str) -> EmbeddedQueue:
        return EmbeddedQueue(self._queues, name)

    def container(self, name: str) -> EmbeddedBlobContainer:
        return EmbeddedBlobContainer(self._blobs, self._blob_files, name)

    def table(self, name: str) -> EmbeddedTable:
        return EmbeddedTable(self._tables, name)

    def list_queues(self) -> list[str]:
        meter.record("queue", "admin")
        return _names(self._queues, "queues")

    def list_containers(self) -> list[str]:
        meter.record("blob", "list", container=meter.ACCOUNT)
        return _names(self._blobs, "containers")

    def list_tables(self) -> list[str]:
        meter.record("table", "read")
        return _names(self._tables, "tables")

    def close(self) -> None:
        for db in (self._queues, self._tables, self._blobs):
            db.close()

    def __repr__(self) -> str:
        return f"EmbeddedStorageAccount({str(self.root)!r})"


def _names(db: Database, table: str) -> list[str]:
    rows = db.connection().execute(f"SELECT name FROM {table} ORDER BY name").fetchall()
    return [name for (name,) in rows]
