"""Money in integer minor units: currency exponents and exact conversions.

Every amount in the system is an ``int`` of the currency's minor unit (cents for USD, yen for
JPY, fils for BHD). Decimal strings only appear at the edges (the pricebook file, reports),
and the conversions here never round: a value that does not fit the currency is an error,
because a silently rounded price is a billing bug nobody notices until the invoice.
"""

from __future__ import annotations

import decimal
from decimal import Decimal
from typing import TypeGuard

DEFAULT_MINOR_EXPONENT = 2
"""Most ISO 4217 currencies (USD, EUR, GBP, CHF, ...) have two decimal places."""

# The ISO 4217 currencies whose minor unit is not a hundredth. Anything else gets the default;
# a table of the exceptions is shorter than a table of every currency and just as correct.
_MINOR_EXPONENT_EXCEPTIONS: dict[str, int] = {
    **dict.fromkeys(
        (
            "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW",
            "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF",
        ),
        0,
    ),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}  # fmt: skip

# Large enough for any amount a pricebook can express; Inexact is trapped so that an
# operation which would need more digits raises instead of rounding behind our back.
EXACT = decimal.Context(
    prec=100,
    rounding=decimal.ROUND_HALF_EVEN,
    traps=[decimal.Inexact, decimal.InvalidOperation, decimal.Overflow, decimal.DivisionByZero],
)


def is_currency_code(value: object) -> TypeGuard[str]:
    """Whether ``value`` has the shape of an ISO 4217 code: three upper-case ASCII letters."""
    return (
        isinstance(value, str)
        and len(value) == 3
        and value.isascii()
        and value.isalpha()
        and value.isupper()
    )


def minor_exponent(currency: str) -> int:
    """Number of decimal places of ``currency``'s minor unit (JPY 0, USD 2, KWD 3)."""
    return _MINOR_EXPONENT_EXCEPTIONS.get(currency, DEFAULT_MINOR_EXPONENT)


def to_minor_units(amount: Decimal, exponent: int) -> int:
    """Convert a decimal amount of major units to minor units, exactly.

    ``Decimal("12.34")`` with exponent 2 is ``1234``. Trailing zeros are harmless
    (``"12.340"`` is still 1234), but a value with a non-zero digit below the minor unit
    (``"12.345"`` in USD) raises ``ValueError``: there is no honest way to round a price.
    """
    # Integer arithmetic on the exact ratio: no context, no rounding, half the time of scaleb.
    numerator, denominator = amount.as_integer_ratio()
    scale: int = 10**exponent
    minor, remainder = divmod(numerator * scale, denominator)
    if remainder:
        raise ValueError(
            f"{amount} is finer than the currency's minor unit ({exponent} decimal places)"
        )
    return minor


def format_minor_units(amount: int, exponent: int) -> str:
    """Render minor units as a plain decimal string: ``1234, 2`` -> ``"12.34"``."""
    return format(Decimal(amount).scaleb(-exponent, context=EXACT), "f")


def format_plain_decimal(value: Decimal) -> str:
    """The shortest plain (never scientific) spelling: ``Decimal("20.0")`` -> ``"20"``.

    Used where two spellings of the same number must compare and hash alike.
    """
    if not value:
        return "0"  # also folds "-0" and "0.00" into one spelling
    return format(value.normalize(context=EXACT), "f")
