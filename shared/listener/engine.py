"""The depth-scaled, multi-threaded queue listener (docs/patterns.md).

    listener = QueueListener(sources, handle_work_item, config,
                             trigger_available=True, on_poison=mark_chunk_failed)
    listener.start()                 # depth → scaling rule → that many dequeue threads
    subscription → listener.on_work_detected()   # on every trigger event
    listener.pause() / .resume()     # the release gate: no new receives while paused
    listener.stop(timeout)           # graceful

Threads come and go with the work:

* **Up**: on a trigger, or
  when a backing-off thread finds work, :meth:`on_work_detected` queries the depth of the
  queues the work is on (every queue when the caller does not know), asks the
  :class:`~shared.listener.scaling.ScalingRule` how many threads that depth deserves, and
  starts the missing ones (never more than ``max_threads``; threads already running for
  other queues count, so a partial depth never scales down).
* **Down**: a thread whose empty-queue back-off reaches the
  cap retires, unless it is the last one. With a push trigger the last one retires too and
  only a slow **safety poll** remains (every ``safety_poll_seconds``, a depth query), so a
  lost trigger never strands work and an idle instance makes almost no storage requests.
* **Quiet**: with ``quiet_rescan_seconds`` set, the owner watches a cheaper signal of new
  work (one request instead of one per queue) and calls :meth:`on_work_detected` when it
  moves; the safety poll then scans only while the last scan saw messages (some may be
  hidden at a crashed instance, or due back later), and otherwise once per
  ``quiet_rescan_seconds``, for work whose trigger and signal were both lost. With
  ``idle_rescan_seconds`` set too, the dequeue threads leave a queue found empty alone for
  that long instead of asking it again round after round, busy or backing off: the
  trigger and the signal announce new work, and what this listener handed back is looked
  for when due.

Next step (docs/walkthrough.md): ``shared.listener.dequeue``, one dequeue thread's loop.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Collection, Sequence

from shared.listener.backoff import Backoff, UniformSource
from shared.listener.busy import BusyHandler, BusyHandlers
from shared.listener.config import ListenerConfig
from shared.listener.dequeue import DequeueContext, dequeue_task_main
from shared.listener.handling import Handler, MessageHandling
from shared.listener.poison import ErrorMemory, OnPoison, PoisonMover
from shared.listener.priority import PriorityPlanner
from shared.listener.renewal import LeaseRenewer
from shared.listener.source import QueueSource
from shared.listener.state import ListenerSnapshot, ListenerState
from shared.listener.wake import WakeSignal

log = logging.getLogger(__name__)


class QueueListener:
    """Dequeue threads over a set of queues, scaled by depth, retired when idle."""

    def __init__(
        self,
        queues: Sequence[QueueSource],
        handler: Handler,
        config: ListenerConfig | None = None,
        *,
        trigger_available: bool = False,
        on_poison: OnPoison | None = None,
        name: str = "listener",
        uniform: UniformSource = random.uniform,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config or ListenerConfig()
        self.trigger_available = trigger_available
        self.name = name
        self.state = ListenerState()
        self._clock = clock
        self._sources = list(queues)
        self._rule = self.config.rule
        errors = ErrorMemory()  # handler errors, read back when a message is poisoned
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        # Cleared while paused (the release gate); dequeue threads wait on it.
        self._running = threading.Event()
        self._wake = WakeSignal(clock)
        self._running.set()
        self._started = False
        self._threads: list[threading.Thread] = []
        self._thread_number = 0
        self._renewer = LeaseRenewer(
            self.config.visibility_timeout,
            self.config.renew_fraction,
            on_renewed=self.state.renewed,
            clock=clock,
            name=f"{name}-renewer",
        )
        self._planner = PriorityPlanner(
            self._sources,
            share_every=self.config.low_share_every,
            empty_recheck=self.config.empty_recheck_seconds,
            empty_recheck_max=self.config.empty_recheck_max_seconds,
            idle_rescan=self.config.idle_rescan_seconds,
            clock=clock,
        )
        self._busy = BusyHandlers(clock)
        self._context = DequeueContext(
            planner=self._planner,
            backoff=Backoff(
                self.config.backoff_min_idle,
                self.config.backoff_delta,
                self.config.backoff_max_idle,
                uniform,
            ),
            handling=MessageHandling(
                handler,
                renewer=self._renewer,
                poison=PoisonMover(self.config.max_dequeue_count, errors, on_poison),
                errors=errors,
                state=self.state,
                stopping=self._stopping,
                visibility_timeout=self.config.visibility_timeout,
                on_handed_back=self._planner.expect_back,
                busy=self._busy,
                clock=clock,
            ),
            renewer=self._renewer,
            state=self.state,
            stopping=self._stopping,
            running=self._running,
            batch_size=self.config.batch_size,
            visibility_timeout=self.config.visibility_timeout,
            handler_parallelism=self.config.handler_parallelism,
            wake_hold=self.config.wake_hold,
            may_retire=self._may_retire,
            work_detected=lambda names: self.on_work_detected(names, announced=False),
            look_again=self._look_again,
            wake=self._wake,
            clock=clock,
        )
        # When the last depth scan ran (clock) and what it found (None: it failed).
        self._last_scan: tuple[float, int | None] = (float("-inf"), None)
        self._safety_poll = threading.Thread(
            target=self._safety_poll_main, name=f"{name}-safety-poll", daemon=True
        )
        # Queues to look at again, and when (clock): see _look_again. The safety poll's
        # thread makes those looks, so no dequeue thread is kept waiting for them.
        self._looks: dict[str, float] = {}
        self._looks_lock = threading.Lock()
        self._poll_wakeup = threading.Event()  # a look was scheduled, or the listener stops

    # --- public --------------------------------------------------------------------------
    def start(self, threads: int | None = None) -> None:
        """Start listening: ``threads`` dequeue threads, or as many as the depth deserves."""
        if threads == 0 and not self.trigger_available:
            raise ValueError("without a push trigger at least one dequeue thread must run")
        with self._lock:
            if self._started:
                raise RuntimeError(f"{self.name} was already started")
            self._started = True
        self._renewer.start()
        if self.trigger_available:
            self._safety_poll.start()
        if threads is None:
            self.on_work_detected()
            return
        with self._lock:
            for _ in range(min(threads, self.config.max_threads)):
                self._spawn()
            if threads == 0:
                self.state.set_safety_poll_only(True)

    def on_work_detected(
        self, queue_names: Collection[str] | None = None, *, announced: bool = True
    ) -> int:
        """Work may have arrived (on ``queue_names``, if the caller knows; else anywhere):
        scale the dequeue threads to the depth; returns how many threads were started.
        Safe to call from any thread, as often as triggers come. ``announced``: by a trigger
        (it starts the ``wake_hold``), not by a dequeue thread that found work."""
        if not self._started or self._stopping.is_set() or not self._running.is_set():
            return 0
        self._planner.forget_empty(queue_names)
        if announced and queue_names is not None:
            self._planner.mark_announced(queue_names)
        self._wake.wake(hold=announced)  # threads asleep in their back-off look again now
        if self.state.active_threads >= self._rule.most_threads:
            # No depth could start another thread (the default rule, "0:1", wants one at
            # most): asking for it would be a request a trigger, and for the controller
            # nearly every result it found after an empty receive, for nothing.
            return 0
        return self._scale_to(self._query_depth(queue_names))

    def pause(self) -> None:
        """Take no new messages until :meth:`resume`: each dequeue thread finishes the messages
        it holds, then waits (no storage requests). The safety poll pauses too."""
        if self._running.is_set():
            self._running.clear()
            log.info("%s paused", self.name)

    def resume(self) -> None:
        """Take messages again, scaling to the depth at once; a no-op unless paused."""
        if self._running.is_set():
            return
        self._running.set()
        log.info("%s resumed", self.name)
        self.on_work_detected()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def stop(self, timeout: float | None = None) -> bool:
        """Stop receiving and wait up to ``timeout`` seconds (default: the visibility
        timeout) for in-flight messages to finish; True if every thread ended in time.

        Messages received but not started are handed back at once; handlers still running
        at the deadline keep going, but their leases are no longer renewed, so if they
        never finish their messages reappear for another instance.
        """
        self._stopping.set()
        self._poll_wakeup.set()
        self._wake.wake()
        self._running.set()  # paused threads wake up and see the stop
        wait = self.config.visibility_timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        finished = not any(thread.is_alive() for thread in threads)
        if self._started:
            self._renewer.stop()
        if self._safety_poll.is_alive():
            self._safety_poll.join(max(deadline - time.monotonic(), 0.0))
        log.info("%s stopped (%s)", self.name, "clean" if finished else "handlers still running")
        return finished

    def snapshot(self) -> ListenerSnapshot:
        return self.state.snapshot()

    def longest_busy(self) -> BusyHandler | None:
        """The handler busy with one message for the longest now (None: every one idle)."""
        return self._busy.longest()

    def wedged(self) -> str | None:
        """Why this listener is wedged (one line): a handler busy with one message for longer
        than ``wedged_handler_seconds``; None otherwise. Cheap enough for every probe."""
        busy = self._busy.longest()
        if busy is None or busy.seconds <= self.config.wedged_handler_seconds:
            return None
        seconds = f"{busy.seconds:.0f}" if busy.seconds >= 10 else f"{busy.seconds:.1f}"
        return (
            f"handler thread {busy.thread} busy for {seconds} s "
            f"(over {self.config.wedged_handler_seconds:g} s) with message {busy.message_id} "
            f"of {busy.queue_name}"
        )

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called: no new receives will be made."""
        return self._stopping.is_set()

    # --- scaling -------------------------------------------------------------------------
    def _query_depth(self, queue_names: Collection[str] | None = None) -> int | None:
        """Total approximate depth of the queues named (every queue if None, or if none of
        them is this listener's), one request each; None on failure."""
        named = [s for s in self._sources if s.name in queue_names] if queue_names else []
        sources = named or self._sources
        try:
            depths = {source.name: source.queue.approximate_count() for source in sources}
        except Exception:
            log.warning("%s could not query queue depth", self.name, exc_info=True)
            self.state.error()
            self._last_scan = (self._clock(), None)
            return None
        self.state.set_depths(depths)
        total = sum(depths.values())
        # A scan of some queues that found them empty says nothing of the others, so only
        # a whole scan may make the safety poll quiet; one that saw messages keeps it awake.
        if not named or total:
            self._last_scan = (self._clock(), total)
        return total

    def _scale_to(self, depth: int | None) -> int:
        # An unknown depth still deserves one thread to go and look.
        wanted = self._rule.optimal_threads(depth) if depth is not None else 1
        with self._lock:
            if self._stopping.is_set():
                return 0
            missing = max(wanted - self.state.active_threads, 0)
            for _ in range(missing):
                self._spawn()
        if missing:
            log.info("%s: depth %s → %d threads (+%d)", self.name, depth, wanted, missing)
        return missing

    def _spawn(self) -> None:
        """Start one dequeue thread; the caller holds ``self._lock``."""
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        self._thread_number += 1
        thread = threading.Thread(
            target=self._dequeue_main,
            name=f"{self.name}-dequeue-{self._thread_number}",
            daemon=True,
        )
        self.state.thread_started()  # counted before it runs, so scaling never overshoots
        self._threads.append(thread)
        thread.start()

    def _may_retire(self) -> bool:
        """Called by a thread idle at the back-off cap: may it end? Counts it if so."""
        with self._lock:
            active = self.state.active_threads
            if self._stopping.is_set() or (active <= 1 and not self.trigger_available):
                return False
            if active <= 1 and self._context.handling.returns_due_by > self._clock():
                return False  # a handed-back message is due soon: keep looking for it
            self.state.thread_ended(retired=True)
            if active == 1:
                self.state.set_safety_poll_only(True)
                log.info("%s: last dequeue thread retired; safety poll only", self.name)
            return True

    def _dequeue_main(self) -> None:
        retired = False
        try:
            retired = dequeue_task_main(self._context)
        except Exception:
            log.exception("%s: dequeue thread crashed", self.name)
        finally:
            if not retired:
                with self._lock:
                    self.state.thread_ended(retired=False)

    # --- the safety poll -------------------------------------------------------------------
    def _look_again(self, queue_name: str, at: float) -> None:
        """Messages of ``queue_name`` may be hidden until ``at`` (clock) by a receive whose
        answer was lost and which the SDK retried: look for them then, as work detected on
        that queue (a depth query, and a thread if it has any)."""
        with self._looks_lock:
            if self._looks.get(queue_name, 0.0) >= at:
                return
            self._looks[queue_name] = at
        self._poll_wakeup.set()

    def _due_looks(self, now: float) -> tuple[list[str], float]:
        """The queues whose look is due (taken off the list), and when the next one is."""
        with self._looks_lock:
            due = [name for name, at in self._looks.items() if at <= now]
            for name in due:
                del self._looks[name]
            return due, min(self._looks.values(), default=float("inf"))

    def _safety_poll_main(self) -> None:
        """While no dequeue thread runs, look at the queues' depth now and then; and make
        the looks :meth:`_look_again` asked for, when they are due."""
        next_tick = self._clock() + self.config.safety_poll_seconds
        while not self._stopping.is_set():
            now = self._clock()
            due, next_look = self._due_looks(now)
            if due:
                self.on_work_detected(due, announced=False)
            if now >= next_tick:
                self._safety_tick()
                next_tick = self._clock() + self.config.safety_poll_seconds
            self._poll_wakeup.wait(max(0.0, min(next_tick, next_look) - self._clock()))
            self._poll_wakeup.clear()

    def _safety_tick(self) -> None:
        if self.state.active_threads or not self._running.is_set():
            return  # threads are watching, or the gate holds us: no request needed
        if not self._safety_scan_due():
            return  # quiet: the owner's work signal stands in for the scan
        depth = self._query_depth()
        if depth:
            log.info("%s: safety poll found %d messages", self.name, depth)
            self._planner.forget_empty()
            self._scale_to(depth)

    def _safety_scan_due(self) -> bool:
        """Scan on every tick, unless quiet: every queue empty at the last scan, and that
        scan younger than ``quiet_rescan_seconds``."""
        quiet = self.config.quiet_rescan_seconds
        if quiet is None:
            return True
        scanned_at, depth = self._last_scan
        return depth != 0 or self._clock() - scanned_at >= quiet
