"""The rater in plain ``int`` arithmetic: the same rules as :mod:`processor.rating`, faster.

For one transaction::

    gross    = unit_price * quantity
    discount = round_half_even(gross * discount_pct / 100)  # tier: largest min_quantity <= quantity
    net      = gross - discount
    tax      = round_half_even(net * tax_pct / 100)
    total    = net + tax

Every percentage of a pricebook is a finite decimal (``"8.25"``, ``"12.5"``), so
``pct / 100`` is exactly a ratio of two integers ``numerator / denominator``; the rounded
share of an amount is then one integer division with its remainder, and the tie (a
remainder of exactly half the denominator) goes to the even quotient. No ``Decimal`` and no
float is involved, so there is nothing to round twice and no precision to run out of:
Python integers are unbounded.

:class:`IntegerRater` rates whole chunks: it takes the payload's rows as they were decoded
(lists of plain values) and returns the result's rows, ready for the warehouse, together
with their invoice sums (the chunk's figures summed over all its rows: the controller keeps
them on the chunk's applied mark and checks the batch's invoices against them), in one
loop. The ``Decimal`` rater stays the reference: a property test holds the two to the same
figures on random books and transactions.

Next step (docs/walkthrough.md): ``controller.worker``, which reduces the rated chunk into
the warehouse.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from decimal import Decimal
from math import gcd
from typing import Any

from processor.rate_tables import RateTables
from shared.domain.pricebook import Pricebook
from shared.domain.utc_text import utc_text_of

Ratio = tuple[int, int]
"""``numerator / denominator`` with a positive denominator."""

Figures = tuple[int, int, int, int, int, int]
"""``(unit_price, gross, discount, net, tax, total)`` of one transaction, in minor units."""

#: Payload row → result row. A payload row is ``[line, transaction_id, customer_id, sku,
#: quantity, region, occurred_at]`` (:data:`shared.contracts.chunk_payload.COLUMNS`); a
#: result row is ``(occurred_at_utc, transaction_id, customer_id, sku, region, quantity,
#: unit_price, gross, discount, net, tax, total)``
#: (:data:`shared.contracts.chunk_result.COLUMNS`), ``occurred_at`` respelled in UTC
#: (:func:`shared.domain.utc_text.utc_text_of`).
PayloadRow = Sequence[Any]
ResultRow = tuple[Any, ...]

InvoiceSums = list[int]
"""``[lines, quantity, gross, discount, net, tax, total]`` of a chunk's rows
(:data:`shared.domain.charges.INVOICE_SUMS`)."""


def percent_ratio(pct: Decimal) -> Ratio:
    """``pct / 100`` as an exact ratio of integers in lowest terms (``8.25`` → ``(33, 400)``).

    Lowest terms keep the products small, which keeps the integer arithmetic fast.
    """
    numerator, denominator = pct.as_integer_ratio()
    denominator *= 100
    common = gcd(numerator, denominator)
    return numerator // common, denominator // common


def round_half_even_share(amount: int, ratio: Ratio) -> int:
    """``round_half_even(amount * numerator / denominator)``, exactly, in integers.

    ``divmod`` floors, so the remainder is never negative and the rule holds for any sign.
    """
    numerator, denominator = ratio
    quotient, remainder = divmod(amount * numerator, denominator)
    twice = remainder + remainder
    if twice > denominator or (twice == denominator and quotient & 1):
        return quotient + 1
    return quotient


class IntegerRater:
    """Rates transactions against one pricebook with integer tables built once from it."""

    __slots__ = ("_skus", "_taxes", "pricebook")

    def __init__(self, pricebook: Pricebook) -> None:
        self.pricebook = pricebook
        tables = RateTables(pricebook, percent_ratio)  # each percentage as a ratio
        self._skus = tables.skus
        self._taxes = tables.taxes

    def figures(self, sku: str, region: str, quantity: int) -> Figures:
        """The money of one transaction. Raises ``KeyError`` for a SKU or region not in the book."""
        try:
            unit_price, thresholds, discounts = self._skus[sku]
        except KeyError:
            raise KeyError(f"unknown sku {sku!r}") from None
        try:
            tax_ratio = self._taxes[region]
        except KeyError:
            raise KeyError(f"unknown region {region!r}") from None
        gross = unit_price * quantity
        reached = bisect_right(thresholds, quantity)
        discount = round_half_even_share(gross, discounts[reached - 1]) if reached else 0
        net = gross - discount
        tax = round_half_even_share(net, tax_ratio)
        return unit_price, gross, discount, net, tax, net + tax

    def rate_rows(self, rows: Iterable[PayloadRow]) -> tuple[list[ResultRow], InvoiceSums]:
        """Result rows of a chunk's payload rows, and their invoice sums, in one pass.

        The sums are ``[lines, quantity, gross, discount, net, tax, total]`` over every row
        (:data:`~shared.domain.charges.INVOICE_SUMS`). Raises ``KeyError`` for an unknown SKU or
        region, ``TypeError`` for a row whose quantity is not an integer, ``ValueError`` for
        an ``occurred_at`` that is not an instant with an offset.

        The arithmetic of :meth:`figures` is written out inline: this loop runs for every
        transaction, and a method call per row would cost as much as the arithmetic itself.
        """
        skus, taxes, utc = self._skus, self._taxes, utc_text_of
        results: list[ResultRow] = []
        append = results.append
        quantity_sum = gross_sum = discount_sum = net_sum = tax_sum = total_sum = 0
        # Rows come in file order, and a batch's neighbours often share their instant
        # (``everything``: 200,000 rows over 86,400 seconds): the last respelling is reused.
        last_text: str | None = None
        last_utc = ""
        for line, transaction_id, customer_id, sku, quantity, region, occurred_at in rows:
            if type(quantity) is not int:
                raise TypeError(f"line {line}: quantity {quantity!r} is not an integer")
            try:
                unit_price, thresholds, discounts = skus[sku]
                tax_numerator, tax_denominator = taxes[region]
            except KeyError:
                self.figures(sku, region, quantity)  # raises the KeyError that names the code
                raise
            gross = unit_price * quantity
            reached = bisect_right(thresholds, quantity)
            if reached:
                numerator, denominator = discounts[reached - 1]
                discount, remainder = divmod(gross * numerator, denominator)
                twice = remainder + remainder
                if twice > denominator or (twice == denominator and discount & 1):
                    discount += 1
            else:
                discount = 0
            net = gross - discount
            tax, remainder = divmod(net * tax_numerator, tax_denominator)
            twice = remainder + remainder
            if twice > tax_denominator or (twice == tax_denominator and tax & 1):
                tax += 1
            total = net + tax
            if occurred_at != last_text:
                last_utc = utc(occurred_at)
                last_text = occurred_at
            append(
                (
                    last_utc,
                    transaction_id,
                    customer_id,
                    sku,
                    region,
                    quantity,
                    unit_price,
                    gross,
                    discount,
                    net,
                    tax,
                    total,
                )
            )
            quantity_sum += quantity
            gross_sum += gross
            discount_sum += discount
            net_sum += net
            tax_sum += tax
            total_sum += total
        sums = [len(results), quantity_sum, gross_sum, discount_sum, net_sum, tax_sum, total_sum]
        return results, sums
