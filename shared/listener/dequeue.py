"""One dequeue thread's loop.

Each round: ask the planner which queues to try, receive up to ``batch_size`` messages from
the first that has any (one request, visibility timeout set), and handle them — in parallel
on a small per-thread pool, since handlers mostly wait on storage. An empty round means an
empty-queue back-off; a thread whose back-off reaches the cap asks the listener whether it
may retire. A thread that had been backing off and finds work tells the listener, which may
start more threads. A trigger that comes while a round is under way ends the sleep after it
at once.

Next step (docs/walkthrough.md): ``shared.listener.handling``, what happens to each message
received here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from shared.listener.backoff import Backoff
from shared.listener.handling import MessageHandling
from shared.listener.priority import PriorityPlanner
from shared.listener.renewal import Lease, LeaseRenewer
from shared.listener.state import ListenerState
from shared.listener.wake import WakeSignal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DequeueContext:
    """What a dequeue thread shares with its listener."""

    planner: PriorityPlanner
    backoff: Backoff
    handling: MessageHandling
    renewer: LeaseRenewer
    state: ListenerState
    stopping: threading.Event
    #: cleared while the listener is paused (the release gate): wait before receiving
    running: threading.Event
    batch_size: int
    visibility_timeout: int
    handler_parallelism: int
    #: empty receives this soon after a trigger leave the back-off where it is (see
    #: ``ListenerConfig.wake_hold``)
    wake_hold: float
    #: atomically decides whether this idle thread may end (and counts it as retired)
    may_retire: Callable[[], bool]
    #: the listener's work-detected reaction: query depth, scale threads (given the queues
    #: the work was found on, so the other queues keep their empty back-off)
    work_detected: Callable[[Collection[str]], object]
    #: interrupts the back-off sleep when a trigger arrives (or the listener stops)
    wake: WakeSignal
    #: messages of a queue may be hidden until a time (clock): look for them then, without
    #: keeping a thread for it
    look_again: Callable[[str, float], object] = lambda name, at: None
    clock: Callable[[], float] = field(default=time.monotonic)


def dequeue_task_main(ctx: DequeueContext) -> bool:
    """Run until stopped or retired; True if the thread retired (it was idle at the cap)."""
    pool_size = min(ctx.handler_parallelism, ctx.batch_size)
    # Named after their dequeue thread, so that a stuck handler's name says whose it is.
    prefix = f"{threading.current_thread().name}-handler"
    pool = ThreadPoolExecutor(pool_size, prefix) if pool_size > 1 else None
    idle_count = 0
    held = 0  # of the empty rounds in a row, those within the wake hold
    failures = 0
    try:
        while not ctx.stopping.is_set():
            if not ctx.running.is_set():
                ctx.running.wait()  # paused; stop() sets it too, so a stop is never missed
                continue
            woken = ctx.wake.generation  # a trigger from here on cuts the back-off short
            try:
                leases = _receive_round(ctx)
            except Exception:
                failures += 1
                ctx.state.error()
                log.warning("receive failed (%d in a row); backing off", failures, exc_info=True)
                ctx.stopping.wait(ctx.backoff.delay(failures))
                continue
            failures = 0
            if leases:
                if idle_count:
                    ctx.work_detected({lease.source.name for lease in leases})
                idle_count = held = 0
                _handle_all(ctx, leases, pool)
                continue
            idle_count += 1
            if ctx.wake_hold and ctx.wake.woken_within(ctx.wake_hold):
                held += 1
            delay = ctx.backoff.delay(idle_count - held)
            if ctx.backoff.at_cap(delay) and ctx.may_retire():
                return True
            if ctx.wake.sleep(delay, since=woken):
                idle_count = held = 0  # a trigger: look again at once, and keep looking actively
        return False
    finally:
        if pool is not None:
            pool.shutdown(wait=True)


def _receive_round(ctx: DequeueContext) -> list[Lease]:
    """Receive from the first queue of this round's order that has messages."""
    order = ctx.planner.next_round()
    for source in order:
        if ctx.stopping.is_set() or not ctx.running.is_set():
            break  # stopped or paused: not one more request, even within a round
        requested_at = ctx.clock()  # visibility runs from the request, so count from here
        try:
            messages = source.queue.receive(ctx.batch_size, ctx.visibility_timeout)
        except Exception:
            # The receive may have been served and its answer lost: its messages are then
            # hidden from everyone until the visibility timeout, so look for them then
            # (and keep a thread to do it), as for messages handed back.
            ctx.handling.expect_back(source.name, requested_at + ctx.visibility_timeout)
            raise
        if not messages:
            if ctx.planner.active_within(source, ctx.visibility_timeout):
                # The SDK retries a receive whose answer was lost, and the retry may come
                # back empty while the lost one's messages stay hidden. Soon after the queue
                # had work or work was announced on it, an empty answer may be that: look
                # again when they would be due.
                ctx.look_again(source.name, requested_at + ctx.visibility_timeout)
            ctx.planner.mark_empty(source)
            # An empty receive is the freshest reading of the queue's depth there is: without
            # it the depth queried when the work arrived would be reported until the next
            # depth query, long after the queue drained.
            ctx.state.set_depths({source.name: 0})
            continue
        ctx.planner.mark_found(source)
        ctx.state.received(len(messages))
        leases = [Lease(message, source, requested_at) for message in messages]
        for lease in leases:
            ctx.renewer.hold(lease)
        return leases
    if order:  # a round that asked nobody learnt nothing: it ends no other round's skips
        ctx.planner.mark_idle()
    return []


def _handle_all(ctx: DequeueContext, leases: list[Lease], pool: ThreadPoolExecutor | None) -> None:
    """Handle one receive's messages; returns when every one is settled."""
    if pool is None or len(leases) == 1:
        for lease in leases:
            ctx.handling.handle(lease)
        return
    for _ in pool.map(ctx.handling.handle, leases):
        pass
