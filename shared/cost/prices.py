"""The Azure list prices the cost estimates use: the one place they are written down.

Pay-as-you-go, USD, East US, as last known to the author and copied into docs/cost.md's
"What it costs" table, whose shape (free grants, included operations) was read on
:data:`PRICES_READ_ON` from Microsoft's pages. The dollar figures themselves were **not
checked against a live price page** (the copies available to the project show "$-"): check
them in the Azure pricing calculator and override any of them with an environment variable,
``BILLING_PRICE_<FIELD>`` (e.g. ``BILLING_PRICE_BLOB_WRITE_PER_10K=0.065``).

Storage requests are priced by class, from the meter's kinds (``blob.put``, ``queue.get``,
…, see :mod:`shared.meter`): blob writes and lists, blob reads, queue operations, table
transactions; a blob delete is free. Service Bus operations (``bus.send``, ``bus.receive``)
are priced at the Standard tier's rate beyond the operations its base charge includes.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

#: When the prices' shape (grants, tiers) was read; the dollar figures are older, unchecked.
PRICES_READ_ON = "2026-12-01"
HOURS_PER_MONTH = 730.0
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600

#: Meter kinds that a price class covers; any other storage kind is priced as a write.
BLOB_READS = frozenset({"blob.get", "blob.head"})
FREE = frozenset({"blob.delete"})


class AzurePrices(BaseSettings):
    """List prices in USD. Defaults: the table of docs/cost.md."""

    model_config = SettingsConfigDict(env_prefix="BILLING_PRICE_", env_file=None, extra="ignore")

    # Storage (general-purpose v2, hot, LRS), per 10,000 requests.
    blob_write_per_10k: float = Field(default=0.05, description="blob put, list, create")
    blob_read_per_10k: float = Field(default=0.004, description="blob get, head")
    queue_per_10k: float = Field(default=0.004, description="every queue operation")
    table_per_10k: float = Field(default=0.00036, description="every table transaction")
    # Service Bus Standard.
    servicebus_base_per_hour: float = 0.0135
    servicebus_included_operations_per_month: float = 13_000_000
    servicebus_per_million_operations: float = Field(
        default=0.80, description="beyond the included operations (13 M - 100 M a month)"
    )
    # Container Apps, consumption plan.
    vcpu_second_active: float = 0.000024
    vcpu_second_idle: float = 0.000003
    gib_second: float = 0.000003
    gib_per_vcpu: float = Field(
        default=2.0, description="Container Apps' fixed 0.5 vCPU : 1 GiB ratio"
    )
    free_vcpu_seconds_per_month: float = 180_000
    free_gib_seconds_per_month: float = 360_000
    # What an idle deployment pays whatever it does, per month.
    postgres_b1ms_per_hour: float = 0.017
    postgres_storage_gib: float = 32
    postgres_storage_per_gib_month: float = 0.115
    registry_basic_per_day: float = 0.167

    def per_request(self, kind: str) -> float:
        """Dollars for one request of the meter's ``kind`` (``service.op``, perhaps with an
        ``@caller``: the same request, made for someone else)."""
        kind = kind.partition("@")[0]
        service = kind.partition(".")[0]
        if kind in FREE:
            return 0.0
        if service == "bus":
            return self.servicebus_per_million_operations / 1_000_000
        if service == "queue":
            return self.queue_per_10k / 10_000
        if service == "table":
            return self.table_per_10k / 10_000
        if kind in BLOB_READS:
            return self.blob_read_per_10k / 10_000
        return self.blob_write_per_10k / 10_000

    def fixed_per_month(self) -> dict[str, float]:
        """What the deployment pays each month however idle, by item."""
        return {
            "PostgreSQL B1ms": self.postgres_b1ms_per_hour * HOURS_PER_MONTH,
            "PostgreSQL storage": self.postgres_storage_gib * self.postgres_storage_per_gib_month,
            "Service Bus Standard base": self.servicebus_base_per_hour * HOURS_PER_MONTH,
            "Container Registry Basic": self.registry_basic_per_day * HOURS_PER_MONTH / 24,
        }
