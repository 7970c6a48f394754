"""Visibility renewal: a slow handler keeps its message hidden, using the newest receipt."""

from __future__ import annotations

import threading

from shared.listener import Lease
from shared.listener.renewal import LeaseRenewer
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq, wait_until
from tests.support.memory_queue import MemoryQueues


def test_a_slow_handler_outlives_the_visibility_timeout_without_redelivery(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("slow")
    done = threading.Event()
    calls: list[int] = []

    def handler(lease: Lease) -> None:
        calls.append(lease.dequeue_count)
        done.wait(2.6)  # 2.6 times the 1 s visibility timeout

    listener = listener_factory([source], handler, fast_config(visibility_timeout=1))
    listener.start(threads=1)
    assert wait_until(lambda: calls == [1])
    # A competing consumer polls all along: it must never get the message.
    stolen = []
    while not done.is_set() and listener.snapshot().handled == 0:
        stolen += source.queue.receive(32, visibility_timeout=1)
        done.wait(0.1)
    assert wait_until(lambda: listener.snapshot().handled == 1)
    snap = listener.snapshot()
    assert stolen == []
    assert calls == [1]
    assert snap.renewals >= 3  # every 0.5 s over 2.6 s
    assert snap.errors == 0
    assert memq(source).contents() == []  # deleted with the newest pop receipt
    assert memq(source).calls["update"] == snap.renewals


def test_a_released_lease_is_not_renewed_and_keeps_the_newest_receipt(
    queues: MemoryQueues,
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("x")
    (message,) = source.queue.receive(1, visibility_timeout=5)
    lease = Lease(message, source, held_since=0.0)
    assert lease.renew(5, now=1.0)
    newest = lease.message
    assert newest.pop_receipt != message.pop_receipt
    assert lease.release() == newest
    assert not lease.renew(5, now=2.0)  # released: no more requests
    assert memq(source).calls["update"] == 1
    source.queue.delete(newest)  # the newest receipt is the valid one
    assert memq(source).contents() == []


def test_a_stale_receipt_marks_the_lease_lost(queues: MemoryQueues) -> None:
    (source,) = make_sources(queues)
    source.queue.send("x")
    (message,) = source.queue.receive(1, visibility_timeout=30)
    source.queue.update_visibility(message, 0)  # handed back: its receipt is now stale
    lease = Lease(message, source, held_since=0.0)
    assert not lease.renew(5, now=1.0)
    assert lease.lost


def test_the_renewer_renews_only_leases_held_past_the_fraction(queues: MemoryQueues) -> None:
    (source,) = make_sources(queues)
    source.queue.send("old")
    source.queue.send("new")
    old_message, new_message = source.queue.receive(2, visibility_timeout=10)
    now = [100.0]
    renewed: list[int] = []
    renewer = LeaseRenewer(10, 0.5, on_renewed=lambda: renewed.append(1), clock=lambda: now[0])
    old = Lease(old_message, source, held_since=94.0)  # held 6 s > 5 s: due
    new = Lease(new_message, source, held_since=99.0)  # held 1 s: not yet
    renewer.hold(old)
    renewer.hold(new)
    renewer.start()
    try:
        assert wait_until(lambda: len(renewed) == 1)
        assert old.message.pop_receipt != old_message.pop_receipt
        assert new.message == new_message
    finally:
        renewer.stop()
