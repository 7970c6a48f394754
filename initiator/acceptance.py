"""Accepting a batch file: the story from ``POST /batches`` to the queues, top-down.

:meth:`BatchAcceptance.accept` runs in a worker thread, pulling the body as it goes:

1. With an ``Idempotency-Key`` that is already mapped to a live batch, the body is only
   hashed: same bytes → the earlier batch again (200), other bytes → 409.
2. The current pricebook is pinned to the new batch.
3. The parser validates every line; valid transactions are cut into chunks of
   ``chunk_size``, then twice that, and so on up to ``max_chunk_size`` (see
   :func:`growing_chunks`), each handed to the publication (payload blob) while the control
   totals accumulate.
4. Any problem → the publication is discarded (no trace) and the 4xx rejection raised.
5. Otherwise the publication commits: idempotency mapping, ``accepting`` record, work
   items, ``accepted`` record, trigger (order and crash safety: :mod:`initiator.publishing`).

Next step (docs/walkthrough.md): ``initiator.body`` (the body pulled block by block), then
``initiator.intake.reader`` (the validating parse) and ``initiator.publishing.publisher``.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from itertools import islice
from typing import TypeVar

from initiator.body import RequestBody
from initiator.body_replay import ReplayableBody
from initiator.idempotency import (
    IdempotencyConflictError,
    IdempotencyInProgressError,
    IdempotencyKeyTakenError,
    KeyEntry,
    hash_key,
)
from initiator.intake import parse_batch
from initiator.intake_helpers import IntakeHelpers
from initiator.publishing import BatchIntent, Publication, Publisher, is_orphan
from initiator.publishing.cleanup import abandon
from initiator.segmented_read import read_in_segments
from shared.contracts.batch_records import BatchRecord, utc_now
from shared.contracts.batch_status import UNFINISHED_INTAKE, AbandonReason, BatchStatus
from shared.domain.pricebook import Pricebook
from shared.domain.pricebook_store import PricebookStore
from shared.domain.priority import Priority
from shared.domain.transactions import ControlTotals, ControlTotalsBuilder
from shared.settings import Settings
from shared.tracing import BATCH_ID, PRIORITY, TRANSACTIONS, span

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchRequest:
    """What the HTTP request says about the batch, besides its body."""

    priority: Priority
    content_type: str | None
    content_encoding: str | None
    idempotency_key: str | None = None
    checkpoint: Callable[[], None] | None = None
    """Called while parsing; raises to stop the intake (the client has hung up)."""
    callback: str | None = None
    """A checked webhook URL for the batch's outcome (shared.events.callback_urls)."""
    allow_duplicate: bool = False
    """The sender means to bill a body accepted before a second time."""


@dataclass(frozen=True)
class Outcome:
    record: BatchRecord
    replayed: bool
    """True when an earlier request with the same Idempotency-Key created the batch."""


def new_batch_id() -> str:
    """Sortable by arrival and unguessable: ``20250102-030405-1a2b3c4d5e6f``."""
    return f"{utc_now():%Y%m%d-%H%M%S}-{secrets.token_hex(6)}"


