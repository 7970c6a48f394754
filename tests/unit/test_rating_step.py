"""The rating step's admission: it asks for a batch's state until the batch is accepted,
and waits for room in the process's row budget before it fetches a chunk."""

from __future__ import annotations

import hashlib
import threading
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from processor.rating_step import BatchNotYetAcceptedError, RatingStep
from processor.row_budget import RowBudget
from processor.worker import rating_step
from shared.contracts.batch_records import BatchState
from shared.contracts.blob_compression import decompress
from shared.contracts.chunk_payload import encode_chunk, payload_blob_name
from shared.contracts.chunk_result import ResultFormat, decode_result_rows
from shared.contracts.messages import ChunkResult, WorkItem
from shared.domain.pricebook import Pricebook, sample_pricebook
from shared.domain.transactions import Transaction
from shared.settings import Settings
from shared.storage import open_storage
from shared.storage.ports import Blob, BlobProperties
from tests.support.memory_blobs import MemoryBlobContainer
from tests.support.memory_queue import MemoryQueue


class CountingStates:
    """A batch-state source that answers from a script and counts the questions."""

    def __init__(self, *answers: BatchState) -> None:
        self.answers = list(answers)
        self.asked = 0

    def state(self, batch_id: str) -> BatchState:
        self.asked += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class OneBook:
    def get(self, version: str) -> Pricebook:
        return sample_pricebook()


def work_item(payloads: MemoryBlobContainer, batch_id: str, chunk: int) -> str:
    tx = Transaction("t-1", "c-1", "API-CALLS", 3, "EU", datetime(2025, 1, 1, tzinfo=UTC))
    data = encode_chunk(batch_id, chunk, [(2, tx)])
    payloads.put(payload_blob_name(batch_id, chunk), data)
    return WorkItem(
        batch_id=batch_id,
        chunk=chunk,
        priority="normal",
        payload_blob=payload_blob_name(batch_id, chunk),
        first_line=2,
        last_line=2,
        transactions=1,
        sha256=hashlib.sha256(data).hexdigest(),
        pricebook_version="v",
    ).to_text()


def make_step(
    states: CountingStates,
    *,
    payloads: MemoryBlobContainer | None = None,
    results: MemoryBlobContainer | None = None,
    budget: RowBudget | None = None,
    turns: AbstractContextManager[object] | None = None,
    result_format: ResultFormat = "sqlite",
) -> tuple[RatingStep, MemoryBlobContainer, MemoryQueue]:
    payloads = payloads or MemoryBlobContainer("payloads")
    output = MemoryQueue("results")
    output.create()
    step = RatingStep(
        payloads=payloads,
        results=results or MemoryBlobContainer("results"),
        output=output,
        pricebooks=OneBook(),
        batches=states,
        instance_id="test",
        budget=budget or RowBudget(64_000),
        turns=turns,
        result_format=result_format,
    )
    return step, payloads, output


def test_an_accepted_batch_is_looked_up_once_for_all_its_chunks() -> None:
    states = CountingStates("accepted")
    step, payloads, output = make_step(states)

    for chunk in range(3):
        step.handle(work_item(payloads, "b-1", chunk))

    assert states.asked == 1
    results = [ChunkResult.from_text(m.content) for m in output.peek()]
    assert sorted(r.chunk for r in results) == [0, 1, 2]


def test_a_pending_batch_is_asked_again_until_it_is_accepted() -> None:
    states = CountingStates("pending", "accepted")
    step, payloads, output = make_step(states)
    text = work_item(payloads, "b-2", 0)

    with pytest.raises(BatchNotYetAcceptedError):
        step.handle(text)
    step.handle(text)
    step.handle(work_item(payloads, "b-2", 1))

    assert states.asked == 2  # pending, then accepted, then remembered
    assert output.approximate_count() == 2


