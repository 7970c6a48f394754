"""What the initiator shows about the system: ``/metrics`` for Prometheus and the dashboard.

Both read the same cached views (:mod:`~initiator.observability.readings`): the batch
records and the processors' heartbeats, at most once per few seconds whoever asks.
"""
