"""The listeners' state and the storage-request meter as OpenTelemetry metrics.

The instruments are *observable*: at each collection the SDK calls back, and the callbacks
read what is already counted (each listener's :class:`~shared.listener.ListenerSnapshot`,
the counts of :mod:`shared.meter`), so nothing is counted twice. Names and attributes:

* ``billing.listener.queue_depth``: gauge, ``{message}``, per listener and queue: the
  approximate depth the listener last read;
* ``billing.listener.active_threads``: gauge, ``{thread}``, per listener;
* ``billing.listener.total_threads``: counter, ``{thread}``, per listener: dequeue threads
  started since it started;
* ``billing.storage.requests``: counter, ``{request}``, per kind (``queue.get``, …): this
  process's storage and bus requests.

The attributes are ``billing.listener`` (the listener's name, e.g. ``processor-<id>``),
``billing.queue`` and ``billing.request_kind``.

The instruments exist once per process (:func:`create_instruments`, which
:func:`shared.telemetry.configure_logging` calls); a role registers each listener it starts
(:func:`observe_listener`) and forgets it when it stops. They are created on the global
meter provider, so without an SDK configured (:mod:`shared.telemetry_export`) the callbacks
are never called.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from shared import meter
from shared.listener import ListenerSnapshot

METER_NAME = "billing"

QUEUE_DEPTH = "billing.listener.queue_depth"
ACTIVE_THREADS = "billing.listener.active_threads"
TOTAL_THREADS = "billing.listener.total_threads"
STORAGE_REQUESTS = "billing.storage.requests"

#: Attribute names.
LISTENER = "billing.listener"
QUEUE = "billing.queue"
REQUEST_KIND = "billing.request_kind"

_lock = threading.Lock()
_listeners: dict[str, Callable[[], ListenerSnapshot]] = {}
_created = False


def observe_listener(name: str, snapshot: Callable[[], ListenerSnapshot]) -> None:
    """Report the listener called ``name`` (its ``snapshot``) until :func:`forget_listener`."""
    create_instruments()
    with _lock:
        _listeners[name] = snapshot


def forget_listener(name: str) -> None:
    with _lock:
        _listeners.pop(name, None)


def create_instruments() -> None:
    """Create this process's instruments, once: the storage-request counter reports from
    then on, the listener gauges each listener registered so far."""
    global _created
    with _lock:
        if _created:
            return
        _created = True
    otel_meter = metrics.get_meter(METER_NAME)
    otel_meter.create_observable_gauge(
        QUEUE_DEPTH,
        callbacks=[_queue_depths],
        unit="{message}",
        description="Approximate depth of each queue a listener reads, as of its last look",
    )
    otel_meter.create_observable_gauge(
        ACTIVE_THREADS,
        callbacks=[_active_threads],
        unit="{thread}",
        description="Dequeue threads running now",
    )
    otel_meter.create_observable_counter(
        TOTAL_THREADS,
        callbacks=[_total_threads],
        unit="{thread}",
        description="Dequeue threads started since the listener started",
    )
    otel_meter.create_observable_counter(
        STORAGE_REQUESTS,
        callbacks=[_storage_requests],
        unit="{request}",
        description="Requests sent to storage and the bus by this process, by kind",
    )


def _snapshots() -> Iterator[tuple[str, ListenerSnapshot]]:
    with _lock:
        listeners = list(_listeners.items())
    for name, snapshot in listeners:
        yield name, snapshot()


def _queue_depths(_options: CallbackOptions) -> Iterable[Observation]:
    return [
        Observation(depth, {LISTENER: name, QUEUE: queue})
        for name, snapshot in _snapshots()
        for queue, depth in snapshot.queue_depths.items()
    ]


def _active_threads(_options: CallbackOptions) -> Iterable[Observation]:
    return [Observation(s.active_threads, {LISTENER: name}) for name, s in _snapshots()]


def _total_threads(_options: CallbackOptions) -> Iterable[Observation]:
    return [Observation(s.total_threads, {LISTENER: name}) for name, s in _snapshots()]


def _storage_requests(_options: CallbackOptions) -> Iterable[Observation]:
    return [Observation(n, {REQUEST_KIND: kind}) for kind, n in meter.snapshot().items()]
