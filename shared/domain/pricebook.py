"""The pricebook: unit prices, tiered discounts and regional taxes.

A pricebook is uploaded as JSON, validated here once, and then pinned to every batch
accepted while it is current. Validation is strict on purpose: decimals must be JSON strings
or integers (a JSON float such as ``12.34`` has already lost its exact value by the time we
see it), unit prices must fit the currency's minor unit, and every problem is reported at
once with its JSON path so a rejected file can be fixed in one go.

After validation the book precomputes what rating needs (unit prices in minor units, tier
thresholds, ``Decimal`` percentages), because a processor looks these up millions of times.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping
from decimal import Decimal
from functools import cache
from importlib import resources
from operator import attrgetter, lt
from types import MappingProxyType
from typing import Annotated, Any, Self, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetPydanticSchema,
    PrivateAttr,
    StrictInt,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from shared.domain.money import (
    format_minor_units,
    format_plain_decimal,
    is_currency_code,
    minor_exponent,
    to_minor_units,
)
from shared.json_input import ROOT, loads_strict, validation_problems

_ZERO = Decimal(0)
_EXPONENT_CONTEXT_KEY = "minor_exponent"
_PERCENTS_CONTEXT_KEY = "accepted_percents"


def _reject_float(value: object) -> object:
    """Refuse JSON floats (and bools, which Python treats as ints) before Decimal sees them."""
    if isinstance(value, float):
        raise ValueError(
            f"got the JSON number {value!r}; write decimals as JSON strings "
            f'(e.g. "{value!r}") or integers, because floats lose cents'
        )
    if isinstance(value, bool):
        raise ValueError("expected a decimal string or an integer, not a boolean")
    return value


def _exact_decimal(*, ge: int, max_digits: int, le: int | None = None) -> core_schema.CoreSchema:
    """A ``Decimal`` from a JSON string or integer, with its range and digit count checked.

    Floats and booleans are refused first, then the value must be finite and in range, then
    it may have at most ``max_digits`` digits. The range comes before the digit count, so
    ``"-1E+30"`` is reported as negative, not as too long. Only the first check is Python;
    the others run in pydantic-core.
    """
    return core_schema.no_info_before_validator_function(
        _reject_float,
        core_schema.chain_schema(
            [
                core_schema.decimal_schema(ge=Decimal(ge), le=None if le is None else Decimal(le)),
                core_schema.decimal_schema(max_digits=max_digits),
            ]
        ),
    )


def _percent_schema() -> core_schema.CoreSchema:
    """:data:`Percent`: an exact decimal from 0 to 100, each spelling checked once per document.

    A pricebook repeats a handful of rates many times (a 5,000-SKU book may hold 6,000
    discounts that are all ``"5"`` or ``"12.5"``), and checking a decimal's digits costs
    more than a dictionary lookup. So :func:`load_pricebook` passes an empty dictionary in
    the validation context, and a string that was accepted as a percentage earlier in the
    same document gives the same ``Decimal`` again. A string that failed is never stored,
    so every bad value is still reported at its own path. Unit prices are rarely repeated
    and are checked every time.
    """
    checked = _exact_decimal(ge=0, le=100, max_digits=12)

    def validate(
        value: object, check: core_schema.ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Decimal:
        accepted = info.context.get(_PERCENTS_CONTEXT_KEY) if info.context else None
        if accepted is None or type(value) is not str:
            return cast(Decimal, check(value))
        result = accepted.get(value)
        if result is None:
            result = accepted[value] = check(value)
        return cast(Decimal, result)

    return core_schema.with_info_wrap_validator_function(validate, checked)


Percent = Annotated[Decimal, GetPydanticSchema(lambda _source, _handler: _percent_schema())]
"""A percentage from 0 to 100, e.g. ``"8.875"``."""

UnitPrice = Annotated[
    Decimal,
    GetPydanticSchema(lambda _source, _handler: _exact_decimal(ge=0, max_digits=20)),
]
"""A unit price in major units, e.g. ``"12.34"``; whether it fits the currency is checked apart."""

Code = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")]
"""A SKU or region code: the same alphabet as ids in the batch file, so it survives CSV."""


class PricebookModel(BaseModel):
    """Base of the pricebook models: immutable, and unknown keys are typos, not extensions."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Tier(PricebookModel):
    """A volume discount: ``discount_pct`` applies from ``min_quantity`` units upwards."""

    min_quantity: StrictInt = Field(ge=1)
    discount_pct: Percent


