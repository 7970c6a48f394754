"""Dollars from the meter's counts: per million transactions, and per idle month.

The inputs are what the meter measures (:class:`Usage`): storage and bus requests per 1,000
transactions by kind, CPU per transaction, and requests per hour while idle. The prices are
:class:`~shared.cost.prices.AzurePrices`. Compute is priced from the CPU the roles used, at
the active rate, memory in Container Apps' fixed ratio: a floor, since a replica is billed
for as long as it runs (its cool-down included), not for the CPU it uses; and marginal,
beyond the monthly free grants. Bus operations per million transactions are priced beyond
the operations the base charge includes (marginal too); an idle month's only beyond them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from shared.cost.prices import HOURS_PER_MONTH, AzurePrices

MILLION = 1_000_000


@dataclass(frozen=True)
class Usage:
    """What the meter measured."""

    requests_per_1000: Mapping[str, float]
    """Busy: requests per 1,000 transactions by meter kind (``queue.get``, ``bus.send``, …)."""
    cpu_us_per_transaction: float | None = None
    """All roles together; None when the source does not say."""
    idle_requests_per_hour: Mapping[str, float] = field(default_factory=dict)
    """Idle: requests per hour by kind, the whole deployment."""
    transactions_measured: bool = True
    """False when the source saw no transaction: ``requests_per_1000`` is then empty and the
    per-million figures mean nothing, while the idle month still does."""


@dataclass(frozen=True)
class Costs:
    """USD. ``compute_per_million`` is None when the usage had no CPU figure."""

    storage_per_million: float
    bus_per_million: float
    compute_per_million: float | None
    fixed_per_month: Mapping[str, float]
    idle_requests_per_month: float

    @property
    def per_million(self) -> float:
        return self.storage_per_million + self.bus_per_million + (self.compute_per_million or 0)

    @property
    def per_idle_month(self) -> float:
        return sum(self.fixed_per_month.values()) + self.idle_requests_per_month


def requests_cost(counts: Mapping[str, float], prices: AzurePrices) -> float:
    """Dollars for ``counts`` requests by kind (any unit of time or work the caller means)."""
    return sum(count * prices.per_request(kind) for kind, count in counts.items())


def estimate(usage: Usage, prices: AzurePrices) -> Costs:
    per_million = {kind: n * MILLION / 1000 for kind, n in usage.requests_per_1000.items()}
    storage = {kind: n for kind, n in per_million.items() if not kind.startswith("bus.")}
    bus = {kind: n for kind, n in per_million.items() if kind.startswith("bus.")}
    compute = None
    if usage.cpu_us_per_transaction is not None:
        vcpu_seconds = usage.cpu_us_per_transaction * MILLION / MILLION  # µs/tx x 1 M tx
        compute = vcpu_seconds * (
            prices.vcpu_second_active + prices.gib_per_vcpu * prices.gib_second
        )
    idle = {kind: n * HOURS_PER_MONTH for kind, n in usage.idle_requests_per_hour.items()}
    idle_bus = sum(n for kind, n in idle.items() if kind.startswith("bus."))
    # An idle month's bus operations are billed only beyond those the base charge includes.
    idle_bus_billed = max(idle_bus - prices.servicebus_included_operations_per_month, 0.0)
    return Costs(
        storage_per_million=requests_cost(storage, prices),
        bus_per_million=requests_cost(bus, prices),
        compute_per_million=compute,
        fixed_per_month=prices.fixed_per_month(),
        idle_requests_per_month=requests_cost(
            {kind: n for kind, n in idle.items() if not kind.startswith("bus.")}, prices
        )
        + requests_cost({"bus.operation": idle_bus_billed}, prices),
    )


def keda_polls_per_hour(queues: int, polling_seconds: float) -> dict[str, float]:
    """The depth reads of KEDA's ``azure-queue`` scaler: one per scaled queue per polling
    interval, idle or not. Azure's side makes them, so no meter of ours counts them."""
    return {"queue.count": queues * 3600 / polling_seconds}


def with_idle(usage: Usage, extra_per_hour: Mapping[str, float]) -> Usage:
    """``usage`` with ``extra_per_hour`` idle requests added to its own."""
    idle = dict(usage.idle_requests_per_hour)
    for kind, n in extra_per_hour.items():
        idle[kind] = idle.get(kind, 0.0) + n
    return replace(usage, idle_requests_per_hour=idle)
