"""The Service Bus trigger bus: one topic, publishing and opening subscriptions.

See the package docstring for how it connects, who creates entities, and why retries are
short.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from azure.core.credentials import TokenCredential
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSender
from azure.servicebus.management import ServiceBusAdministrationClient

from shared import meter
from shared.bus.ports import SubscriptionSpec
from shared.bus.servicebus.entities import EntityManager
from shared.bus.servicebus.subscription import ServiceBusSubscription
from shared.settings import Settings

DEFAULT_RETRY_TOTAL = 2
DEFAULT_RETRY_BACKOFF_FACTOR = 0.2


class ServiceBusTriggerBus:
    """One topic of a Service Bus namespace."""

    def __init__(
        self,
        topic: str,
        *,
        connection_string: str | None = None,
        fully_qualified_namespace: str | None = None,
        credential: TokenCredential | None = None,
        manage_entities: bool = False,
        retry_total: int = DEFAULT_RETRY_TOTAL,
        retry_backoff_factor: float = DEFAULT_RETRY_BACKOFF_FACTOR,
    ) -> None:
        self._topic = topic
        admin: ServiceBusAdministrationClient | None = None
        if connection_string:
            conn_str = connection_string

            def new_client() -> ServiceBusClient:
                return ServiceBusClient.from_connection_string(
                    conn_str, retry_total=retry_total, retry_backoff_factor=retry_backoff_factor
                )

            if manage_entities:
                admin = ServiceBusAdministrationClient.from_connection_string(connection_string)
        elif fully_qualified_namespace:
            namespace = fully_qualified_namespace
            if credential is None:
                from azure.identity import DefaultAzureCredential

                credential = DefaultAzureCredential()
            token_credential = credential  # one credential (and token cache) for every client

            def new_client() -> ServiceBusClient:
                return ServiceBusClient(
                    namespace,
                    token_credential,
                    retry_total=retry_total,
                    retry_backoff_factor=retry_backoff_factor,
                )

            if manage_entities:
                admin = ServiceBusAdministrationClient(fully_qualified_namespace, credential)
        else:
            raise ValueError("give a connection string or a fully qualified namespace")
        # This client publishes; each subscription opens its own (see subscription.py).
        self._new_client: Callable[[], ServiceBusClient] = new_client
        self._client = new_client()
        self._entities = EntityManager(admin, topic) if admin is not None else None
        self._sender: ServiceBusSender | None = None
        self._send_lock = threading.Lock()
        self._subscriptions: list[ServiceBusSubscription] = []

    @classmethod
    def from_settings(cls, settings: Settings, topic: str | None = None) -> ServiceBusTriggerBus:
        topic = topic or settings.trigger_topic
        if settings.servicebus_connection_string is not None:
            return cls(
                topic,
                connection_string=settings.servicebus_connection_string.get_secret_value(),
                manage_entities=settings.servicebus_manage_entities,
            )
        return cls(
            topic,
            fully_qualified_namespace=settings.servicebus_namespace,
            manage_entities=settings.servicebus_manage_entities,
        )

    @property
    def topic(self) -> str:
        return self._topic

    def ensure_topic(self) -> None:
        """Create the topic when managing entities; otherwise it is declared elsewhere."""
        if self._entities is not None:
            self._entities.ensure_topic()

    def publish(self, body: bytes, properties: Mapping[str, str]) -> None:
        # the SDK asks for an (invariant) dict of every AMQP-able type; ours are str to str
        application_properties: dict[str | bytes, Any] = dict(properties.items())
        message = ServiceBusMessage(body, application_properties=application_properties)
        with self._send_lock:
            if self._sender is None:
                self._sender = self._client.get_topic_sender(self._topic)
            meter.record("bus", "send")
            self._sender.send_messages(message)

    def subscribe(self, spec: SubscriptionSpec) -> ServiceBusSubscription:
        if self._entities is not None:
            self._entities.ensure_subscription(spec)
        subscription = ServiceBusSubscription(self._new_client, self._topic, spec.name)
        self._subscriptions.append(subscription)
        return subscription

    def close(self) -> None:
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions.clear()
        with self._send_lock:
            if self._sender is not None:
                self._sender.close()
                self._sender = None
        if self._entities is not None:
            self._entities.close()
        self._client.close()
