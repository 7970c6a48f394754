"""The billing metrics, computed when Prometheus scrapes (a custom collector).

* ``billing_storage_requests_total{kind}``: this initiator process's storage and bus
  requests by kind (``queue.put``, ``blob.put``, ``table.write`` …), from :mod:`shared.meter`
  (every storage request is billed).
* ``billing_batches{status}``: batch records in each status (every status, zeros included).
* ``billing_processor_instances``, and per live processor instance (label ``processor``:
  Prometheus adds ``instance`` itself, for the scraped target)
  ``billing_processor_dequeue_threads{processor,state="active"|"total"}``,
  ``billing_processor_queue_depth``, ``billing_processor_in_flight``,
  ``billing_processor_handled_total``, ``billing_processor_errors_total``,
  ``billing_processor_handling_duration_seconds`` (a histogram, from the buckets each
  heartbeat carries) and ``billing_processor_heartbeat_age_seconds``.

The batch and processor figures come from :class:`~initiator.observability.readings.Readings`
(cached), so a scrape costs no storage request most of the time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from initiator.observability.fleet import ProcessorInstance
from initiator.observability.readings import Readings
from shared import meter

#: The label naming a processor instance (``instance`` is the scrape target's, Prometheus's own).
PROCESSOR_LABEL = "processor"


class BillingCollector(Collector):
    """Reads the meter and, once the app has started, the cached readings."""

    def __init__(self, readings: Callable[[], Readings | None]) -> None:
        self._readings = readings

    def collect(self) -> Iterator[Metric]:
        yield _storage_requests(meter.snapshot())
        readings = self._readings()
        if readings is None:  # scraped before start-up finished
            return
        batches = GaugeMetricFamily(
            "billing_batches", "Batch records in each status", labels=["status"]
        )
        for status, count in readings.batches().counts.items():
            batches.add_metric([status.value], count)
        yield batches
        yield from _processor_metrics(readings.processors())


def _storage_requests(counts: dict[str, int]) -> Metric:
    family = CounterMetricFamily(
        "billing_storage_requests",
        "Storage and bus requests sent by this initiator process, by kind",
        labels=["kind"],
    )
    for kind, count in sorted(counts.items()):
        family.add_metric([kind], count)
    return family


def _processor_metrics(instances: list[ProcessorInstance]) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "billing_processor_instances",
        "Processor instances with a recent heartbeat",
        value=len(instances),
    )
    threads = GaugeMetricFamily(
        "billing_processor_dequeue_threads",
        "Dequeue threads of each live processor instance",
        labels=[PROCESSOR_LABEL, "state"],
    )
    by_instance = [PROCESSOR_LABEL]
    depth = GaugeMetricFamily(
        "billing_processor_queue_depth",
        "Approximate work-queue depth the instance last saw",
        labels=by_instance,
    )
    in_flight = GaugeMetricFamily(
        "billing_processor_in_flight", "Work items the instance is handling now", labels=by_instance
    )
    handled = CounterMetricFamily(
        "billing_processor_handled",
        "Work items the instance has handled since it started",
        labels=by_instance,
    )
    errors = CounterMetricFamily(
        "billing_processor_errors",
        "Work items whose handling failed, since the instance started",
        labels=by_instance,
    )
    latency = HistogramMetricFamily(
        "billing_processor_handling_duration_seconds",
        "Time to handle one work item (rate a chunk), since the instance started",
        labels=by_instance,
    )
    beat_age = GaugeMetricFamily(
        "billing_processor_heartbeat_age_seconds",
        "Seconds since the instance's last heartbeat",
        labels=by_instance,
    )
    for instance in instances:
        name = [instance.instance]
        threads.add_metric([instance.instance, "active"], instance.active_threads)
        threads.add_metric([instance.instance, "total"], instance.total_threads)
        depth.add_metric(name, instance.queue_depth)
        in_flight.add_metric(name, instance.in_flight)
        handled.add_metric(name, instance.handled)
        errors.add_metric(name, instance.errors)
        beat_age.add_metric(name, instance.beat_age_seconds)
        histogram = instance.latency_histogram
        # Absent in a beat of an older processor; a malformed one is left out, not a 500.
        if histogram is not None and len(histogram.counts) == len(histogram.le) + 1:
            cumulative, buckets = 0, []
            for bound, count in zip([*histogram.le, float("inf")], histogram.counts, strict=True):
                cumulative += count
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
            latency.add_metric(name, buckets, sum_value=histogram.sum)
    yield from (threads, depth, in_flight, handled, errors, latency, beat_age)
