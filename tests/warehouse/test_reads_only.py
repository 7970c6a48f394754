"""A writer engine's reads-only connections (SQLite): deferred, so they never hold the lock."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, insert, select

from shared.warehouse import Batch, make_engine, upgrade
from shared.warehouse.engine import READS_ONLY


def _batch(batch_id: str) -> dict[str, object]:
    return {
        "batch_id": batch_id,
        "priority": "normal",
        "transactions": 1,
        "chunks": 1,
        "pricebook_version": "v",
        "status": "processing",
        "accepted_at": datetime.now(UTC),
        "control_transactions": 1,
        "control_quantity": 1,
        "control_id_checksum": 1,
    }


def test_a_reader_in_its_transaction_does_not_keep_a_writer_out(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'warehouse.sqlite3'}"
    upgrade(url)
    engine = make_engine(url)
    try:
        with engine.connect().execution_options(**READS_ONLY) as reader, reader.begin():
            before = reader.scalar(select(func.count()).select_from(Batch))
            # A writer's BEGIN IMMEDIATE would have taken the write lock for the reader
            # and made this wait the busy timeout (30 s), then fail.
            written = threading.Event()

            def write() -> None:
                with engine.begin() as writer:
                    writer.execute(insert(Batch).values(_batch("b-written")))
                written.set()

            thread = threading.Thread(target=write)
            thread.start()
            assert written.wait(10), "the writer waited for the reader's transaction"
            thread.join()
            # Still the reader's snapshot (WAL): it began before the write.
            assert reader.scalar(select(func.count()).select_from(Batch)) == before
        with engine.connect() as connection:
            assert connection.scalar(select(func.count()).select_from(Batch)) == before + 1
    finally:
        engine.dispose()
