"""The small messages that travel on queues and the trigger topic (versioned with ``v``).

Payloads never ride in a message (the claim check, docs/patterns.md): a work item
names the chunk's blob, a result names the result blob. Messages stay a few hundred bytes,
far below the 64 KiB queue limit.

The messages that start work in another role also carry the trace context of the span that
sent them (``trace``, :mod:`shared.tracing`), left out of the text when nothing is traced.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.contracts.batch_status import AbandonReason
from shared.domain.priority import Priority
from shared.domain.transactions import ControlTotals


class _Message(BaseModel):
    # A reader ignores fields it does not know: a newer writer may add one within a version
    # (``trace`` was), and in a rolling upgrade an older reader must still take the message,
    # not send it to the poison queue. A change an older reader cannot ignore bumps ``v``.
    model_config = ConfigDict(frozen=True, extra="ignore")

    def to_text(self) -> str:
        return self.model_dump_json()


class _Traced(_Message):
    trace: dict[str, str] = Field(
        default_factory=dict,
        description="W3C trace context of the sending span (traceparent, tracestate)",
    )

    def to_text(self) -> str:
        return self.model_dump_json(exclude=None if self.trace else {"trace"})


class WorkItem(_Traced):
    """One chunk of a batch to rate: the reference to its payload blob and how to check it."""

    v: Literal[1] = 1
    batch_id: str
    chunk: int = Field(ge=0, description="chunk index within the batch")
    priority: Priority
    payload_blob: str = Field(description="name in the payloads container")
    first_line: int = Field(ge=1, description="physical line of the chunk's first transaction")
    last_line: int = Field(ge=1)
    transactions: int = Field(ge=1)
    sha256: str = Field(description="hex digest of the stored (compressed) payload")
    pricebook_version: str

    @classmethod
    def from_text(cls, text: str) -> WorkItem:
        return cls.model_validate_json(text)


class ChunkResult(_Traced):
    """A rated chunk, ready for the controller: the reference to its result blob."""

    v: Literal[1] = 1
    batch_id: str
    chunk: int = Field(ge=0)
    result_blob: str = Field(description="name in the results container")
    transactions: int = Field(ge=0)
    sha256: str
    processor: str = Field(description="instance id of the processor that rated it")

    @classmethod
    def from_text(cls, text: str) -> ChunkResult:
        return cls.model_validate_json(text)


class ChunkFailed(_Message):
    """A chunk gave up after too many dequeues: its work item is in the poison queue."""

    v: Literal[1] = 1
    kind: Literal["chunk-failed"] = "chunk-failed"
    batch_id: str
    chunk: int = Field(ge=0)
    poison_queue: str
    error: str


class BatchAbandoned(_Message):
    """The initiator gave up on a batch before accepting it: the controller records its
    ``billing.batch.abandoned`` event. Sent after the deciding write and before the batch
    record is deleted, again by a sweeper that finishes the removal: the event's one id
    makes every copy after the first a no-op."""

    v: Literal[1] = 1
    kind: Literal["batch-abandoned"] = "batch-abandoned"
    batch_id: str
    priority: Priority
    reason: AbandonReason
    abandoned_at: datetime
    transactions: int = Field(ge=0, description="0 if abandoned while still receiving")
    chunks: int = Field(ge=0)
    control_totals: ControlTotals | None = Field(description="null until the body was valid")
    callback: str | None = Field(default=None, description="the sender's webhook URL")


class TriggerEvent(_Traced):
    """The push trigger's event: there is work on these queues.

    Published once per accepted batch on the trigger topic, with the application property
    ``Priority`` so that subscriptions can filter on it.
    """

    v: Literal[1] = 1
    kind: Literal["work"] = "work"
    storage_account: str
    queue_names: list[str]
    payload_size: int = Field(ge=0, description="bytes of chunk payloads stored for the batch")
    batch_id: str
    priority: Priority
    chunk_count: int = Field(ge=0)

    @classmethod
    def from_text(cls, text: str | bytes) -> TriggerEvent:
        return cls.model_validate_json(text)


class GateEvent(_Message):
    """The release gate's broadcast: the gate was opened or closed."""

    v: Literal[1] = 1
    kind: Literal["gate"] = "gate"
    released: bool


#: Application property names on the trigger topic.
PRIORITY_PROPERTY = "Priority"
KIND_PROPERTY = "Kind"
