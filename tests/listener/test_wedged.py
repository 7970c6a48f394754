"""A handler stuck on one message far longer than any handling takes makes the listener
wedged (``QueueListener.wedged``), which a role's readiness probe reports; once the handler
returns, the listener is well again. Renewals of the stuck message's lease do not hide it."""

from __future__ import annotations

import threading

from shared.listener import Lease
from shared.role_health import RoleHealth
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, wait_until
from tests.support.memory_queue import MemoryQueues


def test_a_handler_stuck_past_the_threshold_makes_the_role_unready_until_it_returns(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("hung")
    entered = threading.Event()
    release = threading.Event()

    def handler(lease: Lease) -> None:
        entered.set()
        release.wait(10)  # a socket that never answers

    # A 1 s visibility renewed every half second: the lease is kept alive while it hangs.
    config = fast_config(visibility_timeout=1, wedged_handler_seconds=0.2)
    listener = listener_factory([source], handler, config, name="hung")
    health = RoleHealth()
    health.register(lambda: None, ready_probe=listener.wedged)
    listener.start(threads=1)
    assert entered.wait(5)

    assert wait_until(lambda: not health.readiness().well)
    unready = health.readiness()
    assert wait_until(lambda: listener.snapshot().renewals >= 1)  # renewed, and still stuck
    still = health.readiness()
    release.set()
    assert wait_until(lambda: health.readiness().well)

    assert unready.state == "unwell"
    assert unready.reason.startswith("handler thread hung-dequeue-1 busy for ")
    assert "(over 0.2 s) with message " in unready.reason
    assert unready.reason.endswith(" of work-normal-0")
    assert not still.well
    assert health.status().well  # liveness is not readiness
    assert listener.longest_busy() is None
    assert listener.snapshot().handled == 1


def test_a_busy_handler_under_the_threshold_is_not_wedged_and_is_named_by_its_thread(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("quick")
    source.queue.send("slow")
    release = threading.Event()
    slow_entered = threading.Event()

    def handler(lease: Lease) -> None:
        if lease.message.content == "slow":
            slow_entered.set()
            release.wait(10)

    config = fast_config(batch_size=2, handler_parallelism=2, wedged_handler_seconds=60)
    listener = listener_factory([source], handler, config, name="pool")
    listener.start(threads=1)
    assert slow_entered.wait(5)
    assert wait_until(lambda: listener.snapshot().handled == 1)  # the quick one is done
    busy = listener.longest_busy()
    wedged = listener.wedged()
    release.set()
    assert wait_until(lambda: listener.longest_busy() is None)

    assert busy is not None
    # one pool per dequeue thread: its handler threads carry that thread's name
    assert busy.thread.startswith("pool-dequeue-1-handler_")
    assert busy.queue_name == "work-normal-0"
    assert busy.seconds >= 0
    assert wedged is None
