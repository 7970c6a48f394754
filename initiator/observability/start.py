"""The dashboard's sampler, built and started with the app (see :func:`create_app`)."""

from __future__ import annotations

from initiator.dependencies import Services
from initiator.observability.live import QueueInfo, queue_infos
from initiator.observability.readings import Readings
from initiator.observability.sampler import Sampler
from shared.cost.estimate import requests_cost
from shared.cost.prices import AzurePrices


def start_sampler(services: Services, readings: Readings) -> tuple[list[QueueInfo], Sampler]:
    """The queues it measures, and the sampler, started (it sleeps until someone watches)."""
    queues = queue_infos(services.settings)
    prices = AzurePrices()
    sampler = Sampler(
        [services.storage.queue(q.name) for q in queues],
        readings,
        cost=lambda per_minute: requests_cost(per_minute, prices),
    )
    sampler.start()
    return queues, sampler
