"""Alembic migrations, the engine factory and the two custom column types."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from multiprocessing.synchronize import Barrier as BarrierType
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, insert, inspect, select, update
from sqlalchemy.exc import IntegrityError, StatementError

from controller.batch_rows import BatchRows
from controller.completion import BatchCompletion
from controller.failed_chunks import FailedChunks
from controller.reducer import apply_chunk
from shared.contracts.chunk_result import ChargeRow
from shared.domain.charges import INVOICE_SUMS, RatedCharge
from shared.domain.transactions import id_checksum_of
from shared.warehouse import AppliedChunk, Base, Batch, Charge, Invoice, make_engine, upgrade
from shared.warehouse.id_checksum_halves import join_sums
from shared.warehouse.migrate import alembic_config, current_revision, head_revision
from shared.warehouse.models import MARK_SUMS
from tests.warehouse.conftest import add_batch

TABLES = {
    "batches",
    "charges",
    "invoices",
    "applied_chunks",
    "batch_events",
    "webhook_deliveries",
    "webhook_attempts",
}


def table_names(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_creates_the_schema_and_is_idempotent(warehouse_url: str) -> None:
    assert current_revision(warehouse_url) is None

    upgrade(warehouse_url)
    upgrade(warehouse_url)  # at controller start, every time

    assert current_revision(warehouse_url) == head_revision() == "0008"
    assert table_names(warehouse_url) == TABLES | {"alembic_version"}


def test_the_migrations_build_exactly_what_the_models_describe(engine: Engine) -> None:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        differences = compare_metadata(context, Base.metadata)

    assert differences == []


def _start_controller(url: str, start: BarrierType) -> None:
    start.wait(timeout=60)  # all imports done: now upgrade at the same moment
    upgrade(url)


def test_controllers_starting_together_all_upgrade_cleanly(warehouse_url: str) -> None:
    # Separate processes, as separate controllers would be: each migrates on its own
    # connection, and the database (advisory lock / BEGIN IMMEDIATE) keeps them apart.
    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(3)
    controllers = [
        spawn.Process(target=_start_controller, args=(warehouse_url, start)) for _ in range(3)
    ]
    for controller in controllers:
        controller.start()
    for controller in controllers:
        controller.join(timeout=120)

    assert [controller.exitcode for controller in controllers] == [0, 0, 0]
    assert current_revision(warehouse_url) == head_revision()
    assert table_names(warehouse_url) == TABLES | {"alembic_version"}


def test_threads_of_one_process_may_call_upgrade_together(warehouse_url: str) -> None:
    errors: list[BaseException] = []

    def start_controller() -> None:
        try:
            upgrade(warehouse_url)
        except BaseException as error:  # collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=start_controller) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert current_revision(warehouse_url) == head_revision()


def test_downgrade_to_nothing_and_back(warehouse_url: str) -> None:
    upgrade(warehouse_url)

    command.downgrade(alembic_config(warehouse_url), "base")  # env.py's own-engine path
    assert table_names(warehouse_url) == {"alembic_version"}
    assert current_revision(warehouse_url) is None

    upgrade(warehouse_url)
    assert table_names(warehouse_url) >= TABLES


def test_sqlite_connections_get_wal_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/new/folder/warehouse.sqlite3"
    engine = make_engine(url)  # the folder does not exist yet: a first run
    try:
        with engine.connect() as connection:
            pragma = connection.exec_driver_sql
            assert pragma("PRAGMA journal_mode").scalar() == "wal"
            assert pragma("PRAGMA foreign_keys").scalar() == 1
            assert pragma("PRAGMA busy_timeout").scalar() == 30_000
            assert pragma("PRAGMA synchronous").scalar() == 2  # FULL
    finally:
        engine.dispose()


@pytest.mark.parametrize("checksum", [0, 1, 2**63 - 1, 2**63, 2**64 - 1])
def test_id_checksums_keep_all_64_unsigned_bits(engine: Engine, checksum: int) -> None:
    add_batch(engine, "b1")
    with engine.begin() as connection:
        connection.execute(
            update(Batch).values(control_id_checksum=checksum, warehouse_id_checksum=checksum)
        )
        stored = connection.execute(
            select(Batch.control_id_checksum, Batch.warehouse_id_checksum)
        ).one()

    assert tuple(stored) == (checksum, checksum)


def test_out_of_range_checksums_are_refused(engine: Engine) -> None:
    add_batch(engine, "b1")
    with pytest.raises(StatementError, match="unsigned 64-bit"), engine.begin() as connection:
        connection.execute(update(Batch).values(control_id_checksum=2**64))


def test_timestamps_come_back_in_utc_whatever_offset_went_in(engine: Engine) -> None:
    accepted = datetime(2025, 3, 30, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    add_batch(engine, "b1")
    with engine.begin() as connection:
        connection.execute(update(Batch).values(accepted_at=accepted))
        stored = connection.execute(select(Batch.accepted_at)).scalar_one()

    assert stored == accepted
    assert stored.tzinfo is not None
    assert stored.utcoffset() == timedelta(0)
    assert stored == datetime(2025, 3, 29, 23, 30, tzinfo=UTC)


def test_revision_0002_gives_chunks_applied_before_it_their_partial_id_checksums(
    warehouse_url: str,
) -> None:
    command.upgrade(alembic_config(warehouse_url), "0001")
    engine = make_engine(warehouse_url)
    ids = {0: [f"tx-{n:03d}" for n in range(0, 30)], 1: [f"tx-{n:03d}" for n in range(30, 45)]}
    try:
        add_batch(engine, "b-old", chunks=3)
        with engine.begin() as connection:
            for chunk in (0, 1, 2):  # chunk 2 was applied with no charges at all
                connection.execute(
                    insert(AppliedChunk.__table__).values(
                        batch_id="b-old",
                        chunk=chunk,
                        applied_at=datetime.now(UTC),
                        transactions=len(ids.get(chunk, [])),
                        processor="before-0002",
                    )
                )
            connection.execute(
                insert(Charge.__table__),
                [
                    _charge_values(order_id=order_id, chunk=chunk, transaction_id=tid)
                    for order_id, (chunk, tid) in enumerate(
                        ((chunk, tid) for chunk in ids for tid in ids[chunk]), start=1
                    )
                ],
            )

        upgrade(warehouse_url)

        with engine.connect() as connection:
            halves = {
                row.chunk: join_sums(row.id_checksum_high, row.id_checksum_low)
                for row in connection.execute(select(AppliedChunk))
            }
    finally:
        engine.dispose()
    assert halves == {0: id_checksum_of(ids[0]), 1: id_checksum_of(ids[1]), 2: 0}


def _charge_values(*, order_id: int, chunk: int, transaction_id: str) -> dict[str, object]:
    return {
        "order_id": order_id,
        "batch_id": "b-old",
        "chunk": chunk,
        "transaction_id": transaction_id,
        "customer_id": "acme",
        "sku": "SKU-1",
        "region": "EU",
        "quantity": 1,
        "occurred_at": datetime(2025, 1, 1, tzinfo=UTC),
        "currency": "EUR",
        "unit_price": 100,
        "gross": 100,
        "discount": 0,
        "net": 100,
        "tax": 0,
        "total": 100,
    }


def test_revision_0004_makes_the_sqlite_order_id_the_row_id_and_keeps_the_charges(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'warehouse.sqlite3'}"
    command.upgrade(alembic_config(url), "0003")
    engine = make_engine(url)
    try:
        add_batch(engine, "b-old")
        with engine.begin() as connection:
            connection.execute(
                insert(Charge.__table__),
                [
                    _charge_values(order_id=order_id, chunk=0, transaction_id=f"tx-{order_id}")
                    for order_id in (7, 2**62, 3)
                ],
            )
        assert _charges_indexes(engine) == {"pk", "unique"}

        upgrade(url)

        # The order id is the row id: no index of its own, only the unique key's.
        assert _charges_indexes(engine) == {"unique"}
        with engine.connect() as connection:
            kept = connection.execute(
                select(Charge.order_id, Charge.transaction_id).order_by(Charge.order_id)
            ).all()
            rowids = connection.exec_driver_sql("SELECT rowid FROM charges ORDER BY 1").all()
        assert kept == [(3, "tx-3"), (7, "tx-7"), (2**62, f"tx-{2**62}")]
        assert [rowid for (rowid,) in rowids] == [3, 7, 2**62]
        with pytest.raises(IntegrityError), engine.begin() as connection:  # still unique
            connection.execute(
                insert(Charge.__table__),
                [_charge_values(order_id=8, chunk=1, transaction_id="tx-3")],
            )
        with pytest.raises(IntegrityError), engine.begin() as connection:  # still a key
            connection.execute(
                insert(Charge.__table__),
                [_charge_values(order_id=7, chunk=1, transaction_id="tx-new")],
            )
    finally:
        engine.dispose()


def _charges_indexes(engine: Engine) -> set[str]:
    """The kinds of index SQLite keeps for ``charges``: its primary key's, unique keys'."""
    origins = {"pk": "pk", "u": "unique", "c": "created"}
    with engine.connect() as connection:
        rows = connection.exec_driver_sql("PRAGMA index_list(charges)").all()
    return {origins[row.origin] for row in rows}


def test_revision_0005_flags_open_and_failed_batches_as_possibly_failed(
    warehouse_url: str,
) -> None:
    """Rows written before the flag existed: their failures, if any, are still looked up."""
    command.upgrade(alembic_config(warehouse_url), "0004")
    engine = make_engine(warehouse_url)
    statuses = {"b-open": "processing", "b-failed": "failed", "b-done": "completed"}
    try:
        for batch_id, status in statuses.items():
            add_batch(engine, batch_id)
            with engine.begin() as connection:
                connection.execute(
                    update(Batch).where(Batch.batch_id == batch_id).values(status=status)
                )

        upgrade(warehouse_url)

        with engine.connect() as connection:
            flags = dict(connection.execute(select(Batch.batch_id, Batch.has_failed_chunks)).all())
        add_batch(engine, "b-new")
        with engine.connect() as connection:
            new = connection.scalar(
                select(Batch.has_failed_chunks).where(Batch.batch_id == "b-new")
            )
    finally:
        engine.dispose()
    assert flags == {"b-open": True, "b-failed": True, "b-done": False}
    assert new is False


def _figures(
    engine: Engine, table: Any, key: Any, columns: Sequence[Any]
) -> dict[Any, tuple[int, ...]]:
    with engine.connect() as connection:
        rows = connection.execute(select(key, *columns).select_from(table)).all()
    return {row[0]: tuple(int(value) for value in row[1:]) for row in rows}


def _applied_before_0008(engine: Engine, batch_id: str, chunks: dict[int, list[str]]) -> None:
    """Marks and charges as a controller before revision 0008 wrote them, and the running
    invoice it upserted chunk by chunk (one customer, every charge 100 net + 20 tax)."""
    with engine.begin() as connection:
        for chunk, ids in chunks.items():
            connection.execute(
                insert(AppliedChunk.__table__).values(
                    batch_id=batch_id,
                    chunk=chunk,
                    applied_at=datetime.now(UTC),
                    transactions=len(ids),
                    processor="before-0008",
                    id_checksum_high=0,
                    id_checksum_low=0,
                )
            )
            connection.execute(
                insert(Charge.__table__),
                [
                    _charge_values(order_id=order_id, chunk=chunk, transaction_id=tid)
                    | {"batch_id": batch_id, "tax": 20, "total": 120}
                    for order_id, tid in enumerate(ids, start=1 + 1000 * chunk)
                ],
            )
        lines = sum(len(ids) for ids in chunks.values())
        connection.execute(
            insert(Invoice.__table__).values(
                batch_id=batch_id,
                customer_id="acme",
                currency="EUR",
                lines=lines,
                quantity=lines,
                gross=100 * lines,
                discount=0,
                net=100 * lines,
                tax=20 * lines,
                total=120 * lines,
            )
        )


def test_revision_0008_gives_applied_chunks_their_sums_and_an_open_batch_closes_once(
    warehouse_url: str,
) -> None:
    """A batch open across the upgrade: its marks get their sums from their charges, and its
    close replaces the running invoice the older reducer left rather than adding to it."""
    command.upgrade(alembic_config(warehouse_url), "0007")
    engine = make_engine(warehouse_url)
    ids = {0: [f"tx-{n:03d}" for n in range(30)], 1: [f"tx-{n:03d}" for n in range(30, 45)]}
    try:
        add_batch(engine, "b-old", transactions=45, chunks=3)
        with engine.begin() as connection:
            connection.execute(
                update(Batch)
                .where(Batch.batch_id == "b-old")
                .values(control_quantity=45, control_id_checksum=0)
            )
        _applied_before_0008(engine, "b-old", ids)

        upgrade(warehouse_url)

        mark_columns = [AppliedChunk.__table__.c[name] for name in MARK_SUMS]
        sums = _figures(engine, AppliedChunk.__table__, AppliedChunk.chunk, mark_columns)
        # the batch's last chunk arrives, applied by the current reducer, and closes it
        apply_chunk(
            engine,
            batch_id="b-old",
            chunk=2,
            charges=[],
            subtotals=[],
            currency="EUR",
            allocator=_NoIds(),
            processor="after-0008",
        )
        completion = BatchCompletion(engine, BatchRows(engine), FailedChunks(None))  # type: ignore[arg-type]
        settlement = completion.settle("b-old")
        invoice_columns = [Invoice.__table__.c[name] for name in INVOICE_SUMS]
        invoices = _figures(engine, Invoice.__table__, Invoice.customer_id, invoice_columns)
    finally:
        engine.dispose()
    assert sums == {0: (30, 30, 3000, 0, 3000, 600, 3600), 1: (15, 15, 1500, 0, 1500, 300, 1800)}
    assert settlement is not None
    assert settlement.closed_now
    assert settlement.reconciliation is not None
    assert settlement.reconciliation.reconciled
    assert invoices == {"acme": (45, 45, 4500, 0, 4500, 900, 5400)}, "written once, not added"


def test_revision_0008_downgraded_leaves_an_open_batch_the_invoices_of_its_charges(
    warehouse_url: str,
) -> None:
    """The older reducer adds each further chunk to the invoices: they must hold the chunks
    applied so far, which the current one never wrote."""
    upgrade(warehouse_url)
    engine = make_engine(warehouse_url)
    try:
        add_batch(engine, "b-open", chunks=2)
        apply_chunk(
            engine,
            batch_id="b-open",
            chunk=0,
            charges=[_charge_row(n) for n in range(3)],
            subtotals=[],
            currency="EUR",
            allocator=_NoIds(start=1),
            processor="after-0008",
        )
        command.downgrade(alembic_config(warehouse_url), "0007")
        with engine.connect() as connection:
            invoices = connection.execute(
                select(Invoice.customer_id, Invoice.lines, Invoice.total)
            ).all()
    finally:
        engine.dispose()
    assert [tuple(row) for row in invoices] == [("acme", 3, 300)]


class _NoIds:
    def __init__(self, start: int = 1) -> None:
        self._next = start

    def take(self, count: int) -> list[int]:
        first, self._next = self._next, self._next + count
        return list(range(first, first + count))


def _charge_row(n: int) -> ChargeRow:
    return ChargeRow(
        occurred_at=datetime(2025, 1, 1, tzinfo=UTC),
        charge=RatedCharge(f"tx-{n}", "acme", "SKU-1", "EU", 1, 100, 100, 0, 100, 0, 100),
    )
