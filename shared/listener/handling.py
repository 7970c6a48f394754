"""Everything that happens to one received message, from lease to delete.

The rule that keeps the pipeline lossless: a message is deleted **only after**
the handler has returned, i.e. after its effect is durable. A handler that raises leaves
the message to reappear when its visibility runs out; one dequeued too often goes to the
poison queue instead of the handler; one received while the listener is stopping is handed
back at once (visibility 0) for another instance to take.

Next step (docs/walkthrough.md): the handler it calls: ``processor.rating_step`` in a
processor, ``controller.results`` in the controller.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from azure.core.exceptions import ResourceNotFoundError

from shared.listener.busy import BusyHandlers
from shared.listener.poison import ErrorMemory, PoisonMover, describe_error
from shared.listener.renewal import Lease, LeaseRenewer
from shared.listener.retry import RetryLater
from shared.listener.state import ListenerState
from shared.tracing import delivering

log = logging.getLogger(__name__)

#: What the engine calls for each message. Raise to leave the message to reappear; return
#: only once the message's effect is durable (the engine deletes it right after). What it
#: returns is ignored.
Handler = Callable[[Lease], object]


class MessageHandling:
    """Hands one lease to the handler and settles it; never raises."""

    def __init__(
        self,
        handler: Handler,
        *,
        renewer: LeaseRenewer,
        poison: PoisonMover,
        errors: ErrorMemory,
        state: ListenerState,
        stopping: threading.Event,
        visibility_timeout: float,
        on_handed_back: Callable[[str, float], object] | None = None,
        busy: BusyHandlers | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``on_handed_back(queue_name, at)``: a message was handed back to that queue and
        is visible again at ``at`` (``clock`` time). ``busy``: where each handling is marked
        from its start until it is settled."""
        self.busy = busy or BusyHandlers(clock)
        self._handler = handler
        self._on_handed_back = on_handed_back
        self._visibility_timeout = visibility_timeout
        self._due_lock = threading.Lock()
        self._returns_due_by = 0.0
        self._renewer = renewer
        self._poison = poison
        self._errors = errors
        self._state = state
        self._stopping = stopping
        self._clock = clock

    @property
    def returns_due_by(self) -> float:
        """When the last message handed back (failed or deferred) is due to reappear.

        Until then the listener keeps one dequeue thread: were the last one to retire, only
        the slow safety poll would find the message again.
        """
        with self._due_lock:
            return self._returns_due_by

    def _expect_back(self, lease: Lease, after_seconds: float) -> None:
        self.expect_back(lease.queue_name, self._clock() + after_seconds)

    def expect_back(self, queue_name: str, at: float) -> None:
        """Messages of ``queue_name`` this listener cannot see may be visible again at ``at``
        (``clock`` time): handed back, or hidden by a receive whose answer never came."""
        with self._due_lock:
            self._returns_due_by = max(self._returns_due_by, at)
        if self._on_handed_back is not None:
            self._on_handed_back(queue_name, at)

    def handle(self, lease: Lease) -> None:
        with self.busy.busy(lease.queue_name, lease.message_id):
            self._settle(lease)

    def _settle(self, lease: Lease) -> None:
        latency: float | None = None
        failed = True
        try:
            if self._stopping.is_set():
                self._abandon(lease)
                failed = False
            elif self._poison.is_poison(lease.received):
                failed = not self._move_to_poison(lease)
            else:
                latency = self._run_handler(lease)
                failed = latency is None
        except RetryLater as retry:
            failed = not self._defer(lease, retry)
        except Exception:  # a bug here must not kill the dequeue thread
            log.exception("settling message %s of %s failed", lease.message_id, lease.queue_name)
        finally:
            self._renewer.drop(lease)
            self._state.finished(latency_seconds=latency, error=failed)

    def _run_handler(self, lease: Lease) -> float | None:
        """The handling latency, or None if the message is left to reappear."""
        started = self._clock()
        try:
            with delivering(lease.queue_name, lease.message_id):  # for the handler's span
                self._handler(lease)
        except RetryLater:
            raise
        except Exception as error:
            lease.release()  # stop renewing: it reappears when its visibility runs out
            self._expect_back(lease, self._visibility_timeout)
            self._errors.remember(lease.message_id, describe_error(error))
            log.error(
                "handler failed on message %s of %s (dequeue %d); it will reappear",
                lease.message_id,
                lease.queue_name,
                lease.dequeue_count,
                exc_info=True,
            )
            return None
        message = lease.release()
        try:
            lease.source.queue.delete(message)
        except ResourceNotFoundError:
            # The receipt went stale (the lease was lost): another consumer may handle it
            # again, which the handlers' idempotency absorbs.
            log.warning(
                "message %s of %s was handled but its lease was lost; it may be handled again",
                lease.message_id,
                lease.queue_name,
            )
            return None
        self._errors.forget(lease.message_id)
        return self._clock() - started

    def _move_to_poison(self, lease: Lease) -> bool:
        message = lease.release()
        try:
            self._poison.move(message, lease.source)
        except Exception:
            log.exception(
                "could not poison message %s of %s; it will reappear", message.id, lease.queue_name
            )
            return False
        self._state.poisoned()
        return True

    def _defer(self, lease: Lease, retry: RetryLater) -> bool:
        """Bring the message back after the handler's delay instead of its full timeout."""
        message = lease.release()
        try:
            lease.source.queue.update_visibility(message, retry.delay)
        except Exception:  # best effort: otherwise it reappears after its timeout
            log.warning("could not defer message %s of %s", message.id, lease.queue_name)
            self._expect_back(lease, self._visibility_timeout)
            return False
        self._expect_back(lease, retry.delay)
        log.info(
            "message %s of %s deferred %d s: %s", message.id, lease.queue_name, retry.delay, retry
        )
        return True

    def _abandon(self, lease: Lease) -> None:
        message = lease.release()
        try:
            lease.source.queue.update_visibility(message, 0)
        except Exception:  # best effort: otherwise it reappears after its timeout
            log.info("could not hand back message %s of %s", message.id, lease.queue_name)