class SkuPrice(PricebookModel):
    """The price of one SKU in major units (``"12.34"``) and its tiers, sorted by quantity."""

    unit_price: UnitPrice
    tiers: list[Tier] = Field(default_factory=list)

    @field_validator("unit_price")
    @classmethod
    def _fits_currency(cls, unit_price: Decimal, info: ValidationInfo) -> Decimal:
        # A SKU does not know its currency; load_pricebook passes the exponent as validation
        # context so that this problem is reported together with all the others. Without
        # context (a SkuPrice built by hand) the Pricebook checks it instead.
        exponent = (info.context or {}).get(_EXPONENT_CONTEXT_KEY)
        if exponent is not None:
            to_minor_units(unit_price, exponent)  # raises ValueError when it does not fit
        return unit_price

    @field_validator("tiers")
    @classmethod
    def _unique_and_sorted(cls, tiers: list[Tier]) -> list[Tier]:
        if len(tiers) < 2:
            return tiers
        quantities = [tier.min_quantity for tier in tiers]
        if all(map(lt, quantities, quantities[1:])):
            return tiers  # strictly ascending: unique and sorted already (the usual case)
        if len(set(quantities)) < len(quantities):
            duplicates = sorted(q for q, n in Counter(quantities).items() if n > 1)
            raise ValueError(f"duplicate min_quantity {', '.join(map(str, duplicates))}")
        return sorted(tiers, key=attrgetter("min_quantity"))


class RegionTax(PricebookModel):
    """The tax rate of one region, e.g. ``"20"`` for 20 %."""

    tax_pct: Percent


