"""One processor instance: the listener engine wired to the rating step, the trigger and the gate.

    worker = ProcessorWorker(settings, storage, bus)
    worker.start()      # heartbeat, trigger subscription, then the gate: held or running
    ...
    worker.stop(5)      # graceful: stop receiving, finish in-flight, last heartbeat

What each part does, top-down:

* the **listener** (:class:`~shared.listener.QueueListener`) reads every partition of the
  served priorities' work queues, high before normal before low, with threads scaled by
  depth and retired when idle, leaving only a slow safety poll;
* its **handler** is the :class:`~processor.rating_step.RatingStep` — the message is deleted
  only after the result blob and the result message are stored;
* a work item that keeps failing goes to ``<queue>-poison`` and a
  :class:`~shared.contracts.messages.ChunkFailed` goes to the output queue
  (:class:`~processor.chunk_failures.ChunkFailureReporter`);
* the **trigger subscriber** wakes the listener on a trigger and applies gate broadcasts;
* the **gate keeper** holds the listener until the release gate is open;
* the **control watch** reads the work signal each safety tick (one request, whatever the
  number of queues) and, when it moved, re-reads the gate and looks at the queues: the
  listener's own safety poll stays quiet while its last scan found them empty;
* the **heartbeat** writes the listener's state to the heartbeats table for status pages.

The worker owns none of ``storage`` and ``bus``: whoever opened them closes them after
:meth:`ProcessorWorker.stop`. Provisioning (queues, tables, topic) happens before, once per
deployment or process group (:func:`shared.provision.ensure_resources`).

Next step (docs/walkthrough.md): ``shared.listener.engine``, the listener that drives the
rating step.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from processor.chunk_failures import ChunkFailureReporter
from processor.control_watch import ControlWatch
from processor.gate_keeper import GateKeeper
from processor.rating_step import RatingStep
from processor.row_budget import RowBudget
from processor.subscriptions import fans_out, subscription_specs
from processor.work_queues import work_sources
from shared import meter, otel_metrics
from shared.bus.ports import TriggerBus
from shared.bus.subscriber import READY_WAIT_SECONDS, RECEIVE_SECONDS, TriggerSubscriber
from shared.contracts.batch_records import BatchRecords
from shared.contracts.messages import TriggerEvent
from shared.domain.pricebook_store import PricebookStore
from shared.domain.priority import Priority
from shared.lifecycle import time_left
from shared.listener import (
    HEARTBEAT_IDLE_SECONDS,
    Heartbeat,
    Lease,
    ListenerConfig,
    ListenerSnapshot,
    QueueListener,
    new_instance_id,
)
from shared.listener_settings import listener_config
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.tracing import BATCH_ID, TOPIC_SYSTEM, consumer_span

log = logging.getLogger(__name__)

#: A busy processor's heartbeat interval: what readers of its figures may lag behind.
HEARTBEAT_BUSY_SECONDS = 10.0


def processor_listener_config(settings: Settings, **overrides: Any) -> ListenerConfig:
    """The work queues' listener settings: the shared ones, plus what a processor can rely
    on because its new work announces itself (trigger and work signal) and its own receive
    size (``BILLING_PROCESSOR_DEQUEUE_BATCH_SIZE``: work items are whole chunks), with
    ``overrides`` (:class:`~shared.listener.ListenerConfig` fields) on top."""
    return listener_config(
        settings,
        **{
            "quiet_rescan_seconds": settings.quiet_rescan_seconds,
            "idle_rescan_seconds": settings.idle_rescan_seconds,
            "batch_size": settings.processor_dequeue_batch_size,
            **overrides,
        },
    )


def rating_step(settings: Settings, storage: StorageAccount, instance_id: str) -> RatingStep:
    """The processor's handler, on ``storage``'s containers and queues."""
    return RatingStep(
        payloads=storage.container(settings.payload_container),
        results=storage.container(settings.results_container),
        output=storage.queue(settings.output_queue),
        pricebooks=PricebookStore(storage.container(settings.control_container)),
        batches=BatchRecords(storage.table(settings.batches_table)),
        instance_id=instance_id,
        budget=RowBudget(settings.processor_rows_in_flight),
        turns=threading.Lock() if settings.processor_rating_turns else None,
        result_format=settings.result_format,
    )


class WorkerSnapshot(BaseModel):
    """A processor instance at one moment: its gate and its listener's state."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    priorities: list[Priority]
    released: bool
    paused: bool
    started_at: datetime | None
    listener: ListenerSnapshot


