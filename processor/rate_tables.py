"""The lookup tables a rater builds once from a pricebook, whatever its arithmetic.

A processor rates millions of transactions, so each rater turns the pricebook into plain
dicts and tuples first: per SKU its unit price in minor units, its ascending tier
thresholds and each tier's discount; per region its tax. The two raters differ only in how
they hold a percentage (:mod:`processor.rating`: ``pct / 100`` as an exact ``Decimal``;
:mod:`processor.integer_rater`: as a ratio of two integers), which the caller passes in.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Generic, TypeVar

from shared.domain.pricebook import Pricebook

Share = TypeVar("Share")


class RateTables(Generic[Share]):
    """``skus``: SKU → (unit price, thresholds, discount per threshold); ``taxes``: region → tax.

    Tiers are already sorted and unique in a :class:`Pricebook`, so the thresholds are
    ascending, as ``bisect`` needs.
    """

    __slots__ = ("skus", "taxes")

    def __init__(self, pricebook: Pricebook, share: Callable[[Decimal], Share]) -> None:
        # From the book's own lookups rather than its tier models: walking 5,000 SKUs'
        # models cost ~15 ms a book, these dicts ~2 ms. A book holds few distinct
        # percentages, so each is converted once.
        unit_prices, tiers, taxes = pricebook.rate_lookups()
        shares: dict[Decimal, Share] = {}

        def shared(pct: Decimal) -> Share:
            converted = shares.get(pct)
            if converted is None:
                converted = shares[pct] = share(pct)
            return converted

        self.skus: dict[str, tuple[int, tuple[int, ...], tuple[Share, ...]]] = {
            sku: (unit_prices[sku], thresholds, tuple(map(shared, pcts)))
            for sku, (thresholds, pcts) in tiers.items()
        }
        self.taxes: dict[str, Share] = {region: shared(pct) for region, pct in taxes.items()}