class BatchAcceptance:
    def __init__(
        self,
        publisher: Publisher,
        pricebooks: PricebookStore,
        settings: Settings,
        *,
        helpers: IntakeHelpers | None = None,
    ) -> None:
        """``helpers``: processes that validate clean files in segments
        (:mod:`initiator.segmented_read`); None: one thread reads every batch."""
        self._publisher = publisher
        self._pricebooks = pricebooks
        self._settings = settings
        self._helpers = helpers

    def accept(self, body: RequestBody, request: BatchRequest) -> Outcome:
        """Read, validate and publish one batch. Raises ``BatchRejected`` for a bad file.

        In the batch's ``intake`` span, the root of its trace (its work items and trigger
        carry it on to the processors).
        """
        with span("intake", attributes={PRIORITY: request.priority}) as current:
            outcome = self._accept(body, request)
            current.set_attribute(BATCH_ID, outcome.record.batch_id)
            current.set_attribute(TRANSACTIONS, outcome.record.transactions)
            return outcome

    def _accept(self, body: RequestBody, request: BatchRequest) -> Outcome:
        key_hash = hash_key(request.idempotency_key) if request.idempotency_key else None
        if key_hash is not None:
            replayed = self._replay(key_hash, body, request.priority)
            if replayed is not None:
                return replayed
        version, pricebook = self._pricebooks.current()

        def begin() -> Publication:
            intent = BatchIntent(
                new_batch_id(),
                request.priority,
                version,
                utc_now(),
                key_hash,
                callback=request.callback,
                allow_duplicate=request.allow_duplicate,
            )
            return self._publisher.begin(intent)

        publication, totals = self._read_any_way(body, request, pricebook, begin)
        if request.checkpoint is not None:
            # The parser checks between blocks, but the helpers may validate for a good
            # while after the last block was read: a client gone meanwhile gets no batch.
            try:
                request.checkpoint()
            except Exception:
                publication.discard()
                raise
        try:
            record = publication.commit(totals, body_bytes=body.bytes_read, body_sha256=body.sha256)
        except IdempotencyKeyTakenError as taken:  # a concurrent twin won; ours was removed
            return self._answer_for(taken.entry, body.sha256, request.priority)
        log.info(
            "accepted batch %s: %d transactions in %d chunks (%s priority, pricebook %s)",
            record.batch_id,
            record.transactions,
            record.chunks,
            record.priority,
            record.pricebook_version,
        )
        return Outcome(record, replayed=False)

    def _read_any_way(
        self,
        body: RequestBody,
        request: BatchRequest,
        pricebook: Pricebook,
        begin: Callable[[], Publication],
    ) -> tuple[Publication, ControlTotals]:
        """Steps 3-4, with the helpers if there are any, else (or if the file is not clean
        for them) with the serial reader: the publication that holds the chunks, and the
        control totals."""
        if self._helpers is None:
            publication = begin()
            return publication, self._read(body, request, pricebook, publication)
        with ReplayableBody(body) as replayable:
            publication = begin()
            totals = self._read_in_segments(replayable, request, pricebook, publication)
            if totals is not None:
                return publication, totals
            publication.discard()
            discarded = publication.batch_id
            publication = begin()
            # The serial read publishes under a new batch id: name both, so that the
            # discarded attempt's id in earlier log lines leads to the batch that stands.
            log.info(
                "batch %s is read again by the serial reader as batch %s",
                discarded,
                publication.batch_id,
            )
            return publication, self._read(replayable.again(), request, pricebook, publication)

    def _read_in_segments(
        self,
        body: ReplayableBody,
        request: BatchRequest,
        pricebook: Pricebook,
        publication: Publication,
    ) -> ControlTotals | None:
        """Steps 3-4 with the helper processes, for a clean file; None: read it serially."""
        assert self._helpers is not None
        settings = self._settings
        try:
            return read_in_segments(
                body,
                content_type=request.content_type,
                content_encoding=request.content_encoding,
                codes=pricebook,
                batch_id=publication.batch_id,
                sizes=chunk_sizes(settings.chunk_size, settings.max_chunk_size),
                segment_lines=settings.intake_segment_lines,
                sink=publication,
                helpers=self._helpers,
                max_decompressed_bytes=settings.max_decompressed_bytes,
                checkpoint=request.checkpoint,
            )
        except Exception:
            publication.discard()
            raise

    def _read(
        self,
        body: Iterable[bytes],
        request: BatchRequest,
        pricebook: Pricebook,
        publication: Publication,
    ) -> ControlTotals:
        """Steps 3-4: validate every line, store chunks, accumulate the control totals."""
        totals = ControlTotalsBuilder()
        reader = parse_batch(
            body,
            content_type=request.content_type,
            content_encoding=request.content_encoding,
            pricebook=pricebook,
            max_decompressed_bytes=self._settings.max_decompressed_bytes,
            checkpoint=request.checkpoint,
        )
        try:
            with reader:
                chunks = growing_chunks(
                    reader, self._settings.chunk_size, self._settings.max_chunk_size
                )
                for rows in chunks:
                    totals.add_all([transaction for _, transaction in rows])
                    publication.add_chunk(rows)
            rejection = reader.rejection()
        except Exception:
            publication.discard()
            raise
        if rejection is not None:
            publication.discard()
            raise rejection
        return totals.build()

    def _replay(self, key_hash: str, body: RequestBody, priority: str) -> Outcome | None:
        """Step 1: answer from an earlier request with this key, or None to go ahead."""
        keys, records = self._publisher.keys, self._publisher.records
        entry = keys.find(key_hash)
        if entry is None:
            return None
        stored = records.find(entry.batch_id)
        if stored is None or stored.record.status is BatchStatus.ABANDONED:
            keys.release(key_hash, entry.batch_id)  # its batch died: the key is free again
            return None
        if is_orphan(stored, timedelta(seconds=self._settings.intake_lease_seconds)):
            # The key's claimant stopped renewing its lease (the record): it died before
            # ``accepted``. Remove it now, the key with it, and take the batch over.
            p = self._publisher
            stopped = AbandonReason.INTAKE_STOPPED
            if abandon(
                stored, stopped, records=records, payloads=p.payloads, keys=keys, results=p.results
            ):
                log.warning("removed orphaned batch %s found on a retried key", entry.batch_id)
                return None
        body.drain()
        return self._answer_for(entry, body.sha256, priority)

    def _answer_for(self, entry: KeyEntry, body_sha256: str, priority: str) -> Outcome:
        if entry.body_sha256 != body_sha256:
            raise IdempotencyConflictError(entry.batch_id, "a different body")
        stored = self._publisher.records.find(entry.batch_id)
        if stored is None or stored.record.status in {*UNFINISHED_INTAKE, BatchStatus.ABANDONED}:
            raise IdempotencyInProgressError(entry.batch_id)
        if stored.record.priority != priority:
            # Same key, same body, another priority: answering with the first batch would
            # tell the client its batch runs at a priority it does not.
            raise IdempotencyConflictError(
                entry.batch_id, f"priority {stored.record.priority}, not {priority}"
            )
        return Outcome(stored.record, replayed=True)


def chunks_of(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of ``size`` items (the last may be shorter)."""
    return growing_chunks(items, size, size)


def growing_chunks(items: Iterable[T], first: int, largest: int) -> Iterator[list[T]]:
    """Consecutive lists of ``first``, ``2 * first``, … items, at most ``largest`` each.

    Every chunk costs the same storage requests on its way (payload put, work item, the
    processor's get, put, message and delete, the controller's get and delete) whatever
    its size, so large batches should have large chunks; but a small batch must still
    make enough chunks to keep every processor busy. Doubling does both without knowing
    the batch's size in advance (intake streams it): from 2,000 up to 32,000, a
    10,000-row batch gives 3 chunks (2,000, 4,000, 4,000), a 1,000,000-row batch 35
    instead of 500.
    """
    iterator = iter(items)
    for size in chunk_sizes(first, largest):
        chunk = list(islice(iterator, size))
        if not chunk:
            return
        yield chunk


def chunk_sizes(first: int, largest: int) -> Iterator[int]:
    """The chunk plan of :func:`growing_chunks`: ``first``, twice that, … up to ``largest``."""
    size = first
    while True:
        yield size
        size = min(size * 2, largest)