class Pricebook(PricebookModel):
    """A validated pricebook with fast lookups for rating. Treat it as immutable."""

    currency: str
    skus: dict[Code, SkuPrice] = Field(min_length=1)
    regions: dict[Code, RegionTax] = Field(min_length=1)

    _unit_price_minor: dict[str, int] = PrivateAttr(default_factory=dict)
    _tier_thresholds: dict[str, tuple[tuple[int, ...], tuple[Decimal, ...]]] = PrivateAttr(
        default_factory=dict
    )
    _tax_pct: dict[str, Decimal] = PrivateAttr(default_factory=dict)

    @field_validator("currency")
    @classmethod
    def _iso_4217_shape(cls, currency: str) -> str:
        if not is_currency_code(currency):
            raise ValueError(f"{currency!r} is not an ISO 4217 code (3 upper-case letters)")
        return currency

    @model_validator(mode="after")
    def _precompute_lookups(self) -> Self:
        exponent = self.minor_exponent
        unit_prices: dict[str, int] = {}
        problems: list[InitErrorDetails] = []
        for sku, price in self.skus.items():
            try:
                unit_prices[sku] = to_minor_units(price.unit_price, exponent)
            except ValueError as exc:
                problems.append(_error(("skus", sku, "unit_price"), price.unit_price, str(exc)))
        if problems:
            # One error per offending SKU, each at its own path, rather than a single
            # error at the root that only says "some price is wrong".
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        self._unit_price_minor = unit_prices
        no_tiers: tuple[tuple[int, ...], tuple[Decimal, ...]] = ((), ())
        self._tier_thresholds = {
            sku: (
                (
                    tuple([tier.min_quantity for tier in tiers]),
                    tuple([tier.discount_pct for tier in tiers]),
                )
                if (tiers := price.tiers)
                else no_tiers
            )
            for sku, price in self.skus.items()
        }
        self._tax_pct = {region: tax.tax_pct for region, tax in self.regions.items()}
        return self

    @property
    def minor_exponent(self) -> int:
        """Decimal places of the currency's minor unit (USD 2, JPY 0, KWD 3)."""
        return minor_exponent(self.currency)

    def has_sku(self, sku: str) -> bool:
        return sku in self._unit_price_minor

    def has_region(self, region: str) -> bool:
        return region in self._tax_pct

    def unit_price_minor(self, sku: str) -> int:
        """Unit price of ``sku`` in minor units. Raises ``KeyError`` for an unknown SKU."""
        try:
            return self._unit_price_minor[sku]
        except KeyError:
            raise KeyError(f"unknown sku {sku!r}") from None

    def discount_pct_for(self, sku: str, quantity: int) -> Decimal:
        """The discount percentage of the tier with the largest ``min_quantity <= quantity``.

        0 when no tier is reached. Raises ``KeyError`` for an unknown SKU.
        """
        try:
            thresholds, pcts = self._tier_thresholds[sku]
        except KeyError:
            raise KeyError(f"unknown sku {sku!r}") from None
        reached = bisect_right(thresholds, quantity)
        return pcts[reached - 1] if reached else _ZERO

    def rate_lookups(
        self,
    ) -> tuple[
        Mapping[str, int],
        Mapping[str, tuple[tuple[int, ...], tuple[Decimal, ...]]],
        Mapping[str, Decimal],
    ]:
        """What rating reads, as precomputed at validation: unit prices in minor units per
        SKU; per SKU its ascending tier thresholds and their discount percentages; the tax
        percentage per region. Read-only views: a rater builds its own tables from them
        without walking the tier models again."""
        return (
            MappingProxyType(self._unit_price_minor),
            MappingProxyType(self._tier_thresholds),
            MappingProxyType(self._tax_pct),
        )

    def tax_pct(self, region: str) -> Decimal:
        """Tax percentage of ``region``. Raises ``KeyError`` for an unknown region."""
        try:
            return self._tax_pct[region]
        except KeyError:
            raise KeyError(f"unknown region {region!r}") from None

    def canonical(self) -> dict[str, Any]:
        """The book as plain JSON data with one spelling per value (used for hashing).

        Unit prices are written with exactly the currency's decimal places and percentages
        in their shortest form, so ``"12.3"`` and ``"12.30"`` or ``"20"`` and ``"20.0"``
        give the same document.
        """
        exponent = self.minor_exponent
        return {
            "currency": self.currency,
            "skus": {
                sku: {
                    "unit_price": format_minor_units(self._unit_price_minor[sku], exponent),
                    "tiers": [
                        {
                            "min_quantity": tier.min_quantity,
                            "discount_pct": format_plain_decimal(tier.discount_pct),
                        }
                        for tier in price.tiers
                    ],
                }
                for sku, price in sorted(self.skus.items())
            },
            "regions": {
                region: {"tax_pct": format_plain_decimal(tax.tax_pct)}
                for region, tax in sorted(self.regions.items())
            },
        }

    def to_json(self) -> bytes:
        """Canonical JSON: sorted keys, no whitespace, canonical decimals, UTF-8."""
        return json.dumps(
            self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()

    def version_hash(self) -> str:
        """A stable content hash: the first 16 hex digits of sha256 of :meth:`to_json`.

        Equal for books that differ only in key order, whitespace or decimal spelling, so
        it can name the pricebook version a batch was pinned to.
        """
        return document_version(self.to_json())


def document_version(canonical_json: bytes) -> str:
    """The version of a pricebook whose canonical JSON is ``canonical_json``."""
    return hashlib.sha256(canonical_json).hexdigest()[:16]


class PricebookError(ValueError):
    """A pricebook was rejected; ``problems`` lists every reason as ``"<json path>: <why>"``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid pricebook:\n" + "\n".join(f"  {p}" for p in problems))


def load_pricebook(data: bytes | str) -> Pricebook:
    """Parse and validate a pricebook document. Raises :class:`PricebookError`."""
    try:
        raw = loads_strict(data)
    except ValueError as exc:
        raise PricebookError([f"{ROOT}: {exc}"]) from None
    currency = raw.get("currency") if isinstance(raw, dict) else None
    context: dict[str, Any] = {_PERCENTS_CONTEXT_KEY: {}}
    if is_currency_code(currency):
        context[_EXPONENT_CONTEXT_KEY] = minor_exponent(currency)
    try:
        return Pricebook.model_validate(raw, context=context)
    except ValidationError as exc:
        raise PricebookError(validation_problems(exc)) from None


@cache
def sample_pricebook() -> Pricebook:
    """The sample pricebook that ships with the project (``shared/domain/pricebooks/sample.json``).

    Loaded once per process; the book is immutable, so every caller can share it.
    """
    document = resources.files("shared.domain.pricebooks").joinpath("sample.json")
    return load_pricebook(document.read_bytes())


def _error(loc: tuple[str | int, ...], value: object, message: str) -> InitErrorDetails:
    return InitErrorDetails(
        type=PydanticCustomError("minor_units", "{reason}", {"reason": message}),
        loc=loc,
        input=value,
    )
