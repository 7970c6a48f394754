"""The exactly-once apply of a chunk's result (controller.reducer), on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from operator import attrgetter

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.reducer import IdSource, apply_chunk, apply_rows, is_applied
from shared.contracts.chunk_result import ChargeRow, RatedRows, decode_result_rows, encode_result
from shared.contracts.result_table import ResultTable
from shared.domain.charges import (
    CHARGE_FIELDS,
    INVOICE_SUMS,
    CustomerSubtotal,
    RatedCharge,
    invoice_sums_of,
)
from shared.domain.transactions import id_checksum_of
from shared.domain.utc_text import utc_text
from shared.warehouse import AppliedChunk, Charge, Invoice
from shared.warehouse.id_checksum_halves import join_sums
from shared.warehouse.models import MARK_SUMS
from tests.warehouse.conftest import add_batch

CUSTOMERS = ("acme", "globex", "initech")
charge_values = attrgetter(*CHARGE_FIELDS)


def rated_chunk(chunk: int, size: int = 50) -> list[ChargeRow]:
    charges = []
    for n in range(size):
        quantity = 1 + (chunk * 7 + n) % 13
        unit_price = 199 + n
        gross = unit_price * quantity
        discount = gross // 20 if quantity >= 10 else 0
        net = gross - discount
        tax = net // 5
        charges.append(
            ChargeRow(
                occurred_at=datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=n),
                charge=RatedCharge(
                    transaction_id=f"t{chunk}-{n}",
                    customer_id=CUSTOMERS[(chunk + n) % len(CUSTOMERS)],
                    sku=f"SKU-{n % 4}",
                    region="EU",
                    quantity=quantity,
                    unit_price=unit_price,
                    gross=gross,
                    discount=discount,
                    net=net,
                    tax=tax,
                    total=net + tax,
                ),
            )
        )
    return charges


def subtotals_of(rows: Sequence[ChargeRow]) -> list[CustomerSubtotal]:
    sums: dict[str, list[int]] = defaultdict(lambda: [0] * len(INVOICE_SUMS))
    for charge in (row.charge for row in rows):
        figures = (1, charge.quantity, charge.gross, charge.discount, charge.net, charge.tax)
        for i, value in enumerate((*figures, charge.total)):
            sums[charge.customer_id][i] += value
    return [CustomerSubtotal(customer, *values) for customer, values in sums.items()]


class CountingIds:
    """Order ids from a plain counter (the allocator has its own tests)."""

    def __init__(self) -> None:
        self._next = itertools.count(1)
        self._lock = threading.Lock()
        self.taken = 0

    def take(self, count: int) -> list[int]:
        with self._lock:
            self.taken += count
            return [next(self._next) for _ in range(count)]


def apply(engine: Engine, chunk: int, ids: IdSource, batch_id: str = "b1") -> bool:
    """Apply chunk ``chunk`` the controller's way: from its result blob as a processor
    writes it (an SQLite image, which a SQLite warehouse copies without Python rows)."""
    charges = rated_chunk(chunk)
    rated = result_rows(batch_id, chunk, charges)
    return apply_rows(
        engine,
        batch_id=batch_id,
        chunk=chunk,
        rows=rated.rows,
        invoice_sums=rated.invoice_sums,
        currency=rated.currency,
        allocator=ids,
        processor="proc-1",
        id_checksum=rated.id_checksum,
    )


def result_rows(batch_id: str, chunk: int, charges: Sequence[ChargeRow]) -> RatedRows:
    blob = encode_result(
        batch_id=batch_id,
        chunk=chunk,
        currency="EUR",
        pricebook_version="v1",
        charges=[(row.occurred_at, row.charge) for row in charges],
        subtotals={s.customer_id: s for s in subtotals_of(charges)},
    )
    return decode_result_rows(blob)


def count(engine: Engine, model: type[object]) -> int:
    with engine.connect() as connection:
        return connection.scalar(select(func.count()).select_from(model)) or 0


def invoices(engine: Engine) -> dict[str, tuple[int, ...]]:
    columns = [getattr(Invoice, name) for name in INVOICE_SUMS]
    with engine.connect() as connection:
        rows = connection.execute(select(Invoice.customer_id, *columns)).all()
    return {row[0]: tuple(row[1:]) for row in rows}


def mark_sums(engine: Engine) -> dict[int, tuple[int, ...]]:
    """The invoice sums each applied mark carries, by chunk."""
    columns = [AppliedChunk.__table__.c[name] for name in MARK_SUMS]
    with engine.connect() as connection:
        rows = connection.execute(select(AppliedChunk.chunk, *columns)).all()
    return {row[0]: tuple(row[1:]) for row in rows}


def expected_sums(chunks: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """Each chunk's invoice sums, from its charges."""
    return {chunk: invoice_sums_of(subtotals_of(rated_chunk(chunk))) for chunk in chunks}


