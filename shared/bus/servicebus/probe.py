"""Does Service Bus answer? Open a sender on the trigger topic over AMQP, then close it.

Opening a sender link is the cheapest request that proves the namespace answers and
accepts the credentials (the connection, the token put on ``$cbs``, the attach). It sends
nothing. (It does not prove the topic exists: Service Bus refuses a link to an unknown
entity with a detach that may come only after the attach was answered; that surfaces on
the first publish or receive, as ``MessagingEntityNotFoundError``.)

Used by the roles while they wait for their dependencies at start (:mod:`billing.startup`)
and by ``billing-healthcheck --servicebus``, which can probe the Service Bus emulator from
another container: the emulator's image has no shell to run a probe in.
"""

from __future__ import annotations

from azure.servicebus import ServiceBusClient

from shared.settings import Settings

#: One quick try per call: the caller decides when to try again.
PROBE_RETRY_TOTAL = 0


def open_topic_sender(settings: Settings) -> None:
    """Attach a sender to ``settings.trigger_topic`` and detach; raise if that fails."""
    if settings.servicebus_connection_string is not None:
        client = ServiceBusClient.from_connection_string(
            settings.servicebus_connection_string.get_secret_value(),
            retry_total=PROBE_RETRY_TOTAL,
        )
    elif settings.servicebus_namespace:
        from azure.identity import DefaultAzureCredential

        client = ServiceBusClient(
            settings.servicebus_namespace, DefaultAzureCredential(), retry_total=PROBE_RETRY_TOTAL
        )
    else:
        raise ValueError("no Service Bus is configured (BILLING_SERVICEBUS_*)")
    with client, client.get_topic_sender(settings.trigger_topic):
        pass  # entering the sender opens its link; leaving closes it
