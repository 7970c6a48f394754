"""The randomized exponential back-off on an empty queue."""

from __future__ import annotations

import random

import pytest

from shared.listener import Backoff


def seeded(seed: int = 7) -> Backoff:
    rng = random.Random(seed)
    return Backoff(min_idle=0.1, delta=0.1, max_idle=30.0, uniform=rng.uniform)


def test_many_samples_stay_within_the_formula_bounds() -> None:
    backoff = seeded()
    for idle_count in range(0, 20):
        low = 0.1 + (2**idle_count - 1) * 0.8 * 0.1
        high = 0.1 + (2**idle_count - 1) * 1.2 * 0.1
        samples = [backoff.delay(idle_count) for _ in range(500)]
        assert min(samples) >= min(low, 30.0) - 1e-12
        assert max(samples) <= min(high, 30.0) + 1e-12


def test_jitter_spreads_the_delays_between_the_bounds() -> None:
    """Jitter is the point: threads of many instances must not poll in lock-step."""
    backoff = seeded()
    samples = [backoff.delay(5) for _ in range(1000)]
    low, high = backoff.bounds(5)  # 0.1 + 31 * [0.08, 0.12] = [2.58, 3.82]
    assert (low, high) == pytest.approx((2.58, 3.82))
    assert len({round(s, 6) for s in samples}) > 900
    # both halves of the range are used
    middle = (low + high) / 2
    assert any(s < middle for s in samples)
    assert any(s > middle for s in samples)


def test_pinned_jitter_gives_the_exact_formula() -> None:
    least = Backoff(min_idle=0.1, delta=0.1, max_idle=30.0, uniform=lambda a, b: a)
    most = Backoff(min_idle=0.1, delta=0.1, max_idle=30.0, uniform=lambda a, b: b)
    assert least.delay(0) == pytest.approx(0.1)  # no empty receive yet: just min_idle
    assert least.delay(1) == pytest.approx(0.1 + 1 * 0.8 * 0.1)
    assert most.delay(3) == pytest.approx(0.1 + 7 * 1.2 * 0.1)


def test_the_delay_reaches_the_cap_and_stays_there() -> None:
    backoff = seeded()
    delays = [backoff.delay(n) for n in range(40)]
    capped = [n for n, d in enumerate(delays) if backoff.at_cap(d)]
    # 0.1 + (2**n - 1) * 0.08 >= 30 from n = 9 at the latest (0.1 + 511 * 0.08 = 40.98)
    assert capped
    assert capped[0] <= 9
    assert capped == list(range(capped[0], 40))
    assert all(d == 30.0 for d in delays[capped[0] :])
    assert not backoff.at_cap(delays[0])


def test_a_very_long_idle_does_not_overflow() -> None:
    assert seeded().delay(10_000) == 30.0


@pytest.mark.parametrize(
    ("min_idle", "delta", "max_idle"),
    [(-0.1, 0.1, 1.0), (0.1, 0.0, 1.0), (0.1, 0.1, 0.0), (2.0, 0.1, 1.0)],
)
def test_nonsense_settings_are_refused(min_idle: float, delta: float, max_idle: float) -> None:
    with pytest.raises(ValueError, match=r"back-off|min_idle"):
        Backoff(min_idle=min_idle, delta=delta, max_idle=max_idle)


def test_negative_idle_count_is_refused() -> None:
    with pytest.raises(ValueError, match="idle_count"):
        seeded().delay(-1)
