"""Which storage operations the SDKs retry by themselves, and what a caller must do after.

The Azure SDKs retry a failed request inside their pipeline, below our ports. Whether that
blind retry is harmless depends on the operation, and on which of the two retry policies
the client runs:

* **blob and queue** (the storage SDKs' ``LinearRetry``): every method is retried after a
  timeout, a lost response (the request may have been applied) or a 5xx but 501/505. They
  never retry a 4xx, 429 included; those services do not throttle with 429 but with 503
  ``ServerBusy``.
* **table** (azure-core's ``RetryPolicy``): retries 408/429/500/502/503/504 on idempotent
  methods (GET, HEAD, PUT, DELETE); POST and PATCH only on 500/503/504 (or a 429 that carries
  ``Retry-After``), and *never* after a timeout or a lost response, which then reach us as
  ``ServiceRequestError`` / ``ServiceResponseError``.

What that gives, for each operation of :mod:`shared.storage.ports` (``OPERATIONS``):

==========================  ======  =====  ===============================================
operation                   method  SDK    after a lost response, the caller sees ...
==========================  ======  =====  ===============================================
any read (get, head, list,  GET     yes    the answer of the retry: **safe**
query, peek, count)
queue.receive               GET     yes    the retry's messages; the first attempt's are
                                           hidden for the visibility timeout, then come
                                           back with a higher dequeue count: **safe** (work
                                           items are redelivered anyway), only slower
queue.send                  POST    yes    success, and the message is **queued twice**:
                                           consumers must be idempotent (they are: the
                                           controller applies a chunk once by its mark)
queue.delete                DELETE  yes    ``ResourceNotFoundError``: the message *was*
                                           deleted; read the 404 as "gone", not as a loss
queue.update_visibility     PUT     yes    ``ResourceNotFoundError`` (stale receipt): the
                                           lease is lost; the message comes back later
create (queue, container,   PUT /   yes /  already exists, which ``create`` ignores;
table)                      POST    no     tables raise ``ServiceResponseError``: the
                                           caller repeats the (idempotent) create
blob.put                    PUT     yes    plain: success. ``create_only``:
                                           ``ResourceExistsError`` for **our own** write;
                                           ``if_match``: ``ResourceModifiedError`` for our
                                           own write. **Read back** before taking either
                                           as someone else's
blob.delete, table.delete   DELETE  yes    success (absent is not an error)
table.insert                POST    no     ``ServiceResponseError``; a retry by the caller
                                           gets ``ResourceExistsError``. **Read back** to
                                           tell our insert from another's
table.upsert (replace)      PUT     yes    success: the same entity again
table.update (merge)        PATCH   no     ``ServiceResponseError``, the update applied or
                                           not: **read back** (compare the stored record)
table.update (replace)      PUT     yes    ``ResourceModifiedError`` for our own write:
                                           **read back**
==========================  ======  =====  ===============================================

So the rule the callers follow: a read, a plain put, an upsert, a delete are safe to retry
blindly; a create-only or conditional write (``create_only``, ``if_match``, ``insert``,
``update``) is not, and an error after one is ambiguous until the stored state is read back.
The embedded backend's fault twin (:mod:`shared.faults.storage`) acts out this table so
that both backends look the same under faults.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class RetryPolicy(enum.Enum):
    #: azure-storage-blob / azure-storage-queue ``LinearRetry`` (``StorageRetryPolicy``)
    STORAGE = "storage"
    #: azure-core ``RetryPolicy`` (azure-data-tables)
    CORE = "core"


#: The methods azure-core's ``RetryPolicy`` retries after any failure.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})
#: Statuses both policies retry (the storage policy: any 5xx but 501 and 505).
CORE_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: The statuses azure-core retries even for POST and PATCH.
CORE_NON_IDEMPOTENT_RETRY_STATUSES = frozenset({500, 503, 504})
#: The storage and core policies' limits per kind of failure (their defaults; we only set
#: the total): after this many retries of one kind, they give up.
RETRIES_PER_KIND = 3


@dataclass(frozen=True)
class Operation:
    """One port operation as the SDK sends it."""

    service: str  # blob, queue, table
    method: str
    policy: RetryPolicy

    def retries_after_transport_error(self) -> bool:
        """Whether the SDK retries after a timeout or a lost response."""
        return self.policy is RetryPolicy.STORAGE or self.method in IDEMPOTENT_METHODS

    def retries_status(self, status: int) -> bool:
        if self.policy is RetryPolicy.STORAGE:
            return status >= 500 and status not in (501, 505)
        if self.method in IDEMPOTENT_METHODS:
            return status in CORE_RETRY_STATUSES
        return status in CORE_NON_IDEMPOTENT_RETRY_STATUSES


def _blob(method: str) -> Operation:
    return Operation("blob", method, RetryPolicy.STORAGE)


def _queue(method: str) -> Operation:
    return Operation("queue", method, RetryPolicy.STORAGE)


def _table(method: str) -> Operation:
    return Operation("table", method, RetryPolicy.CORE)


#: ``"<port>.<method name>"`` → how the Azure backend sends it.
OPERATIONS: dict[str, Operation] = {
    "queue.create": _queue("PUT"),
    "queue.delete_queue": _queue("DELETE"),
    "queue.send": _queue("POST"),
    "queue.receive": _queue("GET"),
    "queue.delete": _queue("DELETE"),
    "queue.update_visibility": _queue("PUT"),
    "queue.peek": _queue("GET"),
    "queue.approximate_count": _queue("GET"),
    "queue.clear": _queue("DELETE"),
    "blob.create": _blob("PUT"),
    "blob.put": _blob("PUT"),
    "blob.get": _blob("GET"),
    "blob.head": _blob("HEAD"),
    "blob.list": _blob("GET"),
    "blob.delete": _blob("DELETE"),
    "table.create": _table("POST"),
    "table.insert": _table("POST"),
    "table.upsert": _table("PUT"),
    "table.update.merge": _table("PATCH"),
    "table.update.replace": _table("PUT"),
    "table.get": _table("GET"),
    "table.query": _table("GET"),
    "table.delete": _table("DELETE"),
    "account.list_queues": _queue("GET"),
    "account.list_containers": _blob("GET"),
    "account.list_tables": _table("GET"),
}
