"""The dashboard's sampler, built and started with the app (see :func:`create_app`)."""

from __future__ import annotations

from initiator.dependencies import Services
from initiator.observability.live import QueueInfo, queue_infos
from initiator.observability.readings import Readings
from initiator.observability.sampler import Sampler


def start_sampler(services: Services, readings: Readings) -> tuple[list[QueueInfo], Sampler]:
    """The queues it measures, and the sampler, started (it sleeps until someone watches)."""
    queues = queue_infos(services.settings)
    sampler = Sampler([services.storage.queue(q.name) for q in queues], readings)
    sampler.start()
    return queues, sampler
