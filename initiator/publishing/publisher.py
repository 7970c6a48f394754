"""The publisher: takes a batch from its first chunk to the trigger, in the crash-safe order.

One :class:`Publication` per batch. Its methods are the steps of the package docstring;
each step ends with a call of the fault hook (``fault(step)``), which tests use to stop the
publisher exactly there. A hook that raises an ``Exception`` stands for a failure the
publisher survives (it abandons the batch, then re-raises); one that raises a
``BaseException`` stands for a crash (nothing more runs, as when the process dies).

Next step (docs/walkthrough.md): ``processor.worker``, where a processor takes the work
items published here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from initiator.id_window import DuplicateTransactionIdsError, FingerprintPartitions, IdWindow
from initiator.idempotency import DuplicateBodyError, IdempotencyKeys, IdempotencyKeyTakenError
from initiator.publishing.outcome import IntakeOutcomeUnknownError, settle
from initiator.publishing.payloads import PayloadWriter, StoredChunk
from initiator.publishing.trigger import announce
from initiator.publishing.work_items import send_work_items, work_items
from shared.bus.ports import TriggerBus
from shared.contracts.batch_records import BatchRecord, BatchRecords, StoredBatch, utc_now
from shared.contracts.batch_status import AbandonReason, BatchStatus
from shared.contracts.chunk_payload import DEFAULT_COMPRESSLEVEL, NumberedTransaction
from shared.coordination.work_signal import signal_work
from shared.domain.priority import PRIORITIES, Priority
from shared.domain.transactions import ControlTotals
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.tracing import BATCH_ID, PRIORITY, QUEUE_SYSTEM, TOPIC_SYSTEM, producer_span

FaultHook = Callable[[str], None]
"""Called with the name of each step just completed; see :data:`STEPS`."""

STEPS = (
    "record_receiving",
    "payloads_written",
    "idempotency_claimed",
    "record_accepting",
    "transaction_ids_indexed",
    "work_item_sent",
    "record_accepted",
    "trigger_published",
)
#: A long upload refreshes its ``receiving`` record this often, so the sweeper (which only
#: removes records silent for much longer) never mistakes it for an orphan.
HEARTBEAT_SECONDS = 60.0

log = logging.getLogger(__name__)


def _no_fault(_step: str) -> None:
    pass


@dataclass(frozen=True)
class BatchIntent:
    """What is known about a batch before its body is read."""

    batch_id: str
    priority: Priority
    pricebook_version: str
    received_at: datetime
    idempotency_key_hash: str | None = None
    callback: str | None = None  # the sender's webhook URL for the batch's outcome
    allow_duplicate: bool = False  # the sender means to bill this body a second time


class Publisher:
    """Hands out a :class:`Publication` per batch; holds the storage handles they share."""

    def __init__(
        self,
        storage: StorageAccount,
        bus: TriggerBus,
        settings: Settings,
        *,
        fault: FaultHook | None = None,
        compresslevel: int = DEFAULT_COMPRESSLEVEL,
    ) -> None:
        table = storage.table(settings.batches_table)
        self.records = BatchRecords(table)
        self.keys = IdempotencyKeys(table)
        self.payloads = storage.container(settings.payload_container)
        self.control = storage.container(settings.control_container)
        self.results = storage.queue(settings.output_queue)  # where an abandonment is told
        self.work_queues = {
            p: [storage.queue(q) for q in settings.work_queues(p)] for p in PRIORITIES
        }
        self.storage_account = storage.account_name
        self.work_queue_template = settings.work_queue_prefix + "-{priority}-{partition}"
        self.trigger_topic = settings.trigger_topic
        self.lease_seconds = settings.intake_lease_seconds
        self.duplicate_window = timedelta(seconds=settings.duplicate_body_window_seconds)
        #: The billed-id window's index blobs, when that check is on (it shares the window).
        self.id_window = (
            IdWindow(self.control, self.duplicate_window)
            if settings.duplicate_transaction_ids and self.duplicate_window
            else None
        )
        self.bus = bus
        self.fault = fault or _no_fault
        self.compresslevel = compresslevel

    def begin(self, intent: BatchIntent) -> Publication:
        return Publication(self, intent)

    def close(self) -> None:
        """Drop the local copies of other batches' index blobs (if the id check is on)."""
        if self.id_window is not None:
            self.id_window.close()