def sums_of_charges_by_chunk(engine: Engine) -> dict[int, tuple[int, ...]]:
    figures = [func.count(), *(func.sum(getattr(Charge, name)) for name in INVOICE_SUMS[1:])]
    with engine.connect() as connection:
        rows = connection.execute(select(Charge.chunk, *figures).group_by(Charge.chunk)).all()
    return {row[0]: tuple(int(value) for value in row[1:]) for row in rows}


def test_applying_a_chunk_stores_its_charges_and_mark_with_its_invoice_sums(
    engine: Engine,
) -> None:
    add_batch(engine, "b1", transactions=50)
    ids = CountingIds()

    assert apply(engine, 0, ids) is True

    with Session(engine) as session:
        stored = session.scalars(select(Charge).order_by(Charge.order_id)).all()
        mark = session.scalars(select(AppliedChunk)).one()
    assert [c.order_id for c in stored] == list(range(1, 51))
    first, expected = stored[0], rated_chunk(0)[0]
    assert (first.transaction_id, first.customer_id, first.quantity, first.total) == (
        expected.charge.transaction_id,
        expected.charge.customer_id,
        expected.charge.quantity,
        expected.charge.total,
    )
    assert first.occurred_at == expected.occurred_at
    assert first.currency == "EUR"
    assert (first.batch_id, first.chunk) == ("b1", 0)
    assert (mark.batch_id, mark.chunk, mark.transactions, mark.processor) == ("b1", 0, 50, "proc-1")
    # The mark carries the chunk's partial id checksum, from the ids that were loaded.
    assert join_sums(mark.id_checksum_high, mark.id_checksum_low) == id_checksum_of(
        c.transaction_id for c in stored
    )
    assert is_applied(engine, "b1", 0)
    # ... and the chunk's invoice sums, as the processor sent them; invoices wait for the close.
    assert mark_sums(engine) == expected_sums([0]) == sums_of_charges_by_chunk(engine)
    assert invoices(engine) == {}


def test_the_mark_carries_the_checksum_the_processor_sent_with_the_rows(engine: Engine) -> None:
    """The processor hashes the ids; the reducer, which every result passes, does not."""
    add_batch(engine, "b1", transactions=50)
    charges = rated_chunk(0)
    sent = (id_checksum_of(row.charge.transaction_id for row in charges) + 1) % 2**64

    applied = apply_rows(
        engine,
        batch_id="b1",
        chunk=0,
        rows=[(utc_text(row.occurred_at), *charge_values(row.charge)) for row in charges],
        invoice_sums=invoice_sums_of(subtotals_of(charges)),
        currency="EUR",
        allocator=CountingIds(),
        processor="proc-1",
        id_checksum=sent,  # not the rows' own: shows which one the mark takes
    )

    assert applied is True
    with Session(engine) as session:
        mark = session.scalars(select(AppliedChunk)).one()
    assert join_sums(mark.id_checksum_high, mark.id_checksum_low) == sent


def test_applying_the_same_chunk_again_changes_nothing(engine: Engine) -> None:
    add_batch(engine, "b1")
    ids = CountingIds()
    apply(engine, 0, ids)

    assert apply(engine, 0, ids) is False

    assert count(engine, Charge) == 50
    assert count(engine, AppliedChunk) == 1
    assert mark_sums(engine) == expected_sums([0]), "sums counted twice"
    assert ids.taken == 50, "a redelivery spends no order ids"


def test_each_chunks_mark_carries_the_sums_of_its_own_charges(engine: Engine) -> None:
    add_batch(engine, "b1", chunks=4)
    ids = CountingIds()

    for chunk in (2, 0, 3, 1, 2):  # any order, with a redelivery
        apply(engine, chunk, ids)

    assert count(engine, Charge) == 200
    assert mark_sums(engine) == expected_sums([0, 1, 2, 3]) == sums_of_charges_by_chunk(engine)
    assert invoices(engine) == {}


