"""The controller's handler: one message of the output queue in, the warehouse up to date.

Two kinds of message arrive on the output queue (:mod:`shared.contracts.messages`):

``ChunkResult`` (a rated chunk, by claim check)
    skip it if the chunk's applied mark exists (a redelivery) → fetch the result blob →
    then, in the handler's turn on SQLite (:mod:`controller.write_turns`): check its sha256
    → make sure the batch has its ``batches`` row → apply it in one database transaction
    (:func:`controller.reducer.apply_rows`).
``ChunkFailed`` (``kind = "chunk-failed"``: the work item went to a poison queue)
    record the failed chunk (:mod:`controller.failed_chunks`).
``BatchAbandoned`` (``kind = "batch-abandoned"``: the initiator gave up on a batch before
    accepting it) record its ``billing.batch.abandoned`` event in the outbox, once
    (:func:`controller.events.outbox.record_abandoned`); nothing else: the warehouse never
    knew the batch.

Then, for the first two, tally the batch, close it when every chunk is settled
(:mod:`controller.completion`) and copy the tally or the outcome into the batch record
(:mod:`controller.progress`). Only when all of that returned does the listener delete the
message; if anything raises, the message reappears and the whole sequence runs again,
which is harmless: every step is idempotent and a redelivered result is skipped by its mark.

A batch's trigger reaches the controller too (:meth:`ResultHandler.expect`): it creates the
batch's ``batches`` row and reserves order ids then, while the processors rate its first
chunk, rather than on the way of that chunk's result.

A result message that keeps failing is poisoned by the listener; :meth:`ResultHandler.on_poison`
then records its chunk as failed (unless it was applied after all), so the batch still closes.

Next step (docs/walkthrough.md): ``controller.reducer``, which applies a chunk exactly once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass

from sqlalchemy import Engine

from controller.batch_rows import BatchRows
from controller.completion import BatchCompletion, Settlement
from controller.events.outbox import record_abandoned
from controller.failed_chunks import FailedChunks
from controller.progress import BatchRecordUpdates, progress_due
from controller.reducer import OrderIdsInUseError, apply_rows, is_applied
from shared.contracts.batch_records import BatchRecords
from shared.contracts.chunk_result import RatedRows, decode_result_rows
from shared.contracts.messages import BatchAbandoned, ChunkFailed, ChunkResult
from shared.coordination.ids import OrderIdAllocator
from shared.listener import Lease
from shared.listener.source import poison_queue
from shared.storage.ports import BlobContainer, QueueMessage
from shared.tracing import APPLIED, BATCH_ID, CHUNK, QUEUE_SYSTEM, AttributeValue, consumer_span

log = logging.getLogger(__name__)

OutputMessage = ChunkResult | ChunkFailed | BatchAbandoned


class ResultIntegrityError(RuntimeError):
    """The result blob is not the one the message describes."""


class UnknownBatchError(RuntimeError):
    """A result for a batch that has no record: never accepted, or its record was removed."""


def parse_output_message(text: str) -> OutputMessage:
    """A ``ChunkFailed`` or ``BatchAbandoned`` if its ``kind`` says so, else a
    ``ChunkResult`` (which has no kind)."""
    document = json.loads(text)
    kind = document.get("kind") if isinstance(document, dict) else None
    if kind == "chunk-failed":
        return ChunkFailed.model_validate(document)
    if kind == "batch-abandoned":
        return BatchAbandoned.model_validate(document)
    return ChunkResult.model_validate(document)


@dataclass
class ControllerCounters:
    """What this process did, for :meth:`ControllerWorker.snapshot`."""

    chunks_applied: int = 0
    chunks_skipped: int = 0
    failures_recorded: int = 0
    batches_closed: int = 0


class ResultHandler:
    """Applies output-queue messages to the warehouse; safe to call from many threads."""

    def __init__(
        self,
        *,
        engine: Engine,
        results: BlobContainer,
        records: BatchRecords,
        failures: FailedChunks,
        allocator: OrderIdAllocator,
        turns: AbstractContextManager[object],
    ) -> None:
        """``turns``: what a handler holds while it decodes and writes a result
        (:func:`controller.write_turns.write_turns`)."""
        self._engine = engine
        self._results = results
        self._records = records
        self._failures = failures
        self._allocator = allocator
        self._rows = BatchRows(engine)
        self._completion = BatchCompletion(engine, self._rows, failures)
        self._updates = BatchRecordUpdates(records)
        self._lock = threading.Lock()
        self._counters = ControllerCounters()
        self._turns = turns

    def counters(self) -> ControllerCounters:
        with self._lock:
            return ControllerCounters(**vars(self._counters))

    # --- the listener's callbacks ---------------------------------------------------------
    def handle(self, lease: Lease) -> None:
        self.handle_text(lease.content)

    def on_poison(self, message: QueueMessage, queue_name: str, last_error: str) -> None:
        """A result message gave up: its chunk is failed, unless it was applied after all."""
        try:
            parsed = parse_output_message(message.content)
        except ValueError:
            log.error("unreadable message %s poisoned from %s", message.id, queue_name)
            return
        if isinstance(parsed, ChunkFailed):
            self.chunk_failed(parsed)
            return
        if isinstance(parsed, BatchAbandoned):
            # Its event is lost unless the initiator's sweeper sends it again (it does only
            # while the batch record is still there): logged for an operator.
            log.error("abandoned batch %s not recorded: %s", parsed.batch_id, last_error)
            return
        if is_applied(self._engine, parsed.batch_id, parsed.chunk):
            self.settle(parsed.batch_id)
            return
        self.chunk_failed(
            ChunkFailed(
                batch_id=parsed.batch_id,
                chunk=parsed.chunk,
                poison_queue=poison_queue(queue_name),
                error=f"result not applied: {last_error}",
            )
        )

    def expect(self, batch_id: str) -> None:
        """A trigger announced ``batch_id``: before its first result comes, create its
        ``batches`` row and reserve order ids, which that result would otherwise wait for
        (a table read, a warehouse write and two blob requests: 60-70 ms of a demo's first
        apply). Best effort: the result does whatever is still missing itself."""
        try:
            with self._turns:
                self._ensure_row(batch_id)
            self._allocator.prefetch()
        except Exception:
            log.warning(
                "could not prepare for batch %s; its first result will", batch_id, exc_info=True
            )

    # --- the work ---------------------------------------------------------------------------
    def handle_text(self, text: str) -> None:
        message = parse_output_message(text)
        if isinstance(message, ChunkFailed):
            self.chunk_failed(message)
        elif isinstance(message, BatchAbandoned):
            self.batch_abandoned(message)
        else:
            self.chunk_result(message)

    def chunk_result(self, message: ChunkResult) -> bool:
        """Apply one result; True if this call applied it, False if it already was."""
        attributes: dict[str, AttributeValue] = {BATCH_ID: message.batch_id, CHUNK: message.chunk}
        with consumer_span(
            "reduce chunk", parent=message.trace, system=QUEUE_SYSTEM, attributes=attributes
        ) as current:
            applied = self._apply(message)
            current.set_attribute(APPLIED, applied)
            return applied

    def _apply(self, message: ChunkResult) -> bool:
        applied = False
        if not is_applied(self._engine, message.batch_id, message.chunk):
            data = self._results.get(message.result_blob).data  # I/O: not in the turn
            with self._turns:
                rated = self._verify(message, data)
                self._ensure_row(message.batch_id)
                try:
                    applied = self._apply_rows(message, rated)
                except OrderIdsInUseError as collision:
                    # The counter blob is behind the warehouse: move it past the warehouse's
                    # highest order id (once, whoever notices first) and apply again.
                    log.warning("%s; moving the counter past it and applying again", collision)
                    self._allocator.recheck_floor()
                    applied = self._apply_rows(message, rated)
        self._count("chunks_applied" if applied else "chunks_skipped")
        if not applied:
            log.info("chunk %s/%d was already applied: skipped", message.batch_id, message.chunk)
        self.settle(message.batch_id)
        return applied

    def _apply_rows(self, message: ChunkResult, rated: RatedRows) -> bool:
        return apply_rows(
            self._engine,
            batch_id=message.batch_id,
            chunk=message.chunk,
            rows=rated.rows,
            invoice_sums=rated.invoice_sums,
            currency=rated.currency,
            allocator=self._allocator,
            processor=message.processor,
            id_checksum=rated.id_checksum,
        )

    def chunk_failed(self, message: ChunkFailed) -> None:
        """Record a failed chunk (idempotent) and settle its batch."""
        log.error(
            "chunk %s/%d failed (%s): %s",
            message.batch_id,
            message.chunk,
            message.poison_queue,
            message.error,
        )
        self._failures.record(
            message.batch_id,
            message.chunk,
            poison_queue=message.poison_queue,
            error=message.error,
        )
        self._count("failures_recorded")
        try:
            self._ensure_row(message.batch_id)
        except UnknownBatchError:
            log.warning("failed chunk %s/%d has no batch record", message.batch_id, message.chunk)
            return
        self._rows.note_failure(message.batch_id)
        self.settle(message.batch_id)

    def batch_abandoned(self, message: BatchAbandoned) -> bool:
        """Record an abandoned batch's event; True if this call recorded it, False if an
        earlier copy of the message did."""
        with self._turns:
            recorded = record_abandoned(self._engine, message)
        if recorded:
            log.warning("batch %s abandoned (%s)", message.batch_id, message.reason)
        return recorded

    def settle(self, batch_id: str) -> Settlement | None:
        """Tally the batch, close it if settled, and bring its record up to date."""
        settlement = self._completion.settle(batch_id)
        if settlement is None:
            return None
        if settlement.closed_now:
            self._count("batches_closed")
        tally = settlement.tally
        if settlement.row.closed or progress_due(tally.settled, tally.total):
            self._updates.apply(settlement)
        return settlement

    # --- steps ------------------------------------------------------------------------------
    def _verify(self, message: ChunkResult, data: bytes) -> RatedRows:
        """The result blob's rows, once its bytes proved to be what the message describes."""
        digest = hashlib.sha256(data).hexdigest()
        if digest != message.sha256:
            raise ResultIntegrityError(
                f"result blob {message.result_blob} has sha256 {digest}, "
                f"the message says {message.sha256}"
            )
        rated = decode_result_rows(data)
        if (rated.batch_id, rated.chunk, len(rated.rows)) != (
            message.batch_id,
            message.chunk,
            message.transactions,
        ):
            raise ResultIntegrityError(
                f"result blob {message.result_blob} holds chunk {rated.batch_id}/{rated.chunk} "
                f"with {len(rated.rows)} charges; the message says "
                f"{message.batch_id}/{message.chunk} with {message.transactions}"
            )
        return rated

    def _ensure_row(self, batch_id: str) -> None:
        if self._rows.exists(batch_id):
            return
        stored = self._records.find(batch_id)
        if stored is None:
            raise UnknownBatchError(f"batch {batch_id} has no batch record")
        self._rows.ensure(stored.record)
        self._updates.remember(stored)  # the first progress write needs no read of its own

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self._counters, name, getattr(self._counters, name) + 1)
