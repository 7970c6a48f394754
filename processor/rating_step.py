"""The processor's map step: one work item in, one rated chunk out.

For each work item the listener hands over: check that its batch was accepted, fetch the
chunk payload (claim check), verify it, rate every transaction with the pricebook version
the batch pinned, write the result blob, and send a small result message to the output
queue. Only then does the listener delete the work item — so a crash anywhere here means
the item reappears and is rated again, which is harmless: the result blob name is fixed per
chunk and the controller applies each chunk once.

A process's handlers take turns for the part between the fetch and the store: checking,
decoding, rating and encoding hold the GIL, so chunks rated at once only interleave, and a
batch's small first chunk (2,000 rows) finished as late as the 32,000-row ones received with
it. In turns each chunk is rated straight through while the other handlers' storage round
trips go on, and the controller gets its first results sooner.

Next step (docs/walkthrough.md): ``processor.integer_rater`` (the rating itself), then
``controller.worker``, which takes the result message sent here.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from processor.integer_rater import IntegerRater
from processor.row_budget import RowBudget
from shared.contracts.batch_records import BatchState
from shared.contracts.chunk_payload import decode_chunk_rows
from shared.contracts.chunk_result import ResultFormat, encode_result_rows, result_blob_name
from shared.contracts.messages import ChunkResult, WorkItem
from shared.domain.pricebook import Pricebook
from shared.listener.retry import RetryLater, growing_delay
from shared.storage.ports import BlobContainer, Queue
from shared.tracing import (
    BATCH_ID,
    CHUNK,
    QUEUE_SYSTEM,
    TRANSACTIONS,
    AttributeValue,
    consumer_span,
    producer_span,
    trace_context,
)

log = logging.getLogger(__name__)

#: How many accepted batch ids a processor remembers.
ACCEPTED_MEMORY = 1024
#: How many pricebook versions' raters a processor keeps.
MAX_RATERS = 8


class PricebookSource(Protocol):
    def get(self, version: str) -> Pricebook: ...


class BatchStates(Protocol):
    """Tells whether a batch became ``accepted`` (intake's crash-safe order)."""

    def state(self, batch_id: str) -> BatchState: ...


class BatchNotYetAcceptedError(RetryLater):
    """The batch is still being accepted: bring the item back in a moment."""


class ChunkIntegrityError(RuntimeError):
    """The payload blob does not match the work item's checksum."""


class RatingStep:
    """Rates the chunk a work item points to; the listener's handler in the processor."""

    def __init__(
        self,
        *,
        payloads: BlobContainer,
        results: BlobContainer,
        output: Queue,
        pricebooks: PricebookSource,
        batches: BatchStates,
        instance_id: str,
        budget: RowBudget,
        turns: AbstractContextManager[object] | None = None,
        result_format: ResultFormat = "sqlite",
    ) -> None:
        """``budget``: the transactions this process rates at once, shared by its handlers;
        ``turns``: what a handler holds while it rates (a lock per process when
        ``BILLING_PROCESSOR_RATING_TURNS``; none: handlers rate at once); ``result_format``:
        how results are written (``BILLING_RESULT_FORMAT``)."""
        self._payloads = payloads
        self._results = results
        self._output = output
        self._pricebooks = pricebooks
        self._batches = batches
        self._instance_id = instance_id
        self._budget = budget
        self._turns = nullcontext() if turns is None else turns
        self.result_format = result_format
        # Once accepted, a batch never goes back: remembering it saves one table read per
        # chunk after the first (bounded: the oldest are forgotten first).
        self._accepted: OrderedDict[str, None] = OrderedDict()
        # One rater per pricebook version (a handful at most): its tables are built once.
        self._raters: OrderedDict[str, IntegerRater] = OrderedDict()

    @property
    def rates_in_turns(self) -> bool:
        """Whether handlers take turns to rate (``BILLING_PROCESSOR_RATING_TURNS``)."""
        return not isinstance(self._turns, nullcontext)

    def handle(self, text: str, dequeue_count: int = 1) -> int:
        """Rate the work item ``text``; returns how many transactions it rated (0: dropped)."""
        item = WorkItem.from_text(text)
        attributes: dict[str, AttributeValue] = {
            BATCH_ID: item.batch_id,
            CHUNK: item.chunk,
            TRANSACTIONS: item.transactions,
        }
        with consumer_span(
            "rate chunk", parent=item.trace, system=QUEUE_SYSTEM, attributes=attributes
        ):
            return self._handle(item, dequeue_count)

    def _handle(self, item: WorkItem, dequeue_count: int) -> int:
        state = self._state(item.batch_id)
        if state == "gone":
            # Never accepted (the initiator crashed mid-way and the sweeper removed it):
            # dropping the item is correct, there is nothing to rate.
            log.warning("dropping chunk %s/%d: batch was never accepted", item.batch_id, item.chunk)
            return 0
        if state == "pending":
            # Intake enqueues before it marks the batch accepted (its crash-safe order), so a
            # busy processor can see an item a moment early.
            raise BatchNotYetAcceptedError(
                f"batch {item.batch_id} is not accepted yet", delay=growing_delay(dequeue_count)
            )
        with self._budget.hold(item.transactions):
            result = self.rate(item)
        with producer_span(
            "send result", system=QUEUE_SYSTEM, destination=self._output.name, count=1
        ):
            # The result carries the send's context: the chunk's reduce is its child.
            self._output.send(result.model_copy(update={"trace": trace_context()}).to_text())
        return item.transactions

    def _state(self, batch_id: str) -> BatchState:
        if batch_id in self._accepted:
            return "accepted"
        state = self._batches.state(batch_id)
        if state == "accepted":
            self._accepted[batch_id] = None
            if len(self._accepted) > ACCEPTED_MEMORY:
                self._accepted.popitem(last=False)
        return state

    def _rater(self, version: str) -> IntegerRater:
        rater = self._raters.get(version)
        if rater is None:
            rater = self._raters[version] = IntegerRater(self._pricebooks.get(version))
            if len(self._raters) > MAX_RATERS:
                self._raters.popitem(last=False)
        return rater

    def rate(self, item: WorkItem) -> ChunkResult:
        """Rate one chunk and store its result blob; returns the message for the controller."""
        data = self._payloads.get(item.payload_blob).data  # I/O: not in the turn
        with self._turns:
            digest = hashlib.sha256(data).hexdigest()
            if digest != item.sha256:
                raise ChunkIntegrityError(
                    f"payload {item.payload_blob} has sha256 {digest}, work item says {item.sha256}"
                )
            payload = decode_chunk_rows(data)
            rater = self._rater(item.pricebook_version)
            rows, sums = rater.rate_rows(payload.rows)
            blob = encode_result_rows(
                batch_id=item.batch_id,
                chunk=item.chunk,
                currency=rater.pricebook.currency,
                pricebook_version=item.pricebook_version,
                rows=rows,
                invoice_sums=sums,
                result_format=self.result_format,
            )
        name = result_blob_name(item.batch_id, item.chunk)
        self._results.put(name, blob)
        return ChunkResult(
            batch_id=item.batch_id,
            chunk=item.chunk,
            result_blob=name,
            transactions=len(rows),
            sha256=hashlib.sha256(blob).hexdigest(),
            processor=self._instance_id,
            trace=trace_context(),  # the rating span's; handle() sends it with its send span's
        )
