"""Batch events: the outbox the close writes, the relay that publishes it, the webhooks.

A batch's outcome (completed, failed) is written as an event row in the very transaction
that closes the batch (:mod:`.outbox`), so that no crash can close a batch without its
event or write its event twice. The relay (:mod:`.relay`), a thread of each controller,
publishes pending rows to the ``batch-events`` topic and marks them published only once
the bus took them, then hands them to the webhook deliveries (:mod:`.webhooks`).
"""
