"""shared.recent.Recent: a bounded memory, least recently used out first."""

from __future__ import annotations

import pytest

from shared.recent import Recent


def test_it_holds_at_most_its_capacity_and_the_oldest_goes_first() -> None:
    recent: Recent[str, int] = Recent(3)
    for number in range(10):
        recent.put(f"k{number}", number)
    assert len(recent) == 3
    assert [recent.get(f"k{n}") for n in range(7, 10)] == [7, 8, 9]
    assert "k6" not in recent
    assert recent.get("k0") is None


def test_using_an_entry_makes_it_the_newest() -> None:
    recent: Recent[str, int] = Recent(2)
    recent.put("a", 1)
    recent.put("b", 2)
    assert recent.get("a") == 1  # now "b" is the oldest
    recent.put("c", 3)
    assert "a" in recent
    assert "b" not in recent
    recent.put("a", 4)  # setting refreshes it too
    recent.put("d", 5)
    assert recent.get("a") == 4
    assert "c" not in recent


def test_pop_forgets_and_an_absent_key_is_no_error() -> None:
    recent: Recent[str, None] = Recent(2)
    recent.put("a", None)
    recent.pop("a")
    recent.pop("never")
    assert "a" not in recent
    assert len(recent) == 0


def test_a_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Recent(0)
