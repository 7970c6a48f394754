"""The processor tests' reference pricebook: figures that land on rounding ties.

The amounts are checked with the suite's independent reference rater,
:mod:`tests.support.reference_rater`, which reads this dictionary as JSON would.
"""

from __future__ import annotations

from typing import Any

#: A pricebook whose figures land on exact halves of a minor unit (rounding ties), with a
#: zero-tax region, tier boundaries and room for large quantities.
TIE_BOOK: dict[str, Any] = {
    "currency": "USD",
    "skus": {
        # 5 ct; 10 % from 5 units: 5 units → gross 25, discount 2.5 → 2 (tie, to even)
        #                          7 units → gross 35, discount 3.5 → 4 (tie, to even)
        "TIE": {
            "unit_price": "0.05",
            "tiers": [
                {"min_quantity": 5, "discount_pct": "10"},
                {"min_quantity": 100, "discount_pct": "50"},
            ],
        },
        # 25 ct, no tiers: 1 unit in EU → tax 2.5 → 2; 3 units → tax 7.5 → 8
        "HALF": {"unit_price": "0.25", "tiers": []},
        "WIDGET": {"unit_price": "12.34", "tiers": [{"min_quantity": 1000, "discount_pct": "7.5"}]},
    },
    "regions": {"EU": {"tax_pct": "10"}, "ZERO": {"tax_pct": "0"}, "US": {"tax_pct": "7.25"}},
}
