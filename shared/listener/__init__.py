"""The depth-scaled queue listener (docs/patterns.md), one idea per module.

========================  ==========================================================
``engine.QueueListener``  threads scaled by depth, retired when idle, safety poll
``dequeue``               one dequeue thread's loop
``handling``              one message: handler, delete only after, errors, poison
``backoff.Backoff``       randomized exponential back-off on an empty queue
``scaling.ScalingRule``   depth → threads (the scaling rule)
``state.ListenerState``   counters and snapshot
``priority``              high before normal before low, partitions, minimum share
``renewal``               ``Lease`` and visibility renewal with the newest pop receipt
``poison``                ``<queue>-poison`` records and the ``on_poison`` callback
``heartbeat``             the state as a table entity per instance, throttled
``busy``                  which handler is busy since when (a wedged handler)
========================  ==========================================================
"""

from shared.listener.backoff import Backoff
from shared.listener.busy import BusyHandler
from shared.listener.config import ListenerConfig
from shared.listener.engine import QueueListener
from shared.listener.handling import Handler
from shared.listener.heartbeat import HEARTBEAT_IDLE_SECONDS, Heartbeat, new_instance_id
from shared.listener.poison import UNKNOWN_LAST_ERROR, OnPoison, PoisonRecord
from shared.listener.renewal import Lease
from shared.listener.retry import RetryLater, growing_delay
from shared.listener.scaling import ScalingRule, ScalingRuleError
from shared.listener.source import QueueSource, poison_queue
from shared.listener.state import ListenerSnapshot, ListenerState

__all__ = [
    "HEARTBEAT_IDLE_SECONDS",
    "UNKNOWN_LAST_ERROR",
    "Backoff",
    "BusyHandler",
    "Handler",
    "Heartbeat",
    "Lease",
    "ListenerConfig",
    "ListenerSnapshot",
    "ListenerState",
    "OnPoison",
    "PoisonRecord",
    "QueueListener",
    "QueueSource",
    "RetryLater",
    "ScalingRule",
    "ScalingRuleError",
    "growing_delay",
    "new_instance_id",
    "poison_queue",
]
