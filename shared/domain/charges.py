"""A rated transaction and a customer's sums: the one declaration of the charge's shape.

The processor's rater makes :class:`RatedCharge`; the chunk result carries it
(:mod:`shared.contracts.chunk_result`); the controller's reducer writes it to the warehouse,
whose ``charges`` and ``invoices`` columns are named after :data:`CHARGE_FIELDS` and
:data:`INVOICE_SUMS`. Every amount is an integer of the currency's minor unit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class RatedCharge:
    """The rated form of one transaction. Every amount is in minor units of the book's currency."""

    transaction_id: str
    customer_id: str
    sku: str
    region: str
    quantity: int
    unit_price: int
    gross: int
    discount: int
    net: int
    tax: int
    total: int


@dataclass(frozen=True, slots=True)
class CustomerSubtotal:
    """The sums of one customer's charges (an invoice's figures)."""

    customer_id: str
    lines: int
    quantity: int
    gross: int
    discount: int
    net: int
    tax: int
    total: int


#: The fields of a rated charge, in order (the chunk result's and the warehouse's columns).
CHARGE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RatedCharge))
#: An invoice's figures: every one a plain sum over the customer's charges. A chunk's
#: *invoice sums* are the same figures summed over all its charges, whoever the customer.
INVOICE_SUMS: tuple[str, ...] = tuple(f.name for f in fields(CustomerSubtotal))[1:]


def invoice_sums_of(subtotals: Iterable[CustomerSubtotal]) -> tuple[int, ...]:
    """The :data:`INVOICE_SUMS` of all the charges ``subtotals`` sum, customers together."""
    totals = [0] * len(INVOICE_SUMS)
    for subtotal in subtotals:
        for index, name in enumerate(INVOICE_SUMS):
            totals[index] += getattr(subtotal, name)
    return tuple(totals)


def subtotals(charges: Iterable[RatedCharge]) -> dict[str, CustomerSubtotal]:
    """Per-customer sums of ``charges``, keyed by customer id, in order of first appearance."""
    sums: dict[str, list[int]] = {}
    for charge in charges:
        row = sums.get(charge.customer_id)
        if row is None:
            row = sums[charge.customer_id] = [0, 0, 0, 0, 0, 0, 0]
        row[0] += 1
        row[1] += charge.quantity
        row[2] += charge.gross
        row[3] += charge.discount
        row[4] += charge.net
        row[5] += charge.tax
        row[6] += charge.total
    return {
        customer_id: CustomerSubtotal(customer_id, *row)  # lines, quantity, gross, ..., total
        for customer_id, row in sums.items()
    }
