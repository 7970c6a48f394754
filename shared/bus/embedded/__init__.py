"""The embedded trigger bus: Service Bus topic semantics in one local folder, no server.

See :mod:`shared.bus.embedded.bus` for the layout and :mod:`shared.bus.embedded.doorbell`
for how a publish in one process wakes a receiver blocked in another within milliseconds.
"""

from shared.bus.embedded.bus import EmbeddedTriggerBus
from shared.bus.embedded.subscription import EmbeddedSubscription

__all__ = ["EmbeddedSubscription", "EmbeddedTriggerBus"]
