"""The listener's state and the storage-request meter as OpenTelemetry metrics, read with
the SDK's in-memory reader from a pipeline that has just rated and reduced a batch.

The instruments are observable: a collection reads each listener's state and the meter's
counts at that moment. The roles keep running while the test reads, so each reading is
checked against the state read just before and just after it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from billing.sample_batches import write_batch_file
from shared import meter
from shared.otel_metrics import (
    ACTIVE_THREADS,
    LISTENER,
    QUEUE,
    QUEUE_DEPTH,
    REQUEST_KIND,
    STORAGE_REQUESTS,
    TOTAL_THREADS,
)
from tests.e2e.conftest import SettingsFactory
from tests.e2e.pipeline import running_pipeline
from tests.support.deployment_settings import EMBEDDED_STACK
from tests.support.recorded_metrics import attributes_key, metric_reader, read

__all__ = ["metric_reader"]  # the fixture


@pytest.fixture
def stack() -> str:
    """The instruments read the same state on any storage: the embedded stack is enough."""
    return EMBEDDED_STACK


CHUNK_SIZE = 40
TRANSACTIONS_IN_BATCH = 150


def between(value: float, before: float, after: float) -> bool:
    return min(before, after) <= value <= max(before, after)


def test_listener_gauges_and_storage_counters_report_the_running_roles(
    make_settings: SettingsFactory, tmp_path: Path, metric_reader: InMemoryMetricReader
) -> None:
    settings = make_settings(chunk_size=CHUNK_SIZE)
    path = tmp_path / "batch.csv"
    write_batch_file(path, TRANSACTIONS_IN_BATCH, seed=11)
    chunks = math.ceil(TRANSACTIONS_IN_BATCH / CHUNK_SIZE)

    with running_pipeline(settings, processors=2) as pipeline:
        batch_id = pipeline.submit(path, priority="normal", headers={})["batch_id"]
        assert pipeline.wait_until_closed(batch_id)["status"] == "completed"

        listeners_before = {w.listener.name: w.listener.snapshot() for w in pipeline.processors}
        counts_before = meter.snapshot()
        reading = read(metric_reader)
        counts_after = meter.snapshot()
        listeners_after = {w.listener.name: w.listener.snapshot() for w in pipeline.processors}
        controller = f"controller-{pipeline.controller.instance_id}"

    for name, before in listeners_before.items():
        after = listeners_after[name]
        total = reading[TOTAL_THREADS][attributes_key({LISTENER: name})]
        assert total >= 1  # the batch was rated: a dequeue thread started
        assert between(total, before.total_threads, after.total_threads)
        active = reading[ACTIVE_THREADS][attributes_key({LISTENER: name})]
        assert between(active, before.active_threads, after.active_threads)
        # One point per work queue the processor reads, each the depth it last read.
        depths = {
            dict(key)[QUEUE]: value
            for key, value in reading[QUEUE_DEPTH].items()
            if dict(key)[LISTENER] == name
        }
        assert set(depths) == set(after.queue_depths) == set(before.queue_depths)
        assert len(depths) == settings.partitions * len(pipeline.processors[0].priorities)
        for queue, depth in depths.items():
            assert depth in (before.queue_depths[queue], after.queue_depths[queue])
    # The controller's listener reports under its own name, on the results queue.
    assert (
        attributes_key({LISTENER: controller, QUEUE: settings.output_queue}) in reading[QUEUE_DEPTH]
    )

    # Stopped roles are no longer reported.
    reported = {dict(key)[LISTENER] for key in read(metric_reader).get(TOTAL_THREADS, {})}
    assert not reported & {*listeners_before, controller}

    requests = {dict(key)[REQUEST_KIND]: value for key, value in reading[STORAGE_REQUESTS].items()}
    assert set(requests) <= set(counts_after)
    for kind, value in requests.items():
        assert between(value, counts_before.get(kind, 0), counts_after[kind])
    # Each chunk was put as a blob and a work item, and rated into a result blob and message.
    assert requests["blob.put"] >= 2 * chunks
    assert requests["queue.put"] >= 2 * chunks
    assert requests["queue.get"] > 0