class ProcessorWorker:
    """A processor instance in this process (several per process are fine, e.g. in tests)."""

    def __init__(
        self,
        settings: Settings,
        storage: StorageAccount,
        bus: TriggerBus,
        *,
        priorities: Iterable[Priority] | None = None,
        instance_id: str | None = None,
        per_instance_subscriptions: bool | None = None,
        trigger_receive_seconds: float = RECEIVE_SECONDS,
        heartbeat_busy_seconds: float = HEARTBEAT_BUSY_SECONDS,
        heartbeat_idle_seconds: float = HEARTBEAT_IDLE_SECONDS,
        **listener_overrides: Any,
    ) -> None:
        """``listener_overrides`` are :class:`~shared.listener.ListenerConfig` fields (e.g.
        ``safety_poll_seconds=1``) on top of the settings; the work signal is read every
        ``safety_poll_seconds``, and every queue's depth once per ``quiet_rescan_seconds``
        while idle (``BILLING_QUIET_RESCAN_SECONDS``); a dequeue thread backing off asks a
        queue it found empty again after ``idle_rescan_seconds``.

        ``per_instance_subscriptions``: one trigger subscription per instance, with a rule
        per served priority (every instance wakes), or the shared ``processors-<priority>``
        ones (one instance wakes). Default: per instance whenever the bus can create them;
        pass True when they are declared up front for fixed instance ids.
        ``trigger_receive_seconds``: how long one trigger receive blocks (billed per call on
        Service Bus; a stop does not wait for it)."""
        self.settings = settings
        self.instance_id = instance_id or new_instance_id()
        self.priorities: list[Priority] = list(
            settings.processor_priorities if priorities is None else priorities
        )
        if not self.priorities:
            raise ValueError("a processor must serve at least one priority")
        config = processor_listener_config(settings, **listener_overrides)
        self.per_instance_subscriptions = (
            fans_out(settings) if per_instance_subscriptions is None else per_instance_subscriptions
        )
        output = storage.queue(settings.output_queue)
        control = storage.container(settings.control_container)
        self.step = rating_step(settings, storage, self.instance_id)
        self.listener = QueueListener(
            work_sources(storage, settings, self.priorities),
            self._handle,
            config,
            trigger_available=True,
            on_poison=ChunkFailureReporter(output),
            name=f"processor-{self.instance_id}",
        )
        self.gate = GateKeeper(
            control, self.listener, start_retry_pause=settings.storage_retry_backoff_seconds
        )
        self.watch = ControlWatch(
            control,
            on_change=self._on_signal,
            interval=config.safety_poll_seconds,
            name=f"control-watch-{self.instance_id}",
        )
        self.subscriber = TriggerSubscriber(
            bus,
            subscription_specs(
                self.instance_id, self.priorities, per_instance=self.per_instance_subscriptions
            ),
            on_work=self._on_trigger,
            on_gate=self.gate.on_event,
            on_reconnect=self._on_reconnect,
            receive_seconds=trigger_receive_seconds,
            name=f"trigger-{self.instance_id}",
        )
        self.heartbeat = Heartbeat(
            storage.table(settings.heartbeats_table),
            self.listener.state,
            role="processor",
            instance_id=self.instance_id,
            busy_interval=heartbeat_busy_seconds,
            idle_interval=heartbeat_idle_seconds,
            extra=self._heartbeat_figures,
        )
        self._started_at: datetime | None = None
        self._rated_lock = threading.Lock()
        self._rated_transactions = 0

    def start(self) -> None:
        """Subscribe first, then read the gate: a release broadcast in between is not missed."""
        self._started_at = datetime.now(UTC)
        otel_metrics.observe_listener(self.listener.name, self.listener.snapshot)
        self.heartbeat.start()
        self.subscriber.start()
        if not self.subscriber.wait_ready(READY_WAIT_SECONDS):
            log.warning(
                "%s: trigger subscriptions not open yet; the safety poll covers until they are",
                self.instance_id,
            )
        self.watch.start()  # its baseline first: a signal moved after it is not missed
        self.gate.start()
        log.info(
            "processor %s started on %s priority work (trigger: %s)",
            self.instance_id,
            ",".join(self.priorities),
            "its own subscription" if self.per_instance_subscriptions else "shared subscriptions",
        )

    def stop(self, timeout: float | None = None) -> bool:
        """Stop receiving, let in-flight messages finish (up to ``timeout``, default the
        visibility timeout), write a last heartbeat. True if everything ended in time."""
        wait = self.listener.config.visibility_timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        self.watch.stop()
        self.gate.stop()
        subscriber_done = self.subscriber.stop(time_left(deadline))
        listener_done = self.listener.stop(time_left(deadline))
        self.heartbeat.stop()
        otel_metrics.forget_listener(self.listener.name)
        log.info("processor %s stopped", self.instance_id)
        return subscriber_done and listener_done

    def snapshot(self) -> WorkerSnapshot:
        return WorkerSnapshot(
            instance_id=self.instance_id,
            priorities=self.priorities,
            released=self.gate.released,
            paused=self.listener.paused,
            started_at=self._started_at,
            listener=self.listener.snapshot(),
        )

    # --- wiring ---------------------------------------------------------------------------
    def _handle(self, lease: Lease) -> None:
        rated = self.step.handle(lease.content, lease.dequeue_count)
        with self._rated_lock:
            self._rated_transactions += rated

    def _heartbeat_figures(self) -> dict[str, Any]:
        """What the dashboard's throughput and request charts need beyond the listener's
        state: transactions rated, and this process's storage requests by kind (a process
        may hold several instances; readers count each process once, by host and pid)."""
        with self._rated_lock:
            rated = self._rated_transactions
        return {
            "rated_transactions": rated,
            "storage_requests": json.dumps(meter.snapshot(), sort_keys=True),
        }

    def _on_trigger(self, event: TriggerEvent) -> None:
        with consumer_span(
            "trigger",
            parent=event.trace,
            system=TOPIC_SYSTEM,
            destination=self.settings.trigger_topic,
            attributes={BATCH_ID: event.batch_id},
        ):
            # The event names the queues it filled: only those lose their empty back-off.
            started = self.listener.on_work_detected(event.queue_names)
        log.debug("trigger for batch %s: +%d threads", event.batch_id, started)

    def _on_signal(self) -> None:
        """The work signal moved: the gate may have changed, work may have arrived."""
        self.gate.refresh()
        started = self.listener.on_work_detected()
        log.debug("%s: work signal moved: +%d threads", self.instance_id, started)

    def _on_reconnect(self) -> None:
        """Events may have been missed while the subscription was down: look again."""
        self.gate.refresh()
        self.listener.on_work_detected()