class RendezvousIds(CountingIds):
    """Holds each caller until all have passed the reducer's "already applied?" check."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self._everyone_checked = threading.Barrier(parties)

    def take(self, count: int) -> list[int]:
        self._everyone_checked.wait(timeout=30)
        return super().take(count)


def test_two_controllers_applying_one_chunk_at_once_apply_it_once(engine: Engine) -> None:
    add_batch(engine, "b1")
    ids = RendezvousIds(parties=2)
    outcomes: list[bool] = []

    def controller() -> None:
        outcomes.append(apply(engine, 0, ids))

    threads = [threading.Thread(target=controller) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == [False, True]
    assert ids.taken == 100, "both got past the cheap check: the race really happened"
    assert count(engine, Charge) == 50
    assert count(engine, AppliedChunk) == 1
    assert mark_sums(engine) == expected_sums([0]) == sums_of_charges_by_chunk(engine)


def test_controllers_applying_different_chunks_at_once_all_land(engine: Engine) -> None:
    add_batch(engine, "b1", chunks=12)
    ids = CountingIds()
    errors: list[BaseException] = []

    def controller(chunks: range) -> None:
        try:
            for chunk in chunks:
                assert apply(engine, chunk, ids)
        except BaseException as error:  # collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=controller, args=(range(i, 12, 4),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert count(engine, Charge) == 600
    assert mark_sums(engine) == expected_sums(range(12)) == sums_of_charges_by_chunk(engine)


def test_a_chunk_repeating_another_chunks_transaction_is_rolled_back_whole(
    engine: Engine,
) -> None:
    add_batch(engine, "b1")
    ids = CountingIds()
    apply(engine, 0, ids)
    clash = rated_chunk(0)[:1] + rated_chunk(1)[1:]  # t0-0 again, under chunk 1

    with pytest.raises(IntegrityError):
        apply_chunk(
            engine,
            batch_id="b1",
            chunk=1,
            charges=clash,
            subtotals=subtotals_of(clash),
            currency="EUR",
            allocator=ids,
            processor="proc-1",
        )

    assert not is_applied(engine, "b1", 1), "the mark went with the rest of the transaction"
    assert count(engine, Charge) == 50
    assert mark_sums(engine) == expected_sums([0])


def test_a_chunk_of_an_unknown_batch_is_an_error_not_a_duplicate(engine: Engine) -> None:
    with pytest.raises(IntegrityError):
        apply(engine, 0, CountingIds(), batch_id="never-recorded")

    assert count(engine, AppliedChunk) == 0


def test_invoice_sums_of_the_wrong_width_are_refused_and_leave_nothing(engine: Engine) -> None:
    add_batch(engine, "b1")
    rows = [(utc_text(row.occurred_at), *charge_values(row.charge)) for row in rated_chunk(0)]
    short = [1] * (len(INVOICE_SUMS) - 1)

    with pytest.raises(ValueError, match="invoice sums must be 7 figures"):
        apply_rows(
            engine,
            batch_id="b1",
            chunk=0,
            rows=rows,
            invoice_sums=short,
            currency="EUR",
            allocator=CountingIds(),
            processor="proc-1",
        )

    assert not is_applied(engine, "b1", 0)
    assert count(engine, Charge) == 0


class GappedIds:
    """Order ids in two ranges with a gap, as the allocator hands out a chunk that
    outgrew the range at hand: 20 from the first, the rest from a new one."""

    def take(self, count: int) -> list[int]:
        return [*range(1, 21), *range(1_001, 1_001 + count - 20)]


def test_a_result_image_lands_row_for_row_with_its_order_ids_across_ranges(
    engine: Engine,
) -> None:
    add_batch(engine, "b1", transactions=50)
    charges = rated_chunk(0)
    rated = result_rows("b1", 0, charges)
    assert isinstance(rated.rows, ResultTable)

    assert apply_rows(
        engine,
        batch_id="b1",
        chunk=0,
        rows=rated.rows,
        invoice_sums=rated.invoice_sums,
        currency="EUR",
        allocator=GappedIds(),
        processor="proc-1",
        id_checksum=rated.id_checksum,
    )

    with Session(engine) as session:
        stored = session.scalars(select(Charge).order_by(Charge.order_id)).all()
    assert [c.order_id for c in stored] == GappedIds().take(50)
    assert [c.transaction_id for c in stored] == [row.charge.transaction_id for row in charges]
    assert [c.occurred_at for c in stored] == [row.occurred_at for row in charges]
    assert [tuple(getattr(c, f) for f in CHARGE_FIELDS) for c in stored] == [
        charge_values(row.charge) for row in charges
    ]
    assert mark_sums(engine) == expected_sums([0]) == sums_of_charges_by_chunk(engine)
    if engine.dialect.name == "sqlite":
        # copied inside SQLite: the rows were never made into Python tuples
        assert "_rows" not in vars(rated.rows)


def test_the_reducer_writes_no_invoice_whatever_the_customers_of_a_chunk(engine: Engine) -> None:
    """A chunk costs the reducer its mark and its rows, not a row per customer: the close
    writes the batch's invoices once (controller.reconciliation)."""
    add_batch(engine, "b1", chunks=2)
    ids = CountingIds()
    results = [result_rows("b1", chunk, rated_chunk(chunk, size=300)) for chunk in (0, 1)]

    for chunk, rated in (*enumerate(results), (0, results[0])):  # with a redelivery
        apply_rows(
            engine,
            batch_id="b1",
            chunk=chunk,
            rows=rated.rows,
            invoice_sums=rated.invoice_sums,
            currency="EUR",
            allocator=ids,
            processor="proc-1",
            id_checksum=rated.id_checksum,
        )

    assert invoices(engine) == {}
    assert mark_sums(engine) == sums_of_charges_by_chunk(engine)
    assert [rated.invoice_sums[0] for rated in results] == [300, 300]
