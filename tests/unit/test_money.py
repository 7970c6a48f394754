"""Money conversions: exact, never rounded."""

from __future__ import annotations

from decimal import Decimal

import pytest

from shared.domain.money import to_minor_units


@pytest.mark.parametrize(
    ("amount", "exponent", "minor"),
    [
        ("12.34", 2, 1234),
        ("12.340", 2, 1234),
        ("-12.34", 2, -1234),
        ("0", 2, 0),
        ("-0.00", 2, 0),
        ("1E+2", 2, 10_000),
        ("1200", 0, 1200),
        ("1.234", 3, 1234),
        ("0.0001", 4, 1),
        ("99999999999999999999", 2, 9_999_999_999_999_999_999_900),
    ],
)
def test_amounts_that_fit_convert_exactly(amount: str, exponent: int, minor: int) -> None:
    assert to_minor_units(Decimal(amount), exponent) == minor


@pytest.mark.parametrize(
    ("amount", "exponent"), [("12.345", 2), ("1200.5", 0), ("-0.001", 2), ("0.00001", 4)]
)
def test_an_amount_finer_than_the_minor_unit_is_refused(amount: str, exponent: int) -> None:
    with pytest.raises(ValueError, match=rf"^{amount} is finer than the currency's minor unit"):
        to_minor_units(Decimal(amount), exponent)