class HeldPayloads(MemoryBlobContainer):
    """Payloads whose first chunk's fetch waits to be let go; records when fetches run."""

    def __init__(self) -> None:
        super().__init__("payloads")
        self.events: list[str] = []
        self.first_entered = threading.Event()
        self.second_left = threading.Event()
        self.let_go = threading.Event()

    def get(self, blob: str) -> Blob:
        self.events.append(f"enter {blob[-1]}")
        if blob.endswith("0"):
            self.first_entered.set()
            self.let_go.wait(10)
        self.events.append(f"leave {blob[-1]}")
        if blob.endswith("1"):
            self.second_left.set()
        return super().get(blob)


@pytest.mark.parametrize(("limit", "overlap"), [(1, False), (2, True)])
def test_handlers_fetch_at_once_only_while_the_row_budget_has_room(
    limit: int, overlap: bool
) -> None:
    payloads = HeldPayloads()
    step, _, output = make_step(
        CountingStates("accepted"), payloads=payloads, budget=RowBudget(limit)
    )
    first, second = (work_item(payloads, "b-3", chunk) for chunk in (0, 1))  # 1 row each
    handlers = [threading.Thread(target=step.handle, args=(text,)) for text in (first, second)]
    handlers[0].start()
    assert payloads.first_entered.wait(10)
    handlers[1].start()
    # With room, the second fetches while the first is held (wait as long as that takes);
    # without, it must not within a moment the first is held for.
    assert payloads.second_left.wait(10 if overlap else 0.2) == overlap
    payloads.let_go.set()
    for handler in handlers:
        handler.join(10)

    assert output.approximate_count() == 2
    expected = (
        ["enter 0", "enter 1", "leave 1", "leave 0"]
        if overlap
        else ["enter 0", "leave 0", "enter 1", "leave 1"]
    )
    assert payloads.events == expected


class RecordedTurn(AbstractContextManager[object]):
    """A turn that notes when a handler takes and gives it up, beside the step's I/O."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def __enter__(self) -> object:
        self.events.append("turn taken")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.events.append("turn given up")


class RecordedBlobs(MemoryBlobContainer):
    def __init__(self, name: str, events: list[str]) -> None:
        super().__init__(name)
        self.events = events

    def get(self, blob: str) -> Blob:
        self.events.append(f"get {self.name}")
        return super().get(blob)

    def put(self, blob: str, data: bytes, **conditions: Any) -> BlobProperties:
        self.events.append(f"put {self.name}")
        return super().put(blob, data, **conditions)


def test_a_handler_rates_in_its_turn_and_fetches_and_stores_outside_it() -> None:
    # Rating holds the GIL: handlers of one process rating at once only interleave, so a
    # small first chunk would finish as late as the large ones beside it. In turns, each
    # chunk is rated straight through, while the others' storage round trips go on.
    events: list[str] = []
    payloads = RecordedBlobs("payloads", events)
    step, _, output = make_step(
        CountingStates("accepted"),
        payloads=payloads,
        results=RecordedBlobs("results", events),
        turns=RecordedTurn(events),
    )
    text = work_item(payloads, "b-4", 0)
    events.clear()
    step.handle(text)
    assert events == ["get payloads", "turn taken", "turn given up", "put results"]
    assert output.approximate_count() == 1


@pytest.mark.parametrize("turns", [True, False])
def test_the_processor_rates_in_turns_as_its_settings_say(turns: bool, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, processor_rating_turns=turns)
    assert rating_step(settings, open_storage(settings), "test").rates_in_turns is turns


@pytest.mark.parametrize(
    ("result_format", "begins"), [("sqlite", b"SQLite format 3\x00"), ("json", b"{")]
)
def test_results_are_written_in_the_format_asked_for(
    result_format: ResultFormat, begins: bytes
) -> None:
    results = MemoryBlobContainer("results")
    step, payloads, _ = make_step(
        CountingStates("accepted"), results=results, result_format=result_format
    )

    step.handle(work_item(payloads, "b-1", 0))

    (blob,) = results.list()
    data = results.get(blob.name).data
    assert decompress(data).startswith(begins)
    assert [row[1] for row in decode_result_rows(data).rows] == ["t-1"]


@pytest.mark.parametrize("result_format", ["sqlite", "json"])
def test_the_processor_writes_the_result_format_its_settings_name(
    result_format: ResultFormat, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, result_format=result_format)
    assert rating_step(settings, open_storage(settings), "test").result_format == result_format
