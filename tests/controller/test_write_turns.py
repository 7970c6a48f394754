"""Handlers take turns at a SQLite warehouse: decode and write one result at a time.

Run on both stacks (embedded + SQLite, Azurite + PostgreSQL): on SQLite the turn is a lock,
on PostgreSQL there is none.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import TracebackType

import pytest
from sqlalchemy import Engine, func, select

from controller.results import ResultIntegrityError
from controller.worker import build_result_handler, order_id_allocator
from controller.write_turns import write_turns
from shared.contracts.messages import ChunkResult
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse.models import Charge
from tests.controller.batches import make_transactions, publish_batch

#: How long a handler that should be let in may take to get in (generous: a loaded machine).
ENTER_TIMEOUT_SECONDS = 10.0
#: How long a handler that must wait is watched for not getting in.
WAITING_SECONDS = 0.3


@pytest.mark.parametrize("enabled", [True, False], ids=["turns", "turns off"])
def test_a_second_handler_waits_for_the_turn_on_sqlite_only_and_only_with_turns(
    warehouse: Engine, enabled: bool
) -> None:
    turns = write_turns(warehouse, enabled=enabled)
    entered = threading.Event()

    def second_handler() -> None:
        with turns:
            entered.set()

    with turns:
        other = threading.Thread(target=second_handler)
        other.start()
        if enabled and warehouse.dialect.name == "sqlite":
            assert not entered.wait(WAITING_SECONDS), "a second writer got in during a turn"
        else:
            assert entered.wait(ENTER_TIMEOUT_SECONDS), "this handler should not have waited"
    assert entered.wait(ENTER_TIMEOUT_SECONDS), "the second handler never got its turn"
    other.join(ENTER_TIMEOUT_SECONDS)


@dataclass
class RecordingTurns:
    """A turn that notes what the warehouse held as each turn began and ended, and why it
    ended (the exception type, or None)."""

    warehouse: Engine
    batch_id: str
    turns: list[tuple[int, int | None, type[BaseException] | None]] = field(default_factory=list)

    def __enter__(self) -> RecordingTurns:
        self.turns.append((self._charges(), None, None))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        started, _, _ = self.turns[-1]
        self.turns[-1] = (started, self._charges(), kind)

    def _charges(self) -> int:
        query = select(func.count()).where(Charge.batch_id == self.batch_id)
        with self.warehouse.connect() as connection:
            return int(connection.scalar(query) or 0)


def test_a_result_is_checked_and_written_within_one_turn_and_a_redelivery_takes_none(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    transactions = make_transactions(40, seed=5)
    batch = publish_batch(storage, settings, "b-turns", transactions, chunk_size=20)
    turns = RecordingTurns(warehouse, batch.batch_id)
    allocator = order_id_allocator(settings, storage)
    handler = build_result_handler(settings, storage, warehouse, allocator, turns=turns)

    first, second = batch.results
    handler.handle_text(first.to_text())
    handler.handle_text(first.to_text())  # redelivered: skipped before any turn
    tampered = ChunkResult.model_validate({**second.model_dump(), "sha256": "0" * 64})
    with pytest.raises(ResultIntegrityError):
        handler.handle_text(tampered.to_text())
    handler.handle_text(second.to_text())

    assert turns.turns == [
        (0, 20, None),  # the first chunk's charges landed inside its turn
        (20, 20, ResultIntegrityError),  # the blob check runs inside the turn too
        (20, 40, None),
    ]
