"""The cached views of batches, processors and the release gate that ``/metrics``, the
dashboard and ``GET /batches/{id}`` share."""

from __future__ import annotations

from datetime import UTC, datetime

from initiator.dependencies import Services
from initiator.observability.batches import BatchOverview, read_batch_overview
from initiator.observability.cache import TimedCache
from initiator.observability.fleet import ProcessorInstance, read_live_processors
from initiator.observability.rated import rated_chunks
from initiator.schemas import BatchStatusView
from shared.contracts.batch_records import BatchRecord
from shared.coordination.gate import GateHistory, read_gate_history

#: How long a reading is reused: the dashboard polls every 2 s, Prometheus every 15 s or so.
READING_TTL_SECONDS = 2.0


class Readings:
    """The batch overview, the live processors and the gate, each read at most once per
    ``ttl``; a single batch's view (its record is read by the caller)."""

    def __init__(self, services: Services, *, ttl: float = READING_TTL_SECONDS) -> None:
        batches_table = services.storage.table(services.settings.batches_table)
        heartbeats_table = services.storage.table(services.settings.heartbeats_table)
        control = services.storage.container(services.settings.control_container)
        self._results = services.storage.container(services.settings.results_container)
        self._gate = TimedCache(lambda: read_gate_history(control), ttl=ttl)
        self._batches = TimedCache(
            lambda: read_batch_overview(batches_table, self._gate.get(), rated=self._rated),
            ttl=ttl,
        )
        self._processors = TimedCache(
            lambda: read_live_processors(heartbeats_table, now=datetime.now(UTC)), ttl=ttl
        )

    def batches(self) -> BatchOverview:
        return self._batches.get()

    def processors(self) -> list[ProcessorInstance]:
        return self._processors.get()

    def gate(self) -> GateHistory:
        return self._gate.get()

    def batch(self, record: BatchRecord) -> BatchStatusView:
        """``record``'s view now, with the gate and the chunks rated so far."""
        return BatchStatusView.of(record, self.gate(), rated=self._rated(record))

    def _rated(self, record: BatchRecord) -> int:
        return rated_chunks(self._results, record)
