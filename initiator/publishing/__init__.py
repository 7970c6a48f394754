"""Publishing an accepted batch, in an order that survives a crash at any point.

A crash must never let processors see half a batch, and must never lose a batch that was
answered ``202``. The steps, each durable before the next begins:

1. **Payload blobs**, one per chunk (``<batch_id>/<chunk:06d>``), written while the body is
   still being parsed. Just before the first one, the batch record is inserted as
   ``receiving``, so that anything a crash leaves behind can be found from the table.
   A rejected batch stops here: its blobs and record are deleted before the 4xx answer.
2. **Idempotency mapping** (only with an ``Idempotency-Key``): key → batch, create-only.
3. **Record → ``accepting``**, with the control totals, chunk count and pinned pricebook.
4. **Work items**, one per chunk, round-robin over the priority's partitions.
5. **Record → ``accepted``**: the commit point. From here the batch is never lost; the
   ``202`` is sent after this step.
6. **Trigger event** on the topic. Losing it only delays processing until the processors'
   safety poll.

Why this is safe: processors rate a work item only when its batch is ``accepted`` (see
:func:`shared.contracts.batch_records.admission`); before that they leave the item to reappear, and
once the batch is gone or ``abandoned`` they drop it. Every status change is an ETag-guarded
update, so the initiator's "accepted" and the sweeper's "abandoned" cannot both win. A crash
before step 5 leaves a record in ``receiving``/``accepting`` that stops being refreshed; the
sweeper (:func:`sweep_orphans`, at every initiator start and then every few minutes)
removes such a batch's blobs, mapping and record, and the items it had sent are dropped by
processors. A crash after step
5 leaves an accepted batch whose work is on the queues: it is processed.
"""

from initiator.publishing.outcome import IntakeOutcomeUnknownError
from initiator.publishing.publisher import (
    STEPS,
    BatchIntent,
    FaultHook,
    Publication,
    Publisher,
)
from initiator.publishing.sweeper import OrphanSweeper, is_orphan, sweep_orphans

__all__ = [
    "STEPS",
    "BatchIntent",
    "FaultHook",
    "IntakeOutcomeUnknownError",
    "OrphanSweeper",
    "Publication",
    "Publisher",
    "is_orphan",
    "sweep_orphans",
]
