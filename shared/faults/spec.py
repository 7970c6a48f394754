"""What ``BILLING_FAULTS`` asks for: which share of requests fails, and how.

    BILLING_FAULTS="fail=0.1,lose=0.02,seed=7"

=============  ==================================================================  =========
key            meaning                                                             default
=============  ==================================================================  =========
``fail``       share of requests answered with an error status, without applying   0
``statuses``   the statuses ``fail`` draws from, ``+``-separated                  500+503+429
``timeout``    share of requests that time out before reaching the server          0
``lose``       share of requests applied by the server whose response is lost      0
``seed``       seed of the random draws (each plan mixes in its own label)         0
``on``         what fails, ``+``-separated: ``blob``, ``queue``, ``table``,        storage+bus
               ``bus``, or ``storage`` for the three storage services
=============  ==================================================================  =========

The shares are per request (per attempt: a request the SDK retries draws again) and add up
to at most 1. Parsed once, here, into a frozen model that :class:`shared.settings.Settings`
holds; the plans (:mod:`shared.faults.plan`) draw from it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Target = Literal["blob", "queue", "table", "bus"]
STORAGE_TARGETS: frozenset[Target] = frozenset({"blob", "queue", "table"})
ALL_TARGETS: frozenset[Target] = STORAGE_TARGETS | {"bus"}
#: The error statuses a ``fail`` draw may answer with: server error, server busy, throttled.
FAIL_STATUSES = (500, 503, 429)

Share = float


class FaultSpec(BaseModel):
    """A parsed ``BILLING_FAULTS``: see the module docstring for each field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fail: Share = Field(default=0.0, ge=0, le=1)
    statuses: tuple[int, ...] = FAIL_STATUSES
    timeout: Share = Field(default=0.0, ge=0, le=1)
    lose: Share = Field(default=0.0, ge=0, le=1)
    seed: int = 0
    on: frozenset[Target] = ALL_TARGETS

    @field_validator("statuses")
    @classmethod
    def _known_statuses(cls, statuses: tuple[int, ...]) -> tuple[int, ...]:
        unknown = [status for status in statuses if status not in FAIL_STATUSES]
        if unknown or not statuses:
            raise ValueError(f"statuses must be some of {FAIL_STATUSES}, got {statuses}")
        return statuses

    @model_validator(mode="after")
    def _shares_add_up(self) -> FaultSpec:
        total = self.fail + self.timeout + self.lose
        if total > 1:
            raise ValueError(f"fail + timeout + lose must not exceed 1, got {total}")
        return self

    @classmethod
    def parse(cls, text: str) -> FaultSpec:
        """``"fail=0.1,lose=0.02,seed=7"`` → a spec; ``ValueError`` naming a bad part."""
        values: dict[str, object] = {}
        for part in (piece.strip() for piece in text.split(",")):
            if not part:
                continue
            key, equals, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not equals or not key or not value:
                raise ValueError(f"BILLING_FAULTS: expected key=value, got {part!r}")
            if key not in cls.model_fields:
                raise ValueError(
                    f"BILLING_FAULTS: unknown key {key!r} (known: {', '.join(cls.model_fields)})"
                )
            values[key] = _targets(value) if key == "on" else _plus_list(value, key)
        return cls.model_validate(values)

    @property
    def active(self) -> bool:
        return self.fail + self.timeout + self.lose > 0

    def applies_to(self, target: Target) -> bool:
        return self.active and target in self.on

    def describe(self) -> str:
        """The spec as a ``BILLING_FAULTS`` value (what the loud start-up line shows)."""
        statuses = "+".join(str(status) for status in self.statuses)
        on = "+".join(sorted(self.on))
        return (
            f"fail={self.fail},statuses={statuses},timeout={self.timeout},lose={self.lose},"
            f"seed={self.seed},on={on}"
        )


def _plus_list(value: str, key: str) -> object:
    return value.split("+") if key == "statuses" else value


def _targets(value: str) -> list[str]:
    targets: list[str] = []
    for name in value.split("+"):
        targets.extend(sorted(STORAGE_TARGETS) if name == "storage" else [name])
    return targets
