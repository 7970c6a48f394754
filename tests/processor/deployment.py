"""A small deployment for the processor tests: settings, storage, bus, and what to observe.

The deployment itself is :class:`billing.deployment.Deployment`; this adds the tests' ways
to publish batches and to look at what the processors left.

Batches are published with the initiator's real :class:`~initiator.publishing.Publisher`
(payload blobs, record, work items, trigger) — the processor sees exactly what production
intake leaves on the queues.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from billing import deployment as composition
from initiator.publishing import BatchIntent, FaultHook, Publisher
from shared.bus.ports import TriggerBus
from shared.contracts.batch_records import BatchRecord, BatchRecords
from shared.contracts.messages import BatchAbandoned, ChunkFailed, ChunkResult
from shared.domain.pricebook_store import PricebookStore
from shared.domain.priority import Priority
from shared.domain.transactions import ControlTotalsBuilder, Transaction
from shared.settings import Settings
from tests.support.deployment_settings import deployment_values, settings_factory
from tests.support.names import unique_name

#: (customer, sku, quantity, region) of one transaction
Row = tuple[str, str, int, str]
OutputMessage = ChunkResult | ChunkFailed


def deployment_settings(
    tmp_path: Path, connection_string: str | None = None, **extra: Any
) -> Settings:
    """Settings of a two-partition deployment in ``tmp_path``; on Azurite with a connection
    string; ``extra`` overrides."""
    values = deployment_values(tmp_path, connection_string=connection_string, partitions=2)
    return settings_factory(values)(**extra)


def fast_worker_options(**overrides: Any) -> dict[str, Any]:
    """Listener and worker timings short enough for tests; the formulas do not care."""
    return {
        "visibility_timeout": 2,
        "backoff_min_idle": 0.01,
        "backoff_delta": 0.01,
        "backoff_max_idle": 0.3,
        "safety_poll_seconds": 30.0,
        "empty_recheck_seconds": 0.0,
        "heartbeat_busy_seconds": 1.0,
        "heartbeat_idle_seconds": 5.0,
        **overrides,
    }


def wait_until(condition: Callable[[], bool], timeout: float = 10.0, step: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


class Deployment(composition.Deployment):
    """The composition's deployment (storage, bus, processors), and ways to feed and watch it."""

    @classmethod
    def open(cls, settings: Settings, *, provision: bool = True) -> Deployment:
        return cls(settings, provision=provision)

    # --- preparing ------------------------------------------------------------------------
    def upload_pricebook(self, document: dict[str, Any]) -> str:
        control = self.storage.container(self.settings.control_container)
        return PricebookStore(control).upload(json.dumps(document).encode())

    def publish(
        self,
        chunks: Sequence[Sequence[Row]],
        *,
        pricebook_version: str,
        priority: Priority = "normal",
        fault: FaultHook | None = None,
        bus: TriggerBus | None = None,
    ) -> str:
        """Publish a batch of ``chunks`` the way the initiator does; returns the batch id."""
        batch_id = unique_name("b")
        publisher = Publisher(self.storage, bus or self.bus, self.settings, fault=fault)
        intent = BatchIntent(batch_id, priority, pricebook_version, datetime.now(UTC))
        publication = publisher.begin(intent)
        totals = ControlTotalsBuilder()
        line = 2  # line 1 is the header
        for rows in chunks:
            numbered = []
            for customer, sku, quantity, region in rows:
                tid = f"{batch_id}-{line}"
                numbered.append((line, transaction(tid, customer, sku, quantity, region)))
                totals.add(tid, quantity)
                line += 1
            publication.add_chunk(numbered)
        publication.commit(totals.build(), body_bytes=0, body_sha256="0" * 64)
        return batch_id

    def batch(self, batch_id: str) -> BatchRecord | None:
        stored = BatchRecords(self.storage.table(self.settings.batches_table)).find(batch_id)
        return None if stored is None else stored.record

    # --- observing ------------------------------------------------------------------------
    def output(self) -> list[OutputMessage]:
        """What processors put on the output queue (peeked: left in place for the
        controller); the initiator's reports of abandoned batches are left out."""
        peeked = self.storage.queue(self.settings.output_queue).peek()
        return [
            _parse_output(message.content)
            for message in peeked
            if json.loads(message.content).get("kind") != "batch-abandoned"
        ]

    def abandoned_reports(self) -> list[BatchAbandoned]:
        """The initiator's reports of abandoned batches on the output queue."""
        peeked = self.storage.queue(self.settings.output_queue).peek()
        return [
            BatchAbandoned.model_validate_json(message.content)
            for message in peeked
            if json.loads(message.content).get("kind") == "batch-abandoned"
        ]

    def results(self) -> list[ChunkResult]:
        return [m for m in self.output() if isinstance(m, ChunkResult)]

    def work_depth(self) -> int:
        names = self.settings.all_work_queues()
        return sum(self.storage.queue(name).approximate_count() for name in names)


def transaction(tid: str, customer: str, sku: str, quantity: int, region: str) -> Transaction:
    at = datetime(2024, 5, 1, 12, 0, tzinfo=UTC) + timedelta(seconds=len(tid))
    return Transaction(tid, customer, sku, quantity, region, at)


def _parse_output(text: str) -> OutputMessage:
    if json.loads(text).get("kind") == "chunk-failed":
        return ChunkFailed.model_validate_json(text)
    return ChunkResult.from_text(text)
