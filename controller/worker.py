"""The controller role: a queue listener over the output queue that reduces into the warehouse.

    worker = ControllerWorker(settings, storage)
    worker.start()        # migrate the warehouse (idempotent), then listen
    worker.snapshot()     # listener state + what this process applied, skipped, closed
    worker.stop(timeout)  # finish in-flight messages, then close the engine

What happens to each message is :mod:`controller.results`; this module only wires it: the
warehouse engine, one order-id allocator per process, the batch records, and a
:class:`~shared.listener.QueueListener` over the output queue and its poison
queue. Any number of workers may run, in threads or processes: exactly-once comes from the
warehouse (applied marks, conditional close), not from there being a single controller.

Next step (docs/walkthrough.md): ``controller.results``, the handler of each result message.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine

from controller.events.relay import EventRelay, start_relay
from controller.failed_chunks import FailedChunks
from controller.outage import WarehouseOutageGuard
from controller.reducer import highest_order_id
from controller.results import ControllerCounters, ResultHandler
from controller.write_turns import write_turns
from shared import listener_settings, otel_metrics
from shared.bus.ports import SubscriptionSpec, TriggerBus
from shared.bus.subscriber import READY_WAIT_SECONDS, TriggerSubscriber
from shared.contracts.batch_records import BatchRecords
from shared.contracts.messages import KIND_PROPERTY, GateEvent, TriggerEvent
from shared.coordination.ids import OrderIdAllocator
from shared.listener import ListenerConfig, ListenerSnapshot, QueueListener, QueueSource
from shared.listener.heartbeat import new_instance_id
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse import make_engine, upgrade

log = logging.getLogger(__name__)


class ControllerSnapshot(BaseModel):
    """The worker's state at one moment (``billing controller`` logs it at stop)."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    running: bool
    listener: ListenerSnapshot | None
    chunks_applied: int
    chunks_skipped: int
    failures_recorded: int
    batches_closed: int
    order_id_reservations: int
    order_id_conflicts: int


def build_result_handler(
    settings: Settings,
    storage: StorageAccount,
    engine: Engine,
    allocator: OrderIdAllocator,
    *,
    turns: AbstractContextManager[object] | None = None,
) -> ResultHandler:
    """The handler a worker runs, on the resources ``settings`` name. ``turns``: what its
    handlers hold while they decode and write a result; default
    :func:`~controller.write_turns.write_turns` as ``settings`` say."""
    if turns is None:
        turns = write_turns(engine, enabled=settings.controller_write_turns)
    return ResultHandler(
        engine=engine,
        results=storage.container(settings.results_container),
        records=BatchRecords(storage.table(settings.batches_table)),
        failures=FailedChunks(storage.table(settings.chunks_table)),
        allocator=allocator,
        turns=turns,
    )


def controller_listener_config(settings: Settings) -> ListenerConfig:
    """The listener settings, receiving only as many results as one receive's handlers apply
    at once (a large chunk is a second of work, and results held in one controller's lease
    are out of reach of the other controllers sharing the queue), with the controller's own
    gentler back-off (``BILLING_CONTROLLER_BACKOFF_*``), held at its first step for a while
    after each trigger (``BILLING_CONTROLLER_WAKE_HOLD_MS``: the batch's results follow)."""
    config = listener_settings.listener_config(
        settings, **listener_settings.controller_backoff(settings)
    )
    return config.model_copy(
        update={
            "batch_size": min(config.batch_size, config.handler_parallelism),
            # One queue: the back-off alone spaces its receives. The per-queue memory of
            # empty answers, made for a processor's twelve queues, would leave the output
            # queue unasked for 0.1, 0.2, 0.4 s… after empty receives, results there or not.
            "empty_recheck_seconds": 0.0,
            "empty_recheck_max_seconds": 0.0,
        }
    )


def order_id_allocator(
    settings: Settings, storage: StorageAccount, floor: Callable[[], int] | None = None
) -> OrderIdAllocator:
    """The process's allocator: one counter blob in the control container for everyone;
    ``floor``, the warehouse's highest order id, keeps it from handing out used ids."""
    return OrderIdAllocator(
        storage.container(settings.control_container),
        range_size=settings.id_range_size,
        max_retries=settings.id_max_retries,
        floor=floor,
    )


#: Every controller shares one subscription (one wakes per batch, which is enough: it is the
#: queue, not the trigger, that holds the work). It takes the gate's broadcasts too: a
#: release sets held processors to work, whose results follow within seconds while the
#: controller may be deep in its back-off. Declared in Bicep for Service Bus.
CONTROLLER_SUBSCRIPTION = SubscriptionSpec(
    name="controller", rules=({KIND_PROPERTY: "work"}, {KIND_PROPERTY: "gate"})
)


