"""The counting proxy counts each storage request once and, with ``latency_ms``, holds it.

Real Azurite behind the real proxy, requests from the Azure SDK. The held request is only
checked against the lower bound the proxy guarantees (it sleeps before forwarding), never
against how fast anything ran.
"""

from __future__ import annotations

import time

from azure.storage.queue import QueueServiceClient

from bench.counting_proxy import CountingProxy
from shared import meter
from tests.support.azurite import AzuriteInfo

HELD_MS = 150


def _list_queues(info: AzuriteInfo) -> float:
    service = QueueServiceClient.from_connection_string(info.connection_string)
    started = time.perf_counter()
    list(service.list_queues())
    return time.perf_counter() - started


def test_each_request_is_counted_and_held_the_latency(azurite: AzuriteInfo) -> None:
    with CountingProxy(azurite, latency_ms=HELD_MS) as proxy:
        assert proxy.info is not None
        before = proxy.snapshot()
        first = _list_queues(proxy.info)
        second = _list_queues(proxy.info)
        counted = meter.diff(proxy.snapshot(), before)
    assert meter.total(counted) == 2
    assert min(first, second) >= HELD_MS / 1000


def test_without_latency_requests_are_counted_and_not_held(azurite: AzuriteInfo) -> None:
    with CountingProxy(azurite) as proxy:
        assert proxy.info is not None
        before = proxy.snapshot()
        _list_queues(proxy.info)
        assert meter.total(meter.diff(proxy.snapshot(), before)) == 1
        assert proxy.latency_ms == 0