class Publication:
    """One batch on its way: :meth:`add_chunk` while parsing, then :meth:`commit` or
    :meth:`discard`."""

    def __init__(self, publisher: Publisher, intent: BatchIntent) -> None:
        self._p = publisher
        self._intent = intent
        self._writer = PayloadWriter(
            publisher.payloads, intent.batch_id, compresslevel=publisher.compresslevel
        )
        self._stored: StoredBatch | None = None
        self._last_heartbeat = 0.0
        # Only with the billed-id check on: the ids' fingerprints, and then their index blob.
        self._fingerprints = FingerprintPartitions() if publisher.id_window else None
        self._id_index: str | None = None

    def add_chunk(self, rows: Sequence[NumberedTransaction]) -> None:
        """Step 1: a chunk's payload blob (and, before the very first, the record)."""
        self._before_chunk()
        self._writer.write(rows)
        if self._fingerprints is not None:
            self._fingerprints.add([transaction.transaction_id for _, transaction in rows])

    def add_chunk_document(
        self, document: bytes, lines: tuple[int, int, int], transaction_ids: Iterable[str]
    ) -> None:
        """:meth:`add_chunk` for a chunk whose payload document was made elsewhere (the
        next chunk's, by :func:`~shared.contracts.chunk_payload.chunk_json`);
        ``lines``: its first and last line and its transaction count; ``transaction_ids``:
        its ids, read only when the billed-id check is on."""
        self._before_chunk()
        self._writer.write_document(document, lines)
        if self._fingerprints is not None:
            self._fingerprints.add(transaction_ids)

    @property
    def batch_id(self) -> str:
        return self._intent.batch_id

    def _before_chunk(self) -> None:
        if self._stored is None:
            self._stored = self._p.records.create(self._receiving_record())
            self._last_heartbeat = time.monotonic()
            self._p.fault("record_receiving")
        elif time.monotonic() - self._last_heartbeat > HEARTBEAT_SECONDS:
            self._touch()

    def discard(self) -> None:
        """The batch was rejected (or the request failed): remove every trace of it."""
        self._close_fingerprints()
        if self._stored is None:
            self._writer.close()  # nothing was written: the record precedes the first blob
            return
        try:
            self._writer.discard()
        except Exception:
            log.exception(
                "could not delete the payloads of %s; the sweeper will", self._intent.batch_id
            )
        try:
            # A batch never ``accepting`` cannot turn out accepted; its sender holds no id.
            self._settle(AbandonReason.DISCARDED)
        except IntakeOutcomeUnknownError:
            log.warning("rejected batch %s left for the sweeper", self._intent.batch_id)

    def commit(self, totals: ControlTotals, *, body_bytes: int, body_sha256: str) -> BatchRecord:
        """Steps 2-6 for a valid batch; returns the ``accepted`` record.

        After a failure the record is read back (:mod:`.outcome`): a batch that storage
        shows accepted is returned as such; any other is abandoned and the failure
        re-raised, including :class:`~initiator.idempotency.IdempotencyKeyTakenError` when
        a concurrent request with the same key won.
        """
        if self._stored is None:
            raise RuntimeError("a batch without transactions cannot be committed")
        fault = self._p.fault
        # Only an accepted batch is announced, and it is accepted only once every item is
        # sent; this default just keeps the name bound on every path.
        queue_names = [queue.name for queue in self._p.work_queues[self._intent.priority]]
        try:
            chunks = self._writer.finish()
            fault("payloads_written")
            self._claim_idempotency_key(body_sha256)
            self._save(
                status=BatchStatus.ACCEPTING,
                transactions=totals.transactions,
                chunks=len(chunks),
                payload_bytes=sum(chunk.size for chunk in chunks),
                body_bytes=body_bytes,
                body_sha256=body_sha256,
                control_totals=totals,
            )
            fault("record_accepting")
            self._claim_body(body_sha256)
            self._claim_transaction_ids()
            queue_names = self._enqueue(chunks)
            self._signal_work()
            self._save(status=BatchStatus.ACCEPTED, accepted_at=utc_now())
            fault("record_accepted")
        except Exception as error:
            # A refusal the sender is answered with (another request holds the key or the
            # body) discards the batch; a storage failure abandons it with an event.
            refused = isinstance(
                error,
                IdempotencyKeyTakenError | DuplicateBodyError | DuplicateTransactionIdsError,
            )
            accepted = self._settle(
                AbandonReason.DISCARDED if refused else AbandonReason.INTAKE_FAILED
            )
            if accepted is None:
                self._remove_id_index()
                raise
            log.warning(
                "batch %s: storage failed after it was accepted; answered as accepted",
                accepted.batch_id,
                exc_info=True,
            )
            self._announce(accepted, queue_names)
            return accepted
        finally:
            self._close_fingerprints()
        record = self._stored.record
        self._announce(record, queue_names)
        return record

    def _claim_idempotency_key(self, body_sha256: str) -> None:
        """Step 2: the key → batch mapping, create-only (only when a key was sent).

        From here to ``accepted`` the record is the key's lease: a retry with the key takes
        the batch over once the record has been silent for ``intake_lease_seconds``, so the
        record is refreshed before the claim and then every third of the lease."""
        if self._intent.idempotency_key_hash is None:
            return
        self._renew_lease()
        self._p.keys.claim(self._intent.idempotency_key_hash, self._intent.batch_id, body_sha256)
        self._p.fault("idempotency_claimed")

    def _claim_body(self, body_sha256: str) -> None:
        """Step 3b: the body → batch mapping, refused while it names a live batch received
        within the window (the same file sent twice). After ``accepting``, so that the
        record knows the body and its cleanup removes the mapping."""
        if not self._p.duplicate_window:
            return
        self._p.keys.claim_body(
            body_sha256,
            self._intent.batch_id,
            is_live=self._is_live,
            allow_duplicate=self._intent.allow_duplicate,
        )

    def _claim_transaction_ids(self) -> None:
        """Step 3c, with the billed-id check on: the batch's own index blob first, then the
        others of the window compared with it (initiator.id_window); refused while one of
        them is a live batch holding one of its ids. Its own blob is written even with
        ``allow_duplicate``: its ids are billed too."""
        window, fingerprints = self._p.id_window, self._fingerprints
        if window is None or fingerprints is None:
            return
        fingerprints.finish()
        self._id_index = window.publish(
            self._intent.batch_id, self._intent.received_at, fingerprints
        )
        self._p.fault("transaction_ids_indexed")
        if not self._intent.allow_duplicate:
            window.refuse_repeats(self._id_index, fingerprints, self._is_live)

    def _is_live(self, batch_id: str) -> bool:
        """Whether ``batch_id`` is accepted, or being accepted, and was received within the
        duplicate window: a batch a duplicate of which is refused."""
        found = self._p.records.find(batch_id)
        if found is None or found.record.status is BatchStatus.ABANDONED:
            return False
        return found.record.received_at > utc_now() - self._p.duplicate_window

    def _remove_id_index(self) -> None:
        if self._id_index is not None and self._p.id_window is not None:
            self._p.id_window.remove(self._id_index)

    def _close_fingerprints(self) -> None:
        if self._fingerprints is not None:
            self._fingerprints.close()

    def _renew_lease(self) -> None:
        if self._intent.idempotency_key_hash is None:
            return
        if time.monotonic() - self._last_heartbeat > self._p.lease_seconds / 3:
            self._touch()

    def _enqueue(self, chunks: list[StoredChunk]) -> list[str]:
        """Step 4: one work item per chunk on the priority's partitions."""
        intent = self._intent
        # The items carry this span's context: each chunk's rating is its child.
        with producer_span(
            "send work items",
            system=QUEUE_SYSTEM,
            template=self._p.work_queue_template,
            count=len(chunks),
            attributes={BATCH_ID: intent.batch_id, PRIORITY: intent.priority},
        ):
            items = work_items(intent.batch_id, intent.priority, intent.pricebook_version, chunks)
            return send_work_items(
                items,
                self._p.work_queues[intent.priority],
                after_each=self._after_work_item,
            )

    def _after_work_item(self) -> None:
        self._p.fault("work_item_sent")
        self._renew_lease()  # a batch of many chunks takes a while to enqueue

    def _signal_work(self) -> None:
        """After step 4: move the work signal, which idle processors read instead of every
        queue's depth. Best effort: the trigger still wakes them, and their hourly full
        look at the queues covers a batch whose trigger and signal were both lost."""
        try:
            signal_work(self._p.control, self._intent.batch_id)
        except Exception:
            log.warning(
                "work signal for batch %s not written; the trigger still announces it",
                self._intent.batch_id,
                exc_info=True,
            )

    def _announce(self, record: BatchRecord, queue_names: list[str]) -> None:
        """Step 6: the trigger. A lost trigger only delays processing (the safety poll)."""
        try:
            with producer_span(
                "publish trigger",
                system=TOPIC_SYSTEM,
                destination=self._p.trigger_topic,
                count=1,
                attributes={BATCH_ID: record.batch_id},
            ):
                announce(
                    self._p.bus, record, storage_account=self._p.storage_account, queues=queue_names
                )
            self._p.fault("trigger_published")
        except Exception:
            log.warning(
                "trigger for accepted batch %s not published; processors will find its work "
                "on their safety poll",
                record.batch_id,
                exc_info=True,
            )

    def _receiving_record(self) -> BatchRecord:
        intent = self._intent
        return BatchRecord(
            batch_id=intent.batch_id,
            status=BatchStatus.RECEIVING,
            priority=intent.priority,
            pricebook_version=intent.pricebook_version,
            received_at=intent.received_at,
            updated_at=utc_now(),
            idempotency_key_hash=intent.idempotency_key_hash,
            callback=intent.callback,
        )

    def _save(self, **changes: object) -> None:
        assert self._stored is not None
        record = self._stored.record.model_copy(update={**changes, "updated_at": utc_now()})
        self._stored = self._p.records.save(self._stored, record)

    def _touch(self) -> None:
        self._save()
        self._last_heartbeat = time.monotonic()

    def _settle(self, reason: AbandonReason) -> BatchRecord | None:
        """The accepted record if storage shows the batch accepted after all, else None
        (abandoned for ``reason``)."""
        assert self._stored is not None
        p = self._p
        return settle(
            self._intent.batch_id,
            self._stored,
            reason,
            records=p.records,
            payloads=p.payloads,
            keys=p.keys,
            results=p.results,
        )
