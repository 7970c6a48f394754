"""The listener's knobs in one typed model.

The engine takes this model rather than the application's settings, so that it stays a
generic engine and tests can set a few fields with short timeouts and leave the rest at
their defaults (:func:`shared.listener_settings.listener_config` fills it from the
``BILLING_*`` settings). Times are seconds; the queue API takes whole seconds for
visibility timeouts, so that one is an ``int``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from shared.listener.scaling import ScalingRule
from shared.storage.ports import MAX_MESSAGES_PER_RECEIVE


class ListenerConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: messages per receive (Azure's ceiling is 32: one request, up to 32 messages)
    batch_size: int = Field(default=MAX_MESSAGES_PER_RECEIVE, ge=1, le=MAX_MESSAGES_PER_RECEIVE)
    #: how long a received message stays hidden from other consumers
    visibility_timeout: int = Field(default=60, ge=1)
    #: a message dequeued more often than this goes to the poison queue
    max_dequeue_count: int = Field(default=5, ge=1)
    #: empty-queue back-off, seconds (docs/patterns.md, "the back-off")
    backoff_min_idle: float = Field(default=0.1, ge=0)
    backoff_delta: float = Field(default=0.1, gt=0)
    backoff_max_idle: float = Field(default=30.0, gt=0)
    #: for an owner whose work follows its trigger (the controller: results come once a
    #: processor has rated a chunk): for this long after a trigger, empty receives do not
    #: lengthen the back-off, so a thread looks again every ``backoff_min_idle``. 0: off.
    wake_hold: float = Field(default=0.0, ge=0)
    #: with a push trigger, the one slow poll left when every dequeue thread has retired
    safety_poll_seconds: float = Field(default=120.0, gt=0)
    #: for an owner that watches a cheaper signal of new work and calls
    #: ``on_work_detected`` when it moves: once a depth scan found every queue empty
    #: (hidden messages included), the safety poll scans again only after this long.
    #: None: a depth scan on every safety tick (a request per queue).
    quiet_rescan_seconds: float | None = Field(default=None, gt=0)
    #: for an owner whose new work announces itself (a trigger naming the queues, a work
    #: signal): a queue that answered empty is asked again only this long after that answer,
    #: in busy rounds and idle ones, for messages that come back by themselves (a crashed
    #: consumer's lease ran out) or came without a trigger; a trigger naming it, or a message
    #: handed back here coming due, brings it back at once. None: a round asks every queue
    #: whose empty skip is over (the back-off alone spaces an idle thread's rounds).
    idle_rescan_seconds: float | None = Field(default=None, gt=0)
    #: queue depth → dequeue threads, e.g. "0:1,64:2,512:4" (the scaling rule)
    scaling_rule: str = "0:1"  # measured: see Settings.scaling_rule
    max_threads: int = Field(default=8, ge=1)
    #: messages of one receive handled at once by one dequeue thread (overlaps I/O)
    handler_parallelism: int = Field(default=4, ge=1, le=MAX_MESSAGES_PER_RECEIVE)
    #: renew a message's visibility once it has been held this fraction of the timeout
    renew_fraction: float = Field(default=0.5, gt=0, lt=1)
    #: anti-starvation: every Nth receive round favours a lower priority (see priority.py)
    low_share_every: int = Field(default=8, ge=2)
    #: a queue found empty is not asked again by any thread for this long, and left out of
    #: more rounds (and seconds) with each empty answer in a row, never for longer than
    #: ``empty_recheck_max_seconds`` (see empty_memory.py): the cap bounds how late work that
    #: arrives without a trigger is found while threads run (triggers reset it at once)
    empty_recheck_seconds: float = Field(default=0.1, ge=0)
    empty_recheck_max_seconds: float = Field(default=10.0, ge=0)
    #: a handler busy with one message for longer than this is wedged (blocked on a socket
    #: that never answers, say): far above the longest legitimate handling, whose lease is
    #: renewed meanwhile (docs/decisions/0060-wedged-handler-readiness.md)
    wedged_handler_seconds: float = Field(default=600.0, gt=0)

    @field_validator("scaling_rule")
    @classmethod
    def _valid_rule(cls, value: str) -> str:
        ScalingRule.parse(value, max_threads=1)  # raises ScalingRuleError with the reason
        return value

    @model_validator(mode="after")
    def _min_below_max(self) -> ListenerConfig:
        if self.backoff_min_idle > self.backoff_max_idle:
            raise ValueError("backoff_min_idle must not exceed backoff_max_idle")
        if self.empty_recheck_max_seconds < self.empty_recheck_seconds:
            raise ValueError("empty_recheck_max_seconds must not be below empty_recheck_seconds")
        return self

    @property
    def rule(self) -> ScalingRule:
        return ScalingRule.parse(self.scaling_rule, max_threads=self.max_threads)
