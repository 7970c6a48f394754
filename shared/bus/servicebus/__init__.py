"""The trigger bus on Azure Service Bus, through the azure-servicebus SDK (sync API).

**Connecting.** Either a connection string, including the emulator form
(``...;UseDevelopmentEmulator=true``, no TLS, which our test broker also speaks), or a fully
qualified namespace with ``DefaultAzureCredential`` (managed identity in Azure, a developer
login locally).

**Entities.** The AMQP data plane that sends and receives cannot create topics or
subscriptions, and the administration client that can uses HTTPS and Manage rights. So:

* ``manage_entities=True`` (Azure with the *Azure Service Bus Data Owner* role, or a
  connection string with the Manage claim): ``ensure_topic()`` creates the topic and
  ``subscribe(spec)`` creates or corrects the subscription and its correlation filters,
  one rule each (see :mod:`shared.bus.servicebus.entities`);
* ``manage_entities=False`` (the default): the entities must exist already, declared in
  Bicep, in the emulator's ``Config.json``, or added to the test broker; ``ensure_topic()``
  does nothing and ``subscribe(spec)`` only opens a receiver, trusting that the
  subscription's rules are ``spec.rules``. An entity that does not exist surfaces as
  ``MessagingEntityNotFoundError`` on the first publish or receive.

**Receiving.** Peek-lock with ``max_wait_time=timeout``, one message per SDK call: asked
for more, the SDK lingers 0.2 s after the first arrives, and every wake-up would wait with
it; the rest of a burst comes on the next calls, each at once. What a receive returns is
completed (triggers are hints; the queues hold the truth), behind the caller's back. The
SDK's receiver is not thread-safe and cannot interrupt a blocked receive, so each
subscription's SDK calls all run on one thread of its own, and ``close()`` wakes a waiting
``receive()`` at once without touching the SDK (see
:mod:`shared.bus.servicebus.subscription`): long receives, which Service Bus bills like
short ones, still allow a fast stop. (Completing on several threads at once was slower:
they contend for the connection's socket, each blocking 0.2 s in turn; 32 messages took
1.4 s that way against 12 ms one after another, on loopback.) The SDK hands application
properties back with ``bytes`` keys and values (``{b'Priority': b'High'}``, from real
Service Bus too); they are normalised to ``str`` (:mod:`shared.bus.servicebus.received`).

**Failures.** The SDK's default retry makes a refused connection take about 11 s; the
constructor's ``retry_total`` and ``retry_backoff_factor`` keep it short. A receiver whose
connection drops (the broker restarted, a network blip) is reopened within the same
``receive()`` call while its timeout lasts; when the timeout runs out first, that receive
returns nothing and the next one reconnects.
"""

from shared.bus.servicebus.bus import ServiceBusTriggerBus
from shared.bus.servicebus.subscription import ServiceBusSubscription

__all__ = ["ServiceBusSubscription", "ServiceBusTriggerBus"]