class ControllerWorker:
    """Reduces rated chunks from the output queue into the warehouse until stopped."""

    def __init__(
        self,
        settings: Settings,
        storage: StorageAccount,
        *,
        engine: Engine | None = None,
        listener_config: ListenerConfig | None = None,
        instance_id: str | None = None,
        bus: TriggerBus | None = None,
        events_bus: TriggerBus | None = None,
    ) -> None:
        """``engine``: a warehouse engine to use (and leave open); default: one made from
        ``settings.resolved_warehouse_url`` and disposed at stop. ``listener_config``:
        default :func:`controller_listener_config`. ``bus``: the trigger topic; the
        controller then hears about each accepted batch and looks at its queue at once
        instead of waiting out its back-off (its results follow within seconds).
        ``events_bus``: the ``batch-events`` topic its relay publishes to; default: opened
        from ``settings`` and closed at stop (:mod:`controller.events`)."""
        self.settings = settings
        self.storage = storage
        self.instance_id = instance_id or new_instance_id()
        self._given_engine = engine
        self._engine: Engine | None = engine
        self._config = listener_config or controller_listener_config(settings)
        self._allocator = order_id_allocator(settings, storage, floor=self._highest_order_id)
        self._handler: ResultHandler | None = None
        self._listener: QueueListener | None = None
        self._outage: WarehouseOutageGuard | None = None
        self._bus = bus
        self._subscriber: TriggerSubscriber | None = None
        self._events_bus = events_bus
        self._relay: EventRelay | None = None
        self._lock = threading.Lock()

    @property
    def warehouse_url(self) -> str:
        if self._given_engine is not None:
            return self._given_engine.url.render_as_string(hide_password=False)
        return self.settings.resolved_warehouse_url

    def _highest_order_id(self) -> int:
        """The allocator's floor: asked at its first reservation, after start()."""
        if self._engine is None:
            raise RuntimeError("the controller worker has not been started")
        return highest_order_id(self._engine)

    @property
    def handler(self) -> ResultHandler:
        """The message handler (after :meth:`start`)."""
        if self._handler is None:
            raise RuntimeError("the controller worker has not been started")
        return self._handler

    def start(self) -> None:
        """Migrate the warehouse to the latest schema, then start listening."""
        with self._lock:
            if self._listener is not None:
                raise RuntimeError("a controller worker starts once; make a new one")
            upgrade(self.warehouse_url)  # idempotent; safe with several controllers starting
            if self._engine is None:
                self._engine = make_engine(self.warehouse_url)
            self._handler = build_result_handler(
                self.settings, self.storage, self._engine, self._allocator
            )
            # an unreachable warehouse pauses the listener instead of poisoning its messages
            self._outage = WarehouseOutageGuard(self._handler.handle, self._engine)
            self._listener = QueueListener(
                [QueueSource.from_account(self.storage, self.settings.output_queue)],
                self._outage.handle,
                self._config,
                on_poison=self._handler.on_poison,
                name=f"controller-{self.instance_id}",
            )
            self._outage.attach(self._listener)
            self._listener.start()
            self._relay = start_relay(self.settings, self._engine, self._events_bus)
            otel_metrics.observe_listener(self._listener.name, self._listener.snapshot)
            if self._bus is not None:
                listener, handler = self._listener, self._handler

                def on_work(event: TriggerEvent) -> None:
                    listener.on_work_detected()
                    handler.expect(event.batch_id)

                def on_gate(event: GateEvent) -> None:
                    if event.released:  # the held batches' results are coming
                        listener.on_work_detected()

                self._subscriber = TriggerSubscriber(
                    self._bus,
                    [CONTROLLER_SUBSCRIPTION],
                    on_work=on_work,
                    on_gate=on_gate,
                )
                self._subscriber.start()
            log.info(
                "controller %s listening on %s, warehouse %s",
                self.instance_id,
                self.settings.output_queue,
                self._engine.url.render_as_string(hide_password=True),
            )
            if self._engine.dialect.name == "sqlite" and not self.settings.controller_write_turns:
                log.info("its handlers do not take turns to write (BILLING_CONTROLLER_WRITE_TURNS)")
            subscriber = self._subscriber
        # Outside the lock (stop() takes it): a trigger published before the subscription
        # opens is never heard, and its batch's results would wait out the back-off.
        if subscriber is not None and not subscriber.wait_ready(READY_WAIT_SECONDS):
            log.warning(
                "controller %s: trigger subscription not open yet; its back-off covers until it is",
                self.instance_id,
            )

    def stop(self, timeout: float | None = None) -> bool:
        """Stop listening and wait up to ``timeout`` s for in-flight messages; True if clean.

        A message still being handled at the deadline is not deleted: it reappears and is
        skipped or applied by whoever takes it next.
        """
        with self._lock:
            if self._subscriber is not None:
                self._subscriber.stop(timeout or 2.0)
            if self._outage is not None:
                self._outage.stop()
            if self._relay is not None:
                self._relay.stop()
            listener = self._listener
            finished = listener.stop(timeout) if listener is not None else True
            if listener is not None:
                otel_metrics.forget_listener(listener.name)
            if self._given_engine is None and self._engine is not None:
                self._engine.dispose()
                self._engine = None
        return finished

    @property
    def warehouse_unreachable(self) -> bool:
        """True while the listener is paused for an unreachable warehouse (see
        :mod:`controller.outage`)."""
        return self._outage is not None and self._outage.in_outage

    @property
    def wedged_handler(self) -> str | None:
        """Why the listener is wedged: a handler stuck on one message past
        ``BILLING_WEDGED_HANDLER_SECONDS`` (one line); None otherwise."""
        listener = self._listener
        return listener.wedged() if listener is not None else None

    @property
    def listening(self) -> bool:
        """Started and not stopped (paused for an outage counts: it resumes by itself)."""
        listener = self._listener
        return listener is not None and not listener.stopping

    def snapshot(self) -> ControllerSnapshot:
        listener = self._listener
        counters = self._handler.counters() if self._handler else ControllerCounters()
        return ControllerSnapshot(
            instance_id=self.instance_id,
            running=self.listening,
            listener=listener.snapshot() if listener is not None else None,
            chunks_applied=counters.chunks_applied,
            chunks_skipped=counters.chunks_skipped,
            failures_recorded=counters.failures_recorded,
            batches_closed=counters.batches_closed,
            order_id_reservations=self._allocator.reservations,
            order_id_conflicts=self._allocator.conflicts,
        )
